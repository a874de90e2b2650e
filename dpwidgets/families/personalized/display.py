"""Bokeh figure builders of the personalized-DP widget (Li 2017, Ch. 5).

The contract of :mod:`dpwidgets.ui.figures`; :class:`PersonalizedFigure` names its panels and
threshold markers; :func:`partition_blocks`, :func:`sorted_sample` and :func:`budget_used` are
the numpy post-processing the widget draws. The left-hand panels (the privacy vector, the
partitions, the enjoyed budgets) depend on the public privacy vector only.
:class:`PersonalizedDisplay` is the same as an object: built once from the releases (or
previews) of every method shown and their public plans, then only drawn;
:class:`ChangedSources` draws it sending only the sources that changed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import FactorRange, HoverTool, Legend, LegendItem, LogTicker, Range1d, Span
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from ...ui.figures import TOOLS as _TOOLS
from ...ui.figures import Display, FigureHandle, show_panels, update
from ...ui.figures import source as _source

__all__ = ["METHOD_COLOURS", "ChangedSources", "PersonalizedDisplay", "PersonalizedFigure",
           "accuracy_plot_data", "budget_colour", "budget_used", "histogram_band_data",
           "histogram_plot_data", "partition_blocks", "personalized_figure", "sorted_plot_data",
           "sorted_sample", "strips_plot_data", "vector_plot_data"]

#: One colour per method (the error panel, the enjoyed line, the strips' outlines).
METHOD_COLOURS = {
    "minimum": "#7f7f7f",
    "threshold": "#8c564b",
    "sampling": "#ff7f0e",
    "privacy_aware": "#1f77b4",
    "utility": "#2ca02c",
}
#: The methods with a sampling threshold ε_T (marked on the budget axis).
_THRESHOLDED = ("sampling", "threshold")
#: What each panel's title says, by what is shown (the method's label filled in).
_HISTOGRAM_TITLES = {"teaching": "Histogram: data (public, teaching) vs {}",
                     "preview": "Histogram: public stand-in vs {} (preview)",
                     "release": "Histogram: {}, released (DP estimate only)"}
_ACCURACY_TITLES = {"teaching": "Relative frequency error vs ε_T (against the data)",
                    "preview": "Relative frequency error vs ε_T (on the stand-in)",
                    "release": "Error: not shown (it needs the confidential data)"}
#: At most about this many points on the sorted-budget axis (plus the partition boundaries).
MAX_POINTS = 1000
_DROPPED = "#d9d9d9"


@dataclass
class PersonalizedFigure(FigureHandle):
    """A :class:`~.figures.FigureHandle` with named panels, the ε_T markers and the strips'
    method axis."""

    panels: dict = field(default_factory=dict)
    spans: dict = field(default_factory=dict)
    methods: FactorRange | None = None
    budget_range: Range1d | None = None

    def set_titles(self, **titles: str) -> None:
        """Retitle panels by name (one small document patch each)."""
        for name, text in titles.items():
            if self.panels[name].title.text != text:
                self.panels[name].title.text = text

    def set_threshold(self, value: float | None) -> None:
        """Move the ε_T markers (hidden for ``None``: no thresholded method on screen)."""
        for span in self.spans.values():
            visible = value is not None and math.isfinite(value)
            if span.visible != visible:
                span.visible = visible
            if visible and span.location != float(value):
                span.location = float(value)

    def set_methods(self, labels: list[str]) -> None:
        """The rows of the partition strips, top to bottom."""
        factors = list(reversed(labels))
        if list(self.methods.factors) != factors:
            self.methods.factors = factors

    def set_budget_range(self, low: float, high: float) -> None:
        """The budget axis shared by the privacy-vector and error panels."""
        pad = 0.03 * (high - low) if high > low else 0.01
        start, end = max(0.0, low - pad), high + pad
        if (self.budget_range.start, self.budget_range.end) != (start, end):
            self.budget_range.start, self.budget_range.end = start, end


def _with_text(source, *names: str):
    """Add empty *list* columns: a colour or factor column must never be an empty float array
    (BokehJS rejects it as "invalid color array")."""
    source.data.update({name: [] for name in names})
    return source


def personalized_figure(*, width: int = 900) -> PersonalizedFigure:
    """The privacy vector, the partitions, the enjoyed budgets, the histogram and the error.

    Layout: top row, the privacy vector's histogram (budgets asked, with ε_T) and the asked vs
    enjoyed budget of every record sorted by its budget (the selected method's partitions
    shaded); middle, one strip per mechanism showing the partitions it forms on the same
    sorted-budget axis; bottom row, the histogram of the values (reference and DP estimate)
    and the relative frequency error of every mechanism against ε_T.

    Sources
    -------
    vector : left, right, top
        Histogram of the privacy vector (number of records per budget bin).
    sorted : x, rank, asked, enjoyed
        Records sorted by asked budget (``x`` = share of records, ``rank`` = position; at most
        about :data:`MAX_POINTS` of them, always including the partition boundaries).
    shading : left, right, top, colour
        The selected method's round-1 releases as bands on the sorted axis, up to their budget.
    strips : left, right, method, colour, alpha, eps, size, text
        Every compared method's round-1 releases (one row per method).
    truth : x, y
        The reference histogram: the data (teaching) or the public stand-in (preview); empty
        after an analyst release.
    private : x, y
        The selected method's DP histogram.
    histogram_band : left, right, low, high
        Per bin, where 90% of releases of the selected method put its count (accuracy before
        spending: previews on the stand-in; empty until estimated).
    levels : xs, ys, method, colour, error
        The error of each method without a threshold (a horizontal line across the budgets).
    current : x, y, method, colour
        The error of each thresholded method at the current ε_T.
    trail : x, y
        Sampling's errors at the thresholds visited since the privacy vector last changed:
        moving ε_T traces Li 2017, Fig. 5.2-5.5's curve.
    """
    third = width * 4 // 9
    budget_range = Range1d(0.0, 1.0)
    sources = {
        "vector": _source(left=[], right=[], top=[]),
        "sorted": _source(x=[], rank=[], asked=[], enjoyed=[]),
        "shading": _with_text(_source(left=[], right=[], top=[]), "colour"),
        "strips": _with_text(_source(left=[], right=[], alpha=[], eps=[], size=[]), "method",
                             "colour", "text"),
        "truth": _source(x=[], y=[]),
        "private": _source(x=[], y=[]),
        "histogram_band": _source(left=[], right=[], low=[], high=[]),
        "levels": _with_text(_source(error=[]), "xs", "ys", "method", "colour"),
        "current": _with_text(_source(x=[], y=[]), "method", "colour"),
        "trail": _source(x=[], y=[]),
    }

    vector = figure(width=third, height=250, tools=_TOOLS, x_range=budget_range,
                    title="Privacy vector: the budget each record asks for",
                    x_axis_label="budget ε_j", y_axis_label="records",
                    toolbar_location="right")
    vector.quad(left="left", right="right", bottom=0, top="top", source=sources["vector"],
                color="#9ecae1", line_color="#6baed6")

    enjoyed = figure(width=width - third, height=250, tools=_TOOLS, x_range=Range1d(0, 1),
                     title="Asked vs enjoyed, records sorted by budget",
                     x_axis_label="share of records (sorted by asked budget)",
                     y_axis_label="budget", toolbar_location="right")
    # Legends sit outside the frames, never over the data.
    enjoyed.add_layout(Legend(click_policy="hide", orientation="horizontal",
                              label_text_font_size="8pt"), "below")
    enjoyed.quad(left="left", right="right", bottom=0, top="top", source=sources["shading"],
                 fill_color="colour", fill_alpha=0.18, line_color="colour", line_alpha=0.6,
                 legend_label="releases (round 1)")
    enjoyed.varea(x="x", y1="enjoyed", y2="asked", source=sources["sorted"], color="#e6550d",
                  alpha=0.25, legend_label="asked but not used")
    enjoyed.line("x", "asked", source=sources["sorted"], color="black", line_width=2,
                 legend_label="asked ε_j")
    enjoyed.line("x", "enjoyed", source=sources["sorted"], color="#d62728", line_width=2,
                 legend_label="enjoyed")

    methods = FactorRange(factors=["—"])
    strips = figure(width=width, height=230, tools="pan,xwheel_zoom,reset,save",
                    x_range=enjoyed.x_range, y_range=methods, toolbar_location="right",
                    title="Partitions each mechanism forms (round 1) on the sorted-budget axis; "
                          "colour: budget of the release",
                    x_axis_label="share of records (sorted by asked budget)")
    bars = strips.hbar(y="method", left="left", right="right", height=0.7,
                       source=sources["strips"], fill_color="colour", fill_alpha="alpha",
                       line_color="white")
    strips.add_tools(HoverTool(renderers=[bars], tooltips=[
        ("", "@method"), ("release", "@text"), ("records", "@size{0,0}"),
        ("budget", "@eps{0.[0000]}")]))
    strips.ygrid.visible = False

    histogram = _histogram_panel(sources, width - third)
    accuracy = _accuracy_panel(sources, third, budget_range)

    spans = {}
    for name, panel in (("vector", vector), ("accuracy", accuracy)):
        span = Span(location=0.0, dimension="height", line_color="#ff7f0e", line_width=2,
                    line_dash="dashed", visible=False)
        panel.add_layout(span)
        spans[name] = span

    layout = column(row(vector, enjoyed), strips, row(histogram, accuracy))
    panels = {"vector": vector, "enjoyed": enjoyed, "strips": strips, "histogram": histogram,
              "accuracy": accuracy}
    return PersonalizedFigure(layout, sources, panels, spans, methods, budget_range)


def _histogram_panel(sources: dict, width: int):
    """The histogram of the values: the reference, the DP estimate and its 90% band."""
    histogram = figure(width=width, height=320, tools=_TOOLS, toolbar_location="right",
                       title="Histogram of the values", y_axis_label="count")
    histogram.add_layout(Legend(click_policy="hide", orientation="horizontal",
                                label_text_font_size="8pt"), "below")
    # Under everything: where 90% of releases would put each count (once estimated). One box
    # per bin, not a varea_step: BokehJS 3.9 spins forever drawing a varea_step on an empty
    # source (the band is empty until estimated).
    histogram.quad(left="left", right="right", bottom="low", top="high",
                   source=sources["histogram_band"], fill_color="#d62728", fill_alpha=0.18,
                   line_alpha=0, legend_label="90% of releases (estimated on the stand-in)")
    # The DP estimate first, the reference on top: with thousands of cells the noisy line
    # would otherwise hide it.
    histogram.step("x", "y", source=sources["private"], mode="center", color="#d62728",
                   line_width=1.5, alpha=0.7, legend_label="DP estimate")
    histogram.step("x", "y", source=sources["truth"], mode="center", color="black",
                   line_width=1.2, legend_label="reference")
    return histogram


def _accuracy_panel(sources: dict, width: int, budget_range: Range1d):
    """The relative frequency error of every method against ε_T (on the budget axis)."""
    # Tall enough for a frame that spaces its log ticks (a narrow range, under one decade,
    # gets linear ticks that crowd together at its top) above a two-row legend.
    accuracy = figure(width=width, height=320, tools=_TOOLS, x_range=budget_range,
                      y_axis_type="log", toolbar_location="right",
                      title="Relative frequency error vs ε_T",
                      x_axis_label="sampling threshold ε_T", y_axis_label="RFE")
    accuracy.yaxis.ticker = LogTicker(desired_num_ticks=4)
    legend = Legend(click_policy="hide", orientation="horizontal", ncols=3,
                    label_text_font_size="8pt")
    accuracy.add_layout(legend, "below")
    lines = accuracy.multi_line("xs", "ys", source=sources["levels"], line_color="colour",
                                line_width=2, line_dash="dashed")
    trail = accuracy.line("x", "y", source=sources["trail"], color=METHOD_COLOURS["sampling"],
                          line_width=1.5, alpha=0.6)
    dots = accuracy.scatter("x", "y", source=sources["current"], color="colour", size=9,
                            line_color="black")
    legend.items = [
        LegendItem(label={"field": "method"}, renderers=[lines]),
        LegendItem(label={"field": "method"}, renderers=[dots]),
        LegendItem(label="Sampling, ε_T visited", renderers=[trail]),
    ]
    accuracy.add_tools(HoverTool(renderers=[dots], tooltips=[
        ("", "@method"), ("ε_T", "@x{0.000}"), ("RFE", "@y{0.00000}")]))
    accuracy.add_tools(HoverTool(renderers=[lines], tooltips=[
        ("", "@method"), ("RFE", "@error{0.00000}")]))
    return accuracy


# --------------------------------------------------------------------------------------------
# Post-processing helpers (numpy)
# --------------------------------------------------------------------------------------------
def budget_colour(eps, low: float, high: float) -> list[str]:
    """Viridis colours of budgets on a log scale from ``low`` to ``high``."""
    eps = np.atleast_1d(np.asarray(eps, dtype=float))
    lo, hi = math.log(max(low, 1e-12)), math.log(max(high, low * (1 + 1e-9), 1e-12))
    t = (np.log(np.maximum(eps, 1e-12)) - lo) / (hi - lo) if hi > lo else np.full(eps.shape, 0.5)
    index = np.clip(np.round(np.nan_to_num(t, nan=0.5) * 255), 0, 255).astype(int)
    return [Viridis256[i] for i in index]


def sorted_sample(n: int, boundaries=(), max_points: int = MAX_POINTS) -> np.ndarray:
    """Ranks to draw on the sorted-budget axis: about ``max_points`` evenly spaced ones, plus
    both sides of every boundary (so steps at partition edges stay sharp)."""
    ranks = np.unique(np.linspace(0, n - 1, min(n, max_points)).round().astype(np.int64))
    edges = np.asarray(list(boundaries), dtype=np.int64)
    edges = edges[(edges > 0) & (edges < n)]
    return np.unique(np.concatenate([ranks, edges - 1, edges]))


def partition_blocks(method: str, sorted_budgets: np.ndarray, sorted_labels: np.ndarray,
                     release_epsilons: np.ndarray, release_rounds: np.ndarray,
                     threshold: float | None) -> list[dict]:
    """The round-1 releases of a plan as contiguous blocks of the sorted-budget axis.

    Parameters
    ----------
    method : str
    sorted_budgets : array (n,)
        The (capped) budgets, ascending.
    sorted_labels : array of int (n,)
        Each record's round-1 release in the same order (``-1``: none).
    release_epsilons, release_rounds : arrays (k,)
        The plan's releases.
    threshold : float or None
        ε_T (Sampling / Threshold).

    Returns
    -------
    list of dict
        ``start``, ``end`` (ranks), ``eps`` (the block's budget; NaN for records in no
        release), ``text`` and ``alpha``. Sampling's single release is split where the
        inclusion probability reaches 1: below ε_T records are sampled with
        ``p_j = (e^ε_j - 1)/(e^ε_T - 1)`` and enjoy ε_j; above, they are always kept and
        enjoy ε_T.
    """
    n = sorted_budgets.size
    if n == 0:
        return []
    if method == "sampling":
        cut = int(np.searchsorted(sorted_budgets, threshold, side="left"))
        blocks = []
        if cut > 0:
            blocks.append({"start": 0, "end": cut, "eps": float(threshold), "alpha": 0.45,
                           "text": "sampled with p_j < 1: enjoys ε_j"})
        if cut < n:
            blocks.append({"start": cut, "end": n, "eps": float(threshold), "alpha": 1.0,
                           "text": "always kept: enjoys ε_T"})
        return blocks
    first = np.flatnonzero(np.asarray(release_rounds) == 1)
    eps_of = {int(i): float(release_epsilons[j]) for i, j in enumerate(first)}
    change = np.flatnonzero(np.diff(sorted_labels)) + 1
    starts = np.concatenate(([0], change))
    ends = np.concatenate((change, [n]))
    blocks = []
    for start, end in zip(starts.tolist(), ends.tolist(), strict=True):
        label = int(sorted_labels[start])
        if label < 0:
            blocks.append({"start": start, "end": end, "eps": math.nan, "alpha": 1.0,
                           "text": "below ε_T: not used"})
        else:
            blocks.append({"start": start, "end": end, "eps": eps_of.get(label, math.nan),
                           "alpha": 1.0, "text": f"release {label + 1} of round 1"})
    return blocks


def budget_used(enjoyed: np.ndarray, asked: np.ndarray) -> float:
    """``sum enjoyed / sum asked``: the share of the records' willingness a release uses."""
    return float(np.sum(enjoyed) / np.sum(asked))


# --------------------------------------------------------------------------------------------
# Plot data
# --------------------------------------------------------------------------------------------
def vector_plot_data(budgets: np.ndarray, n_bins: int = 40) -> dict:
    """The privacy vector's histogram over ``[0, max]`` (budgets are public)."""
    budgets = np.asarray(budgets, dtype=float)
    top = float(budgets.max()) if budgets.size else 1.0
    counts, edges = np.histogram(budgets, bins=n_bins, range=(0.0, top * (1 + 1e-9)))
    return {"vector": {"left": edges[:-1], "right": edges[1:], "top": counts.astype(float)}}


def sorted_plot_data(sorted_asked: np.ndarray, sorted_enjoyed: np.ndarray, ranks: np.ndarray,
                     blocks: list[dict], colour: str) -> dict:
    """The asked / enjoyed curves at ``ranks`` and the selected method's blocks as bands."""
    n = sorted_asked.size
    shading = [b for b in blocks if math.isfinite(b["eps"])]
    return {
        "sorted": {"x": (ranks + 0.5) / n, "rank": ranks, "asked": sorted_asked[ranks],
                   "enjoyed": sorted_enjoyed[ranks]},
        "shading": {"left": np.array([b["start"] / n for b in shading]),
                    "right": np.array([b["end"] / n for b in shading]),
                    "top": np.array([b["eps"] for b in shading]),
                    "colour": [colour] * len(shading)},
    }


def strips_plot_data(rows: list[tuple[str, list[dict]]], n: int, low: float,
                     high: float) -> dict:
    """One strip per method: its blocks, coloured by the release budget (log scale)."""
    cols: dict[str, list] = {k: [] for k in ("left", "right", "method", "colour", "alpha",
                                             "eps", "size", "text")}
    for label, blocks in rows:
        for b in blocks:
            eps = b["eps"]
            cols["left"].append(b["start"] / n)
            cols["right"].append(b["end"] / n)
            cols["method"].append(label)
            cols["colour"].append(budget_colour(eps, low, high)[0] if math.isfinite(eps)
                                  else _DROPPED)
            cols["alpha"].append(b["alpha"])
            cols["eps"].append(eps if math.isfinite(eps) else 0.0)
            cols["size"].append(b["end"] - b["start"])
            cols["text"].append(b["text"])
    return {"strips": {k: np.asarray(v, dtype=float) if k in ("left", "right", "alpha", "eps",
                                                                "size") else v
                       for k, v in cols.items()}}


def histogram_plot_data(edges: np.ndarray, private: np.ndarray,
                        truth: np.ndarray | None = None) -> dict:
    """The DP histogram and the reference (``None``: not shown) at the bin centres."""
    centres = 0.5 * (edges[:-1] + edges[1:])
    return {
        "private": {"x": centres, "y": np.asarray(private, dtype=float)},
        "truth": ({"x": centres, "y": np.asarray(truth, dtype=float)} if truth is not None
                  else {"x": np.zeros(0), "y": np.zeros(0)}),
    }


def histogram_band_data(edges: np.ndarray | None = None, low: np.ndarray | None = None,
                        high: np.ndarray | None = None) -> dict:
    """The ``histogram_band`` source: per bin of ``edges``, a box from ``low`` to ``high``
    (empty without values)."""
    if edges is None or low is None or high is None:
        empty = np.zeros(0)
        return {"histogram_band": {"left": empty, "right": empty, "low": empty, "high": empty}}
    edges = np.asarray(edges, dtype=float)
    return {"histogram_band": {"left": edges[:-1], "right": edges[1:],
                               "low": np.asarray(low, dtype=float),
                               "high": np.asarray(high, dtype=float)}}


def accuracy_plot_data(levels: dict[str, tuple[str, float]],
                       current: dict[str, tuple[str, float, float]],
                       trail: dict[float, float], span: tuple[float, float]) -> dict:
    """The error panel.

    Parameters
    ----------
    levels : {method: (label, error)}
        Methods without a threshold: a horizontal line across ``span``.
    current : {method: (label, threshold, error)}
        Thresholded methods at the current ε_T.
    trail : {threshold: error}
        Sampling's errors at the thresholds visited.
    span : (low, high)
        The budget range (the x extent of the lines).
    """
    lo, hi = span
    lv = {"xs": [], "ys": [], "method": [], "colour": [], "error": []}
    for method, (label, error) in levels.items():
        if not (math.isfinite(error) and error > 0):
            continue
        lv["xs"].append(np.array([lo, hi]))
        lv["ys"].append(np.array([error, error]))
        lv["method"].append(label)
        lv["colour"].append(METHOD_COLOURS[method])
        lv["error"].append(error)
    cur = {"x": [], "y": [], "method": [], "colour": []}
    for method, (label, threshold, error) in current.items():
        if not (math.isfinite(error) and error > 0):
            continue
        cur["x"].append(threshold)
        cur["y"].append(error)
        cur["method"].append(label)
        cur["colour"].append(METHOD_COLOURS[method])
    xs = np.array(sorted(trail), dtype=float)
    return {
        "levels": {**lv, "error": np.asarray(lv["error"], dtype=float)},
        "current": {**cur, "x": np.asarray(cur["x"], dtype=float),
                    "y": np.asarray(cur["y"], dtype=float)},
        "trail": {"x": xs, "y": np.array([trail[x] for x in xs], dtype=float)},
    }


class PersonalizedDisplay(Display):
    """The four panels of :func:`personalized_figure` for one set of releases, computed once.

    Built (:meth:`from_outputs`) from the outputs of every method shown, their public plans
    (:func:`~dpwidgets.families.personalized.spec.release_plan`) and the public privacy vector;
    the reference histogram and the errors come only from what may be drawn (the teaching data
    or the stand-in), never after a paid release. :meth:`draw` assigns the columns and sets the
    titles, the methods, the budget axis and the ε_T marker.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.personalized.display import PersonalizedDisplay
    >>> from dpwidgets.families.personalized.params import PersonalizedHistogramParams, release_plan
    >>> budgets, edges = np.linspace(0.05, 1.0, 40), np.linspace(0.0, 1.0, 5)
    >>> plan = release_plan(PersonalizedHistogramParams.validate(
    ...     {"epsilon": 1.0, "budgets": budgets, "method": "minimum", "bins": edges}, (40, 2)))
    >>> shown = PersonalizedDisplay.from_outputs(
    ...     {"minimum": {"counts": np.array([10.0, 9.0, 11.0, 10.0])}}, {"minimum": plan},
    ...     selected="minimum", budgets=budgets, cap=1.0, edges=edges, where="release")
    >>> shown.titles["histogram"], shown.show_accuracy
    ('Histogram: Minimum, released (DP estimate only)', False)
    >>> shown.figure().sources["private"].data["y"].tolist()
    [10.0, 9.0, 11.0, 10.0]
    """

    build = staticmethod(personalized_figure)

    def __init__(self, data, *, methods: list[str], budget_high: float,
                 threshold: float | None, titles: dict[str, str], show_accuracy: bool):
        super().__init__(data)
        self.methods, self.budget_high, self.threshold = methods, budget_high, threshold
        self.titles, self.show_accuracy = titles, show_accuracy

    @classmethod
    def from_outputs(cls, outputs: dict[str, dict], plans: dict, *, selected: str,
                     budgets: np.ndarray, cap: float, edges: np.ndarray,
                     reference: np.ndarray | None = None, levels: dict | None = None,
                     current: dict | None = None, trail: dict | None = None,
                     where: str = "teaching", order: np.ndarray | None = None,
                     vector_plot: dict | None = None,
                     labels: dict[str, str] | None = None) -> PersonalizedDisplay:
        """The display of the methods of ``plans``, with ``outputs[selected]`` drawn.

        Parameters
        ----------
        outputs, plans : dict
            ``{method: DP output}`` (``counts``; the selected method's at least) and, per
            method shown, its public release plan.
        budgets : array
            The public privacy vector; ``order`` its sorting permutation and ``vector_plot`` its
            panel's columns (:func:`vector_plot_data`), computed if None (a widget computes
            both once per vector).
        cap, edges : float, array
            The release's ε cap and the histogram's public bin edges.
        reference : array, optional
            The histogram the widget may draw beside the private one (the teaching data's or
            the stand-in's), or None.
        levels, current, trail : dict, optional
            The errors measured against that reference (:func:`accuracy_plot_data`).
        where : {"teaching", "preview", "release"}
            What is shown: after a paid release the error panel goes.
        labels : dict, optional
            Each method's label (default: the parameters' ``METHOD_LABELS``).
        """
        if labels is None:
            from .params import METHOD_LABELS as labels
        budgets = np.asarray(budgets, dtype=float)
        order = np.argsort(budgets, kind="stable") if order is None else order
        sorted_budgets = budgets[order]
        capped = np.minimum(sorted_budgets, cap)
        n, methods = budgets.size, list(plans)
        lo, hi = float(sorted_budgets[0]), float(sorted_budgets[-1])
        blocks_of = {m: partition_blocks(m, capped, np.asarray(plans[m].labels)[order],
                                         plans[m].epsilons, plans[m].rounds, plans[m].threshold)
                     for m in methods}
        chosen = plans[selected]
        ranks = sorted_sample(n, [b["start"] for b in blocks_of[selected]])
        data = {}
        data.update(vector_plot_data(budgets) if vector_plot is None else vector_plot)
        data.update(sorted_plot_data(sorted_budgets, np.asarray(chosen.enjoyed)[order], ranks,
                                     blocks_of[selected], METHOD_COLOURS[selected]))
        data.update(strips_plot_data([(labels[m], blocks_of[m]) for m in methods], n, lo, hi))
        data.update(histogram_plot_data(edges, outputs[selected]["counts"], reference))
        data.update(accuracy_plot_data(levels or {}, current or {}, trail or {}, (lo, hi)))
        thresholded = [m for m in methods if m in _THRESHOLDED]
        label = labels[selected]
        titles = {"enjoyed": f"Asked vs enjoyed ({label}), records sorted by budget",
                  "histogram": _HISTOGRAM_TITLES[where].format(label),
                  "accuracy": _ACCURACY_TITLES[where]}
        return cls(data, methods=[labels[m] for m in methods], budget_high=hi,
                   threshold=float(plans[thresholded[0]].threshold) if thresholded else None,
                   titles=titles, show_accuracy=where != "release")

    def draw(self, handle: PersonalizedFigure, *, assign=None) -> PersonalizedFigure:
        """Assign the columns (with ``assign(data)`` if given: a widget's changed-only update;
        default :func:`~dpwidgets.ui.figures.update`), then the titles, methods, budget axis
        and ε_T marker; the error panel goes after a paid release."""
        if assign is None:
            super().draw(handle)
        else:
            assign(self.data)
        handle.set_methods(self.methods)
        handle.set_budget_range(0.0, self.budget_high)
        handle.set_threshold(self.threshold)
        handle.set_titles(**self.titles)
        show_panels(handle.panels, accuracy=self.show_accuracy)
        return handle


def _same_column(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_column(x, y) for x, y in zip(a, b, strict=True))
    return a == b


class ChangedSources:
    """The ``assign`` of :meth:`PersonalizedDisplay.draw` for a widget's figure: the sources
    whose columns differ from what it assigned last go to :func:`~dpwidgets.ui.figures.update`,
    the others are left alone (each update is a document event; moving ε_T leaves the privacy
    vector, most strips and the reference alone).

    Examples
    --------
    >>> handle = personalized_figure()
    >>> assign = ChangedSources(handle)
    >>> assign({"truth": {"x": [0.5], "y": [2.0]}})
    ['truth']
    >>> assign({"truth": {"x": [0.5], "y": [2.0]}})
    []
    """

    def __init__(self, handle: FigureHandle) -> None:
        self.handle = handle
        self._drawn: dict[str, dict] = {}

    def __call__(self, data: dict) -> list[str]:
        """Assign the sources of ``data`` that changed; their names."""
        changed = {}
        for name, columns in data.items():
            last = self._drawn.get(name)
            if last is None or last.keys() != columns.keys() or not all(
                    _same_column(last[k], columns[k]) for k in columns):
                changed[name] = columns
                self._drawn[name] = columns
        if changed:
            update(self.handle, changed)
        return list(changed)
