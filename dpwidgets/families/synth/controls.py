"""The controls of the synthetic-data widget: built once, laid out once.

The mechanism parameters' controls come from their declarations (the ``Params`` of
:mod:`dpwidgets.families.synth.params`: DPCopula's method, ε, ``k`` and margin publisher; the
peers' method); the widget's own are the attributes to synthesise, the hybrid switch, the
margin drawn, what to compare and to show, and the peers' button. :class:`SynthControls`
holds them (the widget takes each as an attribute of the same name), :func:`lay_out` puts them
in rows beside the parts every widget shares, and :class:`Throttle` runs the live redraw while
a control moves. Nothing here reads a table: the controls start from the constructor's
arguments, and the widget fills the attribute choices from the public columns.

Examples
--------
>>> from dpwidgets.families.synth.controls import SynthControls
>>> controls = SynthControls.build(teaching=True, epsilon=1.0, k=8.0, method="kendall",
...                                publisher="dawa", compare=False)
>>> controls.method.value, controls.k.value, controls.compare.value, controls.show_truth.disabled
('kendall', 8.0, False, False)
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

import ipywidgets as ipw

from ...ui.base import one_of
from ...ui.controls import control_for
from . import params as synth_params
from . import text
from .params import DPCopulaParams, PeerSynthParams, publisher_name, publisher_options

__all__ = ["SynthControls", "Throttle", "check_arguments", "fit_margin", "in_kernel", "lay_out",
           "offer_columns"]

_STYLE = {"description_width": "initial"}


def check_arguments(method, live_rows, n_queries, sanity_bound) -> None:
    """Refuse a constructor argument the widget cannot use, naming it.

    Examples
    --------
    >>> check_arguments("kendall", 10_000, 300, None)
    >>> check_arguments("kendall", 50, 300, None)
    Traceback (most recent call last):
    ...
    ValueError: live_rows must be an integer >= 100 or None, got 50
    """
    one_of("method", method, ("kendall", "mle"))
    if live_rows is not None and not (isinstance(live_rows, int) and live_rows >= 100):
        raise ValueError(f"live_rows must be an integer >= 100 or None, got {live_rows!r}")
    if not (isinstance(n_queries, int) and n_queries >= 1):
        raise ValueError(f"n_queries must be an integer >= 1, got {n_queries!r}")
    if sanity_bound is not None and not (
            isinstance(sanity_bound, int | float) and sanity_bound > 0):
        raise ValueError(f"sanity_bound must be a number > 0, got {sanity_bound!r}")


class Throttle:
    """Run ``callback`` shortly after the first :meth:`trigger`; triggers before it runs join
    that run (while a slider moves, one live redraw at a time, which reads the controls when
    it runs). Needs a running event loop (a kernel).

    Examples
    --------
    >>> import asyncio
    >>> runs = []
    >>> soon = Throttle(lambda: runs.append(len(runs)), delay=0.01)
    >>> async def move():
    ...     soon.trigger(); soon.trigger()  # the second joins the first
    ...     await asyncio.sleep(0.05)
    >>> asyncio.run(move())
    >>> runs
    [0]
    """

    def __init__(self, callback: Callable[[], None], delay: float = 0.02):
        self.callback = callback
        self.delay = float(delay)
        self._handle: asyncio.TimerHandle | None = None

    def trigger(self) -> None:
        """Run the callback after ``delay`` unless a run is already due."""
        if self._handle is None:
            self._handle = asyncio.get_running_loop().call_later(self.delay, self._fire)

    def cancel(self) -> None:
        """Drop the run still to come, if any."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self._handle = None
        self.callback()


def in_kernel() -> bool:
    """Whether an event loop runs (a kernel): only then can a live run come first.

    Examples
    --------
    >>> in_kernel()
    False
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


@dataclass
class SynthControls:
    """The synthetic-data widget's own controls, in the order the widget takes them.

    Attributes
    ----------
    method, epsilon, k, publisher : ipywidgets.Widget
        DPCopula's dependence estimator, its budget, ``k = ε1/ε2`` and the margins'
        publisher (from :class:`~dpwidgets.families.synth.params.DPCopulaParams`).
    k_note : ipywidgets.HTML
        The budget split beside ``k``.
    hybrid, compare, show_truth : ipywidgets.Checkbox
        The hybrid (Li 2017, Alg. 6), the baselines beside DPCopula, and (teaching) the
        real table beside the synthetic one.
    attributes : ipywidgets.SelectMultiple
        The attributes to synthesise (options set from the table's columns).
    margin : ipywidgets.Dropdown
        The attribute whose margin is drawn.
    peer_method, peer_button, peer_note : ipywidgets.Widget
        AIM or MST (OpenDP's mbi extra), the button that runs it, and what they are (or how
        to install them).

    Examples
    --------
    >>> controls = SynthControls.build(teaching=False, epsilon=0.5, k=4.0, method="mle",
    ...                                publisher="efpa", compare=True)
    >>> controls.publisher.value, controls.show_truth.layout.display
    ('efpa', 'none')
    """

    method: ipw.Widget
    epsilon: ipw.Widget
    k: ipw.Widget
    k_note: ipw.HTML
    publisher: ipw.Widget
    hybrid: ipw.Checkbox
    attributes: ipw.SelectMultiple
    margin: ipw.Dropdown
    compare: ipw.Checkbox
    show_truth: ipw.Checkbox
    peer_method: ipw.Widget
    peer_button: ipw.Button
    peer_note: ipw.HTML

    @classmethod
    def build(cls, *, teaching: bool, epsilon: float, k: float, method: str, publisher: str,
              compare: bool) -> SynthControls:
        """The controls at the constructor's values (``teaching``: the session's mode).

        Raises
        ------
        ValueError
            ``publisher`` is not one of the 1-D publishers.
        """
        method_control = control_for(DPCopulaParams, "method", method,
                                     layout=ipw.Layout(width="440px"))
        epsilon_control = control_for(DPCopulaParams, "epsilon", epsilon)
        # 0.08-80: the text's k = 8 lies on the log slider's grid (shown as "8", not "7.9").
        k_control = control_for(DPCopulaParams, "k", k, min_epsilon=0.08, max_epsilon=80.0)
        k_control.remove_class("dpw-epsilon")  # a ratio on the budget's slider, not a budget
        k_note = ipw.HTML()
        k_note.add_class("dpw-split-note")
        pubs = publisher_options(1)
        publisher = publisher_name(publisher)
        if publisher not in {v for _, v in pubs}:
            raise ValueError(f"publisher must be one of {sorted(v for _, v in pubs)}, got "
                             f"{publisher!r}")
        return cls(method_control, epsilon_control, k_control, k_note,
                   control_for(DPCopulaParams, "publisher", publisher,
                               layout=ipw.Layout(width="300px")),
                   *_choices(teaching, compare), *_peers())

    def attach(self, widget) -> None:
        """Give ``widget`` every control as an attribute of the same name, in field order."""
        for name, control in vars(self).items():
            setattr(widget, name, control)


def _tagged(control, css: str):
    control.add_class(css)
    return control


def _choices(teaching: bool, compare: bool) -> tuple:
    """The widget's own choices: the hybrid, the attributes, the margin drawn, the baselines
    and (teaching) the real table."""
    # The hybrid is a threshold (10, or None: off) shown as a switch.
    hybrid = _tagged(ipw.Checkbox(value=True, description="hybrid: partition by attributes "
                                  "with < 10 values (Li 2017, Alg. 6)",
                                  tooltip="Partition by the attributes with fewer than 10 "
                                  "values where the released partition sizes support it "
                                  "(Li 2017, Alg. 6)",
                                  style=_STYLE, layout=ipw.Layout(width="auto")), "dpw-hybrid")
    attributes = _tagged(ipw.SelectMultiple(options=[], description="attributes", rows=4,
                                            style=_STYLE, layout=ipw.Layout(width="300px")),
                         "dpw-attributes")
    margin = _tagged(ipw.Dropdown(options=[], description="margin of", style=_STYLE,
                                  layout=ipw.Layout(width="260px")), "dpw-margin")
    compare_box = _tagged(ipw.Checkbox(value=bool(compare), description="compare with the "
                                       "baselines", style=_STYLE,
                                       layout=ipw.Layout(width="auto")), "dpw-compare")
    show_truth = ipw.Checkbox(
        value=True, description="show the real table", disabled=not teaching,
        style=_STYLE, layout=ipw.Layout(display=None if teaching else "none", width="auto"))
    return hybrid, attributes, margin, compare_box, show_truth


def _peers() -> tuple:
    """The peers' row: AIM or MST (OpenDP's mbi extra), disabled with the reason without it."""
    available = synth_params.peers_available()
    peer_method = control_for(PeerSynthParams, "method", "mst", disabled=not available,
                              layout=ipw.Layout(width="160px"))
    peer_method.remove_class("dpw-method")  # that is DPCopula's method
    peer_method.add_class("dpw-peer-method")
    peer_button = _tagged(ipw.Button(
        description="Run AIM / MST" if available else "AIM / MST: not installed",
        disabled=not available, icon="play" if available else "ban",
        tooltip=("Run today's peers (OpenDP mbi) at the same ε" if available
                 else f"needs {synth_params.PEER_INSTALL}"),
        layout=ipw.Layout(width="auto")), "dpw-peer")
    peer_note = _tagged(ipw.HTML(text.peer_text(available)), "dpw-peer-note")
    return peer_method, peer_button, peer_note


def lay_out(widget) -> ipw.VBox:
    """The control rows of ``widget`` (its :class:`SynthControls` and the shared ``data``,
    ``epsilon_note``, ``release_button`` and ``status``), tagged ``dpw-controls``."""
    w = widget
    controls = ipw.VBox([
        w.data,
        ipw.HBox([w.method, w.publisher]),
        ipw.HBox([w.compare, w.show_truth]),
        ipw.HBox([w.epsilon, w.epsilon_note]),
        ipw.HBox([w.k, w.k_note]),
        ipw.HBox([w.attributes, ipw.VBox([w.hybrid, w.margin])]),
        ipw.HBox([w.release_button, w.status]),
        ipw.HBox([w.peer_method, w.peer_button, w.peer_note]),
    ])
    controls.add_class("dpw-controls")
    return controls


def fit_margin(attributes: ipw.SelectMultiple, margin: ipw.Dropdown,
               wanted: str | None = None) -> None:
    """Offer the chosen ``attributes`` in the ``margin`` dropdown, keeping ``wanted`` (or the
    attribute drawn now) if it is still chosen, else the first.

    Examples
    --------
    >>> controls = SynthControls.build(teaching=True, epsilon=1.0, k=8.0, method="kendall",
    ...                                publisher="dawa", compare=False)
    >>> controls.attributes.options = ["a", "b", "c"]
    >>> controls.attributes.value = ("b", "c")
    >>> fit_margin(controls.attributes, controls.margin, "c")
    >>> controls.margin.options, controls.margin.value
    (('b', 'c'), 'c')
    """
    attrs = list(attributes.value)
    current = wanted or margin.value
    margin.options = attrs
    if attrs:
        margin.value = current if current in attrs else attrs[0]


def offer_columns(widget, columns: list[str], chosen: tuple[str, ...], *, hybrid: bool,
                  margin: str | None = None) -> None:
    """Set ``widget``'s attribute choices to a table's public ``columns`` (``chosen`` of them
    selected), its hybrid switch to ``hybrid`` and its margin dropdown (:func:`fit_margin`,
    keeping ``margin`` if chosen)."""
    widget.attributes.options = columns
    widget.attributes.rows = min(max(len(columns), 2), 9)
    widget.attributes.value = chosen
    widget.hybrid.value = hybrid
    fit_margin(widget.attributes, widget.margin, margin)
