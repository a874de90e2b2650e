"""Redraw time of DynamicHistogramWidget on its default series (headless), engine apart.

A "redraw" is one control change handled end to end with no kernel: the engine runs through the
session (teaching: the method and its two comparisons as charged live releases; analyst: free
previews on the public stand-in), then the drawing part -- the post-processing the figure needs
(first-attribute marginals, the error per bin over time of each release, the distance to the
last release), the ColumnDataSource updates and jupyter_bokeh's document-patch serialization.
The browser's own drawing is not included. The engine part is timed by wrapping the widget's
``compute`` (the one call that reaches the session); drawing = total - engine.

Default series: Li 2017, §4.5.1's census-like data as the widget builds it -- N = 500 snapshots of
n = 100,000 people, age × education × income = 3,456 bins -- and the moving objects (N = 400,
16 × 16 grid). Target: the drawing part well under 100 ms.

Run: ``python -m benchmarks.dynamic_widget_redraw [--quick]`` (writes
``benchmarks/results/dynamic_widget_redraw.md``).
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
from dpwidgets.engine import dynamic as dyn
from dpwidgets.releases.dynamic import dynamic_stand_in
from dpwidgets.widgets.dynamic import DATASETS, DynamicHistogramWidget

BUDGET_MS = 100.0
RESULTS = Path(__file__).resolve().parent / "results" / "dynamic_widget_redraw.md"


def _stats(ms: list[float]) -> tuple[float, float, float]:
    ordered = sorted(ms)
    return statistics.median(ms), ordered[int(0.95 * (len(ordered) - 1))], max(ms)


def _engine_row(name: str, action: Callable[[int], object], repeats: int) -> str:
    action(-1)  # warm-up
    times = []
    for i in range(repeats):
        t0 = time.perf_counter()
        action(i)
        times.append((time.perf_counter() - t0) * 1e3)
    med, p95, top = _stats(times)
    return f"| {name} | {med:.1f} | {p95:.1f} | {top:.1f} |"


class _Timed:
    """Wraps a widget's ``compute`` to time the engine part of each redraw."""

    def __init__(self, widget: DynamicHistogramWidget):
        self.engine: list[float] = []
        original = widget.compute

        def compute():
            t0 = time.perf_counter()
            out = original()
            self.engine.append((time.perf_counter() - t0) * 1e3)
            return out

        widget.compute = compute


def _widget_row(name: str, widget: DynamicHistogramWidget, change: Callable[[int], object],
                repeats: int) -> str:
    timer = _Timed(widget)
    change(-1)  # warm-up
    timer.engine.clear()
    totals = []
    for i in range(repeats):
        t0 = time.perf_counter()
        change(i)
        totals.append((time.perf_counter() - t0) * 1e3)
    engine = timer.engine or [0.0] * len(totals)
    drawing = [t - e for t, e in zip(totals, engine, strict=True)]
    t_med, t_p95, _ = _stats(totals)
    e_med = statistics.median(engine)
    d_med, d_p95, d_max = _stats(drawing)
    verdict = "yes" if d_p95 < BUDGET_MS else "NO"
    return (f"| {name} | {t_med:.1f} | {t_p95:.1f} | {e_med:.1f} | {d_med:.1f} | {d_p95:.1f} | "
            f"{d_max:.1f} | {verdict} |")


def main(argv: list[str] | None = None) -> str:
    """Time the redraws and write the Markdown report; returns it."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.dynamic_widget_redraw")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args, _ = parser.parse_known_args(argv or [])
    repeats = 3 if args.quick else 12

    teach = Session(mode="teaching", seed=0)
    t0 = time.perf_counter()
    wd = DynamicHistogramWidget(teach, epsilon=1.0, debounce=0)  # builds the census series
    first_ms = (time.perf_counter() - t0) * 1e3
    series = teach.public_view(wd.dataset)
    src = DATASETS["census"]
    rng = np.random.default_rng(1)

    def eps(i: int, base: float = 1.0) -> float:
        return base + 0.01 * (i + 2)  # a fresh ε every time: never a cache hit

    engine_rows = [
        _engine_row("DSAT, paced controller (C = 5)", lambda i: dyn.dsat(
            series, eps(i), 5, rng, cardinality=src.cardinality), repeats),
        _engine_row("DSAT as printed (C = 5)", lambda i: dyn.dsat(
            series, eps(i), 5, rng, cardinality=src.cardinality, variant="text"), repeats),
        _engine_row("DSFT (C = 5, T = 0.1)", lambda i: dyn.dsft(
            series, eps(i), 5, 0.1, rng, cardinality=src.cardinality), repeats),
        _engine_row("fixed sampling (C = 5)", lambda i: dyn.fixed_sampling_release(
            series, eps(i), 5, rng), repeats),
        _engine_row("ε/N at every snapshot", lambda i: dyn.uniform_budget_release(
            series, eps(i), rng), repeats),
        _engine_row("w-event DSAT (w = 125, C = 5)", lambda i: dyn.dsat_w_event(
            series, eps(i), 125, 5, rng, cardinality=src.cardinality), repeats),
        _engine_row("BD (w = 125)", lambda i: dyn.budget_distribution_release(
            series, eps(i), 125, rng), repeats),
        _engine_row("BA (w = 125)", lambda i: dyn.budget_absorption_release(
            series, eps(i), 125, rng), repeats),
    ]

    rows = [
        _widget_row("teaching DSAT: ε slider (3 releases: DSAT, fixed, ε/N)", wd,
                    lambda i: setattr(wd.epsilon, "value", eps(i)), repeats),
        _widget_row("teaching DSAT: C slider (ε/N replayed from the cache)", wd,
                    lambda i: setattr(wd.cutoff, "value", 6 + (i + 2) % 30), repeats),
        _widget_row("teaching DSAT: T_s slider (fixed, ε/N replayed)", wd,
                    lambda i: setattr(wd.threshold, "value", 0.3 + 0.005 * (i + 2)), repeats),
        _widget_row("teaching: Rerun button (3 fresh releases)", wd,
                    lambda i: wd.release_button.click(), repeats),
        _widget_row("teaching: time slider (view only, no release)", wd,
                    lambda i: setattr(wd.time, "value", 10 + 7 * (i + 2)), repeats),
    ]
    wd.compare.value = False
    rows.append(_widget_row("teaching DSAT, compare off: ε slider (1 release)", wd,
                            lambda i: setattr(wd.epsilon, "value", eps(i, 2.0)), repeats))
    wd.compare.value = True
    wd.method.value = "dsat_w_event"
    rows.append(_widget_row("teaching w-event DSAT: ε slider (+ BD, BA)", wd,
                            lambda i: setattr(wd.epsilon, "value", eps(i, 3.0)), repeats))
    wd.method.value = "dsat"
    wd.data.value = "moving"
    rows.append(_widget_row("teaching DSAT, moving objects (400 × 256): ε slider", wd,
                            lambda i: setattr(wd.epsilon, "value", eps(i, 4.0)), repeats))

    with tempfile.TemporaryDirectory() as tmp:
        analyst = Session(mode="analyst", ledger=Path(tmp) / "ledger.sqlite", seed=0)
        analyst.add_dataset("series", series + 1.0, total_epsilon=5.0,
                            stand_in=dynamic_stand_in(*series.shape, src.cardinality),
                            facts={"cardinality": src.cardinality})
        a = DynamicHistogramWidget(analyst, "series", shape=src.shape,
                                   attributes=src.attributes, cardinality=src.cardinality,
                                   epsilon=0.5, debounce=0)
        rows.append(_widget_row("analyst preview: ε slider (3 previews on the stand-in)", a,
                                lambda i: setattr(a.epsilon, "value", eps(i, 0.2)), repeats))
        rows.append(_widget_row("analyst preview: time slider", a,
                                lambda i: setattr(a.time, "value", 10 + 7 * (i + 2)), repeats))
        a.epsilon.value = 0.5
        rows.append(_widget_row("analyst: Release click again (cached replay, free)", a,
                                lambda i: a.release(), max(3, repeats // 3)))
        analyst.close()
    teach.close()

    report = "\n".join([
        "# Widget redraw time: DynamicHistogramWidget (Li 2017, Ch. 4)",
        "",
        "Produced by `python -m benchmarks.dynamic_widget_redraw`. One control change handled",
        "headless end to end. *Engine* is the widget's `compute()` -- the session calls: in",
        "teaching mode the method and its two comparisons as charged live releases (a comparison",
        "whose parameters did not change is a cached replay), in analyst mode three previews on",
        "the public stand-in. *Drawing* is the rest: marginals, error per bin over time of each",
        "release and the distance to the last release (float32, one pass per stretch of repeated",
        "release, cached per release), the ColumnDataSource updates (two 96 × 500 heatmaps, four",
        "500-point lines, the snapshot) and jupyter_bokeh's patch serialization. Browser drawing",
        f"not included. Target: drawing p95 < {BUDGET_MS:.0f} ms.",
        "",
        "Default series: the widget's census-like data (Li 2017, §4.5.1 scaled to n = 100,000, with drift",
        "0.5 between periods: N = 500, age × education × income = 3,456 bins, C = 0.01 N = 5 as in",
        "Table 4.2; the widget's default DSAT is the engine's paced controller); one row on the",
        "moving objects (N = 400, 16 × 16 grid). Identity (LPA) publisher, as in the text.",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, {repeats} changes per "
        f"row after one warm-up change; load average at the end {os.getloadavg()[0]:.1f} on "
        f"{os.cpu_count()} CPUs (other jobs were running: medians are the figures to read).",
        f"First build of the widget (imports, generating the census series, first three "
        f"releases): {first_ms / 1e3:.1f} s.",
        "",
        "## Control change → redraw",
        "",
        "| change | total median ms | total p95 ms | engine median ms | drawing median ms | "
        "drawing p95 ms | drawing max ms | drawing p95 < 100 ms |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        "## Engine alone on the default series (no session, no widget)",
        "",
        "| mechanism | median ms | p95 ms | max ms |",
        "|---|---|---|---|",
        *engine_rows,
        "",
        "The engine dominates a teaching redraw: the ε/N baseline alone publishes 500 histograms",
        "of 3,456 bins. Sliders are debounced (0.15 s) in a kernel, so a drag costs one redraw.",
        "",
    ])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    return report


if __name__ == "__main__":
    import sys

    sys.stdout.write(main(sys.argv[1:]))
