"""The controls of the personalized-DP widget: the privacy vector (and the custom vector's three
groups), the mechanism and its parameters, the cap on what any record may spend, and which of
them apply to the mechanisms shown.

The parameter controls are built from
:class:`~dpwidgets.families.personalized.params.PersonalizedHistogramParams` (their ranges and
checks are the parameters'); everything a control holds is public.

Examples
--------
>>> from dpwidgets.families.personalized.controls import PersonalizedControls
>>> controls = PersonalizedControls.build(teaching=True, method="sampling", compare=False)
>>> controls.shown(), controls.auto_threshold.value
(['sampling'], True)
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as ipw
import numpy as np

from ...ui.controls import FloatRangeSlider, FloatSlider, control_for, slider
from .display import _THRESHOLDED  # the methods with a sampling threshold ε_T
from .params import PersonalizedHistogramParams
from .sources import DEFAULT_GROUPS, GROUP_NAMES, PRIVACY, TEACHING_CEILING
from .text import METHODS, NO_SHARE

__all__ = ["COMPARED", "ORDER", "ROUNDS", "PersonalizedControls"]

#: The mechanisms compared side by side (the text's four).
COMPARED = ("minimum", "sampling", "privacy_aware", "utility")
#: The order the mechanisms are drawn in.
ORDER = ("minimum", "threshold", "sampling", "privacy_aware", "utility")
#: The mechanisms with T rounds of partitioning (Li 2017, §5.2.3).
ROUNDS = ("minimum", "privacy_aware", "utility")

_STYLE = {"description_width": "initial"}


def _checkbox(value: bool, description: str, css: str) -> ipw.Checkbox:
    box = ipw.Checkbox(value=value, description=description, style=_STYLE)
    box.add_class(css)
    return box


def _group_sliders(groups) -> tuple[list, list, ipw.VBox]:
    """The custom vector's share and budget-range sliders, one pair per group, in a box."""
    groups = tuple(tuple(float(v) for v in g) for g in (groups or DEFAULT_GROUPS))
    if len(groups) != 3:
        raise ValueError("groups must be three (share, low, high) triples")
    shares, ranges = [], []
    for name, (share, low, high) in zip(GROUP_NAMES, groups, strict=True):
        s = slider(FloatSlider, share, 0.0, 1.0, 0.01, f"{name}: share", "dpw-group-share",
                   ".2f")
        r = slider(FloatRangeSlider, (low, high), 0.01, TEACHING_CEILING, 0.01, "budgets",
                   "dpw-group-range", ".2f")
        r.label = f"{name}: budgets"
        shares.append(s)
        ranges.append(r)
    box = ipw.VBox([ipw.HBox([s, r]) for s, r in zip(shares, ranges, strict=True)])
    box.add_class("dpw-groups")
    return shares, ranges, box


@dataclass
class PersonalizedControls:
    """The widget's controls, and what they say without any data.

    Attributes
    ----------
    privacy : ipywidgets.Dropdown
        The privacy vector (a key of :data:`~.sources.PRIVACY`, or ``"dataset"``).
    group_share, group_range : list
        The custom vector's share and budget-range sliders, one per group.
    groups_box : ipywidgets.VBox
        Those sliders, shown while the custom vector is chosen.
    method, compare, threshold, auto_threshold, rounds, epsilon, no_cap, show_truth
        The mechanism shown, whether the text's four are compared, ε_T (and whether it follows
        the mean budget), T, the cap ε (and whether there is none), and (teaching) whether the
        data's histogram is drawn.
    threshold_row : ipywidgets.HBox
        ε_T's slider and its checkbox, shown while a shown mechanism has a threshold.

    Examples
    --------
    >>> controls = PersonalizedControls.build(teaching=False, epsilon=0.5)
    >>> controls.no_cap.value, controls.show_truth.layout.display
    (False, 'none')
    """

    privacy: ipw.Dropdown
    group_share: list
    group_range: list
    groups_box: ipw.VBox
    method: ipw.Widget
    compare: ipw.Checkbox
    threshold: ipw.Widget
    auto_threshold: ipw.Checkbox
    rounds: ipw.Widget
    epsilon: ipw.Widget
    no_cap: ipw.Checkbox
    show_truth: ipw.Checkbox
    threshold_row: ipw.HBox

    @classmethod
    def build(cls, *, teaching: bool, groups=None, method: str = "utility",
              compare: bool = True, threshold: float | None = None, rounds: int = 1,
              epsilon: float | None = None) -> PersonalizedControls:
        """The controls at their first values (``threshold``/``epsilon`` None: ε_T follows
        the mean budget / no cap); ``teaching`` shows the "show the data" checkbox."""
        privacy = ipw.Dropdown(description="privacy vector", style=_STYLE,
                               layout=ipw.Layout(width="520px"))
        privacy.add_class("dpw-privacy")
        shares, ranges, box = _group_sliders(groups)
        chosen = control_for(PersonalizedHistogramParams, "method", method,
                             options=[(label, key) for key, label in METHODS.items()],
                             layout=ipw.Layout(width="460px"))
        compared = _checkbox(bool(compare), "compare the text's four", "dpw-compare")
        eps_t = control_for(PersonalizedHistogramParams, "threshold",
                            threshold if threshold is not None else 0.5, readout_format=".4f")
        eps_t.layout = ipw.Layout(width="420px")
        auto = _checkbox(threshold is None, "ε_T = mean budget (Li 2017, §5.3.2.1)",
                         "dpw-auto-threshold")
        t = control_for(PersonalizedHistogramParams, "rounds", int(rounds))
        cap = control_for(PersonalizedHistogramParams, "epsilon",
                          epsilon if epsilon is not None else 1.0)
        cap.layout = ipw.Layout(width="460px")
        no_cap = _checkbox(epsilon is None, "no cap", "dpw-no-cap")
        show_truth = ipw.Checkbox(
            value=True, description="show the data", disabled=not teaching,
            layout=ipw.Layout(display=None if teaching else "none"))
        return cls(privacy, shares, ranges, box, chosen, compared, eps_t, auto, t, cap, no_cap,
                   show_truth, ipw.HBox([eps_t, auto]))

    def watched(self) -> list:
        """The controls whose every move recomputes (ε_T has its own handler)."""
        return [self.method, self.compare, self.rounds, self.epsilon, self.show_truth,
                *self.group_share, *self.group_range, self.no_cap, self.auto_threshold,
                self.privacy]

    def layout(self, data, release_button, status, epsilon_note) -> ipw.VBox:
        """The controls' box, with the data chooser above and the Release row below."""
        box = ipw.VBox([
            data,
            self.privacy,
            self.groups_box,
            ipw.HBox([self.method, self.compare, self.show_truth]),
            self.threshold_row,
            ipw.HBox([self.rounds]),
            ipw.HBox([self.epsilon, self.no_cap, epsilon_note]),
            ipw.HBox([release_button, status]),
        ])
        box.add_class("dpw-controls")
        return box

    # -- what the controls say -----------------------------------------------------------
    def shown(self) -> list[str]:
        """The mechanisms drawn: the selected one, and the text's four when comparing."""
        chosen = {self.method.value, *(COMPARED if self.compare.value else ())}
        return [m for m in ORDER if m in chosen]

    def no_share(self) -> bool:
        """Whether the custom vector is chosen with no group in it."""
        return self.privacy.value == "custom" and sum(s.value for s in self.group_share) <= 0

    def groups(self) -> tuple[tuple[float, float, float], ...]:
        """The custom vector's groups ``(share, low, high)``, the shares normalised to sum to
        1, the empty groups left out."""
        shares = np.array([s.value for s in self.group_share], dtype=float)
        if shares.sum() <= 0:
            raise ValueError(NO_SHARE)
        shares = shares / shares.sum()
        return tuple((float(f), float(r.value[0]), float(r.value[1]))
                     for f, r in zip(shares, self.group_range, strict=True) if f > 0)

    # -- fitting the controls (call while the widget ignores their notifications) ------------
    def offer_privacy(self, builtin: bool, choice: str) -> None:
        """The privacy vectors on offer: the what-if vectors (``choice`` selected) on the
        built-in data, else the dataset's own, fixed."""
        if builtin:
            self.privacy.options = [(label, key) for key, label in PRIVACY.items()]
            self.privacy.value = choice
            self.privacy.disabled = False
        else:
            self.privacy.options = [("the dataset's privacy vector (public)", "dataset")]
            self.privacy.value = "dataset"
            self.privacy.disabled = True

    def fit_threshold(self, capped: np.ndarray) -> None:
        """Fit ε_T's slider to the (capped) budgets; follow the mean while auto is checked."""
        lo, hi = float(capped.min()), float(capped.max())
        if hi <= lo:
            hi = lo * (1 + 1e-9) + 1e-12
        eps_t = self.threshold
        if lo > eps_t.max:
            eps_t.max, eps_t.min = hi, lo
        else:
            eps_t.min, eps_t.max = lo, hi
        eps_t.step = max((hi - lo) / 500.0, 1e-6)
        if self.auto_threshold.value:
            eps_t.value = min(max(float(capped.mean()), lo), hi)
        else:
            eps_t.value = min(max(float(eps_t.value), lo), hi)

    def show_what_applies(self) -> None:
        """Show the custom groups, ε_T, T and the cap only where they apply."""
        custom = self.privacy.value == "custom"
        self.groups_box.layout.display = None if custom else "none"
        shown = self.shown()
        self.threshold_row.layout.display = (
            None if any(m in _THRESHOLDED for m in shown) else "none")
        self.rounds.layout.visibility = (
            "visible" if any(m in ROUNDS for m in shown) else "hidden")
        self.epsilon.disabled = bool(self.no_cap.value)
        # No cap: the cap slider is hidden, not shown with a cap the run does not apply.
        self.epsilon.layout.visibility = "hidden" if self.no_cap.value else "visible"
