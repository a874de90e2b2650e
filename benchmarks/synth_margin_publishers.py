"""Which histogram publisher should DPCopula use for its margins? (Li 2017, §3.2.1)

Li 2017, §3.2.1 computes DPCopula's marginal histograms with EFPA ("superior to other methods")
and notes that any 1-D publisher can be plugged in; §3.3.4 attributes part of Fig. 3.8 to
EFPA's behaviour ("EFPA performs better on uniform-distributed data than skewed data"). The
census tables have spiky margins (US income: top-coding and a zero spike; occupation: a
long sparse tail), which a truncated Fourier series smooths away. This benchmark puts the
engine's margin options side by side on the census-shaped tables so the default can be
chosen on evidence:

- publishers DAWA (the engine's ``dawa_dyadic``, its default), EFPA (the text's), EFPA
  with the Laplace histogram as one more candidate of its exponential mechanism, identity
  (Laplace per value) and HB, each asked for the prefix workload (a margin is used through
  its CDF);
- ``margin_fit`` ``project`` (default; Norm-Sub) or ``clip`` (negatives to 0, normalise);
- the hybrid (default, partitions on the binary attributes) on or off.

Metrics: the TVD between each released DP margin and the true one (before sampling: the
cleanest view of the publisher), the range-count relative error of the synthetic table
(s = 50 US, 10 Brazil, as Li 2017, §3.3.1) and the mean |tau_syn - tau_real|. Everything else is
the engine's defaults (Kendall, k = 8).

Run from the repository root::

    python -m benchmarks.synth_margin_publishers            # ~4 min on 2 cores
    python -m benchmarks.synth_margin_publishers --quick    # smoke run (< 1 min)

Writes ``benchmarks/results/synth_margin_publishers.{csv,md,html}``.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from benchmarks.synth_common import (
    DATA_SEED,
    TEXT_RUNS,
    QuerySet,
    census_sanity_bound,
    census_table,
    fmt,
    margin_tvd,
    md_table,
    parser,
    rng_for,
    summarise,
    timed,
    write_outputs,
)
from dpwidgets._progress import progress
from dpwidgets.engine.synth import dependence_comparison, dpcopula

NAME = "synth_margin_publishers"
TABLES = ("us", "brazil")
#: "dawa" is the engine's default; "efpa" the text's; "efpa-fallback" EFPA with the Laplace
#: histogram as one more candidate of its exponential mechanism (``fallback="identity"``).
PUBLISHERS = ("dawa", "efpa", "efpa-fallback", "identity", "hb")
FITS = ("clip", "project")
EPSILONS = (0.1, 0.3, 1.0)
RUNS = 3
QUERIES = 500
KENDALL_ROWS = 20_000
#: (publisher, fit, hybrid) configurations: the full grid with the hybrid, and the hybrid
#: off for every publisher with the better fit.
CONFIGS = tuple((p, f, True) for p in PUBLISHERS for f in FITS) + tuple(
    (p, "project", False) for p in PUBLISHERS)
DEFAULT = ("dawa", "project", True)


def label(publisher: str, fit: str, hybrid: bool) -> str:
    return f"{publisher} / {fit}" + ("" if hybrid else " / no hybrid")


def run(runs: int, n_queries: int, seed: int, epsilons, tables) -> pd.DataFrame:
    rows = []
    for name in progress(tables, desc="synth_margin_publishers"):
        table = census_table(name)
        s = census_sanity_bound(name, table)
        m = table.frame.shape[1]
        for r in range(runs):
            qs = QuerySet.draw(table, n_queries, rng_for(seed, "margins", name, "queries", r))
            for eps in epsilons:
                for publisher, fit, hybrid in CONFIGS:
                    rng = rng_for(seed, "margins", name, eps, r)  # common random numbers
                    res, seconds = timed(dpcopula, table.frame, eps, domains=table.domains,
                                         publisher=publisher.removesuffix("-fallback"),
                                         publisher_options=({"fallback": "identity"}
                                                            if publisher == "efpa-fallback"
                                                            else None),
                                         margin_fit=fit,
                                         hybrid_threshold=10 if hybrid else None, rng=rng)
                    tvd = margin_tvd(res, table)
                    dep = dependence_comparison(table.frame, res.data, max_rows=KENDALL_ROWS,
                                                rng=rng_for(seed, "kendall", name, r))
                    rows.append({
                        "table": name, "epsilon": eps,
                        "margin_epsilon": res.details["margin_epsilon_each"],
                        "publisher": publisher, "fit": fit, "hybrid": hybrid,
                        "config": label(publisher, fit, hybrid), "run": r,
                        "seconds": seconds,
                        "tvd_mean": float(np.mean(list(tvd.values()))),
                        "tvd_max": float(max(tvd.values())),
                        **{f"tvd_{c}": v for c, v in tvd.items()},
                        "kendall_gap": dep.mean_abs_kendall_difference,
                        "m": m, **qs.score(res.data, s)})
    return pd.DataFrame(rows)


def recommendation(summary: pd.DataFrame) -> list[str]:
    """Rank configurations by their mean rank over (table, epsilon) on relative error."""
    ranks = summary.groupby(["table", "epsilon"]).relative_error.rank()
    mean_rank = ranks.groupby(summary.config).mean().sort_values()
    tvd_rank = summary.groupby(["table", "epsilon"]).tvd_mean.rank()
    mean_tvd_rank = tvd_rank.groupby(summary.config).mean()
    body = [[i + 1, c, f"{v:.1f}", f"{mean_tvd_rank[c]:.1f}"]
            for i, (c, v) in enumerate(mean_rank.items())]
    return md_table(["", "configuration", "mean rank, relative error",
                     "mean rank, margin TVD"], body)


def best_vs_default(summary: pd.DataFrame) -> list[str]:
    """Per (table, epsilon): the default's relative error and margin TVD against the best."""
    default = label(*DEFAULT)
    body = []
    for (name, eps), g in summary.groupby(["table", "epsilon"], sort=False):
        g = g.set_index("config")
        best = g.relative_error.idxmin()
        income = "tvd_income" if "tvd_income" in g else "tvd_max"
        text = label("efpa", "clip", True)  # the text's publisher, negatives clipped
        body.append([name, f"{eps:g}", f"{g.at[best, 'margin_epsilon']:.3g}", best,
                     fmt(g.at[best, "relative_error"]), fmt(g.at[default, "relative_error"]),
                     f"{g.at[default, 'relative_error'] / g.at[best, 'relative_error']:.1f}x",
                     f"{fmt(g.at[default, income], 2)} / {fmt(g.at[best, income], 2)}",
                     fmt(g.at[text, "relative_error"]),
                     f"{g.at[text, 'relative_error'] / g.at[default, 'relative_error']:.1f}x"])
    return md_table(["table", "eps", "eps/m", "best configuration", "its RE",
                     f"default ({default}) RE", "default / best",
                     "income margin TVD default / best", "text's (efpa / clip) RE",
                     "text's / default"], body)


def markdown(summary: pd.DataFrame, runs: int, n_queries: int, seed: int,
             elapsed: float) -> str:
    default = label(*DEFAULT)
    lines = [
        "# DPCopula's margin publisher: EFPA vs identity vs DAWA vs HB, clip vs project, "
        "hybrid on/off (census-shaped tables)",
        "",
        f"Generated by `python -m benchmarks.{NAME}` in {elapsed:.0f} s; seed {seed}, data "
        f"seed {DATA_SEED}; {runs} run(s) per setting (the text's figures: {TEXT_RUNS}), "
        f"{n_queries} random range-count queries per run shared by every configuration. "
        "DPCopula-Kendall, k = 8; the hybrid partitions on the binary attributes (US: gender; "
        "Brazil: gender x disability x nativity). Margin TVD = 0.5 Σ|p~ - p| between the "
        "released DP margin and the true one, averaged over the attributes (in the hybrid "
        "the released margin of a large attribute is the size-weighted mixture of the "
        "partitions' margins). `eps/m` is the budget of one margin, eps·k/(k+1)/m. The "
        f"engine's current default is `{default}`.",
        "",
        "## Best configuration against the default",
        "",
        *best_vs_default(summary),
        "",
        "## Ranking (mean rank over tables x epsilons; 1 = best)",
        "",
        *recommendation(summary),
        "",
    ]
    for name in summary.table.unique():
        sub = summary[summary.table == name]
        eps_values = sorted(sub.epsilon.unique())
        cols = [c for c in sub.columns if c.startswith("tvd_") and c not in
                ("tvd_mean", "tvd_max") and not c.endswith("_sd") and sub[c].notna().any()]
        lines += [f"## {name}", "", "Relative error (± s.d.) / margin TVD (mean over "
                  "attributes) / Kendall gap:", ""]
        header = ["configuration"] + [
            f"eps = {e:g} (eps/m = {sub[sub.epsilon == e].margin_epsilon.iloc[0]:.3g})"
            for e in eps_values] + ["time (s, eps = 1)"]
        body = []
        for config in sub.config.unique():
            g = sub[sub.config == config].set_index("epsilon")
            body.append([f"**{config}**" if config == default else config] + [
                f"{fmt(g.at[e, 'relative_error'])} ± {fmt(g.at[e, 'relative_error_sd'], 2)} / "
                f"{fmt(g.at[e, 'tvd_mean'], 2)} / {fmt(g.at[e, 'kendall_gap'], 2)}"
                for e in eps_values] + [f"{g.at[1.0, 'seconds']:.2f}" if 1.0 in g.index else "-"])
        lines += md_table(header, body) + [""]
        lines += [f"Margin TVD per attribute at eps = {max(eps_values):g} (hybrid on):", ""]
        at1 = sub[(sub.epsilon == max(eps_values)) & sub.hybrid]
        body = [[row.config] + [fmt(getattr(row, c), 2) for c in cols]
                for row in at1.itertuples()]
        lines += md_table(["configuration"] + [c.removeprefix("tvd_") for c in cols], body)
        lines += [""]
    return "\n".join(lines)


def build_figure(summary: pd.DataFrame):
    from bokeh.layouts import gridplot

    from benchmarks.synth_common import line_panel

    panels = []
    for name in summary.table.unique():
        sub = summary[summary.table == name]
        panels.append(line_panel(sub, "epsilon", "relative_error", "config",
                                 f"{name}: relative error by margin publisher / fit",
                                 x_label="epsilon", y_label="mean relative error"))
        panels.append(line_panel(sub, "epsilon", "tvd_mean", "config",
                                 f"{name}: margin TVD (mean over attributes)",
                                 x_label="epsilon", y_label="TVD of released margins"))
    return gridplot([panels[i:i + 2] for i in range(0, len(panels), 2)])


def main(argv: list[str] | None = None) -> pd.DataFrame:
    args, _ = parser(__doc__, RUNS, QUERIES).parse_known_args(argv)
    if args.quick:
        runs, n_queries, epsilons = 1, 100, (1.0,)
    else:
        runs, n_queries, epsilons = args.runs, args.queries, EPSILONS
    start = time.perf_counter()
    rows = run(runs, n_queries, args.seed, epsilons, TABLES)
    elapsed = time.perf_counter() - start
    tvd_cols = [c for c in rows.columns if c.startswith("tvd_")]
    summary = summarise(rows, ["table", "publisher", "fit", "hybrid", "config", "epsilon"],
                        ["relative_error", "median_relative_error", "absolute_error",
                         "kendall_gap", "seconds", "margin_epsilon", *tvd_cols])
    report = markdown(summary, runs, n_queries, args.seed, elapsed)
    write_outputs(args.out, NAME, summary, report, build_figure(summary),
                  "DPCopula margin publishers")
    sys.stdout.write(report + "\n")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
