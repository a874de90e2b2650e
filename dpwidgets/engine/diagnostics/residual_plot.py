"""PriRP (Chen 2018 §4.2.2, Alg. 9): :func:`private_residual_plot`, the private residual
plot of a linear model.
Part of :mod:`~dpwidgets.engine.diagnostics`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from .._results import eps_text
from ..histograms import _check_workload
from ..validation import check_epsilon, check_positive, check_positive_int, check_real, check_rng
from .bounds import PrivateBounds, _bounds_of
from .checks import (
    MAX_DOUBLINGS,
    MAX_GRID,
    NEIGHBOURS,
    _check_fraction,
    _check_neighbours,
    _check_pair,
    _check_publisher,
    _parts,
    _publish,
    public_n,
)
from .records import ArrayRecords, Records

__all__ = ["PrivateResidualPlot", "private_residual_plot", "PriRP"]


@dataclass(frozen=True, eq=False)
class PrivateResidualPlot:
    """A private residual plot (PriRP) and what it cost.

    Attributes
    ----------
    points : numpy.ndarray, shape (k, 2)
        Synthetic (prediction, residual) points, ``counts[i, j]`` of them uniform in cell
        (i, j) — the plot to draw.
    counts : numpy.ndarray, shape (m, m)
        The published grid after post-processing (negatives to 0, rounded); rows index
        predictions, columns residuals.
    raw_counts : numpy.ndarray, shape (m, m)
        The publisher's estimate before post-processing (also DP output).
    edges_predicted, edges_residual : numpy.ndarray
        Cell edges (m + 1 each).
    bounds_predicted, bounds_residual : PrivateBounds
        The Alg. 10 releases.
    grid : int
        m, the number of cells per axis.
    publisher : str
        The :data:`.histograms.PUBLISHERS` key used.
    epsilon : float
        Total budget, ``== sum(epsilon_parts.values())``.
    epsilon_parts : mapping
        ``bounds_predicted`` (ε1/2), ``bounds_residual`` (ε1/2), ``histogram`` (ε2).
    n : int
        The public row count the parameters were decided from (declared; not the true count).
    guarantee, neighbours : str
    """

    points: np.ndarray
    counts: np.ndarray
    raw_counts: np.ndarray
    edges_predicted: np.ndarray
    edges_residual: np.ndarray
    bounds_predicted: PrivateBounds
    bounds_residual: PrivateBounds
    grid: int
    publisher: str
    epsilon: float
    epsilon_parts: Mapping[str, float]
    n: int
    guarantee: str
    neighbours: str

    @property
    def bounds(self) -> tuple[tuple[float, float], tuple[float, float]]:
        """``((pred_lo, pred_hi), (resid_lo, resid_hi))``: the plotted region."""
        bp, br = self.bounds_predicted, self.bounds_residual
        return (bp.lower, bp.upper), (br.lower, br.upper)


def residual_plot_defaults(n: int, epsilon: float, theta: float = 0.95,
                           epsilon1: float | None = None, grid: int | None = None
                           ) -> tuple[float, int]:
    """PriRP's bounds budget ``epsilon1`` and grid side ``m`` from public inputs alone.

    ``epsilon1 = min(0.3·eps, 470/n)`` unless given (Chen 2018 §4.2.2) and ``m =
    round(sqrt(N0·(eps - epsilon1)/10))``, ``N0 = θ²·n``, clipped to ``[1, MAX_GRID]``, unless
    given; ``n`` is the public row count (declared by the data owner), so the door decides both
    before the data is read and they are the same for every data set of any true size."""
    n = check_positive_int(n, "n")
    epsilon = check_epsilon(epsilon)
    theta = _check_fraction(theta, "theta")
    if epsilon1 is None:
        epsilon1 = min(0.3 * epsilon, 470.0 / n)
    epsilon1 = check_epsilon(epsilon1, "epsilon1")
    if not epsilon1 < epsilon:
        raise ValueError(f"epsilon1 must be < epsilon ({epsilon}), got {epsilon1}")
    if grid is None:
        n0 = theta**2 * n  # erratum: θ²·n, not θ²/n
        grid = min(MAX_GRID, max(1, int(round(math.sqrt(n0 * (epsilon - epsilon1) / 10.0)))))
    return float(epsilon1), check_positive_int(grid, "grid", maximum=MAX_GRID)


def private_residual_plot(
    predicted,
    residuals,
    epsilon: float,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "dawa",
    theta: float = 0.95,
    mu_predicted: float = 1.0,
    mu_residual: float = 1.0,
    center_predicted: float = 0.0,
    center_residual: float = 0.0,
    epsilon1: float | None = None,
    grid: int | None = None,
    max_doublings: int = 40,
    workload: str | None = "range",
    neighbours: str = "replace-one",
    monotonic_bounds: bool = True,
    n: int | None = None,
) -> PrivateResidualPlot:
    """PriRP: an epsilon-DP residual plot (residuals vs predicted values), Chen 2018 Alg. 9.

    Step 1 (§4.2.2 "Computing private bounds"): :func:`private_bounds` on the predictions and
    on the residuals, ``epsilon1/2`` each, ``epsilon1 = min(0.3·eps, 470/n)``.
    Step 2 ("Perturbing residual plots", ``epsilon2 = eps - epsilon1``): an ``m × m`` grid over
    the bounded region with ``m = round(sqrt(N0·epsilon2/10))``, ``N0 = θ²·n`` (erratum: Chen et al. 2016
    writes θ²/n); the 2-D histogram of the records inside the region is released by
    :func:`.histograms.publish` (DAWA by default), negatives set to 0 and rounded; then
    ``counts[i, j]`` points are drawn uniformly in each cell (post-processing).

    Parameters
    ----------
    predicted, residuals : array_like, 1-D, same length
        ``ŷ_i`` and ``r_i = y_i - ŷ_i`` of the model under diagnosis (the model is public or
        DP; its own cost is the caller's, see ``dpwidgets.datasets.fit_model``).
    epsilon : float
        Total budget.
    rng : numpy.random.Generator, optional
    publisher : str
        A 2-D-capable key of :data:`.histograms.PUBLISHERS` (Chen 2018 Table 4.2 compares them;
        DAWA has the least regret).
    theta : float
        Coverage target of each bound (0.95).
    mu_predicted, mu_residual : float
        Units of Alg. 10 (1 for small integer-valued outcomes, 1000 for incomes).
    center_predicted, center_residual : float
        Public centres of the doubling intervals. The text uses 0 for both, which wastes half
        of the grid when all predictions are positive; pass a public centre when one is known
        (e.g. the midpoint of the outcome's published range). No budget is spent on centres.
    epsilon1 : float, optional
        Override of the bounds budget (default ``min(0.3 eps, 470/n)``, Chen 2018 §4.2.2).
    grid : int, optional
        Override of m, at most :data:`MAX_GRID` (the default rule is clipped to it too).
    max_doublings : int
        Cap of Alg. 10 (at most :data:`MAX_DOUBLINGS`).
    workload : str or None
        Passed to the publisher (range queries over the 2-D domain, Chen 2018 §4.2.2).
    monotonic_bounds : bool
        True (default): the private bounds use the monotone SVT (half the query noise, see
        :func:`private_bounds`). False: the text's Alg. 10 scales.
    neighbours : {"replace-one", "add/remove"}
        See the module docstring. The publishers are add/remove-calibrated; a replace-one change
        moves a record between two cells, so in replace-one mode the publisher is called with
        ``epsilon2/2`` (the grid then costs epsilon2). In add/remove mode it gets ``epsilon2``
        (the text).
    n : int, optional
        The public row count (declared by the data owner) that ``epsilon1``, the grid and the
        SVT thresholds ``θ·n`` are decided from (:func:`residual_plot_defaults`). Omitted: the
        number of records under replace-one; required under add/remove (:func:`public_n`).

    Returns
    -------
    PrivateResidualPlot

    Raises
    ------
    ValueError
        Mismatched lengths, NaN/inf, fewer than 2 records, bad epsilon/theta/units, an
        ``epsilon1`` not in (0, eps), an unknown or 1-D-only publisher — before any randomness.

    Notes
    -----
    Privacy: epsilon-DP under the chosen neighbour relation by sequential composition
    (Chen 2018 Thm 10): two Alg. 10 runs of ``epsilon1/2`` (count sensitivity 1 in both relations)
    and one ``epsilon2`` histogram release; sampling is post-processing. ``epsilon1``, ``m`` and
    the thresholds ``θ·n`` are functions of the public ``n`` and ``eps`` only, so they are the
    same on both neighbours and the composition is over fixed parameters.

    References
    ----------
    Chen 2018 §4.2.2, Alg. 9-10, Thm 9-10; Chen et al. 2016 §4.2; Li, Hay, Miklau, Wang 2014 (DAWA).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.diagnostics import private_residual_plot
    >>> rng = np.random.default_rng(0)
    >>> predicted, residuals = rng.uniform(0, 10, 2000), rng.normal(0, 1, 2000)
    >>> plot = private_residual_plot(predicted, residuals, 1.0, rng, n=2000)
    >>> plot.points.shape[1], plot.counts.shape, round(sum(plot.epsilon_parts.values()), 6)
    (2, (12, 12), 1.0)
    """
    if isinstance(predicted, Records) and residuals is None:
        records = predicted
    else:
        records = ArrayRecords(*_check_pair(predicted, residuals, "predicted", "residuals"))
    factor = _check_neighbours(neighbours)
    n = public_n(n, records.n, neighbours)
    epsilon = check_epsilon(epsilon)
    theta = _check_fraction(theta, "theta")
    publisher = _check_publisher(publisher, 2)
    epsilon1, m = residual_plot_defaults(n, epsilon, theta, epsilon1, grid)
    for value, name in ((mu_predicted, "mu_predicted"), (mu_residual, "mu_residual")):
        check_positive(value, name)
    check_positive_int(max_doublings, "max_doublings", minimum=0, maximum=MAX_DOUBLINGS)
    for value, name in ((center_predicted, "center_predicted"), (center_residual, "center_residual")):
        check_real(value, name)
    _check_workload(workload)
    if not isinstance(monotonic_bounds, bool | np.bool_):
        raise ValueError(f"monotonic_bounds must be True or False, got {monotonic_bounds!r}")
    rng = check_rng(rng)

    parts = _parts(epsilon, bounds_predicted=epsilon1 / 2, bounds_residual=epsilon1 / 2,
                   histogram=epsilon - epsilon1)
    epsilon2 = parts["histogram"]
    common = dict(theta=theta, max_doublings=max_doublings, rng=rng,
                  monotonic=bool(monotonic_bounds), n=n)
    bp = _bounds_of(records, "predicted", parts["bounds_predicted"], mu=mu_predicted,
                    center=center_predicted, **common)
    br = _bounds_of(records, "residual", parts["bounds_residual"], mu=mu_residual,
                    center=center_residual, **common)

    ex = np.linspace(bp.lower, bp.upper, m + 1)
    er = np.linspace(br.lower, br.upper, m + 1)
    hist = np.asarray(records.grid_counts(ex, er), dtype=float)

    release = _publish(hist, epsilon2 / factor, publisher, rng, workload)
    counts = release.nonnegative(rounded=True)

    cells = np.repeat(np.arange(m * m), counts.ravel().astype(np.int64))
    i, j = np.divmod(cells, m)
    u = rng.random((cells.size, 2))
    points = np.column_stack((ex[i] + u[:, 0] * (ex[i + 1] - ex[i]),
                              er[j] + u[:, 1] * (er[j + 1] - er[j])))
    return PrivateResidualPlot(
        points=points, counts=counts, raw_counts=np.asarray(release.counts),
        edges_predicted=ex, edges_residual=er, bounds_predicted=bp, bounds_residual=br,
        grid=m, publisher=publisher, epsilon=epsilon, epsilon_parts=parts, n=int(n),
        guarantee=f"{eps_text(epsilon)}-DP (Chen 2018 Thm 10; publisher {publisher!r} at "
        f"{eps_text(epsilon2 / factor)} for {neighbours} neighbours)",
        neighbours=NEIGHBOURS[neighbours],
    )


PriRP = private_residual_plot
