"""What a private diagnostic is compared with: the same plot without noise, computed from
*public* data only (a teaching table, or the analyst's stand-in), and the quality measures of
Chen 2018, §4.2.3-4.4.3 between the two.

Never called on confidential data: the widgets pass the teaching table or the stand-in, and
after an analyst release they compare nothing.

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.diagnostics.reference import residual_reference
>>> table = np.array([[0.0, 1.0], [1.0, 3.0], [2.0, 5.0], [3.0, 7.5]])
>>> residual_reference(table, {"model": "public", "coef": [2.0], "intercept": 1.0}, "y")[:, 1]
array([0. , 0. , 0. , 0.5])
"""

from __future__ import annotations

import numpy as np

from ...engine import diagnostics as dx
from .spec import model_predictions

__all__ = ["ResidualSimilarity", "binned_quality", "binned_reference", "residual_reference",
           "roc_quality", "roc_reference"]


# -- the noiseless plots ------------------------------------------------------------------------
def residual_reference(table: np.ndarray, model: dict, outcome: str) -> np.ndarray:
    """The residual plot of an OLS model on a public table: ``(prediction, residual)`` rows.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.reference import residual_reference
    >>> residual_reference(np.array([[0.0, 1.0], [1.0, 2.0]]),
    ...                    {"model": "public", "coef": [1.0], "intercept": 1.0}, "y").tolist()
    [[1.0, 0.0], [2.0, 0.0]]
    """
    predicted, residuals, _ = model_predictions(table, kind="ols", outcome=outcome, **model)
    return np.column_stack((predicted, residuals))


def roc_reference(table: np.ndarray, model: dict) -> dict:
    """The ROC curve of a logistic model on a public table: ``fpr``, ``tpr``, the ``labels``
    and ``scores`` it is drawn from, and its ``auc``.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.reference import roc_reference
    >>> table = np.array([[-1.0, 0.0], [-0.5, 0.0], [0.5, 1.0], [1.0, 1.0]])
    >>> roc_reference(table, {"model": "public", "coef": [3.0], "intercept": 0.0})["auc"]
    1.0
    """
    from sklearn.metrics import roc_curve

    scores, _, labels = model_predictions(table, kind="logistic", **model)
    fpr, tpr, _ = roc_curve(labels, scores)
    return {"fpr": fpr, "tpr": tpr, "labels": labels, "scores": scores,
            "auc": dx.roc_auc(fpr, tpr)}


def binned_reference(table: np.ndarray, model: dict) -> tuple[np.ndarray, np.ndarray]:
    """The binned residual plot of a logistic model on a public table (equal-size bins):
    ``(mean prediction, mean residual)`` per bin.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.reference import binned_reference
    >>> x = np.linspace(-1.0, 1.0, 64)
    >>> table = np.column_stack((x, (x > 0).astype(float)))
    >>> len(binned_reference(table, {"model": "public", "coef": [2.0], "intercept": 0.0})[0])
    8
    """
    probabilities, _, labels = model_predictions(table, kind="logistic", **model)
    return dx.binned_residuals(labels, probabilities)


# -- the quality measures -----------------------------------------------------------------------
class ResidualSimilarity:
    """Sim (Chen 2018, §4.2.3: total variation distance on a 10 × 10 grid; 0 is perfect) of
    private residual plots against a true one, whose grid is binned once per true plot (the
    widgets cache the truth arrays per data set and model, so the same array comes back until
    either changes).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.reference import ResidualSimilarity
    >>> truth = np.random.default_rng(0).normal(size=(500, 2))
    >>> ResidualSimilarity()(truth, truth)
    0.0
    """

    def __init__(self) -> None:
        self._binned: tuple[np.ndarray, dx.SimilarityReference] | None = None

    def __call__(self, points: np.ndarray, truth: np.ndarray) -> float:
        """Sim of the private ``points`` against the true plot ``truth``."""
        if self._binned is None or self._binned[0] is not truth:
            self._binned = (truth, dx.similarity_reference(truth))
        return dx.residual_plot_similarity(None, points, reference=self._binned[1])


def roc_quality(output: dict, truth: dict) -> dict[str, float]:
    """``AUC error`` (``|AUC − private AUC|``) and ``symmetric difference`` (the area
    between the curves), Chen 2018, §4.3.3, with both AUCs.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.reference import roc_quality
    >>> curve = {"fpr": np.array([0.0, 0.5, 1.0]), "tpr": np.array([0.0, 1.0, 1.0]),
    ...          "auc": 0.75}
    >>> roc_quality(curve, curve)["AUC error"]
    0.0
    """
    return {"AUC error": abs(truth["auc"] - output["auc"]),
            "symmetric difference": dx.symmetric_difference(
                truth["fpr"], truth["tpr"], output["fpr"], output["tpr"]),
            "AUC": truth["auc"], "private AUC": output["auc"]}


def binned_quality(output: dict, truth: tuple[np.ndarray, np.ndarray]) -> dict[str, float]:
    """``ShapeD`` of the private binned residuals against the true ones (Chen 2018, eq. 4.13),
    and of each against the flat ideal.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.families.diagnostics.reference import binned_quality
    >>> flat = (np.linspace(0.1, 0.9, 9), np.zeros(9))
    >>> binned_quality({"mean_predicted": flat[0], "mean_residual": flat[1]}, flat)["ShapeD"]
    0.0
    """
    private = (output["mean_predicted"], output["mean_residual"])
    return {"ShapeD": dx.shape_distance(*private, truth[0], truth[1]),
            "ShapeD private vs flat": dx.shape_distance(*private),
            "ShapeD confidential vs flat": dx.shape_distance(truth[0], truth[1])}
