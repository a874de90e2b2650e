"""Speed of the stream widgets (headless): play ticks and control-change redraws.

Two questions (the issue's):

1. Does the live panel keep up with 1,000 steps per second? The play control ticks every
   50 ms, so at 1,000 steps/s each tick pushes a batch of 50 steps. One tick, handled end to
   end in the kernel: ``ColumnDataSource.stream(..., rollover=window)`` of the new rows of the
   true stream, the LM output and the PeGaSus estimates, the group shading of the live window,
   the "now" cursors, and jupyter_bokeh's serialization of the resulting PATCH-DOC messages.
   It keeps up if a tick takes well under its 50 ms period; the steps/s it could sustain is
   batch / tick time.
2. How long does a control change take on a 57,901-step stream (Chen 2018, Table 5.1's
   length)? A release parameter (ε; teaching: a charged live release; analyst: a free preview
   on the stand-in) re-runs PeGaSus; the smoother, w and δ are post-processing and re-run
   nothing. Goal: the ε control within 100 ms of CPU time at the p95.

Every control row is timed with ``benchmarks._timing`` (process CPU time beside wall time,
nearest-rank p95) over at least 20 changes after one warm-up change. Browser drawing is not
included. Run: ``python -m benchmarks.stream_widget_redraw [--quick]`` (writes
``benchmarks/results/stream_widget_redraw.md``).
"""

from __future__ import annotations

import argparse
import os
import platform
import tempfile
from pathlib import Path

import numpy as np

from benchmarks._timing import Clock, stats, timed
from dpwidgets import Session
from dpwidgets._progress import progress
from dpwidgets.engine.streams import pegasus
from dpwidgets.families.streams.standins import multi_state_streams, wifi_stream
from dpwidgets.families.streams.timeline import TICK_MS
from dpwidgets.families.streams.widget import HierarchyWidget, StreamWidget

RESULTS = Path(__file__).resolve().parent / "results" / "stream_widget_redraw.md"
SEED = 20180501
GOAL_MS = 100.0  # the ε control, CPU p95


_time = timed


_POST: list[float] = []
_EPS: list[float] = []
#: CPU median of the HierarchyWidget's ε move over its Laplace floor, by (states, steps).
_HIER_RATIO: dict[tuple[int, int], float] = {}


def _row(name: str, times: tuple[list[float], list[float]], goal: float | None = None) -> str:
    cpu, wall = times
    c_med, c_p95, c_max = stats(cpu)
    w_med, w_p95, w_max = stats(wall)
    if "post-processing" in name and name.startswith("teaching"):
        _POST.append(c_med)
    if goal is not None:
        _EPS.append(c_p95)
    verdict = "" if goal is None else ("yes" if c_p95 <= goal else "**no**")
    return (f"| {name} | {len(cpu)} | {c_med:.1f} | {c_p95:.1f} | {c_max:.1f} | {w_med:.1f} | "
            f"{w_p95:.1f} | {verdict} |")


def _ticks(widget: StreamWidget, batch: int, n_ticks: int) -> tuple[list[float], list[float]]:
    """Time ``n_ticks`` consecutive play ticks of ``batch`` steps each (from step 2016 on)."""
    widget.play.value = widget.window
    cpu, wall = [], []
    for _ in range(n_ticks):
        nxt = widget.play.value + batch
        if nxt > widget.n_steps:
            widget.play.value = widget.window  # a reset (not timed), then play on
            nxt = widget.window + batch
        with Clock() as c:
            widget.play.value = nxt
        cpu.append(c.cpu)
        wall.append(c.wall)
    return cpu, wall


def _tick_row(label: str, batch: int, times: tuple[list[float], list[float]]) -> str:
    cpu, wall = times
    med, p95, mx = stats(wall)
    c_med, c_p95, _ = stats(cpu)
    return (f"| {label} | {batch} | {med:.2f} | {p95:.2f} | {mx:.2f} | {c_p95:.2f} | "
            f"{batch / (med / 1e3):,.0f} | {'yes' if p95 < TICK_MS else 'NO'} |")


def main(argv: list[str] | None = None) -> str:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.stream_widget_redraw")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions (still 20)")
    args, _ = parser.parse_known_args(argv or [])
    repeats = 20 if args.quick else 40
    _POST.clear()
    _EPS.clear()
    _HIER_RATIO.clear()
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
    for speed in progress((288, 1000, 2016, 5000), desc="stream_widget_redraw ticks"):
        batch = max(1, speed * TICK_MS // 1000)
        times = _ticks(sw, batch, n_ticks)
        verdict[speed] = stats(times[1])[:2]
        tick_rows.append(_tick_row(f"{speed:,}", batch, times))
    sw.show_truth.value = False
    tick_rows.append(_tick_row("1,000, no truth line (as after an analyst release)", 50,
                               _ticks(sw, 50, n_ticks)))
    sw.show_truth.value = True

    # 2. Control changes on 57,901 steps (ε never repeats: never a cache hit).
    change_rows.append(_row("engine alone: pegasus() on 57,901 steps (new defaults)", _time(
        lambda i: pegasus(high, 0.1 + 0.001 * (i + 2), rng=rng), repeats)))
    change_rows.append(_row("engine alone: pegasus() on 57,901 steps (text defaults)", _time(
        lambda i: pegasus(high, 0.1 + 0.001 * (i + 2), rng=rng, defaults="text"), repeats)))
    change_rows.append(_row("teaching: ε slider (live release + every panel)", _time(
        lambda i: setattr(sw.epsilon, "value", 0.1 + 0.001 * (i + 2)), repeats), GOAL_MS))
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

    with tempfile.TemporaryDirectory() as tmp:
        analyst = Session(mode="analyst", ledger=Path(tmp) / "ledger.sqlite", seed=0)
        analyst.add_dataset("High_5", high, total_epsilon=1.0, stand_in=stand_in)
        a = StreamWidget(analyst, dataset="High_5", epsilon=0.1, debounce=0)
        change_rows.append(_row("analyst preview: ε slider (stand-in, free)", _time(
            lambda i: setattr(a.epsilon, "value", 0.1 + 0.001 * (i + 2)), repeats), GOAL_MS))
        a.epsilon.value = 0.1
        with Clock() as first:
            a.release()
        change_rows.append(f"| analyst: Release click (charged; floating-point-safe sampler; "
                           f"SQLite store of the output) | 1 | {first.cpu:.1f} | | | "
                           f"{first.wall:.1f} | | |")
        change_rows.append(_row("analyst: Release click again (cached replay)", _time(
            lambda i: a.release(), repeats)))
        change_rows.append(_row("analyst released: δ slider (post-processing)", _time(
            lambda i: setattr(a.delta, "value", a.delta.max * (0.2 + 0.05 * (i % 10))),
            repeats)))
        analyst_ticks = _ticks(a, 50, n_ticks)
        analyst.close()
    tick_rows.append(_tick_row("1,000, analyst release (no truth line)", 50, analyst_ticks))

    # 3. Hierarchies: Multi_5-like, small default and the text's size.
    for n_states, length, compare in progress(((16, 2000, True), (128, 20_000, False)),
                                              desc="stream_widget_redraw hierarchies"):
        total = int(round(646_254 * n_states / 128 * length / 20_000))
        data = multi_state_streams(np.random.default_rng(SEED), n_states=n_states,
                                   length=length, total=total)
        s = Session(mode="teaching", seed=0)
        name = f"multi_{n_states}x{length}"
        s.add_dataset(name, data, total_epsilon=1e6, stand_in=np.zeros_like(data))
        with Clock() as build:
            h = HierarchyWidget(s, dataset=name, epsilon=0.1, compare=compare, debounce=0)
        what = "PHS-PGS, HS-PGS, HS-LM" if compare else "PHS-PGS only"
        reps = repeats if n_states <= 16 else 5
        hier_rows.append(f"| {n_states} × {length:,} (h = {h.hierarchy.height}): build ({what}) "
                         f"| 1 | {build.cpu:.0f} | | | {build.wall:.0f} | | |")
        eps_times = _time(lambda i, h=h: setattr(h.epsilon, "value", 0.1 + 0.001 * (i + 2)),
                          reps, warmup=False)
        hier_rows.append(_row(f"{n_states} × {length:,}: ε slider ({what})", eps_times))
        # The Laplace floor: one vectorised draw of a noise per node and step (what HS-LM,
        # the plainest release of the hierarchy, must draw), timed in the same run.
        floor_rng = np.random.default_rng(SEED)
        floor = _time(lambda i, m=h.hierarchy.n_nodes, t=length, g=floor_rng: g.laplace(
            0.0, 1.0, (m, t)), reps)
        hier_rows.append(_row(f"{n_states} × {length:,}: Laplace floor (one draw per node "
                              f"and step, {h.hierarchy.n_nodes} × {length:,})", floor))
        ratio = float(np.median(eps_times[0]) / np.median(floor[0]))
        _HIER_RATIO[(n_states, length)] = ratio
        hier_rows.append(f"| {n_states} × {length:,}: ε slider / Laplace floor (CPU medians) | "
                         f"| {ratio:.2f}× | | | | | |")
        hier_rows.append(_row(f"{n_states} × {length:,}: step t (tree recoloured)", _time(
            lambda i, h=h: setattr(h.play, "value", (37 * (i + 2)) % h.n_steps), repeats)))
        hier_rows.append(_row(f"{n_states} × {length:,}: node selection (sparkline)", _time(
            lambda i, h=h: setattr(h.node, "value", (i + 2) % h.hierarchy.n_nodes),
            repeats)))
        s.close()

    eps_p95 = max(_EPS)
    header = ("| change | changes | CPU median ms | CPU p95 ms | CPU max ms | wall median ms | "
              "wall p95 ms | ε goal: CPU p95 <= 100 ms |")
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
        "(`defaults=\"text\"`: ε_p = 0.8ε, θ = 5/ε_g, median smoother). Times: process CPU time",
        "(other jobs on the shared machine do not count) beside wall time, median and",
        "nearest-rank p95 (`benchmarks/_timing.py`).",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f}.",
        "",
        "**Verdict.** At 1,000 steps/s a tick pushes 50 steps in "
        f"{verdict[1000][0]:.1f} ms (median; p95 {verdict[1000][1]:.1f} ms) of its {TICK_MS} ms "
        "period: the kernel keeps up with room to spare, and the offered 5,000 steps/s too. "
        f"A change of ε on 57,901 steps takes at most {eps_p95:.0f} ms of CPU at the p95 "
        "(teaching and analyst preview; goal 100 ms: "
        + ("met" if eps_p95 <= GOAL_MS else "**not met**") + "), most of it the engine's "
        "PeGaSus run (its vectorised core and the adaptive smoother's twelve window medians); "
        f"post-processing changes (smoother, w, δ, event kind) take {min(_POST):.0f}-"
        f"{max(_POST):.0f} ms (CPU medians). The browser side is exercised by "
        "`tests/ui/test_streams_ui.py`, which plays the stream in JupyterLab (Chromium).",
        "",
        "## 1. Play ticks (the live panel keeps up if a tick takes < its 50 ms period)",
        "",
        f"One tick every {TICK_MS} ms; {n_ticks} consecutive ticks per row.",
        "",
        "| speed (steps/s) | steps per tick | wall median ms | wall p95 ms | wall max ms | "
        "CPU p95 ms | sustainable steps/s (batch / median) | p95 < 50 ms |",
        "|---|---|---|---|---|---|---|---|",
        *tick_rows,
        "",
        "## 2. Control change → redraw, 57,901 steps",
        "",
        "Each row: one warm-up change, then the changes counted (ε never repeats, so never a "
        "cache hit). Post-processing rows re-run no mechanism and charge nothing: the teaching "
        f"ledger held ε = {spent_before:.4g} after the ε rows and ε = {spent:.4g} after the "
        "post-processing rows (checked equal).",
        "",
        header,
        "|---|---|---|---|---|---|---|---|",
        *change_rows,
        "",
        "## 3. HierarchyWidget (Multi_5-shaped data)",
        "",
        "Goal at 128 × 20,000: the ε move within 2× its Laplace floor (CPU medians, one run): "
        + (f"{_HIER_RATIO[(128, 20_000)]:.2f}× — "
           + ("met" if _HIER_RATIO[(128, 20_000)] <= 2.0 else "**not met**")
           if (128, 20_000) in _HIER_RATIO else "not measured") + ".",
        "",
        header.replace(" ε goal: CPU p95 <= 100 ms |", " |"),
        "|---|---|---|---|---|---|---|---|",
        *hier_rows,
        "",
        "Notes: the ε rows are dominated by the engine: the Grouper is sequential (each step's",
        "group depends on the previous partition) and runs vectorised around that chain",
        "(`_vector_core`), then the four smoothers are computed for the release (the average",
        "and James-Stein smoothers from running group sums, vectorised), and the adaptive",
        "smoother's medians over twelve trailing windows. The",
        "widget's own work on top (window sums, both monitors' statistics, two event ROCs, the",
        "envelopes of the whole-stream panels) is vectorised. The default debounce (150 ms)",
        "turns a slider drag into one release.",
        "",
    ])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    return report


if __name__ == "__main__":
    import sys

    sys.stdout.write(main(sys.argv[1:]))
