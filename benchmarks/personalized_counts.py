"""Reproduce Li 2017, Fig. 5.2-5.5: relative frequency error of the count task under personalized DP.

Set-up (Li 2017, §5.3.1): the count task uses Age, Gender, Education and Annual Income of 100,000
census records (US and Brazil); random range-count queries with a random interval on every
attribute; the relative frequency error ``|A_act(q) - A_noisy(q)| / n``; privacy budgets
drawn from N(0.1, 1) ("normal", clipped to [0.01, 1]) and U(0.01, 0.1) ("uniform"). We add
U(0.01, 1) (the range the text states) and the truncated normal. Sampling (Jorgensen et al.)
is run across its threshold; Minimum, privacy-aware and utility-based partitioning (no
threshold: flat lines) next to it, and (ours) Alaggan, Gambs & Kermarrec 2016's one-release
weighting (``method="weighted"``: weights eps_j / eps_max, one Laplace draw per cell, rescaled by
the mean weight), compared with utility partitioning and the best Sampling threshold chosen in
hindsight. Every mechanism releases the 2,048-cell histogram of the
coded records (:func:`dpwidgets.engine.personalized.personalized_histogram`: Laplace per
release, replace-one neighbours) and the queries are answered on it.

Data: the IPUMS extracts are not shipped; :func:`dpwidgets.families.personalized.standins.count_task`
generates census-like stand-ins (one fixed draw per country). Each trial draws a fresh
privacy vector and fresh noise; the 1,000 queries are fixed per country.

Run from the repository root::

    python -m benchmarks.personalized_counts            # ~1 min
    python -m benchmarks.personalized_counts --quick    # smoke run (< 30 s)

Writes ``benchmarks/results/personalized_counts.{csv,md,html}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from benchmarks.personalized_common import (
    DATA_SEED,
    LABELS,
    RESULTS,
    SEED,
    build_figure,
    claims_table,
    rng_for,
    save_outputs,
    setup_label,
    summarise,
    thresholds,
)
from dpwidgets._progress import progress
from dpwidgets.engine.dynamic import random_range_queries
from dpwidgets.engine.personalized import (
    personalized_histogram,
    plan_releases,
    relative_frequency_error,
)
from dpwidgets.families.personalized.standins import count_task, make_budgets

NAME = "personalized_counts"
#: The shared labels, and the weighted mechanism this benchmark adds (not in the figure).
NAMES = {**LABELS, "weighted": "Weighted (Alaggan, Gambs & Kermarrec 2016)"}
DATASETS = ("us", "brazil")
SETUPS = ("normal", "uniform", "uniform_wide", "normal_truncated")
N_RECORDS = 100_000
N_QUERIES = 1000
TRIALS = 10
THRESHOLD_POINTS = 9


def run(datasets, setups, trials: int, seed: int) -> pd.DataFrame:
    rows = []
    for dataset in progress(datasets, desc="personalized_counts"):
        task = count_task(dataset, N_RECORDS, np.random.default_rng(DATA_SEED))
        truth = task.histogram()
        queries = random_range_queries(task.shape, N_QUERIES, rng_for(seed, dataset, "queries"))
        bins = task.bins
        phi = {"cell_variance": (1 - 1 / task.n_cells) / task.n_cells}
        for setup in setups:
            for trial in range(trials):
                rng = rng_for(seed, dataset, setup, trial)
                budgets = make_budgets(setup, task.n, rng)
                plans, plan_seconds = {}, {}
                for key, kwargs in (("minimum", {"method": "minimum"}),
                                    ("privacy_aware", {"method": "privacy_aware"}),
                                    ("privacy_aware_T2", {"method": "privacy_aware", "rounds": 2}),
                                    ("utility", {"method": "utility", "utility_options": phi}),
                                    ("weighted", {"method": "weighted"})):
                    start = time.perf_counter()
                    plans[key] = plan_releases(budgets, **kwargs)
                    plan_seconds[key] = time.perf_counter() - start
                for slot, t in thresholds(budgets, THRESHOLD_POINTS):
                    plans[("sampling", slot)] = plan_releases(budgets, "sampling", threshold=t)
                for key, plan in plans.items():
                    mechanism, slot = key if isinstance(key, tuple) else (key, "-")
                    start = time.perf_counter()
                    result = personalized_histogram(task.cells, budgets, bins, plan=plan, rng=rng)
                    release_seconds = time.perf_counter() - start
                    rfe = relative_frequency_error(truth, result.counts, shape=task.shape,
                                                   queries=queries, n=task.n)
                    rows.append({
                        "dataset": dataset, "setup": setup, "trial": trial,
                        "mechanism": mechanism, "slot": slot,
                        "threshold": plan.threshold if plan.threshold is not None else np.nan,
                        "mean_budget": float(budgets.mean()), "rfe": rfe,
                        "releases": len(plan.partitions),
                        "budget_used": float(plan.enjoyed.sum() / budgets.sum()),
                        "plan_seconds": plan_seconds.get(mechanism, np.nan),
                        "release_seconds": release_seconds,
                    })
    return pd.DataFrame(rows)


def evaluate_claims(summary: pd.DataFrame, rows: pd.DataFrame) -> list[tuple[str, str, str, str]]:
    claims = []
    for (dataset, setup), sub in summary.groupby(["dataset", "setup"], sort=False):
        setting = f"{dataset}, {setup}"
        samp = sub[sub.mechanism == "sampling"].sort_values("threshold")
        mean_budget = float(rows[(rows.dataset == dataset) & (rows.setup == setup)].mean_budget.mean())
        best = samp.loc[samp["mean"].idxmin()]
        at_mean = samp[samp.slot == "mean"].iloc[0]
        lowest = samp[samp.slot == "g0"].iloc[0]
        flat = {m: float(sub[sub.mechanism == m]["mean"].iloc[0]) for m in
                ("minimum", "privacy_aware", "utility")}
        step = float(np.diff(samp.threshold).max())
        near = abs(best.threshold - mean_budget) <= step
        claims.append((
            "Sampling is best with the threshold at the mean budget (§5.3.2.1)", setting,
            f"best eps_T = {best.threshold:.3g} (RFE {best['mean']:.2e}); mean budget "
            f"{mean_budget:.3g} (RFE {at_mean['mean']:.2e}); grid step {step:.3g}",
            "holds" if near else "does not hold"))
        ratio = float(lowest["mean"] / at_mean["mean"])
        claims.append((
            "Sampling deteriorates sharply below the mean threshold", setting,
            f"RFE at eps_T = min / at mean = {ratio:.1f}x",
            "holds" if ratio > 2 else "does not hold"))
        ratio_u = flat["utility"] / float(best["mean"])
        claims.append((
            "Utility-based ≈ the optimal sampling, without a threshold", setting,
            f"utility / best sampling = {ratio_u:.2f}; utility / sampling at mean = "
            f"{flat['utility'] / float(at_mean['mean']):.2f}",
            "holds" if ratio_u <= 1.25 else "does not hold"))
        mini = sub[sub.mechanism == "minimum"].iloc[0]
        se = float(np.hypot(mini["sd"] / np.sqrt(mini["trials"]), lowest["sd"] / np.sqrt(lowest["trials"])))
        diff = float(mini["mean"] - lowest["mean"])
        claims.append((
            "Minimum ≈ sampling at the smallest threshold (the same mechanism: p_j = 1 "
            "at eps_T = min)", setting,
            f"Minimum / sampling at eps_T = min = {mini['mean'] / lowest['mean']:.2f} "
            f"(difference {diff:+.1e}, s.e. {se:.1e})",
            "holds" if abs(diff) <= 3 * se + 1e-15 else "does not hold"))
        weighted = sub[sub.mechanism == "weighted"]
        if not weighted.empty:
            w = float(weighted["mean"].iloc[0])
            claims.append((
                "(ours) Weighted (Alaggan, Gambs & Kermarrec 2016) vs utility-based and the best "
                "Sampling threshold in hindsight", setting,
                f"weighted / utility = {w / flat['utility']:.2f}; weighted / best sampling = "
                f"{w / float(best['mean']):.2f}",
                "beats both" if w < min(flat["utility"], float(best["mean"])) else
                ("beats utility-based" if w < flat["utility"] else "does not beat them")))
        claims.append((
            "(ours) Privacy-aware partitioning beats Minimum", setting,
            f"privacy-aware / Minimum = {flat['privacy_aware'] / flat['minimum']:.3f}",
            "holds" if flat["privacy_aware"] < flat["minimum"] else "does not hold"))
    return claims


def markdown(summary: pd.DataFrame, rows: pd.DataFrame, trials: int, elapsed: float, seed: int) -> str:
    claims = evaluate_claims(summary, rows)
    at_mean = [c for c in claims if c[0].startswith("Sampling is best")]
    near_mean = sum(c[3] == "holds" for c in at_mean)
    lines = [
        "# Personalized DP, count task: relative frequency error (Li 2017, Fig. 5.2-5.5)",
        "",
        f"Generated by `python -m benchmarks.{NAME}` in {elapsed:.0f} s; seed {seed}; "
        f"{trials} trial(s) per setting (a fresh privacy vector and fresh noise each; the text "
        f"does not say how many). Data: census-like stand-ins of Li 2017's IPUMS US / Brazil "
        f"extracts ({N_RECORDS:,} records; age 8 bands x gender x education 8 x income 16 "
        f"log bins = 2,048 cells), data seed {DATA_SEED}; {N_QUERIES} random range-count "
        f"queries per country (random interval on every attribute). RFE = mean over queries "
        f"of |A_act - A_noisy| / n. Every mechanism: Laplace per release, replace-one "
        f"neighbours (Lap(2/eps)); partitioning with the engine defaults (at most 16 parts "
        f"of at least n/32 records; `utility='count'` with the plug-in cell variance).",
        "",
        "The published figures are plots without numbers in the text we have (the images "
        "did not survive the conversion); the claims of §5.3.2.1 are checked below.",
        "",
        "## Claims",
        "",
        *claims_table(claims),
        "",
        "## Relative frequency error (mean ± s.d. over trials)",
        "",
    ]
    for (dataset, setup), sub in summary.groupby(["dataset", "setup"], sort=False):
        lines += [f"### {dataset}: {setup_label(setup)}", "",
                  "| mechanism | eps_T | RFE | releases | budget used |", "|---|---|---|---|---|"]
        for _, r in sub.sort_values(["mechanism", "threshold"]).iterrows():
            th = "-" if np.isnan(r.threshold) else f"{r.threshold:.3g}"
            lines.append(f"| {NAMES[r.mechanism]} | {th} | {r['mean']:.3e} ± {r['sd']:.1e} | "
                         f"{r.releases:.0f} | {100 * r.budget_used:.1f}% |")
        lines.append("")
    timing = rows.groupby("mechanism", sort=False)[["plan_seconds", "release_seconds"]].mean()
    lines += [f"## Time per call ({N_RECORDS:,} records, 2,048 cells; s, mean)", "",
              "| mechanism | plan (partitioning, once per privacy vector) | release |",
              "|---|---|---|"]
    for mech, r in timing.iterrows():
        plan = "-" if np.isnan(r.plan_seconds) else f"{r.plan_seconds:.3f}"
        lines.append(f"| {NAMES[mech]} | {plan} | {r.release_seconds:.3f} |")
    lines += [
        "",
        "## Not reproduced / deviations",
        "",
        "- The IPUMS US (370,000) and Brazil (190,000) extracts are not available offline: "
        "census-like synthetic stand-ins with the same attributes; their coding into 2,048 "
        "cells is ours (the text does not give one).",
        "- The figures' numbers are not in the text; only the qualitative claims are compared.",
        "- Sampling and partition estimates of the *whole* histogram rescale a part of the "
        "records (n / sum p_j; inverse-variance ensemble): unbiased because the budgets are "
        "drawn independently of the values (Li 2017, §5.1's premise), not for adversarial budgets.",
        "- 'budget used' = sum of enjoyed budgets / sum of asked budgets (Sampling counts "
        "min(eps_j, eps_T) as enjoyed, the amplified guarantee).",
        "- Why utility-based partitioning trails the best Sampling here (the text finds them "
        "about equal): every partition release draws its own Laplace noise. Where that noise "
        "dominates (small budgets, e.g. U(0.01, 0.1)), the best ensemble of k releases has "
        "precision sum_i (n_i eps_i)^2 / 8 <= (sum_i n_i eps_i)^2 / 8, while one Sampling "
        "release at a high threshold keeps record j with p_j ~ eps_j / eps_T and so reaches "
        "about (sum_j eps_j)^2 / 8 with a single noise draw. Where the sampling error "
        "dominates (budgets up to 1), the gap is smaller (1.3-1.5x) and utility-based beats "
        "Sampling at the mean threshold under N(0.1, 1).",
        "- Weighted (ours, Alaggan, Gambs & Kermarrec 2016): every record in one release with "
        "weight eps_j / eps_max (rounded down to multiples of 2^-20), Lap(2/eps_max) per cell "
        "(replace-one: a record moves its weight between two cells), divided by the mean "
        "weight: noise variance 8 / mean(eps)^2 from a single draw, unbiased when the budgets "
        "are independent of the values. It is not in the figure (its line would be flat).",
        f"- Sampling's best threshold lies within one grid step of the mean budget in "
        f"{near_mean} of {len(at_mean)} settings and above it otherwise; the curve is flat "
        f"above the mean, so 'the mean' is a safe rule but not always the optimum on these "
        f"stand-ins.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=TRIALS)
    parser.add_argument("--quick", action="store_true", help="smoke run (< 30 s)")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    args, _ = parser.parse_known_args(argv)
    datasets, setups, trials = (("us",), ("normal", "uniform"), 2) if args.quick else \
        (DATASETS, SETUPS, args.trials)
    start = time.perf_counter()
    rows = run(datasets, setups, trials, args.seed)
    elapsed = time.perf_counter() - start
    summary = summarise(rows, "rfe")
    report = markdown(summary, rows, trials, elapsed, args.seed)
    fig = build_figure(summary, "relative frequency error", "count task", log_y=True)
    save_outputs(NAME, args.out, rows, report, fig,
                 "Personalized DP count task (Li 2017, Fig. 5.2-5.5)")
    sys.stdout.write(report + "\n")
    return rows


if __name__ == "__main__":
    main(sys.argv[1:])
