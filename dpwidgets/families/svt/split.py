"""SVT's ε1:ε2 budget split: the presets of Lyu, Su & Li 2017, §4-6 and the control that
offers them (a preset dropdown beside a slider for ε1's share of ε).

The optimum comes from :func:`~dpwidgets.families.svt.params.default_ratio`, the family's
declaration of its default split, so the control and a release agree on it exactly.

Examples
--------
>>> from dpwidgets.families.svt.split import SplitControl
>>> split = SplitControl(c=4)
>>> split.preset.value = "1:1"
>>> split.ratio, split.share.value
(1.0, 0.5)
"""

from __future__ import annotations

import ipywidgets as w

from ...ui.controls import FloatSlider
from .params import default_ratio

__all__ = ["SplitControl", "ratio_of", "share_of", "split_presets"]


def split_presets(c: int, monotonic: bool = False) -> dict[str, float]:
    """The ε1:ε2 splits of Lyu, Su & Li 2017, §4-6 as ``{label: ratio}`` with ratio = ε2/ε1.

    The optimum (Lyu, Su & Li 2017, eq. 12) comes first: 1:(2c)^(2/3), or 1:c^(2/3) for monotonic queries.

    Examples
    --------
    >>> from dpwidgets.families.svt.split import split_presets
    >>> {label: round(ratio, 3) for label, ratio in split_presets(1).items()}["1:(2c)^(2/3) (optimum)"]
    1.587
    """
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

    Examples
    --------
    >>> from dpwidgets.families.svt.split import SplitControl
    >>> round(SplitControl(c=1).share.value, 3)  # ε1's share at the optimum 1:(2c)^(2/3)
    0.386
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
