"""The streams family: counting streams released in real time -- PeGaSus (Perturb, Group,
Smooth) on one stream, the Laplace baselines, and PeGaSus over a public hierarchy of aggregated
states, with pruning (Chen 2018, Ch. 5: Alg. 15-18).

=====================  ==============================================================================
where                  what
=====================  ==============================================================================
:mod:`.params`         the parameters of ``"pegasus"``, ``"laplace_stream"`` and
                       ``"hierarchical_pegasus"``: one frozen object each
                       (:class:`~.params.PegasusParams`, ...), their checks and defaults (the two
                       sets, ``"new"`` and the text's, Chen 2018, §5.6.1)
:mod:`.spec`           the mechanisms: cost (``epsilon``, all of it), event-level neighbours
                       (Chen 2018, §5.2.3, Def. 7), public outputs; the free post-processing of a
                       release (estimates per smoother, window sums, event detections, §5.4)
engine                 :mod:`dpwidgets.engine.streams` (PeGaSus, Alg. 15, its Grouper, Alg. 16,
                       and smoothers, §5.3.3; WSS, Alg. 17; HS-PGS and PHS-PGS, Alg. 18; LM, BS_k)
:mod:`.display`        the Bokeh figures: the live stream with its groups, window sums, event
                       monitoring and its ROC; the hierarchy's tree, a node's stream, the error per
                       level (:mod:`.tree`; the shared line panels in :mod:`.lines`); their
                       displays (:class:`~.display.StreamDisplay`,
                       :class:`~.tree.HierarchyDisplay`), computed once per redraw, drawn whole
                       or one step at a time
:mod:`.widget`         :class:`~.widget.StreamWidget` (and :class:`~.hierarchy.HierarchyWidget`);
                       its parts: :mod:`.controls` (the controls and their layout), :mod:`.timeline`
                       (the play control), :mod:`.panels` (the windows and events panels),
                       :mod:`.quality` (measures against a public truth), :mod:`.text` (the banner,
                       status, quality and stats lines)
:mod:`.sources`        the teaching streams (:data:`~.sources.STREAMS`) and the check that a
                       dataset is a stream
:mod:`.standins`       streams shaped like the text's WiFi traces (Chen 2018, Table 5.1: Low_5,
                       Med_5, High_5, Multi_5) and the yearly sunspot numbers as counts
=====================  ==============================================================================

A release of ``"pegasus"`` goes: the widget's controls (ε, the defaults, ε_p/ε, θ·ε_g) →
:attr:`StreamWidget.params <.widget.StreamWidget.params>` → the door
(:meth:`dpwidgets.Session.release`) → :meth:`PegasusParams.validate
<.params.PegasusParams.validate>` and the spec's cost, charged to the ledger →
:func:`dpwidgets.engine.streams.pegasus` → the spec's public outputs → the display, revealed step
by step; the smoother, the window w and the threshold δ are post-processing of that one release.
"""
