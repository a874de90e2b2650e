"""Redraw time of the synthetic-data widget (DPCopula, Li 2017, Ch. 3) on 100,000 records, headless.

A "redraw" is one control change handled end to end with no kernel: the releases through the
session (teaching: DPCopula and the independent baseline, each a charged live release; analyst:
free previews on the stand-in of the same size), the evaluation (the 300 random range-count
queries answered on every synthetic table, its margins, its Kendall's τ on a sample of at most
5,000 rows, 2,142 with 8 attributes; the real table's or stand-in's once, cached), the
ColumnDataSource updates and jupyter_bokeh's document-patch serialization. The browser's own drawing is not included. The issue's target:
"well under a second" per change at 100,000 records.

Run: ``python -m benchmarks.synth_widget_redraw [--quick]`` (writes
``benchmarks/results/synth_widget_redraw.md``).
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
from dpwidgets.datasets.synth import gaussian_dependence_table, us_census_like
from dpwidgets.engine import synth as sy
from dpwidgets.releases.synth import synth_stand_in
from dpwidgets.widgets.synth import SyntheticDataWidget, kendall_matrix, range_counts

N = 100_000
BUDGET_MS = 1000.0
SEED = 2014
RESULTS = Path(__file__).resolve().parent / "results" / "synth_widget_redraw.md"


def _time(action: Callable[[int], object], repeats: int) -> tuple[list[float], list[float]]:
    """Wall-clock and CPU (this process) milliseconds of ``repeats`` calls, after a warm-up."""
    action(-1)  # warm-up: first-call imports and caches are not what a slider move costs
    wall, cpu = [], []
    for i in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        action(i)
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return wall, cpu


def _row(name: str, times: tuple[list[float], list[float]],
         budget: float | None = BUDGET_MS) -> str:
    wall, cpu = times
    s = sorted(wall)
    p95 = s[int(0.95 * (len(s) - 1))]
    verdict = "" if budget is None else ("yes" if p95 < budget else "NO")
    return (f"| {name} | {statistics.median(wall):.0f} | {p95:.0f} | {max(wall):.0f} | "
            f"{statistics.median(cpu):.0f} | {verdict} |")


def _eps(i: int) -> float:
    return 1.0 + 0.01 * (i + 2)  # a fresh ε each time: never a cache hit


def main(argv: list[str] | None = None) -> str:
    """Time the redraws and write the Markdown report; returns it."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.synth_widget_redraw")
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args, _ = parser.parse_known_args(argv or [])
    repeats = 3 if args.quick else 10
    rng = np.random.default_rng(SEED)
    census = us_census_like(N, rng)
    gauss8 = gaussian_dependence_table(N, m=8, domain=1000, rng=rng)
    rows_engine, rows_teach, rows_analyst = [], [], []

    # 1. The parts a redraw is made of.
    rows_engine.append(_row("engine: dpcopula, US-census-like (4 attributes, hybrid on gender)",
                            _time(lambda i: sy.dpcopula(census.frame, _eps(i),
                                                        domains=census.domains, rng=rng),
                                  repeats), None))
    rows_engine.append(_row("engine: independent_synth (the baseline), US-census-like",
                            _time(lambda i: sy.independent_synth(
                                census.frame, _eps(i), domains=census.domains, rng=rng),
                                  repeats), None))
    rows_engine.append(_row("engine: dpcopula, Gaussian 8 × 1000 values",
                            _time(lambda i: sy.dpcopula(gauss8.frame, _eps(i),
                                                        domains=gauss8.domains, rng=rng),
                                  repeats), None))
    queries = sy.random_range_queries(census.domains, 300, np.random.default_rng(1))
    codes = census.frame.to_numpy()
    lo, hi = queries.lower.astype(np.int64), queries.upper.astype(np.int64)
    rows_engine.append(_row("300 range counts: engine `RangeQueries.answer` (row masks)",
                            _time(lambda i: queries.answer(census.frame), repeats), None))
    rows_engine.append(_row("300 range counts: widget `range_counts` (prefix bitsets)",
                            _time(lambda i: range_counts(codes, lo, hi), repeats), None))
    rows_engine.append(_row("Kendall's τ matrix, 4 attributes, 5,000-row sample",
                            _time(lambda i: kendall_matrix(codes), repeats), None))

    # 2. Teaching: every change is a charged live release (+ the baseline) and the evaluation.
    teach = Session(mode="teaching", seed=0)
    stand_in = synth_stand_in(N, census.domains, dtypes=dict(census.frame.dtypes))
    teach.add_dataset("census", census.frame, total_epsilon=1e6, stand_in=stand_in)
    w = SyntheticDataWidget(teach, dataset="census", domains=census.domains, epsilon=1.0,
                            debounce=0)
    rows_teach.append(_row("US census: ε slider (DPCopula + independent baseline)",
                           _time(lambda i: setattr(w.epsilon, "value", _eps(i)), repeats)))
    rows_teach.append(_row("US census: Rerun button (fresh noise)",
                           _time(lambda i: w.release_button.click(), repeats)))
    ks = [2.0, 4.0, 16.0, 8.0]
    rows_teach.append(_row("US census: k slider (the baseline replayed from the cache)",
                           _time(lambda i: setattr(w.k, "value", ks[i % 4] + 0.01 * (i + 2)),
                                 repeats)))
    attrs = ["age", "income", "occupation", "gender"]
    rows_teach.append(_row("US census: margin dropdown (a view: no release)",
                           _time(lambda i: setattr(w.margin, "value", attrs[i % 4]), repeats)))
    w.compare.value = False
    rows_teach.append(_row("US census, compare off: ε slider (DPCopula alone)",
                           _time(lambda i: setattr(w.epsilon, "value", 2.0 + 0.01 * i),
                                 repeats)))
    w.method.value = "mle"
    rows_teach.append(_row("US census, compare off: ε slider, DPCopula-MLE",
                           _time(lambda i: setattr(w.epsilon, "value", 3.0 + 0.01 * i),
                                 repeats)))
    teach.add_dataset("gauss8", gauss8.frame, total_epsilon=1e6,
                      stand_in=synth_stand_in(N, gauss8.domains,
                                              dtypes=dict(gauss8.frame.dtypes)))
    g = SyntheticDataWidget(teach, dataset="gauss8", domains=gauss8.domains, epsilon=1.0,
                            debounce=0)
    rows_teach.append(_row("Gaussian 8 × 1000: ε slider (DPCopula + baseline, 28 τ pairs)",
                           _time(lambda i: setattr(g.epsilon, "value", _eps(i)), repeats)))
    g.compare.value = False
    rows_teach.append(_row("Gaussian 8 × 1000, compare off: ε slider (DPCopula alone)",
                           _time(lambda i: setattr(g.epsilon, "value", 3.0 + 0.01 * i),
                                 repeats)))
    g.compare.value = True
    g.attributes.value = ("x1", "x2")
    rows_teach.append(_row("Gaussian, 2 attributes: ε slider (+ Laplace on 10⁶ cells)",
                           _time(lambda i: setattr(g.epsilon, "value", 2.0 + 0.01 * i),
                                 repeats)))

    # 3. Analyst: previews on the stand-in are free; Release charges once.
    with tempfile.TemporaryDirectory() as tmp:
        analyst = Session(mode="analyst", ledger=Path(tmp) / "ledger.sqlite", seed=0)
        analyst.add_dataset("census", census.frame, total_epsilon=1.0, stand_in=stand_in)
        a = SyntheticDataWidget(analyst, dataset="census", domains=census.domains,
                                epsilon=0.5, debounce=0)
        rows_analyst.append(_row("preview: ε slider (DPCopula + baseline on the stand-in)",
                                 _time(lambda i: setattr(a.epsilon, "value", 0.5 + 0.01 * i),
                                       repeats)))
        a.epsilon.value = 0.5
        t0 = time.perf_counter()
        a.release()
        first = (time.perf_counter() - t0) * 1e3
        rows_analyst.append(f"| Release click (charged; the 100,000 synthetic rows stored in "
                            f"SQLite) | {first:.0f} | | | | {'yes' if first < BUDGET_MS else 'NO'} |")
        rows_analyst.append(_row("Release click again (cached replay)",
                                 _time(lambda i: a.release(), repeats)))
        rows_analyst.append(_row("released: margin dropdown (a view)",
                                 _time(lambda i: setattr(a.margin, "value", attrs[i % 4]),
                                       repeats)))
        spent = analyst.spent("census")
        analyst.close()

    header = ("| change | median ms | p95 ms | max ms | median CPU ms | p95 < 1 s |\n"
              "|---|---|---|---|---|---|")
    report = "\n".join([
        "# Widget redraw time: synthetic data (DPCopula), 100,000 records",
        "",
        f"Produced by `python -m benchmarks.synth_widget_redraw`{' --quick' if args.quick else ''}. "
        "One control change handled headless end to end: the releases through the session "
        "(teaching: charged live releases; analyst: free previews on the public stand-in of "
        "the same size), the evaluation (300 random range-count queries on every synthetic "
        "table, its margins, Kendall's τ on a sample of at most 5,000 rows (2,142 with 8 "
        "attributes); the reference table's once, "
        "cached), the ColumnDataSource updates and jupyter_bokeh's patch serialization. "
        "Browser drawing not included. Target: well under 1 s per change.",
        "",
        f"Tables (seed {SEED}): `us_census_like(100_000)` (age 96 × income 1020 × occupation "
        "511 × gender 2; the hybrid partitions by gender) and `gaussian_dependence_table("
        "100_000, m=8, domain=1000)`; ε = 1, k = 8, the widget's defaults (DAWA margins, Kendall) unless stated.",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, "
        f"{os.cpu_count()} CPUs, {repeats} changes per row after one warm-up change; load "
        f"average at the end {os.getloadavg()[0]:.1f}. Other jobs were running on the machine: "
        "the wall-clock columns are pessimistic; the CPU column (this process's CPU time) is "
        "closer to what an idle machine takes.",
        "",
        "## 1. The parts (engine and evaluation)",
        "",
        header.replace(" p95 < 1 s |", " |"),
        *rows_engine,
        "",
        "## 2. Teaching mode: control change → redraw",
        "",
        header,
        *rows_teach,
        "",
        "## 3. Analyst mode: previews free, Release once",
        "",
        header,
        *rows_analyst,
        "",
        f"The analyst ledger held ε = {spent:.3g} at the end: the previews charged nothing, the "
        "second Release was a replay.",
        "",
        "Notes: most of a redraw is the engine's sampling of 100,000 synthetic rows "
        "(Gaussian draws and the inverse-CDF search per attribute; twice with the baseline). "
        "The widget's evaluation answers the range queries with prefix bitsets "
        "(`dpwidgets.widgets.synth.range_counts`), several times faster than testing every "
        "row against every query; the reference table's margins, τ and true answers are "
        "computed once per table and attribute set. The 8-attribute table is the slowest "
        "row: the engine's DPCopula alone is about half of it (Kendall's τ of 28 pairs on "
        "t = 25,200 sampled rows, then 8 columns to sample), the baseline and the evaluation "
        "of two synthetic tables (28 τ pairs and 8-column range counts each) the rest (see the "
        "`compare` off row). The default debounce (150 ms) turns a "
        "slider drag into one release.",
        "",
    ])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    return report


if __name__ == "__main__":
    import sys

    sys.stdout.write(main(sys.argv[1:]))
