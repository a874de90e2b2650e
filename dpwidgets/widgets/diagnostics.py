"""Private regression diagnostics: ResidualPlotWidget (PriRP), RocWidget (PriROC) and
BinnedResidualWidget (PriBRP) -- Chen 2018, Ch. 4.

Each widget diagnoses a model fitted to a session's table (feature columns, then the outcome):

- *the model*: ``model="ordinary"`` fits it inside the session on the data itself (free, but
  its predictions and residuals -- and, for a logistic model, its scores -- are as confidential
  as the data, and because the fit depends on every record the diagnostic's ε-DP guarantee
  covers the (prediction, residual) records *given* the model, not the raw records);
  ``model="dp"`` fits it privately (:mod:`dpwidgets.engine.regression`), which is a release of its own on the session
  (``"fit_model"``, labelled, charged once; replays free), after which the diagnostic applies
  the released, public coefficients: end to end the two cost ``fit ε + ε``.
- *the diagnostic*: ``session.release(dataset, "residual_plot" | "roc_curve" |
  "binned_residuals", ...)``, controlled by ``epsilon``, the budget ratio ``rho``, the
  ``publisher`` of the noisy histogram and the grid size / number of thresholds.

Teaching mode (public data): every control change is a live release (charged to the teaching
ledger, so the meter shows what interactive use costs); the confidential plot is drawn beside
the private one with its quality measure (Sim, AUC error and symmetric difference, ShapeD).
Analyst mode (confidential data): controls drive a free preview on the dataset's public stand-in
(same public size); only the Release button spends, through the session; a release draws the
DP output only -- no record, prediction, residual, score or label, and no confidential plot.
"""

from __future__ import annotations

import html
import math
import zlib
from dataclasses import dataclass, field

import ipywidgets as w
import numpy as np

from ..engine import diagnostics as dx
from ..engine.histograms import PUBLISHERS
from ..session import Release, Session, model_predictions
from ..ui.base import PublicSource, ReleaseWidget, budget_parts, fmt, fold, one_of
from ..ui.base import g3 as _fmt
from ..ui.base import round_decimals as _round_floats
from ..ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ..ui.controls import EpsilonSlider, FloatSlider, IntSlider
from . import figures

__all__ = [
    "BinnedResidualWidget",
    "ResidualPlotWidget",
    "RocWidget",
    "Scenario",
]


def _titles(plot: str, algorithm: str, released: str) -> dict[str, str]:
    """A diagnostic panel's titles by what it shows: teaching data, a preview, a release."""
    return {"teaching": f"{plot}: confidential (public data) vs private ({algorithm})",
            "preview": f"{plot} on the public stand-in (preview)",
            "release": f"{released} ({algorithm}, released)"}


@dataclass(frozen=True)
class Scenario(PublicSource):
    """A public regression table (features, then the outcome); see :class:`PublicSource`.

    Attributes
    ----------
    fit_bounds : dict
        Public bounds for a DP fit: ``bounds_X``/``bounds_y`` (OLS; ``bounds_y`` in the
        outcome's recorded units) or ``data_norm`` (logistic).
    public : dict
        Per outcome transformation, the public units and centres of PriRP's bounds
        (``mu_predicted``, ``mu_residual``, ``center_predicted``).
    """

    fit_bounds: dict
    public: dict = field(default_factory=dict)


def _table(data) -> np.ndarray:
    return np.column_stack((data.X, data.y))


def _residual_scenarios() -> dict[str, Scenario]:
    from ..datasets import regression as reg

    # x ~ U[1, 50]: predictions of a sensible fit lie in about [0, 80]; the public centre 25 is
    # the middle of x's range, so Alg. 10's doubling intervals do not waste half of the grid.
    synthetic = {"y": {"mu_predicted": 1.0, "mu_residual": 1.0, "center_predicted": 25.0}}
    out = {
        name: Scenario(
            f"{name.capitalize()} (Chen 2018, §4.2.3): {reg.RESIDUAL_SCENARIOS[name]}",
            lambda n, rng, name=name: _table(reg.residual_scenario(name, n, rng)),
            {"bounds_X": (1.0, 50.0), "bounds_y": (-20.0, 110.0)},
            synthetic,
        )
        for name in reg.RESIDUAL_SCENARIOS
    }
    # The diabetes outcome ranges over 25-346 (sklearn's documentation: public).
    out["diabetes"] = Scenario(
        "Diabetes (scikit-learn, n = 442): disease progression on 10 features",
        lambda n, rng: _table(reg.load_diabetes_data()),
        {"bounds_X": (-0.2, 0.2), "bounds_y": (25.0, 346.0)},
        {
            "y": {"mu_predicted": 10.0, "mu_residual": 10.0, "center_predicted": 185.0},
            "log": {"mu_predicted": 0.1, "mu_residual": 0.1, "center_predicted": 4.5},
        },
        fixed_n=True,
    )
    return out


def _logistic_scenarios() -> dict[str, Scenario]:
    from ..datasets import regression as reg

    return {
        "M1": Scenario(
            "M1 (Chen 2018, §4.4.3): logit = 2x, x ~ U[-1, 1] (well specified)",
            lambda n, rng: _table(reg.logistic_scenario("M1", n, rng)), {"data_norm": 1.0},
        ),
        "M2": Scenario(
            "M2 (Chen 2018, §4.4.3): logit = x² + 2x − 1, fitted linearly (misspecified)",
            lambda n, rng: _table(reg.logistic_scenario("M2", n, rng)), {"data_norm": 1.0},
        ),
        "breast_cancer": Scenario(
            "Breast cancer (scikit-learn, n = 569): 30 standardised features",
            lambda n, rng: _table(reg.load_breast_cancer_data()), {"data_norm": 8.0},
            fixed_n=True,
        ),
    }


def _publisher_options(ndim: int) -> list[tuple[str, str]]:
    seen: dict[str, str] = {}
    for key, pub in PUBLISHERS.items():
        if ndim in pub.dims and pub.name not in seen:
            seen[pub.name] = pub.name if key == pub.name else f"{pub.name} ({key})"
    return [(label, name) for name, label in seen.items()]


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
    with a DP fit), each rounded down to one significant digit."""
    share = ANALYST_DEFAULT_SHARE * remaining
    each = _one_digit_down(share / 2 if dp_fit else share)
    return each, each


def _grid_slider(s: int | None, maximum: int, what: str) -> IntSlider:
    """PriROC's / PriBRP's grid size ``s`` (2^s ``what``; 0 = the engine's choice)."""
    made = IntSlider(value=s or 0, min=0, max=maximum, description=f"s: 2^s {what} (0 = auto)",
                     style={"description_width": "initial"})
    made.add_class("dpw-grid")
    return made


class _DiagnosticWidget(ReleaseWidget):
    """What the three diagnostics widgets share: model choice, budget, modes, release."""

    mechanism = ""
    kind = "ols"
    css = ""
    source = ""
    publisher_ndim: int | None = None
    rho_range = (0.01, 0.9)
    default_rho = 0.2
    default_publisher = "dawa"

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
        if model is None:
            # Analyst: the end-to-end guarantee (a DP fit) whenever its public bounds are known.
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
        self._setup(session, debounce=debounce)
        self.n = int(n)
        self._scenarios = self._scenario_table()
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
        self.model = w.Dropdown(
            options=[("ordinary fit (confidential)", "ordinary"),
                     ("DP fit (charged)", "dp")],
            value=model, description="model", style={"description_width": "initial"},
        )
        self.model.add_class("dpw-model")
        self.fit_epsilon = EpsilonSlider(fit_epsilon, description="ε fit")
        self.fit_epsilon.remove_class("dpw-epsilon")
        self.fit_epsilon.add_class("dpw-fit-epsilon")
        self.epsilon = EpsilonSlider(epsilon, description="ε plot")
        lo, hi = self.rho_range
        self.rho = FloatSlider(
            value=min(max(rho if rho is not None else self.default_rho, lo), hi), min=lo,
            max=hi, step=0.01, description="ρ", readout_format=".2f", continuous_update=True,
            style={"description_width": "initial"},
        )
        self.rho.add_class("dpw-rho")
        self.publisher = w.Dropdown(
            options=_publisher_options(self.publisher_ndim or 1), description="publisher",
            style={"description_width": "initial"},
            layout=w.Layout(display=None if self.publisher_ndim else "none"),
        )
        self.publisher.value = PUBLISHERS[publisher or self.default_publisher].name
        self.publisher.add_class("dpw-publisher")
        self.show_truth = w.Checkbox(
            value=True, description="show the confidential plot", disabled=not session.teaching,
            layout=w.Layout(display=None if session.teaching else "none"),
        )
        self._build_controls()
        self._select_data()
        self.figure = self._figure()
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        controls = w.VBox([
            self.scenario,
            w.HBox([self.model, self.fit_epsilon]),
            w.HBox([self.epsilon, self.epsilon_note]),
            *self._extra_rows(),
            w.HBox([self.show_truth, self.release_button, self.status]),
        ])
        controls.add_class("dpw-controls")
        self._assemble([self.banner, controls, self.message, self.plot, self.quality,
                        self.stats], "dpw-diagnostics", self.css)
        self._watch(self._on_change, self.model, self.fit_epsilon, self.epsilon, self.rho,
                    self.publisher, self.show_truth, *self._extra_controls())
        self._watch(self._on_data, self.scenario)
        self._recompute()

    # -- to be specialised -----------------------------------------------------------------
    def _scenario_table(self) -> dict[str, Scenario]:
        raise NotImplementedError

    def _build_controls(self) -> None:
        """Create the widget's own controls (grid size, thresholds, ...)."""

    def _extra_rows(self) -> list:
        return [w.HBox([self.rho, self.publisher])]

    def _extra_controls(self) -> list:
        return []

    def _figure(self) -> figures.diagnostics.DiagnosticFigure:
        raise NotImplementedError

    def _mechanism_params(self) -> dict:
        raise NotImplementedError

    def _truth(self, table: np.ndarray, model: dict):
        """The non-private reference computed from a *public* table (data or stand-in)."""
        raise NotImplementedError

    #: The figure panel a subclass draws into, and its titles by what is shown.
    panel = ""
    titles: dict[str, str] = {}

    def _plot_data(self, output: dict, truth):
        """The figure's columns for an output (and the public reference, if any)."""
        raise NotImplementedError

    def _quality(self, output: dict, truth) -> dict:
        """Quality measures against the public reference (teaching data or stand-in)."""
        return {}

    def _draw(self, output: dict, truth, *, where: str) -> None:
        figures.update(self.figure, self._plot_data(output, truth))
        self.figure.set_titles(**{self.panel: self.titles[where]})
        # A released output is never compared with anything computed from confidential data.
        self._set_quality({} if truth is None or where == "release"
                          else self._quality(output, truth), where)

    def _apply_public(self, facts: dict) -> None:
        """Set the public units/centres a scenario or outcome comes with."""

    # -- data and model --------------------------------------------------------------------
    def _select_data(self) -> None:
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
        self._apply_public(sc.public)

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
        return self._mechanism_params()

    def _spec(self, model: dict) -> dict:
        spec = {"outcome": self.outcome, **model}
        return {**self._mechanism_params(), **spec}

    def _teaching_model(self) -> dict:
        if self.model.value == "ordinary":
            return {"model": "ordinary"}
        fit = self.session.release(self.dataset, "fit_model", **self.fit_params())
        return {"model": "public", "coef": fit.output["coef"],
                "intercept": fit.output["intercept"]}

    def _preview_model(self) -> dict:
        if self.model.value == "ordinary":
            return {"model": "ordinary"}
        params = self.fit_params()
        key = repr(sorted((k, repr(v)) for k, v in params.items()))
        if key not in self._preview_fits:
            fitted = self.session.preview(self.dataset, "fit_model", rng=self._rng, **params).result
            self._preview_fits[key] = {"model": "public", "coef": np.asarray(fitted.coef),
                                       "intercept": float(fitted.intercept)}
        return self._preview_fits[key]

    def _truth_of(self, table: np.ndarray, model: dict):
        key = (id(table), self.outcome, model["model"],
               tuple(np.atleast_1d(model.get("coef", ()))), model.get("intercept"))
        if key not in self._truth_cache:
            if len(self._truth_cache) > 16:
                self._truth_cache.clear()
            self._truth_cache[key] = self._truth(table, model)
        return self._truth_cache[key]

    # -- events ----------------------------------------------------------------------------
    def _on_change(self, change=None) -> None:
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

    def _make_release(self) -> Release:
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

    # -- accuracy before spending (analyst) -------------------------------------------------
    def _accuracy_run(self, params: dict, epsilon: float, rng: np.random.Generator) -> Release:
        """One preview of what a release at ``epsilon`` would draw. With a DP fit the fit is
        previewed too, at its ε scaled like the plot's: :meth:`cost` adds the two, so the rest
        of the budget buys both in the same proportion (and the fit's noise is part of the
        spread)."""
        model: dict = {"model": "ordinary"}
        if self.model.value == "dp":
            fit = self.fit_params()
            fit["epsilon"] *= epsilon / float(params["epsilon"])
            fitted = self.session.preview(self.dataset, "fit_model", rng=rng, **fit).result
            model = {"model": "public", "coef": np.asarray(fitted.coef),
                     "intercept": float(fitted.intercept)}
        return self.session.preview(self.dataset, self.mechanism, rng=rng,
                                    **{**params, "epsilon": epsilon, "outcome": self.outcome,
                                       **model})

    def _accuracy_truth(self):
        """The stand-in's own, noiseless reference with the ordinary fit (what the private
        pipeline estimates; public)."""
        return self._truth_of(self.session.stand_in(self.dataset), {"model": "ordinary"})

    def _draw_release(self, release: Release) -> None:
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
        self._draw(release.output, None, where="release")
        self._stats(release.output, where="release")

    def _live(self) -> None:
        model = self._teaching_model()
        release = self._live_release(self.mechanism, **self._spec(model))
        truth = (self._truth_of(self.session.public_view(self.dataset), model)
                 if self.show_truth.value else None)
        self._draw(release.output, truth, where="teaching")
        self._stats(release.output, where="teaching")
        self._live_status([release])

    def _preview(self) -> None:
        model = self._preview_model()
        output = self._preview_run(self.mechanism, **self._spec(model)).output
        truth = self._truth_of(self.session.stand_in(self.dataset), model)
        self._draw(output, truth, where="preview")
        self._stats(output, where="preview")
        fit_note = ""
        if self.model.value == "dp":
            fit_params = self.fit_params()
            if not self.session.is_cached(self.dataset, "fit_model", **fit_params):
                fit_cost = self.session.cost(self.dataset, "fit_model", **fit_params)
                fit_note = f" + ε = {fmt(fit_cost)} for the DP fit"
        # What the door charges (ε times a person's rows on a user-level table), as the button.
        own = self.session.cost(self.dataset, self.mechanism, **self._spec({"model": "ordinary"}))
        self.status.value = (
            "<span class='dpw-preview'>PREVIEW on the public stand-in (same size) — nothing "
            f"spent. Release would charge ε = {fmt(own)}{fit_note} "
            "(nothing for what was already released).</span>"
        )

    # -- text ------------------------------------------------------------------------------
    def _update_banner(self) -> None:
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
        self._set_stats(where, self._describe(output), _round_floats(output["guarantee"]),
                        budget_parts(output["epsilon_parts"]))

    def _describe(self, output: dict) -> str:
        return ""


class ResidualPlotWidget(_DiagnosticWidget):
    """PriRP (Chen 2018, Alg. 9): a private residual plot of a linear regression, beside the truth.

    Parameters
    ----------
    session : Session
        Holds the table (feature columns, then the outcome) and its budget.
    dataset : str, optional
        A table in the session. Required in analyst mode (its stand-in is what previews use).
        In teaching mode without one, a scenario is added to the session.
    scenario : {"ideal", "heteroscedastic", "nonlinear", "diabetes"}
        Teaching mode: the public data set to start with (Chen 2018, §4.2.3; scikit-learn's diabetes
        data for the real-data lesson of Chen 2018, Fig. 4.5).
    n : int
        Size of the synthetic scenarios (Chen 2018 uses 500-5000).
    epsilon : float, optional
        The plot's budget. Default: 1 in teaching mode; in analyst mode a quarter of what is
        left of the dataset's budget (half of that with a DP fit, which gets the other half),
        rounded down to one digit -- never the whole budget in one click.
    rho : float, optional
        ε1/ε, the share of the bounds (Alg. 10). ``None``: the text's
        ``ε1 = min(0.3 ε, 470/n)`` (``auto_rho`` checked).
    publisher : str
        The 2-D histogram publisher (Chen 2018, Table 4.2: DAWA has the least regret).
    grid : int, optional
        m of the m × m grid; ``None``/0: ``sqrt(θ² n ε2 / 10)`` (Chen 2018, §4.2.2).
    outcome : {"y", "log"}
        Public transformation of the outcome (Chen 2018, Fig. 4.5: log income).
    model : {"ordinary", "dp"}, optional
        The model under diagnosis. An ordinary fit's predictions are themselves
        confidential: they stay in the session, and the plot's guarantee is given the model;
        a DP fit (:mod:`dpwidgets.engine.regression`) is charged as its own labelled release.
        Default: ``"dp"`` in analyst mode when ``fit_bounds`` are given (the end-to-end
        guarantee), else ``"ordinary"``.
    fit_epsilon : float, optional
        The DP fit's budget (default: 0.5 in teaching mode; see ``epsilon`` in analyst mode).
    fit_bounds : dict, optional
        Public ``bounds_X`` and ``bounds_y`` (recorded units) for the DP fit (scenarios bring
        their own).
    mu_predicted, mu_residual, center_predicted : float, optional
        Public units and centre of the private bounds (scenarios bring their own).
    debounce : float
        Seconds of quiet before recomputing in a kernel.

    Attributes
    ----------
    figure : DiagnosticFigure
        Sources ``truth``, ``private``, ``region``.
    quality_values : dict
        Teaching / preview: ``{"Sim": TVD on the 10 × 10 grid}`` (Chen 2018, §4.2.3; 0 is perfect).
    """

    mechanism = "residual_plot"
    kind = "ols"
    css = "dpw-residual-plot"
    source = "PriRP — private residual plot (Chen 2018, Alg. 9)"
    publisher_ndim = 2
    default_rho = 0.3

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        grid: int | None = None,
        outcome: str = "y",
        mu_predicted: float | None = None,
        mu_residual: float | None = None,
        center_predicted: float | None = None,
        **kwargs,
    ):
        one_of("outcome", outcome, ("y", "log"))
        self._init = {"grid": grid, "outcome": outcome, "mu_predicted": mu_predicted,
                      "mu_residual": mu_residual, "center_predicted": center_predicted,
                      "rho": kwargs.get("rho")}
        self._similarity: tuple[np.ndarray, dx.SimilarityReference] | None = None
        super().__init__(session, dataset, **kwargs)

    def _scenario_table(self) -> dict[str, Scenario]:
        return _residual_scenarios()

    def _build_controls(self) -> None:
        init = self._init
        self.auto_rho = w.Checkbox(value=init["rho"] is None,
                                   description="ε1 = min(0.3ε, 470/n) (Chen 2018)")
        self.auto_rho.add_class("dpw-auto-rho")
        self.grid = IntSlider(
            value=init["grid"] or 0, min=0, max=200, description="grid m (0 = auto)",
            style={"description_width": "initial"}, continuous_update=True,
        )
        self.grid.add_class("dpw-grid")
        self.outcome_choice = w.Dropdown(
            options=[("y", "y"), ("log y", "log")], value=init["outcome"],
            description="outcome", style={"description_width": "initial"},
        )
        self.outcome_choice.add_class("dpw-outcome")
        text = {"style": {"description_width": "initial"}, "layout": w.Layout(width="170px")}
        self.mu_predicted = w.BoundedFloatText(value=init["mu_predicted"] or 1.0, min=1e-9,
                                               max=1e12, description="μ ŷ", **text)
        self.mu_residual = w.BoundedFloatText(value=init["mu_residual"] or 1.0, min=1e-9,
                                              max=1e12, description="μ r", **text)
        self.center_predicted = w.FloatText(value=init["center_predicted"] or 0.0,
                                            description="centre ŷ", **text)
        for c in (self.mu_predicted, self.mu_residual, self.center_predicted):
            c.add_class("dpw-public-units")
        self._explicit_units = any(init[k] is not None for k in
                                   ("mu_predicted", "mu_residual", "center_predicted"))

    def _extra_rows(self) -> list:
        return [
            w.HBox([self.rho, self.auto_rho, self.publisher]),
            w.HBox([self.grid, self.outcome_choice]),
            w.HBox([self.mu_predicted, self.mu_residual, self.center_predicted]),
        ]

    def _extra_controls(self) -> list:
        return [self.auto_rho, self.grid, self.mu_predicted, self.mu_residual,
                self.center_predicted]

    def _on_outcome(self, change=None) -> None:
        if self._scenario_obj is not None:
            self._apply_public(self._scenario_obj.public)
        self._on_change()

    def _select_data(self) -> None:
        super()._select_data()
        if not getattr(self, "_outcome_wired", False):
            self._outcome_wired = True
            self._watch(self._on_outcome, self.outcome_choice)

    def _apply_public(self, facts: dict) -> None:
        if self._explicit_units:
            return
        units = facts.get(self.outcome) or facts.get("y")
        if not units:
            return
        with self._setting():
            self.mu_predicted.value = units["mu_predicted"]
            self.mu_residual.value = units["mu_residual"]
            self.center_predicted.value = units["center_predicted"]

    def _on_change(self, change=None) -> None:
        if self._syncing:
            return
        self.rho.disabled = bool(self.auto_rho.value)
        # The rule's ρ may need n: hidden, not shown with a ρ the run does not use.
        self.rho.layout.visibility = "hidden" if self.auto_rho.value else "visible"
        super()._on_change(change)

    @property
    def outcome(self) -> str:
        return self.outcome_choice.value

    def _figure(self):
        return figures.diagnostics.residual_figure()

    def _mechanism_params(self) -> dict:
        return {
            "epsilon": float(self.epsilon.value),
            "publisher": self.publisher.value,
            "rho": None if self.auto_rho.value else float(self.rho.value),
            "grid": int(self.grid.value) or None,
            "mu_predicted": float(self.mu_predicted.value),
            "mu_residual": float(self.mu_residual.value),
            "center_predicted": float(self.center_predicted.value),
        }

    def _truth(self, table: np.ndarray, model: dict) -> np.ndarray:
        predicted, residuals, _ = model_predictions(table, kind="ols", outcome=self.outcome,
                                                    **model)
        return np.column_stack((predicted, residuals))

    def _draw(self, output: dict, truth, *, where: str) -> None:
        figures.update(self.figure, figures.diagnostics.residual_plot_data(
            private_points=output["points"], bounds=output["bounds"], truth_points=truth,
        ))
        titles = {"teaching": "Confidential residual plot (public data, teaching)",
                  "preview": "Public stand-in's residual plot (preview)",
                  "release": "Confidential plot: not shown (analyst mode)"}
        self.figure.set_titles(truth=titles[where], private=(
            "Private residual plot (PriRP)" + (" — preview" if where == "preview" else "")))
        # No reference to draw (after a release, or unticked): the panel goes, not left empty.
        figures.show_panels(self.figure.panels, truth=truth is not None)
        values = {}
        if truth is not None and where != "release":
            values["Sim"] = dx.residual_plot_similarity(
                None, output["points"], reference=self._similarity_reference(truth))
        self._set_quality(values, where)

    def _similarity_reference(self, truth: np.ndarray) -> dx.SimilarityReference:
        """Sim's true-plot grid, binned once per true plot (the truth arrays are cached per
        dataset and model, so the same array comes back until either changes)."""
        if self._similarity is None or self._similarity[0] is not truth:
            self._similarity = (truth, dx.similarity_reference(truth))
        return self._similarity[1]

    # -- accuracy before spending (analyst) -------------------------------------------------
    accuracy_what = ("the mean and the spread (s.d.) of the plotted residuals in each tenth of "
                     "the stand-in's predictions")

    def _accuracy_edges(self) -> np.ndarray:
        """The deciles of the stand-in's predictions (public): fixed bins across runs."""
        return np.quantile(self._accuracy_truth()[:, 0], np.linspace(0.0, 1.0, 11))

    def _accuracy_values(self, release: Release) -> np.ndarray:
        """Per decile of the stand-in's predictions, the mean residual and the residual
        spread of a preview's plotted points (10 + 10 values).

        Why these: the points are a fresh sample from the noisy grid in every run, and the
        grid's cells and bounds move with each run's private bounds (Alg. 10), so neither
        the points nor the counts line up across runs. What a reader looks for in a residual
        plot -- a trend in the mean residual (a missing term) and a fan in the spread
        (heteroscedasticity) -- does line up on fixed prediction bins.
        """
        return figures.diagnostics.residual_summary(release.output["points"],
                                                    self._accuracy_edges())

    def _accuracy_noiseless(self) -> np.ndarray:
        """The same summary of the stand-in's own residual plot (ordinary fit)."""
        return figures.diagnostics.residual_summary(self._accuracy_truth(),
                                                    self._accuracy_edges())

    def _describe(self, output: dict) -> str:
        x0, x1, r0, r1 = output["bounds"]
        m = output["grid"]
        return (f"{m}×{m} grid over ŷ ∈ [{_fmt(x0)}, {_fmt(x1)}], r ∈ [{_fmt(r0)}, {_fmt(r1)}], "
                f"{len(output['points']):,} points drawn from the noisy counts")


class RocWidget(_DiagnosticWidget):
    """PriROC (Chen 2018, Alg. 11): a private ROC curve of a logistic model, beside the truth.

    Parameters are those of :class:`ResidualPlotWidget` (``scenario`` in {"M1", "M2",
    "breast_cancer"}; ``fit_bounds={"data_norm": r}``), and:

    defaults : {"dpwidgets", "text"}
        ``"dpwidgets"`` (default): N-FixedSpace thresholds (ε1 = 0), ``2^s`` intervals by
        the rule in n·ε of :func:`dpwidgets.engine.diagnostics.fixed_space_levels`, HB —
        the more accurate private settings. ``"text"``: s-RecursiveMedians, ρ = 0.2, DAWA
        (Chen 2018, §4.3.3). Explicit arguments override either.
    rho : float
        ε1/ε spent on the thresholds by s-RecursiveMedians (0.2, Chen 2018, §4.3.3).
    publisher : str, optional
        The 1-D publisher of the TP and FP interval counts: ``"hb"`` (``"dawa"`` under
        ``defaults="text"``, Chen 2018, Table 4.4).
    s : int, optional
        ``|Θ| - 1 = 2^s`` thresholds; default (0 on the slider): the rule in n·ε for fixed
        thresholds, ``min(10, floor(log2 n))`` for recursive medians.
    thresholds : {"fixed", "recursive_medians"}, optional
        N-FixedSpace (ε1 = 0; the default) or data-dependent thresholds (Alg. 12; the
        default under ``defaults="text"``).

    Attributes
    ----------
    figure : DiagnosticFigure
        Sources ``truth``, ``private``, ``thresholds``.
    quality_values : dict
        ``AUC error`` (|AUC − private AUC|), ``symmetric difference`` (area between the
        curves), Chen 2018, §4.3.3; and both AUCs.
    """

    mechanism = "roc_curve"
    kind = "logistic"
    css = "dpw-roc"
    source = "PriROC — private ROC curve (Chen 2018, Alg. 11)"
    publisher_ndim = 1
    default_rho = 0.2

    def __init__(self, session: Session, dataset: str | None = None, *, s: int | None = None,
                 thresholds: str | None = None, defaults: str = "dpwidgets", **kwargs):
        one_of("defaults", defaults, tuple(dx.ROC_DEFAULTS))
        text = defaults == "text"
        thresholds = thresholds or ("recursive_medians" if text else "fixed")
        one_of("thresholds", thresholds, ("recursive_medians", "fixed"))
        if kwargs.get("publisher") is None:
            kwargs["publisher"] = "dawa" if text else "hb"
        self.defaults = defaults
        self._init = {"s": s, "thresholds": thresholds}
        super().__init__(session, dataset, **kwargs)

    _scenario_table = staticmethod(_logistic_scenarios)

    def _build_controls(self) -> None:
        self.s = _grid_slider(self._init["s"], 12, "thresholds")
        self.thresholds = w.Dropdown(
            options=[("N-FixedSpace (ε1 = 0)", "fixed"),
                     ("s-RecursiveMedians (Alg. 12)", "recursive_medians")],
            value=self._init["thresholds"], description="thresholds",
            style={"description_width": "initial"},
        )
        self.thresholds.add_class("dpw-thresholds")

    def _extra_rows(self) -> list:
        return [w.HBox([self.rho, self.publisher]), w.HBox([self.s, self.thresholds])]

    def _extra_controls(self) -> list:
        return [self.s, self.thresholds]

    def _figure(self):
        return figures.diagnostics.roc_figure()

    def _mechanism_params(self) -> dict:
        return {
            "epsilon": float(self.epsilon.value),
            "rho": float(self.rho.value),
            "s": int(self.s.value) or None,
            "thresholds": self.thresholds.value,
            "publisher": self.publisher.value,
            "defaults": self.defaults,
        }

    def _truth(self, table: np.ndarray, model: dict):
        from sklearn.metrics import roc_curve

        scores, _, labels = model_predictions(table, kind="logistic", **model)
        fpr, tpr, _ = roc_curve(labels, scores)
        return {"fpr": fpr, "tpr": tpr, "labels": labels, "scores": scores,
                "auc": dx.roc_auc(fpr, tpr)}

    panel = "roc"
    titles = _titles("ROC curve", "PriROC", "Private ROC curve")

    def _plot_data(self, output: dict, truth):
        return figures.diagnostics.roc_plot_data(
            fpr=output["fpr"], tpr=output["tpr"], thresholds=output["thresholds"],
            truth_fpr=None if truth is None else truth["fpr"],
            truth_tpr=None if truth is None else truth["tpr"])

    def _quality(self, output: dict, truth) -> dict:
        return {"AUC error": abs(truth["auc"] - output["auc"]),
                "symmetric difference": dx.symmetric_difference(
                    truth["fpr"], truth["tpr"], output["fpr"], output["tpr"]),
                "AUC": truth["auc"], "private AUC": output["auc"]}

    # -- accuracy before spending (analyst) -------------------------------------------------
    accuracy_what = "the private curve's true positive rate at each false positive rate"

    def _accuracy_values(self, release: Release) -> np.ndarray:
        """A preview's TPR at the 101 FPRs of :data:`~.figures.diagnostics.FPR_GRID` (the
        curves' own points move with the noisy counts and, for recursive medians, with the
        private thresholds; a fixed FPR grid lines them up)."""
        return figures.diagnostics.tpr_on_grid(release.output["fpr"], release.output["tpr"])

    def _accuracy_noiseless(self) -> np.ndarray:
        """The stand-in's own ROC curve (ordinary fit) on the same grid."""
        truth = self._accuracy_truth()
        return figures.diagnostics.tpr_on_grid(truth["fpr"], truth["tpr"])

    def _accuracy_band(self, preview) -> None:
        """The band around the private curve (removed with None)."""
        band = () if preview is None else (figures.diagnostics.FPR_GRID, preview.now.low,
                                            preview.now.high)
        figures.update(self.figure, figures.diagnostics.band_data(*band))

    def _describe(self, output: dict) -> str:
        return f"{len(output['fpr'])} points, private AUC = {output['auc']:.3f}"


class BinnedResidualWidget(_DiagnosticWidget):
    """PriBRP (Chen 2018, Alg. 13): a private binned residual plot of a logistic model.

    Parameters are those of :class:`RocWidget`, and:

    rho : float
        ε1/ε = ε2/ε for the bins (Alg. 12) and their merging (Alg. 14); the averages get
        ε3 = (1 − 2ρ)ε. 0.15 in Chen 2018, §4.4.3 (Fig. 4.15).
    s : int, optional
        2^s initial bins; default (0 = auto) about ``sqrt(n·ε)/4`` of them
        (:func:`~dpwidgets.engine.diagnostics.binned_residual_levels`; the text's
        ``max{t : 2^t <= sqrt(n)}`` is ``s`` set by hand).

    Attributes
    ----------
    figure : DiagnosticFigure
        Sources ``truth``, ``private``, ``edges``.
    quality_values : dict
        ``ShapeD`` (private vs confidential, Chen 2018, eq. 4.13) and each plot's ShapeD against the
        flat ideal.
    """

    mechanism = "binned_residuals"
    kind = "logistic"
    css = "dpw-binned-residuals"
    source = "PriBRP — private binned residual plot (Chen 2018, Alg. 13)"
    publisher_ndim = None
    rho_range = (0.01, 0.49)
    default_rho = 0.15

    def __init__(self, session: Session, dataset: str | None = None, *, s: int | None = None,
                 **kwargs):
        self._init = {"s": s}
        kwargs.pop("publisher", None)
        super().__init__(session, dataset, **kwargs)

    _scenario_table = staticmethod(_logistic_scenarios)

    def _build_controls(self) -> None:
        self.s = _grid_slider(self._init["s"], 10, "initial bins")

    def _extra_rows(self) -> list:
        return [w.HBox([self.rho, self.s])]

    def _extra_controls(self) -> list:
        return [self.s]

    def _figure(self):
        return figures.diagnostics.binned_residual_figure()

    def _mechanism_params(self) -> dict:
        return {"epsilon": float(self.epsilon.value), "rho": float(self.rho.value),
                "s": int(self.s.value) or None}

    def _truth(self, table: np.ndarray, model: dict):
        probabilities, _, labels = model_predictions(table, kind="logistic", **model)
        return dx.binned_residuals(labels, probabilities)

    panel = "brp"
    titles = _titles("Binned residuals", "PriBRP", "Private binned residual plot")

    def _plot_data(self, output: dict, truth):
        return figures.diagnostics.binned_residual_plot_data(
            mean_predicted=output["mean_predicted"], mean_residual=output["mean_residual"],
            bins=output["bins"], noisy_sizes=output["noisy_sizes"],
            truth_predicted=None if truth is None else truth[0],
            truth_residual=None if truth is None else truth[1])

    def _quality(self, output: dict, truth) -> dict:
        private = (output["mean_predicted"], output["mean_residual"])
        return {"ShapeD": dx.shape_distance(*private, truth[0], truth[1]),
                "ShapeD private vs flat": dx.shape_distance(*private),
                "ShapeD confidential vs flat": dx.shape_distance(truth[0], truth[1])}

    # -- accuracy before spending (analyst) -------------------------------------------------
    accuracy_what = ("the private mean residual, read at 41 mean predictions spanning the "
                     "stand-in's")
    #: Points of the fixed grid the private curves are compared on.
    ACCURACY_POINTS = 41

    def _accuracy_grid(self) -> np.ndarray:
        """A fixed grid over the stand-in's own binned mean predictions (public)."""
        mean_predicted = self._accuracy_truth()[0]
        return np.linspace(float(np.min(mean_predicted)), float(np.max(mean_predicted)),
                           self.ACCURACY_POINTS)

    def _accuracy_values(self, release: Release) -> np.ndarray:
        """A preview's binned residual curve on the fixed grid: its bins are private (Alg. 12,
        14) and differ from run to run, so the points are joined and read at the grid (NaN
        beyond a run's first and last bin)."""
        out = release.output
        return figures.diagnostics.curve_on_grid(out["mean_predicted"], out["mean_residual"],
                                                 self._accuracy_grid())

    def _accuracy_noiseless(self) -> np.ndarray:
        """The stand-in's own binned residual plot (ordinary fit) on the same grid."""
        mean_predicted, mean_residual = self._accuracy_truth()
        return figures.diagnostics.curve_on_grid(mean_predicted, mean_residual,
                                                 self._accuracy_grid())

    def _accuracy_band(self, preview) -> None:
        """The band around the private points (removed with None)."""
        band = () if preview is None else (self._accuracy_grid(), preview.now.low,
                                            preview.now.high)
        figures.update(self.figure, figures.diagnostics.band_data(*band))

    def _describe(self, output: dict) -> str:
        return f"{len(output['mean_predicted'])} bins after merging (Alg. 14)"
