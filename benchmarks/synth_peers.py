"""Today's peers: AIM and MST (OpenDP's ``mbi`` extra) next to DPCopula.

The text compares DPCopula with the histogram methods of 2014 (Privelet+, PSD, FP, P-HP);
the specification asks for today's marginal-based synthesizers as well: MST (McKenna, Miklau,
Sheldon 2021) and AIM (McKenna, Mullins, Sheldon, Miklau 2022), both through
:func:`dpwidgets.engine.synth.peer_synth` (OpenDP ``contingency_table`` + Private-PGM, pure
epsilon-DP, add/remove-one-row neighbours, every key public). They run on the census-shaped
tables of Fig. 3.6 (US 100,000 x 4 with s = 50, Brazil 188,846 x 8 with s = 10) next to
DPCopula (the engine's defaults, DAWA margins; and exactly as the text, EFPA margins) and
independent DAWA margins, on the same
1000 random range-count queries per run.

The census-shaped and Gaussian tables are drawn from (or close to) a Gaussian copula,
DPCopula's own model. Two tables are not:

- ``randhie``: a real public table, the RAND Health Insurance Experiment data that
  ``statsmodels`` ships (20,190 x 10, coded on public grids by
  :func:`dpwidgets.families.synth.standins.load_randhie_table`): count-valued and heaped attributes,
  three mutually exclusive health dummies and plan cells the experiment's design rules out;
- ``interaction``: :func:`dpwidgets.families.synth.standins.interaction_table` (50,000 x 8, data
  seed 0): an inequality (tenure <= age), a nominal nesting (district in region), a
  non-monotone relation (income an inverted U in age) and a three-way XOR between pairwise
  independent binaries.

Besides the range-query errors every release is scored on what a copula cannot hold: the
mean total variation distance of all 2-way and all 3-way marginals (each attribute cut into
at most 8 equal-width bins of its public domain, so a 3-way marginal has at most 512 cells)
and the share of synthetic rows in combinations the table declares impossible (structural
zeros; for the census-shaped tables the rules their generators build in: no income, hours
or occupation for children, education capped by age). A non-private reference row, the real
table resampled with replacement, gives the sampling floor of every metric.

``opendp[mbi]`` (JAX, polars, pyarrow) is an optional extra, not installed in the project's
environment. Without it this module writes ``synth_peers.md`` saying so (re-rendering the
tables of the last run from ``synth_peers.csv`` if that file exists) and exits 0. The
committed results were produced in a separate environment with the extra installed::

    PYTHONPATH=. /path/to/venv-with-opendp-mbi/bin/python -m benchmarks.synth_peers

The peers are slow on these domains (MST ~0.5-2 min per release on 2 cores, AIM up to
several minutes: Private-PGM fits cliques of up to 10^6 cells), hence MST only by default,
and not reproducible from a seed (OpenDP draws its noise from its own generator, ``mbi``
samples from NumPy's global state). AIM under pure DP can fail
inside OpenDP 0.16's noise calibration (OpenDP issue #2790) and MST or AIM can fail on a
floating-point budget split (issue #2789); a failure is recorded, not hidden.

Run from the repository root::

    python -m benchmarks.synth_peers            # MST on every table but the 2-D Gaussian
                                                # at eps = 1 (~3-6 min)
    python -m benchmarks.synth_peers --full     # + AIM, eps = 0.1, the 2-D Gaussian
    python -m benchmarks.synth_peers --quick    # 20,000 x 3 attributes of 30 values
    python -m benchmarks.synth_peers --full --tables randhie,interaction   # some tables

The committed results: ``--full --runs 3``.

Writes ``benchmarks/results/synth_peers.{csv,md}`` and ``.html`` when Bokeh is importable
(otherwise run again with the project's environment: it re-renders from the csv).
"""

from __future__ import annotations

import datetime
import itertools
import os
import platform
import re
import sys
import time
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.synth_common import (
    DATA_SEED,
    LABELS,
    TEXT_QUERIES,
    QuerySet,
    census_sanity_bound,
    census_table,
    fmt,
    gaussian_table,
    md_table,
    paired_z,
    parser,
    release,
    rng_for,
    timed,
)
from dpwidgets._progress import progress
from dpwidgets.engine.synth import dependence_comparison, marginal_comparison, peer_synth
from dpwidgets.families.synth.standins import (
    CodedTable,
    impossible_rows,
    interaction_table,
    load_randhie_table,
)

NAME = "synth_peers"
PEERS = ("mst", "aim")
OURS = ("dpcopula", "dpcopula-text", "independent")
RESAMPLE = "real-resample"
TABLES = ("us", "brazil", "randhie", "interaction")
FULL_TABLES = ("us", "brazil", "gaussian-2d", "randhie", "interaction")
#: Tables whose dependence is not a Gaussian copula's.
NON_GAUSSIAN = ("randhie", "interaction")
#: Marginals are compared on at most this many equal-width bins of each public domain.
MARGINAL_BINS = 8
EPSILONS = (1.0,)
FULL_EPSILONS = (0.1, 1.0)
RUNS = 1
KENDALL_ROWS = 20_000
INSTALL = "pip install 'opendp[mbi]'"


def peers_available() -> tuple[bool, dict[str, str]]:
    """Whether ``opendp[mbi]`` imports, and the versions found."""
    from importlib import metadata

    try:
        import mbi  # noqa: F401
        import opendp  # noqa: F401
        import polars  # noqa: F401
    except ImportError:
        return False, {}
    return True, {p: metadata.version(p) for p in ("opendp", "mbi", "jax", "polars")}


def _opendp_reason(exc: BaseException) -> str:
    """The innermost OpenDP message of a failed peer release (its chained exception)."""
    found = re.findall(r'(?:FailedFunction|MakeMeasurement|MakeTransformation)\("([^"]*)"\)',
                       str(exc.__cause__ or exc))
    return found[-1] if found else str(exc).split(";")[0]


LABELS = {**LABELS, RESAMPLE: "(not private) the real table resampled: the sampling floor"}


def _census_zeros(name: str, table: CodedTable) -> tuple:
    """The structural zeros :func:`~dpwidgets.families.synth.standins.us_census_like` and
    :func:`~dpwidgets.families.synth.standins.brazil_census_like` build in, as rules."""
    sizes = table.domain_sizes
    age = np.arange(sizes["age"])[:, None]

    def nothing_below(adult: int, column: str) -> tuple:  # children have code 0 only
        codes = np.arange(sizes[column])[None, :]
        return ("age", column), (age >= adult) | (codes == 0)

    if name == "us":  # under-16s: income 0 and occupation 0 ("none"); adults never "none"
        occupation = np.arange(sizes["occupation"])[None, :]
        return (nothing_below(16, "income"),
                (("age", "occupation"), (age < 16) == (occupation == 0)))
    if name == "brazil":  # under-14s: 0 hours, 0 income; education capped by age
        education = np.arange(sizes["education"])[None, :]
        return (nothing_below(14, "hours_worked"), nothing_below(14, "income"),
                (("age", "education"), education <= np.clip((age - 4) * 8, 0, 139)))
    return ()


@cache
def _table(name: str) -> tuple[CodedTable, float, tuple]:
    """``(table, sanity bound s, structural-zero rules)`` of a table name."""
    if name == "gaussian-2d":
        return gaussian_table(2), 1.0, ()
    if name == "gaussian-3d-small":  # the smoke run's: Private-PGM is fast on 30^3 cells
        return gaussian_table(3, n=20_000, domain=30), 1.0, ()
    if name in NON_GAUSSIAN:  # s = 0.05% of n, the US table's rule
        table = (load_randhie_table() if name == "randhie"
                 else interaction_table(rng=np.random.default_rng(DATA_SEED)))
        return table, 0.0005 * table.n, tuple(table.details["structural_zeros"])
    table = census_table(name)
    return table, census_sanity_bound(name, table), _census_zeros(name, table)


def _coarse(table: CodedTable, frame: pd.DataFrame) -> np.ndarray:
    """Codes cut into at most :data:`MARGINAL_BINS` equal-width bins of each public domain."""
    widths = [-(-size // MARGINAL_BINS) for size in table.domain_sizes.values()]
    return np.stack([frame[c].to_numpy() // w for c, w in zip(frame.columns, widths,
                                                                strict=True)], axis=1)


def marginal_tvds(table: CodedTable, synthetic: pd.DataFrame) -> dict[str, float]:
    """Mean TVD of all 2-way and all 3-way marginals (on :func:`_coarse` codes) and the
    largest 3-way TVD: dependence beyond pairs (the XOR) shows in the 3-way figures only."""
    real, syn = _coarse(table, table.frame), _coarse(table, synthetic)
    bins = np.maximum(real.max(axis=0), syn.max(axis=0)) + 1
    out = {}
    for order in (2, 3):
        tvds = []
        for cols in itertools.combinations(range(real.shape[1]), order):
            size = int(np.prod(bins[list(cols)]))
            p, q = (np.bincount(np.ravel_multi_index(x[:, cols].T, bins[list(cols)]),
                                minlength=size) / max(len(x), 1) for x in (real, syn))
            tvds.append(0.5 * float(np.abs(p - q).sum()))
        out[f"tvd_{order}way"] = float(np.mean(tvds)) if tvds else float("nan")
        if order == 3:
            out["tvd_3way_max"] = float(np.max(tvds)) if tvds else float("nan")
    triple = table.details.get("interaction")
    out["tvd_interaction"] = float("nan")
    if triple:  # the XOR triple: binary attributes, not coarsened
        p, q = (x.value_counts(normalize=True) for x in (table.frame[list(triple)],
                                                          synthetic[list(triple)]))
        p, q = p.align(q, fill_value=0.0)
        out["tvd_interaction"] = 0.5 * float(np.abs(p - q).sum())
    return out


def zero_shares(synthetic: pd.DataFrame, rules) -> dict[str, float]:
    """Share of synthetic rows in a declared-impossible combination: under any rule
    (``impossible_share``) and under each (``impossible:<columns>``)."""
    if not rules:
        return {"impossible_share": float("nan")}
    out = {"impossible_share": float(impossible_rows(synthetic, rules).mean())}
    for columns, allowed in rules:
        share = impossible_rows(synthetic, [(columns, allowed)]).mean()
        out["impossible:" + ",".join(columns)] = float(share)
    return out


def _resample(table: CodedTable, rng: np.random.Generator):
    """The real table resampled with replacement (``n`` rows): not private, the floor."""
    from types import SimpleNamespace

    rows = table.frame.iloc[rng.integers(0, table.n, table.n)].reset_index(drop=True)
    return SimpleNamespace(data=rows, n_rows=table.n)


def run(runs: int, n_queries: int, seed: int, epsilons, tables, peers,
        versions: dict[str, str]) -> pd.DataFrame:
    rows = []
    for name in progress(tables, desc="synth_peers"):
        table, s, zeros = _table(name)
        for r in range(runs):
            qs = QuerySet.draw(table, n_queries, rng_for(seed, "peers", name, "queries", r))
            for eps in epsilons:
                for method in (*OURS, *peers, RESAMPLE):
                    rng = rng_for(seed, "peers", name, eps, r)  # common random numbers
                    row = {"table": name, "n": table.n, "m": table.frame.shape[1],
                           "sanity_bound": s, "epsilon": eps, "method": method, "run": r,
                           "queries": n_queries, "seed": seed, "load1": os.getloadavg()[0],
                           **versions}
                    start = time.perf_counter()
                    try:
                        if method == RESAMPLE:
                            res = _resample(table, rng)
                        elif method in PEERS:
                            res = peer_synth(table.frame, eps, method, domains=table.domains,
                                             rng=rng)
                        else:
                            res, _ = timed(release, method, table, eps, rng)
                    except RuntimeError as exc:  # raised by OpenDP inside the release
                        row.update(status="failed: " + _opendp_reason(exc),
                                   seconds=time.perf_counter() - start)
                        rows.append(row)
                        sys.stdout.write(f"   {name} eps={eps:g} {method}: failed after "
                                         f"{row['seconds']:.0f} s\n")
                        continue
                    row["seconds"] = time.perf_counter() - start
                    dep = dependence_comparison(table.frame, res.data, max_rows=KENDALL_ROWS,
                                                rng=rng_for(seed, "kendall", name, r))
                    row.update(status="ok", synthetic_rows=res.n_rows,
                               kendall_gap=dep.mean_abs_kendall_difference,
                               margin_tvd_max=float(marginal_comparison(table.frame,
                                                                        res.data).max()),
                               **zero_shares(res.data, zeros),
                               **marginal_tvds(table, res.data), **qs.score(res.data, s))
                    rows.append(row)
                    sys.stdout.write(f"   {name} eps={eps:g} {method}: "
                                     f"{row['seconds']:.1f} s, RE {row['relative_error']:.3f}\n")
                    sys.stdout.flush()
    return pd.DataFrame(rows)


METRICS = (  # column, header, digits
    ("relative_error", "relative error", 3),
    ("median_relative_error", "median RE", 3),
    ("absolute_error", "abs. error", 3),
    ("kendall_gap", "Kendall gap", 2),
    ("margin_tvd_max", "max margin TVD", 2),
    ("tvd_2way", "2-way TVD", 2),
    ("tvd_3way", "3-way TVD", 2),
    ("tvd_3way_max", "max 3-way TVD", 2),
    ("tvd_interaction", "XOR triple TVD", 2),
    ("impossible_share", "impossible rows", 2),
)
#: What each table is, for the section headings.
DESCRIPTIONS = {
    "us": "US-census-shaped, close to a Gaussian copula (structural zeros for children)",
    "brazil": "Brazil-census-shaped, close to a Gaussian copula (structural zeros for "
              "children, education capped by age)",
    "gaussian-2d": "A Gaussian copula, DPCopula's own model",
    "gaussian-3d-small": "A Gaussian copula (smoke run)",
    "randhie": "Real: the RAND Health Insurance Experiment (statsmodels), not a Gaussian "
               "copula (heaped counts, mutually exclusive health dummies, plan cells the "
               "design rules out)",
    "interaction": "Made up: structural zeros (tenure <= age), a nominal nesting (district "
                   "in region), income an inverted U in age, and a three-way XOR",
}


def _cell(ok: pd.DataFrame, column: str, digits: int) -> str:
    if column not in ok or ok[column].isna().all():
        return "-"
    value = fmt(ok[column].mean(), digits)
    if column == "relative_error" and len(ok) > 1:
        value += f" ± {fmt(ok[column].std(), 2)}"
    return value


def results_section(rows: pd.DataFrame) -> list[str]:
    lines = []
    for name in rows.table.unique():
        sub = rows[rows.table == name]
        empty = (f"; {100 * sub.empty_queries.mean():.0f}% of the queries have true answer 0"
                 if "empty_queries" in sub and sub.empty_queries.notna().any() else "")
        lines += [f"## {name} (n = {int(sub.n.iloc[0]):,}, m = {int(sub.m.iloc[0])}, s = "
                  f"{sub.sanity_bound.iloc[0]:.3g}{empty})", "",
                  f"{DESCRIPTIONS.get(name, '')}.", ""]
        header = ["epsilon", "method", "runs ok", *(h for _, h, _ in METRICS), "time (s)"]
        body = []
        for (eps, method), g in sub.groupby(["epsilon", "method"], sort=False):
            ok = g[g.status == "ok"]
            if ok.empty:
                body.append([f"{eps:g}", LABELS[method], f"0/{len(g)}", g.status.iloc[0],
                             *["-"] * (len(METRICS) - 1), f"{g.seconds.mean():.0f}"])
                continue
            body.append([f"{eps:g}", LABELS[method], f"{len(ok)}/{len(g)}",
                         *(_cell(ok, c, d) for c, _, d in METRICS),
                         f"{ok.seconds.mean():.1f}"])
        lines += md_table(header, body) + [""]
        lines += _rules_table(sub)
    return lines


def _rules_table(sub: pd.DataFrame) -> list[str]:
    """Impossible rows by structural-zero rule (tables with more than one rule)."""
    rules = [c for c in sub.columns if c.startswith("impossible:") and sub[c].notna().any()]
    if len(rules) < 2:
        return []
    ok = sub[sub.status == "ok"]
    order = {m: i for i, m in enumerate((*OURS, *PEERS, RESAMPLE))}
    ok = ok.sort_values(["epsilon", "method"], key=lambda c: c.map(order) if c.name ==
                        "method" else c, kind="stable")
    body = []
    for (eps, method), g in ok.groupby(["epsilon", "method"], sort=False):
        body.append([f"{eps:g}", LABELS[method].split(" (")[0]]
                    + [fmt(g[c].mean(), 2) for c in rules])
    header = ["epsilon", "method"] + [f"impossible ({c.split(':', 1)[1]})" for c in rules]
    return ["Impossible rows by rule (share of synthetic rows):", "",
            *md_table(header, body), ""]


def winners(rows: pd.DataFrame) -> pd.DataFrame:
    """Per table and epsilon: the private method with the lowest mean of each metric (over
    its successful runs; a method that failed in some runs competes on the others)."""
    ok = rows[(rows.status == "ok") & (rows.method != RESAMPLE)]
    out = []
    for (name, eps), sub in ok.groupby(["table", "epsilon"], sort=False):
        means = sub.groupby("method", sort=False).mean(numeric_only=True)
        entry = {"table": name, "epsilon": eps}
        for column in ("relative_error", "tvd_3way", "impossible_share"):
            if column in means and means[column].notna().any():
                best = means[column].idxmin()
                second = means[column].drop(best).min()
                entry[column] = (best, float(means.at[best, column]), float(second))
        out.append(entry)
    return pd.DataFrame(out)


def winners_section(rows: pd.DataFrame) -> list[str]:
    table = winners(rows)
    if table.empty:
        return []
    header = ["table", "epsilon", "lowest relative error", "lowest mean 3-way TVD",
              "fewest impossible rows"]
    body = []
    for _, r in table.iterrows():
        cells = []
        for column in ("relative_error", "tvd_3way", "impossible_share"):
            value = r.get(column)
            if not isinstance(value, tuple):
                cells.append("-")
                continue
            method, best, second = value
            short = LABELS[method].split(" (")[0]
            cells.append(f"{short}: {fmt(best)} (next {fmt(second)})")
        body.append([r.table, f"{r.epsilon:g}", *cells])
    return ["## Where each method wins", "",
            "Mean over the runs that succeeded; 'next' is the runner-up's mean (the "
            "resampled real table excluded).", "", *md_table(header, body), ""]


def _pair_noise_scale(m: int, n: float, epsilon: float, k: float = 8.0) -> float:
    """Laplace scale of each DP Kendall's tau of an unpartitioned DPCopula release with tau on
    all ``n`` rows: ``C(m, 2) (4 / n) / eps2``, ``eps2 = epsilon / (k + 1)``."""
    return m * (m - 1) / 2 * (4.0 / n) / (epsilon / (k + 1))


def narrative(rows: pd.DataFrame) -> str:
    """The summary: which method wins where, and why. Every figure is read from ``rows``
    (comparisons with the paired z of the per-run differences, :func:`paired_z`); a paragraph
    whose tables or methods are missing (or failed) is left out."""
    ok = rows[rows.status == "ok"]
    means = ok.groupby(["table", "epsilon", "method"]).mean(numeric_only=True)
    tables = set(rows.table)

    def v(table: str, eps: float, method: str, column: str, digits: int = 2) -> str:
        try:
            return fmt(float(means.at[(table, eps, method), column]), digits)
        except KeyError:
            return "-"

    def has(table: str, eps: float, *methods: str) -> bool:
        return all((table, eps, m) in means.index for m in methods)

    def z(table: str, eps: float, a: str, b: str, column: str = "relative_error") -> str:
        sel = ok[(ok.table == table) & (ok.epsilon == eps)]
        value = paired_z(sel[sel.method == a], sel[sel.method == b], column)
        return f"z = {value:+.1f}" if np.isfinite(value) else "one run"

    def seconds(methods, names) -> str:
        sel = ok[ok.method.isin(methods) & ok.table.isin(names)].seconds
        if sel.empty:
            return "-"
        return "-".join(f"{x:.0f}" if x >= 10 else f"{x:.2g}" for x in (sel.min(),
                                                                         sel.max())) + " s"

    win = winners(rows)
    out = ["## Summary", "",
           "Paired z = mean / s.e. of the per-run differences (3 runs: |z| > 2 is the "
           "benchmarks' threshold, rough with so few runs).", ""]
    copula_like = [t for t in ("us", "brazil", "gaussian-2d") if t in tables]
    if copula_like:
        sub = win[win.table.isin(copula_like)]
        firsts = [c for col in ("relative_error", "tvd_3way") if col in sub
                  for c in sub[col] if isinstance(c, tuple)]
        every = bool(firsts) and all(c[0] == "dpcopula" for c in firsts)
        text = (f"**Tables close to a Gaussian copula ({', '.join(copula_like)}).** "
                + ("DPCopula with the engine's defaults has the lowest range-query error and "
                   "the lowest mean 3-way TVD in every setting"
                   if every else "DPCopula with the engine's defaults does not win every "
                   "setting here (see the table below)")
                + f"; a release takes {seconds(('dpcopula',), copula_like)} against "
                f"{seconds(PEERS, copula_like)} for MST and AIM (wall-clock under the load "
                "above).")
        if has("us", 1.0, "mst", "dpcopula"):
            text += (" MST, whose tree of 2-way marginals holds (age, income) and (age, "
                     "occupation), puts fewer rows in the US table's impossible cells than "
                     f"DPCopula ({v('us', 1.0, 'mst', 'impossible_share')} vs "
                     f"{v('us', 1.0, 'dpcopula', 'impossible_share')} at eps = 1) at "
                     f"{float(means.at[('us', 1.0, 'mst'), 'relative_error']) / float(means.at[('us', 1.0, 'dpcopula'), 'relative_error']):.1f}x"  # noqa: E501
                     " its range-query error.")
        out += [text, ""]
    odd = [t for t in NON_GAUSSIAN if t in tables]
    if not odd:
        return "\n".join(out)
    out += [f"**Tables that are not a Gaussian copula ({', '.join(odd)}): no method wins "
            "everywhere.**", ""]
    sub = win[win.table.isin(odd)]
    fewest = [c[0] for c in sub.get("impossible_share", []) if isinstance(c, tuple)]
    if has("interaction", 0.1, "aim", "independent") and has("interaction", 1.0, "aim"):
        aim_failed = rows[(rows.method == "aim") & (rows.status != "ok")]
        xor = means.loc["interaction"].tvd_interaction.xs(0.1).drop(RESAMPLE, errors="ignore")
        only = xor.idxmin() == "aim" and xor.drop("aim").min() > 0.3
        out.append(
            ("- *AIM is the only method that keeps the three-way XOR at eps = 0.1.*" if only
             else "- *AIM.*")
            + (" It puts the fewest rows in impossible cells in every setting of these "
               "tables." if fewest and all(m == "aim" for m in fewest) else "")
            + " On interaction its XOR-triple TVD is "
            f"{v('interaction', 0.1, 'aim', 'tvd_interaction')} / "
            f"{v('interaction', 1.0, 'aim', 'tvd_interaction')} (eps = 0.1 / 1) where "
            f"independent margins have {v('interaction', 0.1, 'independent', 'tvd_interaction')}"
            f", and {v('interaction', 0.1, 'aim', 'impossible_share')} / "
            f"{v('interaction', 1.0, 'aim', 'impossible_share')} of its rows are impossible "
            f"against {v('interaction', 0.1, 'dpcopula', 'impossible_share')} / "
            f"{v('interaction', 1.0, 'dpcopula', 'impossible_share')} for DPCopula: it "
            "measures the marginals of up to three attributes its model gets most wrong, so "
            "a triple with a zero cell or the XOR gets measured."
            + (" On the real randhie table at eps = 1 it has the lowest relative error "
               f"({v('randhie', 1.0, 'aim', 'relative_error')}; DPCopula "
               f"{v('randhie', 1.0, 'dpcopula', 'relative_error')}, "
               f"{z('randhie', 1.0, 'aim', 'dpcopula')}; independent margins "
               f"{v('randhie', 1.0, 'independent', 'relative_error')}, "
               f"{z('randhie', 1.0, 'aim', 'independent')}), mean 3-way TVD "
               f"({v('randhie', 1.0, 'aim', 'tvd_3way')} vs DPCopula's "
               f"{v('randhie', 1.0, 'dpcopula', 'tvd_3way')}, "
               f"{z('randhie', 1.0, 'aim', 'dpcopula', 'tvd_3way')}) and impossible rows "
               f"({v('randhie', 1.0, 'aim', 'impossible_share')} vs "
               f"{v('randhie', 1.0, 'dpcopula', 'impossible_share')})"
               if has("randhie", 1.0, "aim", "dpcopula", "independent") else "")
            + f". The price is time ({seconds(('aim',), odd)} per release on these tables)"
            + (", AIM failing inside OpenDP in "
               f"{len(aim_failed)} of {len(rows[rows.method == 'aim'])} releases (on "
               f"{', '.join(aim_failed.table.unique())}: OpenDP issue #2790)"
               if not aim_failed.empty else "")
            + (", and on randhie at eps = 0.1 a range-query error "
               f"({v('randhie', 0.1, 'aim', 'relative_error')}) above independent margins' "
               f"({v('randhie', 0.1, 'independent', 'relative_error')}, "
               f"{z('randhie', 0.1, 'aim', 'independent')})"
               if has("randhie", 0.1, "aim", "independent") else "") + ".")
    if has("interaction", 1.0, "dpcopula", "independent") and has("interaction", 0.1,
                                                                   "dpcopula"):
        out.append(
            "- *DPCopula keeps what its hybrid partitions by, and nothing else a copula cannot "
            "hold.* At eps = 1 on interaction the hybrid partitions by the three binaries "
            "(eps n~ / 8 = 6,250 >= 2,500), so the XOR is kept exactly (TVD "
            f"{v('interaction', 1.0, 'dpcopula', 'tvd_interaction')}) and DPCopula has the "
            f"lowest range-query error ({v('interaction', 1.0, 'dpcopula', 'relative_error')};"
            f" AIM {v('interaction', 1.0, 'aim', 'relative_error')}, "
            f"{z('interaction', 1.0, 'dpcopula', 'aim')}) and mean 3-way TVD "
            f"({v('interaction', 1.0, 'dpcopula', 'tvd_3way')}). But a Gaussian copula gives "
            "every cell some mass and sees a nesting with permuted codes as little rank "
            f"correlation: {v('interaction', 1.0, 'dpcopula', 'impossible:region,district')} "
            "of its rows are in impossible (region, district) pairs, as many as with "
            "independent margins "
            f"({v('interaction', 1.0, 'independent', 'impossible:region,district')}). At "
            "eps = 0.1 the hybrid does not partition (0.1 x 50,000 / 8 < 2,500) and the XOR "
            f"is lost (TVD {v('interaction', 0.1, 'dpcopula', 'tvd_interaction')}), as in "
            "any model built from pairs.")
    if has("randhie", 0.1, "dpcopula", "independent") and has("interaction", 0.1,
                                                               "dpcopula", "independent"):
        shape = rows.groupby("table")[["m", "n"]].first()
        rh, it = shape.loc["randhie"], shape.loc["interaction"]
        out.append(
            "- *At eps = 0.1 DPCopula is no better than independent margins on these tables, "
            "and worse in mean 3-way TVD*: relative error on randhie "
            f"{v('randhie', 0.1, 'dpcopula', 'relative_error')} vs "
            f"{v('randhie', 0.1, 'independent', 'relative_error')} "
            f"({z('randhie', 0.1, 'dpcopula', 'independent')}), on interaction "
            f"{v('interaction', 0.1, 'dpcopula', 'relative_error')} vs "
            f"{v('interaction', 0.1, 'independent', 'relative_error')} "
            f"({z('interaction', 0.1, 'dpcopula', 'independent')}); 3-way TVD "
            f"{v('randhie', 0.1, 'dpcopula', 'tvd_3way')} vs "
            f"{v('randhie', 0.1, 'independent', 'tvd_3way')} "
            f"({z('randhie', 0.1, 'dpcopula', 'independent', 'tvd_3way')}) and "
            f"{v('interaction', 0.1, 'dpcopula', 'tvd_3way')} vs "
            f"{v('interaction', 0.1, 'independent', 'tvd_3way')} "
            f"({z('interaction', 0.1, 'dpcopula', 'independent', 'tvd_3way')}). Each pair's "
            "tau gets Laplace noise of scale C(m, 2) (4 / n~) / eps2: "
            f"{_pair_noise_scale(rh.m, rh.n, 0.1):.2f} on randhie (m = {rh.m}, n = {rh.n:,}) "
            f"and {_pair_noise_scale(it.m, it.n, 0.1):.2f} on interaction (m = {it.m}, n = "
            f"{it.n:,}), so the released correlations are mostly noise (Kendall gap "
            f"{v('randhie', 0.1, 'dpcopula', 'kendall_gap')} on randhie against "
            f"{v('randhie', 0.1, 'independent', 'kendall_gap')} for independent margins), and "
            "noise in a copula is dependence the data does not have. The census-shaped "
            "tables have fewer pairs or more records per pair (US: "
            f"{_pair_noise_scale(4, 100_000, 0.1):.3f}).")
    if has("randhie", 1.0, "dpcopula", "independent"):
        out.append(
            "- *On randhie at eps = 1 the hybrid hurts:* 1 x 20,190 / 8 = 2,524 just passes "
            "the rule's 2,500, and each of the 8 partitions (by idp, physlm, hlthg) pays its "
            "own noisy margins of the 7 other attributes on ~2,500 records: relative error "
            f"{v('randhie', 1.0, 'dpcopula', 'relative_error')}, against 0.067 with "
            "`hybrid_threshold=None` (the same seeds and queries, 3 runs; measured on "
            "2026-11-26 outside this table) and "
            f"{v('randhie', 1.0, 'independent', 'relative_error')} for independent margins. "
            "The rule counts records per partition, not the margins each partition must "
            "pay for.")
    failed = rows[(rows.method == "mst") & (rows.status != "ok")]
    if not failed.empty and has("interaction", 1.0, "mst"):
        where = ", ".join(f"{t} at eps = {e:g}" for (t, e), _ in
                          failed.groupby(["table", "epsilon"], sort=False))
        out.append(
            f"- *MST failed inside OpenDP* ({where}: OpenDP issue #2789, a floating-point "
            "budget split). Where it ran on interaction (eps = 1) it keeps pairs "
            f"(impossible rows {v('interaction', 1.0, 'mst', 'impossible_share')}) but not "
            f"the XOR (TVD {v('interaction', 1.0, 'mst', 'tvd_interaction')}, no better than "
            "independence): its tree of 2-way marginals cannot see a dependence no pair "
            "shows.")
    if "randhie" in tables:
        empty = rows[rows.table == "randhie"].empty_queries.mean()
        out.append(
            f"- {100 * empty:.0f}% of randhie's random range queries (10 attributes) have true "
            "answer 0, so its relative errors mostly measure how little mass a method puts "
            "in empty boxes; its 2-/3-way TVDs and impossible rows say more about that table.")
    return "\n".join(out)


def markdown(rows: pd.DataFrame, elapsed: float | None, note: str = "",
             summary: str = "") -> str:
    first = rows.iloc[0]
    versions = ", ".join(f"{p} {first[p]}" for p in ("opendp", "mbi", "jax", "polars")
                         if p in rows.columns)
    runs = int(rows.run.max()) + 1
    tables = ", ".join(str(t) for t in rows.table.unique())
    load = ""
    if "load1" in rows and rows.load1.notna().any():
        load = (f" Machine load (1-minute load average on 2 cores, sampled before every "
                f"release): median {rows.load1.median():.1f}, range {rows.load1.min():.1f}-"
                f"{rows.load1.max():.1f}; other engineers' jobs shared the machine, so times "
                "are wall-clock times under that load.")
    lines = ["# AIM and MST (OpenDP mbi) next to DPCopula, on copula-like and other tables", ""]
    if note:
        lines += [note, ""]
    lines += [
        ("Generated by `python -m benchmarks.synth_peers"
         + ("" if first.get("mode", "default") == "default" else f" {first['mode']}")
         + f" --runs {runs}`" + (f" in {elapsed:.0f} s" if elapsed is not None else "")
         + f" on {first.generated}; tables {tables}; seed {int(first.seed)}, data seed "
         f"{DATA_SEED}; {runs} run(s) per setting, {int(first.queries)} random range-count "
         f"queries per run (the text: {TEXT_QUERIES}) shared by every method. Peers: "
         f"{versions}; Python {first.python}.{load}"),
        "",
        ("Relative error = mean over queries of |A_syn - A_act| / max(A_act, s) (Li 2017, "
         "§3.3.1; s as the text for US, Brazil and the Gaussian table, 0.05% of n for "
         "randhie and interaction). `Kendall gap` = mean |tau_syn - tau_real| over attribute "
         f"pairs ({KENDALL_ROWS:,} rows of each table); `max margin TVD` = the largest "
         "one-attribute TVD between the synthetic and the real table; `2-way TVD` and "
         "`3-way TVD` = mean TVD over all 2-way and all 3-way marginals, each attribute cut "
         f"into at most {MARGINAL_BINS} equal-width bins of its public domain, and `max "
         "3-way TVD` the worst 3-way marginal; `XOR triple TVD` = the TVD of the "
         "(night, weekend, overtime) marginal of the interaction table; `impossible rows` = share of synthetic rows in "
         "a combination the table declares impossible (0 in the real table; '-' where none "
         "is declared). Time = one whole release (seconds)."),
        "",
        "All methods are epsilon-DP for add/remove-one-record neighbours with public "
        "domains; the peers by OpenDP's own accounting. The peers' noise is not seeded "
        "(OpenDP's generator; mbi samples from NumPy's global state): their figures vary "
        "from run to run beyond what the seed controls. The row '(not private) the real "
        "table resampled' is no mechanism: n rows drawn with replacement from the real "
        "table, the error any perfect model of the distribution would still show.",
        "",
    ]
    if summary:
        lines += [summary, ""]
    lines += [
        *winners_section(rows),
        *results_section(rows),
        "No published figures: the text predates AIM and MST. A failed release is "
        "OpenDP 0.16 failing inside its own release (`peer_synth` raises RuntimeError, "
        "nothing is released); the status gives OpenDP's innermost message: "
        "\"scale (-0.5) must not be finite and non-negative\" is AIM's noise calibration "
        "under pure DP (OpenDP issue #2790, open); \"insufficient budget for query: "
        "0.00499...97 > 0.00499...96\" is a floating-point budget split in MST/AIM "
        "(OpenDP issue #2789, open).",
        "",
    ]
    return "\n".join(lines)


def build_figure(rows: pd.DataFrame):
    """Per table and epsilon, two bar panels: mean relative error and mean 3-way TVD."""
    from bokeh.layouts import gridplot
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    ok = rows[rows.status == "ok"]
    panels = []
    for (name, eps), sub in ok.groupby(["table", "epsilon"], sort=False):
        g = sub.groupby("method", sort=False).mean(numeric_only=True).reset_index()
        g["label"] = g.method.map(LABELS)
        for column, what, log in (("relative_error", "mean relative error", True),
                                  ("tvd_3way", "mean 3-way TVD", False)):
            if column not in g or g[column].isna().all():
                continue
            p = figure(y_range=list(g.label), width=560, height=280,
                       x_axis_type="log" if log else "linear",
                       title=f"{name}, eps = {eps:g}: {what}", x_axis_label=what,
                       tools="save,hover",
                       tooltips=[("method", "@label"), (what, f"@{column}"),
                                 ("time (s)", "@seconds")])
            p.hbar(y="label", right=column, left=1e-3 if log else 0, height=0.6,
                   source=ColumnDataSource(g), color="#1f77b4" if log else "#ff7f0e")
            p.title.text_font_size = "9pt"
            panels.append(p)
    return gridplot([panels[i:i + 2] for i in range(0, len(panels), 2)]) if panels else None


def write(out: Path, rows: pd.DataFrame, report: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{NAME}.md").write_text(report, encoding="utf-8")
    try:
        from bokeh.io import save
        from bokeh.resources import INLINE
    except ImportError:
        sys.stdout.write("   Bokeh not importable: no html (re-run with the project's "
                         "environment to render it from the csv)\n")
        return
    fig = build_figure(rows)
    if fig is not None:
        save(fig, out / f"{NAME}.html", resources=INLINE, title="AIM and MST vs DPCopula")


def _elapsed(rows: pd.DataFrame) -> float | None:
    """The whole run's seconds, as the csv records them (older csv files do not)."""
    return float(rows.elapsed_seconds.iloc[0]) if "elapsed_seconds" in rows else None


def main(argv: list[str] | None = None) -> pd.DataFrame | None:
    p = parser(__doc__, RUNS)
    p.add_argument("--full", action="store_true",
                   help="also AIM, eps = 0.1 and the 2-D Gaussian table")
    p.add_argument("--tables", type=lambda v: tuple(v.split(",")), default=None,
                   help=f"comma-separated subset of {','.join(FULL_TABLES)}")
    p.add_argument("--render", action="store_true",
                   help="only re-render the md and html from the csv of the last run")
    args, _ = p.parse_known_args(argv)
    if args.render:
        rows = pd.read_csv(args.out / f"{NAME}.csv")
        report = markdown(rows, _elapsed(rows), summary=narrative(rows))
        write(args.out, rows, report)
        sys.stdout.write(report + "\n")
        return rows
    if args.tables is not None and not set(args.tables) <= set(FULL_TABLES):
        p.error(f"--tables must be among {','.join(FULL_TABLES)}, got {','.join(args.tables)}")
    available, versions = peers_available()
    csv = args.out / f"{NAME}.csv"
    if not available:
        note = (f"**`opendp[mbi]` is not installed in this environment** ({sys.executable}); "
                f"nothing was run. Install it with `{INSTALL}` (it pulls in JAX, polars and "
                "pyarrow) and run this module again.")
        if csv.exists():
            rows = pd.read_csv(csv)
            note += (" The tables below are the last run's, re-rendered from "
                     f"`{csv.name}`.")
            report = markdown(rows, _elapsed(rows), note, narrative(rows))
            write(args.out, rows, report)
        else:
            args.out.mkdir(parents=True, exist_ok=True)
            report = f"# AIM and MST (OpenDP mbi) next to DPCopula\n\n{note}\n"
            (args.out / f"{NAME}.md").write_text(report, encoding="utf-8")
        sys.stdout.write(report + "\n")
        return None
    if args.quick:
        runs, n_queries, epsilons, tables, peers = 1, 200, (1.0,), ("gaussian-3d-small",), PEERS
    elif args.full:
        runs, n_queries, epsilons, tables, peers = (args.runs, args.queries, FULL_EPSILONS,
                                                    FULL_TABLES, PEERS)
    else:
        runs, n_queries, epsilons, tables, peers = (args.runs, args.queries, EPSILONS,
                                                    TABLES, ("mst",))
    if args.tables is not None and not args.quick:
        tables = args.tables
    mode = "--quick" if args.quick else "--full" if args.full else "default"
    if args.tables is not None and not args.quick:
        mode = ("" if mode == "default" else mode + " ") + "--tables " + ",".join(tables)
    versions.update(python=platform.python_version(),
                    generated=datetime.date.today().isoformat(), mode=mode)
    start = time.perf_counter()
    rows = run(runs, n_queries, args.seed, epsilons, tables, peers, versions)
    elapsed = time.perf_counter() - start
    rows["elapsed_seconds"] = elapsed
    args.out.mkdir(parents=True, exist_ok=True)
    rows.to_csv(csv, index=False)
    report = markdown(rows, elapsed, summary=narrative(rows))
    write(args.out, rows, report)
    sys.stdout.write(report + "\n")
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
