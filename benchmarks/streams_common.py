"""Shared set-up of the stream benchmarks (Chen 2018, Ch. 5): data, seeds, tables, output.

Not a benchmark itself (no ``main``): ``streams_unit_counts``, ``streams_windows``,
``streams_events``, ``streams_hierarchy`` and ``streams_speed`` import it.

Data: the WiFi traces of Chen 2018, Table 5.1 are not public; :mod:`dpwidgets.families.streams.standins`
generates stand-ins with the published length and total (``wifi_stream``,
``multi_state_streams``), one fixed draw per stream (``DATA_SEED``). Trials differ only in the
mechanisms' noise: trial ``i`` of a setting draws from ``SeedSequence([seed, *key, i])``.
"""

from __future__ import annotations

import argparse
import zlib
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd

from dpwidgets.families.streams.standins import multi_state_streams, wifi_stream

RESULTS = Path(__file__).resolve().parent / "results"
STREAMS = ("Low_5", "Med_5", "High_5")
EPSILONS = (0.1, 0.01)  # Chen 2018, §5.6: every figure uses eps = 0.1 and 0.01
TEXT_TRIALS = 20  # Chen 2018, §5.6: "the average of 20 random trials"
DATA_SEED = 0  # the one stand-in draw of each stream
SEED = 2017
# A Grouper threshold 10x the text's default (theta = 50/eps_g instead of 5/eps_g). theta is
# public, so this costs no privacy; it is shown *next to* the text's default to explain the
# gap with the published figures, never instead of it.
THETA_ALT_TIMES_EPS_G = 50.0


@cache
def stream(name: str) -> np.ndarray:
    """The stand-in of ``Low_5`` / ``Med_5`` / ``High_5`` (57,901 counts, published total)."""
    counts = wifi_stream(name, np.random.default_rng(DATA_SEED))
    counts.setflags(write=False)
    return counts


@cache
def multi5() -> np.ndarray:
    """The stand-in of ``Multi_5``: 128 states x 20,000 steps, total 646,254."""
    leaves = multi_state_streams(np.random.default_rng(DATA_SEED))
    leaves.setflags(write=False)
    return leaves


def rng_for(seed: int, *key) -> np.random.Generator:
    """A generator for one (setting, trial): ``key`` items are ints or strings."""
    words = [int(k) if isinstance(k, int | np.integer) else zlib.crc32(str(k).encode()) for k in key]
    return np.random.default_rng(np.random.SeedSequence([seed, *words]))


def theta_alt(epsilon: float, share: float = 0.2) -> float:
    """θ = 50/ε_g with ε_g = ``share``·ε (the alternative threshold, see above)."""
    return THETA_ALT_TIMES_EPS_G / (share * epsilon)


def parser(doc: str, trials: int, quick_help: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--trials", type=int, default=trials,
                   help=f"trials per setting (default {trials}; the text: {TEXT_TRIALS})")
    p.add_argument("--quick", action="store_true", help=quick_help)
    p.add_argument("--seed", type=int, default=SEED)
    p.add_argument("--out", type=Path, default=RESULTS, help="output directory")
    return p


def summarise(rows: list[dict], keys: list[str], value: str) -> pd.DataFrame:
    """Mean, sd, trial count and log10(mean) of ``value`` per ``keys``."""
    df = pd.DataFrame(rows)
    out = df.groupby(keys, sort=False)[value].agg(["mean", "std", "count"]).reset_index()
    out = out.rename(columns={"mean": f"{value}_mean", "std": f"{value}_sd", "count": "trials"})
    out[f"log10_{value}"] = np.log10(out[f"{value}_mean"])
    return out


def md_table(header: list[str], rows: list[list]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return lines


def write_outputs(out: Path, name: str, table: pd.DataFrame, report: str, figure, title: str) -> None:
    """``<name>.csv``, ``<name>.md`` and (if ``figure``) a self-contained ``<name>.html``."""
    from bokeh.io import save
    from bokeh.resources import INLINE

    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / f"{name}.csv", index=False)
    (out / f"{name}.md").write_text(report, encoding="utf-8")
    if figure is not None:
        save(figure, out / f"{name}.html", resources=INLINE, title=title)
