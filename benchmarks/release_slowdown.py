"""What floating-point safety costs each analyst release: ``mech.run`` inside vs outside
``floating_point_safe()``.

An analyst release runs its mechanism inside :func:`dpwidgets.engine.mechanisms.floating_point_safe`
(discrete Laplace on power-of-two grids, the base-2 exponential mechanism, SVT comparisons in
integer grid steps); a teaching run or a preview runs the same mechanism with the continuous
samplers. For every built-in releasable mechanism of every family (:data:`dpwidgets.mechanism.MECHANISMS`,
the specs of ``dpwidgets/releases/*.py``) this benchmark times ``mech.run(values, p, rng)`` both
ways, on data of the sizes the family's own benchmarks use, with the canonical parameters the
door computes (``Session.preview(...).params``, the same validation a release goes through)
and the values the door hands to the run.
The door's own work (ledger charge, store) is the same in both modes and is left out.

Each round runs every (mechanism, mode) cell once, in a shuffled order, so that the load of
other jobs on the shared machine affects both modes alike; both modes of a round get the same
seed. Reported per mechanism: the median time outside and inside (ms), the median over rounds
of (inside / outside) and of (inside - outside) in ms. Goal: no release more than 100 ms
slower inside.

Not timed: ``reconstruction`` (not private: refused in analyst mode) and ``peer_synth`` (an
optional extra).

Run: ``python -m benchmarks release_slowdown [--quick]`` (writes
``benchmarks/results/release_slowdown.md``).
"""

from __future__ import annotations

import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.dynamic_common import census
from benchmarks.streams_common import multi5, stream
from benchmarks.svt_selection import zipf_scores
from benchmarks.synth_common import census_table
from dpwidgets import Session
from dpwidgets._progress import progress
from dpwidgets.engine.mechanisms import floating_point_safe
from dpwidgets.families.dynamic.standins import dynamic_stand_in
from dpwidgets.families.personalized.standins import make_budgets
from dpwidgets.families.synth.standins import synth_stand_in
from dpwidgets.mechanism import MECHANISMS

RESULTS = Path(__file__).resolve().parent / "results" / "release_slowdown.md"
SEED = 20261126
DATA_SEED = 0
GOAL_MS = 100.0


def _datasets() -> dict[str, dict]:
    """name -> {"data", "add" (keyword arguments of add_dataset), "source"}: the sizes of the
    family benchmarks named in "source"."""
    rng = np.random.default_rng(DATA_SEED)
    items = zipf_scores()  # svt_selection: 10,000 items, 1e6 records
    big_items = zipf_scores(100_000, 10_000_000)
    high5 = stream("High_5")
    states = np.asarray(multi5(), dtype=float)
    series = census()
    hist = np.asarray(series.histograms, dtype=float)
    n_table = 5_000  # diagnostics_prirp: REGRET_N
    x = rng.uniform(1, 50, n_table)
    table = np.column_stack((x, 2.0 + 0.5 * x + rng.normal(0, 3, n_table)))
    n_logit = 10_000  # diagnostics_pribrp: N
    z = rng.uniform(-1, 1, n_logit)
    logit = np.column_stack((z, (rng.random(n_logit) < 1 / (1 + np.exp(-2 * z))).astype(float)))
    us = census_table("us")  # synth_census: 100,000 x 4
    small = us.frame[["age", "occupation", "gender"]]  # 98,112 cells
    small_domains = {c: us.domains[c] for c in small.columns}
    n_personal = 100_000  # personalized_counts: N_RECORDS
    budgets = np.round(make_budgets("normal", n_personal, rng), 2)
    personal = np.column_stack((rng.uniform(0, 100, n_personal), budgets))
    return {
        "items": dict(data=items, add={}, source="svt_selection (Zipf, 10,000 items)"),
        "items_1e5": dict(data=big_items, add={}, source="top-c target (Zipf, 100,000 items)"),
        "high5": dict(data=high5, add={},
                      source=f"streams_* (High_5 stand-in, {high5.size:,} steps)"),
        "multi5": dict(data=states, add={"stand_in": np.ones_like(states)},
                       source=f"streams_hierarchy (Multi_5, {states.shape[0]} x "
                              f"{states.shape[1]:,})"),
        "census": dict(data=hist, add={
            "stand_in": dynamic_stand_in(*hist.shape, series.cardinality),
            "facts": {"cardinality": series.cardinality}},
            source=f"dynamic_* (census-like series, {hist.shape[0]} x {hist.shape[1]}, "
                   f"n = {series.cardinality:,})"),
        "table": dict(data=table, add={"stand_in": "continuous"},
                      source=f"diagnostics_prirp ({n_table:,} rows)"),
        "logit": dict(data=logit, add={"stand_in": "binary"},
                      source=f"diagnostics_pribrp ({n_logit:,} rows)"),
        "frame": dict(data=us.frame, add={"stand_in": synth_stand_in(
            len(us.frame), dict(us.domains), dtypes={c: str(t) for c, t in us.frame.dtypes.items()})},
            domains=dict(us.domains), source=f"synth_census (US-like, {len(us.frame):,} x "
                                             f"{us.frame.shape[1]})"),
        "frame3": dict(data=small, add={"stand_in": synth_stand_in(
            len(small), small_domains, dtypes={c: str(t) for c, t in small.dtypes.items()})},
            domains=small_domains, source=f"synth_census (US-like without income, "
                                          f"{len(small):,} x 3: the full histogram fits)"),
        "personal": dict(data=personal, add={"stand_in": np.column_stack(
            (np.full(n_personal, 50.0), budgets))}, budgets=budgets,
            source=f"personalized_counts ({n_personal:,} records)"),
    }


def _requests(d: dict[str, dict]) -> list[tuple[str, str, dict]]:
    """(mechanism, dataset, parameters) of every timed release."""
    items = d["items"]["data"]
    c = 300  # svt_selection's largest c
    threshold = float(np.sort(items)[::-1][c - 1: c + 1].mean())  # Lyu, Su & Li 2017 §6
    domains = d["frame"]["domains"]
    small_domains = d["frame3"]["domains"]
    return [
        ("svt", "items", dict(epsilon=0.1, c=c, threshold=threshold)),
        ("top_c", "items", dict(epsilon=0.1, c=c)),
        ("top_c", "items_1e5", dict(epsilon=0.1, c=c)),
        ("laplace_stream", "high5", dict(epsilon=0.1)),
        ("pegasus", "high5", dict(epsilon=0.1)),
        ("hierarchical_pegasus", "multi5", dict(epsilon=0.1)),
        ("dsat", "census", dict(epsilon=1.0)),
        ("dsft", "census", dict(epsilon=1.0, threshold=0.05)),
        ("dsat_w_event", "census", dict(epsilon=1.0, w=50)),
        ("dynamic_fixed", "census", dict(epsilon=1.0)),
        ("dynamic_uniform", "census", dict(epsilon=1.0)),
        ("dynamic_bd", "census", dict(epsilon=1.0, w=50)),
        ("dynamic_ba", "census", dict(epsilon=1.0, w=50)),
        ("fit_model", "table", dict(epsilon=1.0, bounds_X=(1, 50), bounds_y=(-20, 60))),
        ("residual_plot", "table", dict(epsilon=1.0)),
        ("roc_curve", "logit", dict(epsilon=1.0)),
        ("binned_residuals", "logit", dict(epsilon=1.0)),
        ("dpcopula", "frame", dict(epsilon=1.0, domains=domains)),
        ("independent_synth", "frame", dict(epsilon=1.0, domains=domains)),
        ("laplace_histogram_synth", "frame3", dict(epsilon=1.0, domains=small_domains)),
        ("laplace_histogram_synth", "frame3", dict(epsilon=1.0, domains=small_domains,
                                                   publisher="dawa")),
        ("personalized_histogram", "personal", dict(epsilon=1.0, budgets=d["personal"]["budgets"],
                                                    bins=np.linspace(0, 100, 11))),
    ]


def main(argv: list[str] | None = None) -> str:
    quick = "--quick" in (argv or [])
    rounds = 3 if quick else 9
    order = random.Random(SEED)
    start = time.perf_counter()
    data = _datasets()
    requests = _requests(data)
    timed = {m for m, _, _ in requests}
    missing = sorted(set(MECHANISMS) - timed - {"reconstruction", "peer_synth"})
    if missing:
        raise RuntimeError(f"release_slowdown has no entry for {missing}: add one")
    times: dict[tuple[int, bool], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        s = Session(mode="analyst", ledger=Path(tmp) / "l.sqlite")
        for name, spec in data.items():
            s.add_dataset(name, spec["data"], total_epsilon=1e6, **spec["add"])
        cells = []
        for i, (mechanism, dataset, params) in enumerate(requests):
            p = s.preview(dataset, mechanism, **params).params  # the door's canonical params
            mech = MECHANISMS[mechanism]
            # What the door hands to mech.run: the stored array, or a frame mechanism's
            # DataFrame with the public schema (the door's own helper, read-only here).
            entry = s._dataset(dataset)
            cells.append((i, mech, entry.values_for(mech, entry.values()), p))
        s.close()

        def run(cell, inside: bool, seed: int) -> float:
            _, mech, values, p = cell
            rng = np.random.default_rng(seed)
            t0 = time.perf_counter()
            if inside:
                with floating_point_safe():
                    mech.run(values, p, rng)
            else:
                mech.run(values, p, rng)
            return time.perf_counter() - t0

        for cell in cells:  # warm-up (imports, caches, first touch)
            run(cell, True, SEED)
            run(cell, False, SEED)
        for r in progress(range(rounds), desc="release_slowdown"):
            jobs = [(cell, inside) for cell in cells for inside in (True, False)]
            for cell, inside in order.sample(jobs, len(jobs)):
                times.setdefault((cell[0], inside), []).append(run(cell, inside, SEED + r))
    elapsed = time.perf_counter() - start
    rows, slow = [], []
    for i, (mechanism, dataset, params) in enumerate(requests):
        inside, outside = times[(i, True)], times[(i, False)]
        ratio = statistics.median(a / b for a, b in zip(inside, outside, strict=True))
        diff = statistics.median((a - b) * 1e3 for a, b in zip(inside, outside, strict=True))
        shown = ", ".join(f"{k}={v}" for k, v in params.items()
                          if k not in ("domains", "budgets", "bins", "threshold"))
        rows.append(f"| `{mechanism}` ({shown}) | {data[dataset]['source']} | "
                    f"{statistics.median(outside) * 1e3:.1f} | {statistics.median(inside) * 1e3:.1f} | "
                    f"**{ratio:.2f}x** | {diff:+.1f} |")
        if diff > GOAL_MS:
            slow.append(mechanism)
    report = "\n".join([
        "# Floating-point-safe releases: slowdown per mechanism",
        "",
        f"Produced by `python -m benchmarks release_slowdown`{' --quick' if quick else ''} in "
        f"{elapsed:.0f} s. Machine: {platform.machine()}, {os.cpu_count()} cores (shared with "
        f"other jobs while this ran), {platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}, NumPy {np.__version__}. {rounds} rounds after one warm-up "
        "run of each cell; each round runs every (mechanism, mode) cell once in an order "
        f"shuffled by `random.Random({SEED})`; both modes of round r use "
        f"`numpy.random.default_rng({SEED} + r)`. Data seeded with {DATA_SEED} (the family "
        "benchmarks' stand-ins).",
        "",
        "What is timed: `mech.run(values, p, rng)` of the spec in `dpwidgets.mechanism.MECHANISMS`, "
        "with `p` the canonical parameters of `Session.preview` (what the door validates), inside "
        "`floating_point_safe()` (what an analyst release runs: discrete Laplace on power-of-two "
        "grids, the base-2 exponential mechanism, SVT comparisons in integer grid steps) and "
        "outside it (the continuous samplers of teaching runs and previews). The door's ledger "
        "and store are the same in both modes and not timed. Times are medians in milliseconds; "
        "ratio and difference are medians over rounds of (inside / outside) and (inside - "
        "outside) in the same round.",
        "",
        "| release | data (sizes of the benchmark) | outside ms | inside ms | inside / outside "
        "| inside - outside ms |",
        "|---|---|---|---|---|---|",
        *rows,
        "",
        f"Goal: no release more than {GOAL_MS:g} ms slower inside: "
        + ("met for every release." if not slow else f"NOT met for {', '.join(slow)}."),
        "",
    ])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    return report


if __name__ == "__main__":
    import sys

    sys.stdout.write(main(sys.argv[1:]))
