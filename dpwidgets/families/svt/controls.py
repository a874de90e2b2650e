"""The controls of the SVT explorer: the variant, ε, c, the ε1:ε2 split, the threshold (and
whether it follows c), the monotonic fact and the ground truth's checkbox; their layout, and
the bar of the audit the banner waits for.

The parameter controls are built from :class:`~dpwidgets.families.svt.params.SVTParams` (their
ranges and checks are the parameters'); what the declaration cannot know is the mode's
variants and the public number of queries. Everything a control holds is public.

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.svt.controls import SVTControls
>>> controls = SVTControls.build(teaching=True, variants=["standard"], variant="standard",
...                              epsilon=0.5, c=2, n_queries=4, monotonic=True,
...                              public=np.array([10.0, 8.0, 6.0, 1.0]), threshold=None)
>>> controls.threshold.value, controls.typed_threshold
(7.0, False)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import ipywidgets as w
import numpy as np

from ...ui.controls import FloatSlider, SliderText, control_for
from .params import SVTParams
from .preview import default_threshold, variant_info
from .split import SplitControl

__all__ = ["SVTControls", "audit_progress_bar", "threshold_control"]


def _nice_step(span: float, n: int = 2000) -> float:
    """The largest 1-2-5 × 10^k step at most ``span / n`` (so typed round numbers stay round)."""
    if not span > 0:
        return 1e-6
    target = span / n
    decade = 10.0 ** math.floor(math.log10(target))
    return max(m * decade for m in (1, 2, 5) if m * decade <= target * (1 + 1e-12))


def _step_format(step: float) -> str:
    """A readout format that shows every value on the step grid exactly, without exponents."""
    return f".{max(0, -math.floor(math.log10(step) + 1e-9))}f"


def threshold_control(public: np.ndarray, threshold: float | None, c: int) -> SliderText:
    """The threshold's slider and box, ranged over the ``public`` values (the data in
    teaching, the stand-in otherwise); ``threshold`` None: the rule of Lyu, Su & Li 2017, §6
    on them.

    Examples
    --------
    >>> import numpy as np
    >>> threshold_control(np.array([0.0, 100.0]), 42.0, 1).value
    42.0
    """
    hi = float(np.max(public)) if public.size else 1.0
    lo = min(0.0, float(np.min(public)) if public.size else 0.0)
    t_max = hi * 1.05 if hi > 0 else 1.0
    # A round step on a grid through 0: a typed 5000 stays 5000 (a step of hi/2000 snapped
    # it to 5010), and the readout shows plain digits (not 2.451e+4). The range is only
    # where dragging goes: a typed value outside it widens it, never is clamped to it.
    t_step = _nice_step(t_max - lo)
    t_min = math.floor(lo / t_step) * t_step
    start = threshold if threshold is not None else default_threshold(public, c, t_step)
    return SliderText(
        FloatSlider(value=min(max(start, t_min), t_max), min=t_min, max=t_max, step=t_step,
                    description="threshold", continuous_update=True,
                    style={"description_width": "initial"},
                    readout_format=_step_format(t_step)),
        start, accepted=(-math.inf, math.inf), widen=True, css="dpw-threshold",
    )


def audit_progress_bar() -> w.FloatProgress:
    """How far the audit the banner waits for is (teaching, broken variants only): its batches
    of simulated runs on the public counterexample, nothing about the data. Hidden at first.

    Examples
    --------
    >>> audit_progress_bar().layout.display
    'none'
    """
    bar = w.FloatProgress(
        value=0.0, min=0.0, max=1.0, description="audit", bar_style="info",
        layout=w.Layout(display="none", width="420px"))
    bar.add_class("dpw-audit-progress")
    return bar


@dataclass
class SVTControls:
    """The explorer's controls at their first values.

    Attributes
    ----------
    variant, epsilon, c, monotonic
        The variant (among the mode's), ε, c and (teaching) whether the queries are monotonic;
        in analyst mode the monotonic box shows the data owner's declaration, read-only.
    split : ~dpwidgets.families.svt.split.SplitControl
        ε1's share of ε (standard SVT only).
    typed_threshold : bool
        Whether the threshold was given (not computed by the rule of Lyu, Su & Li 2017, §6).
    threshold, threshold_note, auto_threshold, show_truth
        The threshold, the analyst's note under it, whether it follows c (teaching), and
        whether the ground truth is drawn (teaching).

    Examples
    --------
    >>> import numpy as np
    >>> controls = SVTControls.build(teaching=False, variants=["standard"],
    ...                              variant="standard", epsilon=0.5, c=2, n_queries=4,
    ...                              monotonic=False, public=np.arange(4.0), threshold=None)
    >>> controls.monotonic.disabled, controls.auto_threshold.value
    (True, False)
    """

    variant: w.Widget
    epsilon: w.Widget
    c: w.Widget
    monotonic: w.Widget
    split: SplitControl
    typed_threshold: bool
    threshold: SliderText
    threshold_note: w.HTML
    auto_threshold: w.Checkbox
    show_truth: w.Checkbox

    @classmethod
    def build(cls, *, teaching: bool, variants: list[str], variant: str, epsilon: float,
              c: int, n_queries: int, monotonic: bool, public: np.ndarray,
              threshold: float | None) -> SVTControls:
        """The controls: ``variants`` offered (``variant`` chosen), c up to the public
        ``n_queries``, the threshold ranged over the ``public`` values; ``monotonic`` is the
        teacher's choice, or in analyst mode the owner's declaration."""
        chosen = control_for(SVTParams, "variant", variant,
                             options=[(variant_info(v).title, v) for v in variants])
        eps = control_for(SVTParams, "epsilon", epsilon)
        c_max = max(1, min(300, n_queries - 1))
        c_box = control_for(SVTParams, "c", c, max=c_max)
        c_box.accepted = (1, n_queries)
        mono = control_for(SVTParams, "monotonic", monotonic, disabled=not teaching)
        if not teaching:
            mono.description = "monotonic queries (declared by the data owner)"
        split = SplitControl(int(c), monotonic)
        split.share.accepted = (0.0, 1.0)
        split.share.open_lo = True
        box = threshold_control(public, threshold, int(c))
        note = w.HTML()
        note.add_class("dpw-threshold-note")
        auto = w.Checkbox(
            value=threshold is None and teaching,
            description="threshold from c (Lyu, Su & Li 2017, §6)",
            layout=w.Layout(display=None if teaching else "none"),
        )
        show_truth = w.Checkbox(
            value=True, description="show ground truth", disabled=not teaching,
            layout=w.Layout(display=None if teaching else "none"),
        )
        return cls(chosen, eps, c_box, mono, split, threshold is not None, box, note, auto,
                   show_truth)

    def layout(self, release_button, status, epsilon_note) -> w.VBox:
        """The controls' box, ε's guardrail beside it and the Release row below."""
        box = w.VBox(
            [
                self.variant,
                w.HBox([self.epsilon, epsilon_note]),
                self.c,
                self.split,
                w.HBox([self.threshold, self.auto_threshold]),
                self.threshold_note,
                w.HBox([self.monotonic, self.show_truth]),
                w.HBox([release_button, status]),
            ]
        )
        box.add_class("dpw-controls")
        return box
