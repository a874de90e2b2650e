"""Target 2, logistic regression (diffprivlib): :func:`personalized_logistic_regression`,
:class:`PersonalizedClassifier`, :func:`misclassification_rate`.
Part of :mod:`~dpwidgets.engine.personalized`.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._results import readonly as _readonly
from ..mechanisms import bernoulli_coins
from ..validation import check_finite_array, check_positive, check_positive_int, check_rng
from .checks import _check_budgets, _check_method, _check_utility, _check_utility_options
from .constants import METHODS
from .plans import ReleasePlan, _check_plan, _enforce_enjoyed, _plan_fields, _Planned, plan_releases
from .utilities import UTILITIES

__all__ = ["PersonalizedClassifier", "personalized_logistic_regression", "misclassification_rate"]


_ENSEMBLES_LR = ("weighted_vote", "vote", "best")


@dataclass(frozen=True, eq=False)
class PersonalizedClassifier(_Planned):
    """Personalized-DP logistic regression: the fitted model(s) and their ensemble.

    Attributes
    ----------
    models : tuple of diffprivlib.models.LogisticRegression
        One fitted model per release (each a DP output).
    weights : numpy.ndarray of float
        The vote of every model (0 for a dropped model; they sum to 1).
    partitions, partition_epsilons, partition_rounds, labels, enjoyed, budgets, threshold
        As in :class:`PersonalizedResult`.
    method, ensemble, guarantee, neighbours : str
    epsilon_parts : dict of str to float
    details : dict
    """

    models: tuple[Any, ...]
    weights: np.ndarray

    def _check_x(self, X) -> np.ndarray:
        X = check_finite_array(X, "X", ndim=2)
        expected = self.models[0].coef_.shape[1]
        if X.shape[1] != expected:
            raise ValueError(f"X must have {expected} columns, got {X.shape[1]}")
        return X

    def predict_proba(self, X) -> np.ndarray:
        """Weighted mean predicted probability of class 1 (post-processing)."""
        X = self._check_x(X)
        return sum(w * m.predict_proba(X)[:, 1]
                   for m, w in zip(self.models, self.weights, strict=True) if w > 0)

    def predict(self, X) -> np.ndarray:
        """Weighted majority vote of the models; a tie goes to :meth:`predict_proba` (Li 2017 §5.2.4)."""
        X = self._check_x(X)
        votes = sum(w * m.predict(X) for m, w in zip(self.models, self.weights, strict=True) if w > 0)
        votes = np.asarray(votes, dtype=float)
        out = (votes > 0.5).astype(np.int64)
        tie = np.isclose(votes, 0.5)
        if np.any(tie):
            out[tie] = (self.predict_proba(X[tie]) > 0.5).astype(np.int64)
        return out

    def misclassification_rate(self, X, y) -> float:
        """Fraction of ``(X, y)`` misclassified (Li 2017 §5.3.1's measure)."""
        return misclassification_rate(y, self.predict(X))


def misclassification_rate(y_true, y_pred) -> float:
    """The fraction of tuples that are incorrectly classified (Li 2017 §5.3.1).

    Examples
    --------
    >>> misclassification_rate([0, 1, 1, 0], [0, 1, 0, 0])
    0.25
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.shape != y_pred.shape or y_true.ndim != 1 or y_true.size == 0:
        raise ValueError("y_true and y_pred must be non-empty 1-D arrays of the same length")
    for labels, name in ((y_true, "y_true"), (y_pred, "y_pred")):
        if labels.dtype.kind == "f" and not np.all(np.isfinite(labels)):
            raise ValueError(f"{name} must hold class labels: found NaN or infinite values")
    return float(np.mean(y_true != y_pred))


def _check_labels(y, n: int) -> np.ndarray:
    y = np.asarray(y)
    if y.ndim != 1 or y.size != n:
        raise ValueError(f"y must be a 1-D array with one label per row of X ({n}), got shape {y.shape}")
    if not np.all(np.isin(y, (0, 1))):
        raise ValueError("y must hold binary labels in {0, 1}")
    return y.astype(np.int64)


def _pareto_front(sizes: np.ndarray, epsilons: np.ndarray) -> np.ndarray:
    """Releases no other release dominates (>= records and >= budget, one of them >)."""
    ge = (sizes[None, :] >= sizes[:, None]) & (epsilons[None, :] >= epsilons[:, None])
    gt = (sizes[None, :] > sizes[:, None]) | (epsilons[None, :] > epsilons[:, None])
    return ~np.any(ge & gt, axis=1)


#: Gradient tolerance of the objective-perturbation fits (L-BFGS ``pgtol``): far tighter than
#: diffprivlib's default 1e-4, so the released model is the minimiser the proof is about up to
#: a negligible optimisation error, at a few dozen iterations at most on the benchmark data.
LOGISTIC_TOL = 1e-8

#: Default iteration cap of :func:`personalized_logistic_regression` (a fit that needs more
#: is refused, never released half-way).
LOGISTIC_MAX_ITER = 1000


def _fit_dp_logistic(X, y, epsilon, data_norm, C, max_iter, seed):
    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression
    from sklearn.exceptions import ConvergenceWarning

    model = LogisticRegression(epsilon=epsilon, data_norm=data_norm, C=C, max_iter=max_iter,
                               tol=LOGISTIC_TOL, random_state=seed, accountant=BudgetAccountant())
    with warnings.catch_warnings():
        # Objective perturbation (Chaudhuri, Monteleoni, Sarwate 2011) is DP for the exact
        # minimiser of the perturbed objective only: a fit that stops early is not covered,
        # so non-convergence is an error, never silenced. (diffprivlib 0.6 passes options
        # newer SciPy deprecates: not ours to act on.)
        warnings.simplefilter("error", ConvergenceWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            return model.fit(X, y)
        except ConvergenceWarning:
            raise ValueError(
                f"max_iter: the objective-perturbation fit did not converge within "
                f"max_iter={max_iter} iterations, and only its exact minimiser is DP; raise "
                f"max_iter (or lower C)"
            ) from None


def _vote_weights(scores: np.ndarray, keep: np.ndarray, ensemble: str,
                  n_models: int) -> np.ndarray:
    """The weight of each partition model in the vote (Li 2017 §5.2.4): among the models no
    other dominates (``keep``), the best alone, an equal vote, or one weighted by the utility
    ``scores`` (equal when no score is positive); one model has the whole vote."""
    if n_models == 1:
        return np.ones(1)
    if ensemble == "best":
        weights = np.zeros(n_models)
        weights[int(np.argmax(np.where(keep, scores, -np.inf)))] = 1.0
        return weights
    if ensemble == "vote":
        return keep / keep.sum()
    raw = np.where(keep, np.maximum(scores, 0.0), 0.0)
    return raw / raw.sum() if raw.sum() > 0 else keep / keep.sum()


def personalized_logistic_regression(
    X,
    y,
    budgets,
    method: str = "utility",
    *,
    data_norm: float,
    rng: np.random.Generator | None = None,
    threshold: float | None = None,
    rounds: int = 1,
    ensemble: str = "weighted_vote",
    min_size: int | None = None,
    max_partitions: int | None = None,
    max_groups: int = 1024,
    utility: str | Callable[..., Any] = "erm",
    utility_options: Mapping[str, Any] | None = None,
    C: float = 1.0,
    max_iter: int = LOGISTIC_MAX_ITER,
    plan: ReleasePlan | None = None,
) -> PersonalizedClassifier:
    """Logistic regression under personalized DP (Li 2017 §5.3.2.3), diffprivlib as the DP learner.

    Parameters
    ----------
    X : array_like, shape (n, d)
        Features, scaled with public constants; rows are clipped to L2 norm ``data_norm`` by
        diffprivlib.
    y : array_like, shape (n,)
        Labels in {0, 1}.
    budgets : array_like, shape (n,)
        The public privacy vector.
    method : {"minimum", "threshold", "sampling", "privacy_aware", "utility"}
    data_norm : float
        Public bound on the L2 norm of a row of ``X`` (required: never read from the data).
    rng : numpy.random.Generator, optional
        Source of all randomness (the sampling coins, and one seed per diffprivlib fit).
    threshold : float, optional
        ``eps_T`` (default: the max budget, the best threshold for logistic regression in
        Li 2017 §5.3.2.3).
    rounds, min_size, max_partitions, max_groups
        As for :func:`plan_releases`. Default ``min_size``: ``max(ceil(n / (2 K)), 50)``.
    utility : {"erm", "count"} or callable
        For ``"utility"``: :func:`erm_utility` (eq. 5.2.5) by default, with ``dimension = d+1``.
    ensemble : {"weighted_vote", "vote", "best"}
        How the partition models are combined (Li 2017 §5.2.4). All first drop every model that
        another one dominates (no fewer records and no smaller budget: the text's drop-out
        rule for "equal number of records but smaller privacy budgets", generalised).
        ``"weighted_vote"`` (default): the rest vote with weights ``U(n_i, eps_i)`` (the
        text: "the weights will depend on O(n_i, eps_i)"); ``"vote"``: the text's plain
        majority vote; ``"best"``: only the model with the largest utility.
    C, max_iter
        diffprivlib's inverse regularisation strength and iteration cap (default
        :data:`LOGISTIC_MAX_ITER` = 1000; each fit runs L-BFGS to a gradient tolerance of
        :data:`LOGISTIC_TOL` = 1e-8). A fit that does not converge within ``max_iter`` raises
        ``ValueError`` naming ``max_iter``: objective perturbation is DP for the exact
        minimiser only, so a half-converged model is never released.
    plan : ReleasePlan, optional

    Returns
    -------
    PersonalizedClassifier

    Raises
    ------
    ValueError
        Bad shapes, NaN/inf, labels not in {0, 1}, budgets <= 0 / NaN / wrong length, missing
        or bad ``data_norm``, bad options (before any fit). diffprivlib raises if a release
        holds a single class (a data-dependent failure: keep partitions large); a fit that
        does not converge within ``max_iter`` raises (never a silenced ConvergenceWarning).

    Notes
    -----
    Privacy: diffprivlib's ``LogisticRegression(epsilon=e)`` is ``e``-DP for datasets of a
    fixed size differing in one record (Chaudhuri, Monteleoni, Sarwate 2011), i.e.
    replace-one, which fits the partitioning methods, Minimum and Threshold (their record
    sets are public). Sampling: amplification by Poisson sampling for a *replaced* record
    needs the base learner to be ``eps_T``-DP between a dataset with and without the record
    as well -- an add/remove guarantee diffprivlib does not state. So the records left out
    by the coins are replaced by a public placeholder (``x = 0``, label ``j mod 2``) instead
    of removed: the learner always sees ``n`` records, and "record ``j`` kept" vs "record
    ``j`` replaced by its placeholder" are replace-one neighbours, so Jorgensen et al.'s
    bound ``ln(1 + p_j (e^{eps_T} - 1)) = eps_j`` goes through. The placeholders pull the
    intercept towards 0 (a deviation from the text, which removes the records).

    References
    ----------
    Li 2017 §5.2.2 (eq. 5.2.5), §5.2.4 (majority voting), §5.3.1-5.3.2.3; Jorgensen et al. 2015;
    Chaudhuri, Monteleoni, Sarwate, JMLR 2011 (diffprivlib's LogisticRegression).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.personalized import personalized_logistic_regression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(300, 2)) / 3
    >>> y = (X[:, 0] + rng.normal(0, 0.2, 300) > 0).astype(int)
    >>> budgets = np.repeat([0.5, 1.0, 2.0], 100)
    >>> clf = personalized_logistic_regression(X, y, budgets, "minimum", data_norm=1.0, rng=rng)
    >>> clf.method, clf.predict(X[:5]).shape
    ('minimum', (5,))
    """
    X = check_finite_array(X, "X", ndim=2)
    n, d = X.shape
    y = _check_labels(y, n)
    budgets = _check_budgets(budgets, n)
    method = _check_method(method)
    _check_utility(utility)
    _check_utility_options(utility_options)
    if data_norm is None:
        raise ValueError("data_norm must be given: a public bound on the L2 norm of a row of X")
    data_norm = check_positive(data_norm, "data_norm")
    C = check_positive(C, "C")
    max_iter = check_positive_int(max_iter, "max_iter")
    if ensemble not in _ENSEMBLES_LR:
        raise ValueError(f"ensemble must be one of {list(_ENSEMBLES_LR)}, got {ensemble!r}")
    options = dict(utility_options or {})
    if utility == "erm":
        options.setdefault("dimension", d + 1)
    if plan is None:
        if min_size is None and method in ("privacy_aware", "utility"):
            k_cap = 16 if max_partitions is None else check_positive_int(max_partitions, "max_partitions")
            min_size = min(n, max(math.ceil(n / (2 * k_cap)), 50))
        plan = plan_releases(budgets, method, threshold=threshold, rounds=rounds,
                             min_size=min_size, max_partitions=max_partitions,
                             max_groups=max_groups, utility=utility, utility_options=options,
                             default_threshold="max")
    else:
        plan = _check_plan(plan, budgets)
        if plan.method not in METHODS:
            raise ValueError(f"plan: method {plan.method!r} is for histograms only; use one of "
                             f"{list(METHODS)}")
    rng = check_rng(rng)
    seeds = rng.integers(0, 2**31 - 1, size=len(plan.partitions))
    models = []
    if plan.method == "sampling":
        kept = bernoulli_coins(plan.probabilities, rng)
        Xs = np.where(kept[:, None], X, 0.0)
        ys = np.where(kept, y, np.arange(n) % 2)
        models.append(_fit_dp_logistic(Xs, ys, float(plan.epsilons[0]), data_norm, C, max_iter,
                                       int(seeds[0])))
    else:
        for members, eps, seed in zip(plan.partitions, plan.epsilons, seeds, strict=True):
            models.append(_fit_dp_logistic(X[members], y[members], float(eps), data_norm, C,
                                           max_iter, int(seed)))
    sizes = plan.sizes.astype(float)
    function = UTILITIES[utility] if isinstance(utility, str) else utility
    scores = np.broadcast_to(np.asarray(function(sizes, plan.epsilons, **options), dtype=float),
                             sizes.shape)
    weights = _vote_weights(scores, _pareto_front(sizes, plan.epsilons), ensemble, len(models))
    _enforce_enjoyed(plan.enjoyed, budgets)
    return PersonalizedClassifier(
        models=tuple(models),
        weights=_readonly(weights),
        method=plan.method,
        ensemble=ensemble if len(models) > 1 else "single",
        **_plan_fields(plan, "diffprivlib LogisticRegression"
                       + (" (left-out records replaced by public placeholders)"
                          if plan.method == "sampling" else "")),
        details={"plan": plan, "data_norm": data_norm, "C": C},
    )
