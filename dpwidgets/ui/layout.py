"""Legible layouts: a button or checkbox shows its whole label, on every width.

Examples
--------
>>> import ipywidgets as w
>>> from dpwidgets.ui.layout import legible_layout
>>> box = w.HBox([w.Button(description="Release: SVT standard, ε=0.5 (costs ε=0.5)")])
>>> legible_layout(box)
>>> box.children[0].layout.width, box.layout.flex_flow
('auto', 'row wrap')
"""

from __future__ import annotations

from collections.abc import Iterator

import ipywidgets as w

__all__ = ["STYLE", "legible_layout"]

#: The few CSS rules ipywidgets' own style has no trait for, scoped to dpwidgets' widgets: a
#: button or checkbox label too long for the row wraps onto a second line instead of being cut
#: with an ellipsis, and a folded text (:func:`fold`) shows that it opens.
STYLE = """<style>
.dpw-widget .jupyter-button { white-space: normal; height: auto; text-align: left;
  min-height: var(--jp-widgets-inline-height); line-height: 1.35; padding: 3px 10px; }
.dpw-widget .widget-checkbox, .dpw-widget .jupyter-widget-checkbox { height: auto; }
.dpw-widget .widget-checkbox .widget-label-basic,
.dpw-widget .jupyter-widget-checkbox .jupyter-widget-label-basic { white-space: normal;
  line-height: 1.35; }
.dpw-widget details.dpw-fold > summary { cursor: pointer; }
</style>"""


def _descendants(widget) -> Iterator:
    """A widget and every widget inside it (children of boxes, depth first)."""
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from _descendants(child)


def legible_layout(root) -> None:
    """Buttons and checkboxes show their whole label: each is as wide as its label, a row
    holding one moves it to the next line rather than squeezing it, and a label wider than
    the whole row wraps (:data:`STYLE`); ipywidgets' own style cuts it with an ellipsis."""
    for widget in _descendants(root):
        if isinstance(widget, w.Button | w.Checkbox):
            if widget.layout.width in (None, "auto"):
                # As wide as the label; on a row too narrow for it, the label wraps (STYLE).
                widget.layout.width = "auto"
                widget.layout.flex = "0 1 auto"
                widget.layout.max_width = "100%"
        elif isinstance(widget, w.HBox) and any(
                isinstance(child, w.Button | w.Checkbox) for child in widget.children):
            widget.layout.flex_flow = "row wrap"
