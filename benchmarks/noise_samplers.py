"""Speed of the floating-point-safe samplers against numpy's ``Generator.laplace``.

One run times, for 1e5 and 1e6 draws and several scales, numpy's continuous Laplace (the
teaching sampler :func:`dpwidgets.engine.mechanisms.laplace` wraps it), the exact-arithmetic
:func:`~dpwidgets.engine.mechanisms.discrete_laplace`, the two releases built on it
(:func:`~dpwidgets.engine.mechanisms.count_laplace`, :func:`~dpwidgets.engine.mechanisms.grid_laplace`),
:func:`~dpwidgets.engine.mechanisms.laplace` inside ``floating_point_safe()`` (the sampler
analyst releases use: discrete Laplace on the grid ``2**-GRID_BITS`` of the scale, so a scale
of ~2**GRID_BITS-2**(GRID_BITS + 1) in grid steps) and, for reference, a difference of two
``rng.geometric`` draws (the same law, sampled by floating-point inversion). Each round
times every sampler once in a shuffled order, so that the load of other jobs on the shared
machine affects all alike; a ratio is the median over rounds of (sampler time / numpy
Laplace time in the same round). Goal: discrete_laplace
within 3x numpy's Laplace at 1e5 and at 1e6 draws.

A second table times the exponential mechanism: the floating-point-safe base-2 sampler
(:func:`~dpwidgets.engine.mechanisms.base2_exponential_mechanism`, what
:func:`~dpwidgets.engine.mechanisms.exponential_mechanism` runs inside ``floating_point_safe()``)
against the Gumbel-top-k sampler on doubles (the teaching path), on 1e3 and 1e5 candidates
(Poisson(100) counts, epsilon 1, monotonic) for k = 1 and k = 100 rounds, in the same shuffled
rounds; a ratio is the median over rounds of (base-2 / Gumbel in the same round). Goal: top-c
over 1e5 candidates well under 100 ms.

A third table times one analyst release end to end (``Session.release``: ledger charge, the
run, the store) of ``laplace_stream`` and ``pegasus`` on a 57,901-step stream, inside
``floating_point_safe()`` (what the door does) and outside it (the door's context replaced
by a no-op for the measurement only), alternating in a shuffled order; a ratio is the
median over rounds of (inside / outside in the same round).

Run: ``python -m benchmarks noise_samplers [--quick]`` (writes
``benchmarks/results/noise_samplers.md``).
"""

from __future__ import annotations

import contextlib
import itertools
import math
import os
import platform
import random
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.streams_common import stream
from dpwidgets import Session
from dpwidgets._progress import progress
from dpwidgets.engine import mechanisms
from dpwidgets.engine.mechanisms import (
    GRID_BITS,
    base2_exponential_mechanism,
    count_laplace,
    discrete_laplace,
    exponential_mechanism,
    floating_point_safe,
    grid_laplace,
    laplace,
)

RESULTS = Path(__file__).resolve().parent / "results" / "noise_samplers.md"
SIZES = (100_000, 1_000_000)
#: Scales of the noise (Laplace b; discrete Laplace scale in units): a count at epsilon 1 and
#: 0.1, a fine table, and a scale past the 2**16 table (exp() per draw). grid_laplace is run
#: with sensitivity 1 and epsilon = 1/scale, so its own scale in grid units is ~2**GRID_BITS x
#: larger; safe-mode laplace() draws at scale / gamma, 2**GRID_BITS-2**(GRID_BITS + 1) grid steps
#: below scale 2**GRID_BITS (past the table: exp() per draw at every scale here).
SCALES = (1.0, 10.0, 1000.0, 1e5)
GOAL = 3.0
SEED = 20261125


def _samplers(scale: float, n: int):
    epsilon = 1.0 / scale
    zeros = np.zeros(n, dtype=np.int64)
    values = np.linspace(0.0, 100.0, n)
    p = -math.expm1(-1.0 / scale)
    return {
        "numpy laplace": lambda rng: rng.laplace(0.0, scale, n),
        "discrete_laplace": lambda rng: discrete_laplace(scale, n, rng=rng),
        "count_laplace": lambda rng: count_laplace(zeros, 1, epsilon, rng=rng),
        "grid_laplace": lambda rng: grid_laplace(values, 1.0, epsilon, rng=rng),
        "safe-mode laplace": lambda rng: _safe_laplace(scale, n, rng),
        "geometric difference": lambda rng: rng.geometric(p, n) - rng.geometric(p, n),
    }


def _safe_laplace(scale: float, n: int, rng: np.random.Generator) -> np.ndarray:
    with floating_point_safe():
        return laplace(scale, n, rng=rng)


#: The selections: numbers of candidates and of rounds k (without replacement).
CANDIDATES = (1_000, 100_000)
ROUNDS_K = (1, 100)
SELECTION_GOAL_MS = 100.0


def _selection_times(rounds: int, order: random.Random, rng: np.random.Generator
                     ) -> dict[tuple[int, int, str], list[float]]:
    """Seconds per selection of k among n candidates, base-2 (safe) and Gumbel (teaching)."""
    times: dict[tuple[int, int, str], list[float]] = {}
    for n in progress(CANDIDATES, desc="noise_samplers selection"):
        counts = np.random.default_rng(SEED + n).poisson(100, n).astype(float)
        for k in ROUNDS_K:
            samplers = {
                "gumbel": lambda r, c=counts, k=k: exponential_mechanism(
                    c, 1.0, k=k, monotonic=True, rng=r),
                "base2": lambda r, c=counts, k=k: base2_exponential_mechanism(
                    c, 1.0, k=k, monotonic=True, rng=r),
            }
            for fn in samplers.values():  # warm-up
                fn(rng)
            for _ in range(rounds):
                for name in order.sample(list(samplers), len(samplers)):
                    t0 = time.perf_counter()
                    samplers[name](rng)
                    times.setdefault((n, k, name), []).append(time.perf_counter() - t0)
    return times


#: The end-to-end releases: (mechanism, parameters) on the High_5-shaped stream.
RELEASES = (("laplace_stream", {"epsilon": 0.1}), ("pegasus", {"epsilon": 0.1}))


def _release_times(rounds: int, order: random.Random) -> dict[tuple[str, bool], list[float]]:
    """Seconds per analyst release of each of RELEASES, inside (True) and outside (False)
    ``floating_point_safe()``; every release is a fresh ``run=`` (charged, fresh noise)."""
    data = stream("High_5")
    safe = mechanisms.floating_point_safe
    runs = itertools.count()
    times: dict[tuple[str, bool], list[float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        s = Session(mode="analyst", ledger=Path(tmp) / "l.sqlite")
        s.add_dataset("wifi", data, total_epsilon=100.0)

        def release(name: str, params: dict, inside: bool) -> float:
            # The door imports floating_point_safe when it runs: swap it for a no-op to
            # measure the same release with the continuous sampler.
            mechanisms.floating_point_safe = safe if inside else contextlib.nullcontext
            try:
                t0 = time.perf_counter()
                s.release("wifi", name, run=next(runs), **params)
                return time.perf_counter() - t0
            finally:
                mechanisms.floating_point_safe = safe

        cells = [(name, params, inside) for name, params in RELEASES for inside in (True, False)]
        for cell in cells:  # warm-up
            release(*cell)
        for _ in range(rounds):
            for name, params, inside in order.sample(cells, len(cells)):
                times.setdefault((name, inside), []).append(release(name, params, inside))
        s.close()
    return times


def main(argv: list[str] | None = None) -> str:
    quick = "--quick" in (argv or [])
    rounds = 3 if quick else 15
    order = random.Random(SEED)
    rng = np.random.default_rng(SEED)
    times: dict[tuple[int, float, str], list[float]] = {}
    start = time.perf_counter()
    for n in progress(SIZES, desc="noise_samplers Laplace"):
        for scale in SCALES:
            samplers = _samplers(scale, n)
            for fn in samplers.values():  # warm-up (allocations, first-touch of pages)
                fn(rng)
            for _ in range(rounds):
                for name in order.sample(list(samplers), len(samplers)):
                    t0 = time.perf_counter()
                    samplers[name](rng)
                    times.setdefault((n, scale, name), []).append(time.perf_counter() - t0)
    selection_times = _selection_times(rounds, order, rng)
    release_times = _release_times(rounds, order)
    elapsed = time.perf_counter() - start
    selection_rows = []
    selection_ok = []
    for n in CANDIDATES:
        for k in ROUNDS_K:
            gumbel, base2 = selection_times[(n, k, "gumbel")], selection_times[(n, k, "base2")]
            ratio = statistics.median(b / g for b, g in zip(base2, gumbel, strict=True))
            selection_rows.append(
                f"| {n:,} | {k} | {statistics.median(gumbel) * 1e3:.2f} | "
                f"{statistics.median(base2) * 1e3:.2f} | **{ratio:.1f}x** | "
                f"{max(base2) * 1e3:.2f} |")
            selection_ok.append(max(base2) * 1e3 < SELECTION_GOAL_MS)
    release_rows = []
    for name, params in RELEASES:
        inside, outside = release_times[(name, True)], release_times[(name, False)]
        ratio = statistics.median(i / o for i, o in zip(inside, outside, strict=True))
        release_rows.append(
            f"| `{name}` (ε = {params['epsilon']:g}) | {statistics.median(outside) * 1e3:.0f} | "
            f"{statistics.median(inside) * 1e3:.0f} | **{ratio:.2f}x** |")
    names = list(_samplers(1.0, 1))
    rows = []
    verdicts = []
    for n in SIZES:
        for scale in SCALES:
            base = times[(n, scale, "numpy laplace")]
            cells = [f"{n:,}", f"{scale:g}", f"{statistics.median(base) * 1e3:.1f}"]
            for name in names[1:]:
                ratios = [t / b for t, b in zip(times[(n, scale, name)], base, strict=True)]
                ratio = statistics.median(ratios)
                cells.append(f"{statistics.median(times[(n, scale, name)]) * 1e3:.1f} "
                             f"(**{ratio:.2f}x**)" if name == "discrete_laplace" else
                             f"{statistics.median(times[(n, scale, name)]) * 1e3:.1f} "
                             f"({ratio:.2f}x)")
                if name == "discrete_laplace":
                    verdicts.append(ratio <= GOAL)
            rows.append("| " + " | ".join(cells) + " |")
    report = "\n".join([
        "# Floating-point-safe noise samplers against numpy's Laplace",
        "",
        f"Produced by `python -m benchmarks noise_samplers`{' --quick' if quick else ''} in "
        f"{elapsed:.0f} s. Machine: {platform.machine()}, {os.cpu_count()} cores (shared with "
        f"other jobs while this ran), {platform.system()} {platform.release()}, Python "
        f"{platform.python_version()}, NumPy {np.__version__}. Generator: "
        f"`numpy.random.default_rng({SEED})` (PCG64), one stream for the whole run; shuffle "
        f"of the order in each round: `random.Random({SEED})`. {rounds} rounds per cell after "
        "one warm-up call of each sampler; each round times every sampler once, in a shuffled "
        "order. Times are medians in milliseconds; a ratio (in parentheses) is the median over "
        "rounds of (sampler / numpy Laplace in the same round).",
        "",
        "Samplers: `numpy laplace` is `rng.laplace(0, scale, n)` (what the teaching sampler "
        "`laplace()` calls); `discrete_laplace(scale, n)`; `count_laplace(zeros, 1, 1/scale)` "
        "(the same noise plus validation of the counts); `grid_laplace(values, 1, 1/scale)` "
        f"(rounding to the grid 2**-{GRID_BITS}, noise of scale ~(2**{GRID_BITS} + 1) x scale "
        "in grid units, rescaling); `safe-mode laplace` is `laplace(scale, n)` inside "
        "`floating_point_safe()` (what analyst releases draw: discrete Laplace of scale "
        f"scale / gamma on the grid gamma = largest power of two <= min(1, scale / "
        f"2**{GRID_BITS}), then rescaled); "
        "`geometric difference` is `rng.geometric(p, n) - rng.geometric(p, n)`, "
        "p = 1 - exp(-1/scale): the same law by floating-point inversion, for reference.",
        "",
        "| draws | scale | numpy laplace ms | discrete_laplace ms | count_laplace ms | "
        "grid_laplace ms | safe-mode laplace ms | geometric difference ms |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Goal: discrete_laplace within {GOAL:g}x numpy's Laplace at "
        f"{' and '.join(f'{n:,}' for n in SIZES)} draws: "
        f"{'met at every size and scale' if all(verdicts) else 'NOT met everywhere'} "
        f"({sum(verdicts)} of {len(verdicts)}).",
        "",
        "## The exponential mechanism: base-2 (floating-point safe) vs Gumbel-top-k",
        "",
        "`base2_exponential_mechanism(counts, 1.0, k=k, monotonic=True)` (what "
        "`exponential_mechanism` runs inside `floating_point_safe()`: qualities on the grid "
        f"2**-{GRID_BITS}, exact dyadic weights, exact integer sampling) against "
        "`exponential_mechanism(...)` outside the context (Gumbel-top-k on doubles, the teaching "
        "sampler), on Poisson(100) counts (`numpy.random.default_rng(SEED + n)`); same rounds "
        "and shuffles as above. Times are medians in milliseconds (max: the slowest of the "
        "rounds), a ratio the median over rounds of (base-2 / Gumbel in the same round).",
        "",
        "| candidates | k | Gumbel ms | base-2 ms | base-2 / Gumbel | base-2 max ms |",
        "|---|---|---|---|---|---|",
        *selection_rows,
        "",
        f"Goal: every base-2 selection below {SELECTION_GOAL_MS:g} ms (top-c over 1e5 "
        f"candidates): {'met' if all(selection_ok) else 'NOT met'} "
        f"({sum(selection_ok)} of {len(selection_ok)}, slowest round counted).",
        "",
        "## One analyst release end to end, inside vs outside `floating_point_safe()`",
        "",
        f"`Session(mode=\"analyst\").release(...)` on the High_5-shaped stream "
        f"(`benchmarks.streams_common.stream('High_5')`, {stream('High_5').size:,} steps): "
        "ledger charge, the run with fresh OS entropy, the store. Inside is what the door "
        "does (discrete Laplace on a power-of-two grid); outside, the door's context is "
        f"replaced by a no-op for this measurement only. {rounds} rounds after one warm-up "
        "release of each cell, each round in a shuffled order; times are medians in "
        "milliseconds, a ratio the median over rounds of (inside / outside in the same round).",
        "",
        "| release | outside ms (continuous) | inside ms (grid) | inside / outside |",
        "|---|---|---|---|",
        *release_rows,
        "",
    ])
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    return report


if __name__ == "__main__":
    import sys

    sys.stdout.write(main(sys.argv[1:]))
