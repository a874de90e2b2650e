"""Bokeh figure builders of the dynamic-histogram widget (Li 2017, Ch. 4).

The contract of :mod:`dpwidgets.ui.figures`: a figure is built once and redrawn by replacing its
sources' data. :class:`DynamicFigure` names its panels, time cursors and colour mapper;
:func:`marginal` and the two error helpers are the numpy post-processing the widget draws
(public numbers in: a release's DP output, the data in teaching mode, the stand-in in a preview).
:class:`DynamicDisplay` is one redraw as an object: computed once from a release (or preview)
and its measures, drawn whole (:meth:`DynamicDisplay.draw`) or one snapshot at a time
(:meth:`DynamicDisplay.draw_time`, all the time slider redraws).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from bokeh.core.properties import value
from bokeh.layouts import column, row
from bokeh.models import HoverTool, Legend, LegendItem, LinearColorMapper, LogTicker, Range1d, Span
from bokeh.palettes import Viridis256
from bokeh.plotting import figure

from ...ui.figures import XTOOLS as _TOOLS
from ...ui.figures import Display, FigureHandle, show_panels, update
from ...ui.figures import source as _source

__all__ = ["COMPARISON_COLOURS", "MAX_LEVELS", "MAX_TIMES", "DynamicDisplay", "DynamicFigure",
           "distance_to_last_release", "dynamic_figure", "error_per_time", "marginal",
           "normalise_rows", "series_plot_data", "snapshot_plot_data"]

#: At most this many rows (levels of the first attribute) in a heatmap; more are grouped.
MAX_LEVELS = 128
#: At most this many columns (time points) in a heatmap; a longer series is strided.
MAX_TIMES = 1000
#: Colours of the error lines: the method, then the two comparisons.
COMPARISON_COLOURS = ("#1f77b4", "#ff7f0e", "#7f7f7f")
_EMPTY = np.zeros(0)
_EMPTY_IMAGE = {"image": [], "x": _EMPTY, "y": _EMPTY, "dw": _EMPTY, "dh": _EMPTY}


@dataclass
class DynamicFigure(FigureHandle):
    """A :class:`~.figures.FigureHandle` with named panels, time cursors, the shared colour
    mapper, the shared ranges and the error-panel legend items (relabelled per method)."""

    panels: dict = field(default_factory=dict)
    cursors: list = field(default_factory=list)
    mapper: LinearColorMapper | None = None
    ranges: dict = field(default_factory=dict)
    error_items: list = field(default_factory=list)

    def set_titles(self, **titles: str) -> None:
        """Retitle panels by name (one small document patch each)."""
        for name, text in titles.items():
            if self.panels[name].title.text != text:
                self.panels[name].title.text = text

    def set_time(self, t: int) -> None:
        """Move the time cursors (one patch per cursor)."""
        for span in self.cursors:
            span.location = float(t)

    def set_error_labels(self, labels: list[str]) -> None:
        """Relabel the error lines: the method, then the comparisons."""
        for item, label in zip(self.error_items, labels, strict=False):
            if getattr(item.label, "value", None) != label:
                item.label = value(label)  # a bare string would be read as a column name

    def error_labels(self) -> list[str]:
        """The labels of the error lines, in order."""
        return [item.label.value for item in self.error_items]

    def set_axes(self, *, n_times: int, n_levels: int, attribute: str) -> None:
        """Fit the shared time range and the heatmaps' level range to a series."""
        time, levels = self.ranges["time"], self.ranges["levels"]
        if (time.start, time.end) != (0.5, n_times + 0.5):
            time.start, time.end = 0.5, n_times + 0.5
        # Room above the top level for the release-point markers.
        top = n_levels - 0.5 + max(1.0, 0.08 * n_levels)
        if (levels.start, levels.end) != (-0.5, top):
            levels.start, levels.end = -0.5, top
        for name in ("truth_heat", "release_heat"):
            self.panels[name].yaxis.axis_label = attribute
        self.panels["snapshot"].xaxis.axis_label = attribute

    def set_colour_range(self, high: float) -> None:
        """Counts from 0 (dark) to ``high`` (bright) in both heatmaps."""
        high = float(high) if np.isfinite(high) and high > 0 else 1.0
        if self.mapper.low != 0.0 or self.mapper.high != high:
            self.mapper.low, self.mapper.high = 0.0, high


def _heatmap(title: str, time_range, level_range, mapper, width: int, height: int):
    p = figure(width=width, height=height, tools=_TOOLS, title=title, x_range=time_range,
               y_range=level_range, toolbar_location="right")
    p.grid.visible = False
    return p


def dynamic_figure(*, width: int = 560, height: int = 150, side: int = 340) -> DynamicFigure:
    """The series over time and one snapshot: heatmaps, release points, threshold, error.

    Left column (time on the shared x axis, 1..N): the data's heatmap (the marginal of the
    first attribute over time), the release's heatmap with the release points on top, the
    threshold trajectory with the release points (and the distance to the last release), the
    error over time of the method and its comparisons (log scale). Right: the histogram at the
    selected time (the same marginal), data as bars, release as a line.

    Sources
    -------
    truth_image, release_image : image, x, y, dw, dh
        One Bokeh image each (levels × time). ``truth_image``: the data (teaching), the public
        stand-in (analyst preview), empty after an analyst release.
    points : x, y, level, epsilon
        Release points: time, the threshold there (0 for methods without one), the heatmap
        marker height, the release's budget.
    threshold : x, y
        The public threshold trajectory ``T_i``.
    distance : x, y
        ``d(H_i, H~_{i-1})`` of the data (teaching) or the stand-in (preview); empty after an
        analyst release.
    error_main, error_cmp1, error_cmp2 : x, y
        Mean absolute error per bin over time of the method and of two comparisons (teaching:
        against the data; preview: against the stand-in; empty after an analyst release).
    snapshot_truth : x, top, width
        The data's marginal at the selected time (bars).
    snapshot_release : x, y
        The release's marginal at the selected time.
    """
    time_range = Range1d(0.5, 2.5)
    level_range = Range1d(-0.5, 1.5)
    mapper = LinearColorMapper(palette=Viridis256, low=0.0, high=1.0)
    sources = {
        "truth_image": _source(**_EMPTY_IMAGE),
        "release_image": _source(**_EMPTY_IMAGE),
        "points": _source(x=[], y=[], level=[], epsilon=[]),
        "threshold": _source(x=[], y=[]),
        "distance": _source(x=[], y=[]),
        "error_main": _source(x=[], y=[]),
        "error_cmp1": _source(x=[], y=[]),
        "error_cmp2": _source(x=[], y=[]),
        "snapshot_truth": _source(x=[], top=[], width=[]),
        "snapshot_release": _source(x=[], y=[]),
    }

    truth_heat = _heatmap("Data over time", time_range, level_range, mapper, width, height)
    truth_heat.image(image="image", x="x", y="y", dw="dw", dh="dh", color_mapper=mapper,
                     source=sources["truth_image"])
    release_heat = _heatmap("Release over time", time_range, level_range, mapper, width,
                            height)
    release_heat.image(image="image", x="x", y="y", dw="dw", dh="dh", color_mapper=mapper,
                       source=sources["release_image"])
    marks = release_heat.scatter("x", "level", source=sources["points"], marker="inverted_triangle",
                                 size=8, color="#d62728", line_color="white")
    release_heat.add_tools(HoverTool(renderers=[marks], tooltips=[
        ("release at t", "@x"), ("ε of the release", "@epsilon{0.[0000]}")]))

    threshold = figure(width=width, height=height + 60, tools=_TOOLS, x_range=time_range,
                       title="Threshold and release points", toolbar_location="right",
                       y_axis_label="L1 distance")
    threshold.add_layout(Legend(click_policy="hide", orientation="horizontal"), "below")
    threshold.line("x", "y", source=sources["distance"], color="#9e9e9e", line_width=1,
                   legend_label="distance tested (not private)")
    threshold.step("x", "y", source=sources["threshold"], mode="after", color="#2ca02c",
                   line_width=2, legend_label="threshold T_i (public)")
    dots = threshold.scatter("x", "y", source=sources["points"], marker="triangle", size=8,
                             color="#d62728", legend_label="release")
    threshold.add_tools(HoverTool(renderers=[dots], tooltips=[("t", "@x"), ("T", "@y{0.000}")]))

    error = figure(width=width, height=height + 110, tools=_TOOLS, x_range=time_range,
                   y_axis_type="log", title="Error over time", toolbar_location="right",
                   x_axis_label="time point t", y_axis_label="mean |error| per bin")
    error.yaxis.ticker = LogTicker(desired_num_ticks=4)  # a narrow range: few labels
    legend = Legend(click_policy="hide", orientation="horizontal")
    error.add_layout(legend, "below")
    items = []
    for name, colour in zip(("error_main", "error_cmp1", "error_cmp2"), COMPARISON_COLOURS,
                            strict=True):
        line = error.line("x", "y", source=sources[name], color=colour, line_width=2,
                          alpha=0.9)
        items.append(LegendItem(label=value(name), renderers=[line]))
    legend.items = items

    snapshot = figure(width=side, height=2 * height + 60, tools=_TOOLS, toolbar_location="right",
                      title="Histogram at t", y_axis_label="count")
    snapshot.add_layout(Legend(click_policy="hide", orientation="horizontal"), "below")
    snapshot.vbar(x="x", top="top", width="width", source=sources["snapshot_truth"],
                  color="#bdbdbd", legend_label="data")
    snapshot.step("x", "y", source=sources["snapshot_release"], mode="center", color="#1f77b4",
                  line_width=2, legend_label="release")

    cursors = []
    for panel in (truth_heat, release_heat, threshold, error):
        span = Span(location=1.0, dimension="height", line_color="#ff4081", line_width=1,
                    line_dash="dashed")
        panel.add_layout(span)
        cursors.append(span)
    for panel in (truth_heat, release_heat, threshold):
        panel.xaxis.major_label_text_font_size = "8pt"

    layout = row(column(truth_heat, release_heat, threshold, error), column(snapshot))
    panels = {"truth_heat": truth_heat, "release_heat": release_heat, "threshold": threshold,
              "error": error, "snapshot": snapshot}
    return DynamicFigure(layout, sources, panels, cursors, mapper,
                         {"time": time_range, "levels": level_range}, items)


# --------------------------------------------------------------------------------------------
# Post-processing helpers (numpy, vectorised over time and bins)
# --------------------------------------------------------------------------------------------
def marginal(series: np.ndarray, shape: tuple[int, ...], max_levels: int = MAX_LEVELS):
    """The marginal of the first attribute of every snapshot, grouped to at most ``max_levels``.

    Parameters
    ----------
    series : array (N, U)
        Snapshots, each a C-order flattening of a histogram of ``shape``.
    shape : tuple of int
        The domain of a snapshot (product U).
    max_levels : int
        More levels than this are summed in consecutive groups of equal width.

    Returns
    -------
    values : array (N, L)
    positions : array (L,)
        The centre of each (group of) level(s), in units of the first attribute.
    width : float
        Levels per group.
    """
    series = np.asarray(series, dtype=float)
    first = int(shape[0])
    values = series.reshape(series.shape[0], first, -1).sum(axis=2)
    group = max(1, -(-first // max_levels))
    if group > 1:
        pad = (-first) % group
        values = np.pad(values, ((0, 0), (0, pad))).reshape(series.shape[0], -1, group).sum(axis=2)
    positions = np.arange(values.shape[1]) * group + (group - 1) / 2.0
    return values, positions, float(group)


_CHUNK = 64  # time points per vectorised block of the error measures


def _release_index(points: np.ndarray) -> np.ndarray:
    """For each time point, the row of the release shown there (-1: nothing released yet)."""
    return np.cumsum(np.asarray(points, dtype=bool)) - 1


def _rows(rows: np.ndarray, n_bins: int, dtype) -> np.ndarray:
    rows = np.asarray(rows, dtype=dtype).reshape(-1, n_bins)
    return np.vstack([rows, np.zeros((1, n_bins), dtype=dtype)])  # row -1: nothing yet


def error_per_time(rows: np.ndarray, points: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Mean absolute error per bin at each time point, ``mean_u |R_iu - H_iu|``.

    Parameters
    ----------
    rows : array (k, U)
        The new histograms of a release, in time order (``output["histograms"]``).
    points : array of bool (N,)
        The release points (``output["release_points"]``); between them a release repeats.
    reference : array (N, U)
        What the release is measured against. Not private: the data in teaching mode, the
        public stand-in in a preview. Computed in the reference's dtype (pass float32 for speed).

    Notes
    -----
    Vectorised over blocks of 64 time points (the released rows gathered per block), so the
    released (N, U) series is never materialised whole.
    """
    reference = np.asarray(reference)
    dtype = reference.dtype if reference.dtype.kind == "f" else np.float64
    table = _rows(rows, reference.shape[1], dtype)
    index = _release_index(points)
    out = np.empty(reference.shape[0])
    for lo in range(0, reference.shape[0], _CHUNK):
        hi = min(lo + _CHUNK, reference.shape[0])
        diff = reference[lo:hi] - table[index[lo:hi]]
        np.abs(diff, out=diff)
        out[lo:hi] = diff.mean(axis=1)
    return out


def normalise_rows(values: np.ndarray) -> np.ndarray:
    """Each row as a distribution, as the engine normalises a release (negative counts to 0;
    an all-zero row -> uniform). Post-processing."""
    values = np.clip(np.asarray(values), 0.0, None)
    totals = values.sum(axis=1, keepdims=True)
    safe = np.where(totals > 0, totals, 1.0)
    return np.where(totals > 0, values / safe, 1.0 / values.shape[1]).astype(values.dtype)


def distance_to_last_release(rows: np.ndarray, points: np.ndarray,
                             reference_distribution: np.ndarray) -> np.ndarray:
    """``d(H_i, R_{i-1})``: the normalised L1 distance (Li 2017, §4.2.1, range [0, 2]) of every
    snapshot to the reference in force just before it (NaN at the first time point): the
    last private release (the text's DSFT/DSAT) or the true snapshot at the last release time
    (the paced DSAT) -- whichever ``rows`` hold.

    Parameters
    ----------
    rows : array (k, U)
        The reference at each release point: the released histograms, or the snapshots.
    points : array of bool (N,)
        The release points.
    reference_distribution : array (N, U)
        The snapshots as distributions (``H_i / |H_i|``; :func:`normalise_rows`). Not
        private: the data (teaching) or the public stand-in (preview).
    """
    ref = np.asarray(reference_distribution)
    dtype = ref.dtype if ref.dtype.kind == "f" else np.float64
    table = normalise_rows(_rows(rows, ref.shape[1], dtype))
    previous = _release_index(points)[:-1]  # time i compares with the release shown at i-1
    out = np.full(ref.shape[0], np.nan)
    for lo in range(1, ref.shape[0], _CHUNK):
        hi = min(lo + _CHUNK, ref.shape[0])
        diff = ref[lo:hi] - table[previous[lo - 1:hi - 1]]
        np.abs(diff, out=diff)
        out[lo:hi] = diff.sum(axis=1)
    return out


def _image(values: np.ndarray, n_times: int, n_levels: float) -> dict:
    stride = max(1, -(-values.shape[0] // MAX_TIMES))
    # float64: rounding noisy values to float32 would put many of them on whole numbers.
    image = np.ascontiguousarray(values[::stride].T, dtype=np.float64)
    return {"image": [image], "x": np.array([0.5]),
            "y": np.array([-0.5]), "dw": np.array([float(n_times)]),
            "dh": np.array([float(n_levels)])}


def series_plot_data(
    *,
    release_marginal: np.ndarray,
    release_points: np.ndarray,
    release_epsilons: np.ndarray,
    thresholds: np.ndarray,
    n_levels: int,
    truth_marginal: np.ndarray | None = None,
    distance: np.ndarray | None = None,
    errors: list[np.ndarray] | tuple = (),
) -> dict[str, dict]:
    """Columns for the time panels of :func:`dynamic_figure`.

    Parameters
    ----------
    release_marginal : array (N, L)
        The release's first-attribute marginal over time (a DP output, post-processed).
    release_points, release_epsilons, thresholds : arrays (N,)
        From the release (DP output).
    n_levels : int
        Levels of the first attribute (the heatmaps' height, before grouping).
    truth_marginal : array (N, L), optional
        Values allowed on screen as "data": the data (teaching), the stand-in (preview).
    distance : array (N,), optional
        :func:`distance_to_last_release` of the data or stand-in (teaching / preview only).
    errors : sequence of arrays (N,)
        :func:`error_per_time` of the method, then of up to two comparisons.
    """
    n_times = release_marginal.shape[0]
    times = np.arange(1, n_times + 1, dtype=float)
    points = np.asarray(release_points, dtype=bool)
    thr = np.asarray(thresholds, dtype=float)
    at = np.flatnonzero(points)
    marker_y = np.where(np.isfinite(thr[at]), thr[at], 0.0)
    level = n_levels - 0.5 + 0.5 * max(1.0, 0.08 * n_levels)
    data: dict[str, dict] = {
        "release_image": _image(release_marginal, n_times, n_levels),
        "truth_image": dict(_EMPTY_IMAGE),
        "points": {"x": times[at], "y": marker_y, "level": np.full(at.size, level),
                   "epsilon": np.asarray(release_epsilons, dtype=float)[at]},
        "threshold": {"x": _EMPTY, "y": _EMPTY},
        "distance": {"x": _EMPTY, "y": _EMPTY},
    }
    if np.any(np.isfinite(thr)):
        # A step line needs only the points where the level changes, and the last one.
        keep = np.flatnonzero(np.r_[True, thr[1:] != thr[:-1]])
        keep = np.unique(np.r_[keep, n_times - 1])
        data["threshold"] = {"x": times[keep], "y": thr[keep]}
    if truth_marginal is not None:
        data["truth_image"] = _image(truth_marginal, n_times, n_levels)
    if distance is not None:
        ok = np.isfinite(distance)
        data["distance"] = {"x": times[ok], "y": np.asarray(distance, float)[ok]}
    for i, name in enumerate(("error_main", "error_cmp1", "error_cmp2")):
        if i < len(errors) and errors[i] is not None:
            data[name] = {"x": times, "y": np.maximum(np.asarray(errors[i], float), 1e-9)}
        else:
            data[name] = {"x": _EMPTY, "y": _EMPTY}
    return data


def snapshot_plot_data(
    t: int,
    *,
    positions: np.ndarray,
    release_marginal: np.ndarray,
    truth_marginal: np.ndarray | None = None,
    width: float = 1.0,
) -> dict[str, dict]:
    """Columns for the snapshot panel at time ``t`` (1-based); ``width``: levels per bar."""
    i = int(t) - 1
    data = {
        "snapshot_release": {"x": np.asarray(positions, float),
                             "y": np.asarray(release_marginal[i], float)},
        "snapshot_truth": {"x": _EMPTY, "top": _EMPTY, "width": _EMPTY},
    }
    if truth_marginal is not None:
        data["snapshot_truth"] = {"x": np.asarray(positions, float),
                                  "top": np.asarray(truth_marginal[i], float),
                                  "width": np.full(len(positions), 0.9 * float(width))}
    return data


class DynamicDisplay(Display):
    """A dynamic-histogram release (or preview) as :func:`dynamic_figure` shows it.

    Built (:meth:`from_output`) from the DP output, its released marginal
    (:func:`~dpwidgets.families.dynamic.panels.release_marginal`) and the measures against the
    reference the widget may draw (:class:`~dpwidgets.families.dynamic.preview.Measures`: the
    data in teaching mode, the stand-in in a preview, nothing after a paid release).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.dynamic.display import DynamicDisplay
    >>> from dpwidgets.families.dynamic.panels import release_marginal
    >>> from dpwidgets.families.dynamic.preview import Measures
    >>> output = {"histograms": np.ones((2, 6)), "n_bins": 6, "n_releases": 2,
    ...           "release_points": np.array([True, False, True, False]),
    ...           "release_epsilons": np.array([0.5, 0.0, 0.5, 0.0]),
    ...           "thresholds": np.full(4, 0.3)}
    >>> shown = DynamicDisplay.from_output(
    ...     output, release_marginal(output, (3, 2)), Measures(None, None, [], {}),
    ...     n_times=4, n_levels=3, attribute="x", error_labels=["DSAT"], titles={})
    >>> handle = shown.draw_time(shown.draw(shown.build()), 3)
    >>> handle.sources["snapshot_release"].data["y"].tolist()
    [2.0, 2.0, 2.0]
    """

    build = staticmethod(dynamic_figure)

    def __init__(self, data, *, release: np.ndarray, truth: np.ndarray | None, positions,
                 width: float, n_times: int, n_levels: int, attribute: str,
                 colour_high: float, error_labels: list[str], titles: dict[str, str],
                 show_error: bool):
        super().__init__(data)
        self.release, self.truth, self.positions, self.width = release, truth, positions, width
        self.n_times, self.n_levels, self.attribute = n_times, n_levels, attribute
        self.colour_high, self.error_labels = colour_high, error_labels
        self.titles, self.show_error = titles, show_error

    @classmethod
    def from_output(cls, output: dict, marginal: tuple, measures, *, n_times: int,
                    n_levels: int, attribute: str, error_labels: list[str],
                    titles: dict[str, str], truth_on_screen: np.ndarray | None = None
                    ) -> DynamicDisplay:
        """The display of ``output``: ``marginal`` is its released marginal ``(series,
        positions, width)``, ``measures`` what was measured against the public reference;
        ``n_times`` and ``n_levels`` the public number of snapshots and of levels of the first
        ``attribute``; ``truth_on_screen``: the reference marginal already drawn (the same
        object is not sent to the browser again)."""
        release, positions, width = marginal
        truth = measures.truth_marginal
        data = series_plot_data(
            release_marginal=release, release_points=output["release_points"],
            release_epsilons=output["release_epsilons"], thresholds=output["thresholds"],
            n_levels=n_levels, truth_marginal=truth, distance=measures.distance,
            errors=measures.errors)
        if truth is not None and truth is truth_on_screen:
            del data["truth_image"]  # the same data as on screen: no need to resend it
        scale = truth if truth is not None else release
        return cls(data, release=release, truth=truth, positions=positions, width=width,
                   n_times=n_times, n_levels=n_levels, attribute=attribute,
                   colour_high=float(np.percentile(scale, 99.5)), error_labels=error_labels,
                   titles=titles, show_error=bool(measures.errors))

    def draw(self, handle: DynamicFigure) -> DynamicFigure:
        """The series panels, axes, colours and titles. After a paid release the data and the
        error (which needs the data) have nothing to show: their panels go."""
        update(handle, self.data)
        handle.set_axes(n_times=self.n_times, n_levels=self.n_levels, attribute=self.attribute)
        handle.set_colour_range(self.colour_high)
        handle.set_error_labels(self.error_labels)
        handle.set_titles(**self.titles)
        show_panels(handle.panels, truth_heat=self.truth is not None, error=self.show_error)
        return handle

    def draw_time(self, handle: DynamicFigure, t: int) -> DynamicFigure:
        """The histogram at time ``t`` (clipped to 1..N)."""
        t = min(max(int(t), 1), self.n_times)
        update(handle, snapshot_plot_data(t, positions=self.positions,
                                          release_marginal=self.release,
                                          truth_marginal=self.truth, width=self.width))
        handle.set_time(t)
        handle.set_titles(snapshot=f"Histogram at t = {t}: {self.attribute}")
        return handle
