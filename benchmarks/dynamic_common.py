"""Shared set-up of the dynamic-release benchmarks (Li 2017, Ch. 4): data, methods, errors, output.

Not a benchmark itself (no ``main``): ``dynamic_budget_split``, ``dynamic_threshold``,
``dynamic_epsilon``, ``dynamic_update_rate``, ``dynamic_w_event``, ``dynamic_speed`` and
``dynamic_dsat_design`` import it.

Data (Li 2017, §4.5.1). The IPUMS extract and the Oldenburg/Brinkhoff traffic data are not
available at run time; :func:`dpwidgets.datasets.census_like_series` and
:func:`~dpwidgets.datasets.moving_object_series` generate stand-ins. The census-like series
is used in two forms:

- ``drift = 0``: the text's setup (tuples replaced by tuples of the *same* population; the
  histograms differ only by sampling noise, there is no change point);
- ``drift = 0.5``: the periods are real change points (inserted tuples come from a
  period-specific population; our addition, see the generator's docstring).

Both use the 3-D marginal (age, education, income; U = 3,456 bins; the text's Fig. 4.4(c) and
4.6 also use 3-D US data) with the text's n = 500,000 tuples per snapshot, N = 500, r = 0.5,
sigma^2 = 100K and 10 periods. (The 6-D joint, U = 27,648, is available from the generator
but makes each range-query evaluation eight times heavier.)

Quality (Li 2017, §4.5.1): mean absolute error of random range-count queries over all time points,
``E^a = (1/(M N)) sum_k sum_i |A~_i^k - A_i^k|``; the same M queries (seed ``QUERY_SEED``)
for every method. The text uses M = 5,000 queries and 10 runs; the default here is 2,000
queries and the run counts given by each module. Runs differ only in the mechanisms' noise:
run ``j`` of a setting draws from ``SeedSequence([seed, *key, j])``; the data are one fixed
draw per setting (``DATA_SEED``).
"""

from __future__ import annotations

import argparse
import time
import zlib
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from dpwidgets._progress import progress
from dpwidgets.engine import dynamic as dyn
from dpwidgets.families.dynamic.standins import census_like_series, moving_object_series

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 2017
DATA_SEED = 1
QUERY_SEED = 5
TEXT_RUNS = 10  # Li 2017, §4.5.1: "the average absolute error over 10 runs"
TEXT_QUERIES = 5000  # Li 2017, §4.5.1: "5000 random queries are generated"
QUERIES = 2000
N_TIMES = 500  # Table 4.2
N_RECORDS = 500_000  # Table 4.2
DRIFT = 0.5

Method = Callable[[np.ndarray, float, np.random.Generator], dyn.DynamicRelease]


@cache
def census(drift: float = 0.0, update_rate: float = 0.5, n_times: int = N_TIMES,
           n_records: int = N_RECORDS, seed: int = DATA_SEED):
    """One fixed census-like series (3-D marginal); cached per setting."""
    return census_like_series(n_times, n_records, update_rate=update_rate, drift=drift,
                              rng=np.random.default_rng(seed))


@cache
def grid(n_times: int = 1000, n_objects: int = 100_000, side: int = 32, seed: int = DATA_SEED):
    """One fixed moving-object series on a ``side x side`` grid; cached per setting."""
    return moving_object_series(n_times, n_objects, grid=(side, side),
                                rng=np.random.default_rng(seed))


@cache
def queries(shape: tuple[int, ...], n_queries: int = QUERIES, seed: int = QUERY_SEED):
    return dyn.random_range_queries(shape, n_queries, np.random.default_rng(seed))


def rng_for(seed: int, *key) -> np.random.Generator:
    """A generator for one (setting, run): ``key`` items are ints, floats or strings."""
    words = [int(k) if isinstance(k, int | np.integer) else zlib.crc32(str(k).encode())
             for k in key]
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


def error(series, releases: np.ndarray, n_queries: int) -> float:
    """``E^a`` of a release against the series on the fixed queries."""
    return dyn.range_query_error(series.histograms, releases, shape=series.shape,
                                 queries=queries(series.shape, n_queries))


def non_private(series, points: np.ndarray) -> np.ndarray:
    """The true histograms repeated from the release points ("DSAT-true", "fixed-true")."""
    index = np.maximum.accumulate(np.where(points, np.arange(points.size), 0))
    return np.asarray(series.histograms, dtype=float)[index]


def measure(series, method: Method, epsilon: float, runs: int, seed: int, key: tuple,
            n_queries: int, *, with_true: bool = False) -> list[dict]:
    """Run ``method`` ``runs`` times; one row per run with the error, releases and time."""
    rows = []
    for run in progress(range(runs), leave=False):
        start = time.perf_counter()
        result = method(series.histograms, epsilon, rng_for(seed, *key, run))
        seconds = time.perf_counter() - start
        row = {"run": run, "error": error(series, result.releases, n_queries),
               "releases": result.n_releases, "seconds": seconds,
               "k": result.details.get("k", np.nan)}
        if with_true:
            row["error_true"] = error(series, non_private(series, result.release_points), n_queries)
        rows.append(row)
    return rows


def summarise(df: pd.DataFrame, keys: list[str], values=("error",)) -> pd.DataFrame:
    """Mean and sd of ``values`` and the run count per ``keys``."""
    agg = {}
    for v in values:
        agg[f"{v}_mean"] = (v, "mean")
        agg[f"{v}_sd"] = (v, "std")
    agg["runs"] = ("run", "count")
    return df.groupby(keys, sort=False).agg(**agg).reset_index()


def parser(doc: str, runs: int, quick_help: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--runs", type=int, default=runs,
                   help=f"runs per setting (default {runs}; the text: {TEXT_RUNS})")
    p.add_argument("--queries", type=int, default=QUERIES,
                   help=f"range queries (default {QUERIES}; the text: {TEXT_QUERIES})")
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    return p


def fmt(x: float) -> str:
    """A compact number for the tables."""
    if not np.isfinite(x):
        return "–"
    if abs(x) >= 1000:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.3g}"


def pivot_table(table: pd.DataFrame, row: str, col: str, value: str = "error_mean",
                sd: str | None = "error_sd", order: list | None = None) -> list[str]:
    """A markdown table, ``row`` x ``col``, cells ``mean ± sd``."""
    cols = list(dict.fromkeys(table[col]))
    rows = order or list(dict.fromkeys(table[row]))
    lines = [f"| {row} | " + " | ".join(f"{col}={c}" for c in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for r in rows:
        cells = []
        for c in cols:
            hit = table[(table[row] == r) & (table[col] == c)]
            if hit.empty:
                cells.append("")
                continue
            cell = fmt(float(hit[value].iloc[0]))
            if sd is not None and np.isfinite(hit[sd].iloc[0]):
                cell += f" ± {fmt(float(hit[sd].iloc[0]))}"
            cells.append(cell)
        lines.append(f"| {r} | " + " | ".join(cells) + " |")
    return lines


def line_panel(table: pd.DataFrame, x: str, y: str, group: str, title: str, *,
               x_log: bool = False, y_log: bool = True, x_label: str | None = None,
               y_label: str = "mean absolute error (range queries)", width: int = 560,
               height: int = 380):
    """One Bokeh panel: ``y`` against ``x``, one line per ``group``."""
    from bokeh.models import ColumnDataSource
    from bokeh.palettes import Category10_10
    from bokeh.plotting import figure

    p = figure(width=width, height=height, title=title, x_axis_label=x_label or x,
               y_axis_label=y_label, x_axis_type="log" if x_log else "linear",
               y_axis_type="log" if y_log else "linear", tools="pan,box_zoom,reset,save,hover",
               tooltips=[(group, f"@{{{group}}}"), (x, f"@{{{x}}}"), (y, f"@{{{y}}}{{0.0}}")])
    for i, name in enumerate(dict.fromkeys(table[group])):
        sub = table[table[group] == name].sort_values(x)
        source = ColumnDataSource({x: sub[x].to_numpy(), y: sub[y].to_numpy(),
                                   group: [str(name)] * len(sub)})
        color = Category10_10[i % 10]
        dash = "dashed" if str(name).endswith("-true") else "solid"
        p.line(x, y, source=source, color=color, line_width=2, line_dash=dash,
               legend_label=str(name))
        p.scatter(x, y, source=source, color=color, size=6, legend_label=str(name))
    p.legend.click_policy = "hide"
    p.legend.label_text_font_size = "8pt"
    p.legend.location = "top_right"
    return p


def write(name: str, out: Path, table: pd.DataFrame, report: str, layout=None,
          title: str = "") -> None:
    """``<name>.csv``, ``<name>.md`` and (if ``layout``) ``<name>.html`` under ``out``."""
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"{name}.csv", index=False)
    (out / f"{name}.md").write_text(report, encoding="utf-8")
    if layout is not None:
        from bokeh.io import save
        from bokeh.resources import INLINE

        save(layout, out / f"{name}.html", resources=INLINE, title=title or name)


# ---------------------------------------------------------------------------------------------
# Methods (user level): the text's DSAT, our paced DSAT, and the baselines
# ---------------------------------------------------------------------------------------------


def public_n(h: np.ndarray) -> int:
    """The snapshot size the distance methods are calibrated to (``cardinality=``, required by
    the engine). The benchmark series are public synthetic data, so their smallest snapshot
    total is a public number here -- it is what the engine took by default before
    ``cardinality`` became required, so the figures are unchanged. Never do this on
    confidential data: there ``n`` is the data owner's declaration."""
    return int(np.asarray(h).sum(axis=1).min())


def dsat_paced(cutoff=None, **kw) -> Method:
    return lambda h, eps, rng: dyn.dsat(h, eps, cutoff, rng, **{"cardinality": public_n(h), **kw})


def dsat_text(cutoff=None, **kw) -> Method:
    return lambda h, eps, rng: dyn.dsat(h, eps, cutoff, rng, variant="text",
                                        **{"cardinality": public_n(h), **kw})


def dsft(threshold: float, cutoff=None, **kw) -> Method:
    return lambda h, eps, rng: dyn.dsft(h, eps, cutoff, threshold, rng,
                                        **{"cardinality": public_n(h), **kw})


def fixed(cutoff=None) -> Method:
    return lambda h, eps, rng: dyn.fixed_sampling_release(h, eps, cutoff, rng)


def baseline() -> Method:
    return lambda h, eps, rng: dyn.uniform_budget_release(h, eps, rng)
