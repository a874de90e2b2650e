"""Bokeh figure builders, one module per widget family: plain functions, callable and testable
without a kernel.

Each ``*_figure()`` builds a layout once and returns a :class:`FigureHandle` holding the layout
and its named :class:`~bokeh.models.ColumnDataSource` objects. Each ``*_plot_data()`` /
``*_data()`` turns already computed numbers into ``{source name: column dict}``; :func:`update`
assigns them. The widgets redraw only by replacing ``ColumnDataSource.data`` -- figures are never
re-created -- so a control change ships a small document patch to the browser.

What goes in is the caller's responsibility: in analyst mode the widgets pass DP outputs and
public stand-in values only.

=================  ==========================================================
module             figures
=================  ==========================================================
(moved)            a family's own figures are in ``dpwidgets/families/<family>/display.py``
``diagnostics``    residual plot, ROC curve, binned residuals
``streams``        PeGaSus stream, hierarchy
``dynamic``        dynamic histograms (DSAT, DSFT, w-event)
``synth``          DPCopula margins, Kendall heatmaps, range-query errors
``personalized``   personalized DP budgets and histograms
=================  ==========================================================
"""

from ..._moved import moved
from ...ui.figures import FigureHandle, show_panels, stack, update
from . import diagnostics, dynamic, personalized, streams, synth

__all__ = [
    "FigureHandle",
    "diagnostics",
    "dynamic",
    "personalized",
    "show_panels",
    "stack",
    "streams",
    "synth",
    "update",
]

# Names that moved into their family's display module (dpwidgets.families.<family>.display).
__getattr__ = moved(__name__, {
    "svt": ("dpwidgets.families.svt.display", None),
    **{name: ("dpwidgets.families.svt.display", name) for name in (
        "attack_figure", "attack_plot_data", "comparison_noise_std", "split_figure",
        "split_plot_data", "svt_figure", "svt_plot_data", "topc_figure", "topc_plot_data")},
})
