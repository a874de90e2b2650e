"""Reusable controls: a log-scaled epsilon slider with guardrails, the SVT budget split, and a
debouncer for expensive recomputation.

The controls are plain ipywidgets; their Python side adds the guardrail text and the presets.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Callable

import ipywidgets as w
import traitlets

__all__ = [
    "Debouncer",
    "EpsilonSlider",
    "FloatSlider",
    "SplitControl",
    "epsilon_guardrail",
    "split_presets",
]

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


class FloatSlider(_DropsEchoes, w.FloatSlider):
    """An ``ipywidgets.FloatSlider`` that ignores the browser snapping its value to the step."""

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        new = min(max(proposal["value"], self.min), self.max)
        # Not self.value: ipywidgets' set_state assigns before validating (hold_trait_notifications).
        old = getattr(self, "_accepted", None)
        if self.step and old is not None:
            snapped = self.min + round((old - self.min) / self.step) * self.step
            if _is_snap_echo(old, new, snapped):
                return old
        self._accepted = new
        return new


class EpsilonSlider(_DropsEchoes, w.FloatLogSlider):
    """An epsilon slider on a log scale, clamped to [0.001, 10].

    The value is epsilon itself (not its logarithm). Values outside the range are clamped by
    the slider; :func:`epsilon_guardrail` gives the text shown beside it.
    """

    def __init__(
        self,
        value: float = 0.5,
        *,
        min_epsilon: float = EPSILON_MIN,
        max_epsilon: float = EPSILON_MAX,
        description: str = "ε",
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
        super().__init__(
            value=min(max(value, min_epsilon), max_epsilon),
            base=10,
            min=math.log10(min_epsilon),
            max=math.log10(max_epsilon),
            step=0.01,
            description=description,
            **kwargs,
        )
        self.add_class("dpw-epsilon")

    @traitlets.validate("value")
    def _validate_value(self, proposal):
        lo, hi = self.base**self.min, self.base**self.max
        new = min(max(proposal["value"], lo), hi)
        old = getattr(self, "_accepted", None)  # see FloatSlider._validate_value
        if self.step and old and old > 0:
            exponent = self.min + round((math.log(old, self.base) - self.min) / self.step) * self.step
            if _is_snap_echo(old, new, self.base**exponent):
                return old
        self._accepted = new
        return new


def split_presets(c: int, monotonic: bool = False) -> dict[str, float]:
    """The ε1:ε2 splits of 001 §4-6 as ``{label: ratio}`` with ratio = ε2/ε1.

    The optimum (001 eq. 12) comes first: 1:(2c)^(2/3), or 1:c^(2/3) for monotonic queries.
    """
    from ..engine.svt import default_ratio

    optimum = default_ratio(c, monotonic)
    opt_label = "1:c^(2/3) (optimum)" if monotonic else "1:(2c)^(2/3) (optimum)"
    presets = {opt_label: optimum, "1:1": 1.0, "1:3": 3.0, "1:c": float(c)}
    if monotonic:
        presets["1:(2c)^(2/3)"] = float((2 * c) ** (2 / 3))
    else:
        presets["1:c^(2/3)"] = float(c ** (2 / 3))
    return presets


def share_of(ratio: float) -> float:
    """ε1/ε for a split ε1:ε2 = 1:ratio."""
    return 1.0 / (1.0 + ratio)


def ratio_of(share: float) -> float:
    """ε2/ε1 for ε1 = share·ε."""
    return (1.0 - share) / share


class SplitControl(w.VBox):
    """The ε1:ε2 budget split: a preset dropdown and a slider for ε1's share of ε.

    ``.ratio`` is ε2/ε1, the engine's parameter. Moving the slider off a preset selects
    "custom"; choosing a preset moves the slider.
    """

    def __init__(self, c: int = 1, monotonic: bool = False):
        self.preset = w.Dropdown(description="ε1:ε2", style={"description_width": "initial"})
        self.share = FloatSlider(
            min=0.01,
            max=0.99,
            step=0.005,
            readout_format=".3f",
            description="ε1 / ε",
            continuous_update=True,
            style={"description_width": "initial"},
        )
        super().__init__([self.preset, self.share])
        self.add_class("dpw-split")
        self._syncing = False
        self._c, self._monotonic = c, monotonic
        self.set_c(c, monotonic)
        self.preset.observe(self._on_preset, names="value")
        self.share.observe(self._on_share, names="value")

    @property
    def ratio(self) -> float:
        """ε2/ε1: the preset's exact ratio while a preset is selected, else the slider's."""
        if self.preset.value in self._presets:
            return self._presets[self.preset.value]
        return ratio_of(self.share.value)

    def set_c(self, c: int, monotonic: bool = False) -> None:
        """Recompute the presets for a new cutoff, keeping the selected preset's meaning."""
        self._c, self._monotonic = c, monotonic
        presets = split_presets(c, monotonic)
        old = self.preset.value
        self._presets = presets
        self._syncing = True
        try:
            self.preset.options = [*presets, "custom"]
            label = old if old in presets or old == "custom" else next(iter(presets))
            self.preset.value = label
            if label != "custom":
                self.share.value = share_of(presets[label])
        finally:
            self._syncing = False

    def _on_preset(self, change) -> None:
        if self._syncing or change["new"] == "custom":
            return
        self._syncing = True
        try:
            self.share.value = share_of(self._presets[change["new"]])
        finally:
            self._syncing = False

    def _on_share(self, change) -> None:
        if self._syncing:
            return
        # The browser rounds a preset's share (e.g. 0.2554) to the slider's step and sends it
        # back; a value within half a step of the selected preset is that echo, not a choice.
        label = self.preset.value
        if label in self._presets and abs(
            change["new"] - share_of(self._presets[label])
        ) <= self.share.step / 2 + 1e-12:
            return
        self._syncing = True
        try:
            self.preset.value = "custom"
        finally:
            self._syncing = False


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
