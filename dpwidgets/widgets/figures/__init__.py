"""Old home of the Bokeh figure builders: each family's are now in its folder
(``dpwidgets/families/<family>/display.py``), the shared ones in :mod:`dpwidgets.ui.figures`;
``dpwidgets.widgets.figures.<family>`` keeps working for a deprecation period, with a warning.

Each ``*_figure()`` builds a layout once and returns a :class:`FigureHandle` holding the layout
and its named :class:`~bokeh.models.ColumnDataSource` objects. Each ``*_plot_data()`` /
``*_data()`` turns already computed numbers into ``{source name: column dict}``; :func:`update`
assigns them. The widgets redraw only by replacing ``ColumnDataSource.data`` -- figures are never
re-created -- so a control change ships a small document patch to the browser.

What goes in is the caller's responsibility: in analyst mode the widgets pass DP outputs and
public stand-in values only.
"""

from ..._moved import moved
from ...families import names as _families
from ...ui.figures import FigureHandle, show_panels, stack, update

__all__ = ["FigureHandle", "show_panels", "stack", "update"]

# Names that moved into their family's display module (dpwidgets.families.<family>.display).
_old_names = moved(__name__, {
    **{name: ("dpwidgets.families.svt.display", name) for name in (
        "attack_figure", "attack_plot_data", "comparison_noise_std", "split_figure",
        "split_plot_data", "svt_figure", "svt_plot_data", "topc_figure", "topc_plot_data")},
})


def __getattr__(name: str):
    if name in _families():  # dpwidgets.widgets.figures.<family>: the family's display now
        return moved(__name__, {name: (f"dpwidgets.families.{name}.display", None)})(name)
    return _old_names(name)
