"""The synthetic-data family: DPCopula and its baselines (Li 2017, Ch. 3; Li, Xiong & Jiang
2014), beside today's peers AIM and MST (McKenna, Miklau & Sheldon 2021; McKenna, Mullins,
Sheldon & Miklau 2022).

=====================  ==============================================================================
where                  what
=====================  ==============================================================================
:mod:`.params`         the parameters of ``"dpcopula"``, ``"independent_synth"``,
                       ``"laplace_histogram_synth"`` and ``"peer_synth"``: one frozen object each
                       (:class:`~.params.DPCopulaParams`, ...), their checks and defaults; the
                       canonical forms of the public attribute domains
:mod:`.spec`           the mechanisms: cost (``epsilon``, all of it), guarantee (DP only with
                       declared domains and a DP margin publisher), neighbours (one record added or
                       removed, Li 2017, Def. 3.1.1), clamping to the domains, the public outputs
engine                 :mod:`dpwidgets.engine.synth` (DPCopula, Li 2017, Alg. 1-6; the independent
                       and full-histogram baselines; AIM and MST through OpenDP's ``mbi`` extra);
                       the margins through :mod:`dpwidgets.engine.histograms`
:mod:`.display`        the Bokeh figures: margins, Kendall's τ heatmaps, range-query errors
:mod:`.widget`         :class:`~.widget.SyntheticDataWidget`, the controller; beside it
                       :mod:`.sources` (its tables), :mod:`.controls` (its controls and their
                       layout), :mod:`.preview` (what a redraw runs; the free previews on the
                       stand-in), :mod:`.measures` (what it measures, Li 2017, §3.3.1) and
                       :mod:`.text` (what it says)
:mod:`.standins`       Li 2017's tables (Gaussian dependence, §3.3.1; census-shaped, Fig. 3.3), the
                       fair and RAND HIE surveys shipped by statsmodels, a table a Gaussian copula
                       cannot hold, and :func:`~.standins.synth_stand_in` (an analyst's stand-in)
=====================  ==============================================================================

A release of ``"dpcopula"`` goes: the widget's controls → :attr:`SyntheticDataWidget.params
<.widget.SyntheticDataWidget.params>` → the door (:meth:`dpwidgets.Session.release`) →
:meth:`DPCopulaParams.validate <.params.DPCopulaParams.validate>` and the spec's cost, charged
to the ledger → the chosen columns, clamped to the declared domains →
:func:`dpwidgets.engine.synth.dpcopula` → :func:`~.spec.synth_outputs` (the DP output only) →
the display.
"""
