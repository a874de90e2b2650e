"""Bokeh figure builders of the stream widgets (Chen 2018, Ch. 5).

The contract of :mod:`dpwidgets.ui.figures`; the live panel is also fed incrementally:
:func:`live_rows` gives the rows of a range of time steps for ``ColumnDataSource.stream`` with
``rollover`` (the panel keeps the last ``window`` steps). :class:`StreamDisplay` and
:class:`HierarchyDisplay` are one redraw as an object: computed once from a release (or
preview) and what was measured of it, drawn whole, or one step (:meth:`StreamDisplay.draw_time`,
:meth:`HierarchyDisplay.draw_time`) or node (:meth:`HierarchyDisplay.draw_node`) at a time,
which is all playing, scrubbing or selecting a node redraws.

The hierarchy's figure and display live in :mod:`~dpwidgets.families.streams.tree`, the line
panels both widgets share in :mod:`~dpwidgets.families.streams.lines`; both are re-exported
here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import DataRange1d, HoverTool, Legend, Range1d, Span
from bokeh.plotting import figure

from ...ui.figures import XTOOLS as _TOOLS
from ...ui.figures import Display, FigureHandle, PlotData, update
from ...ui.figures import source as _source
from .lines import (
    _BACKEND,
    _EMPTY,
    _EMPTY_XY,
    MAX_LINE_POINTS,
    _counts_axis,
    _decimated,
    _four_lines,
    decimate,
)
from .tree import (
    HierarchyDisplay,
    HierarchyFigure,
    hierarchy_figure,
    level_error_data,
    sparkline_data,
    tree_layout,
    tree_nodes_data,
)

__all__ = ["GROUP_COLORS", "MAX_LINE_POINTS", "MAX_MARKERS", "PARTS", "HierarchyDisplay",
           "HierarchyFigure", "StreamDisplay", "StreamFigure", "decimate", "events_data",
           "group_quads", "hierarchy_figure", "level_error_data", "live_rows", "roc_data",
           "sparkline_data", "stream_figure", "tree_layout", "tree_nodes_data", "windows_data"]

#: Most event markers drawn per series (a uniform, fixed-seed sample beyond that).
MAX_MARKERS = 3_000
#: The two alternating fills of the Grouper's groups.
GROUP_COLORS = ("#6baed6", "#fd8d3c")


# --------------------------------------------------------------------------------------------
# Helpers (pure numpy)
# --------------------------------------------------------------------------------------------
def _sample(idx: np.ndarray, max_markers: int = MAX_MARKERS) -> np.ndarray:
    """At most ``max_markers`` of the indices ``idx`` (fixed seed: a redraw looks the same)."""
    if idx.size <= max_markers:
        return idx
    keep = np.random.default_rng(0).choice(idx.size, max_markers, replace=False)
    return idx[np.sort(keep)]


def group_quads(boundaries: np.ndarray, lo: int, hi: int) -> dict[str, np.ndarray]:
    """Shading of the Grouper's groups over the steps ``[lo, hi)``: one quad per group.

    ``boundaries`` are the groups' first steps (increasing, starting at 0). A group still
    growing at ``hi`` is drawn up to ``hi``: that is the partition P_t the release had at
    t = hi − 1 (a step's group never changes after the step, Chen 2018, Alg. 16).
    """
    b = np.asarray(boundaries, dtype=np.int64)
    if hi <= lo or b.size == 0:
        return {"left": _EMPTY, "right": _EMPTY, "color": np.zeros(0, dtype=object)}
    first = max(int(np.searchsorted(b, lo, side="right")) - 1, 0)
    last = int(np.searchsorted(b, hi, side="left"))
    starts = b[first:last]
    ends = np.append(b[first + 1 : last], hi)
    left = np.maximum(starts, lo) - 0.5
    right = np.minimum(ends, hi) - 0.5
    ids = np.arange(first, last)
    color = np.where(ids % 2 == 0, GROUP_COLORS[0], GROUP_COLORS[1]).astype(object)
    return {"left": left.astype(float), "right": right.astype(float), "color": color}


def live_rows(
    lo: int,
    hi: int,
    *,
    noisy: np.ndarray,
    estimates: np.ndarray,
    truth: np.ndarray | None = None,
) -> PlotData:
    """Rows of the live panel for the steps ``[lo, hi)``: ``private`` (x, lm, pgs) and
    ``truth`` (x, y; empty when ``truth`` is None). For streaming or for a full reset."""
    x = np.arange(lo, hi, dtype=float)
    out = {"private": {"x": x, "lm": np.asarray(noisy[lo:hi], dtype=float),
                       "pgs": np.asarray(estimates[lo:hi], dtype=float)}}
    out["truth"] = ({"x": x, "y": np.asarray(truth[lo:hi], dtype=float)} if truth is not None
                    else {"x": _EMPTY, "y": _EMPTY})
    return out


# --------------------------------------------------------------------------------------------
# One stream: live panel, windows, events, ROC (PeGaSus, Chen 2018, §5.3-5.4, Fig. 5.2, 5.5-5.7)
# --------------------------------------------------------------------------------------------
@dataclass
class StreamFigure(FigureHandle):
    """A :class:`~dpwidgets.ui.figures.FigureHandle` with named panels, the time cursors of the
    whole-stream panels and the δ line of the events panel."""

    panels: dict = field(default_factory=dict)
    cursors: list = field(default_factory=list)
    delta_line: Span | None = None
    event_line: Span | None = None
    window: int = 2016

    def set_titles(self, **titles: str) -> None:
        """Retitle panels by name (a small document patch each)."""
        for name, text in titles.items():
            self.panels[name].title.text = text

    def set_cursor(self, t: float) -> None:
        """Move the "now" line of the whole-stream panels to step ``t``."""
        for span in self.cursors:
            if span.location != t:
                span.location = t


def stream_figure(*, window: int = 2016, width: int = 820) -> StreamFigure:
    """The live stream with its groups, sliding-window sums, event monitoring and its ROC.

    Sources
    -------
    truth : x, y
        True counts in the live window (teaching mode; the public stand-in in a preview;
        empty after an analyst release). Streamed with ``rollover=window``.
    private : x, lm, pgs
        The Perturber's noisy counts c̃ (per-step Laplace at ε_p) and the PeGaSus estimates ĉ.
        Streamed with ``rollover=window``.
    groups : left, right, color
        The Grouper's groups over the live window (alternating fills).
    win_truth, win_wss, win_plain, win_lm : x, y
        Sliding-window sums of width w over the whole stream: true, WSS (Alg. 17), sum of the
        estimates, sum of the noisy counts (min/max envelope, :func:`decimate`).
    ev_truth, ev_stat : x, y
        The monitored statistic on the truth and on the release.
    ev_true, ev_detected : x, y
        True events (teaching / stand-in; defined by their own threshold, the dotted line)
        and the release's detections at the detection threshold δ (the dashed line).
    roc_pgs, roc_lm : x, y
        ROC of detecting the true events as the detection threshold moves (teaching /
        stand-in only); the operating point at δ moves along it.
    roc_point : x, y, method
        The operating point at the current δ.
    """
    live = figure(
        width=width, height=280, tools=_TOOLS, output_backend=_BACKEND,
        x_axis_label="time step t", y_axis_label="count",
        title="Live stream: true, LM (Perturber output) and PeGaSus",
        x_range=DataRange1d(follow="end", follow_interval=window, range_padding=0,
                            only_visible=True),
    )
    live.extra_y_ranges = {"groups": Range1d(0, 1)}
    live.add_layout(Legend(click_policy="hide", orientation="horizontal"), "below")
    _counts_axis(live)
    sources = {
        "truth": _source(**_EMPTY_XY),
        "private": _source(x=[], lm=[], pgs=[]),
        "groups": _source(left=[], right=[], color=np.zeros(0, dtype=object)),
        "win_truth": _source(**_EMPTY_XY),
        "win_wss": _source(**_EMPTY_XY),
        "win_plain": _source(**_EMPTY_XY),
        "win_lm": _source(**_EMPTY_XY),
        "ev_truth": _source(**_EMPTY_XY),
        "ev_stat": _source(**_EMPTY_XY),
        "ev_true": _source(**_EMPTY_XY),
        "ev_detected": _source(**_EMPTY_XY),
        "roc_pgs": _source(**_EMPTY_XY),
        "roc_lm": _source(**_EMPTY_XY),
        "roc_point": _source(x=[], y=[], method=np.zeros(0, dtype=object)),
    }
    live.quad(left="left", right="right", bottom=0, top=1, source=sources["groups"],
              y_range_name="groups", fill_color="color", fill_alpha=0.2, line_alpha=0,
              legend_label="groups (Grouper)")
    lm_line = live.line("x", "lm", source=sources["private"], color="#ff7f0e", alpha=0.55,
                        legend_label="LM: c̃ = c + Lap(1/ε_p)")
    pgs_line = live.line("x", "pgs", source=sources["private"], color="#1f77b4", line_width=2,
                         legend_label="PeGaSus ĉ")
    # The truth on top, thin: the private lines are read against it.
    t_line = live.line("x", "y", source=sources["truth"], color="#111", line_width=1.2,
                       legend_label="true")
    live.y_range = DataRange1d(renderers=[t_line, lm_line, pgs_line], only_visible=True)
    live.add_tools(HoverTool(renderers=[pgs_line], mode="vline", tooltips=[
        ("t", "@x{0}"), ("PeGaSus", "@pgs{0,0.0}"), ("LM", "@lm{0,0.0}")]))
    live.legend.location = "center"

    half = (width - 20) // 2
    win = _four_lines(
        "Sliding-window sums", "window sum", half, 250, sources,
        {"win_truth": "true", "win_lm": "LM (sum of c̃)", "win_plain": "PeGaSus, sum of ĉ",
         "win_wss": "PeGaSus WSS (Alg. 17)"}, plain_alpha=0.8)
    win.legend.nrows = 2
    win.legend.label_text_font_size = "8pt"

    ev, delta_line, event_line = _events_panel(sources, half, win.x_range)

    cursors = []
    for p in (win, ev):
        span = Span(location=0, dimension="height", line_color="#9467bd", line_width=1.5,
                    line_alpha=0.7)
        p.add_layout(span)
        cursors.append(span)

    roc = _roc_panel(sources)

    layout = column(live, row(win, ev), roc)
    return StreamFigure(layout, sources, {"live": live, "windows": win, "events": ev,
                                          "roc": roc}, cursors, delta_line, event_line, window)


def _events_panel(sources: dict, width: int, x_range) -> tuple:
    """The event-monitoring panel (sharing the windows panel's ``x_range``), its detection
    threshold's line and its true events' threshold line."""
    ev = figure(width=width, height=250, tools=_TOOLS, output_backend=_BACKEND,
                x_axis_label="time step t", y_axis_label="statistic",
                title="Event monitoring", x_range=x_range)
    ev.add_layout(Legend(click_policy="hide"), "below")
    _counts_axis(ev)
    ev.line("x", "y", source=sources["ev_truth"], color="#444", alpha=0.6, legend_label="true")
    ev.line("x", "y", source=sources["ev_stat"], color="#1f77b4", alpha=0.8,
            legend_label="private")
    ev.scatter("x", "y", source=sources["ev_true"], marker="x", size=7, color="#444",
               legend_label="true events")
    ev.scatter("x", "y", source=sources["ev_detected"], size=4, color="#d62728",
               legend_label="detected")
    delta_line = Span(location=0, dimension="width", line_color="#d62728", line_dash="dashed")
    ev.add_layout(delta_line)
    event_line = Span(location=0, dimension="width", line_color="#444", line_dash="dotted",
                      visible=False)
    ev.add_layout(event_line)
    ev.legend.orientation = "horizontal"
    ev.legend.nrows = 2
    ev.legend.label_text_font_size = "8pt"
    return ev, delta_line, event_line


def _roc_panel(sources: dict):
    """The detection ROC panel: the curves of LM and PeGaSus and the operating points at δ."""
    roc = figure(width=300, height=280, tools="save", x_range=(0, 1), y_range=(0, 1.02),
                 x_axis_label="false positive rate", y_axis_label="true positive rate",
                 title="Detection ROC")
    roc.line([0, 1], [0, 1], color="#aaa", line_dash="dotted")
    # Below the frame: a good detector's curve runs through the corner a legend would cover.
    roc.add_layout(Legend(orientation="horizontal", label_text_font_size="8pt"), "below")
    roc.line("x", "y", source=sources["roc_lm"], color="#ff7f0e", line_width=2,
             legend_label="LM")
    roc.line("x", "y", source=sources["roc_pgs"], color="#1f77b4", line_width=2,
             legend_label="PeGaSus")
    dots = roc.scatter("x", "y", source=sources["roc_point"], size=9, color="#d62728",
                       legend_label="at δ")
    roc.add_tools(HoverTool(renderers=[dots], tooltips=[("", "@method"), ("FPR", "@x{0.000}"),
                                                        ("TPR", "@y{0.000}")]))
    return roc


def windows_data(
    *,
    wss: np.ndarray,
    plain: np.ndarray,
    lm: np.ndarray,
    truth: np.ndarray | None = None,
    max_points: int = MAX_LINE_POINTS,
) -> PlotData:
    """Columns of the sliding-window panel (whole stream, min/max envelope per series)."""
    return _decimated({"win_wss": wss, "win_plain": plain, "win_lm": lm, "win_truth": truth},
                      max_points)


def events_data(
    *,
    statistic: np.ndarray,
    detected: np.ndarray,
    truth_statistic: np.ndarray | None = None,
    true_events: np.ndarray | None = None,
    max_points: int = MAX_LINE_POINTS,
    max_markers: int = MAX_MARKERS,
) -> PlotData:
    """Columns of the events panel: the private statistic and its detections (bool per step),
    and — teaching / stand-in only — the true statistic and the true events."""
    stat = np.asarray(statistic, dtype=float)
    x, y = decimate(stat, max_points)
    hits = _sample(np.flatnonzero(detected), max_markers)
    out = {"ev_stat": {"x": x, "y": y},
           "ev_detected": {"x": hits.astype(float), "y": stat[hits]},
           "ev_truth": dict(_EMPTY_XY), "ev_true": dict(_EMPTY_XY)}
    if truth_statistic is not None:
        tstat = np.asarray(truth_statistic, dtype=float)
        tx, ty = decimate(tstat, max_points)
        out["ev_truth"] = {"x": tx, "y": ty}
        if true_events is not None:
            idx = _sample(np.flatnonzero(true_events), max_markers)
            out["ev_true"] = {"x": idx.astype(float), "y": tstat[idx]}
    return out


def _thin_curve(fpr: np.ndarray, tpr: np.ndarray, max_points: int = 800):
    n = fpr.size
    if n <= max_points:
        return fpr, tpr
    idx = np.unique(np.linspace(0, n - 1, max_points).round().astype(int))
    return fpr[idx], tpr[idx]


def roc_data(curves: dict | None = None, points: dict | None = None) -> dict:
    """Columns of the ROC panel: ``curves = {"pgs": (fpr, tpr), "lm": (fpr, tpr)}`` and the
    operating points at δ, ``points = {"PeGaSus": (fpr, tpr), ...}``. Empty when None."""
    out = {"roc_pgs": dict(_EMPTY_XY), "roc_lm": dict(_EMPTY_XY),
           "roc_point": {"x": _EMPTY, "y": _EMPTY, "method": np.zeros(0, dtype=object)}}
    for key, (fpr, tpr) in (curves or {}).items():
        f, t = _thin_curve(np.asarray(fpr, float), np.asarray(tpr, float))
        out[f"roc_{key}"] = {"x": f, "y": t}
    if points:
        names = list(points)
        out["roc_point"] = {"x": np.array([points[k][0] for k in names], dtype=float),
                            "y": np.array([points[k][1] for k in names], dtype=float),
                            "method": np.array(names, dtype=object)}
    return out


#: The parts of :func:`stream_figure` a redraw may touch: the live panel, the window sums, the
#: event monitor with its ROC.
PARTS = frozenset({"live", "windows", "events"})
#: The sources of the parts :meth:`StreamDisplay.draw` assigns (the live panel streams).
_PART_SOURCES = {"windows": ("win_truth", "win_wss", "win_plain", "win_lm"),
                 "events": ("ev_truth", "ev_stat", "ev_true", "ev_detected", "roc_pgs",
                            "roc_lm", "roc_point")}


def _stream_titles(where: str, *, truth_shown: bool, w: int, kind: str, delta: float
                   ) -> dict[str, str]:
    """The panels' titles: what is drawn and where it comes from (teaching, preview, release)."""
    suffix = {"teaching": "", "preview": " — preview on the public stand-in",
              "release": " — released (DP output only)"}[where]
    short = {"teaching": "", "preview": " (stand-in)", "release": " (released)"}[where]
    truth_name = "true" if where == "teaching" else "stand-in"
    return {
        "live": f"Live stream: {truth_name if truth_shown else 'no truth'}, LM "
                f"(Perturber output) and PeGaSus{suffix}",
        "windows": f"Sliding-window sums, w = {w}{short}",
        "events": ("Jump/drop" if kind == "jump_drop" else "Low signal")
        + f", w = {w}, detect at δ = {delta:,.4g}{short}",
        "roc": "Detection ROC" + (" (stand-in)" if where == "preview" else ""),
    }


class StreamDisplay(Display):
    """A ``"pegasus"`` release (or preview) as :func:`stream_figure` shows it.

    Built (:meth:`from_output`) from the release's public output (the Perturber's noisy counts,
    the Grouper's groups), the estimates of the smoother shown, what the windows and events
    panels computed from them (the window sums, the monitored statistic and its detections at
    δ, and the ROC against the true events), and the public truth when one may be drawn (the
    data in teaching mode, the stand-in in a preview; none after a paid release). It keeps what
    playing needs: :meth:`draw_time` draws the live panel up to a step, streaming only the new
    rows, and computes nothing.

    Parameters
    ----------
    data : PlotData
        The columns of the windows and events panels.
    noisy, estimates : ndarray
        The Perturber's noisy counts c̃ and the estimates ĉ drawn, per step.
    boundaries : ndarray of int
        The first step of each group.
    truth : ndarray or None
        The public truth drawn in the live panel.
    titles : dict
        The panels' titles.
    lines : dict
        The detection threshold δ (``"delta"``) and the true events' threshold
        (``"event_delta"``, None when no truth is drawn: no true event, no ROC).

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.families.streams.display import StreamDisplay, stream_figure
    >>> from dpwidgets.families.streams.spec import estimates
    >>> from dpwidgets.families.streams.standins import load_sunspot_counts
    >>> sunspots = load_sunspot_counts()  # public: 309 yearly counts
    >>> teaching = Session("teaching", seed=3)
    >>> teaching.add_dataset("sunspots", sunspots)
    >>> output = teaching.release("sunspots", "pegasus", epsilon=0.5).output
    >>> shown = StreamDisplay.from_output(output, estimates(output, "median"), where="teaching",
    ...                                   w=16, kind="jump_drop", delta=5.0, truth=sunspots)
    >>> handle = shown.draw_time(shown.draw(stream_figure(window=100)), 250)  # the last 100
    >>> handle.sources["truth"].data["y"].tolist() == sunspots[150:250].tolist()
    True
    >>> handle = shown.draw_time(handle, 300, shown=250)  # played on: 50 more rows streamed
    >>> handle.sources["private"].data["x"][[0, -1]].tolist()
    [200.0, 299.0]
    """

    build = staticmethod(stream_figure)

    def __init__(self, data: PlotData, *, noisy: np.ndarray, estimates: np.ndarray,
                 boundaries: np.ndarray, truth: np.ndarray | None, titles: dict[str, str],
                 lines: dict):
        super().__init__(data)
        self.noisy, self.estimates, self.boundaries = noisy, estimates, boundaries
        self.truth, self.titles, self.lines = truth, titles, lines

    @classmethod
    def from_output(cls, output: dict, estimates: np.ndarray, *, where: str, w: int, kind: str,
                    delta: float, event_delta: float | None = None,
                    truth: np.ndarray | None = None, windows: dict | None = None,
                    events: dict | None = None, previous: StreamDisplay | None = None
                    ) -> StreamDisplay:
        """The display of ``output`` (drawn from ``where``: ``"teaching"``, ``"preview"`` or
        ``"release"``) with the ``estimates`` shown, at window ``w``, event ``kind`` and
        detection threshold ``delta``.

        ``windows`` holds the arguments of :func:`windows_data`; ``events`` those of
        :func:`events_data` and the ROC's ``curves`` and ``points`` (:func:`roc_data`). A part
        left None keeps the columns of ``previous`` (the display drawn before, of the same
        output). ``truth`` and ``event_delta``: the public truth drawn and the threshold of
        its events (ignored without a truth).
        """
        data = {} if previous is None else dict(previous.data)
        if windows is not None:
            data.update(windows_data(**windows))
        if events is not None:
            events = dict(events)
            roc = roc_data(events.pop("curves", None), events.pop("points", None))
            data.update(events_data(**events), **roc)
        titles = _stream_titles(where, truth_shown=truth is not None, w=int(w), kind=kind,
                                delta=float(delta))
        return cls(data, noisy=output["noisy"], estimates=estimates,
                   boundaries=np.asarray(output["boundaries"], dtype=np.int64), truth=truth,
                   titles=titles, lines={"delta": float(delta), "event_delta": (
                       None if truth is None or event_delta is None else float(event_delta))})

    def draw(self, handle: StreamFigure, t: int | None = None, parts=PARTS) -> StreamFigure:
        """The ``parts`` of the figure (:data:`PARTS`; the live panel only with a step ``t``:
        the steps up to ``t``) and the titles."""
        update(handle, {name: self.data[name] for part in parts
                        for name in _PART_SOURCES.get(part, ()) if name in self.data})
        if "events" in parts:
            handle.delta_line.location = self.lines["delta"]
            shown = self.lines["event_delta"] is not None
            if shown:
                handle.event_line.location = self.lines["event_delta"]
            handle.event_line.visible = shown
            handle.panels["roc"].visible = shown
        if "live" in parts and t is not None:
            self.draw_time(handle, t)
        handle.set_titles(**self.titles)
        return handle

    def draw_time(self, handle: StreamFigure, t: int, *, shown: int | None = None
                  ) -> StreamFigure:
        """The live panel up to step ``t`` (its last ``handle.window`` steps), the groups and
        the "now" cursors. After the step ``shown`` (the last one drawn from this display),
        only the new rows are streamed, when they fit in the window."""
        t, window, sources = int(t), handle.window, handle.sources
        if shown is not None and shown < t <= shown + window:
            rows = live_rows(shown, t, noisy=self.noisy, estimates=self.estimates,
                             truth=self.truth)
            sources["private"].stream(rows["private"], rollover=window)
            if self.truth is not None:
                sources["truth"].stream(rows["truth"], rollover=window)
        else:
            update(handle, live_rows(max(0, t - window), t, noisy=self.noisy,
                                     estimates=self.estimates, truth=self.truth))
        sources["groups"].data = group_quads(self.boundaries, max(0, t - window), t)
        handle.set_cursor(t - 1)
        return handle
