"""Scenarios of the regression-diagnostics texts (Chen 2018, Ch. 4; Chen et al. 2016) and models to diagnose.

- :func:`residual_scenario` — Chen 2018, §4.2.3: "Ideal" ``y = x + N(0, 1)``, "Heteroscedastic"
  ``y = x + N(0, x)``, "Nonlinear" ``y = 0.01 x² + x + N(0, 1)``, ``x ~ U[1, 50]``.
- :func:`discriminatory_scenario` — Table 4.1's M1-M3 (``x ~ U[0, 50]``, violations α, γ), and
  :func:`posited_residuals`, their residuals against the posited line ``y = x``.
- :func:`logistic_scenario` — Chen 2018, §4.4.3's M1 (logit 2x) and M2 (logit x² + 2x - 1),
  ``x ~ U[-1, 1]``, to be fitted with the linear term only.
- :func:`binormal_scores` — labels and scores whose ROC curve is binormal with a set AUC
  (Chen 2018, §4.3.3's pairs R_a, R_{a+δ}).
- :func:`load_diabetes_data`, :func:`load_breast_cancer_data` — small public data sets that
  scikit-learn ships (no download at run time).
- :func:`fit_model` — the model under diagnosis: OLS / logistic regression, ordinary or DP
  (:mod:`dpwidgets.engine.regression`), returning predictions, residuals and the fitting
  budget.

``N(0, v)`` follows Chen 2018, eq. 4.1's ``N(0, σ²)``: the second argument is the *variance* —
except Table 4.1's M2, whose ``N(0, αx + 1)`` gives the standard deviation (R's convention,
which reproduces the table; see :func:`discriminatory_scenario`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy import special, stats

from ...engine._results import eps_text
from ...engine.validation import check_epsilon, check_finite_array, check_positive_int, check_rng

__all__ = ["RegressionData", "FittedModel", "RESIDUAL_SCENARIOS", "residual_scenario",
           "discriminatory_scenario", "posited_residuals", "logistic_scenario", "binormal_scores",
           "load_diabetes_data", "load_breast_cancer_data", "fit_model"]


@dataclass(frozen=True, eq=False)
class RegressionData:
    """A data set to fit and diagnose: features ``X`` (n, p), outcome ``y`` (n,), a name.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import residual_scenario
    >>> data = residual_scenario("ideal", 200, np.random.default_rng(0))
    >>> data.X.shape, data.n, data.name
    ((200, 1), 200, 'ideal')
    """

    X: np.ndarray
    y: np.ndarray
    name: str
    description: str

    @property
    def n(self) -> int:
        """Number of records."""
        return int(self.y.size)


#: The three generative scenarios of Chen 2018, §4.2.3 (Fig. 4.1), name -> description.
RESIDUAL_SCENARIOS = {
    "ideal": "y = x + N(0, 1), x ~ U[1, 50] (all OLS assumptions hold)",
    "heteroscedastic": "y = x + N(0, x), x ~ U[1, 50] (non-constant variance: a fan)",
    "nonlinear": "y = 0.01 x^2 + x + N(0, 1), x ~ U[1, 50] (non-linear mean: a hook)",
}


def residual_scenario(name: str, n: int, rng: np.random.Generator | None = None) -> RegressionData:
    """One confidential data set of Chen 2018, §4.2.3 ("Ideal", "Heteroscedastic", "Nonlinear").

    The text uses ``n ∈ {500, 1000, 2000, 5000}`` and fits ``y = b0 + b1 x`` by OLS.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import residual_scenario
    >>> data = residual_scenario("heteroscedastic", 200, np.random.default_rng(0))
    >>> x, noise = data.X[:, 0], data.y - data.X[:, 0]
    >>> bool(noise[x > 25].std() > noise[x <= 25].std())  # the fan: spread grows with x
    True
    """
    if name not in RESIDUAL_SCENARIOS:
        raise ValueError(f"name must be one of {sorted(RESIDUAL_SCENARIOS)}, got {name!r}")
    n = check_positive_int(n, "n")
    rng = check_rng(rng)
    x = rng.uniform(1.0, 50.0, n)
    if name == "ideal":
        y = x + rng.normal(0.0, 1.0, n)
    elif name == "heteroscedastic":
        y = x + rng.normal(0.0, np.sqrt(x))
    else:
        y = 0.01 * x**2 + x + rng.normal(0.0, 1.0, n)
    return RegressionData(x[:, None], y, name, RESIDUAL_SCENARIOS[name])


def discriminatory_scenario(
    model: str,
    n: int,
    rng: np.random.Generator | None = None,
    *,
    alpha: float = 0.0,
    gamma: float = 0.0,
    noise: str = "sd",
) -> RegressionData:
    """Table 4.1's models, ``x ~ U[0, 50]`` (Chen 2018, §4.2.3, "Discriminatory power").

    M1: ``y = x + N(0, 1)``; M2: ``y = x + N(0, αx + 1)``; M3: ``y = x + γx² + N(0, 1)``. The
    text's smallest detectable violations at n·ε = 1000 are α = 0.02 and γ = 0.002 (Table 4.1).

    Two readings matter for reproducing Table 4.1 (their residuals are
    :func:`posited_residuals`, against the posited line ``y = x``, not an OLS refit that
    absorbs part of M3's curvature):

    - ``noise="sd"`` (default): in M2, ``αx + 1`` is the *standard deviation* (R's
      ``rnorm(n, 0, sd)``, which the text's simulations used). With it and the posited line,
      the non-private column of Table 4.1 reproduces (α = 0.0097 / 0.0067 / 0.0041 and
      γ = 0.000301 / 0.000215 / 0.000135 at n = 1000 / 2000 / 5000;
      ``benchmarks/diagnostics_prirp.py``).
    - ``noise="variance"``: ``αx + 1`` is the variance, as eq. 4.1's ``N(0, σ²)`` and the rest
      of this module read ``N(0, v)`` (this function's old behaviour).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import discriminatory_scenario
    >>> data = discriminatory_scenario("M3", 200, np.random.default_rng(0), gamma=0.002)
    >>> data.X.shape, data.description
    ((200, 1), 'y = x + 0.002 x^2 + N(0, 1), x ~ U[0, 50]')
    """
    if model not in ("M1", "M2", "M3"):
        raise ValueError(f"model must be 'M1', 'M2' or 'M3', got {model!r}")
    if noise not in ("sd", "variance"):
        raise ValueError(f"noise must be 'sd' or 'variance', got {noise!r}")
    n = check_positive_int(n, "n")
    alpha = check_epsilon(alpha, "alpha", allow_zero=True)
    gamma = check_epsilon(gamma, "gamma", allow_zero=True)
    rng = check_rng(rng)
    x = rng.uniform(0.0, 50.0, n)
    if model == "M1":
        y, text = x + rng.normal(0.0, 1.0, n), "y = x + N(0, 1)"
    elif model == "M2":
        spread = alpha * x + 1.0 if noise == "sd" else np.sqrt(alpha * x + 1.0)
        y = x + rng.normal(0.0, spread)
        text = (f"y = x + N(0, sd = {alpha:g} x + 1)" if noise == "sd"
                else f"y = x + N(0, var = {alpha:g} x + 1)")
    else:
        y, text = x + gamma * x**2 + rng.normal(0.0, 1.0, n), f"y = x + {gamma:g} x^2 + N(0, 1)"
    return RegressionData(x[:, None], y, model, text + ", x ~ U[0, 50]")


def posited_residuals(data: RegressionData) -> tuple[np.ndarray, np.ndarray]:
    """Predictions and residuals of Table 4.1's *posited* line ``y = x``: ``(x, y - x)``.

    Chen 2018, Table 4.1 compares each model's residual plot with M1's against the line the
    analyst posits (M1's, ``y = x``); an OLS refit on M3 data would bend towards the curve and
    hide much of the violation. Needs one feature column (the scenarios of
    :func:`discriminatory_scenario`).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import discriminatory_scenario, posited_residuals
    >>> data = discriminatory_scenario("M1", 200, np.random.default_rng(0))
    >>> predicted, residuals = posited_residuals(data)
    >>> bool((predicted == data.X[:, 0]).all()), round(float(residuals.std()), 1)
    (True, 1.0)
    """
    if data.X.ndim != 2 or data.X.shape[1] != 1:
        raise ValueError(f"posited_residuals needs one feature column, got X of shape {data.X.shape}")
    x = data.X[:, 0]
    return x.copy(), data.y - x


def logistic_scenario(model: str, n: int, rng: np.random.Generator | None = None) -> RegressionData:
    """Chen 2018, §4.4.3's logistic models, ``x ~ U[-1, 1]``: M1 logit = 2x, M2 logit = x² + 2x - 1.

    Fitting ``logit = b0 + b1 x`` is correct for M1 and misspecified for M2 (the hook of
    Fig. 4.12(b)); ``y`` holds 0/1 labels.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import logistic_scenario
    >>> data = logistic_scenario("M2", 200, np.random.default_rng(0))
    >>> data.X.shape, sorted(set(data.y.tolist())), data.description
    ((200, 1), [0.0, 1.0], 'logit = x^2 + 2x - 1, x ~ U[-1, 1]')
    """
    if model not in ("M1", "M2"):
        raise ValueError(f"model must be 'M1' or 'M2', got {model!r}")
    n = check_positive_int(n, "n")
    rng = check_rng(rng)
    x = rng.uniform(-1.0, 1.0, n)
    logit = 2.0 * x if model == "M1" else x**2 + 2.0 * x - 1.0
    y = (rng.random(n) < special.expit(logit)).astype(float)
    text = "logit = 2x" if model == "M1" else "logit = x^2 + 2x - 1"
    return RegressionData(x[:, None], y, model, text + ", x ~ U[-1, 1]")


def binormal_scores(
    n: int,
    auc: float,
    rng: np.random.Generator | None = None,
    *,
    prevalence: float = 0.5,
) -> tuple[np.ndarray, np.ndarray]:
    """Labels and scores in (0, 1) whose population ROC curve is binormal with AUC ``auc``.

    Negatives have latent ``z ~ N(0, 1)``, positives ``z ~ N(d, 1)`` with
    ``d = sqrt(2) Φ⁻¹(auc)`` (so ``P(z+ > z-) = Φ(d/√2) = auc``); the score is
    ``expit(z)``, a monotone map that leaves the ROC curve unchanged. Used for Chen 2018, §4.3.3's
    discriminatory power (AUCs a ∈ {0.7, 0.725, ..., 0.95}).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import binormal_scores
    >>> labels, scores = binormal_scores(1_000, 0.8, np.random.default_rng(0))
    >>> labels.shape, bool(((scores > 0) & (scores < 1)).all())
    ((1000,), True)
    >>> auc = (scores[labels == 1][:, None] > scores[labels == 0][None, :]).mean()
    >>> round(float(auc), 2)  # close to the population AUC
    0.79
    """
    n = check_positive_int(n, "n")
    if not 0.5 <= float(auc) < 1.0:
        raise ValueError(f"auc must be in [0.5, 1), got {auc!r}")
    if not 0.0 < float(prevalence) < 1.0:
        raise ValueError(f"prevalence must be in (0, 1), got {prevalence!r}")
    rng = check_rng(rng)
    labels = (rng.random(n) < prevalence).astype(np.int8)
    d = math.sqrt(2.0) * float(stats.norm.ppf(auc))
    z = rng.normal(0.0, 1.0, n) + d * labels
    return labels, special.expit(z)


def load_diabetes_data() -> RegressionData:
    """scikit-learn's diabetes data (n = 442, 10 standardised features, disease progression).

    Shipped with scikit-learn (Efron et al. 2004); a real outcome to fit by OLS and diagnose
    with PriRP. ``y`` ranges over 25-346: use ``mu_predicted = mu_residual = 10`` or so.

    Examples
    --------
    >>> from dpwidgets.datasets import load_diabetes_data
    >>> data = load_diabetes_data()
    >>> data.X.shape, float(data.y.min()), float(data.y.max())
    ((442, 10), 25.0, 346.0)
    """
    from sklearn.datasets import load_diabetes

    data = load_diabetes()
    return RegressionData(np.asarray(data.data, float), np.asarray(data.target, float),
                          "diabetes", "sklearn.datasets.load_diabetes (Efron et al. 2004)")


def load_breast_cancer_data() -> RegressionData:
    """scikit-learn's Wisconsin breast cancer data (n = 569, 30 features, malignant = 0).

    Shipped with scikit-learn; a real binary outcome to fit by logistic regression and
    diagnose with PriROC / PriBRP. Features are standardised with the data's own mean and sd:
    fine for a data set declared public (teaching mode), not a recipe for confidential data.

    Examples
    --------
    >>> from dpwidgets.datasets import load_breast_cancer_data
    >>> data = load_breast_cancer_data()
    >>> data.X.shape, round(float(data.y.mean()), 2)  # share of benign (label 1)
    ((569, 30), 0.63)
    """
    from sklearn.datasets import load_breast_cancer

    data = load_breast_cancer()
    X = np.asarray(data.data, float)
    X = (X - X.mean(axis=0)) / X.std(axis=0)
    return RegressionData(X, np.asarray(data.target, float), "breast_cancer",
                          "sklearn.datasets.load_breast_cancer (Wolberg et al. 1995), standardised")


@dataclass(frozen=True, eq=False)
class FittedModel:
    """The model under diagnosis and what fitting it cost.

    Attributes
    ----------
    kind : {"ols", "logistic"}
    predictions : numpy.ndarray
        ``ŷ`` (ols) or predicted probabilities ``P(y = 1 | x)`` (logistic).
    residuals : numpy.ndarray
        ``y - predictions``.
    coef, intercept :
        The fitted coefficients.
    private : bool
        Whether the fit is differentially private (:mod:`dpwidgets.engine.regression`).
    epsilon : float
        The fitting budget (0.0 for an ordinary fit). Separate from any diagnostic's epsilon:
        a Session must charge both to the data set.
    spent : tuple of float
        ``(epsilon, delta)`` of the fit ((0, 0) if not private).
    guarantee : str
        The private fit's guarantee, in words, or "not private".

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import fit_model, residual_scenario
    >>> data = residual_scenario("ideal", 200, np.random.default_rng(0))
    >>> model = fit_model(data.X, data.y)
    >>> model.kind, model.private, model.spent, model.residuals.shape
    ('ols', False, (0.0, 0.0), (200,))
    """

    kind: str
    predictions: np.ndarray
    residuals: np.ndarray
    coef: np.ndarray
    intercept: float
    private: bool
    epsilon: float
    spent: tuple[float, float]
    guarantee: str


def fit_model(
    X,
    y,
    kind: str = "ols",
    *,
    private: bool = False,
    epsilon: float | None = None,
    rng: np.random.Generator | None = None,
    bounds_X: tuple | None = None,
    bounds_y: tuple | None = None,
    data_norm: float | None = None,
    features: str = "linear",
    method: str = "output",
) -> FittedModel:
    """Fit the model to diagnose: OLS or logistic regression, ordinary or differentially private.

    Parameters
    ----------
    X : array_like, (n,) or (n, p)
    y : array_like, (n,)
        Outcome (0/1 labels for ``kind="logistic"``).
    kind : {"ols", "logistic"}
    private : bool
        Fit differentially privately: :func:`~dpwidgets.engine.regression.dp_linear_regression`
        (the functional mechanism of Zhang et al. 2012, diffprivlib's algorithm with its faults
        corrected) or :func:`~dpwidgets.engine.regression.dp_logistic_regression` (output
        perturbation, Chaudhuri et al. 2011 Alg. 1). Both are floating-point safe in analyst
        releases.
    epsilon : float
        The fitting budget (required when ``private``). It is *not* part of any diagnostic's
        epsilon: the total cost of "fit then diagnose" is the sum.
    rng : numpy.random.Generator, optional
        The source of the private fit's noise.
    bounds_X, bounds_y : tuple, optional
        Public data bounds for the private OLS, declared by the data owner; required when
        ``private`` (reading them off the data would leak).
    data_norm : float, optional
        Public bound on the L2 norm of a row of X for the private logistic fit (required when
        ``private``, same reason).
    features : {"linear"}
        Only the linear term is fitted (as in every scenario of Chen 2018, Ch. 4).
    method : {"output", "objective"}
        The private logistic fit: ``"output"`` (default) is output perturbation, floating-point
        safe (what the door's ``"fit_model"`` runs); ``"objective"`` is diffprivlib's
        objective perturbation (Chaudhuri et al. 2011, Alg. 2), far more accurate but drawn
        from continuous noise: not floating-point safe, for teaching runs on public data
        (:mod:`dpwidgets.engine.regression` explains the trade).

    Returns
    -------
    FittedModel

    Notes
    -----
    Guarantee of a private fit: epsilon-DP under replace-one neighbours (n public) given the
    public bounds (:mod:`dpwidgets.engine.regression`). Predictions and residuals on the
    training data are confidential: only a DP diagnostic (PriRP, PriROC, PriBRP) may release
    a view of them.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.datasets import fit_model, residual_scenario
    >>> rng = np.random.default_rng(0)
    >>> data = residual_scenario("ideal", 200, rng)
    >>> round(float(fit_model(data.X, data.y).coef[0]), 2)  # y = x + N(0, 1): slope 1
    0.99
    >>> private = fit_model(data.X, data.y, private=True, epsilon=1.0, rng=rng,
    ...                     bounds_X=(1, 50), bounds_y=(-5, 55))
    >>> private.private, private.epsilon, private.spent  # the fit's own budget
    (True, 1.0, (1.0, 0.0))
    """
    if kind not in ("ols", "logistic"):
        raise ValueError(f"kind must be 'ols' or 'logistic', got {kind!r}")
    if features != "linear":
        raise ValueError(f"features must be 'linear', got {features!r}")
    if method not in ("output", "objective"):
        raise ValueError(f"method must be 'output' or 'objective', got {method!r}")
    X = np.asarray(X, dtype=float)
    X = X[:, None] if X.ndim == 1 else X
    X = check_finite_array(X, "X", ndim=2)
    y = check_finite_array(y, "y")
    if X.shape[0] != y.size:
        raise ValueError(f"X and y must have the same number of rows, got {X.shape[0]} and {y.size}")
    if kind == "logistic" and not np.all((y == 0) | (y == 1)):
        raise ValueError("y must hold 0/1 labels for kind='logistic'")
    if private:
        if epsilon is None:
            raise ValueError("epsilon is required for a private fit (the fitting budget)")
        epsilon = check_epsilon(epsilon)
        if kind == "ols" and (bounds_X is None or bounds_y is None):
            raise ValueError("bounds_X and bounds_y (public data bounds) are required for a private OLS fit")
        if kind == "logistic" and data_norm is None:
            raise ValueError("data_norm (a public bound on the rows' L2 norm) is required for a private logistic fit")
    rng = check_rng(rng)

    if not private:
        from sklearn.linear_model import LinearRegression, LogisticRegression

        # sklearn's default ridge penalty (C = 1) keeps separable data (breast cancer) finite;
        # at the text's sizes it changes the MLE negligibly.
        model = LinearRegression() if kind == "ols" else LogisticRegression(max_iter=1000)
        model.fit(X, y)
        spent, guarantee, eps_fit = (0.0, 0.0), "not private (ordinary fit)", 0.0
    else:
        from ...engine.regression import dp_linear_regression, dp_logistic_regression

        if kind == "ols":
            model = dp_linear_regression(X, y, epsilon, bounds_X, bounds_y, rng=rng)
        elif method == "output":
            model = dp_logistic_regression(X, y, epsilon, data_norm, rng=rng)
        else:
            model = _objective_perturbation(X, y, epsilon, data_norm, rng)
        spent = (float(epsilon), 0.0)
        guarantee = model.guarantee
        eps_fit = epsilon

    if private:
        linear = model.predict(X)
        predictions = linear if kind == "ols" else 1.0 / (1.0 + np.exp(-linear))
        coef, intercept = np.ravel(model.coef), float(model.intercept)
    else:
        predictions = model.predict(X) if kind == "ols" else model.predict_proba(X)[:, 1]
        coef = np.ravel(model.coef_)
        intercept = (float(np.ravel(model.intercept_)[0]) if np.ndim(model.intercept_)
                     else float(model.intercept_))
    return FittedModel(kind=kind, predictions=np.asarray(predictions, float),
                       residuals=y - predictions, coef=coef, intercept=intercept,
                       private=bool(private), epsilon=float(eps_fit), spent=spent,
                       guarantee=guarantee)


def _objective_perturbation(X: np.ndarray, y: np.ndarray, epsilon: float, data_norm: float,
                            rng: np.random.Generator):
    """diffprivlib's ``LogisticRegression`` (objective perturbation, Chaudhuri et al. 2011 Alg. 2),
    seeded from ``rng``, as a :class:`~dpwidgets.engine.regression.DPRegression`. Continuous
    noise: not floating-point safe (teaching runs only)."""
    import warnings
    from types import MappingProxyType

    from diffprivlib.accountant import BudgetAccountant
    from diffprivlib.models import LogisticRegression

    from ...engine.regression import DPRegression

    model = LogisticRegression(epsilon=epsilon, data_norm=data_norm,
                               random_state=int(rng.integers(2**31 - 1)),
                               accountant=BudgetAccountant())
    with warnings.catch_warnings():
        # diffprivlib clips rows beyond data_norm and says so; the norm is public here.
        warnings.filterwarnings("ignore", message=".*exceed.*norm.*")
        warnings.filterwarnings("ignore", category=DeprecationWarning)  # scipy vs diffprivlib
        model.fit(X, y)
    return DPRegression(
        coef=np.ravel(model.coef_), intercept=float(np.ravel(model.intercept_)[0]),
        epsilon=epsilon, epsilon_parts=MappingProxyType({"model": epsilon}),
        details=MappingProxyType({}),
        guarantee=f"{eps_text(epsilon)}-DP (diffprivlib LogisticRegression, objective perturbation; "
                  f"continuous noise, not floating-point safe)",
    )
