"""Reproduce Lyu, Su & Li 2017, Fig. 4-5 (Zipf panels): top-c selection by SVT variants and by EM.

Setup of Lyu, Su & Li 2017, §6: 10,000 items, 1,000,000 records, item i has a count proportional to 1/i;
epsilon = 0.1; c in 25..300; threshold = mean of the c-th and (c+1)-th true scores; the item
order is shuffled in every run (the same shuffle for every method in that run); 100 runs.

Methods
-------
Interactive (Fig. 4): SVT-DPBook (Lyu, Su & Li 2017, Alg. 2) and SVT-S (Lyu, Su & Li 2017, Alg. 7 with epsilon3 = 0, the
monotonic version of §4.3 since counts are monotonic) at epsilon1:epsilon2 = 1:1, 1:3, 1:c,
1:c^(2/3).
Non-interactive (Fig. 5): EM (c rounds without replacement, epsilon/c each, monotonic) and
SVT-ReTr-1:c^(2/3) with the threshold raised by 1..5 standard deviations of the query noise.

Metrics: SER = 1 - avgScore(S)/avgScore(Top_c) and FNR, mean and standard deviation over runs.

Run from the repository root::

    python -m benchmarks.svt_selection            # 100 runs
    python -m benchmarks.svt_selection --quick    # 10 runs, c in {25, 100, 300}

Writes ``benchmarks/results/svt_selection.{csv,md,html}``.
"""

from __future__ import annotations

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from dpwidgets._progress import progress
from dpwidgets.engine.svt import false_negative_rate, score_error_rate, sparse_vector, top_c

C_VALUES = (25, 50, 75, 100, 150, 200, 250, 300)
QUICK_C_VALUES = (25, 100, 300)
EPSILON = 0.1
N_ITEMS = 10_000
N_RECORDS = 1_000_000
INCREMENTS = (1, 2, 3, 4, 5)
RESULTS = Path(__file__).resolve().parent / "results"

INTERACTIVE = ["SVT-DPBook", "SVT-S-1:1", "SVT-S-1:3", "SVT-S-1:c", "SVT-S-1:c^(2/3)"]
NON_INTERACTIVE = ["EM"] + [f"SVT-ReTr-1:c^(2/3)-{k}D" for k in INCREMENTS]
METHODS = INTERACTIVE + NON_INTERACTIVE


def zipf_scores(n_items: int = N_ITEMS, n_records: int = N_RECORDS) -> np.ndarray:
    """Item counts proportional to 1/i, summing to about ``n_records`` (Lyu, Su & Li 2017, §6, Table 1)."""
    rank = np.arange(1, n_items + 1)
    return np.round(n_records / (rank * np.sum(1.0 / rank)))


def _select(method: str, shuffled: np.ndarray, c: int, threshold: float, rng) -> np.ndarray:
    """Positions (in the shuffled order) selected by ``method``."""
    if method == "SVT-DPBook":
        return sparse_vector(shuffled, threshold, EPSILON, "dpbook", c=c, rng=rng).positives
    if method.startswith("SVT-S-"):
        ratio = {"1:1": 1.0, "1:3": 3.0, "1:c": float(c), "1:c^(2/3)": c ** (2 / 3)}[method[6:]]
        return sparse_vector(
            shuffled, threshold, EPSILON, "standard", c=c, monotonic=True, ratio=ratio, rng=rng
        ).positives
    if method == "EM":
        return top_c(shuffled, c, EPSILON, "em", monotonic=True, rng=rng)
    increment = float(method.rsplit("-", 1)[1].rstrip("D"))
    return top_c(
        shuffled, c, EPSILON, "svt_retr", monotonic=True, rng=rng,
        threshold=threshold, increment=increment,
    )


def run(runs: int, c_values=C_VALUES, seed: int = 2017) -> pd.DataFrame:
    """SER/FNR mean and std of every method at every c over ``runs`` shuffled runs."""
    scores = zipf_scores()
    ranked = np.sort(scores)[::-1]
    rng = np.random.default_rng(seed)
    rows = []
    for c in progress(c_values, desc="svt_selection"):
        threshold = (ranked[c - 1] + ranked[c]) / 2
        ser = {m: [] for m in METHODS}
        fnr = {m: [] for m in METHODS}
        size = {m: [] for m in METHODS}
        seconds = dict.fromkeys(METHODS, 0.0)
        for _ in range(runs):
            perm = rng.permutation(scores.size)
            shuffled = scores[perm]
            for method in METHODS:
                start = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)  # short ReTr: counted below
                    picked = perm[_select(method, shuffled, c, threshold, rng)]
                seconds[method] += time.perf_counter() - start
                ser[method].append(score_error_rate(picked, scores, c))
                fnr[method].append(false_negative_rate(picked, scores, c))
                size[method].append(picked.size)
        for method in METHODS:
            rows.append({
                "setting": "interactive" if method in INTERACTIVE else "non-interactive",
                "method": method,
                "c": c,
                "runs": runs,
                "epsilon": EPSILON,
                "threshold": threshold,
                "ser_mean": float(np.mean(ser[method])),
                "ser_std": float(np.std(ser[method])),
                "fnr_mean": float(np.mean(fnr[method])),
                "fnr_std": float(np.std(fnr[method])),
                "mean_selected": float(np.mean(size[method])),
                "runs_short_of_c": int(np.sum(np.asarray(size[method]) < c)),
                "seconds_per_run": seconds[method] / runs,
            })
    return pd.DataFrame(rows)


def markdown(table: pd.DataFrame, elapsed: float) -> str:
    """Two SER/FNR tables (methods x c), ``mean ± std``."""
    runs = int(table["runs"].iloc[0])
    lines = [
        "# SVT vs EM top-c selection on Zipf (reproducing Lyu, Su & Li 2017, Fig. 4-5, Zipf panels)",
        "",
        f"10,000 items, ~1,000,000 records, score ∝ 1/i; epsilon = {EPSILON}; threshold = mean "
        f"of the c-th and (c+1)-th scores; item order shuffled per run; {runs} runs; "
        f"{elapsed:.0f} s. Generated by `python -m benchmarks.svt_selection`.",
        "",
    ]
    for metric, title in (("ser", "Score error rate (SER)"), ("fnr", "False negative rate (FNR)")):
        lines += [f"## {title}, mean ± std", ""]
        cs = sorted(table["c"].unique())
        lines.append("| method | " + " | ".join(f"c={c}" for c in cs) + " |")
        lines.append("|---|" + "---|" * len(cs))
        for method in METHODS:
            sub = table[table["method"] == method].set_index("c")
            cells = [f"{sub.at[c, metric + '_mean']:.3f} ± {sub.at[c, metric + '_std']:.3f}"
                     for c in cs]
            lines.append(f"| {method} | " + " | ".join(cells) + " |")
        lines.append("")
    short = table[table["runs_short_of_c"] > 0]
    if len(short):
        lines.append("Runs that selected fewer than c items (SVT-S exhausts the list; SVT-ReTr "
                     "hit its pass cap):")
        lines.append("")
        for _, row in short.iterrows():
            lines.append(f"- {row['method']}, c={row['c']}: {row['runs_short_of_c']} of {runs} "
                         f"(mean selected {row['mean_selected']:.1f})")
        lines.append("")
    return "\n".join(lines)


def build_figure(table: pd.DataFrame):
    """Bokeh 2x2 grid: SER and FNR against c, interactive (Fig. 4) and non-interactive (Fig. 5)."""
    from bokeh.layouts import gridplot
    from bokeh.models import ColumnDataSource, Whisker
    from bokeh.palettes import Category10_10
    from bokeh.plotting import figure

    panels = []
    for setting, methods, fig in (
        ("interactive", INTERACTIVE, "Fig. 4"),
        ("non-interactive", NON_INTERACTIVE, "Fig. 5"),
    ):
        row = []
        for metric, label in (("ser", "SER"), ("fnr", "FNR")):
            p = figure(
                width=520, height=360, title=f"{label}, {setting} (Lyu, Su & Li 2017, {fig}, Zipf, ε={EPSILON})",
                x_axis_label="c (top-c)", y_axis_label=label, y_range=(-0.05, 1.05),
                tools="pan,box_zoom,reset,save,hover",
                tooltips=[("method", "@method"), ("c", "@c"), (label, "@mean{0.000} ± @std{0.000}")],
            )
            for i, method in enumerate(methods):
                sub = table[table["method"] == method].sort_values("c")
                mean = sub[f"{metric}_mean"].to_numpy()
                std = sub[f"{metric}_std"].to_numpy()
                source = ColumnDataSource({
                    "c": sub["c"].to_numpy(), "mean": mean, "std": std,
                    "lower": mean - std, "upper": mean + std, "method": [method] * len(sub),
                })
                color = Category10_10[i % 10]
                p.line("c", "mean", source=source, color=color, line_width=2, legend_label=method)
                p.scatter("c", "mean", source=source, color=color, size=6, legend_label=method)
                p.add_layout(Whisker(source=source, base="c", lower="lower", upper="upper",
                                     line_color=color, line_alpha=0.5))
            p.legend.location = "bottom_right"
            p.legend.click_policy = "hide"
            p.legend.label_text_font_size = "8pt"
            row.append(p)
        panels.append(row)
    return gridplot(panels)


def main(argv=None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=100, help="shuffled runs per c (default 100)")
    parser.add_argument("--quick", action="store_true",
                        help="10 runs, c in {25, 100, 300} (a smoke test)")
    parser.add_argument("--seed", type=int, default=2017)
    parser.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    args = parser.parse_args(argv)
    runs = 10 if args.quick else args.runs
    c_values = QUICK_C_VALUES if args.quick else C_VALUES

    start = time.perf_counter()
    table = run(runs, c_values, args.seed)
    elapsed = time.perf_counter() - start

    from bokeh.io import save
    from bokeh.resources import INLINE

    args.out.mkdir(parents=True, exist_ok=True)
    table.to_csv(args.out / "svt_selection.csv", index=False)
    report = markdown(table, elapsed)
    (args.out / "svt_selection.md").write_text(report, encoding="utf-8")
    save(build_figure(table), args.out / "svt_selection.html", resources=INLINE,
         title="SVT vs EM top-c selection (Lyu, Su & Li 2017, Fig. 4-5, Zipf)")
    print(report)
    print(f"wrote {args.out}/svt_selection.{{csv,md,html}} in {elapsed:.1f} s")
    return table


if __name__ == "__main__":
    main()
