"""Bokeh figure builders of the regression-diagnostics widgets (Chen 2018, Ch. 4).

The contract of :mod:`dpwidgets.ui.figures` (a ``*_figure()`` builds the layout once, a
``*_plot_data()`` turns public numbers into its columns); :class:`DiagnosticFigure` also names
its panels, so a widget can retitle them. What goes in is the caller's to keep public: DP
outputs, and the teaching data's or the stand-in's own plots.

The same split as objects (:class:`~dpwidgets.ui.figures.Display`): :class:`ResidualPlotDisplay`,
:class:`RocDisplay` and :class:`BinnedResidualsDisplay` are built once from a release, a preview
or its output (and the public reference, if one may be drawn), and only draw.

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.diagnostics.display import roc_figure, roc_plot_data
>>> from dpwidgets.ui.figures import update
>>> figure = roc_figure()
>>> update(figure, roc_plot_data(fpr=np.array([0.0, 1.0]), tpr=np.array([0.0, 1.0])))
>>> figure.sources["private"].data["x"].tolist()
[0.0, 1.0]
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from bokeh.layouts import row
from bokeh.models import HoverTool, Span

from ...ui.figures import Display, FigureHandle, PlotData
from ...ui.figures import panel as _panel
from ...ui.figures import source as _source

__all__ = ["FPR_GRID", "MAX_POINTS", "BinnedResidualsDisplay", "DiagnosticFigure",
           "ResidualPlotDisplay", "RocDisplay", "band_data", "binned_residual_figure",
           "binned_residual_plot_data", "curve_on_grid", "residual_figure", "residual_plot_data",
           "residual_summary", "roc_figure", "roc_plot_data", "thin", "tpr_on_grid"]

#: At most this many points of a residual plot are sent to the browser (per panel).
MAX_POINTS = 20_000
#: The false positive rates at which ROC curves are compared across runs (accuracy band).
FPR_GRID = np.linspace(0.0, 1.0, 101)
_EMPTY = np.zeros(0)
_BAND = {"fill_color": "#1f77b4", "fill_alpha": 0.18,
         "legend_label": "90% of releases at this ε (estimated on the stand-in)"}


@dataclass
class DiagnosticFigure(FigureHandle):
    """A :class:`~dpwidgets.ui.figures.FigureHandle` whose Bokeh figures are reachable by name."""

    panels: dict = field(default_factory=dict)

    def set_titles(self, **titles: str) -> None:
        """Retitle panels by name (a small document patch each)."""
        for name, text in titles.items():
            self.panels[name].title.text = text


def thin(points: np.ndarray, max_points: int = MAX_POINTS) -> np.ndarray:
    """At most ``max_points`` rows of ``points``, a uniform sample without replacement.

    Only drawing is thinned (the quality measures use every point). The sample is drawn with a
    fixed seed: thinning is post-processing of what is already allowed on screen, and a fixed
    seed makes a redraw of the same release look the same.
    """
    points = np.asarray(points, dtype=float)
    if points.shape[0] <= max_points:
        return points
    keep = np.random.default_rng(0).choice(points.shape[0], max_points, replace=False)
    return points[np.sort(keep)]


# --------------------------------------------------------------------------------------------
# Residual plots (PriRP, Chen 2018, Alg. 9, Fig. 4.1-4.5)
# --------------------------------------------------------------------------------------------
def _residual_panel(title: str, width: int, height: int, color: str):
    # A 2D canvas, as every figure: up to MAX_POINTS markers per panel draw in a few ms there,
    # while WebGL copies its canvas into the 2D one at each repaint (slow without a GPU).
    p = _panel(title, "predicted value ŷ", "residual y − ŷ", width=width, height=height,
               output_backend="canvas")
    p.add_layout(Span(location=0, dimension="width", line_color="#444", line_dash="dashed"))
    return p


def residual_figure(*, width: int = 420, height: int = 340) -> DiagnosticFigure:
    """The confidential residual plot beside the private one (PriRP).

    Sources
    -------
    truth : x, y
        The confidential plot (teaching mode; the public stand-in's in an analyst preview;
        empty after an analyst release).
    private : x, y
        The PriRP points (sampled uniformly inside the cells of the noisy grid).
    region : left, right, bottom, top
        The privately bounded region the grid covers (Chen 2018, Alg. 10).
    """
    truth = _residual_panel("Confidential residual plot", width, height, "#555")
    private = _residual_panel("Private residual plot (PriRP)", width, height, "#1f77b4")
    sources = {
        "truth": _source(x=[], y=[]),
        "private": _source(x=[], y=[]),
        "region": _source(left=[], right=[], bottom=[], top=[]),
    }
    truth.scatter("x", "y", source=sources["truth"], size=2, color="#555", alpha=0.4)
    private.quad(
        source=sources["region"], left="left", right="right", bottom="bottom", top="top",
        fill_alpha=0, line_color="#d62728", line_dash="dotted",
    )
    private.scatter("x", "y", source=sources["private"], size=2, color="#1f77b4", alpha=0.4)
    # Same axes on both panels, so a fan or a hook reads the same on either side.
    private.x_range = truth.x_range
    private.y_range = truth.y_range
    return DiagnosticFigure(row(truth, private), sources, {"truth": truth, "private": private})


def residual_plot_data(
    *,
    private_points: np.ndarray,
    bounds: np.ndarray | None = None,
    truth_points: np.ndarray | None = None,
    max_points: int = MAX_POINTS,
) -> PlotData:
    """Columns for :func:`residual_figure`.

    Parameters
    ----------
    private_points : array (k, 2)
        PriRP's (prediction, residual) points.
    bounds : array of 4, optional
        ``(pred_lo, pred_hi, resid_lo, resid_hi)``: the released region.
    truth_points : array (n, 2), optional
        Values allowed on screen as the "confidential" panel: the data's own plot in teaching
        mode, the stand-in's in a preview; ``None`` after an analyst release.
    max_points : int
        Drawing cap per panel (:func:`thin`).
    """
    shown = thin(np.asarray(private_points, dtype=float).reshape(-1, 2), max_points)
    data: PlotData = {
        "private": {"x": shown[:, 0], "y": shown[:, 1]},
        "truth": {"x": _EMPTY, "y": _EMPTY},
        "region": {"left": _EMPTY, "right": _EMPTY, "bottom": _EMPTY, "top": _EMPTY},
    }
    if truth_points is not None:
        t = thin(np.asarray(truth_points, dtype=float).reshape(-1, 2), max_points)
        data["truth"] = {"x": t[:, 0], "y": t[:, 1]}
    if bounds is not None:
        x0, x1, r0, r1 = (float(v) for v in bounds)
        data["region"] = {"left": np.array([x0]), "right": np.array([x1]),
                          "bottom": np.array([r0]), "top": np.array([r1])}
    return data


def _xy(x: np.ndarray | None, y: np.ndarray | None) -> dict[str, np.ndarray]:
    """A curve's columns as floats; empty unless both are given."""
    if x is None or y is None:
        return {"x": _EMPTY, "y": _EMPTY}
    return {"x": np.asarray(x, dtype=float), "y": np.asarray(y, dtype=float)}


def _column(values: np.ndarray | None, size: int) -> np.ndarray:
    """An optional column as floats (NaN, not shown, when it is not given)."""
    return np.full(size, np.nan) if values is None else np.asarray(values, dtype=float)


# --------------------------------------------------------------------------------------------
# ROC curves (PriROC, Chen 2018, Alg. 11, Fig. 4.7)
# --------------------------------------------------------------------------------------------
def roc_figure(*, width: int = 460, height: int = 400) -> DiagnosticFigure:
    """The confidential ROC curve and the private one (PriROC), with the chance diagonal.

    Sources
    -------
    truth : x, y
        The confidential curve (FPR, TPR); empty in analyst mode after a release.
    private : x, y
        The private curve.
    thresholds : x, y
        The private curve's points (one per threshold of Θ), with the threshold in ``theta``.
    band : x, low, high
        Where 90% of releases at the chosen ε put the TPR at each FPR of :data:`FPR_GRID`
        (accuracy before spending: previews on the stand-in; empty until estimated).
    """
    p = _panel("ROC curve: confidential vs private (PriROC)", "false positive rate",
               "true positive rate", width=width, height=height, legend="below",
               x_range=(0, 1), y_range=(0, 1.02))
    sources = {
        "truth": _source(x=[], y=[]),
        "private": _source(x=[], y=[]),
        "thresholds": _source(x=[], y=[], theta=[]),
        "band": _source(x=[], low=[], high=[]),
    }
    p.varea(x="x", y1="low", y2="high", source=sources["band"], **_BAND)
    p.line([0, 1], [0, 1], color="#aaa", line_dash="dotted", legend_label="chance")
    p.line("x", "y", source=sources["truth"], color="#555", line_width=2,
           legend_label="confidential")
    p.line("x", "y", source=sources["private"], color="#1f77b4", line_width=2,
           legend_label="private")
    dots = p.scatter("x", "y", source=sources["thresholds"], size=3, color="#1f77b4")
    p.add_tools(HoverTool(renderers=[dots], tooltips=[("θ", "@theta{0.000}"),
                                                      ("FPR", "@x{0.000}"), ("TPR", "@y{0.000}")]))
    p.legend.orientation = "horizontal"
    # Two entries a row in small type: four in one row are wider than the panel (clipped).
    p.legend.ncols, p.legend.label_text_font_size = 2, "8pt"
    return DiagnosticFigure(p, sources, {"roc": p})


def roc_plot_data(
    *,
    fpr: np.ndarray,
    tpr: np.ndarray,
    thresholds: np.ndarray | None = None,
    truth_fpr: np.ndarray | None = None,
    truth_tpr: np.ndarray | None = None,
) -> PlotData:
    """Columns for :func:`roc_figure` (a private curve, optionally the confidential one)."""
    private = _xy(fpr, tpr)
    return {"private": private,
            "thresholds": {**private, "theta": _column(thresholds, private["x"].size)},
            "truth": _xy(truth_fpr, truth_tpr)}


# --------------------------------------------------------------------------------------------
# Binned residual plots (PriBRP, Chen 2018, Alg. 13, Fig. 4.12-4.14)
# --------------------------------------------------------------------------------------------
def binned_residual_figure(*, width: int = 640, height: int = 360) -> DiagnosticFigure:
    """Mean residual against mean prediction per bin: confidential and private (PriBRP).

    Sources
    -------
    truth : x, y
        The confidential binned residual plot (equal-size bins; teaching / stand-in only).
    private : x, y, size
        One point per private bin (mean prediction, mean residual, noisy bin size).
    edges : x
        The private bin edges (DP output).
    band : x, low, high
        Where 90% of releases at the chosen ε put the mean residual, on a fixed grid of mean
        predictions (accuracy before spending: previews on the stand-in; empty until
        estimated).
    """
    p = _panel("Binned residual plot: confidential vs private (PriBRP)",
               "mean predicted probability in the bin", "mean residual y − p in the bin",
               width=width, height=height, legend="right")
    p.add_layout(Span(location=0, dimension="width", line_color="#444", line_dash="dashed"))
    sources = {
        "truth": _source(x=[], y=[]),
        "private": _source(x=[], y=[], size=[]),
        "edges": _source(x=[], y0=[], y1=[]),
        "band": _source(x=[], low=[], high=[]),
    }
    p.varea(x="x", y1="low", y2="high", source=sources["band"], **_BAND)
    p.segment(x0="x", x1="x", y0="y0", y1="y1", source=sources["edges"], color="#ccc",
              legend_label="private bin edges")
    p.line("x", "y", source=sources["truth"], color="#555", alpha=0.6)
    p.scatter("x", "y", source=sources["truth"], size=6, color="#555",
              legend_label="confidential")
    dots = p.scatter("x", "y", source=sources["private"], size=8, marker="diamond",
                     color="#1f77b4", legend_label="private")
    p.add_tools(HoverTool(renderers=[dots], tooltips=[("mean p", "@x{0.000}"),
                                                      ("mean residual", "@y{0.000}"),
                                                      ("noisy size", "@size{0}")]))
    return DiagnosticFigure(p, sources, {"brp": p})


def binned_residual_plot_data(
    *,
    mean_predicted: np.ndarray,
    mean_residual: np.ndarray,
    bins: np.ndarray | None = None,
    noisy_sizes: np.ndarray | None = None,
    truth_predicted: np.ndarray | None = None,
    truth_residual: np.ndarray | None = None,
) -> PlotData:
    """Columns for :func:`binned_residual_figure`."""
    private = _xy(mean_predicted, mean_residual)
    truth = _xy(truth_predicted, truth_residual)
    data = {
        "private": {**private, "size": _column(noisy_sizes, private["x"].size)},
        "truth": truth,
        "edges": {"x": _EMPTY, "y0": _EMPTY, "y1": _EMPTY},
    }
    if bins is not None:
        inner = np.asarray(bins, dtype=float)[1:-1]
        allys = np.concatenate([private["y"], truth["y"]])
        lo = float(allys.min()) if allys.size else -1.0
        hi = float(allys.max()) if allys.size else 1.0
        data["edges"] = {"x": inner, "y0": np.full(inner.size, lo), "y1": np.full(inner.size, hi)}
    return data


# --------------------------------------------------------------------------------------------
# Accuracy before spending: the plotted values on fixed grids, and the band
# --------------------------------------------------------------------------------------------
def tpr_on_grid(fpr: np.ndarray, tpr: np.ndarray, grid: np.ndarray = FPR_GRID) -> np.ndarray:
    """A ROC curve's TPR at each FPR of ``grid``: linear between its points, the top of a
    vertical step at the step's FPR (the most a threshold there achieves)."""
    f, t = np.asarray(fpr, dtype=float), np.asarray(tpr, dtype=float)
    grid = np.asarray(grid, dtype=float)
    fu, first = np.unique(f, return_index=True)
    if fu.size < 2:
        return np.full(grid.shape, float(t.max()) if t.size else np.nan)
    last = f.size - 1 - np.unique(f[::-1], return_index=True)[1]
    bottom, top = t[first], t[last]
    i = np.clip(np.searchsorted(fu, grid, side="right") - 1, 0, fu.size - 2)
    w = np.clip((grid - fu[i]) / (fu[i + 1] - fu[i]), 0.0, 1.0)
    out = top[i] + w * (bottom[i + 1] - top[i])
    return np.where(grid >= fu[-1], top[-1], out)


def curve_on_grid(x: np.ndarray, y: np.ndarray, grid: np.ndarray) -> np.ndarray:
    """``y`` against ``x`` (points joined in the order of ``x``) at each point of ``grid``;
    NaN outside the points' range (a curve is not extended past its ends)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    grid = np.asarray(grid, dtype=float)
    keep = np.isfinite(x) & np.isfinite(y)
    x, y = x[keep], y[keep]
    if x.size == 0:
        return np.full(grid.shape, np.nan)
    order = np.argsort(x, kind="stable")
    x, y = x[order], y[order]
    out = np.interp(grid, x, y)
    return np.where((grid >= x[0]) & (grid <= x[-1]), out, np.nan)


def residual_summary(points: np.ndarray, edges: np.ndarray) -> np.ndarray:
    """The mean and the standard deviation of the residuals of a residual plot's points in
    each prediction bin of ``edges`` (points beyond the outer edges count in the end bins):
    ``k`` means then ``k`` standard deviations, NaN for a bin without points."""
    pts = np.asarray(points, dtype=float).reshape(-1, 2)
    edges = np.asarray(edges, dtype=float)
    k = edges.size - 1
    which = np.clip(np.searchsorted(edges, pts[:, 0], side="right") - 1, 0, k - 1)
    size = np.bincount(which, minlength=k).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.bincount(which, weights=pts[:, 1], minlength=k) / size
        square = np.bincount(which, weights=pts[:, 1] ** 2, minlength=k) / size
        sd = np.sqrt(np.maximum(square - mean**2, 0.0))
    return np.concatenate([np.where(size > 0, mean, np.nan), np.where(size > 0, sd, np.nan)])


def band_data(x: np.ndarray | None = None, low: np.ndarray | None = None,
              high: np.ndarray | None = None) -> PlotData:
    """The ``band`` source of :func:`roc_figure` / :func:`binned_residual_figure` (empty
    without values; the points where a bound is NaN -- no run reached them -- left out)."""
    if x is None or low is None or high is None:
        return {"band": {"x": _EMPTY, "low": _EMPTY, "high": _EMPTY}}
    x, low, high = (np.asarray(v, dtype=float) for v in (x, low, high))
    keep = np.isfinite(x) & np.isfinite(low) & np.isfinite(high)  # an area has no holes
    return {"band": {"x": x[keep], "low": low[keep], "high": high[keep]}}


# --------------------------------------------------------------------------------------------
# Displays: computed once from a release (or a preview, or its output), then only drawn
# --------------------------------------------------------------------------------------------
class _OutputDisplay(Display):
    """A display read off a diagnostics output (``Release.output``, or a preview's)."""

    @classmethod
    def from_output(cls, output: dict, truth=None) -> Display:  # pragma: no cover - per class
        """The display of ``output`` with the public reference ``truth`` (``None``: none)."""
        raise NotImplementedError

    @classmethod
    def from_release(cls, release, *, truth=None) -> Display:
        """The display of ``release`` (a paid release, a live run or a preview).

        ``truth`` is the reference the caller may draw: the teaching data's or the stand-in's
        own plot; never one computed from confidential data (``None`` after a paid release).
        """
        return cls.from_output(release.output, truth)


class ResidualPlotDisplay(_OutputDisplay):
    """A PriRP residual plot (Chen 2018, Alg. 9) as :func:`residual_figure` draws it.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.display import ResidualPlotDisplay
    >>> output = {"points": np.array([[0.1, 0.2], [0.3, -0.1]]),
    ...           "bounds": np.array([0.0, 1.0, -1.0, 1.0])}
    >>> shown = ResidualPlotDisplay.from_output(output).figure()
    >>> shown.sources["private"].data["x"].tolist(), shown.sources["region"].data["top"].tolist()
    ([0.1, 0.3], [1.0])
    """

    build = staticmethod(residual_figure)

    @classmethod
    def from_output(cls, output: dict, truth: np.ndarray | None = None) -> ResidualPlotDisplay:
        """``truth``: the public (n, 2) points of the reference plot, if any."""
        return cls(residual_plot_data(private_points=output["points"], bounds=output["bounds"],
                                      truth_points=truth))


class RocDisplay(_OutputDisplay):
    """A PriROC curve (Chen 2018, Alg. 11) as :func:`roc_figure` draws it.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.display import RocDisplay
    >>> output = {"fpr": np.array([0.0, 0.4, 1.0]), "tpr": np.array([0.0, 0.7, 1.0]),
    ...           "thresholds": np.array([0.5])}
    >>> RocDisplay.from_output(output).figure().sources["private"].data["y"].tolist()
    [0.0, 0.7, 1.0]
    """

    build = staticmethod(roc_figure)

    @classmethod
    def from_output(cls, output: dict, truth: dict | None = None) -> RocDisplay:
        """``truth``: the public reference curve ``{"fpr": ..., "tpr": ...}``, if any."""
        return cls(roc_plot_data(
            fpr=output["fpr"], tpr=output["tpr"], thresholds=output["thresholds"],
            truth_fpr=None if truth is None else truth["fpr"],
            truth_tpr=None if truth is None else truth["tpr"]))


class BinnedResidualsDisplay(_OutputDisplay):
    """A PriBRP binned residual plot (Chen 2018, Alg. 13) as :func:`binned_residual_figure`
    draws it.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.display import BinnedResidualsDisplay
    >>> output = {"mean_predicted": np.array([0.2, 0.7]), "mean_residual": np.array([0.01, -0.02]),
    ...           "bins": np.array([0.0, 0.5, 1.0]), "noisy_sizes": np.array([40.0, 60.0])}
    >>> BinnedResidualsDisplay.from_output(output).figure().sources["edges"].data["x"].tolist()
    [0.5]
    """

    build = staticmethod(binned_residual_figure)

    @classmethod
    def from_output(cls, output: dict, truth=None) -> BinnedResidualsDisplay:
        """``truth``: the public reference ``(mean predicted, mean residual)``, if any."""
        return cls(binned_residual_plot_data(
            mean_predicted=output["mean_predicted"], mean_residual=output["mean_residual"],
            bins=output["bins"], noisy_sizes=output["noisy_sizes"],
            truth_predicted=None if truth is None else truth[0],
            truth_residual=None if truth is None else truth[1]))
