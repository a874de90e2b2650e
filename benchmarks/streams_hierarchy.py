"""Reproduce Chen 2018, Fig. 5.8: unit counts on a hierarchy of aggregated streams (HS-LM, HS-PGS, PHS-PGS).

Chen 2018, §5.6.4: Multi_5 (128 access points × 20,000 five-minute steps, total 646,254; here the
generated stand-in), AGG = a binary tree over the 128 states (255 nodes, h = 8 levels),
ε ∈ {0.1, 0.01}; quality = average L1 error over every node and step, averaged over 20 trials.

- HS-LM: Lap(h/ε) on every node's count.
- HS-PGS: PeGaSus(ε/h) on every node's stream (Thm 19), with the text's defaults
  (``defaults="text"``: ε_p = 0.8, ε_g = 0.2 of each node's share, θ = 5/ε_g, median smoother)
  and, as ``HS-PGS new``, with the engine's (``defaults="new"``: ε_g = 0.05 of the share,
  θ = 160/ε_g, Lyu, Su & Li 2017's SVT split, adaptive smoother). Same for PHS-PGS.
- PHS-PGS: Alg. 18 (prune small aggregates top-down, pass the saved budget down). The text
  gives no ε_pr or β; the engine's defaults are ε_pr = 0.1ε, β = 2h/ε_pr. PRUNE uses
  Lap(h/ε_pr) per node instead of the text's Lap(2/ε_pr) on both sides (see the engine's
  module docstring: the text's SVT argument does not hold).

Added for reading the numbers: "all zeros" (release 0 everywhere: no budget, no noise), PHS-PGS
at other β, and HS-PGS with the larger public threshold θ = 50/ε_g (not the text's).

Published: PHS-PGS's error is "over 78x (445x)" below HS-LM's and HS-PGS's "over 4x (9x)"
PHS-PGS's, at ε = 0.1 (0.01). HS-LM's error does not depend on the data: E|Lap(h/ε)| = h/ε,
i.e. 80 (800), so the published ratios put PHS-PGS near 1.03 (1.80) and HS-PGS near 4.1 (16.2).

Run from the repository root::

    python -m benchmarks.streams_hierarchy            # 5 trials, ~8 min (HS-PGS new ~25 s a run)
    python -m benchmarks.streams_hierarchy --quick    # 1 trial, no extras

Writes ``benchmarks/results/streams_hierarchy.{csv,md,html}``.
"""

from __future__ import annotations

import sys
import time

import numpy as np
import pandas as pd

from benchmarks.streams_common import (
    DATA_SEED,
    EPSILONS,
    THETA_ALT_TIMES_EPS_G,
    md_table,
    multi5,
    parser,
    rng_for,
    write_outputs,
)
from dpwidgets._progress import progress
from dpwidgets.engine.streams import Hierarchy, average_l1, hs_laplace, hs_pegasus, phs_pegasus

NAME = "streams_hierarchy"
PUBLISHED_LM_OVER_PHS = {0.1: 78.0, 0.01: 445.0}
PUBLISHED_HS_OVER_PHS = {0.1: 4.0, 0.01: 9.0}
BETA_TIMES = (0.5, 1.0, 2.0, 4.0)  # beta = m * h / eps_pr; 2 is the engine's default
ALT = f"HS-PGS θ={THETA_ALT_TIMES_EPS_G:g}/ε_g"
HS_NEW, PHS_NEW = "HS-PGS new", "PHS-PGS new"


def _levels_error(truth: np.ndarray, est: np.ndarray, levels: np.ndarray) -> dict[str, float]:
    err = np.abs(truth - est).mean(axis=1)
    return {f"level_{lv}": float(err[levels == lv].mean()) for lv in np.unique(levels)}


def run(trials: int, seed: int, extras: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    leaves = multi5()
    tree = Hierarchy.binary(leaves.shape[0])
    truth = tree.aggregate(leaves)
    h = tree.height
    rows, per_trial = [], []
    for eps in progress(EPSILONS, desc="streams_hierarchy"):
        zero = np.zeros_like(truth, dtype=float)
        rows.append({"epsilon": eps, "method": "all zeros", "trials": 1,
                     "avg_l1": average_l1(truth, zero), "avg_l1_sd": 0.0, "seconds": 0.0,
                     **_levels_error(truth, zero, tree.levels)})
        for i in range(trials):
            rng = rng_for(seed, "hierarchy", int(eps * 1e4), i)
            for method, fn in (
                ("HS-LM", lambda: hs_laplace(leaves, tree, eps, rng)),  # noqa: B023
                ("HS-PGS", lambda: hs_pegasus(leaves, tree, eps, rng=rng, defaults="text")),  # noqa: B023
                ("PHS-PGS", lambda: phs_pegasus(leaves, tree, eps, rng=rng, defaults="text")),  # noqa: B023
                (HS_NEW, lambda: hs_pegasus(leaves, tree, eps, rng=rng)),  # noqa: B023
                (PHS_NEW, lambda: phs_pegasus(leaves, tree, eps, rng=rng)),  # noqa: B023
            ):
                start = time.perf_counter()
                r = fn()
                seconds = time.perf_counter() - start
                row = {"epsilon": eps, "method": method, "trial": i, "seconds": seconds,
                       "avg_l1": average_l1(truth, r.estimates),
                       **_levels_error(truth, r.estimates, tree.levels)}
                if r.pruned is not None:
                    row["pruned"] = float(r.pruned.mean())
                    row["root_prunes_children"] = float(r.pruned[1].mean())
                per_trial.append(row)
        if extras:
            eps_pr = 0.1 * eps
            for m in BETA_TIMES:
                if m == 2.0:
                    continue
                rng = rng_for(seed, "beta", int(eps * 1e4), int(m * 10))
                start = time.perf_counter()
                r = phs_pegasus(leaves, tree, eps, rng=rng, beta=m * h / eps_pr, defaults="text")
                per_trial.append({"epsilon": eps, "method": f"PHS-PGS β={m:g}h/ε_pr", "trial": 0,
                                  "seconds": time.perf_counter() - start,
                                  "avg_l1": average_l1(truth, r.estimates),
                                  "pruned": float(r.pruned.mean()),
                                  "root_prunes_children": float(r.pruned[1].mean()),
                                  **_levels_error(truth, r.estimates, tree.levels)})
            rng = rng_for(seed, "theta", int(eps * 1e4))
            start = time.perf_counter()
            r = hs_pegasus(leaves, tree, eps, rng=rng, defaults="text",
                           theta=THETA_ALT_TIMES_EPS_G / (0.2 * eps / h))
            per_trial.append({"epsilon": eps, "method": ALT, "trial": 0,
                              "seconds": time.perf_counter() - start,
                              "avg_l1": average_l1(truth, r.estimates),
                              **_levels_error(truth, r.estimates, tree.levels)})
    df = pd.DataFrame(per_trial)
    level_cols = [c for c in df.columns if c.startswith("level_")]
    agg = {"trials": ("trial", "count"), "avg_l1": ("avg_l1", "mean"),
           "avg_l1_sd": ("avg_l1", "std"), "seconds": ("seconds", "median"),
           **{c: (c, "mean") for c in level_cols}}
    if "pruned" in df:
        agg["pruned"] = ("pruned", "mean")
        agg["root_prunes_children"] = ("root_prunes_children", "mean")
    summary = df.groupby(["epsilon", "method"], sort=False).agg(**agg).reset_index()
    summary = pd.concat([pd.DataFrame(rows), summary], ignore_index=True)
    return summary, df


def _get(summary, eps, method) -> pd.Series:
    return summary[(summary.epsilon == eps) & (summary.method == method)].iloc[0]


def markdown(summary: pd.DataFrame, trials: int, seed: int, elapsed: float) -> str:
    leaves = multi5()
    h = Hierarchy.binary(leaves.shape[0]).height
    lines = [
        "# Hierarchical aggregated streams on Multi_5 (Chen 2018, Fig. 5.8)",
        "",
        f"Generated by `python -m benchmarks.{NAME}` in {elapsed:.0f} s: {trials} trials per "
        f"method and ε (the text: 20; the error is a mean over {leaves.size * 255 // 128:,} "
        f"node-steps, so its trial sd is tiny — see the sd column), seed {seed}; the Multi_5 "
        f"stand-in ({leaves.shape[0]} states × {leaves.shape[1]:,} steps, total "
        f"{int(leaves.sum()):,}, {np.mean(leaves == 0):.1%} zero state-steps) with data seed "
        f"{DATA_SEED}; binary AGG, h = {h}. Which setting produced each row: **HS-PGS / "
        "PHS-PGS** (and the extras) = the text's defaults (`defaults=\"text\"`: ε_p = 0.8, "
        "ε_g = 0.2 of each node's share, θ = 5/ε_g, median smoother); **HS-PGS new / PHS-PGS "
        "new** = the engine's defaults (`defaults=\"new\"`: ε_g = 0.05 of each node's share, "
        "θ = 160/ε_g, threshold share 1/(1+2^(2/3)) of ε_g (Lyu, Su & Li 2017), adaptive "
        "smoother). PHS-PGS: ε_pr = 0.1ε, β = 2h/ε_pr (the engine's defaults; the text gives "
        "none). Extras (one trial each) are not in the figure.",
        "",
        "## Average L1 error per node and step",
        "",
    ]
    rows = []
    for eps in EPSILONS:
        sub = summary[summary.epsilon == eps]
        for r in sub.itertuples():
            pruned = "" if pd.isna(getattr(r, "pruned", np.nan)) else f"{r.pruned:.3f}"
            root = "" if pd.isna(getattr(r, "root_prunes_children", np.nan)) else f"{r.root_prunes_children:.3f}"
            sd = "" if pd.isna(r.avg_l1_sd) else f"{r.avg_l1_sd:.3f}"
            rows.append([f"{eps:g}", r.method, f"{r.avg_l1:.3f}", sd, f"{np.log10(r.avg_l1):.3f}",
                         int(r.trials), pruned, root, f"{r.seconds:.2f}"])
    lines += md_table(["ε", "method", "avg L1", "sd", "log10", "trials", "pruned node-steps",
                       "root pruned its children", "seconds (median)"], rows)
    lines += ["", "## Ratios against the published ones", ""]
    rows = []
    for eps in EPSILONS:
        for setting, hs_name, phs_name in (("text", "HS-PGS", "PHS-PGS"), ("new", HS_NEW, PHS_NEW)):
            lm, hs, phs = (_get(summary, eps, m).avg_l1 for m in ("HS-LM", hs_name, phs_name))
            zero = _get(summary, eps, "all zeros").avg_l1
            rows.append([f"{eps:g}", setting, f"{lm / phs:.1f}", f"> {PUBLISHED_LM_OVER_PHS[eps]:g}",
                         f"{hs / phs:.1f}", f"> {PUBLISHED_HS_OVER_PHS[eps]:g}", f"{lm / hs:.2f}",
                         f"~{PUBLISHED_LM_OVER_PHS[eps] / PUBLISHED_HS_OVER_PHS[eps]:.0f}",
                         f"{phs:.3f} / {lm / PUBLISHED_LM_OVER_PHS[eps]:.2f}", f"{zero:.3f}"])
    lines += md_table(["ε", "defaults", "HS-LM / PHS-PGS", "published", "HS-PGS / PHS-PGS", "published",
                       "HS-LM / HS-PGS", "published (implied)", "PHS-PGS: ours / published (implied)",
                       "all zeros"], rows)
    lines += ["", "Error by level (1 = root, 8 = the 128 states):", ""]
    level_cols = [c for c in summary.columns if c.startswith("level_")]
    rows = []
    for eps in EPSILONS:
        for r in summary[summary.epsilon == eps].itertuples():
            rows.append([f"{eps:g}", r.method] + [f"{getattr(r, c):.2f}" for c in level_cols])
    lines += md_table(["ε", "method"] + [c.replace("level_", "level ") for c in level_cols], rows)
    ok_lm = [(_get(summary, e, "HS-LM").avg_l1 / _get(summary, e, "PHS-PGS").avg_l1) > PUBLISHED_LM_OVER_PHS[e]
             for e in EPSILONS]
    ok_hs = [(_get(summary, e, "HS-PGS").avg_l1 / _get(summary, e, "PHS-PGS").avg_l1) > PUBLISHED_HS_OVER_PHS[e]
             for e in EPSILONS]
    hs_gain = [_get(summary, e, "HS-LM").avg_l1 / _get(summary, e, "HS-PGS").avg_l1 for e in EPSILONS]
    new_gain = [_get(summary, e, "HS-LM").avg_l1 / _get(summary, e, HS_NEW).avg_l1 for e in EPSILONS]
    new_phs = [_get(summary, e, HS_NEW).avg_l1 / _get(summary, e, PHS_NEW).avg_l1 for e in EPSILONS]
    lines += [
        "",
        "## What reproduces and what does not",
        "",
        f"- \"PHS-PGS over 78x (445x) below HS-LM\": {'holds' if all(ok_lm) else 'does not hold'} "
        "here. But look at \"all zeros\": on data with Multi_5's published total every level sums "
        "to the root, so releasing 0 everywhere has average L1 = 8 × 646,254 / (255 × 20,000) = "
        "1.014 whatever the real trace. The published ratios put PHS-PGS at about 1.03 (ε = 0.1) "
        "and 1.8 (ε = 0.01), about the error of releasing zeros: PHS-PGS wins by pruning nearly "
        "everything, here (β = 2h/ε_pr = 1600 (16,000) against a root count of ~32 per step) "
        "and, judging by those numbers, in the text too. The ratio against HS-LM is then "
        "~(h/ε)/1, i.e. it measures HS-LM's noise more than PHS-PGS's accuracy.",
        f"- \"HS-PGS over 4x (9x) above PHS-PGS\": {'holds' if all(ok_hs) else 'does not hold'} — "
        "but for the wrong reason: the published ratios imply HS-PGS about 19x (49x) below "
        f"HS-LM; ours is {hs_gain[0]:.2f}x ({hs_gain[1]:.2f}x). PeGaSus with the text's Grouper "
        "defaults gains a fixed ~1.3x over LM even on constant streams (its best case, "
        "streams_unit_counts.md), so HS-PGS cannot come near the published value on any data. "
        + (f"With `{ALT}` (a public θ 10x the text's: longer groups, same privacy) HS-PGS "
           "reaches " + ", ".join(f"{_get(summary, e, ALT).avg_l1:.1f} at ε = {e:g}" for e in EPSILONS)
           + " against the published ~4.1 and ~16.2: the published figure is consistent with "
           "a Grouper that forms much longer groups than Alg. 16 with θ = 5/ε_g does."
           if (summary.method == ALT).any() else ""),
        "- \"Both HS-PGS and PHS-PGS reduce the error by 1 to 2 orders of magnitude compared "
        "with HS-LM\": at the text's defaults PHS-PGS yes, HS-PGS no (same reason). At the new "
        f"defaults (public θ, shares and smoother: same privacy) HS-LM / HS-PGS is "
        f"{new_gain[0]:.1f} (ε = 0.1) and {new_gain[1]:.1f} (ε = 0.01), against the published "
        f"~19 (~49): {'reproduced' if min(new_gain) >= 10 else 'still not reproduced'}; and "
        f"HS-PGS / PHS-PGS is {new_phs[0]:.1f} ({new_phs[1]:.1f}), against > 4 (> 9).",
        "- PRUNE here is the Laplace mechanism with ε_pr/h per level (the text's Lap(2/ε_pr) "
        "comparison is not private as argued); with the text's noise the pruning would be "
        "sharper, which matters little once nearly everything is pruned.",
        "",
    ]
    return "\n".join(lines)


def build_figure(summary: pd.DataFrame):
    from bokeh.layouts import gridplot
    from bokeh.models import ColumnDataSource, FactorRange
    from bokeh.palettes import Category10_10
    from bokeh.plotting import figure
    from bokeh.transform import factor_cmap

    methods = list(dict.fromkeys(summary.method))
    factors = [(f"ε={r.epsilon:g}", r.method) for r in summary.itertuples()]
    src = ColumnDataSource({"x": factors, "y": np.log10(summary.avg_l1.to_numpy()),
                            "method": summary.method.to_numpy(), "err": summary.avg_l1.to_numpy()})
    p = figure(x_range=FactorRange(*factors), width=1000, height=380,
               title="Chen 2018, Fig. 5.8: average L1 error on Multi_5 (stand-in), binary AGG h = 8",
               y_axis_label="log10 average L1 error", tools="save,reset,hover",
               tooltips=[("", "@x"), ("avg L1", "@err{0.000}")])
    p.vbar(x="x", top="y", width=0.8, source=src,
           fill_color=factor_cmap("method", Category10_10, methods), line_color=None)
    p.xaxis.major_label_orientation = 1.0
    p.xaxis.major_label_text_font_size = "7pt"
    level_cols = [c for c in summary.columns if c.startswith("level_")]
    q = figure(width=1000, height=320, y_axis_type="log", title="Error by level (1 = root)",
               x_axis_label="level", y_axis_label="average L1 error", tools="pan,box_zoom,reset,save")
    for _, r in summary.iterrows():
        levels = np.arange(1, len(level_cols) + 1)
        vals = r[level_cols].to_numpy(dtype=float)
        ok = vals > 0
        color = Category10_10[methods.index(r.method) % 10]  # one colour per method
        q.line(levels[ok], vals[ok], color=color, line_width=2,
               line_dash="solid" if r.epsilon == EPSILONS[0] else "dashed",
               legend_label=f"{r.method} ε={r.epsilon:g}")
    q.legend.label_text_font_size = "7pt"
    q.legend.click_policy = "hide"
    q.add_layout(q.legend[0], "right")
    return gridplot([[p], [q]])


def main(argv: list[str] | None = None) -> pd.DataFrame:
    args, _ = parser(__doc__, 5, "smoke run: 1 trial, no extras").parse_known_args(argv)
    trials = 1 if args.quick else args.trials
    start = time.perf_counter()
    summary, per_trial = run(trials, args.seed, extras=not args.quick)
    elapsed = time.perf_counter() - start
    report = markdown(summary, trials, args.seed, elapsed)
    write_outputs(args.out, NAME, summary, report, build_figure(summary),
                  "Hierarchical streams (Chen 2018, Fig. 5.8)")
    sys.stdout.write(report + "\n")
    return summary


if __name__ == "__main__":
    main(sys.argv[1:])
