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

from bokeh.models import LayoutDOM
from jupyter_bokeh import BokehModel

__all__ = ["bokeh_widget", "ensure_bokehjs", "redraw_when_displayed"]

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


def bokeh_widget(layout: LayoutDOM) -> BokehModel:
    """Wrap a Bokeh layout in a ``jupyter_bokeh.BokehModel`` (updates sync as patches).

    Every view displayed later gets the document as it is then (:func:`redraw_when_displayed`),
    so what a widget drew before being shown is not lost.
    """
    model = BokehModel(layout)
    model.add_class("dpw-bokeh")
    redraw_when_displayed(model)
    return model


class OfflineBokehMixin:
    """For ipywidgets containers holding BokehModels: publish the inline BokehJS loader just
    before the first one is displayed (so it lands in the output above the widget)."""

    def _repr_mimebundle_(self, **kwargs):
        ensure_bokehjs()
        return super()._repr_mimebundle_(**kwargs)
