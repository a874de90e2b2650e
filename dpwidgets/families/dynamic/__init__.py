"""The dynamic-histogram family: a series of histogram snapshots released over time by
distance-based sampling, DSFT and DSAT (Li 2017, Ch. 4, Alg. 7-9), against fixed sampling, ε/N
per snapshot, and the w-event budget distribution and absorption (Kellaris, Papadopoulos, Xiao &
Papadias 2014).

=====================  =============================================================================
where                  what
=====================  =============================================================================
:mod:`.params`         the parameters of ``"dsat"``, ``"dsft"``, ``"dsat_w_event"``,
                       ``"dynamic_fixed"``, ``"dynamic_uniform"``, ``"dynamic_bd"`` and
                       ``"dynamic_ba"``: one frozen object each (:class:`~.params.DSATParams`, ...),
                       their checks against the series' public shape and their defaults
:mod:`.spec`           the mechanisms: cost (``epsilon``, or ``epsilon·⌈N/w⌉`` for w-event), the
                       user-level and w-event neighbours (Li 2017, Def. 4.1.1, 4.1.3), the fact
                       the owner declares (``cardinality``, Lemma 4.2.1), the public outputs
engine                 :mod:`dpwidgets.engine.dynamic` (DSFT, Alg. 7; DSAT, Alg. 8, paced or as
                       printed; w-event DSAT, Alg. 9; fixed sampling and ε/N, §4.1.4; BD, BA), the
                       publishers of :mod:`dpwidgets.engine.histograms`
:mod:`.display`        the Bokeh figures: heatmaps of the series and the release, the threshold
                       trajectory, the error over time, the histogram at one time
:mod:`.widget`         :class:`~.widget.DynamicHistogramWidget`, with its parts :mod:`.sources`
                       (the teaching series), :mod:`.text` (methods, banner, quality),
                       :mod:`.preview` (the runs of a redraw, the errors against a public
                       reference) and :mod:`.panels` (the drawing)
:mod:`.standins`       the census-like series by tuple replacement and objects moving on a grid
                       (Li 2017, §4.5.1), and the public stand-in of a confidential series
=====================  =============================================================================

A release of ``"dsat"`` goes: the widget's controls → :meth:`DynamicHistogramWidget.params
<.widget.DynamicHistogramWidget.params>` → the door (:meth:`dpwidgets.Session.release`), which
applies the owner's ``cardinality`` → :meth:`DSATParams.validate <.params.DSATParams.validate>`
and the spec's cost, charged to the ledger → :func:`dpwidgets.engine.dynamic.dsat` → the spec's
public outputs (:func:`~.spec.dynamic_outputs`) → the display.
"""
