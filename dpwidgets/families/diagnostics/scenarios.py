"""The public tables the diagnostics widgets teach on: Chen 2018, Ch. 4's scenarios and two
small real data sets that scikit-learn ships, each with the public bounds a DP fit needs.

Examples
--------
>>> from dpwidgets.families.diagnostics.scenarios import logistic_scenarios
>>> sorted(logistic_scenarios())
['M1', 'M2', 'breast_cancer']
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ...ui.base import PublicSource
from . import standins

__all__ = ["Scenario", "logistic_scenarios", "residual_scenarios"]


@dataclass(frozen=True)
class Scenario(PublicSource):
    """A public regression table (features, then the outcome); see
    :class:`~dpwidgets.ui.base.PublicSource`.

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


def residual_scenarios() -> dict[str, Scenario]:
    """The tables of :class:`~dpwidgets.families.diagnostics.widget.ResidualPlotWidget`: the three generative scenarios of
    Chen 2018, §4.2.3 and scikit-learn's diabetes data (the real-data lesson of Fig. 4.5).

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.scenarios import residual_scenarios
    >>> residual_scenarios()["ideal"].fit_bounds
    {'bounds_X': (1.0, 50.0), 'bounds_y': (-20.0, 110.0)}
    """
    # x ~ U[1, 50]: predictions of a sensible fit lie in about [0, 80]; the public centre 25 is
    # the middle of x's range, so Alg. 10's doubling intervals do not waste half of the grid.
    synthetic = {"y": {"mu_predicted": 1.0, "mu_residual": 1.0, "center_predicted": 25.0}}
    out = {
        name: Scenario(
            f"{name.capitalize()} (Chen 2018, §4.2.3): {standins.RESIDUAL_SCENARIOS[name]}",
            lambda n, rng, name=name: _table(standins.residual_scenario(name, n, rng)),
            {"bounds_X": (1.0, 50.0), "bounds_y": (-20.0, 110.0)},
            synthetic,
        )
        for name in standins.RESIDUAL_SCENARIOS
    }
    # The diabetes outcome ranges over 25-346 (sklearn's documentation: public).
    out["diabetes"] = Scenario(
        "Diabetes (scikit-learn, n = 442): disease progression on 10 features",
        lambda n, rng: _table(standins.load_diabetes_data()),
        {"bounds_X": (-0.2, 0.2), "bounds_y": (25.0, 346.0)},
        {
            "y": {"mu_predicted": 10.0, "mu_residual": 10.0, "center_predicted": 185.0},
            "log": {"mu_predicted": 0.1, "mu_residual": 0.1, "center_predicted": 4.5},
        },
        fixed_n=True,
    )
    return out


def logistic_scenarios() -> dict[str, Scenario]:
    """The tables of :class:`~dpwidgets.families.diagnostics.roc.RocWidget` and :class:`~dpwidgets.families.diagnostics.binned.BinnedResidualWidget`:
    Chen 2018, §4.4.3's M1 and M2 and scikit-learn's breast cancer data.

    Examples
    --------
    >>> from dpwidgets.families.diagnostics.scenarios import logistic_scenarios
    >>> logistic_scenarios()["M2"].fit_bounds
    {'data_norm': 1.0}
    """
    return {
        "M1": Scenario(
            "M1 (Chen 2018, §4.4.3): logit = 2x, x ~ U[-1, 1] (well specified)",
            lambda n, rng: _table(standins.logistic_scenario("M1", n, rng)),
            {"data_norm": 1.0},
        ),
        "M2": Scenario(
            "M2 (Chen 2018, §4.4.3): logit = x² + 2x − 1, fitted linearly (misspecified)",
            lambda n, rng: _table(standins.logistic_scenario("M2", n, rng)),
            {"data_norm": 1.0},
        ),
        "breast_cancer": Scenario(
            "Breast cancer (scikit-learn, n = 569): 30 standardised features",
            lambda n, rng: _table(standins.load_breast_cancer_data()), {"data_norm": 8.0},
            fixed_n=True,
        ),
    }
