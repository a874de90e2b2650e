"""Bokeh figure builders of the synthetic-data widget (Li 2017, Ch. 3, DPCopula).

The contract of :mod:`dpwidgets.ui.figures`; :class:`SynthFigure` names its panels;
:func:`display_bins` and :func:`binned` are the numpy post-processing of a margin,
:func:`released_dependence` that of a release's DP correlation.

Three rows:

1. *margins*, side by side: the reference table's margin of one attribute (teaching: the real
   table; analyst preview: the public stand-in; after an analyst release: nothing) and the
   synthetic table's, with the DP margin the synthetic data were drawn from as a line;
2. *dependence*, three heatmaps of Kendall's τ: reference, synthetic, and their difference --
   or, after an analyst release, the released DP correlation matrix (in τ units);
3. *range queries*: the distribution (ECDF) of the relative error of random range-count
   queries (Li 2017, §3.3.1) for DPCopula and the baselines.

:class:`SyntheticDisplay` holds one redraw as an object: the outputs and their measures,
computed once, drawn whole (:meth:`SyntheticDisplay.draw`) or one margin at a time
(:meth:`SyntheticDisplay.draw_margin`, all a margin chooser redraws).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
from bokeh.layouts import column, row
from bokeh.models import ColumnDataSource, FactorRange, HoverTool, Legend, LinearColorMapper
from bokeh.palettes import RdBu11
from bokeh.plotting import figure

from ...ui.figures import TOOLS as _TOOLS
from ...ui.figures import Display, FigureHandle, PlotData, show_panels, update
from ...ui.figures import source as _source

__all__ = ["ERROR_FLOOR", "MAX_BARS", "METHOD_COLOURS", "METHOD_LABELS", "SynthFigure",
           "SyntheticDisplay", "binned", "dependence_plot_data", "display_bins", "ecdf",
           "margin_band_data", "margin_plot_data", "range_error_plot_data", "released_dependence",
           "synth_figure", "tau_from_correlation"]

#: At most this many bars per margin; a larger domain is shown in groups of adjacent values.
MAX_BARS = 100
#: Relative errors below this are drawn at it (a log axis has no 0).
ERROR_FLOOR = 1e-3
#: The methods of the range-query panel: source suffix -> legend label.
METHOD_LABELS = {
    "dpcopula": "DPCopula",
    "independent": "independent margins (no dependence)",
    "laplace": "Laplace, full-domain histogram",
    "peer": "AIM / MST (OpenDP)",
}
METHOD_COLOURS = {"dpcopula": "#1f77b4", "independent": "#ff7f0e", "laplace": "#7f7f7f",
                  "peer": "#2ca02c"}
_EMPTY = np.zeros(0)
_EMPTY_BARS = {"left": _EMPTY, "right": _EMPTY, "top": _EMPTY}
# Plain lists: BokehJS reads an empty float array in a colour column as an invalid colour.
_EMPTY_CELLS = {"x": [], "y": [], "value": [], "label": [], "text_color": []}
_TAU_PANELS = ("tau_reference", "tau_synthetic", "tau_third")


@dataclass
class SynthFigure(FigureHandle):
    """A :class:`~.figures.FigureHandle` with its panels by name: ``margin_reference``,
    ``margin_synthetic``, ``tau_reference``, ``tau_synthetic``, ``tau_third``, ``errors``."""

    panels: dict = field(default_factory=dict)

    def set_titles(self, **titles: str) -> None:
        """Retitle panels by name (one small document patch each, none if unchanged)."""
        for name, text in titles.items():
            if self.panels[name].title.text != text:
                self.panels[name].title.text = text

    def set_attributes(self, columns: Sequence[str]) -> None:
        """Put the attributes on the heatmaps' axes (a patch only when they change)."""
        cols = [str(c) for c in columns]
        for name in _TAU_PANELS:
            p = self.panels[name]
            if list(p.x_range.factors) != cols:
                p.x_range.factors = cols
                p.y_range.factors = cols[::-1]

    def set_margin_axis(self, attribute: str) -> None:
        """Label the margins' x axis with the attribute drawn."""
        for name in ("margin_reference", "margin_synthetic"):
            axis = self.panels[name].xaxis[0]
            if axis.axis_label != attribute:
                axis.axis_label = attribute


def _margin_panel(title: str, width: int, height: int, colour: str, source):
    p = figure(width=width, height=height, tools=_TOOLS, title=title,
               y_axis_label="share of the records", x_axis_label="value")
    p.quad(left="left", right="right", bottom=0, top="top", source=source, fill_color=colour,
           line_color=colour, fill_alpha=0.55)
    return p


def _heatmap(title: str, source, mapper, size: int):
    # Square cells: the heatmap keeps its size when the page is wider (see fit_to_page).
    p = figure(width=size, height=size, tools="hover,save", title=title,
               x_range=FactorRange(factors=[]), y_range=FactorRange(factors=[]),
               toolbar_location=None, tooltips=[("pair", "@y × @x"), ("τ", "@value{0.000}")],
               tags=["fixed_size"])
    p.rect("x", "y", width=1, height=1, source=source, line_color="white",
           fill_color={"field": "value", "transform": mapper})
    p.text("x", "y", text="label", source=source, text_align="center",
           text_baseline="middle", text_font_size="8pt", text_color="text_color")
    p.title.text_font_size = "9pt"
    p.xaxis.major_label_orientation = 0.8
    p.axis.major_label_text_font_size = "8pt"
    p.grid.grid_line_color = None
    p.axis.axis_line_color = None
    return p


def synth_figure(*, margin_width: int = 430, height: int = 250, cell: int = 290,
                 errors_width: int = 700) -> SynthFigure:
    """The three rows of the synthetic-data widget, built once.

    Sources
    -------
    margin_reference : left, right, top
        The reference table's margin of the chosen attribute, as shares of its records
        (teaching: the real table; analyst preview: the stand-in; after a release: empty).
    margin_synthetic : left, right, top
        The synthetic table's margin.
    margin_dp : x, y
        The DP margin (the distribution the synthetic values were drawn from, Li 2017, Alg. 3),
        at the bars' centres.
    tau_reference, tau_synthetic, tau_difference, tau_dp : x, y, value, label, text_color
        Kendall's τ of every attribute pair: the reference table's, the synthetic table's,
        synthetic − reference, and the released DP correlation matrix in τ units
        (``(2/π) arcsin P̃``). ``tau_difference`` and ``tau_dp`` share the third panel (one of
        the two is empty).
    errors_dpcopula, errors_independent, errors_laplace, errors_peer : x, y
        ECDF of the relative errors of the random range queries (x: error, floored at
        :data:`ERROR_FLOOR`; y: share of queries with at most that error).
    margin_band : left, right, low, high
        Per bar of the synthetic margin, where 90% of releases at the chosen ε put it
        (accuracy before spending: previews on the stand-in; empty until estimated).
    """
    sources = {
        "margin_reference": _source(**_EMPTY_BARS),
        "margin_synthetic": _source(**_EMPTY_BARS),
        "margin_dp": _source(x=[], y=[]),
        **{name: ColumnDataSource(data={k: list(v) for k, v in _EMPTY_CELLS.items()})
           for name in ("tau_reference", "tau_synthetic", "tau_difference", "tau_dp")},
        **{f"errors_{key}": _source(x=[], y=[]) for key in METHOD_LABELS},
        "margin_band": _source(left=[], right=[], low=[], high=[]),
    }
    reference = _margin_panel("Real table", margin_width, height, "#7f7f7f",
                              sources["margin_reference"])
    synthetic = _margin_panel("Synthetic table (DPCopula)", margin_width, height, "#1f77b4",
                              sources["margin_synthetic"])
    # Below the frame, never over the bars.
    synthetic.add_layout(Legend(orientation="horizontal", label_text_font_size="8pt", ncols=1,
                                padding=2, margin=2, border_line_alpha=0), "below")
    synthetic.line("x", "y", source=sources["margin_dp"], color="#d62728", line_width=1.5,
                   legend_label="DP margin (drawn from)")
    synthetic.quad(left="left", right="right", bottom="low", top="high",
                   source=sources["margin_band"], fill_color="black", fill_alpha=0.18,
                   line_color="black", line_alpha=0.45,
                   legend_label="90% of releases at this ε (estimated on the stand-in)")
    # Same axes on both sides: a margin reads the same on either panel.
    synthetic.x_range = reference.x_range
    synthetic.y_range = reference.y_range

    tau = LinearColorMapper(palette=RdBu11, low=-1.0, high=1.0)
    diff = LinearColorMapper(palette=RdBu11, low=-0.3, high=0.3)
    heat_ref = _heatmap("Kendall's τ: real table", sources["tau_reference"], tau, cell)
    heat_syn = _heatmap("Kendall's τ: synthetic table", sources["tau_synthetic"], tau, cell)
    heat_third = _heatmap("Difference: synthetic − real", sources["tau_difference"], diff, cell)
    heat_third.rect("x", "y", width=1, height=1, source=sources["tau_dp"], line_color="white",
                    fill_color={"field": "value", "transform": tau})
    heat_third.text("x", "y", text="label", source=sources["tau_dp"], text_align="center",
                    text_baseline="middle", text_font_size="8pt", text_color="text_color")
    for p in (heat_syn, heat_third):
        p.x_range = heat_ref.x_range
        p.y_range = heat_ref.y_range

    errors = figure(width=errors_width, height=height + 30, tools=_TOOLS, x_axis_type="log",
                    y_range=(0.0, 1.02),
                    title="Random range-count queries: relative error",
                    x_axis_label=f"relative error |A_syn − A_real| / max(A_real, s) "
                                 f"(below {ERROR_FLOOR:g}: drawn at {ERROR_FLOOR:g})",
                    y_axis_label="share of queries")
    errors.add_layout(Legend(click_policy="hide", label_text_font_size="8pt"), "right")
    lines = []
    for key, label in METHOD_LABELS.items():
        lines.append(errors.step("x", "y", source=sources[f"errors_{key}"], mode="after",
                                 color=METHOD_COLOURS[key], line_width=2, legend_label=label))
    errors.add_tools(HoverTool(renderers=lines, tooltips=[("error", "@x{0.000}"),
                                                          ("share", "@y{0.00}")]))
    layout = column(row(reference, synthetic), row(heat_ref, heat_syn, heat_third), errors)
    panels = {"margin_reference": reference, "margin_synthetic": synthetic,
              "tau_reference": heat_ref, "tau_synthetic": heat_syn, "tau_third": heat_third,
              "errors": errors}
    return SynthFigure(layout, sources, panels)


# --------------------------------------------------------------------------------------------
# Margins
# --------------------------------------------------------------------------------------------
def display_bins(domain: np.ndarray, max_bars: int = MAX_BARS) -> tuple[np.ndarray, np.ndarray]:
    """Group a domain's values into at most ``max_bars`` bars of adjacent values.

    Returns ``(starts, edges)``: the first value index of every bar and the bars' ``k + 1``
    edges in the domain's units (half-way between adjacent values; a public function of the
    domain alone).
    """
    values = np.asarray(domain, dtype=float)
    size = values.size
    width = max(1, -(-size // max_bars))
    starts = np.arange(0, size, width)
    if size > 1:
        mids = (values[1:] + values[:-1]) / 2.0
        cuts = np.concatenate(([values[0] - (mids[0] - values[0])], mids,
                               [values[-1] + (values[-1] - mids[-1])]))
    else:
        cuts = np.array([values[0] - 0.5, values[0] + 0.5])
    edges = np.concatenate((cuts[starts], [cuts[-1]]))
    return starts, edges


def binned(shares: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Shares per value summed into the bars that start at ``starts``."""
    return np.add.reduceat(np.asarray(shares, dtype=float), starts)


def margin_plot_data(
    domain: np.ndarray,
    *,
    synthetic: np.ndarray | None,
    reference: np.ndarray | None = None,
    dp_margin: np.ndarray | None = None,
    max_bars: int = MAX_BARS,
) -> PlotData:
    """Columns for the margin panels of :func:`synth_figure`.

    Parameters
    ----------
    domain : array
        The attribute's public domain values (sorted).
    synthetic, reference, dp_margin : array, optional
        Shares of the records per domain value (each sums to 1): the synthetic table's, the
        reference table's (``None`` after an analyst release), the DP margin.
    max_bars : int
        Bars at most (:func:`display_bins`).
    """
    starts, edges = display_bins(domain, max_bars)
    left, right = edges[:-1], edges[1:]

    def bars(shares):
        if shares is None:
            return dict(_EMPTY_BARS)
        return {"left": left, "right": right, "top": binned(shares, starts)}

    data = {"margin_reference": bars(reference), "margin_synthetic": bars(synthetic),
            "margin_dp": {"x": _EMPTY, "y": _EMPTY}}
    if dp_margin is not None and np.asarray(dp_margin).size == np.asarray(domain).size:
        data["margin_dp"] = {"x": (left + right) / 2.0, "y": binned(dp_margin, starts)}
    return data


def margin_band_data(domain: np.ndarray | None = None, low: np.ndarray | None = None,
                     high: np.ndarray | None = None, max_bars: int = MAX_BARS) -> PlotData:
    """The ``margin_band`` source: one box per bar of the margin of ``domain`` (as
    :func:`display_bins` groups it) from ``low`` to ``high``, shares already summed per bar
    (empty without values)."""
    if domain is None or low is None or high is None:
        return {"margin_band": {"left": _EMPTY, "right": _EMPTY, "low": _EMPTY, "high": _EMPTY}}
    edges = display_bins(domain, max_bars)[1]
    return {"margin_band": {"left": edges[:-1], "right": edges[1:],
                            "low": np.asarray(low, dtype=float),
                            "high": np.asarray(high, dtype=float)}}


# --------------------------------------------------------------------------------------------
# Dependence
# --------------------------------------------------------------------------------------------
def tau_from_correlation(correlation: np.ndarray) -> np.ndarray:
    """Kendall's τ of a Gaussian copula with correlation P: ``(2/π) arcsin P`` (the inverse of
    Li 2017, eq. 3.1.8, ``P = sin(πτ/2)``)."""
    return 2.0 / np.pi * np.arcsin(np.clip(np.asarray(correlation, dtype=float), -1.0, 1.0))


def released_dependence(output: dict, attrs: Sequence[str]) -> tuple[np.ndarray | None, str]:
    """The DP correlation matrix of a release in τ units over ``attrs``, and its title
    (post-processing of the DP output): the one matrix, or for the hybrid the matrix of the
    partition with the largest noisy size; ``None`` (with a title saying why) when the release
    holds none.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.synth.display import released_dependence
    >>> output = {"correlation": np.array([[1.0, 0.5], [0.5, 1.0]]),
    ...           "correlation_columns": ["a", "b"], "partition_correlations": []}
    >>> tau, title = released_dependence(output, ["a", "b"])
    >>> tau.round(3).tolist(), title
    ([[1.0, 0.333], [0.333, 1.0]], 'Released DP P̃ as τ = (2/π) asin P̃')
    """
    attrs = list(attrs)
    corr_cols = list(output["correlation_columns"])
    matrix = output["correlation"]
    title = "Released DP P̃ as τ = (2/π) asin P̃"
    if matrix is None and output["partition_correlations"]:
        parts = [p for p in output["partition_correlations"] if p["correlation"] is not None]
        if not parts:
            return None, "No DP correlation released (fewer than 2 large attributes)"
        # The partition with the largest noisy size (cells in C order over the small
        # attributes' domains, as the engine enumerates them).
        small = list(output["details"].get("small_attributes", []))
        sizes = np.asarray(output["details"].get("partition_noisy_sizes", []), dtype=float)
        cells = itertools.product(*(np.asarray(output["domains"][a]).tolist() for a in small))
        noisy = dict(zip(cells, sizes.tolist(), strict=False))
        chosen = max(parts, key=lambda p: noisy.get(tuple(p["key"]), -np.inf))
        matrix = chosen["correlation"]
        key = ", ".join(f"{a} = {v}" for a, v in zip(small, chosen["key"], strict=False))
        title = f"Released DP P̃ as τ ({key})"
    if matrix is None:
        return None, "No DP correlation in this release"
    full = np.full((len(attrs), len(attrs)), np.nan)
    np.fill_diagonal(full, 1.0)
    tau = tau_from_correlation(matrix)
    pos = [attrs.index(c) for c in corr_cols]
    full[np.ix_(pos, pos)] = tau
    return np.nan_to_num(full, nan=0.0), title


def _cells(columns: Sequence[str], matrix: np.ndarray | None, dark: float) -> dict:
    if matrix is None:
        return {k: list(v) for k, v in _EMPTY_CELLS.items()}
    cols = [str(c) for c in columns]
    m = np.asarray(matrix, dtype=float)
    jj, ii = np.meshgrid(np.arange(len(cols)), np.arange(len(cols)))
    values = m[ii, jj].ravel()
    return {
        "x": [cols[j] for j in jj.ravel()],
        "y": [cols[i] for i in ii.ravel()],
        "value": values,
        "label": [f"{v:.2f}" for v in values],
        "text_color": ["white" if abs(v) > dark else "#222222" for v in values],
    }


def dependence_plot_data(
    columns: Sequence[str],
    *,
    synthetic: np.ndarray | None,
    reference: np.ndarray | None = None,
    dp: np.ndarray | None = None,
) -> dict[str, dict]:
    """Columns for the heatmaps of :func:`synth_figure` (matrices over ``columns``).

    ``synthetic`` and ``reference`` are Kendall's τ matrices; the difference panel is filled
    when both are given; ``dp`` (already in τ units, see :func:`tau_from_correlation`) fills
    the third panel instead, and is meant for an analyst release.
    """
    data = {
        "tau_reference": _cells(columns, reference, 0.6),
        "tau_synthetic": _cells(columns, synthetic, 0.6),
        "tau_difference": _cells(columns, None, 0.0),
        "tau_dp": _cells(columns, dp, 0.6),
    }
    if reference is not None and synthetic is not None and dp is None:
        data["tau_difference"] = _cells(
            columns, np.asarray(synthetic, float) - np.asarray(reference, float), 0.2)
    return data


# --------------------------------------------------------------------------------------------
# Range queries
# --------------------------------------------------------------------------------------------
def ecdf(errors: np.ndarray, floor: float = ERROR_FLOOR) -> tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of ``errors`` as step points: x sorted (floored), y = share <= x."""
    x = np.sort(np.maximum(np.asarray(errors, dtype=float), floor))
    if x.size == 0:
        return _EMPTY, _EMPTY
    y = np.arange(1, x.size + 1) / x.size
    return np.concatenate(([x[0]], x)), np.concatenate(([0.0], y))


def range_error_plot_data(errors: Mapping[str, np.ndarray | None]) -> dict[str, dict]:
    """Columns for the range-query panel: ``errors`` maps a key of :data:`METHOD_LABELS` to
    the relative errors of its synthetic table (``None`` or missing: nothing drawn)."""
    unknown = set(errors) - set(METHOD_LABELS)
    if unknown:
        raise ValueError(f"unknown methods {sorted(unknown)}; expected {sorted(METHOD_LABELS)}")
    data = {}
    for key in METHOD_LABELS:
        values = errors.get(key)
        x, y = ecdf(values) if values is not None else (_EMPTY, _EMPTY)
        data[f"errors_{key}"] = {"x": x, "y": y}
    return data


class SyntheticDisplay(Display):
    """One redraw of the synthetic-data widget, computed once and then only drawn.

    Built (:meth:`from_measures`) from the DP outputs by method key (``"dpcopula"`` first, the
    baselines beside it) and their measures against the reference the widget may draw (the
    teaching table or the stand-in; none after a paid release), by
    :class:`~dpwidgets.families.synth.measures.Measures`. It keeps what a later redraw needs
    (another margin, a peer added beside): the outputs, the notes on the baselines not run, the
    public reference table, where the outputs come from and which are live runs.

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from dpwidgets import Session
    >>> from dpwidgets.families.synth.display import SyntheticDisplay
    >>> from dpwidgets.families.synth.measures import Measures, range_errors
    >>> session = Session("teaching", seed=0)
    >>> table = pd.DataFrame(np.random.default_rng(0).integers(0, 4, (300, 2)), columns=["a", "b"])
    >>> session.add_dataset("t", table, stand_in=table.to_numpy())
    >>> output = session.release("t", "dpcopula", epsilon=1.0,
    ...                          domains={"a": range(4), "b": range(4)}).output
    >>> attrs, measures = ("a", "b"), Measures(100)
    >>> domains = {a: np.asarray(output["domains"][a]) for a in attrs}
    >>> queries = measures.queries(attrs, domains)
    >>> evals = {"dpcopula": measures.synthetic(output, attrs, domains, queries, False)}
    >>> shown = SyntheticDisplay.from_measures(
    ...     {"dpcopula": output}, {}, evals=evals, errors=range_errors(evals, None, 1.0),
    ...     n_queries=len(queries[0]), sanity_bound=1.0, where="release")
    >>> handle = shown.draw(shown.build(), margin="b")
    >>> handle.sources["margin_synthetic"].data["left"].tolist()
    [-0.5, 0.5, 1.5, 2.5]
    """

    build = staticmethod(synth_figure)

    def __init__(self, data: PlotData, *, outputs: dict, notes: dict, where: str,
                 attrs: tuple[str, ...], domains: dict, evals: dict, reference=None,
                 reference_table=None, live=frozenset(), titles: dict | None = None):
        super().__init__(data)
        self.outputs, self.notes, self.where = dict(outputs), dict(notes), where
        self.attrs, self.domains, self.evals, self.reference = attrs, domains, evals, reference
        self.reference_table, self.live, self.titles = reference_table, set(live), titles or {}

    @classmethod
    def from_measures(cls, outputs: dict, notes: dict, *, evals: dict, errors: dict,
                      n_queries: int, sanity_bound: float, where: str, reference=None,
                      reference_table=None, live=()) -> SyntheticDisplay:
        """The display of ``outputs`` with their measures ``evals`` (by method key) and the
        reference's (``reference``: None when none may be shown), and the range-query errors
        ``errors`` (:func:`~dpwidgets.families.synth.measures.range_errors`)."""
        from . import text

        main = outputs["dpcopula"]
        attrs = tuple(main["columns"])
        domains = {a: np.asarray(main["domains"][a]) for a in attrs}
        dp, dp_title = released_dependence(main, attrs) if where == "release" else (None, "")
        data = dependence_plot_data(attrs, synthetic=evals["dpcopula"].tau,
                                    reference=None if reference is None else reference.tau,
                                    dp=dp)
        data.update(range_error_plot_data(errors))
        titles = text.dependence_titles(
            where, reference=reference is not None, live=live, rows=int(main["n_rows"]),
            n_queries=n_queries, sanity_bound=sanity_bound, dp_title=dp_title)
        return cls(data, outputs=outputs, notes=notes, where=where, attrs=attrs,
                   domains=domains, evals=evals, reference=reference,
                   reference_table=reference_table, live=live, titles=titles)

    def draw(self, handle: SynthFigure, *, margin: str | None = None) -> SynthFigure:
        """Draw the dependence and range-query rows, then the margin of ``margin`` (default:
        the first attribute). Without a reference its τ and the errors against it have
        nothing to show: those panels go rather than stand empty."""
        handle.set_attributes(self.attrs)
        update(handle, self.data)  # the dependence row's sources, then the range queries'
        handle.set_titles(**self.titles)
        show_panels(handle.panels, tau_reference=self.reference is not None,
                    errors=self.reference is not None)
        return self.draw_margin(handle, margin)

    def draw_margin(self, handle: SynthFigure, attribute: str | None = None) -> SynthFigure:
        """Draw the margin of ``attribute`` (one not among the attributes: the first)."""
        from . import text

        attr = attribute if attribute in self.attrs else self.attrs[0]
        main, ref = self.outputs["dpcopula"], self.reference
        update(handle, margin_plot_data(
            self.domains[attr], synthetic=self.evals["dpcopula"].shares(attr),
            reference=None if ref is None else ref.shares(attr),
            dp_margin=main["margins"].get(attr)))
        handle.set_margin_axis(attr)
        handle.set_titles(**text.margin_titles(
            self.where, attr, reference=ref is not None, live="dpcopula" in self.live,
            rows=main["n_rows"]))
        show_panels(handle.panels, margin_reference=ref is not None)
        return handle
