"""The private regression diagnostics: a DP residual plot (PriRP), ROC curve (PriROC) and binned
residual plot (PriBRP) of a regression model, and the DP fit of the model they diagnose
(Chen 2018, Ch. 4; Chen, Machanavajjhala, Reiter & Barrientos 2016).

=====================  ==============================================================================
where                  what
=====================  ==============================================================================
:mod:`.params`         the parameters of ``"fit_model"``, ``"residual_plot"``, ``"roc_curve"`` and
                       ``"binned_residuals"``: one frozen object each (:class:`~.params.FitParams`,
                       ...), their checks and the defaults decided from the public row count
:mod:`.spec`           the mechanisms: cost (``epsilon``, all of it), the neighbour relation each is
                       calibrated for, the model under diagnosis (:func:`~.spec.model_predictions`),
                       public outputs
engine                 :mod:`dpwidgets.engine.diagnostics` (PriRP, Chen 2018, Alg. 9-10; PriROC,
                       Alg. 11-12; PriBRP, Alg. 13-14; the quality measures),
                       :mod:`dpwidgets.engine.regression` (the functional mechanism, Zhang et al.
                       2012; output perturbation, Chaudhuri, Monteleoni & Sarwate 2011, Alg. 1),
                       the histogram publishers in :mod:`dpwidgets.engine.histograms`
:mod:`.display`        the Bokeh figures: residual plots, ROC curves, binned residuals, accuracy bands
:mod:`.widget`         :class:`~.widget.ResidualPlotWidget`, :class:`~.roc.RocWidget`,
                       :class:`~.binned.BinnedResidualWidget`; what they share in :mod:`.base`, the
                       analyst's preview in :mod:`.preview`, the noiseless references and quality
                       measures in :mod:`.reference`, the teaching tables in :mod:`.scenarios`
:mod:`.standins`       the scenarios of Chen 2018, §4.2.3 (Fig. 4.1, Table 4.1) and §4.4.3, binormal
                       scores (§4.3.3), scikit-learn's diabetes and breast cancer data, and
                       :func:`~.standins.fit_model` (the model under diagnosis)
=====================  ==============================================================================

A release of ``"roc_curve"`` goes: the widget's controls → :attr:`RocWidget.params
<.roc.RocWidget.params>` with the model (an ordinary fit, or the coefficients of a
``"fit_model"`` release made first) → the door (:meth:`dpwidgets.Session.release`) →
:meth:`RocParams.validate <.params.RocParams.validate>` (every default decided from the public
row count) and the spec's cost, charged to the ledger → the model's scores inside the door
(:func:`~.spec.model_predictions`) → :func:`dpwidgets.engine.diagnostics.private_roc_curve` →
the spec's public outputs → the display.
"""
