"""What the three diagnostics widgets share: the model under diagnosis (an ordinary fit, or a
DP fit released first), the budget, the teaching / preview / release branch and the text.

A widget diagnoses a model fitted to a session's table (feature columns, then the outcome):

- *the model*: ``model="ordinary"`` fits it inside the session on the data itself (free, but
  its predictions and residuals -- and, for a logistic model, its scores -- are as confidential
  as the data, and because the fit depends on every record the diagnostic's ε-DP guarantee
  covers the (prediction, residual) records *given* the model, not the raw records);
  ``model="dp"`` fits it privately (``"fit_model"``, :class:`~dpwidgets.families.diagnostics.params.FitParams`), which is a
  release of its own on the session (labelled, charged once; replays free), after which the
  diagnostic applies the released, public coefficients: end to end the two cost
  ``fit ε + ε``.
- *the diagnostic*: ``session.release(dataset, "residual_plot" | "roc_curve" |
  "binned_residuals", ...)``, controlled by ``epsilon``, the budget ratio ``rho``, the
  ``publisher`` of the noisy histogram and the grid size / number of thresholds.

Examples
--------
>>> from dpwidgets.families.diagnostics.base import analyst_defaults
>>> analyst_defaults(2.0, dp_fit=True)
(0.2, 0.2)
"""

from __future__ import annotations

import html
import math
import zlib

import ipywidgets as w
import numpy as np

from ..._moved import adopt_renamed_hooks, legacy_step
from ...mechanism import Release
from ...params import Params
from ...session import Session
from ...ui.accuracy import Accuracy
from ...ui.base import ReleaseWidget, budget_parts, fmt, fold, one_of
from ...ui.base import round_decimals as _round_floats
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import control_for
from ...ui.figures import update
from . import display
from .params import FitParams, publisher_name, publisher_options
from .preview import DiagnosticPreview
from .scenarios import Scenario, logistic_scenarios

__all__ = ["ANALYST_DEFAULT_SHARE", "DiagnosticWidget", "LogisticDiagnostic", "analyst_defaults",
           "titles"]

#: Analyst defaults: one release spends at most this share of what is left of the budget.
ANALYST_DEFAULT_SHARE = 0.25


def _one_digit_down(x: float) -> float:
    """``x`` rounded down to one significant digit (0.3125 -> 0.3), so a default ε is a round
    number that never exceeds the share it stands for."""
    if not x > 0:
        return x
    scale = 10.0 ** math.floor(math.log10(x))
    return math.floor(x / scale * (1 + 1e-12)) * scale


def analyst_defaults(remaining: float, dp_fit: bool) -> tuple[float, float]:
    """The ``(epsilon, fit_epsilon)`` an analyst's diagnostic starts with when none is given:
    together at most :data:`ANALYST_DEFAULT_SHARE` of the ``remaining`` budget (split evenly
    with a DP fit), each rounded down to one significant digit.

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.base import analyst_defaults
    >>> analyst_defaults(4.0, dp_fit=False)
    (1.0, 1.0)
    """
    share = ANALYST_DEFAULT_SHARE * remaining
    each = _one_digit_down(share / 2 if dp_fit else share)
    return each, each


def titles(plot: str, algorithm: str, released: str) -> dict[str, str]:
    """A diagnostic panel's titles by what it shows: teaching data, a preview, a release.

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.base import titles
    >>> titles("ROC curve", "PriROC", "Private ROC curve")["preview"]
    'ROC curve on the public stand-in (preview)'
    """
    return {"teaching": f"{plot}: confidential (public data) vs private ({algorithm})",
            "preview": f"{plot} on the public stand-in (preview)",
            "release": f"{released} ({algorithm}, released)"}


def _starting_values(session: Session, dataset: str | None, model: str | None,
                     epsilon: float | None, fit_epsilon: float | None,
                     fit_bounds: dict | None) -> tuple[str, float, float]:
    """``(model, epsilon, fit_epsilon)`` where not given: teaching 1 and 0.5; analyst a share
    of what is left (:func:`analyst_defaults`), with the DP fit whenever its public bounds are
    known (the end-to-end guarantee)."""
    if model is None:
        model = "dp" if not session.teaching and fit_bounds is not None else "ordinary"
    one_of("model", model, ("ordinary", "dp"))
    if session.teaching:
        epsilon = 1.0 if epsilon is None else epsilon
        fit_epsilon = 0.5 if fit_epsilon is None else fit_epsilon
    elif epsilon is None or fit_epsilon is None:
        if dataset is None:
            raise ValueError("an analyst session needs dataset= (a table added with "
                             "session.add_dataset)")
        plot_eps, fit_eps = analyst_defaults(session.remaining(dataset), model == "dp")
        epsilon = plot_eps if epsilon is None else epsilon
        fit_epsilon = fit_eps if fit_epsilon is None else fit_epsilon
    return model, epsilon, fit_epsilon


#: The diagnostics hooks' 0.x private names and the public hooks that replace them.
_LEGACY_HOOKS = {
    "_scenario_table": "scenario_table", "_build_controls": "build_controls",
    "_extra_rows": "extra_rows", "_extra_controls": "extra_controls",
    "_figure": "make_figure", "_mechanism_params": "mechanism_params",
    "_truth": "reference_of", "_quality": "quality_of", "_draw": "draw_output",
    "_apply_public": "apply_public", "_describe": "describe_output",
}


class DiagnosticWidget(DiagnosticPreview, ReleaseWidget):
    """What the three diagnostics widgets share: model choice, budget, modes, release.

    A subclass names its parameters' class (``parameters``, which names the ``mechanism``), and
    supplies the scenarios, its own controls, the figure, the reference it is compared with
    and how a release is drawn: public hooks (``scenario_table``, ``build_controls``,
    ``extra_rows``, ``extra_controls``, ``make_figure``, ``mechanism_params``,
    ``reference_of``, ``quality_of``, ``draw_output``, ``apply_public``, ``describe_output``),
    besides :class:`~dpwidgets.ui.base.ReleaseWidget`'s.

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.base import DiagnosticWidget
    >>> from dpwidgets.families.diagnostics.widget import RocWidget
    >>> issubclass(RocWidget, DiagnosticWidget), RocWidget.parameters.mechanism
    (True, 'roc_curve')
    """

    mechanism = ""
    #: The :class:`~dpwidgets.params.Params` class of the mechanism: its controls' declarations.
    parameters: type[Params]
    kind = "ols"
    css = ""
    source = ""
    default_rho = 0.2
    default_publisher = "dawa"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        adopt_renamed_hooks(cls, "DiagnosticWidget", _LEGACY_HOOKS)
        if "parameters" in vars(cls):  # the mechanism is the one its parameters name
            cls.mechanism = cls.parameters.mechanism

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        scenario: str | None = None,
        n: int = 5000,
        epsilon: float | None = None,
        rho: float | None = None,
        publisher: str | None = None,
        model: str | None = None,
        fit_epsilon: float | None = None,
        fit_bounds: dict | None = None,
        debounce: float = 0.15,
    ):
        model, epsilon, fit_epsilon = _starting_values(session, dataset, model, epsilon,
                                                       fit_epsilon, fit_bounds)
        self._setup(session, debounce=debounce)
        self.n = int(n)
        self._scenarios = self.scenario_table()
        self._fit_bounds_given = fit_bounds
        self._truth_cache: dict = {}
        self._preview_fits: dict = {}

        if dataset is not None:
            session.shape(dataset)  # unknown name -> ValueError now
        elif session.teaching:
            scenario = scenario or next(iter(self._scenarios))
        self.scenario = self._data_dropdown(
            dataset, scenario, self._scenarios, what="scenario", width="640px",
            needs="a table added with session.add_dataset")
        self._shared_controls(model, fit_epsilon, epsilon, rho, publisher)
        self.build_controls()
        self.select_data()
        self.figure = self.make_figure()
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        controls = w.VBox([
            self.scenario,
            w.HBox([self.model, self.fit_epsilon]),
            w.HBox([self.epsilon, self.epsilon_note]),
            *self.extra_rows(),
            w.HBox([self.show_truth, self.release_button, self.status]),
        ])
        controls.add_class("dpw-controls")
        self._assemble([self.banner, controls, self.message, self.plot, self.quality,
                        self.stats], "dpw-diagnostics", self.css)
        self._watch(self.controls_changed, self.model, self.fit_epsilon, self.epsilon, self.rho,
                    self.publisher, self.show_truth, *self.extra_controls())
        self._watch(self.data_changed, self.scenario)
        self.redraw()

    def _shared_controls(self, model: str, fit_epsilon: float, epsilon: float,
                         rho: float | None, publisher: str | None) -> None:
        """The controls every diagnostic has, the mechanism's built from its parameters."""
        style = {"description_width": "initial"}
        self.model = w.Dropdown(
            options=[("ordinary fit (confidential)", "ordinary"),
                     ("DP fit (charged)", "dp")],
            value=model, description="model", style=style,
        )
        self.model.add_class("dpw-model")
        self.fit_epsilon = control_for(FitParams, "epsilon", fit_epsilon)
        self.fit_epsilon.remove_class("dpw-epsilon")
        self.fit_epsilon.add_class("dpw-fit-epsilon")
        self.epsilon = control_for(self.parameters, "epsilon", epsilon)
        hint = self.parameters.info("rho").control  # the range a slider covers
        value = rho if rho is not None else self.default_rho
        self.rho = control_for(self.parameters, "rho", min(max(value, hint.low), hint.high),
                               readout_format=".2f")
        name = publisher_name(publisher or self.default_publisher)
        if "publisher" in self.parameters.names():
            self.publisher = control_for(self.parameters, "publisher", name)
        else:  # the mechanism has no publisher: kept (hidden) so that every widget has one
            self.publisher = w.Dropdown(
                options=[(label, key) for key, label in publisher_options(1)],
                description="publisher", style=style, layout=w.Layout(display="none"))
            self.publisher.value = name
            self.publisher.add_class("dpw-publisher")
        self.show_truth = w.Checkbox(
            value=True, description="show the confidential plot",
            disabled=not self.session.teaching,
            layout=w.Layout(display=None if self.session.teaching else "none"),
        )

    # -- the diagnostic's hooks (public: a diagnostic overrides these) --------------------
    def scenario_table(self) -> dict[str, Scenario]:
        """The teaching scenarios, by key (their tables are public)."""
        raise NotImplementedError

    def build_controls(self) -> None:
        """Create the widget's own controls (grid size, thresholds, ...)."""

    def extra_rows(self) -> list:
        """The control rows below ε (default: ρ and the publisher)."""
        return [w.HBox([self.rho, self.publisher])]

    def extra_controls(self) -> list:
        """The widget's own controls whose change redraws (besides the shared ones)."""
        return []

    def make_figure(self):
        """The figure handle (built once; redraws assign its columns)."""
        raise NotImplementedError

    def mechanism_params(self) -> dict:
        """The diagnostic release's parameters the controls describe, without the model."""
        raise NotImplementedError

    def reference_of(self, table: np.ndarray, model: dict):
        """The non-private reference computed from a *public* table (data or stand-in)."""
        raise NotImplementedError

    #: The figure panel a subclass draws into, and its titles by what is shown.
    panel = ""
    titles: dict[str, str] = {}

    #: The display of an output (a :class:`~dpwidgets.ui.figures.Display` with ``from_output``:
    #: :class:`~dpwidgets.families.diagnostics.display.RocDisplay`, ...).
    display_class: type

    def quality_of(self, output: dict, truth) -> dict:
        """Quality measures against the public reference (teaching data or stand-in)."""
        return {}

    def draw_output(self, output: dict, truth, *, where: str) -> None:
        """Draw an output (and the public reference ``truth``, if any) with its titles and
        quality measures."""
        self.display_class.from_output(output, truth).draw(self.figure)
        self.figure.set_titles(**{self.panel: self.titles[where]})
        # A released output is never compared with anything computed from confidential data.
        self._set_quality({} if truth is None or where == "release"
                          else self.quality_of(output, truth), where)

    def apply_public(self, facts: dict) -> None:
        """Set the public units/centres a scenario or outcome comes with."""

    def describe_output(self, output: dict) -> str:
        """What the stats line says the output is ("12 bins after merging")."""
        return ""


    # -- data and model --------------------------------------------------------------------
    def select_data(self) -> None:
        value = self.scenario.value
        if value.startswith("dataset:"):
            self.dataset = value.split(":", 1)[1]
            self._scenario_obj = None
            return
        sc = self._scenarios[value]
        name = value if sc.fixed_n else f"{value}_{self.n}"
        if name not in self.session.datasets:
            table = sc.make(self.n, np.random.default_rng(zlib.crc32(name.encode())))
            self.session.add_dataset(
                name, table, total_epsilon=10.0, stand_in="binary" if self.kind == "logistic"
                else "continuous", description=sc.title,
            )
        self.dataset = name
        self._scenario_obj = sc
        self.apply_public(sc.public)

    @property
    def outcome(self) -> str:
        """The outcome transformation (``"y"``; the residual plot also offers ``"log"``)."""
        return "y"

    def _fit_bounds(self) -> dict:
        bounds = self._fit_bounds_given
        if bounds is None and self._scenario_obj is not None:
            bounds = self._scenario_obj.fit_bounds
        if bounds is None:
            raise ValueError(
                "a DP fit needs public bounds: pass fit_bounds={'bounds_X': (lo, hi), "
                "'bounds_y': (lo, hi)} (OLS) or {'data_norm': r} (logistic) to the widget"
            )
        bounds = dict(bounds)
        if self.outcome == "log" and "bounds_y" in bounds:
            lo, hi = bounds["bounds_y"]
            if lo <= 0:
                raise ValueError("outcome 'log' needs a positive public lower bound of y")
            bounds["bounds_y"] = (math.log(lo), math.log(hi))
        return bounds

    def fit_params(self) -> dict:
        """Parameters of the ``"fit_model"`` release a DP fit makes (all public)."""
        return {"kind": self.kind, "outcome": self.outcome,
                "epsilon": float(self.fit_epsilon.value), **self._fit_bounds()}

    @property
    def params(self) -> dict:
        """Parameters of the diagnostic release, without the model (all public)."""
        return self.mechanism_params()

    def _spec(self, model: dict) -> dict:
        spec = {"outcome": self.outcome, **model}
        return {**self.mechanism_params(), **spec}

    def _teaching_model(self) -> dict:
        if self.model.value == "ordinary":
            return {"model": "ordinary"}
        fit = self.session.release(self.dataset, "fit_model", **self.fit_params())
        return {"model": "public", "coef": fit.output["coef"],
                "intercept": fit.output["intercept"]}

    def _truth_of(self, table: np.ndarray, model: dict):
        key = (id(table), self.outcome, model["model"],
               tuple(np.atleast_1d(model.get("coef", ()))), model.get("intercept"))
        if key not in self._truth_cache:
            if len(self._truth_cache) > 16:
                self._truth_cache.clear()
            self._truth_cache[key] = self.reference_of(table, model)
        return self._truth_cache[key]

    # -- events ----------------------------------------------------------------------------
    def controls_changed(self, change=None) -> None:
        # A message ("Released.", "Over budget.") is about the controls as they were.
        self.message.value = ""
        self._release = None
        self._debouncer.trigger()

    # -- actions ---------------------------------------------------------------------------
    def cost(self) -> float:
        """What a release would charge: the diagnostic, plus the DP fit if one is chosen."""
        total = self.session.cost(self.dataset, self.mechanism, **self._spec({"model": "ordinary"}))
        if self.model.value == "dp":
            total += self.session.cost(self.dataset, "fit_model", **self.fit_params())
        return total

    def make_release(self) -> Release:
        """Release the diagnostic (and first the DP fit, if chosen).

        Both releases are checked against the budget together before either is made; each is
        charged once and replayed for free.
        """
        ds = self.dataset
        total, parts = 0.0, []
        model: dict | None = {"model": "ordinary"}
        if self.model.value == "dp":
            fit_params = self.fit_params()
            self.session.cost(ds, "fit_model", **fit_params)  # validates, charges nothing
            if self.session.is_cached(ds, "fit_model", **fit_params):
                fit = self.session.release(ds, "fit_model", **fit_params)
                model = {"model": "public", "coef": fit.output["coef"],
                         "intercept": fit.output["intercept"]}
            else:
                total += float(fit_params["epsilon"])
                parts.append("DP fit")
                model = None
        probe = model or {"model": "public", "coef": np.zeros(self.session.shape(ds)[1] - 1),
                          "intercept": 0.0}
        cost = self.session.cost(ds, self.mechanism, **self._spec(probe))
        if model is None or not self.session.is_cached(ds, self.mechanism,
                                                       **self._spec(model)):
            total += cost
            parts.append(self.source)
        if total > 0:  # all cached: a free replay
            self.session.check_budget(ds, total, " + ".join(parts))
        notes = []
        if model is None:
            fit = self.session.release(ds, "fit_model", **self.fit_params())
            notes.append(f"{fit.label}: charged ε = {fit.epsilon:.3g}")
            model = {"model": "public", "coef": fit.output["coef"],
                     "intercept": fit.output["intercept"]}
        release = self.session.release(ds, self.mechanism, **self._spec(model))
        self._notes = notes
        return release

    def draw_release(self, release: Release) -> None:
        notes = getattr(self, "_notes", [])
        notes.append(
            f"{release.label}: "
            + (f"charged ε = {release.epsilon:.3g}" if release.charged
               else "replayed a cached release, nothing spent")
        )
        self.message.value = (
            "<div class='dpw-ok'>Released. " + html.escape("; ".join(notes)) + ".</div>"
        )
        self.quality_values = {}
        self.quality.value = (
            "<div>No quality measure on confidential data: it would need the confidential "
            "plot.</div>"
        )
        self.draw_output(release.output, None, where="release")
        self._stats(release.output, where="release")

    def draw_live(self) -> None:
        model = self._teaching_model()
        release = self._live_release(self.mechanism, **self._spec(model))
        truth = (self._truth_of(self.session.public_view(self.dataset), model)
                 if self.show_truth.value else None)
        self.draw_output(release.output, truth, where="teaching")
        self._stats(release.output, where="teaching")
        self.live_status([release])

    # -- text ------------------------------------------------------------------------------
    def update_banner(self) -> None:
        self.fit_epsilon.layout.display = None if self.model.value == "dp" else "none"
        if self.problem():
            return
        eps = float(self.epsilon.value)
        if self.model.value == "ordinary":
            summary = (f"ε = {fmt(eps)}-DP {self.per_unit} <i>given</i> an ordinary fit "
                       "(not end to end)")
            bounds = ("" if self.session.teaching or self._fit_bounds_given is not None else
                      " Its public bounds are not declared: pass <code>fit_bounds=</code> to "
                      "the widget to offer it.")
            model = (
                "Model: an <b>ordinary fit</b> on the data. Its predictions and residuals are "
                "themselves confidential and never leave the session; the plot is "
                f"ε = {fmt(eps)}-DP {self.per_unit} for the (prediction, residual) records <i>given</i> the "
                "model. The fit depends on every record, so that is not an end-to-end "
                f"guarantee on the raw records: choose the DP fit for one.{bounds}"
            )
        else:
            fit = float(self.fit_epsilon.value)
            summary = f"{fmt(fit + eps)}-DP {self.per_unit} end to end, with a DP fit"
            model = (
                f"Model: a <b>DP fit</b> (ε fit = {fmt(fit)}, charged as its own "
                f"release). End to end: ({fmt(fit)} + {fmt(eps)}) = {fmt(fit + eps)}-DP {self.per_unit}."
            )
        self.banner.value = (
            "<div class='dpw-banner-ok'>"
            + fold(f"<b>{html.escape(self.source)}</b>: {summary}", model) + "</div>"
        )

    def _set_quality(self, values: dict[str, float], where: str) -> None:
        self.quality_values = values
        if not values:
            self.quality.value = ""
            return
        on = "on the public stand-in" if where == "preview" else "against the confidential plot"
        items = " · ".join(f"{html.escape(k)} = {v:.3f}" for k, v in values.items())
        self.quality.value = f"<div class='dpw-quality-values'>Quality {on}: {items}</div>"

    def _stats(self, output: dict, *, where: str) -> None:
        self._set_stats(where, self.describe_output(output), _round_floats(output["guarantee"]),
                        budget_parts(output["epsilon_parts"]))



# The hooks' 0.x names, for a subclass written against them (warned: adopt_renamed_hooks).
for _old, _new in _LEGACY_HOOKS.items():
    setattr(DiagnosticWidget, _old, legacy_step(_old, _new))


class LogisticDiagnostic(DiagnosticWidget):
    """What the two diagnostics of a logistic model share (PriROC and PriBRP, Chen 2018,
    Alg. 11 and 13): the logistic scenarios, the depth ``s`` of the private thresholds or
    bins, the noiseless reference and its quality measures, and the accuracy band.

    A subclass names its ``reference(table, model)`` and ``measures(output, truth)`` (of
    :mod:`~dpwidgets.families.diagnostics.reference`), the fixed grid its curves are compared
    on (``accuracy_grid``), a preview's curve and the stand-in's on that grid
    (``_curve_values(release)``, ``_stand_in_curve()``) and the words of the accuracy panel
    (``_accuracy_what``), and gets ``s=`` in ``self._init``.

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.base import LogisticDiagnostic
    >>> from dpwidgets.families.diagnostics.roc import RocWidget
    >>> issubclass(RocWidget, LogisticDiagnostic), RocWidget.kind
    (True, 'logistic')
    """

    kind = "logistic"
    scenario_table = staticmethod(logistic_scenarios)

    def build_controls(self) -> None:
        self.s = control_for(self.parameters, "s", self._init["s"] or 0)
        self.s.add_class("dpw-grid")

    def reference_of(self, table: np.ndarray, model: dict):
        return self.reference(table, model)

    def quality_of(self, output: dict, truth) -> dict:
        return self.measures(output, truth)

    def accuracy_grid(self) -> np.ndarray:
        """The fixed points the private curves are compared on across runs (public)."""
        raise NotImplementedError

    def _accuracy_grid(self) -> np.ndarray:  # the 0.x name
        return self.accuracy_grid()

    # -- accuracy before spending (analyst) -------------------------------------------------
    @property
    def accuracy_model(self) -> Accuracy:
        """The accuracy panel's strategy (an :class:`~dpwidgets.ui.accuracy.Accuracy`)."""
        return Accuracy(self._accuracy_what, self._curve_values, self._stand_in_curve,
                        run=self._preview_with_fit, band=self._curve_band)

    def _curve_band(self, preview) -> None:
        """The band around the private curve at the accuracy grid (removed with None)."""
        band = () if preview is None else (self.accuracy_grid(), preview.now.low,
                                            preview.now.high)
        update(self.figure, display.band_data(*band))
