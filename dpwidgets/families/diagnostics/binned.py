"""PriBRP's widget: a private binned residual plot of a logistic model beside the confidential
one (Chen 2018, Alg. 13-14)."""

from __future__ import annotations

import ipywidgets as w
import numpy as np

from ...mechanism import Release
from ...session import Session
from . import display
from .base import LogisticDiagnostic, titles
from .params import BinnedResidualsParams
from .reference import binned_quality, binned_reference

__all__ = ["BinnedResidualWidget"]


class BinnedResidualWidget(LogisticDiagnostic):
    """PriBRP (Chen 2018, Alg. 13): a private binned residual plot of a logistic model.

    Parameters are those of :class:`~dpwidgets.families.diagnostics.roc.RocWidget`, and:

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

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import BinnedResidualWidget
    >>> brp = BinnedResidualWidget(Session("teaching", seed=0), scenario="M2", n=500,
    ...                            s=3, debounce=0)  # 2^3 initial bins, set by hand
    >>> brp.rho.value, brp.rho.max, brp.s.value
    (0.15, 0.49, 3)
    """

    parameters = BinnedResidualsParams
    css = "dpw-binned-residuals"
    source = "PriBRP — private binned residual plot (Chen 2018, Alg. 13)"
    default_rho = 0.15

    def __init__(self, session: Session, dataset: str | None = None, *, s: int | None = None,
                 **kwargs):
        self._init = {"s": s}
        kwargs.pop("publisher", None)
        super().__init__(session, dataset, **kwargs)

    def extra_rows(self) -> list:
        return [w.HBox([self.rho, self.s])]

    def extra_controls(self) -> list:
        return [self.s]

    def make_figure(self):
        return display.binned_residual_figure()

    def mechanism_params(self) -> dict:
        return {"epsilon": float(self.epsilon.value), "rho": float(self.rho.value),
                "s": int(self.s.value) or None}

    reference = staticmethod(binned_reference)
    measures = staticmethod(binned_quality)
    panel = "brp"
    titles = titles("Binned residuals", "PriBRP", "Private binned residual plot")

    display_class = display.BinnedResidualsDisplay

    # -- accuracy before spending (analyst) -------------------------------------------------
    _accuracy_what = ("the private mean residual, read at 41 mean predictions spanning the "
                      "stand-in's")

    #: Points of the fixed grid the private curves are compared on.
    ACCURACY_POINTS = 41

    def accuracy_grid(self) -> np.ndarray:
        """A fixed grid over the stand-in's own binned mean predictions (public)."""
        mean_predicted = self._accuracy_truth()[0]
        return np.linspace(float(np.min(mean_predicted)), float(np.max(mean_predicted)),
                           self.ACCURACY_POINTS)

    def _curve_values(self, release: Release) -> np.ndarray:
        """A preview's binned residual curve on the fixed grid: its bins are private (Alg. 12,
        14) and differ from run to run, so the points are joined and read at the grid (NaN
        beyond a run's first and last bin)."""
        out = release.output
        return display.curve_on_grid(out["mean_predicted"], out["mean_residual"],
                                     self.accuracy_grid())

    def _stand_in_curve(self) -> np.ndarray:
        """The stand-in's own binned residual plot (ordinary fit) on the same grid."""
        mean_predicted, mean_residual = self._accuracy_truth()
        return display.curve_on_grid(mean_predicted, mean_residual, self.accuracy_grid())

    def describe_output(self, output: dict) -> str:
        return f"{len(output['mean_predicted'])} bins after merging (Alg. 14)"
