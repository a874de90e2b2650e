"""Reproduce Li 2017, Fig. 3.6: relative error vs epsilon on the census tables (US and Brazil).

Set-up (Li 2017, §3.3.1, §3.3.3): the US extract (100,000 records: age 96, income 1020,
occupation 511, gender 2) with sanity bound s = 0.05% n = 50, and the Brazil extract (188,846
records, 8 attributes: age 95, gender, disability, nativity (binary), years residing 31,
education 140, hours worked 95, income 586) with s = 10; DPCopula-hybrid on top of
DPCopula-Kendall (both tables have binary attributes), k = 8; 1000 random range-count queries
per run over all attributes, averaged over 5 runs. Published: "DPCopula outperforms all the
other methods and their performance gap expands as the privacy budget decreases ... the
accuracy of DPCopula is robust against various epsilon values".

The IPUMS extracts are not shipped: ``us_census_like`` / ``brazil_census_like`` generate
tables with the same attributes and domain sizes and made-up dependence (one fixed draw).
The text's peers (Privelet+, PSD, FP, P-HP) are not implemented and the full-domain
histogram does not fit (10^8 and 10^13 cells); the baseline is the independent-margins
synthesizer, with the same margin publisher as the DPCopula it is compared with: DAWA (the
engine's default, the most accurate margins on these tables, see ``synth_margin_publishers``)
and EFPA (the text's), plus independent Laplace margins. AIM and MST: ``synth_peers``.

Run from the repository root::

    python -m benchmarks.synth_census            # ~4 min on 2 cores
    python -m benchmarks.synth_census --quick    # smoke run (< 1 min)

Writes ``benchmarks/results/synth_census.{csv,md,html}``.
"""

from __future__ import annotations

import sys
import time

import pandas as pd

from benchmarks.synth_common import (
    DATA_SEED,
    LABELS,
    TEXT_QUERIES,
    TEXT_RUNS,
    QuerySet,
    census_sanity_bound,
    census_table,
    claims_table,
    fmt,
    line_panel,
    md_table,
    paired_z,
    parser,
    release,
    rng_for,
    summarise,
    timed,
    verdict,
    write_outputs,
)
from dpwidgets._progress import progress
from dpwidgets.engine.synth import dependence_comparison

NAME = "synth_census"
TABLES = ("us", "brazil")
EPSILONS = (0.05, 0.1, 0.5, 1.0)
METHODS = ("dpcopula", "independent", "dpcopula-text", "independent-text",
           "independent-identity")
PAIRS = (("dpcopula", "independent"), ("dpcopula-text", "independent-text"),
         ("dpcopula", "independent-identity"))
KENDALL_ROWS = 20_000  # rows of each table the Kendall matrices are computed on
VALUES = ["relative_error", "median_relative_error", "absolute_error", "kendall_gap", "seconds"]


def run(runs: int, n_queries: int, seed: int, epsilons, tables) -> pd.DataFrame:
    rows = []
    for name in progress(tables, desc="synth_census"):
        table = census_table(name)
        s = census_sanity_bound(name, table)
        for r in range(runs):
            qs = QuerySet.draw(table, n_queries, rng_for(seed, "fig3.6", name, "queries", r))
            for eps in epsilons:
                for method in METHODS:
                    rng = rng_for(seed, "fig3.6", name, eps, r)  # common random numbers
                    res, seconds = timed(release, method, table, eps, rng)
                    dep = dependence_comparison(table.frame, res.data, max_rows=KENDALL_ROWS,
                                                rng=rng_for(seed, "kendall", name, r))
                    rows.append({"figure": "3.6", "table": name, "n": table.n,
                                 "m": table.frame.shape[1], "sanity_bound": s, "epsilon": eps,
                                 "method": method, "run": r, "seconds": seconds,
                                 "synthetic_rows": res.n_rows,
                                 "kendall_gap": dep.mean_abs_kendall_difference,
                                 **qs.score(res.data, s)})
    return pd.DataFrame(rows)


def claims(rows: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    out = []
    for name, sub in rows.groupby("table", sort=False):
        mean = sub.groupby(["method", "epsilon"]).relative_error.mean()
        for cop, ind in PAIRS:
            zs = {eps: paired_z(g[g.method == cop], g[g.method == ind])
                  for eps, g in sub.groupby("epsilon")}
            ratio = (mean[ind] / mean[cop]).sort_index()
            setting = f"{name}, {LABELS[cop]} vs {LABELS[ind]}"
            wins = sum(z < -2 for z in zs.values())
            worse = sum(z > 2 for z in zs.values())
            out.append(("DPCopula outperforms the other methods (Fig. 3.6)", setting,
                        "baseline / DPCopula RE = " + ", ".join(
                            f"{fmt(v, 2)} (eps {e:g}, z {zs[e]:+.1f})" for e, v in ratio.items()),
                        "holds" if wins == len(zs) else
                        f"does not hold (DPCopula significantly worse at {worse}/{len(zs)})"
                        if worse else f"partly: significant at {wins}/{len(zs)}"))
            out.append(("... and the gap expands as epsilon decreases (Fig. 3.6)", setting,
                        f"ratio at the smallest eps {fmt(ratio.iloc[0], 2)} vs at the largest "
                        f"{fmt(ratio.iloc[-1], 2)}",
                        verdict(bool(ratio.iloc[0] > ratio.iloc[-1]))))
        for cop in dict.fromkeys(cop for cop, _ in PAIRS):
            a = mean[cop].sort_index()
            out.append(("DPCopula's accuracy is robust against epsilon (Fig. 3.6)",
                        f"{name}, {LABELS[cop]}",
                        f"RE {fmt(a.iloc[0])} at eps {a.index[0]:g} vs {fmt(a.iloc[-1])} at "
                        f"eps {a.index[-1]:g} ({a.iloc[0] / a.iloc[-1]:.1f}x; robust = < 2x "
                        f"over the {a.index[-1] / a.index[0]:.0f}x range of eps)",
                        verdict(bool(a.iloc[0] / a.iloc[-1] < 2.0))))
    return out


def markdown(rows: pd.DataFrame, summary: pd.DataFrame, runs: int, n_queries: int,
             seed: int, elapsed: float) -> str:
    lines = [
        "# DPCopula on the census tables: relative error vs epsilon (Li 2017, Fig. 3.6)",
        "",
        f"Generated by `python -m benchmarks.{NAME}` in {elapsed:.0f} s; seed {seed}, data "
        f"seed {DATA_SEED}; {runs} run(s) per setting, {n_queries} random range-count queries "
        f"per run over all attributes (the text: {TEXT_RUNS} runs of {TEXT_QUERIES}), shared "
        "by the methods and epsilons of a run. Relative error = mean over queries of |A_syn - "
        "A_act| / max(A_act, s) with s = 50 (US, 0.05% of n) and 10 (Brazil) as in Li 2017, "
        "§3.3.1; `± s.d.` over runs. DPCopula = the engine's defaults: Kendall, k = 8, "
        "hybrid on the binary attributes (US: 2 partitions by gender; Brazil: 8 by gender x "
        "disability x nativity), project fit (Norm-Sub), DAWA margins, tie-corrected tau on >= 20,000 rows; and "
        "DPCopula-Kendall exactly as the text (EFPA margins, tau-a on 50 m(m-1)/eps2 rows). "
        "Tables: census-shaped stand-ins of the IPUMS extracts (`us_census_like`, "
        "`brazil_census_like`; same attributes and domain sizes, made-up dependence). "
        f"`Kendall gap` = mean |tau_syn - tau_real| over attribute pairs ({KENDALL_ROWS:,} "
        "rows of each table).",
        "",
        "The published figure is a plot without numbers in the text we have; the claims of "
        "§3.3.3 are checked below. The text's peers are not implemented and the full-domain "
        "histogram does not fit, so the baseline is independent margins with the same "
        "publisher, and independent Laplace (identity) margins, the plainest "
        "dependence-free release.",
        "",
        "## Claims",
        "",
        *claims_table(claims(rows)),
        "",
    ]
    eps_values = sorted(summary.epsilon.unique())
    for name in summary.table.unique():
        sub = summary[summary.table == name]
        lines += [f"## {name}: relative error (± s.d.) / Kendall gap", ""]
        header = ["method"] + [f"eps = {e:g}" for e in eps_values] + ["time (s, eps = 1)"]
        body = []
        for method in METHODS:
            g = sub[sub.method == method].set_index("epsilon")
            body.append([LABELS[method]] + [
                f"{fmt(g.at[e, 'relative_error'])} ± {fmt(g.at[e, 'relative_error_sd'], 2)} / "
                f"{fmt(g.at[e, 'kendall_gap'], 2)}" for e in eps_values]
                + [f"{g.at[1.0, 'seconds']:.2f}" if 1.0 in g.index else "-"])
        lines += md_table(header, body) + [""]
    lines += [
        "Why the text's EFPA rows are worse: EFPA (a truncated Fourier series) smooths away "
        "the spikes and sparse tails of the income and occupation margins (top-coding, the "
        "zero income of children) and rings around them; keeping every coefficient would "
        "cost sqrt(domain) times Laplace's noise, so the synthetic margins are far off and do "
        "not improve with epsilon (the margin TVDs are in `synth_margin_publishers`); DAWA's "
        "data-aware buckets keep them, hence the engine's default. Why DPCopula can lose to "
        "independent margins here: these stand-ins have structural zeros (under-16s have "
        "income 0 and occupation 0) that a Gaussian copula cannot express -- with noise "
        "negligible (eps = 10^4, identity margins) DPCopula and independent margins have the "
        "same error on the US table (0.23) -- and DPCopula pays for the dependence with "
        "1/(k+1) of the budget and, with the hybrid, with margins estimated per partition. "
        "Pairs share their margins' publisher and their "
        "noise draws (common random numbers), so a pair's difference is the dependence "
        "model's.",
        "",
    ]
    return "\n".join(lines)


def build_figure(summary: pd.DataFrame):
    from bokeh.layouts import gridplot

    panels = []
    for name in summary.table.unique():
        sub = summary[summary.table == name]
        panels.append(line_panel(sub, "epsilon", "relative_error", "method",
                                 f"Fig. 3.6: {name} census-like, relative error vs epsilon",
                                 x_label="epsilon", y_label="mean relative error",
                                 labels=LABELS))
        panels.append(line_panel(sub, "epsilon", "kendall_gap", "method",
                                 f"{name}: mean |tau_syn - tau_real|", x_label="epsilon",
                                 y_label="Kendall gap", labels=LABELS))
    return gridplot([panels[i:i + 2] for i in range(0, len(panels), 2)])


def main(argv: list[str] | None = None) -> pd.DataFrame:
    args, _ = parser(__doc__, TEXT_RUNS).parse_known_args(argv)
    if args.quick:
        runs, n_queries, epsilons = 1, 200, (0.1, 1.0)
    else:
        runs, n_queries, epsilons = args.runs, args.queries, EPSILONS
    start = time.perf_counter()
    rows = run(runs, n_queries, args.seed, epsilons, TABLES)
    elapsed = time.perf_counter() - start
    summary = summarise(rows, ["table", "method", "epsilon"], VALUES + ["synthetic_rows"])
    report = markdown(rows, summary, runs, n_queries, args.seed, elapsed)
    write_outputs(args.out, NAME, summary, report, build_figure(summary),
                  "DPCopula on census tables (Li 2017, Fig. 3.6)")
    sys.stdout.write(report + "\n")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
