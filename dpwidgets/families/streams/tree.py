"""Bokeh figure builders of the hierarchy widget (Chen 2018, §5.5, Alg. 18, Fig. 5.8): the tree
of aggregated streams, the selected node's streams, the error per level, and
:class:`HierarchyDisplay`, one redraw computed once and drawn whole, one step or one node at a
time. Re-exported by :mod:`~dpwidgets.families.streams.display`.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import HoverTool, Legend, Range1d, Span, TapTool
from bokeh.plotting import figure

from ...ui.figures import Display, FigureHandle, PlotData, update
from ...ui.figures import source as _source
from .lines import _EMPTY, _EMPTY_XY, MAX_LINE_POINTS, _decimated, _four_lines

__all__ = ["HierarchyDisplay", "HierarchyFigure", "hierarchy_figure", "level_error_data",
           "sparkline_data", "tree_layout", "tree_nodes_data"]


def tree_layout(parents: Sequence[int]) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of every node: leaves spaced 1 apart in depth-first order, a parent over the
    mean of its children, y = −level (the root on top). Public: the hierarchy is public."""
    parents = np.asarray(parents, dtype=np.int64)
    m = parents.size
    children: list[list[int]] = [[] for _ in range(m)]
    for node, parent in enumerate(parents.tolist()):
        if parent >= 0:
            children[parent].append(node)
    root = int(np.flatnonzero(parents == -1)[0])
    x = np.zeros(m)
    level = np.zeros(m)
    order, stack, next_leaf = [], [(root, 1)], 0
    while stack:  # depth first: leaves in order
        node, lev = stack.pop()
        level[node] = lev
        order.append(node)
        if not children[node]:
            x[node] = next_leaf
            next_leaf += 1
        stack.extend((c, lev + 1) for c in reversed(children[node]))
    for node in reversed(order):  # children before parents
        if children[node]:
            x[node] = np.mean(x[children[node]])
    return x, -level


@functools.lru_cache(maxsize=16)
def _layout(parents: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """:func:`tree_layout` once per hierarchy: a new display of the same tree (every redraw
    that reruns the release) reuses it. Nothing writes to these arrays."""
    return tree_layout(parents)


@dataclass
class HierarchyFigure(FigureHandle):
    """The tree, the selected node's streams and the per-level errors."""

    panels: dict = field(default_factory=dict)
    cursor: Span | None = None
    nodes_renderer: object = None

    def set_titles(self, **titles: str) -> None:
        for name, text in titles.items():
            self.panels[name].title.text = text

    def set_error_range(self, levels: dict) -> None:
        """Fit the (log) y range of the error panel to the ``levels`` columns.

        Set from Python rather than left to BokehJS' automatic range, which in JupyterLab
        sometimes kept the extent of one series only when the data arrived as a patch.
        """
        values = np.concatenate([np.asarray(levels[k], dtype=float) for k in ("phs", "hs", "lm")])
        values = values[np.isfinite(values) & (values > 0)]
        rng = self.panels["errors"].y_range
        if values.size:
            rng.start, rng.end = float(values.min()) / 1.6, float(values.max()) * 1.6


def hierarchy_figure(parents: Sequence[int], *, width: int = 820) -> HierarchyFigure:
    """A hierarchy of aggregated streams (Chen 2018, §5.5).

    Sources
    -------
    edges : x0, y0, x1, y1
        The tree's edges (public).
    nodes : x, y, node, level, status, color, estimate, truth
        One row per node at the current step t: ``status`` is "kept" or "pruned" (PHS-PGS
        pruned the node at t and released 0), ``estimate`` the release's ĉ_t, ``truth`` the
        true aggregate (teaching / stand-in; NaN otherwise).
    spark_phs, spark_hs, spark_lm, spark_truth : x, y
        The selected node's stream over time: PHS-PGS, HS-PGS, HS-LM, true.
    levels : level, phs, hs, lm
        Average L1 error per level and method (teaching / stand-in only).
    """
    x, y = tree_layout(parents)
    parents = np.asarray(parents, dtype=np.int64)
    m = parents.size
    child = np.flatnonzero(parents >= 0)
    height_px = 40 * int(-y.min()) + 60
    tree = figure(width=width, height=min(max(height_px, 200), 360), tools="tap,reset,save",
                  title="Hierarchy of aggregated streams (click a node)",
                  x_axis_location=None, y_axis_location=None)
    tree.grid.visible = False
    sources = {
        "edges": _source(x0=x[child], y0=y[child], x1=x[parents[child]], y1=y[parents[child]]),
        "nodes": _source(x=x, y=y, node=np.arange(m), level=-y, status=np.full(m, "kept", object),
                         color=np.full(m, "#1f77b4", object), estimate=np.zeros(m),
                         truth=np.full(m, np.nan)),
        "spark_phs": _source(**_EMPTY_XY),
        "spark_hs": _source(**_EMPTY_XY),
        "spark_lm": _source(**_EMPTY_XY),
        "spark_truth": _source(**_EMPTY_XY),
        "levels": _source(level=[], phs=[], hs=[], lm=[]),
    }
    tree.segment("x0", "y0", "x1", "y1", source=sources["edges"], color="#bbb")
    size = 14 if m <= 63 else 8
    nodes = tree.scatter("x", "y", source=sources["nodes"], size=size, fill_color="color",
                         line_color="#333", selection_line_color="#d62728",
                         selection_line_width=3, nonselection_fill_alpha=0.6)
    tree.add_tools(HoverTool(renderers=[nodes], tooltips=[
        ("node", "@node (level @level)"), ("at t", "@status"), ("estimate", "@estimate{0,0.0}"),
        ("true", "@truth{0,0.0}")]))
    tree.select_one(TapTool).renderers = [nodes]
    tree.x_range = Range1d(float(x.min()) - 1, float(x.max()) + 1)
    tree.y_range = Range1d(float(y.min()) - 0.6, -0.4)

    half = (width - 20) // 2
    spark = _four_lines(
        "Selected node", "count", half, 240, sources,
        {"spark_truth": "true", "spark_lm": "HS-LM", "spark_hs": "HS-PGS",
         "spark_phs": "PHS-PGS"}, plain_alpha=0.7)
    spark.legend.label_text_font_size = "8pt"
    cursor = Span(location=0, dimension="height", line_color="#9467bd", line_width=1.5)
    spark.add_layout(cursor)

    errs = figure(width=half, height=240, tools="save", y_axis_type="log",
                  x_axis_label="level (1 = root)", y_axis_label="average L1 error",
                  title="Error per level", y_range=Range1d(0.1, 100.0))
    errs.add_layout(Legend(click_policy="hide", orientation="horizontal"), "below")
    for key, color, label in (("lm", "#ff7f0e", "HS-LM"), ("hs", "#2ca02c", "HS-PGS"),
                              ("phs", "#1f77b4", "PHS-PGS")):
        errs.line("level", key, source=sources["levels"], color=color, line_width=2,
                  legend_label=label)
        errs.scatter("level", key, source=sources["levels"], color=color, size=6,
                     legend_label=label)
    errs.legend.label_text_font_size = "8pt"
    layout = column(tree, row(spark, errs))
    return HierarchyFigure(layout, sources, {"tree": tree, "spark": spark, "errors": errs},
                           cursor, nodes)


def tree_nodes_data(
    *,
    estimates: np.ndarray,
    pruned: np.ndarray | None = None,
    truth: np.ndarray | None = None,
    base: dict,
) -> PlotData:
    """The ``nodes`` columns at one step: ``estimates`` (m,), ``pruned`` (m,) or None,
    ``truth`` (m,) or None; ``base`` holds the static columns (x, y, node, level)."""
    m = np.asarray(estimates).size
    pruned = np.zeros(m, dtype=bool) if pruned is None else np.asarray(pruned, dtype=bool)
    return {"nodes": {
        **base,
        "status": np.where(pruned, "pruned", "kept").astype(object),
        "color": np.where(pruned, "#d9d9d9", "#1f77b4").astype(object),
        "estimate": np.asarray(estimates, dtype=float),
        "truth": np.full(m, np.nan) if truth is None else np.asarray(truth, dtype=float),
    }}


def sparkline_data(
    *,
    phs: np.ndarray | None,
    hs: np.ndarray | None = None,
    lm: np.ndarray | None = None,
    truth: np.ndarray | None = None,
    max_points: int = MAX_LINE_POINTS,
) -> PlotData:
    """The selected node's streams (each decimated for display)."""
    return _decimated({"spark_phs": phs, "spark_hs": hs, "spark_lm": lm, "spark_truth": truth},
                      max_points)


def level_error_data(errors: dict[str, np.ndarray] | None) -> PlotData:
    """Average L1 error per level, ``errors = {"phs": (h,), "hs": (h,), "lm": (h,)}``; a missing
    method is NaN (not drawn); None empties the panel."""
    if not errors:
        return {"levels": {"level": _EMPTY, "phs": _EMPTY, "hs": _EMPTY, "lm": _EMPTY}}
    h = max(np.asarray(v).size for v in errors.values())
    cols = {k: np.asarray(errors.get(k, np.full(h, np.nan)), dtype=float)
            for k in ("phs", "hs", "lm")}
    return {"levels": {"level": np.arange(1, h + 1, dtype=float), **cols}}


# The methods of a hierarchy display, by output key.
_METHOD_NAMES = {"phs": "PHS-PGS", "hs": "HS-PGS", "lm": "HS-LM"}


def _level_errors(estimates: dict[str, np.ndarray], truth: np.ndarray, levels: np.ndarray,
                  height: int) -> tuple[dict[str, np.ndarray], dict[str, float]]:
    """The average L1 error per level of each method against the public aggregates ``truth``,
    and each method's scaled total L1 (Chen 2018, §5.6.1) with the ratios of HS-LM and HS-PGS
    to PHS-PGS (Fig. 5.8)."""
    per_level = np.bincount(levels - 1, minlength=height)
    total = float(truth.sum())
    errors, quality = {}, {}
    for key, values in estimates.items():
        gaps = np.abs(values - truth)  # once: both measures use it
        errors[key] = np.bincount(levels - 1, weights=gaps.mean(axis=1),
                                  minlength=height) / per_level
        if total > 0:  # scaled total L1, as engine.streams.scaled_total_l1
            quality[f"{_METHOD_NAMES[key]} scaled L1"] = float(gaps.sum() / total)
    if "HS-LM scaled L1" in quality and "PHS-PGS scaled L1" in quality:
        quality["HS-LM / PHS-PGS"] = quality["HS-LM scaled L1"] / quality["PHS-PGS scaled L1"]
        quality["HS-PGS / PHS-PGS"] = quality["HS-PGS scaled L1"] / quality["PHS-PGS scaled L1"]
    return errors, quality


class HierarchyDisplay(Display):
    """A ``"hierarchical_pegasus"`` release (or preview) as :func:`hierarchy_figure` shows it.

    Built (:meth:`from_outputs`) from the public outputs of PHS-PGS and of the methods it is
    compared with (HS-PGS, HS-LM) and, when they may be drawn, the public true aggregates of
    every node (the data in teaching mode, the stand-in in a preview; none after a paid
    release), against which it measures the error per level and :attr:`quality` once. A step
    (:meth:`draw_time`) or a node (:meth:`draw_node`) is then drawn without computing
    anything.

    Parameters
    ----------
    data : PlotData
        The ``levels`` columns (the error per level).
    hierarchy : dpwidgets.engine.streams.Hierarchy
        The public hierarchy (its ``parents``, ``levels``, ``n_nodes``).
    estimates : dict
        ``{method key: (nodes, steps) estimates}``, PHS-PGS (``"phs"``) first.
    pruned : ndarray of bool or None
        PHS-PGS's pruned nodes per step.
    truth : ndarray or None
        The public true aggregates (nodes, steps).
    where : {"teaching", "preview", "release"}
    quality : dict
        The measures against ``truth`` (empty without one).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> from dpwidgets.families.streams.tree import HierarchyDisplay, tree_layout
    >>> from dpwidgets.families.streams.params import hierarchy_of
    >>> from dpwidgets.families.streams.standins import multi_state_streams
    >>> states = multi_state_streams(np.random.default_rng(2), n_states=4, length=60, total=900)
    >>> teaching = Session("teaching", seed=4)
    >>> teaching.add_dataset("states", states, stand_in=states)
    >>> tree = hierarchy_of(None, 4)
    >>> release = teaching.release("states", "hierarchical_pegasus", epsilon=1.0,
    ...                            method="phs_pegasus", parents=tree.parents.tolist())
    >>> shown = HierarchyDisplay.from_outputs({"phs": release.output}, tree,
    ...                                       truth=tree.aggregate(states), where="teaching")
    >>> handle = shown.draw(shown.figure(), t=10, node=0)
    >>> float(handle.sources["nodes"].data["truth"][0]) == float(states[:, 10].sum())
    True
    >>> handle.sources["nodes"].data["x"].tolist() == tree_layout(tree.parents)[0].tolist()
    True
    >>> handle.sources["levels"].data["level"].tolist(), sorted(shown.quality)
    ([1.0, 2.0, 3.0], ['PHS-PGS scaled L1'])
    """

    build = staticmethod(hierarchy_figure)

    def __init__(self, data: PlotData, *, hierarchy, estimates: dict[str, np.ndarray],
                 pruned: np.ndarray | None, truth: np.ndarray | None, where: str,
                 quality: dict[str, float]):
        super().__init__(data)
        self.hierarchy, self.estimates, self.pruned = hierarchy, estimates, pruned
        self.truth, self.where, self.quality = truth, where, quality
        x, y = _layout(tuple(np.asarray(hierarchy.parents).tolist()))
        self.base = {"x": x, "y": y, "node": np.arange(x.size), "level": -y}

    @classmethod
    def from_outputs(cls, outputs: dict[str, dict], hierarchy, *, where: str,
                     truth: np.ndarray | None = None) -> HierarchyDisplay:
        """The display of ``outputs`` (``{"phs": PHS-PGS output, "hs": ..., "lm": ...}``, from
        ``where``) on ``hierarchy``, measured against the public aggregates ``truth``."""
        estimates = {key: np.asarray(out["estimates"]) for key, out in outputs.items()}
        pruned = outputs["phs"].get("pruned")
        errors, quality = (None, {}) if truth is None else _level_errors(
            estimates, truth, hierarchy.levels, hierarchy.height)
        return cls(level_error_data(errors), hierarchy=hierarchy, estimates=estimates,
                   pruned=None if pruned is None else np.asarray(pruned), truth=truth,
                   where=where, quality=quality)

    def figure(self) -> HierarchyFigure:
        """A new figure of the hierarchy showing the errors per level."""
        return self.draw(self.build(self.hierarchy.parents))

    def draw(self, handle: HierarchyFigure, *, t: int | None = None, node: int | None = None
             ) -> HierarchyFigure:
        """The tree at step ``t``, the streams of ``node`` (each when given) and the errors
        per level (their range fitted when there are any)."""
        if t is not None:
            self.draw_time(handle, t)
        if node is not None:
            self.draw_node(handle, node)
        update(handle, self.data)
        if self.truth is not None:
            handle.set_error_range(self.data["levels"])
        return handle

    def draw_time(self, handle: HierarchyFigure, t: int) -> HierarchyFigure:
        """The tree at step ``t`` (clipped to the last step): each node kept or pruned, its
        estimate and (when drawn) its true aggregate; the cursor of the node's panel."""
        phs = self.estimates["phs"]
        t = min(int(t), phs.shape[1] - 1)
        pruned = None if self.pruned is None else self.pruned[:, t]
        update(handle, tree_nodes_data(
            estimates=phs[:, t], pruned=pruned, base=self.base,
            truth=None if self.truth is None else self.truth[:, t]))
        n_pruned = 0 if pruned is None else int(pruned.sum())
        where = {"teaching": "", "preview": " — preview on the stand-in",
                 "release": " — released"}[self.where]
        handle.set_titles(tree=f"PHS-PGS at step t = {t:,}: {n_pruned} of "
                               f"{self.hierarchy.n_nodes} nodes pruned (grey, released "
                               f"as 0){where}")
        handle.cursor.location = t
        return handle

    def draw_node(self, handle: HierarchyFigure, node: int) -> HierarchyFigure:
        """The streams of ``node``: of every method drawn, and its true aggregate."""
        i = int(node)
        rows = {key: values[i] for key, values in self.estimates.items()}
        update(handle, sparkline_data(
            phs=rows.get("phs"), hs=rows.get("hs"), lm=rows.get("lm"),
            truth=None if self.truth is None else self.truth[i]))
        handle.set_titles(spark=f"Node {i} (level {int(self.hierarchy.levels[i])}) over time")
        return handle
