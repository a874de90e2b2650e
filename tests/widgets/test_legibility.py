"""What a person sees, checked without a browser: whole labels, legends beside the data,
figures that follow the page, no empty panel, one-line guarantees, ε to 3 significant digits,
safe analyst defaults, and a release that says it is running.

The browser side of the same claims (labels not cut, nothing wider than the output area) is in
tests/ui/test_legibility_ui.py.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from bokeh.core.property.vectorization import Value
from bokeh.models import ColumnDataSource, DataRange1d, GlyphRenderer, Legend, Plot

from dpwidgets import Session
from dpwidgets.families.diagnostics import display as diagnostics_display
from dpwidgets.families.diagnostics.base import analyst_defaults
from dpwidgets.families.dynamic import display as dynamic_display
from dpwidgets.families.personalized import display as personalized_display
from dpwidgets.families.streams import display as streams_display
from dpwidgets.families.svt import display as svt_display
from dpwidgets.families.synth import display as synth_display
from dpwidgets.ui import base as base
from dpwidgets.ui.base import fmt, visible_text
from dpwidgets.ui.figures import GROW, fit_to_page
from dpwidgets.widgets import (
    DynamicHistogramWidget,
    PersonalizedWidget,
    ResidualPlotWidget,
    RocWidget,
    StreamWidget,
    SVTExplorer,
    SyntheticDataWidget,
    figures,
)

from .conftest import secret_scores, zipf_scores
from .test_diagnostics_widgets import secret_logistic, secret_regression

pytestmark = pytest.mark.usefixtures("close_new_widgets")

#: The lessons, as a new user opens them.
LESSONS = Path(__file__).resolve().parents[2] / "notebooks"

#: The most characters a folded text (banner, status) shows before it is opened: one line.
ONE_LINE = 160


# -- figures -----------------------------------------------------------------------------------
BUILDERS = {
    "svt": svt_display.svt_figure,
    "split": svt_display.split_figure,
    "topc": svt_display.topc_figure,
    "attack": svt_display.attack_figure,
    "residual": diagnostics_display.residual_figure,
    "roc": diagnostics_display.roc_figure,
    "binned": diagnostics_display.binned_residual_figure,
    "dynamic": dynamic_display.dynamic_figure,
    "personalized": personalized_display.personalized_figure,
    "stream": streams_display.stream_figure,
    "hierarchy": lambda: streams_display.hierarchy_figure([-1, 0, 0, 1, 1, 2, 2]),
    "synth": synth_display.synth_figure,
}


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_no_legend_sits_over_the_data(name):
    """Every legend is laid out beside the frame (above, below, left or right), none inside
    it, where it would cover data whatever its corner."""
    layout = BUILDERS[name]().layout
    plots = list(layout.select({"type": Plot}))
    legends = [obj for p in plots for obj in p.center if isinstance(obj, Legend)]
    assert legends == [], [(p.title.text, obj.location) for p in plots for obj in p.center
                           if isinstance(obj, Legend)]
    outside = [obj for p in plots for side in ("above", "below", "left", "right")
               for obj in getattr(p, side) if isinstance(obj, Legend)]
    assert len(outside) == sum(isinstance(m, Legend) for m in layout.select({"type": Legend}))


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_figures_follow_the_width_of_the_page(name):
    """Every panel stretches to the output area, between a legible minimum and GROW times its
    built width; square heatmaps keep their size; axes fit what is drawn."""
    layout = BUILDERS[name]().layout
    built = {p.id: p.width for p in layout.select({"type": Plot})}
    fit_to_page(layout)
    for p in layout.select({"type": Plot}):
        if "fixed_size" in p.tags:
            assert p.sizing_mode in (None, "fixed") and p.width == p.height
            continue
        assert p.sizing_mode == "stretch_width", p.title.text
        assert p.max_width == int(built[p.id] * GROW) and p.min_width <= built[p.id]
    assert layout.sizing_mode == "stretch_width" or isinstance(layout, Plot)
    assert all(r.only_visible for r in layout.select({"type": DataRange1d}))


def test_a_hidden_panel_leaves_its_row_and_comes_back_to_its_place():
    """show_panels takes a panel out of its row or column (BokehJS must not restyle the glyphs
    of an invisible plot whose data change) and puts it back where it was built."""
    from bokeh.document import Document
    from bokeh.layouts import column, row
    from bokeh.plotting import figure

    a, b, c, d = (figure(width=100, height=100, title=t) for t in "abcd")
    layout = column(row(a, b, c), d)
    Document().add_root(layout)
    panels = {"a": a, "b": b, "c": c, "d": d}
    top = layout.children[0]
    figures.show_panels(panels, a=False, c=False)
    assert [p.title.text for p in top.children] == ["b"]
    figures.show_panels(panels, c=True)
    assert [p.title.text for p in top.children] == ["b", "c"]
    figures.show_panels(panels, a=True, d=False)
    assert [p.title.text for p in top.children] == ["a", "b", "c"]
    assert [p for p in layout.children if isinstance(p, Plot)] == []
    figures.show_panels(panels, d=True, b=True)  # b was never hidden: unchanged
    assert [p.title.text for p in top.children] == ["a", "b", "c"] and layout.children[1] is d


# -- widgets, one per family, on confidential data ---------------------------------------------
def _svt(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=7)
    s.add_dataset("items", secret_scores(2000), total_epsilon=1.0,
                  stand_in=zipf_scores(2000, seed=3))
    return s, SVTExplorer(s, epsilon=0.5, c=10, threshold=300.0, debounce=0)


def _residual(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=5)
    s.add_dataset("income", secret_regression(), total_epsilon=1.0, stand_in="continuous")
    return s, ResidualPlotWidget(s, dataset="income", debounce=0)


def _roc(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=5)
    s.add_dataset("clinic", secret_logistic(), total_epsilon=1.0, stand_in="binary")
    return s, RocWidget(s, dataset="clinic", debounce=0)


def _dynamic(tmp_path):
    from dpwidgets.families.dynamic.standins import dynamic_stand_in

    rng = np.random.default_rng(3)
    series = rng.multinomial(5037, np.full(16, 1 / 16), size=40).astype(float)
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=1)
    s.add_dataset("series", series, total_epsilon=2.0, stand_in=dynamic_stand_in(40, 16, 5000),
                  facts={"cardinality": 5000})
    return s, DynamicHistogramWidget(s, "series", epsilon=0.5, cutoff=4, debounce=0)


def _synth(tmp_path):
    from dpwidgets.families.synth.standins import synth_stand_in

    domains = {"a": (0, 49), "b": (0, 19), "flag": (0, 1)}
    rng = np.random.default_rng(11)
    frame = pd.DataFrame({"a": rng.integers(0, 50, 2000), "b": rng.integers(0, 20, 2000),
                          "flag": rng.integers(0, 2, 2000)})
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=5)
    s.add_dataset("table", frame, total_epsilon=2.0,
                  stand_in=synth_stand_in(2000, domains, dtypes={c: "int64" for c in domains}))
    return s, SyntheticDataWidget(s, dataset="table", domains=domains, epsilon=0.5,
                                  compare=False, debounce=0)


def _personalized(tmp_path):
    from dpwidgets.families.personalized.standins import budgets_mixed, personalized_stand_in

    edges = np.linspace(0.0, 100.0, 41)
    n = 5000
    b = budgets_mixed(n, [(0.5, 0.01, 0.2), (0.4, 0.2, 1.0), (0.1, 1.0, 1.0)],
                      np.random.default_rng(2))
    values = np.clip(np.random.default_rng(3).normal(50.0, 15.0, n), 0.0, 99.0) + 0.371
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=5)
    s.add_dataset("survey", np.column_stack((values, b)), total_epsilon=2.0,
                  stand_in=personalized_stand_in(b, edges))
    return s, PersonalizedWidget(s, "survey", bins=edges, method="utility", debounce=0)


def _stream(tmp_path):
    from dpwidgets.families.streams.standins import wifi_stream

    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=5)
    s.add_dataset("ap", wifi_stream("Med_5", np.random.default_rng(2024))[:3000],
                  total_epsilon=1.0,
                  stand_in=wifi_stream("Med_5", np.random.default_rng(0))[:3000])
    return s, StreamWidget(s, dataset="ap", epsilon=0.5, debounce=0)


FAMILIES = {"svt": _svt, "residual": _residual, "roc": _roc, "dynamic": _dynamic,
            "synth": _synth, "personalized": _personalized, "stream": _stream}
# The stream widgets' banner is written in dpwidgets/widgets/streams.py, not folded yet.
UNFOLDED_BANNERS = {"stream"}


def _widgets(root):
    yield root
    for child in getattr(root, "children", ()) or ():
        yield from _widgets(child)


def _shown_plots(layout):
    """The plots on screen: visible, in visible rows and columns."""
    if not layout.visible:
        return
    if isinstance(layout, Plot):
        yield layout
        return
    for child in getattr(layout, "children", []):
        yield from _shown_plots(child[0] if isinstance(child, tuple) else child)


def _draws_nothing(plot: Plot) -> bool:
    """A plot whose every glyph draws from an empty source."""
    sizes = [max((len(v) for v in r.data_source.data.values()), default=0)
             for r in plot.renderers
             if isinstance(r, GlyphRenderer) and isinstance(r.data_source, ColumnDataSource)]
    return not sizes or max(sizes) == 0


_COST = re.compile(r"costs ε=([^)]*)\)")


def _assert_legible(widget, name: str) -> None:
    for part in _widgets(widget):
        if type(part).__name__ in ("Button", "Checkbox"):
            assert part.layout.width == "auto" and part.layout.max_width == "100%", part
            assert part.layout.flex in (None, "0 1 auto"), part
        elif type(part).__name__ == "HBox" and any(
                type(c).__name__ in ("Button", "Checkbox") for c in part.children):
            assert part.layout.flex_flow == "row wrap"
    assert "dpw-widget" in widget._dom_classes and any(
        "white-space: normal" in str(getattr(c, "value", "")) for c in widget.children)
    cost = _COST.search(widget.release_button.description)
    if cost:  # ε on the button: 3 significant digits at most
        digits = re.sub(r"[^0-9]", "", cost.group(1)).lstrip("0")
        assert len(digits.rstrip("0")) <= 3, widget.release_button.description
    if name not in UNFOLDED_BANNERS:
        assert len(visible_text(widget.banner.value)) <= ONE_LINE, visible_text(
            widget.banner.value)
        assert "<details" in widget.banner.value  # the rest, one click away


@pytest.mark.parametrize("name", sorted(FAMILIES))
def test_an_analyst_widget_reads_whole_and_hides_what_it_cannot_show(name, tmp_path):
    session, widget = FAMILIES[name](tmp_path)
    layout = widget.plot._model
    _assert_legible(widget, name)
    empty = [p.title.text for p in _shown_plots(layout) if _draws_nothing(p)]
    assert empty == [], f"preview: empty panels on screen: {empty}"
    release = widget.release()
    assert release is not None and release.charged, widget.message.value
    empty = [p.title.text for p in _shown_plots(layout) if _draws_nothing(p)]
    assert empty == [], f"after a release: empty panels on screen: {empty}"
    assert all("not shown" not in p.title.text for p in _shown_plots(layout))
    status = visible_text(widget.status.value)
    assert len(status) <= ONE_LINE and f"ε = {fmt(release.epsilon)}-DP" in status, status
    assert "Guarantee:" in widget.status.value  # folded, not gone
    # Releasing the same again is a replay: the button says it is free.
    assert widget.release_button.description.endswith("(free: already released)")
    _assert_legible(widget, name)
    session.close()


def test_a_release_says_it_is_running_and_cannot_be_clicked_twice(tmp_path, monkeypatch):
    session, widget = _svt(tmp_path)
    seen = {}
    make = widget._make_release

    def watched():
        seen["disabled"] = widget.release_button.disabled
        seen["status"] = widget.status.value
        return make()

    monkeypatch.setattr(widget, "_make_release", watched)
    assert widget.release() is not None
    assert seen["disabled"] is True and "Releasing…" in seen["status"]
    assert widget.release_button.disabled is False and "Releasing" not in widget.status.value
    session.close()


# -- numbers as a person reads them ------------------------------------------------------------
def test_numbers_read_as_3_significant_digits():
    assert fmt(0.803222) == "0.803" and fmt(0.4426) == "0.443" and fmt(0.5) == "0.5"
    assert fmt(2334.0) == "2,330" and fmt(999.6) == "1,000" and fmt(12_000) == "12,000"
    assert fmt(float("inf")) == "∞"
    assert base.round_decimals("ε = 0.4426-DP (Li 2017, Def. 4.1.1; §4.2.2)") == (
        "ε = 0.443-DP (Li 2017, Def. 4.1.1; §4.2.2)")
    assert base._param_text({"epsilon": 0.123456, "variant": "standard", "c": 3},
                            "SVT standard") == "ε=0.123, c=3"


# -- safe analyst defaults (the residual plot and its two siblings) ----------------------------
def test_an_analyst_diagnostic_starts_safe(tmp_path):
    """Not the whole budget in one click: without a given ε an analyst's diagnostic spends at
    most a quarter of what is left; with public fit bounds it diagnoses a DP fit (end-to-end
    guarantee) by default. Teaching keeps its defaults (ordinary fit, ε = 1)."""
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=5)
    s.add_dataset("income", secret_regression(), total_epsilon=1.0, stand_in="continuous")
    plain = ResidualPlotWidget(s, dataset="income", debounce=0)
    assert plain.model.value == "ordinary" and plain.epsilon.value == 0.2
    assert plain.cost() <= 0.25 * s.remaining("income")
    assert "fit_bounds=" in plain.banner.value  # says how to get the DP fit
    dp = ResidualPlotWidget(s, dataset="income", debounce=0,
                            fit_bounds={"bounds_X": (1, 50), "bounds_y": (-20, 110)})
    assert dp.model.value == "dp"
    assert dp.epsilon.value == dp.fit_epsilon.value == 0.1
    assert dp.cost() <= 0.25 * s.remaining("income")
    assert "end to end" in visible_text(dp.banner.value)
    s.release("income", "residual_plot", epsilon=0.6, rho=0.3, publisher="dawa_dyadic",
              mu_predicted=1.0, mu_residual=1.0, center_predicted=25.0, model="ordinary")
    later = ResidualPlotWidget(s, dataset="income", debounce=0)
    assert later.epsilon.value == 0.1 and later.cost() <= 0.25 * s.remaining("income")
    explicit = ResidualPlotWidget(s, dataset="income", epsilon=0.3, model="ordinary", debounce=0)
    assert explicit.epsilon.value == 0.3
    assert analyst_defaults(4.0, dp_fit=False) == (1.0, 1.0)
    assert analyst_defaults(1.0, dp_fit=True) == (0.1, 0.1)
    t = Session(mode="teaching", seed=5)
    taught = ResidualPlotWidget(t, scenario="ideal", n=500, debounce=0)
    assert taught.model.value == "ordinary" and taught.epsilon.value == 1.0
    s.close()
    t.close()


# -- what the canvas hides from the DOM: titles against toolbars, legends against their plot --
#: Average advance of one character of BokehJS's default sans-serif, in em. Helvetica / Arial
#: text (lower case, spaces, digits) averages about 0.5 em; 0.55 errs towards "does not fit".
CHAR_EM = 0.55


def _px(size: str) -> float:
    """A CSS font size ("13px", "8pt") in pixels."""
    number = float(re.sub(r"[a-z]+$", "", size))
    return number * 4 / 3 if size.endswith("pt") else number


def _legend_extent(legend: Legend) -> float:
    """The estimated length of a legend along its orientation, in px (BokehJS's layout: per
    item the glyph, the standoff, the label and the spacing; padding and margin around), over
    the longest row when ``ncols`` wraps it. Items labelled from a field (known only once the
    data arrive) are left out: the estimate is a lower bound."""
    char = CHAR_EM * _px(legend.label_text_font_size or "13px")
    texts = [item.label.value if isinstance(item.label, Value) else item.label
             for item in legend.items]
    texts = [t for t in texts if isinstance(t, str)]
    if legend.orientation != "horizontal":
        return 2 * (legend.padding + legend.margin) + len(texts) * (
            max(legend.glyph_height, 1.2 * _px(legend.label_text_font_size or "13px"))
            + legend.spacing)
    widths = [legend.glyph_width + legend.label_standoff + char * len(t) + legend.spacing
              for t in texts]
    per_row = len(widths) or 1
    if isinstance(legend.ncols, int):
        per_row = legend.ncols
    elif isinstance(legend.nrows, int):
        per_row = -(-per_row // legend.nrows)
    rows = [sum(widths[i:i + per_row]) for i in range(0, len(widths), per_row)] or [0]
    return 2 * (legend.padding + legend.margin) + max(rows)


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_no_title_runs_into_the_toolbar(name):
    """A titled plot keeps its toolbar off the title's side: BokehJS stacks both in one panel
    and a long title then runs under the tool icons (what a person saw in lessons 04 and 06)."""
    clash = [p.title.text for p in BUILDERS[name]().layout.select({"type": Plot})
             if p.title is not None and p.title.text and p.toolbar.tools
             and p.toolbar_location == p.title_location]
    assert clash == [], f"titles beside the toolbar: {clash}"


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_legend_beside_the_frame_fits_its_plot(name):
    """A legend above or below a plot is no wider than the plot as built (BokehJS clips it at
    the canvas: lesson 04's threshold legend lost its last entry); one left or right is no
    taller. The browser measures the drawn boxes too (tests/ui/test_layout_ui.py)."""
    too_long = []
    for p in BUILDERS[name]().layout.select({"type": Plot}):
        for side, room in (("above", p.width), ("below", p.width),
                           ("left", p.height), ("right", p.height)):
            for legend in getattr(p, side):
                if isinstance(legend, Legend) and _legend_extent(legend) > room:
                    too_long.append(f"{p.title.text!r}: {side} legend "
                                    f"~{_legend_extent(legend):.0f} px in {room} px")
    assert too_long == [], too_long


# -- a control made irrelevant by another choice -----------------------------------------------
def _teaching(widget_class, **kwargs):
    return widget_class(Session("teaching", seed=0), debounce=0, **kwargs)


@pytest.mark.parametrize("case", ["dynamic k", "residual rho", "personalized cap", "svt split"])
def test_a_control_another_choice_makes_irrelevant_is_hidden(case):
    """Greyed out with a value the run does not use would mislead (issue 22): the k of the
    dynamic widget under the engine's rule, PriRP's ρ under its rule, the ε cap with "no cap",
    SVT's split for a variant that fixes its own are hidden while irrelevant, shown again when
    not."""
    if case == "dynamic k":
        widget = _teaching(DynamicHistogramWidget, epsilon=0.5, cutoff=4)
        switch, control, irrelevant = widget.auto_k, widget.k, True
    elif case == "residual rho":
        widget = _teaching(ResidualPlotWidget, scenario="ideal", n=500)
        switch, control, irrelevant = widget.auto_rho, widget.rho, True
    elif case == "personalized cap":
        widget = _teaching(PersonalizedWidget)
        switch, control, irrelevant = widget.no_cap, widget.epsilon, True
    else:
        widget = _teaching(SVTExplorer)
        switch, control = widget.variant, widget.split
        irrelevant = next(v for v in widget.variant.options
                          if (v[1] if isinstance(v, tuple) else v) != "standard")
        irrelevant = irrelevant[1] if isinstance(irrelevant, tuple) else irrelevant
    before = switch.value
    switch.value = irrelevant
    widget._on_change()
    assert control.layout.visibility == "hidden", (case, control.layout.visibility)
    switch.value = "standard" if case == "svt split" else False
    widget._on_change()
    assert control.layout.visibility != "hidden", case
    switch.value = before


# -- the lessons' exercises --------------------------------------------------------------------
def _answers_assigned(tree) -> list:
    return [node for node in ast.walk(tree) if isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id.startswith("answer_") for t in node.targets)]


@pytest.mark.parametrize("lesson", sorted(p.name for p in LESSONS.glob("0*.ipynb")))
def test_an_exercise_leaves_the_answer_to_the_student(lesson):
    """An exercise cell holds placeholders (``answer_1 = ...``), never the answer; the answers
    are in one solution cell after it, tagged ``solution`` and collapsed, which fills in only
    what the student left as ``...`` (so the lesson still runs top to bottom)."""
    import nbformat

    nb = nbformat.read(str(LESSONS / lesson), as_version=4)
    code = [(i, c) for i, c in enumerate(nb.cells) if c.cell_type == "code"]
    exercise = [(i, c) for i, c in code if "solution" not in (c.metadata.get("tags") or [])
                and _answers_assigned(ast.parse(c.source))]
    solutions = [(i, c) for i, c in code if "solution" in (c.metadata.get("tags") or [])]
    assert len(exercise) == 1 and len(solutions) == 1, (lesson, len(exercise), len(solutions))
    (at, cell), (sol_at, sol) = exercise[0], solutions[0]
    filled = [ast.unparse(n) for n in _answers_assigned(ast.parse(cell.source))
              if not (isinstance(n.value, ast.Constant) and n.value.value is Ellipsis)]
    assert filled == [], f"{lesson}: answers given in the exercise cell: {filled}"
    assert sol_at == at + 1 and sol.metadata.get("jupyter", {}).get("source_hidden") is True
    guarded = {n.test.left.id for n in ast.parse(sol.source).body if isinstance(n, ast.If)
               and isinstance(n.test, ast.Compare) and isinstance(n.test.left, ast.Name)}
    top = [n for n in ast.parse(sol.source).body if _answers_assigned(n) and not
           isinstance(n, ast.If)]
    asked = {t.id for n in _answers_assigned(ast.parse(cell.source)) for t in n.targets}
    assert top == [] and guarded == asked, (lesson, guarded, asked)


def test_an_undefined_metric_is_left_out_with_its_reason():
    """No "nan" on screen: a stream without events (lesson 07's) has no ROC, so no AUC and no
    TPR; the quality line says why instead of printing nan."""
    from dpwidgets.families.streams.widget import _events_text

    nan = float("nan")
    q = {"PeGaSus AUC": nan, "LM AUC": nan, "PeGaSus TPR at δ": nan, "PeGaSus FPR at δ": 0.053}
    text = _events_text(q)
    assert "nan" not in text.lower() and "not computed" in text and "FPR 0.053" in text, text
    q.update({"PeGaSus AUC": 0.91, "LM AUC": 0.85, "PeGaSus TPR at δ": 0.5})
    assert _events_text(q) == ("events AUC — PeGaSus 0.910 · LM 0.850 "
                               "(at δ: TPR 0.50 / FPR 0.053)")
