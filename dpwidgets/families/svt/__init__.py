"""The Sparse Vector Technique family: SVT and its broken variants, top-c selection, and the
GPTT reconstruction attack (Lyu, Su & Li 2017; Chen 2018, Ch. 2-3).

=====================  ==============================================================================
where                  what
=====================  ==============================================================================
:mod:`.params`         the parameters of ``"svt"``, ``"top_c"`` and ``"reconstruction"``: one frozen
                       object each (:class:`~.params.SVTParams`, ...), their checks and defaults
:mod:`.spec`           the mechanisms: cost (``epsilon``, all of it), guarantee, neighbours, the
                       facts the owner declares (``sensitivity``, ``monotonic``), public outputs
engine                 :mod:`dpwidgets.engine.svt` (every variant, Alg. 1-7 of Lyu, Su & Li 2017;
                       top-c by EM or SVT-ReTr), :mod:`dpwidgets.engine.attacks` (GPTT, Chen 2018,
                       Alg. 6-7), :mod:`dpwidgets.engine.audit` (the empirical privacy-loss audit)
:mod:`.display`        the Bokeh figures: an SVT run, the budget split, top-c, the attack
:mod:`.preview`        what the explorer computes on public numbers: the variants' descriptions,
                       the threshold rule, the top-c panel's comparison runs and rates
:mod:`.controls`       the explorer's controls and their layout; :mod:`.text` its banners and notes
:mod:`.widget`         :class:`~.widget.SVTExplorer` (and :class:`~.attack.AttackDemo`)
:mod:`.standins`       Zipf item scores (Lyu, Su & Li 2017, §6), Zipf-like histograms (Chen 2018,
                       Table 3.1)
=====================  ==============================================================================

A release of ``"svt"`` goes: the explorer's controls → :meth:`SVTExplorer.params
<.widget.SVTExplorer.params>` → the door (:meth:`dpwidgets.Session.release`) →
:meth:`SVTParams.validate <.params.SVTParams.validate>` and the spec's cost, charged to the
ledger → :func:`dpwidgets.engine.svt.sparse_vector` → the spec's public outputs → the display.
"""
