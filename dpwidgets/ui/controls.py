"""Reusable controls: an ε slider paired with a box for the exact value, sliders that never
clamp, a debouncer for expensive recomputation, and :func:`control_for`,
which builds the control of a parameter from its declaration (:mod:`dpwidgets.params`).

The controls are plain ipywidgets; their Python side adds the guardrail text, the presets and
:func:`control_problem` (what a widget shows instead of previewing or releasing a bad value).
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Callable

import ipywidgets as w
import traitlets

from .._moved import moved

__all__ = ["Debouncer", "EpsilonSlider", "FloatRangeSlider", "FloatSlider", "IntRangeSlider",
           "IntSlider", "SliderText", "accepted_range", "control_for", "control_problem",
           "epsilon_guardrail", "slider"]

# 0.x: SVT's budget split is the SVT family's own control now.
__getattr__ = moved(__name__, {name: ("dpwidgets.families.svt.split", name) for name in (
    "SplitControl", "ratio_of", "share_of", "split_presets")})

EPSILON_MIN = 1e-3
EPSILON_MAX = 10.0
# Above this, the guarantee is weak enough to say so next to the slider.
EPSILON_WEAK = 1.0


def epsilon_guardrail(epsilon: float, remaining: float | None = None) -> str:
    """A one-line warning for an epsilon the user should think twice about ("" if none).

    Parameters
    ----------
    epsilon : float
        The epsilon about to be spent.
    remaining : float, optional
        What is left of the budget (analyst mode); ``None`` when nothing is enforced.

    Examples
    --------
    >>> from dpwidgets.ui.controls import epsilon_guardrail
    >>> epsilon_guardrail(0.5)
    ''
    >>> epsilon_guardrail(1.0, remaining=0.5)
    'ε = 1 is more than the 0.5 left: a release would be refused.'
    """
    notes = []
    if remaining is not None and epsilon > remaining * (1 + 1e-9):
        notes.append(
            f"ε = {epsilon:.3g} is more than the {remaining:.3g} left: a release would be refused."
        )
    if epsilon > EPSILON_WEAK:
        notes.append(
            f"ε = {epsilon:.3g} > {EPSILON_WEAK:g}: odds about a person may shift by up to "
            f"×{math.exp(epsilon):.3g}, a weak guarantee."
        )
    return " ".join(notes)


def _is_snap_echo(old: float, new: float, snapped_old: float) -> bool:
    """Whether ``new`` is only the front end snapping ``old`` onto the slider's step grid.

    A slider's browser view rounds a value set from Python to its step and sends it back; left
    alone that echo looks like a user move, reruns the mechanism and (in teaching mode) charges
    the ledger a second time for a change nobody made.
    """
    return math.isclose(new, snapped_old, rel_tol=1e-9, abs_tol=1e-12) and not math.isclose(
        new, old, rel_tol=1e-12, abs_tol=0.0
    )


class _DropsEchoes:
    """Mixin for the sliders: observers of ``value`` never hear the browser's echo.

    When Python sets a slider's value, the browser snaps it to the step and sends it back
    through ``set_state``; the validator below keeps the value Python set, but traitlets still
    notifies the observers of that assignment (with ``old == new``, or a rounding apart), so a
    widget recomputed -- and in teaching mode charged -- a second time for one control change.
    Here such a no-op notification is dropped before any observer sees it; the state sync to
    the browser (ipywidgets' ``notify_change``) is left as it was.
    """

    def _notify_observers(self, event) -> None:
        if (
            getattr(event, "type", None) == "change"
            and event.name == "value"
            and _same_value(event.old, event.new)
        ):
            return
        super()._notify_observers(event)


def _same_value(old, new) -> bool:
    """Equal, or floats equal up to the rounding of a log slider (1.0 vs 0.9999999999999994)."""
    if isinstance(old, float) and isinstance(new, float):
        return math.isclose(old, new, rel_tol=1e-9, abs_tol=0.0)
    return old == new


def accepted_range(lo: float, hi: float, *, open_lo: bool = False) -> str:
    """How a control's accepted values read in an error message: "a number in [0.01, 0.99]".

    Examples
    --------
    >>> from dpwidgets.ui.controls import accepted_range
    >>> accepted_range(0.01, 0.99), accepted_range(0, 1, open_lo=True)
    ('a number in [0.01, 0.99]', 'a number in (0, 1]')
    """
    left = "(" if open_lo or math.isinf(lo) else "["
    right = ")" if math.isinf(hi) else "]"
    return f"a number in {left}{_num(lo)}, {_num(hi)}{right}"


def _num(x: float) -> str:
    if math.isinf(x):
        return "∞" if x > 0 else "−∞"
    return f"{x:g}"


def control_problem(control) -> str | None:
    """What is wrong with a control's value (``None`` if nothing), naming the control and what
    it accepts. Controls here never clamp a typed value: a widget asks this before it previews
    or releases, shows the answer and does nothing else."""
    value = control.value
    label = getattr(control, "label", None) or control.description or type(control).__name__
    lo, hi, open_lo = _bounds(control)
    if isinstance(control, _RangePassThrough):
        return _range_problem(label, value, lo, hi)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"{label}: got {value!r}; accepted: {accepted_range(lo, hi, open_lo=open_lo)}."
    if not math.isfinite(value) or value < lo or value > hi or (open_lo and value <= lo):
        return (f"{label}: got {_num(float(value))}; accepted: "
                f"{accepted_range(lo, hi, open_lo=open_lo)}.")
    return None


def _range_problem(label: str, value, lo: float, hi: float) -> str | None:
    """A range slider's pair: both ends in [lo, hi] and low <= high."""
    accepted = f"a range low-high within [{_num(lo)}, {_num(hi)}]"
    ends = tuple(value) if isinstance(value, tuple | list) else ()
    if len(ends) != 2 or not all(isinstance(v, int | float) and not isinstance(v, bool)
                                 and math.isfinite(v) for v in ends):
        return f"{label}: got {value!r}; accepted: {accepted}."
    low, high = ends
    if low < lo or high > hi or low > high:
        return f"{label}: got {_num(float(low))}-{_num(float(high))}; accepted: {accepted}."
    return None


def _bounds(control) -> tuple[float, float, bool]:
    accepted = getattr(control, "accepted", None)
    if accepted is not None:
        return float(accepted[0]), float(accepted[1]), bool(getattr(control, "open_lo", False))
    if isinstance(control, w.FloatLogSlider):
        return control.base ** control.min, control.base ** control.max, False
    return float(control.min), float(control.max), False


class _PassThrough:
    """Mixin for the sliders: a value set from Python (or typed) is kept as it is, never
    clamped to the slider's range: the widget checks it (:func:`control_problem`) and refuses
    a bad one with a message, instead of silently using another number."""

    accepted: tuple[float, float] | None = None
    open_lo = False

    # ipywidgets moves the value into a new range when code narrows it; here the value stays
    # (code that fits a range to new data sets the value it means explicitly).
    @traitlets.validate("min")
    def _validate_min(self, proposal):
        if proposal["value"] > self.max:
            raise traitlets.TraitError("setting min > max")
        return proposal["value"]

    @traitlets.validate("max")
    def _validate_max(self, proposal):
        if proposal["value"] < self.min:
            raise traitlets.TraitError("setting max < min")
        return proposal["value"]


class _RangePassThrough(_PassThrough):
    """Mixin for the range sliders: the (low, high) pair is kept as set -- not clamped into
    [min, max], not refused when low > high -- and moving min or max leaves it alone; the
    widget checks it (:func:`control_problem`) and refuses a bad one with a message."""

    label: str | None = None

    @traitlets.validate("min", "max")
    def _validate_bounds(self, proposal):
        trait, new = proposal["trait"].name, proposal["value"]
        if (trait == "min" and new > self.max) or (trait == "max" and new < self.min):
            raise traitlets.TraitError(f"setting {trait} {'>' if trait == 'min' else '<'} "
                                       f"{'max' if trait == 'min' else 'min'}")
        return new


    @traitlets.validate("value")
    def _validate_value(self, proposal):
        return tuple(proposal["value"])


class FloatRangeSlider(_RangePassThrough, _DropsEchoes, w.FloatRangeSlider):
    """An ``ipywidgets.FloatRangeSlider`` that never clamps (see :func:`control_problem`)."""


class IntRangeSlider(_RangePassThrough, w.IntRangeSlider):
    """An ``ipywidgets.IntRangeSlider`` that never clamps (see :func:`control_problem`)."""


class FloatSlider(_PassThrough, _DropsEchoes, w.FloatSlider):
    """An ``ipywidgets.FloatSlider`` that ignores the browser snapping its value to the step
    and never clamps a value set from Python (see :func:`control_problem`)."""

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        new = proposal["value"]
        # Not self.value: ipywidgets' set_state assigns before validating (hold_trait_notifications).
        old = getattr(self, "_accepted", None)
        if self.step and old is not None and math.isfinite(old):
            snapped = self.min + round((old - self.min) / self.step) * self.step
            if _is_snap_echo(old, new, snapped):
                return old
        self._accepted = new
        return new


class IntSlider(_PassThrough, w.IntSlider):
    """An ``ipywidgets.IntSlider`` that never clamps a value set from Python."""

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        return proposal["value"]


class _LogSlider(_PassThrough, _DropsEchoes, w.FloatLogSlider):
    """The log slider inside :class:`EpsilonSlider` (drags on a 10^(k/100) grid)."""

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        new = proposal["value"]
        old = getattr(self, "_accepted", None)  # see FloatSlider._validate_value
        if self.step and old and old > 0 and math.isfinite(old):
            exponent = self.min + round((math.log(old, self.base) - self.min) / self.step) * self.step
            if _is_snap_echo(old, new, self.base**exponent):
                return old
        self._accepted = new
        return new


class SliderText(w.HBox):
    """A slider to drag paired with a number box to type into; ``value`` is exactly what was
    set last, by either (a typed 0.5 is 0.5, not the slider grid's 0.501).

    Nothing is clamped: ``value`` may be outside the slider's range (the slider then shows its
    end, or widens to it with ``widen=True``) or not a valid number at all; a widget checks it
    with :func:`control_problem` against ``accepted``.
    """

    value = traitlets.Float(allow_none=False)
    disabled = traitlets.Bool(False)

    def __init__(self, slider, value: float, *, accepted: tuple[float, float],
                 open_lo: bool = False, widen: bool = False, css: str | None = None,
                 text_width: str = "90px"):
        self.slider = slider
        self.text = w.FloatText(value=value, layout=w.Layout(width=text_width))
        self.text.add_class("dpw-number")
        self.accepted, self.open_lo, self._widen = accepted, open_lo, widen
        self.label = slider.description
        self._syncing = self._dragging = False
        super().__init__([slider, self.text], value=value)
        if css:
            self.add_class(css)
        self._show(value)
        slider.observe(self._from_slider, names="value")
        self.text.observe(self._from_text, names="value")
        self.observe(self._to_children, names="value")
        self.observe(self._on_disabled, names="disabled")

    # Forwarded so a caller can treat the pair like the slider.
    @property
    def description(self) -> str:
        return self.slider.description

    @property
    def min(self):
        return self.slider.min

    @property
    def max(self):
        return self.slider.max

    @property
    def step(self):
        return self.slider.step

    def _from_slider(self, change) -> None:
        if not self._syncing:
            # The handle stays where it was dragged: the value it stands for may be rounded
            # (see dragged_value), and moving the handle to the rounded value under the pointer
            # would fight the drag.
            self._dragging = True
            try:
                self.value = self.dragged_value(change["new"])
            finally:
                self._dragging = False

    def dragged_value(self, value):
        """A dragged value as the widget keeps it: without float dust (a step of 0.1 lands on
        0.30000000000000004), so the box, the labels and the run carry the value shown. A
        typed value is kept exactly."""
        return float(f"{value:.12g}") if isinstance(value, float) and math.isfinite(value) \
            else value

    def _from_text(self, change) -> None:
        if not self._syncing:
            self.value = change["new"]

    def _to_children(self, change) -> None:
        self._show(change["new"])

    def _on_disabled(self, change) -> None:
        self.slider.disabled = self.text.disabled = change["new"]

    def _show(self, value: float) -> None:
        self._syncing = True
        try:
            if math.isfinite(value):  # NaN/inf would not survive the JSON sent to the page
                self.text.value = value
            shown = None if self._dragging else self._slider_value(value)
            if shown is not None:
                self.slider.value = shown
        finally:
            self._syncing = False

    def _slider_value(self, value: float) -> float | None:
        if not math.isfinite(value):
            return None
        if self._widen:
            if value > self.slider.max:
                self.slider.max = value
            elif value < self.slider.min:
                self.slider.min = value
            return value
        lo, hi, _ = _bounds_of_slider(self.slider)
        if lo <= value <= hi:
            return value
        return lo if value < lo else hi


def slider(cls, value, lo, hi, step, description: str, css: str, fmt: str | None = None, **kw):
    """A ``FloatSlider`` / ``IntSlider`` of this module with the widgets' usual style; ``value``
    is kept as given (a value outside [lo, hi] is refused by the widget, not clamped)."""
    extra = {"readout_format": fmt} if fmt else {}
    made = cls(value=value, min=lo, max=hi, step=step, description=description,
               continuous_update=True, style={"description_width": "initial"}, **extra, **kw)
    made.add_class(css)
    return made


def _bounds_of_slider(slider) -> tuple[float, float, bool]:
    if isinstance(slider, w.FloatLogSlider):
        return slider.base ** slider.min, slider.base ** slider.max, False
    return float(slider.min), float(slider.max), False


class EpsilonSlider(SliderText):
    """ε: a log slider over [0.001, 10] to drag and a box to type the exact value into.

    ``value`` is ε itself (not its logarithm), exactly as set; any ε > 0 is accepted (the
    slider's range is only where dragging goes); a value <= 0 or not finite is kept and
    reported by :func:`control_problem`, never clamped. :func:`epsilon_guardrail` gives the
    text shown beside it.

    Examples
    --------
    >>> from dpwidgets.ui.controls import EpsilonSlider
    >>> EpsilonSlider(0.5).value
    0.5
    """

    def __init__(
        self,
        value: float = 0.5,
        *,
        min_epsilon: float = EPSILON_MIN,
        max_epsilon: float = EPSILON_MAX,
        description: str = "ε",
        accepted: tuple[float, float] = (0.0, math.inf),
        **kwargs,
    ):
        if not 0 < min_epsilon < max_epsilon:
            raise ValueError(
                f"need 0 < min_epsilon < max_epsilon, got {min_epsilon!r}, {max_epsilon!r}"
            )
        kwargs.setdefault("continuous_update", True)
        # Two significant digits, trailing zeros trimmed (d3: no type = "~g"): the browser snaps
        # the slider to 10^(k/100), so ".3g" showed 0.5 as "0.501" and 1 as "1.00".
        kwargs.setdefault("readout_format", ".2")
        kwargs.setdefault("style", {"description_width": "initial"})
        finite = isinstance(value, int | float) and math.isfinite(value) and value > 0
        start = value if finite else min_epsilon
        slider = _LogSlider(
            value=min(max(start, min_epsilon), max_epsilon),
            base=10,
            min=math.log10(min_epsilon),
            max=math.log10(max_epsilon),
            step=0.01,
            description=description,
            **kwargs,
        )
        super().__init__(slider, value, accepted=accepted, open_lo=accepted[0] == 0.0,
                         css="dpw-epsilon")

    @property
    def base(self) -> float:
        return self.slider.base

    def dragged_value(self, value):
        """A dragged ε is the number its readout shows (two significant digits by default,
        d3's ``".2"``), so the box, the run and the charge carry the value the user sees,
        not the log slider's grid point 10^(k/100). A typed value is kept exactly."""
        digits = re.fullmatch(r"\.(\d+)", str(self.slider.readout_format or ""))
        if digits and isinstance(value, float) and math.isfinite(value) and value > 0:
            return float(f"{value:.{int(digits.group(1))}g}")
        return super().dragged_value(value)


class Debouncer:
    """Run ``callback`` once, ``delay`` seconds after the last :meth:`trigger`.

    Inside a running asyncio loop (a Jupyter kernel) the call is scheduled with
    ``loop.call_later`` and each trigger cancels the pending one. With no running loop (tests,
    scripts) or ``delay <= 0``, :meth:`trigger` calls ``callback`` at once, so headless tests
    see the result synchronously.
    """

    def __init__(self, callback: Callable[[], None], delay: float = 0.15):
        self.callback = callback
        self.delay = float(delay)
        self._handle: asyncio.TimerHandle | None = None

    def trigger(self) -> None:
        """Schedule (or, without an event loop, run) the callback."""
        if self.delay <= 0:
            self.callback()
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.callback()
            return
        if self._handle is not None:
            self._handle.cancel()
        self._handle = loop.call_later(self.delay, self._fire)

    def _fire(self) -> None:
        self._handle = None
        self.callback()

    def flush(self) -> None:
        """Run a pending callback now."""
        if self._handle is not None:
            self._handle.cancel()
            self._fire()


def control_for(params: type, name: str, value=None, **overrides) -> w.Widget:
    """The control of parameter ``name`` of a :class:`~dpwidgets.params.Params` class, built
    from its declaration: its ``control`` hint (ε slider, slider, dropdown, checkbox), its
    ``label`` and ``doc`` (the tooltip), and ``value`` (default: the parameter's default).

    ``overrides`` adjust what the declaration cannot know without the dataset's public shape
    (``max=`` of a cutoff, ``options=`` allowed in this mode, ...). A parameter declared
    without a hint gets a plain text box of its value's type.

    Examples
    --------
    >>> from dpwidgets.families.svt.params import SVTParams
    >>> control_for(SVTParams, "c", 5, max=40).value
    5
    """
    from ..params import NOT_GIVEN, REQUIRED, Choice, Epsilon, Range, Toggle

    info = params.info(name)
    if value is None:
        value = params.default(name)
        if value is REQUIRED or value is NOT_GIVEN:
            raise ValueError(f"{params.__name__}.{name} has no default: pass value=")
    label = info.label or name
    hint = info.control
    style = {"description_width": "initial"}
    if isinstance(hint, Epsilon):
        made = EpsilonSlider(value, description=label, **overrides)
    elif isinstance(hint, Range):
        kw = {"min": hint.low, "max": hint.high, **({"step": hint.step} if hint.step else {})}
        kw.update(overrides)
        cls = IntSlider if hint.integer else FloatSlider
        made = cls(value=value, description=label, continuous_update=True, style=style, **kw)
    elif isinstance(hint, Choice):
        kw = {"options": [(text, option) for option, text in hint.pairs()], **overrides}
        made = w.Dropdown(value=value, description=label, style=style, **kw)
    elif isinstance(hint, Toggle):
        made = w.Checkbox(value=bool(value), description=label, **overrides)
    elif isinstance(value, bool):
        made = w.Checkbox(value=value, description=label, **overrides)
    elif isinstance(value, int):
        made = w.IntText(value=value, description=label, style=style, **overrides)
    elif isinstance(value, float):
        made = w.FloatText(value=value, description=label, style=style, **overrides)
    else:
        made = w.Text(value=str(value), description=label, style=style, **overrides)
    if info.doc:  # on the control itself: a box's tooltip does not render in JupyterLab
        (made.slider if isinstance(made, SliderText) else made).tooltip = info.doc
    made.add_class(f"dpw-{name.replace('_', '-')}")
    return made
