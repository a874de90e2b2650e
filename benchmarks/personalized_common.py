"""Shared set-up of the personalized-DP benchmarks (Li 2017, Ch. 5, Fig. 5.2-5.11).

Not a benchmark itself (no ``main``): ``personalized_counts`` and ``personalized_logistic``
import it. Trial ``i`` of a setting draws from ``SeedSequence([seed, *key, i])``; the data
(census-like stand-ins of the text's IPUMS extracts) are one fixed draw per data set.
"""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pandas as pd

from dpwidgets.families.personalized.standins import BUDGET_SETUPS

RESULTS = Path(__file__).resolve().parent / "results"
DATA_SEED = 0
SEED = 2017

#: Mechanism labels in the figures and tables.
LABELS = {
    "sampling": "Sampling (Jorgensen et al.)",
    "minimum": "Minimum",
    "privacy_aware": "Privacy-aware (Alg. 10)",
    "privacy_aware_T2": "Privacy-aware, T = 2 rounds",
    "utility": "Utility-based (Alg. 11)",
    "non_private": "non-private",
    "majority": "majority class (no model)",
}
FLAT = ("minimum", "privacy_aware", "privacy_aware_T2", "utility")


def rng_for(seed: int, *key) -> np.random.Generator:
    """A generator for one (setting, trial): ``key`` items are ints or strings."""
    words = [int(k) if isinstance(k, int | np.integer) else zlib.crc32(str(k).encode()) for k in key]
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


def thresholds(budgets: np.ndarray, points: int) -> list[tuple[str, float]]:
    """``(slot, eps_T)``: ``points`` equally spaced thresholds from min to max budget (slots
    ``g0``, ``g1``, ...) and the mean budget (slot ``mean``); an inner grid point closer than
    2% of the range to the mean gives way to it."""
    lo, hi, mean = float(budgets.min()), float(budgets.max()), float(budgets.mean())
    grid = np.linspace(lo, hi, points)
    out = [(f"g{i}", float(g)) for i, g in enumerate(grid)
           if i in (0, points - 1) or abs(g - mean) >= 0.02 * (hi - lo)]
    return [*out, ("mean", mean)]


def setup_label(name: str) -> str:
    return BUDGET_SETUPS[name][0]


def summarise(rows: pd.DataFrame, value: str) -> pd.DataFrame:
    """Mean and s.d. over trials of ``value`` per dataset, setup, mechanism and threshold slot."""
    keys = ["dataset", "setup", "mechanism", "slot"]
    out = rows.groupby(keys, dropna=False, sort=False).agg(
        threshold=("threshold", "mean"),
        mean=(value, "mean"),
        sd=(value, "std"),
        trials=(value, "size"),
        releases=("releases", "mean"),
        budget_used=("budget_used", "mean"),
    ).reset_index()
    return out


def claims_table(claims: list[tuple[str, str, str, str]]) -> list[str]:
    lines = ["| claim (Li 2017) | setting | ours | verdict |", "|---|---|---|---|"]
    lines += [f"| {c} | {s} | {o} | {v} |" for c, s, o, v in claims]
    return lines


def build_figure(summary: pd.DataFrame, y_label: str, title: str, log_y: bool):
    """One panel per (dataset, setup): Sampling against its threshold, the others flat."""
    from bokeh.layouts import gridplot
    from bokeh.palettes import Category10_10
    from bokeh.plotting import figure

    panels = []
    colours = dict(zip(["sampling", *FLAT, "non_private", "majority"], Category10_10, strict=False))
    for (dataset, setup), sub in summary.groupby(["dataset", "setup"], sort=False):
        samp = sub[sub.mechanism == "sampling"].sort_values("threshold")
        p = figure(width=440, height=320, title=f"{dataset}: {setup_label(setup)}",
                   x_axis_label="sampling threshold eps_T", y_axis_label=y_label,
                   y_axis_type="log" if log_y else "linear", tools="pan,box_zoom,reset,save,hover")
        p.line(samp.threshold, samp["mean"], color=colours["sampling"], line_width=2,
               legend_label=LABELS["sampling"])
        p.scatter(samp.threshold, samp["mean"], color=colours["sampling"], size=6)
        lo, hi = float(samp.threshold.min()), float(samp.threshold.max())
        for mech in (*FLAT, "non_private", "majority"):
            row = sub[sub.mechanism == mech]
            if row.empty:
                continue
            value = float(row["mean"].iloc[0])
            p.line([lo, hi], [value, value], color=colours[mech], line_width=2,
                   line_dash="dotted" if mech in ("non_private", "majority") else "dashed",
                   legend_label=LABELS[mech])
        p.legend.label_text_font_size = "7pt"
        p.legend.click_policy = "hide"
        p.title.text_font_size = "9pt"
        panels.append(p)
    return gridplot(panels, ncols=2)


def save_outputs(name: str, out: Path, rows: pd.DataFrame, report: str, fig, title: str) -> None:
    from bokeh.io import save
    from bokeh.resources import INLINE

    out.mkdir(parents=True, exist_ok=True)
    rows.to_csv(out / f"{name}.csv", index=False)
    (out / f"{name}.md").write_text(report, encoding="utf-8")
    save(fig, out / f"{name}.html", resources=INLINE, title=title)
