"""Reproduce Chen 2018, Fig. 4.3 and Tables 4.1-4.2: what PriRP's private residual plots can tell apart.

Part A (Fig. 4.3(e, j), Chen 2018, §4.2.3 "Ability to verify regression assumptions"): one
confidential data set per scenario ("Ideal" y = x + N(0, 1), "Heteroscedastic" y = x + N(0, x),
"Nonlinear" y = 0.01x² + x + N(0, 1), x ~ U[1, 50]) for n in {500, 1000, 2000, 5000}, fitted by
OLS; repeated PriRP plots (DAWA) of each; Sim = the TVD on the 10×10 grid over the *true Ideal*
plot between that plot and the noisy plot (:func:`residual_plot_similarity`); the separation is
the TVD between the Sim distributions of I and H, and of I and N
(:func:`discriminatory_power`, 20 equal bins over the pooled range), against n·ε.
Published: TVD > 0.95 for n·ε >= 1000 and >= 0.9 for n·ε >= 500. The text uses 1000 noisy
plots per case; we use ``--runs`` (default 200).

Part B (Table 4.1, "Discriminatory power"): M1 y = x + N(0, 1), M2 y = x + N(0, αx + 1),
M3 y = x + γx² + N(0, 1), x ~ U[0, 50]. Read as the text's simulations did: in M2, αx + 1 is the
standard deviation (R's convention), and the residuals are against the posited line y = x; with
both readings the non-private column reproduces (the old reading, a variance and an OLS refit,
is run beside it). The text leaves the grid of "T_k" unstated; here every
distribution is taken on the 10×10 grid (+0.1 margin) of one fixed reference M1 plot at the same
n, with the mass outside the grid as a 101st cell (the convention of Sim). Non-private:
D_k = TVD(T_k, E[T_1]) with E[T_1] the mean of the M1 replicates, a fresh data set per replicate.
Private (n = n·ε, ε = 1): D̃_k = Sim(reference M1 plot, PriRP of a fresh Mk data set). The
smallest α (γ) on a fixed ascending grid with TVD(D_1, D_2) >= 0.95 (TVD(D_1, D_3)) is reported;
the scan stops at the first success. Replicates: ``--table-runs`` (default 100; the text: 1000).

Part C (Table 4.2, "Choice of perturbation algorithm"): n = 5000, the three scenarios,
ε in {0.01, 0.05, 0.1, 0.5, 1}, 20 trials each (as the text); the error of a publisher on a
(data set, ε) setting is the mean Sim between the true plot and its own PriRP plot; regret by
:func:`regret` (Chen 2018, eq. 4.2-4.3). Each (relation, scenario, ε, publisher) has its own seeded
generator, so changing one publisher does not reshuffle the noise of the others.

Every part runs under both neighbour relations of :mod:`dpwidgets.engine.diagnostics`:
``add/remove`` (the text's scales: the publisher gets ε2) and ``replace-one`` (the default of
the engine: the publisher gets ε2/2). ``epsilon1 = min(0.3ε, 470/n)``, θ = 0.95, μ = 1 and the
text's centre 0 for both bounds throughout.

Run from the repository root::

    python -m benchmarks.diagnostics_prirp            # ~2-3 min on 2 cores
    python -m benchmarks.diagnostics_prirp --quick    # smoke run (< 30 s)

Writes ``benchmarks/results/diagnostics_prirp.{csv,md,html}``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from dpwidgets._progress import progress
from dpwidgets.engine.diagnostics import (
    discriminatory_power,
    private_residual_plot,
    regret,
    residual_plot_similarity,
)
from dpwidgets.families.diagnostics.standins import (
    discriminatory_scenario,
    fit_model,
    posited_residuals,
    residual_scenario,
)

RESULTS = Path(__file__).resolve().parent / "results"
MODES = ("add/remove", "replace-one")
SCENARIOS = ("ideal", "heteroscedastic", "nonlinear")

# Part A
SIZES = (500, 1000, 2000, 5000)
PRODUCTS = (100, 250, 500, 1000, 2000)
# Part B
TABLE_PRODUCTS = (1000, 2000, 5000)
# Each grid holds the published values (Table 4.1), so a reproduction shows as an equality.
ALPHAS = (0.001, 0.002, 0.004, 0.0041, 0.006, 0.0067, 0.008, 0.0097, 0.01, 0.015, 0.02, 0.03,
          0.05, 0.1, 0.2)
GAMMAS = (0.00005, 0.0001, 0.000135, 0.0002, 0.000215, 0.0003, 0.000301, 0.0005, 0.001,
          0.0015, 0.002, 0.003, 0.005, 0.01)
#: Table 4.1's data, as read here: "text" = N(0, αx + 1) gives M2's standard deviation (R's
#: convention) and the residuals are against the posited line y = x; "variance-ols" = the old
#: reading (αx + 1 a variance, residuals of an OLS refit), run for the non-private column only.
READINGS = ("text", "variance-ols")
PUBLISHED_41 = {  # Chen 2018, Table 4.1 (= Chen et al. 2016, Table 1): n or n·ε -> (min α, min γ)
    "non-private": {1000: (0.0097, 0.000301), 2000: (0.0067, 0.000215), 5000: (0.0041, 0.000135)},
    "private": {1000: (0.02, 0.002), 2000: (0.01, 0.0015), 5000: (0.008, 0.001)},
}
# Part C
REGRET_N = 5000
REGRET_EPSILONS = (0.01, 0.05, 0.1, 0.5, 1.0)
REGRET_TRIALS = 20
PUBLISHERS_2D = ("dawa", "ahp_greedy", "identity", "hb", "ag", "uniform", "mwem")
PUBLISHED_42 = {"dawa": 1.00395, "ahp_greedy": 1.0756, "identity": 1.108, "hb": 1.212,
                "ag": 1.215, "uniform": 5.238, "mwem": 5.258}
LABEL = {"dawa": "DAWA (dawa_dyadic)", "ahp_greedy": "AHP (ahp_greedy)", "identity": "LM",
         "hb": "HB", "ag": "AG", "uniform": "Uniform", "mwem": "MWEM"}


def _plot(data) -> np.ndarray:
    """OLS fit (ordinary, as in the text) -> the (prediction, residual) points."""
    fit = fit_model(data.X, data.y, "ols")
    return np.column_stack((fit.predictions, fit.residuals))


def _prirp(points: np.ndarray, epsilon: float, rng, mode: str, publisher: str = "dawa"):
    return private_residual_plot(points[:, 0], points[:, 1], epsilon, rng, publisher=publisher,
                                 neighbours=mode, n=points.shape[0]).points


# ---------------------------------------------------------------------------------------------
# Part A: Fig. 4.3
# ---------------------------------------------------------------------------------------------


def run_separation(runs: int, sizes, products, rng) -> pd.DataFrame:
    rows = []
    for n in progress(sizes, desc="diagnostics_prirp separation"):
        plots = {s: _plot(residual_scenario(s, n, rng)) for s in SCENARIOS}
        truth = plots["ideal"]
        for product in products:
            eps = product / n
            for mode in MODES:
                sims = {s: np.array([residual_plot_similarity(truth, _prirp(plots[s], eps, rng, mode))
                                     for _ in range(runs)]) for s in SCENARIOS}
                row = {"part": "A: Fig. 4.3", "n": n, "n_eps": product, "epsilon": eps,
                       "neighbours": mode, "runs": runs}
                for s in SCENARIOS:
                    row[f"sim_{s}_mean"] = float(sims[s].mean())
                    row[f"sim_{s}_std"] = float(sims[s].std())
                row["tvd_I_H"] = discriminatory_power(sims["ideal"], sims["heteroscedastic"])
                row["tvd_I_N"] = discriminatory_power(sims["ideal"], sims["nonlinear"])
                rows.append(row)
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Part B: Table 4.1
# ---------------------------------------------------------------------------------------------


def _cells(points: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """10×10 cell fractions over [lo, hi] plus the fraction outside (the 101st cell)."""
    h = np.histogram2d(points[:, 0], points[:, 1], bins=10,
                       range=[(lo[0], hi[0]), (lo[1], hi[1])])[0].ravel() / points.shape[0]
    return np.append(h, 1.0 - h.sum())


def _model_plot(model: str, n: int, rng, value: float, reading: str = "text") -> np.ndarray:
    kw = {"alpha": value} if model == "M2" else {"gamma": value} if model == "M3" else {}
    if reading == "text":
        data = discriminatory_scenario(model, n, rng, noise="sd", **kw)
        return np.column_stack(posited_residuals(data))
    return _plot(discriminatory_scenario(model, n, rng, noise="variance", **kw))


def _stat(mode, model, value, n, rng, reference, lo, hi, mean_t1, reading="text") -> float:
    """D_k of one fresh ``model`` data set: non-private (mode None) or via PriRP at ε = 1."""
    points = _model_plot(model, n, rng, value, reading)
    if mode is None:
        return float(0.5 * np.abs(_cells(points, lo, hi) - mean_t1).sum())
    return residual_plot_similarity(reference, _prirp(points, 1.0, rng, mode))


def run_table41(runs: int, products, rng) -> pd.DataFrame:
    rows = []
    for reading in progress(READINGS, desc="diagnostics_prirp Table 4.1"):
        for n in products:
            reference = _model_plot("M1", n, rng, 0.0, reading)
            lo, hi = reference.min(axis=0) - 0.1, reference.max(axis=0) + 0.1
            # Non-private: D_k = TVD(T_k, E[T_1]).
            t1 = np.array([_cells(_model_plot("M1", n, rng, 0.0, reading), lo, hi)
                           for _ in range(runs)])
            mean_t1 = t1.mean(axis=0)
            d1 = 0.5 * np.abs(t1 - mean_t1).sum(axis=1)
            settings = [("non-private", None)]
            if reading == "text":
                settings += [("private", m) for m in MODES]
            for setting, mode in settings:
                ctx = (n, rng, reference, lo, hi, mean_t1, reading)
                base = d1 if mode is None else np.array([_stat(mode, "M1", 0.0, *ctx)
                                                           for _ in range(runs)])
                for model, grid in (("M2", ALPHAS), ("M3", GAMMAS)):
                    found, tvd_at = float("nan"), {}
                    for value in grid:
                        d = np.array([_stat(mode, model, value, *ctx) for _ in range(runs)])
                        tvd_at[value] = discriminatory_power(base, d)
                        if tvd_at[value] >= 0.95:
                            found = value
                            break
                    idx = 0 if model == "M2" else 1
                    rows.append({
                        "part": "B: Table 4.1", "reading": reading, "setting": setting,
                        "neighbours": mode or "", "n": n, "n_eps": n if mode else np.nan,
                        "epsilon": 1.0 if mode else np.nan, "model": model,
                        "parameter": "alpha" if model == "M2" else "gamma", "runs": runs,
                        "min_value": found, "published": PUBLISHED_41[setting][n][idx],
                        "tvd_scan": "; ".join(f"{v:g}:{t:.2f}" for v, t in tvd_at.items()),
                    })
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Part C: Table 4.2
# ---------------------------------------------------------------------------------------------


def run_table42(trials: int, epsilons, rng) -> pd.DataFrame:
    rows = []
    plots = {s: _plot(residual_scenario(s, REGRET_N, rng)) for s in SCENARIOS}
    # One generator per (relation, scenario, ε, publisher): a change in one publisher's use of
    # randomness does not reshuffle the noise of the others.
    base = int(rng.integers(2**63))
    for mode in progress(MODES, desc="diagnostics_prirp Table 4.2"):
        for s in SCENARIOS:
            for eps in epsilons:
                for pub in PUBLISHERS_2D:
                    start = time.perf_counter()
                    task_rng = np.random.default_rng(
                        [base, MODES.index(mode), SCENARIOS.index(s), int(round(eps * 1e4)),
                         PUBLISHERS_2D.index(pub)])
                    sims = [residual_plot_similarity(plots[s],
                                                     _prirp(plots[s], eps, task_rng, mode, pub))
                            for _ in range(trials)]
                    rows.append({"part": "C: Table 4.2", "neighbours": mode, "scenario": s,
                                 "n": REGRET_N, "epsilon": eps, "publisher": pub,
                                 "runs": trials, "sim_mean": float(np.mean(sims)),
                                 "seconds_per_run": (time.perf_counter() - start) / trials})
    return pd.DataFrame(rows)


def regrets(table: pd.DataFrame) -> pd.DataFrame:
    out = []
    for mode in MODES:
        sub = table[table.neighbours == mode]
        errors = {p: sub[sub.publisher == p].sort_values(["scenario", "epsilon"]).sim_mean.to_numpy()
                  for p in PUBLISHERS_2D}
        for p, v in regret(errors).items():
            out.append({"neighbours": mode, "publisher": p, "regret": v,
                        "published": PUBLISHED_42[p]})
    return pd.DataFrame(out)


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------


def markdown(a: pd.DataFrame, b: pd.DataFrame, c: pd.DataFrame, reg: pd.DataFrame,
             elapsed: float) -> str:
    lines = [
        "# PriRP: separation, discriminatory power and publisher regret (Chen 2018, Fig. 4.3, "
        "Tables 4.1-4.2)",
        "",
        f"Generated by `python -m benchmarks.diagnostics_prirp` in {elapsed:.0f} s. Engine: "
        "`private_residual_plot` (DAWA = `dawa_dyadic`, the engine's simplified DAWA), "
        "ε1 = min(0.3ε, 470/n), θ = 0.95, μ = 1, centres 0.",
        "",
        f"## Fig. 4.3(e, j): TVD between Sim distributions, {int(a.runs.iloc[0])} noisy plots "
        "per case",
        "",
        "Published: TVD > 0.95 when n·ε >= 1000, >= 0.9 when n·ε >= 500.",
        "",
        "| neighbours | n | " + " | ".join(f"n·ε={p}" for p in sorted(a.n_eps.unique())) + " |",
        "|---|---|" + "---|" * a.n_eps.nunique(),
    ]
    for mode in MODES:
        for n in sorted(a.n.unique()):
            sub = a[(a.neighbours == mode) & (a.n == n)].set_index("n_eps")
            cells = [f"I-H {sub.at[p, 'tvd_I_H']:.2f} / I-N {sub.at[p, 'tvd_I_N']:.2f}"
                     for p in sorted(a.n_eps.unique())]
            lines.append(f"| {mode} | {n} | " + " | ".join(cells) + " |")
    lines += ["", "Mean Sim with the true Ideal plot (I / H / N), add/remove:", "",
              "| n | " + " | ".join(f"n·ε={p}" for p in sorted(a.n_eps.unique())) + " |",
              "|---|" + "---|" * a.n_eps.nunique()]
    for n in sorted(a.n.unique()):
        sub = a[(a.neighbours == "add/remove") & (a.n == n)].set_index("n_eps")
        cells = [f"{sub.at[p, 'sim_ideal_mean']:.2f} / {sub.at[p, 'sim_heteroscedastic_mean']:.2f}"
                 f" / {sub.at[p, 'sim_nonlinear_mean']:.2f}" for p in sorted(a.n_eps.unique())]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    lines += ["", f"## Table 4.1: smallest α (M2) and γ (M3) with TVD >= 0.95, "
              f"{int(b.runs.iloc[0])} replicates", "",
              "Reading `text` (the default of `discriminatory_scenario`): in M2, N(0, αx + 1) "
              "gives the standard deviation (R's convention), and the residuals are against "
              "the posited line y = x (`posited_residuals`). Reading `variance-ols` (the old "
              "one): αx + 1 is a variance and the residuals are an OLS refit's. The grids hold "
              "the published values.", "",
              "| reading | setting | neighbours | n (private: n·ε, ε = 1) | min α ours | "
              "min α published | min γ ours | min γ published |",
              "|---|---|---|---|---|---|---|---|"]
    for (reading, setting, mode, n), sub in b.groupby(["reading", "setting", "neighbours", "n"],
                                                      sort=False):
        m2 = sub[sub.model == "M2"].iloc[0]
        m3 = sub[sub.model == "M3"].iloc[0]
        lines.append(f"| {reading} | {setting} | {mode or '-'} | {n} | {m2.min_value:g} | "
                     f"{m2.published:g} | {m3.min_value:g} | {m3.published:g} |")
    lines += ["", "(nan: no value on the grid reached 0.95.) Scan (value: TVD):", ""]
    for _, row in b.iterrows():
        lines.append(f"- {row.reading} {row.setting} {row.neighbours or ''} n={row.n} "
                     f"{row.model}: {row.tvd_scan}")
    lines += ["", f"## Table 4.2: average regret in terms of Sim (n = {REGRET_N}, 3 scenarios × "
              f"ε ∈ {list(REGRET_EPSILONS)}, {int(c.runs.iloc[0])} trials)", "",
              "| publisher | published | ours add/remove | ours replace-one |",
              "|---|---|---|---|"]
    for p in PUBLISHERS_2D:
        r = reg[reg.publisher == p].set_index("neighbours")
        lines.append(f"| {LABEL[p]} | {PUBLISHED_42[p]:g} | {r.at['add/remove', 'regret']:.3f} "
                     f"| {r.at['replace-one', 'regret']:.3f} |")
    lines += ["", "Mean Sim per setting (add/remove):", "",
              "| scenario | ε | " + " | ".join(LABEL[p] for p in PUBLISHERS_2D) + " |",
              "|---|---|" + "---|" * len(PUBLISHERS_2D)]
    sub = c[c.neighbours == "add/remove"]
    for (s, eps), g in sub.groupby(["scenario", "epsilon"]):
        g = g.set_index("publisher")
        lines.append(f"| {s} | {eps:g} | " + " | ".join(f"{g.at[p, 'sim_mean']:.3f}"
                                                      for p in PUBLISHERS_2D) + " |")
    lines.append("")
    return "\n".join(lines)


def build_figure(a: pd.DataFrame, c: pd.DataFrame):
    from bokeh.layouts import gridplot
    from bokeh.palettes import Category10_10
    from bokeh.plotting import figure

    panels = []
    for col, title in (("tvd_I_H", "TVD(I, H)"), ("tvd_I_N", "TVD(I, N)")):
        p = figure(width=480, height=340, x_axis_type="log", y_range=(0, 1.05),
                   title=f"{title} vs n·ε (Chen 2018, Fig. 4.3), solid add/remove, dashed replace-one",
                   x_axis_label="n·ε", y_axis_label="TVD of Sim distributions",
                   tools="pan,box_zoom,reset,save,hover")
        for i, n in enumerate(sorted(a.n.unique())):
            for mode, dash in zip(MODES, ("solid", "dashed"), strict=True):
                sub = a[(a.n == n) & (a.neighbours == mode)].sort_values("n_eps")
                p.line(sub.n_eps, sub[col], color=Category10_10[i], line_dash=dash, line_width=2,
                       legend_label=f"n={n}")
                p.scatter(sub.n_eps, sub[col], color=Category10_10[i], size=5)
        p.line([100, 5000], [0.95, 0.95], color="grey", line_dash="dotted")
        p.legend.location = "bottom_right"
        p.legend.click_policy = "hide"
        panels.append(p)
    row = []
    for s in SCENARIOS:
        p = figure(width=480, height=340, x_axis_type="log", y_axis_type="log",
                   title=f"Mean Sim by publisher, {s}, add/remove (Chen 2018, Fig. 4.6)",
                   x_axis_label="ε", y_axis_label="mean Sim", tools="pan,box_zoom,reset,save")
        for i, pub in enumerate(PUBLISHERS_2D):
            sub = c[(c.scenario == s) & (c.publisher == pub)
                    & (c.neighbours == "add/remove")].sort_values("epsilon")
            p.line(sub.epsilon, sub.sim_mean, color=Category10_10[i], line_width=2,
                   legend_label=LABEL[pub])
        p.legend.label_text_font_size = "7pt"
        p.legend.click_policy = "hide"
        row.append(p)
    return gridplot([panels + [None], row])


def main(argv: list[str] | None = None) -> pd.DataFrame:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200,
                        help="noisy plots per case for Fig. 4.3 (default 200; the text: 1000)")
    parser.add_argument("--table-runs", type=int, default=100,
                        help="replicates per model for Table 4.1 (default 100; the text: 1000)")
    parser.add_argument("--quick", action="store_true", help="smoke run (< 30 s)")
    parser.add_argument("--seed", type=int, default=2018)
    parser.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    args, _ = parser.parse_known_args(argv)
    rng = np.random.default_rng(args.seed)
    if args.quick:
        runs, table_runs, trials = 10, 10, 3
        sizes, products, table_products, epsilons = (1000,), (500, 1000), (1000,), (0.1, 1.0)
    else:
        runs, table_runs, trials = args.runs, args.table_runs, REGRET_TRIALS
        sizes, products, table_products, epsilons = SIZES, PRODUCTS, TABLE_PRODUCTS, REGRET_EPSILONS

    start = time.perf_counter()
    a = run_separation(runs, sizes, products, rng)
    t_a = time.perf_counter() - start
    b = run_table41(table_runs, table_products, rng)
    t_b = time.perf_counter() - start - t_a
    c = run_table42(trials, epsilons, rng)
    reg = regrets(c)
    elapsed = time.perf_counter() - start

    from bokeh.io import save
    from bokeh.resources import INLINE

    args.out.mkdir(parents=True, exist_ok=True)
    table = pd.concat([a, b, c, reg.assign(part="C: Table 4.2 regret")], ignore_index=True)
    table.to_csv(args.out / "diagnostics_prirp.csv", index=False)
    report = markdown(a, b, c, reg, elapsed)
    report += (f"\nTimings: Fig. 4.3 {t_a:.0f} s, Table 4.1 {t_b:.0f} s, "
               f"Table 4.2 {elapsed - t_a - t_b:.0f} s.\n")
    (args.out / "diagnostics_prirp.md").write_text(report, encoding="utf-8")
    save(build_figure(a, c), args.out / "diagnostics_prirp.html", resources=INLINE,
         title="PriRP (Chen 2018, Fig. 4.3, Tables 4.1-4.2)")
    sys.stdout.write(report + "\n")
    return table


if __name__ == "__main__":
    main(sys.argv[1:])
