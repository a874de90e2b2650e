"""PriROC's widget: a private ROC curve of a logistic model beside the confidential one
(Chen 2018, Alg. 11-12)."""

from __future__ import annotations

import ipywidgets as w
import numpy as np

from ...mechanism import Release
from ...session import Session
from ...ui.base import one_of
from ...ui.controls import control_for
from . import display
from .base import LogisticDiagnostic, titles
from .params import RocParams, roc_defaults
from .reference import roc_quality, roc_reference

__all__ = ["RocWidget"]


class RocWidget(LogisticDiagnostic):
    """PriROC (Chen 2018, Alg. 11): a private ROC curve of a logistic model, beside the truth.

    Parameters are those of :class:`~dpwidgets.families.diagnostics.widget.ResidualPlotWidget` (``scenario`` in {"M1", "M2",
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
        ``AUC error`` (``|AUC − private AUC|``), ``symmetric difference`` (area between the
        curves), Chen 2018, §4.3.3; and both AUCs.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import RocWidget
    >>> roc = RocWidget(Session("teaching", seed=0), scenario="M1", n=500, debounce=0)
    >>> roc.thresholds.value, roc.publisher.value
    ('fixed', 'hb')
    """

    parameters = RocParams
    css = "dpw-roc"
    source = "PriROC — private ROC curve (Chen 2018, Alg. 11)"
    default_rho = 0.2

    def __init__(self, session: Session, dataset: str | None = None, *, s: int | None = None,
                 thresholds: str | None = None, defaults: str = "dpwidgets", **kwargs):
        one_of("defaults", defaults, roc_defaults())
        text = defaults == "text"
        thresholds = thresholds or ("recursive_medians" if text else "fixed")
        one_of("thresholds", thresholds, ("recursive_medians", "fixed"))
        if kwargs.get("publisher") is None:
            kwargs["publisher"] = "dawa" if text else "hb"
        self.defaults = defaults
        self._init = {"s": s, "thresholds": thresholds}
        super().__init__(session, dataset, **kwargs)

    def build_controls(self) -> None:
        super().build_controls()
        self.thresholds = control_for(RocParams, "thresholds", self._init["thresholds"])

    def extra_rows(self) -> list:
        return [w.HBox([self.rho, self.publisher]), w.HBox([self.s, self.thresholds])]

    def extra_controls(self) -> list:
        return [self.s, self.thresholds]

    def make_figure(self):
        return display.roc_figure()

    def mechanism_params(self) -> dict:
        return {
            "epsilon": float(self.epsilon.value),
            "rho": float(self.rho.value),
            "s": int(self.s.value) or None,
            "thresholds": self.thresholds.value,
            "publisher": self.publisher.value,
            "defaults": self.defaults,
        }

    reference = staticmethod(roc_reference)
    measures = staticmethod(roc_quality)
    panel = "roc"
    titles = titles("ROC curve", "PriROC", "Private ROC curve")

    display_class = display.RocDisplay

    # -- accuracy before spending (analyst) -------------------------------------------------
    _accuracy_what = "the private curve's true positive rate at each false positive rate"

    def _curve_values(self, release: Release) -> np.ndarray:
        """A preview's TPR at the 101 FPRs of :data:`~dpwidgets.families.diagnostics.display.FPR_GRID` (the curves' own
        points move with the noisy counts and, for recursive medians, with the private
        thresholds; a fixed FPR grid lines them up)."""
        return display.tpr_on_grid(release.output["fpr"], release.output["tpr"])

    def _stand_in_curve(self) -> np.ndarray:
        """The stand-in's own ROC curve (ordinary fit) on the same grid."""
        truth = self._accuracy_truth()
        return display.tpr_on_grid(truth["fpr"], truth["tpr"])

    def accuracy_grid(self) -> np.ndarray:
        """The FPRs of :data:`~dpwidgets.families.diagnostics.display.FPR_GRID`."""
        return display.FPR_GRID

    def describe_output(self, output: dict) -> str:
        return f"{len(output['fpr'])} points, private AUC = {output['auc']:.3f}"
