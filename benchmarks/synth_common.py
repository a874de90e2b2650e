"""Shared set-up of the DPCopula benchmarks (Li 2017, Ch. 3, §3.3, Fig. 3.4-3.10).

Not a benchmark itself (no ``main``): ``synth_parameters`` (Fig. 3.4-3.5), ``synth_census``
(Fig. 3.6), ``synth_synthetic`` (Fig. 3.7-3.9), ``synth_scalability`` (Fig. 3.10),
``synth_margin_publishers`` (the margin publishers inside DPCopula) and ``synth_peers`` (AIM
and MST) import it.

Set-up of Li 2017, §3.3.1 (Table 3.2): synthetic tables of n = 50,000 records, domain 1000 per
attribute, Gaussian dependence, Gaussian margins by default; census tables (US 100,000 x 4,
Brazil 188,846 x 8); "in each experiment run, 1000 random queries are generated and the
average relative error is computed; the final reported error is averaged over 5 runs";
relative error ``|A_noisy - A_act| / max(A_act, s)`` with ``s = 1`` (synthetic data),
``0.05% n`` (US) and 10 (Brazil); ``k = 8``.

Data: the IPUMS extracts are not shipped; :mod:`dpwidgets.families.synth.standins` generates tables
with their attributes and domain sizes (``us_census_like``, ``brazil_census_like``) and the
Gaussian-dependence tables (latent equicorrelation 0.5: the text does not state its
correlations). One fixed draw per table (``DATA_SEED``). Run ``r`` of a setting draws its
queries from ``SeedSequence([seed, figure, table, "queries", r])`` -- shared by every method
and epsilon of that run, so methods are compared on the same queries -- and every method of
the run starts its release from the same generator state ``SeedSequence([seed, figure,
table, epsilon, ..., r])`` (common random numbers: methods that release the same margins
first draw the same margin noise, so a paired comparison isolates what differs). Claims are
tested on the per-run differences (:func:`paired_z`, two standard errors).
"""

from __future__ import annotations

import argparse
import time
import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from dpwidgets.engine import synth as S
from dpwidgets.families.synth.standins import (
    CodedTable,
    brazil_census_like,
    gaussian_dependence_table,
    us_census_like,
)

RESULTS = Path(__file__).resolve().parent / "results"
SEED = 2014  # DPCopula's EDBT year
DATA_SEED = 0
TEXT_RUNS = 5  # Li 2017, §3.3.1: "averaged over 5 runs"
TEXT_QUERIES = 1000  # Li 2017, §3.3.1: "1000 random queries" per run
TEXT_N = 50_000  # Li 2017, Table 3.2
TEXT_DOMAIN = 1000  # Li 2017, Table 3.2

#: Method labels of the figures and tables.
LABELS = {
    "dpcopula": "DPCopula-Kendall (defaults: DAWA margins, tie-corrected tau)",
    "dpcopula-text": "DPCopula-Kendall as the text (EFPA margins, tau-a, its sample rule)",
    "dpcopula-efpa": "DPCopula-Kendall (EFPA margins)",
    "dpcopula-identity": "DPCopula-Kendall (identity margins)",
    "dpcopula-full-tau": "DPCopula-Kendall, tau on all rows",
    "dpcopula-mle": "DPCopula-MLE",
    "independent": "Independent margins (defaults: DAWA)",
    "independent-text": "Independent margins (EFPA, the text's publisher)",
    "independent-identity": "Independent margins (identity)",
    "independent-dawa": "Independent margins (DAWA)",
    "lm-full": "LM on the full-domain histogram",
    "dawa-full": "DAWA on the full-domain histogram",
    "dpcopula-floor": "DPCopula at eps = 10^4, tau on all rows (the model's floor)",
    "independent-floor": "Independent margins at eps = 10^4 (floor)",
    "aim": "AIM (OpenDP mbi)",
    "mst": "MST (OpenDP mbi)",
}


def rng_for(seed: int, *key) -> np.random.Generator:
    """A generator for one (setting, run): ``key`` items are ints, floats or strings."""
    words = []
    for k in key:
        if isinstance(k, int | np.integer):
            words.append(int(k))
        else:
            words.append(zlib.crc32(str(k).encode()))
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


# ---------------------------------------------------------------------------------------------
# Tables
# ---------------------------------------------------------------------------------------------


@cache
def gaussian_table(
    m: int, margins: str = "gaussian", n: int = TEXT_N, domain: int = TEXT_DOMAIN
) -> CodedTable:
    """Li 2017's synthetic table: ``n`` records, ``m`` attributes of ``domain`` values."""
    return gaussian_dependence_table(
        n=n, m=m, domain=domain, margins=margins, rng=np.random.default_rng(DATA_SEED)
    )


@cache
def census_table(name: str, n: int | None = None) -> CodedTable:
    """``"us"`` (100,000 x 4) or ``"brazil"`` (188,846 x 8), or ``n`` records of that shape."""
    rng = np.random.default_rng(DATA_SEED)
    if name == "us":
        return us_census_like(rng=rng) if n is None else us_census_like(n, rng)
    if name == "brazil":
        return brazil_census_like(rng=rng) if n is None else brazil_census_like(n, rng)
    raise ValueError(f"unknown census table {name!r}")


def census_sanity_bound(name: str, table: CodedTable) -> float:
    """Li 2017, §3.3.1: ``s = 0.05%`` of the cardinality for the US table, 10 for Brazil."""
    return 0.0005 * table.n if name == "us" else 10.0


# ---------------------------------------------------------------------------------------------
# Releases
# ---------------------------------------------------------------------------------------------


def release(method: str, table: CodedTable, epsilon: float, rng: np.random.Generator,
            **options) -> S.SynthResult:
    """One release of ``method`` (a key of :data:`LABELS`, peers excluded) on ``table``.

    ``"dpcopula"`` runs the engine's defaults (Kendall, tie-corrected tau on all rows the DP
    count allows, k = 8, hybrid for attributes with < 10 values when eps n~ / (P m_c) >= 500,
    DAWA margins, ``project`` fit); ``"dpcopula-text"`` is the text's DPCopula-Kendall (EFPA margins, tau-a,
    ``t = 50 m (m-1) / eps2``); ``"independent-text"`` uses the text's EFPA;
    ``"dpcopula-<publisher>"`` / ``"independent-<publisher>"`` swap the margin publisher;
    ``options`` override anything else.
    """
    frame, domains = table.frame, table.domains
    if method == "dpcopula-text":
        options = {"publisher": "efpa", "tie_correction": False, "sample_size": "text",
                   **options}
        method = "dpcopula"
    elif method == "independent-text":
        options = {"publisher": "efpa", **options}
        method = "independent"
    if method == "dpcopula-full-tau":
        # A public sample-size rule as large as the table: t = min(n, DP count of n).
        return S.dpcopula(frame, epsilon, domains=domains, sample_size=table.n, rng=rng,
                          **options)
    if method == "dpcopula-mle":
        return S.dpcopula(frame, epsilon, method="mle", domains=domains, rng=rng, **options)
    if method == "dpcopula-floor":  # with a huge epsilon: what the model itself can do
        return S.dpcopula(frame, epsilon, domains=domains, publisher="identity",
                          sample_size=table.n, rng=rng, **options)
    if method == "independent-floor":
        return S.independent_synth(frame, epsilon, domains, "identity", rng=rng, **options)
    if method == "lm-full":
        return S.laplace_histogram_synth(frame, epsilon, domains, rng, **options)
    if method == "dawa-full":
        return S.laplace_histogram_synth(frame, epsilon, domains, rng, publisher="dawa",
                                         **options)
    family, _, publisher = method.partition("-")
    if publisher:
        options = {"publisher": publisher, **options}
    if family == "dpcopula":
        return S.dpcopula(frame, epsilon, domains=domains, rng=rng, **options)
    if family == "independent":
        return S.independent_synth(frame, epsilon, domains, rng=rng, **options)
    raise ValueError(f"unknown method {method!r}")


def timed(function: Callable, *args, **kwargs) -> tuple:
    """``(function(*args, **kwargs), wall-clock seconds)``."""
    start = time.perf_counter()
    out = function(*args, **kwargs)
    return out, time.perf_counter() - start


# ---------------------------------------------------------------------------------------------
# Queries and errors
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class QuerySet:
    """Random range-count queries and their true answers on the confidential table."""

    queries: S.RangeQueries
    true: np.ndarray

    @classmethod
    def draw(cls, table: CodedTable, n_queries: int, rng: np.random.Generator,
             width: float | None = None) -> QuerySet:
        queries = S.random_range_queries(table.domains, n_queries, rng, width=width)
        return cls(queries, queries.answer(table.frame))

    def score(self, synthetic: pd.DataFrame, sanity_bound: float) -> dict[str, float]:
        """Mean relative error (the text's figure), its median, the mean absolute error, and
        the share of queries whose true answer is 0 and the mean true answer.

        The formula of :func:`dpwidgets.engine.synth.range_count_error`
        (``|A_syn - A_act| / max(A_act, s)``, raw synthetic counts), with the true answers
        computed once per query set instead of once per release.
        """
        syn = self.queries.answer(synthetic)
        absolute = np.abs(syn - self.true).astype(float)
        relative = absolute / np.maximum(self.true, sanity_bound)
        return {
            "relative_error": float(relative.mean()),
            "median_relative_error": float(np.median(relative)),
            "absolute_error": float(absolute.mean()),
            "empty_queries": float(np.mean(self.true == 0)),
            "mean_true_answer": float(self.true.mean()),
        }


def correlation_error(result: S.SynthResult, table: CodedTable) -> float:
    """Mean ``|P~_jk - P_jk|`` over pairs between the released DP correlation matrix and the
    table's latent one (Gaussian-dependence tables only; NaN when there is no matrix)."""
    latent = table.details.get("correlation")
    if result.correlation is None or latent is None:
        return float("nan")
    rows, cols = np.triu_indices(latent.shape[0], 1)
    return float(np.abs(result.correlation[rows, cols] - latent[rows, cols]).mean())


def margin_tvd(result: S.SynthResult, table: CodedTable) -> dict[str, float]:
    """TVD between each *released* DP margin and the true margin (before sampling)."""
    out = {}
    for col, size in table.domain_sizes.items():
        true = np.bincount(table.frame[col].to_numpy(), minlength=size) / table.n
        out[col] = 0.5 * float(np.abs(np.asarray(result.margins[col]) - true).sum())
    return out


# ---------------------------------------------------------------------------------------------
# Summaries and output
# ---------------------------------------------------------------------------------------------


def summarise(rows: pd.DataFrame, keys: list[str], values: list[str]) -> pd.DataFrame:
    """Mean and s.d. over runs of every column in ``values`` per ``keys`` (+ run count)."""
    grouped = rows.groupby(keys, sort=False, dropna=False)
    out = grouped[values].agg(["mean", "std"])
    out.columns = [f"{v}_{stat}" if stat == "std" else v for v, stat in out.columns]
    out = out.rename(columns={f"{v}_std": f"{v}_sd" for v in values})
    out["runs"] = grouped.size()
    return out.reset_index()


def fmt(value: float, digits: int = 3) -> str:
    if value is None or not np.isfinite(value):
        return "-"
    return f"{value:.{digits}g}"


def md_table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def claims_table(claims: list[tuple[str, str, str, str]]) -> list[str]:
    """``(claim, setting, ours, verdict)`` rows."""
    return md_table(["claim (Li 2017)", "setting", "ours", "verdict"], [list(c) for c in claims])


def verdict(ok: bool | None) -> str:
    return "n/a" if ok is None else ("holds" if ok else "does not hold")


def paired_z(a: pd.DataFrame, b: pd.DataFrame, value: str = "relative_error") -> float:
    """``mean(d) / s.e.(d)`` of the per-run differences ``d = a - b`` of ``value``.

    ``a`` and ``b`` are the per-run rows of two methods in one setting; runs are paired by
    their ``run`` column (same queries and, through common random numbers, the same noise
    draws where the methods share a step), so the paired test is the right one. NaN with
    fewer than two runs.
    """
    merged = a[["run", value]].merge(b[["run", value]], on="run", suffixes=("_a", "_b"))
    d = (merged[f"{value}_a"] - merged[f"{value}_b"]).to_numpy(dtype=float)
    if d.size < 2:
        return float("nan")
    se = d.std(ddof=1) / np.sqrt(d.size)
    return float(d.mean() / se) if se > 0 else float(np.sign(d.mean()) * np.inf)


def unpaired_z(a: pd.DataFrame, b: pd.DataFrame, value: str = "relative_error") -> float:
    """Welch's ``(mean_a - mean_b) / s.e.`` for runs that are not paired (different tables)."""
    x, y = a[value].to_numpy(dtype=float), b[value].to_numpy(dtype=float)
    if x.size < 2 or y.size < 2:
        return float("nan")
    se = np.sqrt(x.var(ddof=1) / x.size + y.var(ddof=1) / y.size)
    diff = x.mean() - y.mean()
    return float(diff / se) if se > 0 else float(np.sign(diff) * np.inf)


def lower_verdict(z: float) -> str:
    """Verdict on "a is lower than b" from ``z = paired_z(a, b)``: two standard errors."""
    if not np.isfinite(z):
        return "n/a (one run)"
    if z < -2:
        return "holds"
    if z > 2:
        return "does not hold (significantly the other way)"
    return f"not significant (z = {z:+.1f})"


def parser(doc: str, runs: int, queries: int = TEXT_QUERIES) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--runs", type=int, default=runs,
                   help=f"runs per setting (default {runs}; the text: {TEXT_RUNS})")
    p.add_argument("--queries", type=int, default=queries,
                   help=f"random queries per run (default {queries}; the text: {TEXT_QUERIES})")
    p.add_argument("--quick", action="store_true", help="smoke run (< 1 min)")
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    return p


def write_outputs(out: Path, name: str, table: pd.DataFrame, report: str, figure,
                  title: str) -> None:
    """``<name>.csv``, ``<name>.md`` and (if ``figure``) a self-contained ``<name>.html``."""
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"{name}.csv", index=False)
    (out / f"{name}.md").write_text(report, encoding="utf-8")
    if figure is not None:
        from bokeh.io import save
        from bokeh.resources import INLINE

        save(figure, out / f"{name}.html", resources=INLINE, title=title)


def line_panel(data: pd.DataFrame, x: str, y: str, group: str, title: str, *,
               x_label: str, y_label: str, x_log: bool = True, y_log: bool = True,
               labels: Mapping[str, str] | None = None, width: int = 460, height: int = 330):
    """One Bokeh panel: ``y`` against ``x``, one line per value of ``group`` (with ±1 s.d.
    whiskers when a ``<y>_sd`` column exists)."""
    from bokeh.models import FixedTicker, PrintfTickFormatter, Whisker
    from bokeh.palettes import Category10_10
    from bokeh.plotting import ColumnDataSource, figure

    n_lines = data[group].nunique()
    p = figure(width=width, height=height + 16 * n_lines, title=title,
               x_axis_type="log" if x_log else "linear",
               y_axis_type="log" if y_log else "linear",
               x_axis_label=x_label, y_axis_label=y_label,
               tools="pan,box_zoom,wheel_zoom,reset,save,hover")
    p.title.text_font_size = "9pt"
    for i, (key, sub) in enumerate(data.groupby(group, sort=False)):
        sub = sub.sort_values(x)
        color = Category10_10[i % 10]
        label = (labels or {}).get(key, str(key))
        source = {"x": sub[x].to_numpy(dtype=float), "y": sub[y].to_numpy(dtype=float)}
        sd = f"{y}_sd"
        if sd in sub:
            spread = np.nan_to_num(sub[sd].to_numpy(dtype=float))
            lower = source["y"] - spread
            source["lower"] = np.where(lower > 0, lower, source["y"]) if y_log else lower
            source["upper"] = source["y"] + spread
        cds = ColumnDataSource(source)
        p.line("x", "y", source=cds, color=color, line_width=2, legend_label=label)
        p.scatter("x", "y", source=cds, color=color, size=5)
        if "lower" in source:
            p.add_layout(Whisker(source=cds, base="x", lower="lower", upper="upper",
                                 line_color=color, line_alpha=0.6))
    xs = np.unique(data[x].to_numpy(dtype=float))
    if xs.size <= 12:
        p.xaxis.ticker = FixedTicker(ticks=xs.tolist())
        p.xaxis.formatter = PrintfTickFormatter(format="%g")
    legend = p.legend[0]
    legend.label_text_font_size = "7pt"
    legend.click_policy = "hide"
    legend.spacing = 0
    legend.padding = 2
    p.add_layout(legend, "below")  # below the plot: never over the lines
    return p
