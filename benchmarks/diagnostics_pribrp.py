"""Reproduce Chen 2018, Table 4.5 and Fig. 4.14-4.15: private binned residual plots (PriBRP).

Scenarios (Chen 2018, §4.4.3): x ~ U[-1, 1]; M1 logit = 2x, M2 logit = x² + 2x - 1; both fitted by
logistic regression with the linear term only (:func:`fit_model`, sklearn's default ridge
C = 1). ShapeD (eq. 4.13, :func:`shape_distance`) compares two binned residual plots by the
OLS slopes of their halves p <= 0.5 and p > 0.5; separations are TVDs between ShapeD
distributions (:func:`discriminatory_power`, 20 equal bins over the pooled range).

Table 4.5 (non-private): ShapeD between the real BRP (:func:`binned_residuals`, 2^s equal-size
bins) of a fresh M1 / M2 data set and the ideal plot (both slopes 0); TVD between the two
distributions over ``--table-runs`` data sets (default 200; the text: 500) per scale in
{500, ..., 3500}.

Fig. 4.14(e, j): one data set per model at n = 10,000 (seeded); ShapeD between the real BRP of
the M1 data set and ``--runs`` PriBRP plots (default 60; the text: 500) of each model, against
n·ε in {1000, 2000, 5000, 10000, 20000, 50000} (ε = n·ε / n). Published: TVD > 0.9 when
n·ε >= 20000.

Fig. 4.15: budget ratio ρ (ε1 = ε2 = ρε, ε3 = (1 - 2ρ)ε) in {0.05, ..., 0.45} at n = 10,000 and
ε in {0.1, 1} (the text does not name its two ε); mean ShapeD between each model's real BRP and
its PriBRP plot over ``--rho-runs`` trials (default 20; the text: 100). Published: smaller ρ
better, ρ = 0.15 a good choice.

PriBRP's noise depends on the neighbour relation (Alg. 14 and the sums), so Fig. 4.14-4.15 run
under ``add/remove`` (the text's scales) and ``replace-one`` (the engine's default).
The work is split over ``--workers`` processes (default 2), every task with its own seed.

Run from the repository root::

    python -m benchmarks.diagnostics_pribrp            # a few minutes on 2 cores
    python -m benchmarks.diagnostics_pribrp --quick    # smoke run (< 30 s)

Writes ``benchmarks/results/diagnostics_pribrp.{csv,md,html}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

RESULTS = Path(__file__).resolve().parent / "results"
MODES = ("add/remove", "replace-one")
MODELS = ("M1", "M2")
N = 10_000
PRODUCTS = (1000, 2000, 5000, 10_000, 20_000, 50_000)
RHOS = (0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.45)
RHO_EPSILONS = (0.1, 1.0)
SCALES = (500, 1000, 1500, 2000, 2500, 3000, 3500)
PUBLISHED_45 = dict(zip(SCALES, (0.554, 0.69, 0.81, 0.9, 0.94, 0.972, 0.982), strict=True))


@cache
def dataset(model: str, n: int, seed: int = 11):
    """One seeded data set of ``model``, fitted with the linear term: (labels, probabilities)."""
    from dpwidgets.families.diagnostics.standins import fit_model, logistic_scenario

    data = logistic_scenario(model, n, np.random.default_rng([seed, n, int(model[1])]))
    fit = fit_model(data.X, data.y, "logistic")
    return data.y.astype(np.int8), fit.predictions


def _task(spec: dict) -> dict:
    from dpwidgets.engine.diagnostics import (
        binned_residuals,
        private_binned_residual_plot,
        shape_distance,
    )
    from dpwidgets.families.diagnostics.standins import fit_model, logistic_scenario

    rng = np.random.default_rng(spec["seed"])
    start = time.perf_counter()
    values = []
    if spec["kind"] == "nonprivate":
        for _ in range(spec["runs"]):
            data = logistic_scenario(spec["model"], spec["n"], rng)
            fit = fit_model(data.X, data.y, "logistic")
            values.append(shape_distance(*binned_residuals(data.y, fit.predictions)))
    else:
        labels, probs = dataset(spec["model"], spec["n"])
        ref_model = "M1" if spec["kind"] == "separation" else spec["model"]
        reference = binned_residuals(*dataset(ref_model, spec["n"]))
        rho = spec.get("rho", 0.15)
        for _ in range(spec["runs"]):
            brp = private_binned_residual_plot(labels, probs, spec["epsilon"], rng,
                                               split=(rho, rho, 1.0 - 2.0 * rho),
                                               neighbours=spec["neighbours"], n=labels.size)
            values.append(shape_distance(brp.mean_predicted, brp.mean_residual, *reference))
    out = {k: v for k, v in spec.items() if k != "seed"}
    out.update(shaped_mean=float(np.mean(values)), shaped_std=float(np.std(values)),
               values=values, seconds_per_run=(time.perf_counter() - start) / spec["runs"])
    return out


def tasks(quick: bool, runs: int, rho_runs: int, table_runs: int) -> list[dict]:
    scales = (500, 2000) if quick else SCALES
    products = (5000, 20_000) if quick else PRODUCTS
    rhos = (0.05, 0.15, 0.45) if quick else RHOS
    specs = []
    for n in scales:
        for m in MODELS:
            specs.append(dict(kind="nonprivate", model=m, n=n, runs=table_runs))
    for mode in MODES:
        for product in products:
            for m in MODELS:
                specs.append(dict(kind="separation", model=m, n=N, n_eps=product,
                                  epsilon=product / N, neighbours=mode, runs=runs))
        for eps in RHO_EPSILONS:
            for rho in rhos:
                for m in MODELS:
                    specs.append(dict(kind="rho", model=m, n=N, epsilon=eps, rho=rho,
                                      neighbours=mode, runs=rho_runs))
    return specs


def separations(table: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    from dpwidgets.engine.diagnostics import discriminatory_power

    rows = []
    for key, g in table.groupby(keys):
        g = g.set_index("model")
        rows.append(dict(zip(keys, key, strict=True))
                     | {"tvd_M1_M2": discriminatory_power(g.at["M1", "values"], g.at["M2", "values"]),
                        "shaped_M1": g.at["M1", "shaped_mean"], "shaped_M2": g.at["M2", "shaped_mean"],
                        "runs": int(g.runs.iloc[0])})
    return pd.DataFrame(rows)


def markdown(t45, f14, f15, elapsed, workers) -> str:
    lines = [
        "# PriBRP: separating a good from a bad logistic fit (Chen 2018, Table 4.5, Fig. 4.14-4.15)",
        "",
        f"Generated by `python -m benchmarks.diagnostics_pribrp` in {elapsed:.0f} s ({workers} "
        "worker processes). M1 logit = 2x, M2 logit = x² + 2x - 1, x ~ U[-1, 1], fitted with "
        "the linear term only.",
        "",
        f"## Table 4.5 (non-private): TVD(ShapeD_1, ShapeD_2), {int(t45.runs.iloc[0])} data "
        "sets per scale (the text: 500)",
        "",
        "| scale | " + " | ".join(str(int(n)) for n in t45.n) + " |",
        "|---|" + "---|" * len(t45),
        "| ours | " + " | ".join(f"{v:.3f}" for v in t45.tvd_M1_M2) + " |",
        "| published | " + " | ".join(f"{PUBLISHED_45.get(int(n), float('nan')):g}"
                                     for n in t45.n) + " |",
        "",
        f"## Fig. 4.14(e, j): TVD between the ShapeD distributions of M1 and M2 plots (n = {N}, "
        f"{int(f14.runs.iloc[0])} PriBRP plots per model)",
        "",
        "Published: TVD > 0.9 when n·ε >= 20000.",
        "",
        "| neighbours | " + " | ".join(f"n·ε={int(p)}" for p in sorted(f14.n_eps.unique())) + " |",
        "|---|" + "---|" * f14.n_eps.nunique(),
    ]
    for mode in MODES:
        sub = f14[f14.neighbours == mode].set_index("n_eps")
        lines.append(f"| {mode} | " + " | ".join(
            f"{sub.at[p, 'tvd_M1_M2']:.2f} (ShapeD {sub.at[p, 'shaped_M1']:.2f} vs "
            f"{sub.at[p, 'shaped_M2']:.2f})" for p in sorted(f14.n_eps.unique())) + " |")
    lines += ["", f"## Fig. 4.15: mean ShapeD to the model's own real BRP vs budget ratio ρ "
              f"(n = {N}, {int(f15.runs.iloc[0])} trials)", "",
              "Published: smaller ρ better over a range; ρ = 0.15 a good choice.", "",
              "| neighbours | model | ε | " + " | ".join(f"ρ={r:g}" for r in sorted(f15.rho.unique()))
              + " | best ρ |", "|---|---|---|" + "---|" * (f15.rho.nunique() + 1)]
    for (mode, m, eps), g in f15.groupby(["neighbours", "model", "epsilon"]):
        g = g.set_index("rho").sort_index()
        lines.append(f"| {mode} | {m} | {eps:g} | " + " | ".join(
            f"{v:.3f}" for v in g.shaped_mean) + f" | {g.shaped_mean.idxmin():g} |")
    lines.append("")
    return "\n".join(lines)


def build_figure(t45, f14, f15):
    from bokeh.layouts import gridplot
    from bokeh.palettes import Category10_10
    from bokeh.plotting import figure

    p1 = figure(width=420, height=320, title="Table 4.5: non-private TVD vs scale",
                x_axis_label="n", y_axis_label="TVD", y_range=(0, 1.05),
                tools="pan,box_zoom,reset,save,hover")
    p1.line(t45.n, t45.tvd_M1_M2, line_width=2, legend_label="ours")
    p1.line(list(PUBLISHED_45), list(PUBLISHED_45.values()), line_dash="dashed", color="black",
            legend_label="published")
    p1.legend.location = "bottom_right"
    p2 = figure(width=420, height=320, x_axis_type="log", y_range=(0, 1.05),
                title="Fig. 4.14(e, j): TVD(M1, M2) vs n·ε", x_axis_label="n·ε",
                y_axis_label="TVD", tools="pan,box_zoom,reset,save,hover")
    for i, mode in enumerate(MODES):
        sub = f14[f14.neighbours == mode].sort_values("n_eps")
        p2.line(sub.n_eps, sub.tvd_M1_M2, color=Category10_10[i], line_width=2, legend_label=mode)
        p2.scatter(sub.n_eps, sub.tvd_M1_M2, color=Category10_10[i], size=6)
    p2.line([1000, 50_000], [0.9, 0.9], color="grey", line_dash="dotted")
    p2.legend.location = "bottom_right"
    p3 = figure(width=420, height=320, y_axis_type="log", title="Fig. 4.15: mean ShapeD vs ρ",
                x_axis_label="ρ", y_axis_label="mean ShapeD", tools="pan,box_zoom,reset,save,hover")
    i = 0
    for (mode, m, eps), g in f15.groupby(["neighbours", "model", "epsilon"]):
        g = g.sort_values("rho")
        p3.line(g.rho, g.shaped_mean, color=Category10_10[i % 10], line_width=2,
                line_dash="solid" if mode == "add/remove" else "dashed",
                legend_label=f"{m} ε={eps:g} {mode}")
        i += 1
    p3.legend.label_text_font_size = "7pt"
    p3.legend.click_policy = "hide"
    return gridplot([[p1, p2, p3]])


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=60, help="PriBRP plots per case, Fig. 4.14")
    parser.add_argument("--rho-runs", type=int, default=20, help="trials per ρ, Fig. 4.15")
    parser.add_argument("--table-runs", type=int, default=200, help="data sets per scale, Table 4.5")
    parser.add_argument("--quick", action="store_true", help="smoke run (< 30 s)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=2018)
    parser.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    args, _ = parser.parse_known_args(argv)
    specs = tasks(True, 10, 5, 20) if args.quick else tasks(False, args.runs, args.rho_runs,
                                                           args.table_runs)
    for spec, seed in zip(specs, np.random.SeedSequence(args.seed).spawn(len(specs)), strict=True):
        spec["seed"] = seed

    from dpwidgets._progress import progress

    start = time.perf_counter()
    if args.workers > 1:
        with ProcessPoolExecutor(args.workers) as pool:
            results = list(progress(pool.map(_task, specs, chunksize=1), total=len(specs),
                                    desc="diagnostics_pribrp"))
    else:
        results = [_task(s) for s in progress(specs, desc="diagnostics_pribrp")]
    elapsed = time.perf_counter() - start
    table = pd.DataFrame(results)
    t45 = separations(table[table.kind == "nonprivate"], ["n"])
    f14 = separations(table[table.kind == "separation"], ["neighbours", "n_eps"])
    f15 = table[table.kind == "rho"].drop(columns="values")

    from bokeh.io import save
    from bokeh.resources import INLINE

    args.out.mkdir(parents=True, exist_ok=True)
    out = pd.concat([table.drop(columns="values"), t45.assign(kind="table4.5-tvd"),
                     f14.assign(kind="fig4.14-tvd")], ignore_index=True)
    out.to_csv(args.out / "diagnostics_pribrp.csv", index=False)
    report = markdown(t45, f14, f15, elapsed, args.workers)
    cpu = table.groupby("kind").apply(lambda g: (g.seconds_per_run * g.runs).sum(),
                                      include_groups=False)
    report += ("\nCPU seconds by part: "
               + ", ".join(f"{k} {v:.0f} s" for k, v in cpu.items()) + ".\n")
    (args.out / "diagnostics_pribrp.md").write_text(report, encoding="utf-8")
    save(build_figure(t45, f14, f15), args.out / "diagnostics_pribrp.html", resources=INLINE,
         title="PriBRP (Chen 2018, Table 4.5, Fig. 4.14-4.15)")
    sys.stdout.write(report + "\n")
    return out


if __name__ == "__main__":
    main(sys.argv[1:])
