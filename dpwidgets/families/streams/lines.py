"""The line panels the stream widgets share: a series decimated for display, four lines on a
time axis (the truth, the Laplace baseline, the plain method and the method itself).

Display only: public numbers in (a release's output, and the truth in teaching mode or the
stand-in in a preview).
"""

from __future__ import annotations

import numpy as np
from bokeh.models import Legend, NumeralTickFormatter
from bokeh.plotting import figure

from ...ui.figures import XTOOLS as _TOOLS
from ...ui.figures import PlotData

__all__ = ["MAX_LINE_POINTS", "decimate"]

#: Most points per line sent to the browser by the whole-stream panels (min/max envelope):
#: about two per pixel column of the widest panel (820 px), all a screen can show; more only
#: delays the browser's redraw after an ε move (benchmarks/browser_redraw.py measures it).
MAX_LINE_POINTS = 2_000
_EMPTY = np.zeros(0)
_EMPTY_XY = {"x": _EMPTY, "y": _EMPTY}
#: Every panel draws on a 2D canvas. At most MAX_LINE_POINTS per line and MAX_MARKERS markers
#: are cheap there, while each WebGL repaint also copies the GL canvas into the 2D one, slow
#: without a GPU (headless Chromium, many VMs): with the windows and events panels on WebGL
#: those copies dominate the browser's main thread while the streams lesson runs, and slow the
#: lesson down (``benchmarks/lesson_times.py``).
_BACKEND = "canvas"


def decimate(values: np.ndarray, max_points: int = MAX_LINE_POINTS) -> tuple[np.ndarray, np.ndarray]:
    """``(x, y)`` of a per-step series with at most ``max_points`` points: every point when the
    series is short enough, else the minimum and the maximum of each of ``max_points // 2``
    equal buckets, in time order (a spike survives, which a stride would drop). NaN (an
    incomplete window) is kept only where a whole bucket is NaN. Display only."""
    y = np.asarray(values, dtype=float)
    n = y.size
    if n <= max_points:
        return np.arange(n, dtype=float), y
    buckets = max(max_points // 2, 1)
    size = -(-n // buckets)
    padded = np.full(buckets * size, np.nan)
    padded[:n] = y
    rows = padded.reshape(buckets, size)
    finite = np.isfinite(rows)
    lo = np.argmin(np.where(finite, rows, np.inf), axis=1)
    hi = np.argmax(np.where(finite, rows, -np.inf), axis=1)
    first, second = np.minimum(lo, hi), np.maximum(lo, hi)
    base = np.arange(buckets) * size
    idx = np.column_stack((base + first, base + second)).ravel()
    idx = idx[idx < n]
    idx = idx[np.r_[True, np.diff(idx) != 0]]
    return idx.astype(float), y[idx]


def _decimated(series: dict[str, np.ndarray | None], max_points: int
               ) -> PlotData:
    """``{source: {"x", "y"}}`` of each series decimated for display (None: empty)."""
    return {name: dict(_EMPTY_XY) if values is None
            else dict(zip(("x", "y"), decimate(values, max_points), strict=True))
            for name, values in series.items()}


def _counts_axis(p) -> None:
    p.yaxis.formatter = NumeralTickFormatter(format="0,0.[0]")


def _four_lines(title: str, y_label: str, width: int, height: int, sources: dict,
                labels: dict[str, str], *, plain_alpha: float):
    """A time-series panel of four lines, drawn from the sources named by ``labels`` in this
    order: the truth, the Laplace baseline, the plain method, and the method itself."""
    p = figure(width=width, height=height, tools=_TOOLS, output_backend=_BACKEND,
               x_axis_label="time step t", y_axis_label=y_label, title=title)
    p.add_layout(Legend(click_policy="hide", orientation="horizontal"), "below")
    _counts_axis(p)
    styles = ({"color": "#444", "line_width": 1.5}, {"color": "#ff7f0e", "alpha": 0.5},
              {"color": "#2ca02c", "alpha": plain_alpha}, {"color": "#1f77b4", "line_width": 1.5})
    for (name, label), style in zip(labels.items(), styles, strict=True):
        p.line("x", "y", source=sources[name], legend_label=label, **style)
    return p
