"""Reproduce Chen 2018, Tables 3.2-3.3: the GPTT reconstruction attack (Chen 2018, §3.2.4, Alg. 6-7).

Setup of Chen 2018, §3.2.4: four histograms over a 4096-cell domain (Table 3.1: Adult, MedicalCost,
Income, HepPh); epsilon in {1.0, 0.5, 0.1} split as epsilon_1 = epsilon_2 = epsilon/2;
delta = 0.05; each value is the mean over 10 repetitions. Table 3.2 reports the fraction of all
cells whose count is reconstructed exactly, Table 3.3 the fraction among cells with counts in
[0, 5].

The four real histograms are not shipped: each is replaced by the seeded Zipf-like stand-in of
:data:`dpwidgets.datasets.RECONSTRUCTION_SHAPES` (same domain and scale, small-count number and
``k`` calibrated to Table 3.1/3.3). One histogram per data set is drawn (seed 0), as the text
attacks one fixed data set; the 10 repetitions re-run the attack only.

Run from the repository root::

    python -m benchmarks.attack_reconstruction            # 10 repetitions, as in the text
    python -m benchmarks.attack_reconstruction --quick    # 3 repetitions

Writes ``benchmarks/results/attack_reconstruction.{csv,md,html}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpwidgets._progress import progress
from dpwidgets.datasets import RECONSTRUCTION_SHAPES, histogram_profile, reconstruction_histogram
from dpwidgets.engine.attacks import attack_success, reconstruct_histogram

EPSILONS = (1.0, 0.5, 0.1)
DELTA = 0.05
REPETITIONS = 10
QUICK_REPETITIONS = 3
DATASETS = ("adult", "medicalcost", "income", "hepph")
LABELS = {"adult": "Adult", "medicalcost": "MedicalCost", "income": "Income", "hepph": "HepPh"}
RESULTS = Path(__file__).resolve().parent / "results"

#: Chen 2018, Table 3.2 (all cells) and Table 3.3 (cells with counts in [0, 5]), by epsilon.
PUBLISHED_OVERALL = {
    "adult": {1.0: 0.994, 0.5: 0.991, 0.1: 0.981},
    "medicalcost": {1.0: 0.985, 0.5: 0.977, 0.1: 0.949},
    "income": {1.0: 0.798, 0.5: 0.741, 0.1: 0.636},
    "hepph": {1.0: 0.904, 0.5: 0.795, 0.1: 0.477},
}
PUBLISHED_SMALL = {
    "adult": {1.0: 0.999, 0.5: 0.997, 0.1: 0.992},
    "medicalcost": {1.0: 1.0, 0.5: 1.0, 0.1: 0.960},
    "income": {1.0: 1.0, 0.5: 1.0, 0.1: 0.979},
    "hepph": {1.0: 1.0, 0.5: 1.0, 0.1: 0.970},
}


def run(repetitions: int = REPETITIONS, data_seed: int = 0, attack_seed: int = 2018) -> pd.DataFrame:
    """One row per (data set, epsilon): our mean success rates beside the published ones."""
    rows = []
    for d_index, name in progress(enumerate(DATASETS),
                                  total=len(DATASETS), desc="attack_reconstruction"):
        shape = RECONSTRUCTION_SHAPES[name]
        counts = reconstruction_histogram(name, np.random.default_rng(data_seed))
        profile = histogram_profile(counts)
        # At epsilon = 0.1, theta = 60 and Lap(1/epsilon_1) has scale 20: cells i and i+1 stay
        # apart only if some cell has the count ceil(theta~) + i (proof of Thm 6), so the
        # number of cells with counts in [40, 80] decides the small-count success there.
        near_theta = int(np.count_nonzero((counts >= 40) & (counts <= 80)))
        for e_index, eps in enumerate(EPSILONS):
            seeds = np.random.SeedSequence([attack_seed, d_index, e_index]).spawn(repetitions)
            overall, small, parts, failed, seconds = [], [], [], 0, []
            for seed in seeds:
                start = time.perf_counter()
                result = reconstruct_histogram(counts, eps, DELTA, rng=np.random.default_rng(seed))
                seconds.append(time.perf_counter() - start)
                success = attack_success(counts, result.estimate)
                overall.append(success.overall)
                small.append(success.small)
                parts.append(result.n_partitions)
                failed += result.noisy_threshold <= 0
            rows.append(
                {
                    "dataset": LABELS[name],
                    "domain": profile.domain,
                    "scale": profile.total,
                    "k": profile.k,
                    "k_published": shape.published_k,
                    "n_small": profile.n_small,
                    "n_small_published": shape.published_small,
                    "cells_with_counts_40_80": near_theta,
                    "epsilon": eps,
                    "threshold": result.threshold,
                    "repetitions": repetitions,
                    "success": float(np.mean(overall)),
                    "success_sd": float(np.std(overall, ddof=1)) if repetitions > 1 else 0.0,
                    "success_published": PUBLISHED_OVERALL[name][eps],
                    "small_success": float(np.mean(small)),
                    "small_success_sd": float(np.std(small, ddof=1)) if repetitions > 1 else 0.0,
                    "small_success_published": PUBLISHED_SMALL[name][eps],
                    "mean_partitions": float(np.mean(parts)),
                    "runs_threshold_not_positive": int(failed),
                    "median_seconds_per_attack": float(np.median(seconds)),
                }
            )
    return pd.DataFrame(rows)


def to_markdown(table: pd.DataFrame) -> str:
    """Tables 3.1-3.3 side by side with ours (a plain pipe table, no extra dependency)."""
    lines = [
        "# GPTT reconstruction attack: Chen 2018, Tables 3.2-3.3 reproduced",
        "",
        f"Stand-in histograms (4096 cells, Zipf-like, seed 0); delta = {DELTA}; "
        f"epsilon_1 = epsilon_2 = epsilon/2; mean over {int(table['repetitions'].iloc[0])} "
        "attack repetitions. 'pub.' = published in Chen 2018.",
        "",
        "## Data sets (Chen 2018, Table 3.1; cells in [0, 5] from Table 3.3)",
        "",
        "| data set | scale | k (ours) | k (pub.) | cells in [0,5] (ours) | (pub.) "
        "| cells in [40,80] (ours) |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for _, r in table.drop_duplicates("dataset").iterrows():
        lines.append(
            f"| {r.dataset} | {r.scale:,} | {r.k} | {r.k_published} | {r.n_small:,} | "
            f"{r.n_small_published:,} | {r.cells_with_counts_40_80} |"
        )
    for title, col in (
        ("Table 3.2: fraction of all cells reconstructed exactly", "success"),
        ("Table 3.3: fraction of cells with counts in [0, 5] reconstructed exactly", "small_success"),
    ):
        header = " | ".join(f"ε={e:g} ours | ε={e:g} pub." for e in EPSILONS)
        lines += ["", f"## {title}", "", f"| data set | {header} |",
                  "|---|" + "---:|" * (2 * len(EPSILONS))]
        for name in DATASETS:
            sub = table[table.dataset == LABELS[name]].set_index("epsilon")
            cells = " | ".join(
                f"{sub.loc[e, col]:.3f} ± {sub.loc[e, col + '_sd']:.3f} | "
                f"{sub.loc[e, col + '_published']:.3f}"
                for e in EPSILONS
            )
            lines.append(f"| {LABELS[name]} | {cells} |")
    lines += [
        "",
        "± is the standard deviation over repetitions. Runs whose noisy threshold was <= 0 "
        "(Lemma 5's failure event, probability exp(-epsilon_1 theta)/2 <= delta/2): "
        f"{int(table['runs_threshold_not_positive'].sum())} of "
        f"{int(table['repetitions'].sum())}. Median time per attack (4096 cells, "
        f"4096·4095 difference queries): {1000 * table['median_seconds_per_attack'].median():.2f} ms.",
        "",
        "## Reading the differences",
        "",
        "- Table 3.1 fixes a histogram's scale, k and small-count number, not the rest of its "
        "shape, and the attack at epsilon = 0.1 depends on the rest: there theta = 60, the noisy "
        "threshold is spread over about [20, 100], and by the proof of Thm 6 the cells with "
        "counts i and i+1 land in different parts only if some cell has the count "
        "ceil(theta~) + i. With few cells near 60 (last column above) the 0s and 1s are often "
        "merged and the 1s are then estimated as 0: for the Adult stand-in almost always (a "
        "steady loss of its ~2.6% ones), for MedicalCost's in some runs and not in others "
        "(hence its large ±). The published 0.95-0.99 suggest the real histograms have more "
        "cells with counts near 60.",
        "- The HepPh stand-in's k is about half the published one (the Zipf family cannot match "
        "both its small-count number and k at its scale); fewer distinct mid-size counts mean "
        "fewer exactly recovered mid-size cells, hence the lower overall success at epsilon = 1 "
        "and 0.5. Small counts are recovered as published.",
        "- Income, whose stand-in matches all three Table 3.1 statistics, reproduces Table 3.2 "
        "to within about 0.015 at every epsilon.",
        "",
    ]
    return "\n".join(lines)


def build_figure(table: pd.DataFrame):
    """Two panels (Table 3.2, Table 3.3): success vs epsilon, ours solid, published dashed."""
    from bokeh.layouts import row
    from bokeh.models import Legend
    from bokeh.palettes import Colorblind4
    from bokeh.plotting import figure

    panels = []
    for title, col in (
        ("All cells (Chen 2018, Table 3.2)", "success"),
        ("Cells with counts in [0, 5] (Chen 2018, Table 3.3)", "small_success"),
    ):
        fig = figure(
            title=title, width=520, height=400, x_axis_type="log",
            x_axis_label="epsilon", y_axis_label="fraction reconstructed exactly",
            y_range=(0.0, 1.02), tools="pan,wheel_zoom,box_zoom,reset,save,hover",
            tooltips=[("epsilon", "@x"), ("success", "@y{0.000}")],
        )
        items = []
        for name, color in zip(DATASETS, Colorblind4, strict=True):
            sub = table[table.dataset == LABELS[name]].sort_values("epsilon")
            ours = fig.line(sub.epsilon, sub[col], color=color, line_width=2)
            ours_dots = fig.scatter(sub.epsilon, sub[col], color=color, size=8)
            pub = fig.line(sub.epsilon, sub[col + "_published"], color=color, line_width=2,
                           line_dash="dashed")
            pub_marks = fig.scatter(sub.epsilon, sub[col + "_published"], color=color, size=8,
                                    marker="square", fill_color="white")
            items.append((f"{LABELS[name]} (ours)", [ours, ours_dots]))
            items.append((f"{LABELS[name]} (published)", [pub, pub_marks]))
        fig.add_layout(Legend(items=items, label_text_font_size="8pt"), "right")
        fig.legend.click_policy = "hide"
        panels.append(fig)
    return row(*panels)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 repetitions instead of 10")
    parser.add_argument("--out", type=Path, default=RESULTS, help="output folder")
    args, _ = parser.parse_known_args(argv)
    table = run(QUICK_REPETITIONS if args.quick else REPETITIONS)

    from bokeh.io import save
    from bokeh.resources import INLINE

    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "attack_reconstruction.csv", index=False)
    markdown = to_markdown(table)
    (args.out / "attack_reconstruction.md").write_text(markdown, encoding="utf-8")
    save(build_figure(table), args.out / "attack_reconstruction.html", resources=INLINE,
         title="GPTT reconstruction attack (Chen 2018, Tables 3.2-3.3)")
    sys.stdout.write(markdown + "\n")
    return table


if __name__ == "__main__":
    main(sys.argv[1:])
