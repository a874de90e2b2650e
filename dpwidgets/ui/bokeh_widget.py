"""Showing Bokeh layouts in widgets, with BokehJS served from the installed package.

jupyter_bokeh's front end (``BokehModel``) does not bundle BokehJS: it calls the global
``window.Bokeh`` that ``bokeh.io.output_notebook()`` puts on the page -- and that loads
BokehJS from cdn.bokeh.org by default. Offline (air-gapped enclaves, the CI machines) the CDN
is unreachable and every BokehModel shows "Click to show javascript error". So before the first
figure is displayed in a kernel we publish the loader with inline resources: the BokehJS
bundles are read from the installed ``bokeh`` package and sent in the output itself (once per
kernel; only the bundles the widgets draw with, :data:`BOKEHJS_COMPONENTS`). Nothing reaches
for a CDN. A kernel of a Jupyter server that serves the bundles itself (the
:mod:`dpwidgets.bokehjs_server` extension, installed with the package) publishes a loader of
about 1 KB instead, so a saved notebook does not carry them and the browser loads them once.
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Iterator
from contextlib import contextmanager

from bokeh.models import LayoutDOM
from bokeh.protocol import Protocol
from jupyter_bokeh import BokehModel

from .figures import fit_to_page

__all__ = ["BOKEHJS_COMPONENTS", "BatchedBokehModel", "bokeh_widget", "ensure_bokehjs",
           "one_patch", "redraw_when_displayed"]

#: The BokehJS bundles the loader sends: the core (plots, glyphs, tools, legends). Every figure
#: draws on a 2D canvas, and the widgets draw no Bokeh widget, table or TeX label, so
#: ``bokeh-gl``, ``bokeh-widgets``, ``bokeh-tables`` and ``bokeh-mathjax`` are left out (bokeh's
#: JavaScript is 3.9 MB; the inline loader's output holds what it sends twice). A figure that
#: needs one of them must add it here.
BOKEHJS_COMPONENTS = ("bokeh",)

# The document events held by :func:`one_patch`, by model: {id(model): (model, [events])}.
# Per thread, not a ContextVar: asyncio runs a ``call_later`` callback (a debounced redraw) in
# a copy of the context it was scheduled from, which would still see a block long finished.
_HOLD = threading.local()


def _held() -> dict | None:
    return getattr(_HOLD, "events", None)

_LOADED = False


def _in_kernel() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover - IPython ships with ipywidgets
        return False
    shell = get_ipython()
    return shell is not None and getattr(shell, "kernel", None) is not None


def ensure_bokehjs(force: bool = False, inline: bool = False) -> bool:
    """Publish the inline BokehJS loader once per kernel (no-op outside a kernel).

    Parameters
    ----------
    force : bool
        Publish it again (e.g. after the page was reloaded and the loader output cleared).
    inline : bool
        Send the bundles inline even when the Jupyter server serves them (see
        :mod:`dpwidgets.bokehjs_server`: a kernel of that server otherwise publishes a loader
        of about 1 KB that fetches them from the server, so a saved notebook does not carry
        them).

    Returns
    -------
    bool
        Whether the loader was published by this call.
    """
    global _LOADED
    if (_LOADED and not force) or not _in_kernel():
        return False
    from ..bokehjs_server import served_loader

    loader = None if inline else served_loader(BOKEHJS_COMPONENTS)
    if loader is not None:
        from IPython.display import publish_display_data

        publish_display_data({"application/javascript": loader,
                              "application/vnd.bokehjs_load.v0+json": loader})
        _LOADED = True
        return True
    from bokeh.io import output_notebook
    from bokeh.resources import Resources

    output_notebook(resources=Resources(mode="inline", components=list(BOKEHJS_COMPONENTS)),
                    hide_banner=True)
    _LOADED = True
    return True


def redraw_when_displayed(plot: BokehModel) -> None:
    """Resend a BokehModel's whole document each time a new view of it is displayed.

    jupyter_bokeh builds a view from the document as it was when the BokehModel was created;
    patches sent before the view exists (a widget's first draw, titles set in ``__init__``) are
    lost. ``_view_count`` (ipywidgets: counts the displayed views once set to 0) tells us when
    a view appears; the new render bundle carries the current document.
    """

    def on_views(change) -> None:
        if (change["new"] or 0) > (change["old"] or 0):
            # A BatchedBokehModel knows whether its bundle is still the document; a new view
            # of an unchanged document needs nothing resent.
            if getattr(plot, "bundle_is_stale", lambda: True)():
                plot.render_bundle = BokehModel._model_to_traits(plot._model)

    plot._view_count = 0
    plot.observe(on_views, names="_view_count")


class BatchedBokehModel(BokehModel):
    """A ``jupyter_bokeh.BokehModel`` whose document changes made inside :func:`one_patch`
    reach the browser as one PATCH-DOC message.

    jupyter_bokeh sends one message (three frames plus two per array) for every changed
    property, and BokehJS repaints after each: a widget redrawing a dozen sources after a
    slider move shows a dozen intermediate frames in the browser (``benchmarks/browser_redraw.py``
    measures it). Held and sent together, the changes are
    applied in one go and painted once. Outside :func:`one_patch` it behaves as its parent.

    In a kernel, the render bundle (the whole document, serialised: not cheap for a
    widget's figures) is made once, when it is needed, not also at construction: a widget
    draws right after wrapping its layout, so the construction-time bundle was always stale,
    serialised for nothing and drawn by the browser before the current one replaced it. Until
    then the bundle is a blank placeholder; it is replaced before the widget is displayed
    directly (:class:`OfflineBokehMixin`), else at the end of the cell that made it (for a
    widget shown inside another container), else when a view appears
    (:func:`redraw_when_displayed`, which resends only a stale bundle).
    """

    #: Document changes so far, and how many of them the render bundle holds (-1: placeholder).
    _changes = 0
    _bundled = -1

    def update_from_model(self, model) -> None:
        if not _in_kernel():  # no front end to wait for: jupyter_bokeh's eager bundle
            super().update_from_model(model)
            self._bundled = self._changes
            return
        from bokeh.document import Document
        from bokeh.models import Spacer

        self._model = model
        if model.document is None:
            Document().add_root(model)
        self._document.on_change_dispatch_to(self)
        if getattr(self, "_view_count", None):  # a new model for views already shown
            self._bundled = -1
            self.refresh_bundle()
            return
        self.render_bundle = BokehModel._model_to_traits(Spacer(width=0, height=0))
        self._bundled = -1
        _placeholders_until_cell_ends(self)

    def bundle_is_stale(self) -> bool:
        """Whether the render bundle misses document changes (or is the placeholder)."""
        return self._bundled != self._changes

    def refresh_bundle(self) -> None:
        """Make the render bundle the current document, if it is not already."""
        if self.bundle_is_stale():
            self._bundled = self._changes
            self.render_bundle = BokehModel._model_to_traits(self._model)

    def _document_patched(self, event) -> None:
        if event.setter is not self:  # the browser's own changes are in its view already
            self._changes += 1
        held = _held()
        if held is None or event.setter is self:
            super()._document_patched(event)
            return
        held.setdefault(id(self), (self, []))[1].append(event)

    def _send_events(self, events: list) -> None:
        """One PATCH-DOC with ``events``, framed as jupyter_bokeh frames a single event.

        A property set twice in the block goes once, with its last value
        (:func:`_last_values`)."""
        msg = Protocol().create("PATCH-DOC", _last_values(events))
        self.send({"msg": "patch", "payload": msg.header_json})
        self.send({"msg": "patch", "payload": msg.metadata_json})
        self.send({"msg": "patch", "payload": msg.content_json})
        for buffer in msg.buffers:
            self.send({"msg": "patch", "payload": json.dumps(buffer.ref)})
            self.send({"msg": "patch"}, [buffer.to_bytes()])


def _last_values(events: list) -> list:
    """``events`` without the changes of a property that a later whole new value replaces.

    A whole value is a ``ModelChangedEvent`` (a title) or a ``ColumnDataChangedEvent`` of every
    column (``source.data = {...}``); before it, changes, streams and patches of the same
    property are dropped. Besides sending less, this keeps BokehJS from applying two data of
    different lengths to one source in one go: its glyph renderer sets new data on its glyphs
    one ``await`` at a time, with the indices of the data it started from, and a shorter source
    arriving in between fails with "Size mismatch".
    """
    from bokeh.document.events import (
        ColumnDataChangedEvent,
        ColumnsPatchedEvent,
        ColumnsStreamedEvent,
        ModelChangedEvent,
    )

    def whole(event) -> bool:
        return isinstance(event, ModelChangedEvent) or (
            isinstance(event, ColumnDataChangedEvent) and event.cols is None)

    property_events = (ModelChangedEvent, ColumnDataChangedEvent, ColumnsStreamedEvent,
                       ColumnsPatchedEvent)
    last_whole = {(e.model.id, e.attr): i for i, e in enumerate(events) if whole(e)}
    return [e for i, e in enumerate(events)
            if not isinstance(e, property_events)
            or last_whole.get((e.model.id, e.attr), -1) <= i]


@contextmanager
def one_patch() -> Iterator[None]:
    """Hold the document changes of every :class:`BatchedBokehModel` made in the block and send
    them, per model, as one patch when it ends (also when it raises: the kernel's document
    has changed, the browser's must follow). Nested blocks join the outermost."""
    if _held() is not None:
        yield
        return
    held: dict = {}
    _HOLD.events = held
    try:
        yield
    finally:
        _HOLD.events = None
        for model, events in held.values():
            model._send_events(events)


def bokeh_widget(layout: LayoutDOM) -> BokehModel:
    """Wrap a Bokeh layout in a :class:`BatchedBokehModel` (updates sync as patches), sized
    to the page (:func:`~dpwidgets.ui.figures.fit_to_page`).

    Every view displayed later gets the document as it is then (:func:`redraw_when_displayed`),
    so what a widget drew before being shown is not lost.
    """
    model = BatchedBokehModel(fit_to_page(layout))
    model.add_class("dpw-bokeh")
    redraw_when_displayed(model)
    return model


class OfflineBokehMixin:
    """For ipywidgets containers holding BokehModels: publish the inline BokehJS loader just
    before the first one is displayed (so it lands in the output above the widget)."""

    def _repr_mimebundle_(self, **kwargs):
        ensure_bokehjs()
        for model in _bokeh_models(self):
            if model._bundled == -1:  # still the placeholder: the view gets the document
                model.refresh_bundle()
        return super()._repr_mimebundle_(**kwargs)


def _bokeh_models(widget) -> Iterator[BatchedBokehModel]:
    """The :class:`BatchedBokehModel` s in an ipywidgets tree."""
    if isinstance(widget, BatchedBokehModel):
        yield widget
    for child in getattr(widget, "children", ()):
        yield from _bokeh_models(child)


# The models of the cell running now that still hold the placeholder bundle; refreshed when
# the cell ends (IPython's post_run_cell), so that a widget displayed inside another container
# (e.g. ``VBox([session.meter, widget])``) reaches the browser drawn, in one bundle.
_PENDING: weakref.WeakSet = weakref.WeakSet()
_HOOKED = False


def _placeholders_until_cell_ends(model: BatchedBokehModel) -> None:
    global _HOOKED
    _PENDING.add(model)
    if not _HOOKED:
        from IPython import get_ipython

        events = get_ipython().events
        events.register("pre_run_cell", _start_cell)
        events.register("post_run_cell", _end_cell)
        _HOOKED = True


def _start_cell(*_) -> None:
    """A cell starts: hold the document changes it makes until it ends (:func:`_end_cell`).

    A cell that moves a control in a loop (a lesson comparing four publishers, ten releases in
    a row) would otherwise send one patch per step, faster than the browser applies them; the
    screen can only show the last. Changes made from the browser (a slider's handler, a
    debounced redraw) run outside cells and keep their own patch per rerun (:func:`one_patch`).
    """
    if _held() is None:
        _HOLD.events = {}


def _end_cell(*_) -> None:
    """A cell ends: models still on the placeholder get the drawn document as their bundle (it
    holds every change of the cell), the others the cell's changes as one patch each."""
    held = _held() or {}
    _HOLD.events = None
    refreshed = _refresh_pending()
    for model, events in held.values():
        if id(model) not in refreshed and model.comm is not None:
            model._send_events(events)


def _refresh_pending(*_) -> set[int]:
    """Give the models still on the placeholder their drawn document; their ids."""
    refreshed = set()
    for model in list(_PENDING):
        _PENDING.discard(model)
        if model.comm is not None and model._bundled == -1:
            model.refresh_bundle()
            refreshed.add(id(model))
    return refreshed
