"""Redraw time of the regression-diagnostics widgets on 100,000 records (headless).

A "redraw" is one control change handled end to end with no kernel: the engine run through the
session (a charged teaching release, or a free analyst preview on the stand-in), the quality
measure, the ColumnDataSource updates and jupyter_bokeh's document-patch serialization. The
browser's own drawing is not included. Budget: p95 < 100 ms CPU per change, with
PriRP using DAWA on its automatic grid (m = sqrt(θ² n ε2 / 10), 95 × 95 at ε = 1).

Every row times >= 20 changes (40 without ``--quick``) and reports the median, p95 and max of
both CPU time (``time.process_time``, the budget's measure) and wall time.

Run: ``python -m benchmarks.diagnostics_redraw [--quick]`` (writes
``benchmarks/results/diagnostics_redraw.md``).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
from pathlib import Path

import numpy as np

from benchmarks._timing import stats, timed
from dpwidgets import Session
from dpwidgets.datasets import logistic_scenario, residual_scenario
from dpwidgets.engine.diagnostics import (
    private_binned_residual_plot,
    private_residual_plot,
    private_roc_curve,
)
from dpwidgets.session import model_predictions
from dpwidgets.widgets import BinnedResidualWidget, ResidualPlotWidget, RocWidget

N = 100_000
BUDGET_MS = 100.0
RESULTS = Path(__file__).resolve().parent / "results" / "diagnostics_redraw.md"


_time = timed


def _row(name: str, times: tuple[list[float], list[float]]) -> str:
    cpu, wall = times
    c_med, c_p95, c_max = stats(cpu)
    w_med, w_p95, w_max = stats(wall)
    verdict = "yes" if c_p95 < BUDGET_MS else "NO"
    return (f"| {name} | {c_med:.1f} | {c_p95:.1f} | {c_max:.1f} | {w_med:.1f} | {w_p95:.1f} | "
            f"{w_max:.1f} | {verdict} |")


def _eps(i: int) -> float:
    return 1.0 + 0.01 * (i + 1)  # a fresh ε each time: never a cache hit


def main(argv: list[str] | None = None) -> str:
    """Time the redraws and write the Markdown table; returns the report."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.diagnostics_redraw")
    parser.add_argument("--quick", action="store_true",
                        help="20 samples per row instead of 40 (never fewer than 20)")
    args, _ = parser.parse_known_args(list(argv) if argv is not None else sys.argv[1:])
    repeats = 20 if args.quick else 40

    rng = np.random.default_rng(0)
    regression = residual_scenario("heteroscedastic", N, rng)
    reg_table = np.column_stack((regression.X, regression.y))
    logistic = logistic_scenario("M2", N, rng)
    log_table = np.column_stack((logistic.X, logistic.y))
    predicted, residuals, _ = model_predictions(reg_table)
    scores, _, labels = model_predictions(log_table, kind="logistic")
    rows = []

    # 1. The engine alone (what every redraw pays at least).
    rows.append(_row("engine: PriRP, DAWA, auto grid", _time(lambda i: private_residual_plot(
        predicted, residuals, _eps(i), rng, center_predicted=25.0), repeats)))
    rows.append(_row("engine: PriROC, default (fixed thresholds, rule in n·ε, HB)", _time(
        lambda i: private_roc_curve(labels, scores, _eps(i), rng), repeats)))
    rows.append(_row("engine: PriROC, defaults='text' (recursive medians, DAWA, 2^10)", _time(
        lambda i: private_roc_curve(labels, scores, _eps(i), rng, defaults="text"), repeats)))
    rows.append(_row("engine: PriBRP (default s = 8)", _time(
        lambda i: private_binned_residual_plot(labels, scores, _eps(i), rng), repeats)))

    # 2. Teaching widgets: every change is a charged live release + truth + quality measure.
    teach = Session(mode="teaching", seed=0)
    teach.add_dataset("reg", reg_table, total_epsilon=1e6, stand_in="continuous")
    teach.add_dataset("log", log_table, total_epsilon=1e6, stand_in="binary")
    rp = ResidualPlotWidget(teach, dataset="reg", epsilon=1.0, center_predicted=25.0, debounce=0)
    rows.append(_row("teaching ResidualPlotWidget: ε slider (PriRP + Sim)", _time(
        lambda i: setattr(rp.epsilon, "value", _eps(i)), repeats)))
    rows.append(_row("teaching ResidualPlotWidget: Rerun button (fresh noise)", _time(
        lambda i: rp.release_button.click(), repeats)))
    rp.publisher.value = "identity"
    rows.append(_row("teaching ResidualPlotWidget: ε slider, publisher identity (LM)", _time(
        lambda i: setattr(rp.epsilon, "value", 2.0 + 0.01 * (i + 1)), repeats)))
    roc = RocWidget(teach, dataset="log", epsilon=1.0, debounce=0)
    rows.append(_row("teaching RocWidget: ε slider (default)", _time(
        lambda i: setattr(roc.epsilon, "value", _eps(i)), repeats)))
    rows.append(_row("teaching RocWidget: Rerun button (default)", _time(
        lambda i: roc.release_button.click(), repeats)))
    roc_text = RocWidget(teach, dataset="log", epsilon=1.0, debounce=0, defaults="text")
    rows.append(_row("teaching RocWidget: ε slider, defaults='text' (2^10 thresholds)", _time(
        lambda i: setattr(roc_text.epsilon, "value", _eps(i)), repeats)))
    rows.append(_row("teaching RocWidget: ρ slider, defaults='text'", _time(
        lambda i: setattr(roc_text.rho, "value", 0.1 + 0.01 * ((i + 1) % 40)), repeats)))
    brp = BinnedResidualWidget(teach, dataset="log", epsilon=1.0, debounce=0)
    rows.append(_row("teaching BinnedResidualWidget: ε slider", _time(
        lambda i: setattr(brp.epsilon, "value", _eps(i)), repeats)))
    rows.append(_row("teaching BinnedResidualWidget: ρ slider", _time(
        lambda i: setattr(brp.rho, "value", 0.05 + 0.01 * ((i + 1) % 40)), repeats)))
    rows.append(_row("teaching BinnedResidualWidget: s slider (4 values: replays after 4)", _time(
        lambda i: setattr(brp.s, "value", 5 + (i + 1) % 4), repeats)))

    # 3. Analyst widgets: every change is a free preview on the same-size public stand-in.
    with tempfile.TemporaryDirectory() as tmp:
        analyst = Session(mode="analyst", ledger=Path(tmp) / "ledger.sqlite", seed=0)
        analyst.add_dataset("reg", reg_table + 0.5, total_epsilon=1.0, stand_in="continuous")
        a = ResidualPlotWidget(analyst, dataset="reg", epsilon=0.5, center_predicted=25.0,
                               debounce=0)
        rows.append(_row("analyst ResidualPlotWidget preview: ε slider", _time(
            lambda i: setattr(a.epsilon, "value", 0.5 + 0.01 * (i + 1)), repeats)))
        rows.append(_row("analyst ResidualPlotWidget: Release click (cached replay)",
                         _time(lambda i: a.release(), repeats)))
        analyst.add_dataset("log", log_table, total_epsilon=1.0, stand_in="binary")
        ar = RocWidget(analyst, dataset="log", epsilon=0.5, debounce=0)
        rows.append(_row("analyst RocWidget preview: ε slider (default)", _time(
            lambda i: setattr(ar.epsilon, "value", 0.5 + 0.01 * (i + 1)), repeats)))
        ab = BinnedResidualWidget(analyst, dataset="log", epsilon=0.5, debounce=0)
        rows.append(_row("analyst BinnedResidualWidget preview: ε slider", _time(
            lambda i: setattr(ab.epsilon, "value", 0.5 + 0.01 * (i + 1)), repeats)))
        analyst.close()

    report = "\n".join([
        "# Widget redraw time: regression diagnostics, 100,000 records",
        "",
        "Produced by `python -m benchmarks.diagnostics_redraw`. One control change handled",
        "headless end to end: the engine run through the session (teaching: a charged live",
        "release; analyst: a free preview on the public stand-in of the same size), the",
        "confidential reference and quality measure (teaching / stand-in only; computed once",
        "per model and cached), the ColumnDataSource updates (at most 20,000 points drawn",
        "per panel) and jupyter_bokeh's patch serialization. Browser drawing not included.",
        f"Budget: p95 CPU time < {BUDGET_MS:.0f} ms (CPU: this process only, so other jobs on",
        "a shared machine do not count; wall time beside it). Ordinary-fit models (fitted once",
        "per table, cached). p95 is the nearest rank (of 40 samples the 38th).",
        "",
        f"Machine: {platform.machine()}, Python {platform.python_version()}, "
        f"{repeats} changes per row after one warm-up change; "
        f"load average at the end {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs.",
        "",
        "| change | CPU median ms | CPU p95 ms | CPU max ms | wall median ms | wall p95 ms | "
        "wall max ms | CPU p95 < 100 ms |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    return report


if __name__ == "__main__":
    sys.stdout.write(main(sys.argv[1:]))
