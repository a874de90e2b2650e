"""Figures of the Sparse Vector Technique (Lyu, Su & Li 2017) and of the reconstruction attack
(Chen 2018): the run, the budget split, top-c selection, the attack's recovered cells.

The contract of :mod:`._common`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import FactorRange, FixedTicker, HoverTool, Legend, NumeralTickFormatter
from bokeh.plotting import figure
from bokeh.transform import dodge

from ...ui.figures import EMPTY_XY, Display, FigureHandle, PlotData
from ...ui.figures import bar_labels as _bar_labels
from ...ui.figures import panel as _panel
from ...ui.figures import percent as _percent
from ...ui.figures import source as _source
from .params import default_share

__all__ = ["ATTACK_METHODS", "SVTRunDisplay", "TOPC_METHODS", "attack_figure", "attack_plot_data",
           "comparison_noise_std", "explorer_figure", "split_figure", "split_plot_data",
           "svt_figure", "svt_plot_data", "topc_band_data", "topc_figure", "topc_plot_data"]


# --------------------------------------------------------------------------------------------
# SVT run
# --------------------------------------------------------------------------------------------
def svt_figure(*, width: int = 760, height: int = 300) -> FigureHandle:
    """The query answers, the (noisy) threshold, the ⊤ outcomes and where the run stopped.

    Sources
    -------
    answers : x, y
        Query answers by position (teaching: the true answers; analyst preview: the public
        stand-in; after an analyst release: empty).
    threshold : x, y
        The threshold line: the noisy threshold per examined query (teaching and previews) or
        the public threshold (an analyst release).
    above : x, y
        The ⊤ outcomes (y: the answer, the published noisy value, or the threshold level).
    examined : left, right, bottom, top
        The examined range (shaded); ⊥ is every examined query not in ``above``.
    stop : x, y0, y1
        Where the run stopped (after the c-th ⊤).
    true_top : x, y
        The true top-c queries (teaching only).
    """
    p = _panel("Sparse Vector: answers, threshold and outcomes",
               "query (in the order examined)", "answer", width=width, height=height,
               legend="right", output_backend="canvas")
    # Counts read as "140,000", not "1.400e+5"; small or fractional answers keep two decimals.
    p.yaxis.formatter = NumeralTickFormatter(format="0,0.[00]")
    sources = {
        "examined": _source(left=[], right=[], bottom=[], top=[]),
        "answers": _source(**EMPTY_XY),
        "threshold": _source(**EMPTY_XY),
        "above": _source(**EMPTY_XY),
        "true_top": _source(**EMPTY_XY),
        "stop": _source(x=[], y0=[], y1=[]),
    }
    p.quad(
        source=sources["examined"], left="left", right="right", bottom="bottom", top="top",
        fill_color="#dfe9f5", fill_alpha=0.5, line_alpha=0, legend_label="examined",
    )
    p.scatter(
        "x", "y", source=sources["answers"], size=3, color="#7f7f7f", alpha=0.6,
        legend_label="answers",
    )
    p.step(
        "x", "y", source=sources["threshold"], mode="center", color="#d62728", line_width=2,
        legend_label="threshold",
    )
    p.scatter(
        "x", "y", source=sources["true_top"], size=11, marker="circle", fill_alpha=0,
        line_color="#2ca02c", line_width=2, legend_label="true top-c",
    )
    above = p.scatter(
        "x", "y", source=sources["above"], size=9, marker="triangle", color="#1f77b4",
        legend_label="⊤ (above)",
    )
    p.segment(
        x0="x", x1="x", y0="y0", y1="y1", source=sources["stop"], color="black",
        line_dash="dashed", line_width=2, legend_label="stopped",
    )
    p.add_tools(HoverTool(renderers=[above], tooltips=[("query", "@x"), ("y", "@y{0.[00]}")]))
    return FigureHandle(p, sources)


def svt_plot_data(
    *,
    n_queries: int,
    outcomes: np.ndarray,
    threshold: float | np.ndarray,
    answers: np.ndarray | None = None,
    noisy_threshold: np.ndarray | None = None,
    above_values: np.ndarray | None = None,
    true_top: np.ndarray | None = None,
) -> PlotData:
    """Columns for :func:`svt_figure`.

    Parameters
    ----------
    n_queries : int
        Number of queries given (the x range).
    outcomes : array of bool
        One per examined query (⊤ = True).
    threshold : float or array
        The public threshold (scalar or per query).
    answers : array, optional
        Values allowed on screen for every query (true answers in teaching mode, public
        stand-in in a preview); ``None`` after an analyst release.
    noisy_threshold : array, optional
        The noisy threshold per examined query (teaching and previews only: secret state).
    above_values : array, optional
        Published noisy values of the ⊤ queries (a DP output), in the order of the ⊤'s.
    true_top : array of int, optional
        Indices of the true top-c (teaching only).
    """
    outcomes = np.asarray(outcomes, dtype=bool)
    examined = outcomes.size
    above = np.flatnonzero(outcomes)
    thr = np.broadcast_to(np.asarray(threshold, dtype=float), (n_queries,))
    if noisy_threshold is not None:
        full = np.asarray(noisy_threshold, dtype=float)[:examined]
    else:
        full = thr
    # A step line needs only the points where the level changes (and the last one): the
    # threshold of standard SVT is one constant, so 10,000 points shrink to 2.
    keep = np.flatnonzero(np.r_[True, full[1:] != full[:-1]]) if full.size else full
    if full.size:
        keep = np.unique(np.r_[keep, np.maximum(keep - 1, 0)[1:], full.size - 1])
    thr_x, level = keep.astype(int), full[keep] if full.size else full
    if answers is not None:
        answers = np.asarray(answers, dtype=float)
        above_y = answers[above]
        ys = np.concatenate([answers, level])
    elif above_values is not None:
        above_y = np.asarray(above_values, dtype=float)
        ys = np.concatenate([above_y, level])
    else:
        above_y = full[above]
        ys = level
    y_lo = float(np.min(ys)) if ys.size else 0.0
    y_hi = float(np.max(ys)) if ys.size else 1.0
    if y_hi - y_lo < 1e-9 * max(1.0, abs(y_hi)):
        # Only one level on screen (an analyst release: the ⊤'s sit on the public threshold):
        # give the shaded examined range and the stop line a visible height around it.
        pad = max(1.0, 0.05 * abs(y_hi))
        y_lo, y_hi = y_lo - pad, y_hi + pad
    data: PlotData = {
        "answers": (
            {"x": np.arange(n_queries), "y": answers}
            if answers is not None
            else {"x": np.zeros(0), "y": np.zeros(0)}
        ),
        "threshold": {"x": thr_x, "y": level},
        "above": {"x": above, "y": above_y},
        "examined": {
            "left": np.array([-0.5]),
            "right": np.array([examined - 0.5]),
            "bottom": np.array([y_lo]),
            "top": np.array([y_hi]),
        },
        "stop": (
            {"x": np.array([examined - 1]), "y0": np.array([y_lo]), "y1": np.array([y_hi])}
            if examined < n_queries
            else {"x": np.zeros(0), "y0": np.zeros(0), "y1": np.zeros(0)}
        ),
        "true_top": (
            {"x": np.asarray(true_top), "y": np.asarray(answers)[np.asarray(true_top)]}
            if true_top is not None and answers is not None
            else {"x": np.zeros(0), "y": np.zeros(0)}
        ),
    }
    return data


# --------------------------------------------------------------------------------------------
# Budget split (analytic; Lyu, Su & Li 2017, §4.2, eq. 12)
# --------------------------------------------------------------------------------------------
class SVTRunDisplay(Display):
    """One SVT run as :func:`svt_figure` shows it, computed once from the door's answer.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> session = Session("teaching", seed=0)
    >>> session.add_dataset("scores", np.arange(20.0))
    >>> run = session.release("scores", "svt", epsilon=1.0, threshold=15.0, c=1)
    >>> shown = SVTRunDisplay.from_release(run, n_queries=20).figure()
    >>> len(shown.sources["above"].data["x"])  # the one query found above, c = 1
    1
    """

    build = staticmethod(svt_figure)

    @classmethod
    def from_release(cls, release, *, n_queries: int, threshold=None,
                     answers: np.ndarray | None = None,
                     true_top: np.ndarray | None = None) -> SVTRunDisplay:
        """The run of ``release`` (``threshold``: the public one, default its parameter).

        A teaching run or a preview carries the engine's result, whose secret state (the
        noisy threshold) may be drawn, with ``answers`` (the public values: the data in
        teaching, the stand-in in a preview) and ``true_top``. An analyst release carries its
        DP output only: then ``answers`` and ``true_top`` are ignored, and only which queries
        were ⊤ (and their noisy values, where the variant publishes them) are drawn."""
        threshold = release.params["threshold"] if threshold is None else threshold
        result = release.result
        if result is not None:
            return cls(svt_plot_data(
                n_queries=n_queries, outcomes=result.outcomes, threshold=threshold,
                answers=answers, noisy_threshold=result.noisy_threshold, true_top=true_top))
        out = release.output
        return cls(svt_plot_data(n_queries=n_queries, outcomes=out["outcomes"],
                                 threshold=threshold, above_values=out.get("above_values")))


def comparison_noise_std(share, c: int, monotonic: bool = False) -> np.ndarray:
    """Standard deviation of the noise in standard SVT's comparison, in units of Δ/ε.

    With ε1 = share·ε and ε2 = (1 − share)·ε, the threshold noise Lap(Δ/ε1) and the query
    noise Lap(kcΔ/ε2) (k = 2, or 1 for monotonic queries) have variance 2(Δ/ε1)² + 2(kcΔ/ε2)²;
    its minimum over the share is Lyu, Su & Li 2017, eq. 12's ε1:ε2 = 1:(kc)^(2/3).
    """
    share = np.asarray(share, dtype=float)
    k = 1.0 if monotonic else 2.0
    return np.sqrt(2.0 / share**2 + 2.0 * (k * c / (1.0 - share)) ** 2)


def split_figure(*, width: int = 360, height: int = 240) -> FigureHandle:
    """Noise of the SVT comparison against ε1's share of ε, with the optimum and the choice."""
    p = figure(
        width=width,
        height=height,
        tools="",
        toolbar_location=None,
        y_axis_type="log",
        x_axis_label="ε1 / ε",
        y_axis_label="comparison noise s.d. (Δ/ε)",
        title="Budget split ε1:ε2",
    )
    sources = {
        "curve": _source(x=[], y=[]),
        "optimum": _source(x=[], y=[]),
        "current": _source(x=[], y=[]),
    }
    # Below the frame, never over the curve (whose ends rise to the top corners).
    p.add_layout(Legend(orientation="horizontal", label_text_font_size="8pt", spacing=10,
                        padding=2, margin=2, border_line_alpha=0), "below")
    p.line("x", "y", source=sources["curve"], color="#555", line_width=2)
    p.scatter(
        "x", "y", source=sources["optimum"], marker="star", size=14, color="#2ca02c",
        legend_label="optimum (Lyu, Su & Li 2017, eq. 12)",
    )
    p.scatter(
        "x", "y", source=sources["current"], marker="circle", size=9, color="#d62728",
        legend_label="your split",
    )
    # Bokeh's log ticker treats a range under two decades as linear, and then labels
    # 100, 200, ..., 800 one on top of the other near the top of a log axis. 1-2-5 ticks are
    # evenly spread on a log scale whatever c is; the other mantissas are minor ticks.
    decades = [10.0**k for k in range(0, 8)]
    p.yaxis.ticker = FixedTicker(
        ticks=[m * d for d in decades for m in (1, 2, 5)],
        minor_ticks=[m * d for d in decades for m in range(1, 10)],
    )
    p.yaxis.formatter = NumeralTickFormatter(format="0,0")
    return FigureHandle(p, sources)


def split_plot_data(c: int, monotonic: bool, share: float) -> PlotData:
    """Columns for :func:`split_figure`: the curve, its optimum, and ``share`` on it."""
    xs = np.linspace(0.01, 0.99, 197)
    optimum = default_share(c, monotonic)
    return {
        "curve": {"x": xs, "y": comparison_noise_std(xs, c, monotonic)},
        "optimum": {
            "x": np.array([optimum]),
            "y": np.atleast_1d(comparison_noise_std(optimum, c, monotonic)),
        },
        "current": {
            "x": np.array([share]),
            "y": np.atleast_1d(comparison_noise_std(share, c, monotonic)),
        },
    }


#: Where the two bars of a method sit, left and right of its category.
_OFFSETS = (-0.17, 0.17)


def _rate_bars(title: str, methods: tuple[str, ...], source, bars, *, width: int, height: int,
               legend: Legend | None = None, **options):
    """Two bars per method, rates in [0, 1], each with its value printed above; ``bars`` is
    ``((column, colour, label), (column, colour, label))``; ``legend`` goes above the frame."""
    p = figure(
        x_range=FactorRange(*methods),
        y_range=(0, 1.15),  # room for the value printed above a bar of height 1
        width=width, height=height, tools="", toolbar_location=None, title=title, **options)
    if legend is not None:  # before the bars, which would otherwise make their own
        p.add_layout(legend, "above")
    p.yaxis.ticker = FixedTicker(ticks=[0, 0.2, 0.4, 0.6, 0.8, 1.0])
    for (col, color, label), offset in zip(bars, _OFFSETS, strict=True):
        x = dodge("method", offset, range=p.x_range)
        p.vbar(x=x, top=col, width=0.3, source=source, color=color, legend_label=label)
        # The value above each bar: a rate of 0 (perfect) reads "0.00", not as a missing bar.
        p.add_layout(_bar_labels(x, col, f"{col}_text", source))
    return p


def _rate_columns(order: tuple[str, ...], rates: Mapping[str, tuple[float, float]],
                  names: tuple[str, str], text) -> dict[str, list]:
    """The columns of :func:`_rate_bars` from ``{method: (rate, rate)}``, methods in ``order``;
    ``text`` formats the value printed above a bar."""
    methods = [m for m in order if m in rates]
    columns: dict[str, list] = {"method": methods}
    for i, name in enumerate(names):
        columns[name] = [float(rates[m][i]) for m in methods]
        columns[f"{name}_text"] = [text(v) for v in columns[name]]
    return columns


# --------------------------------------------------------------------------------------------
# Top-c selection: SVT vs the exponential mechanism (Lyu, Su & Li 2017, §5-6)
# --------------------------------------------------------------------------------------------
TOPC_METHODS = ("SVT (this run)", "SVT-ReTr", "EM")


def topc_figure(*, width: int = 400, height: int = 240) -> FigureHandle:
    """False negative rate and score error rate of top-c selection, per method.

    Sources
    -------
    rates : method, fnr, ser, fnr_text, ser_text
        The bars.
    topc_band : method, fnr_low, fnr_high, ser_low, ser_high
        Whiskers on the SVT bars: where 90% of releases at the chosen ε would put each rate
        (accuracy before spending, previews on the stand-in; empty until estimated).
    """
    sources = {"rates": _source(method=[], fnr=[], ser=[], fnr_text=[], ser_text=[]),
               "topc_band": _source(method=[], fnr_low=[], fnr_high=[], ser_low=[],
                                    ser_high=[])}
    p = _rate_bars("Top-c: SVT vs exponential mechanism", TOPC_METHODS,
                   sources["rates"], (("fnr", "#1f77b4", "FNR"), ("ser", "#ff7f0e", "SER")),
                   width=width, height=height, y_axis_label="rate (lower is better)",
                   legend=Legend(orientation="horizontal", label_text_font_size="9pt",
                                 spacing=12, padding=4, margin=0, border_line_alpha=0))
    p.add_tools(HoverTool(tooltips=[("method", "@method"), ("FNR", "@fnr{0.000}"),
                                    ("SER", "@ser{0.000}")]))
    for col, offset in zip(("fnr", "ser"), _OFFSETS, strict=True):
        x = dodge("method", offset, range=p.x_range)
        p.segment(x0=x, x1=x, y0=f"{col}_low", y1=f"{col}_high", source=sources["topc_band"],
                  color="black", line_width=1.5)
        for end in ("low", "high"):
            p.scatter(x=x, y=f"{col}_{end}", source=sources["topc_band"], marker="dash",
                      size=12, color="black", line_width=1.5)
    p.xaxis.major_label_text_font_size = "9pt"
    return FigureHandle(p, sources)


def topc_band_data(low: np.ndarray | None = None,
                   high: np.ndarray | None = None) -> dict[str, dict[str, list]]:
    """Columns of :func:`topc_figure`'s whiskers on the SVT bars from ``(fnr, ser)`` lows and
    highs (None: no whiskers)."""
    if low is None or high is None:
        return {"topc_band": {"method": [], "fnr_low": [], "fnr_high": [], "ser_low": [],
                              "ser_high": []}}
    (fnr_low, ser_low), (fnr_high, ser_high) = (np.asarray(v, dtype=float) for v in (low, high))
    return {"topc_band": {"method": [TOPC_METHODS[0]], "fnr_low": [float(fnr_low)],
                          "fnr_high": [float(fnr_high)], "ser_low": [float(ser_low)],
                          "ser_high": [float(ser_high)]}}


def topc_plot_data(rates: Mapping[str, tuple[float, float]]) -> dict[str, dict[str, list]]:
    """Columns for :func:`topc_figure` from ``{method: (fnr, ser)}``."""
    return {"rates": _rate_columns(TOPC_METHODS, rates, ("fnr", "ser"), "{:.2f}".format)}


def explorer_figure() -> tuple[FigureHandle, figure]:
    """The SVT explorer's one layout (one BokehModel): the run above, the budget split and
    top-c side by side below. Its sources are the three figures'; the top-c panel is returned
    too, as the explorer retitles it (preview, whiskers, after a release).

    Examples
    --------
    >>> handle, topc = explorer_figure()
    >>> "rates" in handle.sources and "curve" in handle.sources, topc.title.text
    (True, 'Top-c: SVT vs exponential mechanism')
    """
    svt_handle = svt_figure()
    split_handle = split_figure()
    topc_handle = topc_figure()
    layout = column(svt_handle.layout, row(split_handle.layout, topc_handle.layout))
    sources = {**svt_handle.sources, **split_handle.sources, **topc_handle.sources}
    return FigureHandle(layout, sources), topc_handle.layout


# --------------------------------------------------------------------------------------------
# Reconstruction attack (Chen 2018, Alg. 6-7)
# --------------------------------------------------------------------------------------------
ATTACK_METHODS = ("GPTT attack", "standard SVT")


def attack_figure(*, width: int = 560, height: int = 280) -> FigureHandle:
    """True vs reconstructed counts per cell, and the success rates of both mechanisms.

    Sources
    -------
    cells : x, true, attack, svt
        Per cell of the shown window: the true count, the attack's reconstruction, and what
        the correct mechanism lets the same attacker reconstruct.
    rates : method, overall, small
        Fraction of cells recovered exactly, overall and among counts <= ``small_max``.
    """
    cells = _panel("True counts and what each mechanism lets an attacker reconstruct", "cell",
                   "count", width=width, height=height)
    # Legend above the frame, in one row: the two plots side by side must fit a notebook's
    # output area (about 900 px), and a legend inside the frame hid the tallest counts.
    cells.add_layout(Legend(click_policy="hide", orientation="horizontal",
                            label_text_font_size="9pt", spacing=12, padding=4,
                            margin=0, border_line_alpha=0), "above")
    sources = {
        "cells": _source(x=[], true=[], attack=[], svt=[]),
        "rates": _source(method=[], overall=[], small=[], overall_text=[], small_text=[]),
    }
    cells.vbar(
        x="x", top="true", width=0.9, source=sources["cells"], fill_color="#cccccc",
        line_color="#888888", legend_label="true count",
    )
    cells.scatter(
        "x", "attack", source=sources["cells"], marker="x", size=9, color="#d62728",
        line_width=2, legend_label="GPTT reconstruction",
    )
    cells.scatter(
        "x", "svt", source=sources["cells"], marker="circle", size=6, color="#1f77b4",
        legend_label="standard SVT reconstruction",
    )
    cells.add_tools(HoverTool(tooltips=[("cell", "@x"), ("true", "@true"),
                                        ("GPTT", "@attack"), ("SVT", "@svt")]))
    rates = _rate_bars(
        "Cells recovered exactly", ATTACK_METHODS, sources["rates"],
        (("overall", "#7f7f7f", "all cells"), ("small", "#9467bd", "small counts")),
        width=320, height=height,
        legend=Legend(orientation="horizontal", label_text_font_size="9pt", spacing=12,
                      padding=4, margin=0, border_line_alpha=0))
    rates.yaxis.formatter = NumeralTickFormatter(format="0%")
    return FigureHandle(row(cells, rates), sources)


def attack_plot_data(
    *,
    true: np.ndarray,
    attack: np.ndarray,
    svt: np.ndarray,
    rates: Mapping[str, tuple[float, float]],
    window: tuple[int, int] = (0, 128),
) -> dict[str, dict]:
    """Columns for :func:`attack_figure`; ``window`` selects the cells drawn."""
    lo, hi = max(0, window[0]), min(len(true), window[1])
    idx = np.arange(lo, hi)
    return {
        "cells": {
            "x": idx,
            "true": np.asarray(true, dtype=float)[idx],
            "attack": np.asarray(attack, dtype=float)[idx],
            "svt": np.asarray(svt, dtype=float)[idx],
        },
        "rates": _rate_columns(ATTACK_METHODS, rates, ("overall", "small"), _percent),
    }
