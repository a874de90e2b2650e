"""Showing Bokeh layouts in widgets, with BokehJS served from the installed package.

jupyter_bokeh's front end (``BokehModel``) does not bundle BokehJS: it calls the global
``window.Bokeh`` that ``bokeh.io.output_notebook()`` puts on the page -- and that loads
BokehJS from cdn.bokeh.org by default. Offline (air-gapped enclaves, the CI machines) the CDN
is unreachable and every BokehModel shows "Click to show javascript error". So before the first
figure is displayed in a kernel we publish the loader with ``resources=INLINE``: the BokehJS
bundles are read from the installed ``bokeh`` package and sent in the output itself (a few MB,
once per kernel). Nothing reaches for a CDN.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager

from bokeh.models import LayoutDOM
from bokeh.protocol import Protocol
from jupyter_bokeh import BokehModel

__all__ = ["BatchedBokehModel", "bokeh_widget", "ensure_bokehjs", "one_patch",
           "redraw_when_displayed"]

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


def ensure_bokehjs(force: bool = False) -> bool:
    """Publish the inline BokehJS loader once per kernel (no-op outside a kernel).

    Parameters
    ----------
    force : bool
        Publish it again (e.g. after the page was reloaded and the loader output cleared).

    Returns
    -------
    bool
        Whether the loader was published by this call.
    """
    global _LOADED
    if (_LOADED and not force) or not _in_kernel():
        return False
    from bokeh.io import output_notebook
    from bokeh.resources import INLINE

    output_notebook(resources=INLINE, hide_banner=True)
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
            plot.render_bundle = BokehModel._model_to_traits(plot._model)

    plot._view_count = 0
    plot.observe(on_views, names="_view_count")


class BatchedBokehModel(BokehModel):
    """A ``jupyter_bokeh.BokehModel`` whose document changes made inside :func:`one_patch`
    reach the browser as one PATCH-DOC message.

    jupyter_bokeh sends one message (three frames plus two per array) for every changed
    property, and BokehJS repaints after each: a widget redrawing a dozen sources after a
    slider move showed a dozen intermediate frames over a second or more in the browser
    (``benchmarks/results/browser_redraw.md``). Held and sent together, the changes are
    applied in one go and painted once. Outside :func:`one_patch` it behaves as its parent.
    """

    def _document_patched(self, event) -> None:
        held = _held()
        if held is None or event.setter is self:
            super()._document_patched(event)
            return
        held.setdefault(id(self), (self, []))[1].append(event)

    def _send_events(self, events: list) -> None:
        """One PATCH-DOC with ``events``, framed as jupyter_bokeh frames a single event."""
        msg = Protocol().create("PATCH-DOC", events)
        self.send({"msg": "patch", "payload": msg.header_json})
        self.send({"msg": "patch", "payload": msg.metadata_json})
        self.send({"msg": "patch", "payload": msg.content_json})
        for buffer in msg.buffers:
            self.send({"msg": "patch", "payload": json.dumps(buffer.ref)})
            self.send({"msg": "patch"}, [buffer.to_bytes()])


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
    """Wrap a Bokeh layout in a :class:`BatchedBokehModel` (updates sync as patches).

    Every view displayed later gets the document as it is then (:func:`redraw_when_displayed`),
    so what a widget drew before being shown is not lost.
    """
    model = BatchedBokehModel(layout)
    model.add_class("dpw-bokeh")
    redraw_when_displayed(model)
    return model


class OfflineBokehMixin:
    """For ipywidgets containers holding BokehModels: publish the inline BokehJS loader just
    before the first one is displayed (so it lands in the output above the widget)."""

    def _repr_mimebundle_(self, **kwargs):
        ensure_bokehjs()
        return super()._repr_mimebundle_(**kwargs)
