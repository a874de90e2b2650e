"""What every figure family shares: the handle, :func:`update`, the source and label helpers.

Bokeh figure builders are plain functions, callable and testable without a kernel.

Each ``*_figure()`` builds a layout once and returns a :class:`FigureHandle` holding the layout
and its named :class:`~bokeh.models.ColumnDataSource` objects. Each ``*_plot_data()`` turns
already computed numbers into ``{source name: column dict}``; :func:`update` assigns them. The
widgets redraw only by replacing ``ColumnDataSource.data`` -- figures are never re-created --
so a control change ships a small document patch to the browser.

:class:`Display` is the same split as an object (scikit-learn's Display pattern): a family's
display is built *from* a release or a preview (``from_release``), holds the public columns it
computed once, and only draws them (:meth:`Display.draw` onto a handle, or
:meth:`Display.figure` on a new one).

What goes in is the caller's responsibility: in analyst mode the widgets pass DP outputs and
public stand-in values only, and leave every ``truth`` (or ``reference``) source empty after a
release.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from bokeh.layouts import column
from bokeh.models import (
    Column,
    ColumnDataSource,
    DataRange1d,
    GridBox,
    LabelSet,
    LayoutDOM,
    Legend,
    LegendItem,
    Plot,
    Row,
)
from bokeh.plotting import figure

__all__ = ["EMPTY_XY", "Display", "FigureHandle", "TOOLS", "bar_labels", "fit_to_page", "panel",
           "percent", "show_panels", "source", "stack", "update"]

#: What a ``*_plot_data()`` / ``*_data()`` function returns: ``{source name: column dict}``.
PlotData = dict[str, dict[str, np.ndarray]]

#: The columns of an empty x/y source.
EMPTY_XY = {"x": np.zeros(0), "y": np.zeros(0)}
TOOLS = "pan,wheel_zoom,box_zoom,reset,save"
# Time-series panels zoom along x only.
XTOOLS = "pan,xwheel_zoom,box_zoom,reset,save"


@dataclass
class FigureHandle:
    """A built layout and the data sources that drive it."""

    layout: LayoutDOM
    sources: dict[str, ColumnDataSource] = field(default_factory=dict)


def _unchanged(current: Mapping, columns: Mapping) -> bool:
    """Whether a source already holds exactly ``columns`` (same names, same values)."""
    if current.keys() != columns.keys():
        return False
    for key, new in columns.items():
        old = current[key]
        if old is new:  # the same object, perhaps changed in place: resend it
            return False
        a, b = np.asarray(old), np.asarray(new)
        if a.shape != b.shape or a.dtype.kind != b.dtype.kind:
            return False
        if a.dtype.kind in "fc" and not np.array_equal(a, b, equal_nan=True):
            return False
        if a.dtype.kind not in "fc" and not np.array_equal(a, b):
            return False
    return True


def update(handle: FigureHandle, data: Mapping[str, Mapping[str, Sequence]]) -> None:
    """Replace the data of the named sources (one document patch per source that changed:
    a source already holding the same columns is left alone, so a redraw does not resend,
    e.g., 57,901 unchanged true answers to the browser).

    A legend entry whose glyphs all draw from sources left empty is hidden (e.g. "answers" and
    "true top-c" after an analyst release), so the legend never lists what is not on screen.
    """
    for name, columns in data.items():
        source = handle.sources[name]
        if not _unchanged(source.data, columns):
            source.data = dict(columns)
    _sync_legends(handle)


def _legend_items(handle: FigureHandle) -> list[tuple[LegendItem, list[ColumnDataSource]]]:
    """Each legend item of the layout with the named sources its glyphs draw (cached)."""
    cached = getattr(handle, "_legend_cache", None)
    if cached is None:
        named = {id(src) for src in handle.sources.values()}
        cached = []
        for item in handle.layout.select({"type": LegendItem}):
            srcs = [r.data_source for r in item.renderers
                    if id(getattr(r, "data_source", None)) in named]
            # Items with a glyph on literal data (e.g. a reference line) are always shown.
            if srcs and len(srcs) == len(item.renderers):
                cached.append((item, srcs))
        handle._legend_cache = cached
    return cached


#: How much wider than designed a figure may grow on a wide page.
GROW = 1.5
#: The narrowest a panel gets on a narrow page (below, the output area scrolls).
MIN_PANEL_WIDTH = 260


def fit_to_page(layout: LayoutDOM, *, grow: float = GROW) -> LayoutDOM:
    """Make a built layout follow the width of the page it is shown on.

    Every plot and every row / column stretches to the width available (Bokeh's
    ``sizing_mode="stretch_width"``; heights stay as built), from :data:`MIN_PANEL_WIDTH` up to
    ``grow`` times the width it was built with, so a figure neither overflows a narrow output
    area nor sits in a corner of a wide one. A plot tagged ``"fixed_size"`` (a square heatmap,
    whose cells must stay square) keeps its size. Returns ``layout``.
    """
    for model in layout.select({"type": LayoutDOM}):
        if "fixed_size" in (model.tags or []):
            continue
        width = getattr(model, "width", None)
        if isinstance(model, Plot):
            if width:
                model.max_width = int(width * grow)
                model.min_width = min(int(width), MIN_PANEL_WIDTH)
            model.sizing_mode = "stretch_width"
        elif isinstance(model, Row | Column | GridBox):
            model.sizing_mode = "stretch_width"
    if isinstance(layout, Row | Column | GridBox):
        # The whole: no wider than its widest row of plots allows.
        layout.max_width = int(_natural_width(layout) * grow)
    # Axes fitted to what is drawn: a series hidden from its legend, or a glyph left empty,
    # no longer holds the range (and its ticks) open.
    for rng in layout.select({"type": DataRange1d}):
        rng.only_visible = True
    return layout


def _natural_width(model: LayoutDOM) -> int:
    """The width a layout was built with: a plot's own, a row's sum, a column's maximum."""
    if isinstance(model, Plot):
        return int(model.width or 0)
    children = [c for c in getattr(model, "children", []) if isinstance(c, LayoutDOM)]
    if isinstance(model, GridBox):
        children = [c[0] for c in model.children]
    sizes = [_natural_width(c) for c in children] or [0]
    return sum(sizes) if isinstance(model, Row) else max(sizes)


# Where each panel hidden by show_panels belongs: its row or column and that container's
# children as built (their order), so that a panel shown again goes back to its place.
_HOMES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _home(panel: LayoutDOM) -> tuple[LayoutDOM, list] | None:
    home = _HOMES.get(panel)
    if home is None:
        roots = panel.document.roots if panel.document is not None else []
        for root in roots:
            for box in [*root.select({"type": Row}), *root.select({"type": Column})]:
                if any(child is panel for child in box.children):
                    siblings = [h for h in _HOMES.values() if h[0] is box]
                    home = _HOMES[panel] = (box, siblings[0][1] if siblings
                                            else list(box.children))
                    break
            if home is not None:
                break
    return home


def show_panels(panels: Mapping[str, LayoutDOM], **shown: bool) -> None:
    """Show or hide panels by name: a panel with nothing to show (the data in analyst mode, an
    error that needs the data) leaves its row or column, which closes up, rather than being
    drawn empty under a "not shown" title; shown again, it goes back to its place. Only
    changes are sent.

    The panel is taken out of the layout rather than made invisible: BokehJS 3.9 restyles the
    glyphs of an invisible plot whose data change (a release, then a preview) from stale
    buffers and throws ("Offset is outside the bounds of the DataView"); a panel put back is
    drawn afresh.
    """
    for name, visible in shown.items():
        panel = panels[name]
        home = _home(panel)
        if home is None:  # not in a row or column: the plot itself is the layout
            panel.visible = bool(visible)
            continue
        box, order = home
        present = any(child is panel for child in box.children)
        if present == bool(visible):
            continue
        keep = [child for child in order
                if (child is panel and visible)
                or (child is not panel and any(c is child for c in box.children))]
        box.children = keep


def _has_rows(source: ColumnDataSource) -> bool:
    return any(len(col) for col in source.data.values())


def _sync_legends(handle: FigureHandle) -> None:
    for item, srcs in _legend_items(handle):
        visible = any(_has_rows(src) for src in srcs)
        if item.visible != visible:
            item.visible = visible


def panel(title: str, x_label: str, y_label: str, *, width: int, height: int,
          tools: str = TOOLS, legend: str | None = None, **options):
    """A Bokeh figure with the families' usual tools and axis labels; ``legend`` places a legend
    whose entries hide their glyphs on click ("right", "below"; None: none). ``options`` go to
    :func:`bokeh.plotting.figure`."""
    p = figure(width=width, height=height, tools=tools, x_axis_label=x_label,
               y_axis_label=y_label, title=title, **options)
    if legend is not None:
        p.add_layout(Legend(click_policy="hide"), legend)
    return p


def source(**columns) -> ColumnDataSource:
    return ColumnDataSource(data={k: np.asarray(v) for k, v in columns.items()})


def bar_labels(x, top: str, text: str, source: ColumnDataSource) -> LabelSet:
    """Values printed just above the bars ``x``/``top`` of ``source``."""
    return LabelSet(
        x=x, y=top, text=text, source=source, text_align="center", text_baseline="bottom",
        y_offset=2, text_font_size="8pt", text_color="#333333",
    )


def percent(v: float) -> str:
    return "–" if not np.isfinite(v) else f"{v:.0%}"


def stack(*handles: FigureHandle) -> FigureHandle:
    """One column layout of several handles, their sources merged (names must not clash)."""
    sources: dict[str, ColumnDataSource] = {}
    for h in handles:
        clash = sources.keys() & h.sources.keys()
        if clash:
            raise ValueError(f"source names clash: {sorted(clash)}")
        sources.update(h.sources)
    return FigureHandle(column(*(h.layout for h in handles)), sources)


_source = source


class Display:
    """Public columns computed once from a release or a preview, drawn on demand.

    A family's display subclasses it with a ``from_release(release, ...)`` classmethod (what
    it reads of the release: its public output, and in a teaching run or a preview the
    engine's result) and a ``build`` figure builder; the widget calls ``from_release`` after
    the door answers and :meth:`draw` to show it. Drawing reads nothing but :attr:`data`.

    Parameters
    ----------
    data : PlotData
        ``{source name: column dict}``, the columns :meth:`draw` assigns.

    Examples
    --------
    >>> import numpy as np
    >>> from bokeh.plotting import figure
    >>> from dpwidgets.ui.figures import Display, FigureHandle, source
    >>> def line_figure():
    ...     xy = source(x=[], y=[])
    ...     p = figure()
    ...     p.line("x", "y", source=xy)
    ...     return FigureHandle(p, {"xy": xy})
    >>> class Line(Display):
    ...     build = staticmethod(line_figure)
    >>> handle = Line({"xy": {"x": np.arange(3), "y": np.ones(3)}}).figure()
    >>> handle.sources["xy"].data["x"].tolist()
    [0, 1, 2]
    """

    #: The figure builder of :meth:`figure` (a ``*_figure()`` function of the family).
    build: staticmethod

    def __init__(self, data: PlotData):
        self.data = data

    @classmethod
    def from_release(cls, release, **public) -> Display:  # pragma: no cover - per family
        """The display of ``release`` (a release or a preview) and the public numbers it
        needs besides (``public``)."""
        raise NotImplementedError

    def draw(self, handle: FigureHandle) -> FigureHandle:
        """Assign the columns to ``handle``'s sources (:func:`update`); returns it."""
        update(handle, self.data)
        return handle

    def figure(self) -> FigureHandle:
        """A new figure (``build()``) showing the columns."""
        return self.draw(self.build())
