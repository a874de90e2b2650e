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
``svt``            SVT run, budget split, top-c selection, reconstruction attack
``diagnostics``    residual plot, ROC curve, binned residuals
``streams``        PeGaSus stream, hierarchy
``dynamic``        dynamic histograms (DSAT, DSFT, w-event)
``synth``          DPCopula margins, Kendall heatmaps, range-query errors
``personalized``   personalized DP budgets and histograms
=================  ==========================================================
"""

from . import diagnostics, dynamic, personalized, streams, svt, synth
from ._common import FigureHandle, show_panels, stack, update
from .svt import (
    attack_figure,
    attack_plot_data,
    comparison_noise_std,
    split_figure,
    split_plot_data,
    svt_figure,
    svt_plot_data,
    topc_figure,
    topc_plot_data,
)

__all__ = [
    "FigureHandle",
    "attack_figure",
    "attack_plot_data",
    "comparison_noise_std",
    "diagnostics",
    "dynamic",
    "personalized",
    "show_panels",
    "split_figure",
    "split_plot_data",
    "stack",
    "streams",
    "svt",
    "svt_figure",
    "svt_plot_data",
    "synth",
    "topc_figure",
    "topc_plot_data",
    "update",
]
