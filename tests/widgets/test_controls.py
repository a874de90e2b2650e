"""Controls: the log epsilon slider, its guardrails, the split presets, the debouncer."""

from __future__ import annotations

import asyncio
import math

import pytest

from dpwidgets.ui.controls import (
    Debouncer,
    EpsilonSlider,
    FloatRangeSlider,
    FloatSlider,
    IntRangeSlider,
    IntSlider,
    SliderText,
    SplitControl,
    control_problem,
    epsilon_guardrail,
    split_presets,
)


def test_epsilon_slider_is_logarithmic_and_never_clamps():
    s = EpsilonSlider(0.5)
    assert s.value == 0.5 and s.base == 10
    assert (s.min, s.max) == (pytest.approx(-3), pytest.approx(1))
    s.value = 1e6  # kept as set; the log slider only shows its end
    assert s.value == 1e6 and s.slider.value == pytest.approx(10.0)
    assert control_problem(s) is None  # any ε > 0 is a valid ε
    s.value = -1.0
    assert s.value == -1.0
    assert control_problem(s) == "ε: got -1; accepted: a number in (0, ∞)."
    s.value = float("nan")
    assert "got nan" in control_problem(s)


def test_typed_epsilon_passes_exactly_and_dragging_still_works():
    s = EpsilonSlider(0.2)
    s.text.value = 0.5  # typed into the box: exact, not the slider grid's 10^-0.3 = 0.501
    assert s.value == 0.5 and s.slider.value == 0.5
    s.slider.value = 10 ** -0.3  # the browser's echo of 0.5 snapped to its grid: dropped
    assert s.value == 0.5
    s.slider.value = 10 ** -0.5  # dragged elsewhere: the value its readout shows ("0.32")
    assert s.value == 0.32 and s.text.value == 0.32
    assert s.slider.value == 10 ** -0.5  # the handle stays where it was dragged
    s.disabled = True
    assert s.slider.disabled and s.text.disabled


def test_sliders_keep_a_typed_value_and_report_it():
    f = FloatSlider(value=0.5, min=0.0, max=1.0, step=0.1, description="share")
    f.value = 3.0
    assert f.value == 3.0 and control_problem(f) == "share: got 3; accepted: a number in [0, 1]."
    i = IntSlider(value=5, min=1, max=10, description="c")
    i.value = 0
    assert i.value == 0 and control_problem(i) == "c: got 0; accepted: a number in [1, 10]."
    t = SliderText(FloatSlider(value=1.0, min=0.0, max=10.0, step=1.0, description="T"), 1.0,
                   accepted=(-math.inf, math.inf), widen=True)
    t.value = 5e6  # a threshold far beyond the slider: the range widens, nothing is clamped
    assert t.value == 5e6 and t.slider.max == 5e6 and control_problem(t) is None


def test_guardrails():
    assert epsilon_guardrail(0.5) == ""
    assert "weak" in epsilon_guardrail(3.0)
    assert "refused" in epsilon_guardrail(0.5, remaining=0.2)
    assert epsilon_guardrail(0.2, remaining=0.2) == ""


def test_split_presets_and_control():
    presets = split_presets(8)
    assert next(iter(presets)).endswith("(optimum)")
    assert next(iter(presets.values())) == pytest.approx(16 ** (2 / 3))
    ctl = SplitControl(c=8)
    assert ctl.ratio == pytest.approx(16 ** (2 / 3), rel=1e-2)
    ctl.preset.value = "1:1"
    assert ctl.share.value == pytest.approx(0.5)
    ctl.share.value = 0.3
    assert ctl.preset.value == "custom"
    ctl.preset.value = next(iter(split_presets(8)))
    ctl.set_c(1, monotonic=True)  # the optimum for c=1, monotonic is 1:1
    assert ctl.ratio == pytest.approx(1.0, rel=1e-2)


def test_debouncer_runs_at_once_without_a_loop_and_coalesces_inside_one():
    calls = []
    d = Debouncer(lambda: calls.append(1), delay=0.05)
    d.trigger()
    assert calls == [1]

    async def burst():
        for _ in range(5):
            d.trigger()
        assert calls == [1]  # nothing yet: scheduled
        await asyncio.sleep(0.15)

    asyncio.run(burst())
    assert calls == [1, 1]  # five triggers, one call


def test_sliders_ignore_the_browser_snapping_their_value_to_the_step():
    from dpwidgets.ui.controls import FloatSlider

    eps = EpsilonSlider(0.5)
    # The browser shows 10^round(log10(0.5), 2) = 10^-0.30 and sends it back: not a move.
    eps.slider.set_state({"value": 10 ** -0.30})
    assert eps.value == 0.5
    eps.slider.set_state({"value": 10 ** -0.29})  # one real step, to 0.5129: shown as "0.51"
    assert eps.value == 0.51 and eps.text.value == 0.51
    share = FloatSlider(min=0.01, max=0.99, step=0.005, value=0.17543)
    share.set_state({"value": 0.01 + round((0.17543 - 0.01) / 0.005) * 0.005})
    assert share.value == 0.17543
    share.set_state({"value": 0.5})
    assert share.value == 0.5


@pytest.mark.parametrize("c", [5, 25])
def test_split_keeps_its_preset_when_the_browser_rounds_the_share(c):
    """Seen in Chromium: displaying the control flipped it to "custom" (0.2554 came back as 0.255)."""
    ctl = SplitControl(c=c)
    optimum = next(iter(split_presets(c)))
    exact = split_presets(c)[optimum]
    rounded = round(ctl.share.value / ctl.share.step) * ctl.share.step
    ctl.share.set_state({"value": rounded})  # what the front end sends back
    assert ctl.preset.value == optimum
    assert ctl.ratio == exact  # the preset's exact ratio, not the rounded slider's
    ctl.share.set_state({"value": rounded + 2 * ctl.share.step})  # a real move
    assert ctl.preset.value == "custom"


def _snap_log(value: float, slider) -> float:
    """What the browser sends back for a log slider set to ``value``: 10^(k·step)."""
    import math

    return slider.base ** (slider.min + round((math.log10(value) - slider.min) / slider.step)
                           * slider.step)


def test_slider_echoes_reach_no_observer_but_user_moves_do():
    # Python sets a value; the browser snaps it to the step and sends it back (set_state).
    # The value Python set is kept and no observer hears the echo; a real move is heard once.
    from dpwidgets.ui.controls import FloatSlider

    eps = EpsilonSlider(0.5)
    heard = []
    eps.observe(lambda c: heard.append((c["old"], c["new"])), names="value")
    eps.value = 0.3
    eps.slider.set_state({"value": _snap_log(0.3, eps)})  # 0.30199...
    assert eps.value == 0.3 and heard == [(0.5, 0.3)]
    eps.slider.set_state({"value": 1.0})  # a user move
    assert heard == [(0.5, 0.3), (0.3, 1.0)]

    rho = FloatSlider(value=0.2, min=0.01, max=0.9, step=0.01)
    moves = []
    rho.observe(lambda c: moves.append(c["new"]), names="value")
    rho.value = 0.2554
    rho.set_state({"value": 0.26})
    assert rho.value == 0.2554 and moves == [0.2554]
    rho.set_state({"value": 0.5})
    assert moves == [0.2554, 0.5]


def test_range_sliders_keep_a_bad_pair_and_name_it():
    r = FloatRangeSlider(value=(0.2, 0.8), min=0.01, max=1.0, step=0.01, description="budgets")
    assert control_problem(r) is None
    r.value = (0.5, 3.0)  # beyond max: kept, not clamped to (0.5, 1.0)
    assert r.value == (0.5, 3.0)
    assert control_problem(r) == ("budgets: got 0.5-3; accepted: a range low-high within "
                                  "[0.01, 1].")
    r.value = (0.6, 0.4)  # reversed: kept (ipywidgets would raise), refused
    assert "got 0.6-0.4" in control_problem(r)
    r.value = (0.1, 0.9)
    r.max = 0.5  # narrowing the range leaves the value alone
    assert r.value == (0.1, 0.9) and "got 0.1-0.9" in control_problem(r)
    cells = IntRangeSlider(value=(0, 128), min=0, max=100, description="cells shown")
    assert cells.value == (0, 128) and "cells shown: got 0-128" in control_problem(cells)


@pytest.mark.parametrize("position", [k / 100 for k in range(-300, 101, 7)])
def test_a_dragged_epsilon_is_the_number_its_readout_shows(position):
    """One value per control: the box, the run and the readout (d3's ".2": two significant
    digits) agree wherever the log slider is dragged, and no float dust reaches the box."""
    eps = EpsilonSlider(0.5)
    eps.slider.set_state({"value": 10 ** position})
    shown = float(f"{10 ** position:.2g}")
    assert eps.value == shown and eps.text.value == shown
