"""Private regression diagnostics: ResidualPlotWidget (PriRP), RocWidget (PriROC) and
BinnedResidualWidget (PriBRP) -- Chen 2018, Ch. 4.

Each widget diagnoses a model fitted to a session's table (feature columns, then the outcome):
an ordinary fit inside the session, or a DP fit released first
(:mod:`~dpwidgets.families.diagnostics.base` says what each guarantees). The residual plot is
here; the ROC curve is in :mod:`~dpwidgets.families.diagnostics.roc`, the binned residuals in
:mod:`~dpwidgets.families.diagnostics.binned`.

Teaching mode (public data): every control change is a live release (charged to the teaching
ledger, so the meter shows what interactive use costs); the confidential plot is drawn beside
the private one with its quality measure (Sim, AUC error and symmetric difference, ShapeD).
Analyst mode (confidential data): controls drive a free preview on the dataset's public stand-in
(same public size, :mod:`~dpwidgets.families.diagnostics.preview`); only the Release button
spends, through the session; a release draws the DP output only -- no record, prediction,
residual, score or label, and no confidential plot.
"""

from __future__ import annotations

import ipywidgets as w
import numpy as np

from ...mechanism import Release
from ...session import Session
from ...ui import figures
from ...ui.accuracy import Accuracy
from ...ui.base import g3 as _fmt
from ...ui.base import one_of
from ...ui.controls import control_for
from . import display
from .base import ANALYST_DEFAULT_SHARE, DiagnosticWidget, analyst_defaults  # noqa: F401
from .binned import BinnedResidualWidget
from .params import ResidualPlotParams, publisher_options
from .reference import ResidualSimilarity, residual_reference
from .roc import RocWidget
from .scenarios import Scenario, residual_scenarios

__all__ = ["BinnedResidualWidget", "ResidualPlotWidget", "RocWidget", "Scenario"]

# ANALYST_DEFAULT_SHARE, analyst_defaults (now in .base) and _publisher_options stay reachable
# here, where the old path dpwidgets.widgets.diagnostics (an alias of this module) had them.
def _publisher_options(ndim: int) -> list[tuple[str, str]]:
    """The publishers of ``ndim``-D counts as a dropdown's ``(label, name)`` options (the old
    name of :func:`~dpwidgets.families.diagnostics.params.publisher_options`, whose pairs are ``(name, label)``)."""
    return [(label, name) for name, label in publisher_options(ndim)]


class ResidualPlotWidget(DiagnosticWidget):
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

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import ResidualPlotWidget
    >>> rp = ResidualPlotWidget(Session("teaching", seed=0), scenario="ideal", n=500,
    ...                         debounce=0)
    >>> rp.dataset, rp.params["publisher"]
    ('ideal_500', 'dawa_dyadic')
    """

    parameters = ResidualPlotParams
    kind = "ols"
    css = "dpw-residual-plot"
    source = "PriRP — private residual plot (Chen 2018, Alg. 9)"
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
        self._similarity = ResidualSimilarity()
        super().__init__(session, dataset, **kwargs)

    def scenario_table(self) -> dict[str, Scenario]:
        return residual_scenarios()

    def build_controls(self) -> None:
        init = self._init
        self.auto_rho = w.Checkbox(value=init["rho"] is None,
                                   description="ε1 = min(0.3ε, 470/n) (Chen 2018)")
        self.auto_rho.add_class("dpw-auto-rho")
        self.grid = control_for(ResidualPlotParams, "grid", init["grid"] or 0)
        self.outcome_choice = control_for(ResidualPlotParams, "outcome", init["outcome"])
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

    def extra_rows(self) -> list:
        return [
            w.HBox([self.rho, self.auto_rho, self.publisher]),
            w.HBox([self.grid, self.outcome_choice]),
            w.HBox([self.mu_predicted, self.mu_residual, self.center_predicted]),
        ]

    def extra_controls(self) -> list:
        return [self.auto_rho, self.grid, self.mu_predicted, self.mu_residual,
                self.center_predicted]

    def _on_outcome(self, change=None) -> None:
        if self._scenario_obj is not None:
            self.apply_public(self._scenario_obj.public)
        self.controls_changed()

    def select_data(self) -> None:
        super().select_data()
        if not getattr(self, "_outcome_wired", False):
            self._outcome_wired = True
            self._watch(self._on_outcome, self.outcome_choice)

    def apply_public(self, facts: dict) -> None:
        if self._explicit_units:
            return
        units = facts.get(self.outcome) or facts.get("y")
        if not units:
            return
        with self._setting():
            self.mu_predicted.value = units["mu_predicted"]
            self.mu_residual.value = units["mu_residual"]
            self.center_predicted.value = units["center_predicted"]

    def controls_changed(self, change=None) -> None:
        if self._syncing:
            return
        self.rho.disabled = bool(self.auto_rho.value)
        # The rule's ρ may need n: hidden, not shown with a ρ the run does not use.
        self.rho.layout.visibility = "hidden" if self.auto_rho.value else "visible"
        super().controls_changed(change)

    @property
    def outcome(self) -> str:
        return self.outcome_choice.value

    def make_figure(self):
        return display.residual_figure()

    def mechanism_params(self) -> dict:
        return {
            "epsilon": float(self.epsilon.value),
            "publisher": self.publisher.value,
            "rho": None if self.auto_rho.value else float(self.rho.value),
            "grid": int(self.grid.value) or None,
            "mu_predicted": float(self.mu_predicted.value),
            "mu_residual": float(self.mu_residual.value),
            "center_predicted": float(self.center_predicted.value),
        }

    def reference_of(self, table: np.ndarray, model: dict) -> np.ndarray:
        return residual_reference(table, model, self.outcome)

    def draw_output(self, output: dict, truth, *, where: str) -> None:
        display.ResidualPlotDisplay.from_output(output, truth).draw(self.figure)
        titles = {"teaching": "Confidential residual plot (public data, teaching)",
                  "preview": "Public stand-in's residual plot (preview)",
                  "release": "Confidential plot: not shown (analyst mode)"}
        self.figure.set_titles(truth=titles[where], private=(
            "Private residual plot (PriRP)" + (" — preview" if where == "preview" else "")))
        # No reference to draw (after a release, or unticked): the panel goes, not left empty.
        figures.show_panels(self.figure.panels, truth=truth is not None)
        values = {}
        if truth is not None and where != "release":
            values["Sim"] = self._similarity(output["points"], truth)
        self._set_quality(values, where)

    # -- accuracy before spending (analyst) -------------------------------------------------
    @property
    def accuracy_model(self) -> Accuracy:
        """The accuracy panel's strategy (an :class:`~dpwidgets.ui.accuracy.Accuracy`)."""
        what = ("the mean and the spread (s.d.) of the plotted residuals in each tenth of "
                "the stand-in's predictions")
        return Accuracy(what, self._residual_summary, self._stand_in_summary,
                        run=self._preview_with_fit)

    def _accuracy_edges(self) -> np.ndarray:
        """The deciles of the stand-in's predictions (public): fixed bins across runs."""
        return np.quantile(self._accuracy_truth()[:, 0], np.linspace(0.0, 1.0, 11))

    def _residual_summary(self, release: Release) -> np.ndarray:
        """Per decile of the stand-in's predictions, the mean residual and the residual
        spread of a preview's plotted points (10 + 10 values).

        Why these: the points are a fresh sample from the noisy grid in every run, and the
        grid's cells and bounds move with each run's private bounds (Alg. 10), so neither
        the points nor the counts line up across runs. What a reader looks for in a residual
        plot -- a trend in the mean residual (a missing term) and a fan in the spread
        (heteroscedasticity) -- does line up on fixed prediction bins.
        """
        return display.residual_summary(release.output["points"], self._accuracy_edges())

    def _stand_in_summary(self) -> np.ndarray:
        """The same summary of the stand-in's own residual plot (ordinary fit)."""
        return display.residual_summary(self._accuracy_truth(), self._accuracy_edges())

    def describe_output(self, output: dict) -> str:
        x0, x1, r0, r1 = output["bounds"]
        m = output["grid"]
        return (f"{m}×{m} grid over ŷ ∈ [{_fmt(x0)}, {_fmt(x1)}], r ∈ [{_fmt(r0)}, {_fmt(r1)}], "
                f"{len(output['points']):,} points drawn from the noisy counts")
