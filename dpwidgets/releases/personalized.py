"""Session mechanism for personalized differential privacy (Li 2017, Ch. 5).

A dataset here is a table of two columns, one row per record: ``[value, budget]``. The value
is confidential; the budget is the privacy budget the record's owner asked for, and it is
**public** -- the privacy vector ``phi = (eps_1, ..., eps_n)`` of Li 2017, §5.1, which "should not be
correlated with any sensitive information". Add it with a public stand-in of the same shape
whose second column is the same privacy vector (:func:`personalized_stand_in`).

Mechanism (``session.release(dataset, "personalized_histogram", ...)``)
-----------------------------------------------------------------------
:func:`dpwidgets.engine.personalized.personalized_histogram`: the histogram of the values under
personalized DP, by Minimum, Threshold, Sampling (Jorgensen et al.), privacy-aware partitioning
(Li 2017, Alg. 10) or utility-based partitioning (Alg. 11), with T-round repartitioning (§5.2.3)
and the inverse-variance ensemble (§5.2.4), or by Alaggan, Gambs & Kermarrec 2016's one-release
weighting (``method="weighted"``, :func:`~dpwidgets.engine.personalized.weighted_histogram`).
Parameters:

``epsilon`` (required)
    A **cap**: the most any one record may spend in this release. Budgets above it are lowered
    to it before planning (a record may always be given more protection than it asked for).
    Pass ``max(budgets)`` or more for no cap.
``budgets`` (required)
    The privacy vector this release honours, one budget per record, in the table's row order.
    Normally the table's budget column itself. It travels in the parameters because the cost
    must be known before the data are touched, and ``validate``/``cost`` see the parameters
    and the public shape only. Its cache key is a digest (:class:`PrivacyVector`), not the
    100,000 numbers. The door never compares it with the table before the charge (that
    comparison would read the data: a refusal, or its text, would say how many records are
    above a budget -- a free count of any column). Instead the run handles every record the
    same, data-independent way: a record whose own budget column is below the budget the
    release gives it (``enjoyed[j]``, a public function of ``budgets`` and the parameters) is
    **left out of the counts** (it spends nothing; the engine's ``include``, :func:`covered`).
    So every record gets at least the protection its column asks for, and the plan, the
    charge and every output but the noisy counts stay functions of the parameters alone.
    A table whose length is not the vector's is aligned by position (rows past the vector are
    not counted), so no failure depends on its true length either. Widgets check
    ``budgets`` against the public stand-in's budget column before a release (the stand-in
    is public).
``bins`` (required), ``value_range``
    Public bin edges, or a number of equal bins over the public ``value_range``. Values outside
    the edges are clipped into the first / last bin (a public rule applied record by record,
    so no refusal depends on the confidential values).
``method``
    ``"utility"`` (default), ``"privacy_aware"``, ``"sampling"``, ``"minimum"``, ``"threshold"``,
    ``"weighted"`` (every record in one release, weighted ``eps_j / eps_max``; no threshold,
    one round).
``threshold``
    ``eps_T`` of Sampling / Threshold, in ``[min, max]`` of the (capped) budgets; default the
    mean budget (Li 2017, §5.3.2.1's rule for counts).
``rounds``
    T-round partitioning (partitioning methods and Minimum).
``ensemble``, ``min_size``, ``max_partitions``, ``max_groups``
    As in the engine (``utility="count"`` with its plug-in cell variance).

What a release costs on the session's ledger
--------------------------------------------
The ledger keeps one uniform ε per dataset: "every record's privacy loss is at most the ε
spent". A personalized release gives record ``j`` the guarantee ``enjoyed[j] <= budgets[j]``
(the engine's :class:`~dpwidgets.engine.personalized.ReleasePlan`), so the uniform bound it
implies -- and what it is charged -- is the **largest per-record loss**
``max_j enjoyed[j]``. That is exactly what the proof spends: for two tables differing in record
``j`` the output distributions are within ``e^{enjoyed[j]} <= e^{max enjoyed}``. It is never more
than ``max(budgets)`` (nor than the cap ``epsilon``), and can be much less: Minimum is charged
``min(budgets)``, Sampling ``eps_T`` (record ``j`` enjoys ``min(eps_j, eps_T)``), Weighted the
largest (capped) budget (record ``j`` enjoys ``eps_j`` rounded down by at most
``WEIGHT_UNIT * eps_max``), a partitioning
method the largest budget any of its releases (summed over rounds) runs at -- e.g. about 0.76 of
a ``max(budgets) = 1`` under Li 2017's ``N(0.1, 1)`` vector for utility-based partitioning. The
charge is a function of the public privacy vector and the parameters only (the plan is computed
before anything is run). An earlier design suggested charging ``max(budgets)``; that is an upper
bound of the charge here, reached when some record enjoys its whole (capped) budget.

Neighbours: replace-one (the engine's :data:`~dpwidgets.engine.personalized.NEIGHBOURS`): the
privacy vector is public, so the number of records and who is in the data are public too.
The uniform bound the ledger is charged holds whatever the table's budget column holds (even
if that column were confidential): replacing record ``j`` -- its value and its column --
either changes a counted value (loss ``<= enjoyed[j]``) or moves it in or out of the counts
(a removal: ``<= enjoyed[j] / 2`` under the replace-one calibration), so every loss is at most
``max_j enjoyed[j]``, the charge.

Outputs (:func:`histogram_outputs`)
-----------------------------------
The DP histogram (``counts``) and the per-release noisy histograms before the ensemble, the
public bin edges, and functions of the public privacy vector and parameters only: each record's
round-1 partition (``labels``), each record's ``enjoyed`` budget, each release's budget, size and
round, the threshold, the charge. Never a value, a true count, or Sampling's secret coins.

References
----------
Li 2017, Ch. 5 (§5.1 Def. 5.1.1; §5.2 Alg. 10-11, eq. 5.2.3, 5.2.6; §5.2.3 T-round; §5.2.4 ensemble);
Jorgensen, Yu, Cormode, "Conservative or liberal? Personalized differential privacy", ICDE 2015;
Alaggan, Gambs & Kermarrec, "Heterogeneous differential privacy", J. Privacy and Confidentiality
7(2), 2016.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from numbers import Integral

import numpy as np

from ..engine import personalized as pdp
from ..engine.validation import check_epsilon, check_finite_array, check_positive_int
from ..mechanism import Mechanism, register_mechanism

__all__ = [
    "METHOD_LABELS",
    "PERSONALIZED_MECHANISMS",
    "PrivacyVector",
    "covered",
    "histogram_outputs",
    "personalized_stand_in",
    "release_plan",
]

#: Short names of the methods, as the widget and the ledger labels show them.
METHOD_LABELS = {
    "minimum": "Minimum",
    "threshold": "Threshold",
    "sampling": "Sampling",
    "privacy_aware": "Privacy-aware",
    "utility": "Utility-based",
    "weighted": "Weighted",
}

_THRESHOLDED = ("threshold", "sampling")
_ROUNDS = ("minimum", "privacy_aware", "utility")
_ENSEMBLES = ("weighted", "sum")
_MAX_BINS = 1_000_000


class PrivacyVector(str):
    """The public privacy vector of a release, carried in its parameters.

    A ``str`` whose text is a digest of the vector (``"privacy-vector:<n>:<blake2b>"``): the
    text is what the session's cache key and the persisted parameters hold, so 100,000 budgets
    are not serialised into every key; :attr:`array` is the vector itself (read-only).
    Two equal vectors give equal strings, hence the same cached release.
    """

    array: np.ndarray
    checked: bool = False
    _order: np.ndarray | None = None

    def __new__(cls, budgets) -> PrivacyVector:
        array = np.array(budgets, dtype=float, copy=True)
        array.setflags(write=False)
        digest = hashlib.blake2b(array.tobytes(), digest_size=16).hexdigest()
        self = super().__new__(cls, f"privacy-vector:{array.size}:{digest}")
        self.array = array
        return self

    @property
    def order(self) -> np.ndarray:
        """The stable sort order of the budgets (read-only), sorted once per vector: every plan
        of every method and cap, and the widget's sorted-budget axis, share it."""
        if self._order is None:
            order = _sort(self.array)
            order.setflags(write=False)
            self._order = order
        return self._order


def _sort(budgets: np.ndarray) -> np.ndarray:
    return np.argsort(budgets, kind="stable")


def _capped_order(vector: PrivacyVector, cap: float) -> np.ndarray:
    """The stable sort order of ``min(budgets, cap)`` from the vector's own.

    Capping keeps the order of the budgets below the cap; those at or above it become equal,
    and a stable sort puts equal budgets in record order: O(n) and a sort of the capped
    records' indices, not a sort of the budgets.
    """
    order = vector.order
    first = int(np.searchsorted(vector.array[order], cap, side="left"))
    if first >= order.size:
        return order
    return np.concatenate((order[:first], np.sort(order[first:])))


def _check_budgets(value, n: int) -> PrivacyVector:
    if isinstance(value, PrivacyVector):
        vector = value
    elif isinstance(value, str):
        raise ValueError(
            "budgets must be the privacy vector itself (an array of one budget per record), "
            "not a digest string: a release's stored parameters hold only the digest"
        )
    else:
        vector = PrivacyVector(check_finite_array(value, "budgets"))
    budgets = vector.array
    if budgets.ndim != 1 or budgets.size != n:
        raise ValueError(
            f"budgets must hold one budget per record of the table ({n}), got shape "
            f"{budgets.shape}"
        )
    # The array is read-only: checked once per vector, not on every validation.
    if not getattr(vector, "checked", False):
        if not np.all(np.isfinite(budgets)) or np.any(budgets <= 0):
            raise ValueError("budgets must all be finite and > 0 (one privacy budget per "
                             "record)")
        vector.checked = True
    return vector


def _check_edges(bins, value_range) -> np.ndarray:
    if isinstance(bins, Integral | np.integer) and not isinstance(bins, bool):
        count = check_positive_int(bins, "bins")
        if count > _MAX_BINS:
            raise ValueError(f"bins must be at most {_MAX_BINS:,}, got {count}")
        if value_range is None:
            raise ValueError(
                "bins given as a number needs value_range=(low, high): a public range, never "
                "read from the data"
            )
        bounds = check_finite_array(value_range, "value_range")
        if bounds.size != 2 or not bounds[0] < bounds[1]:
            raise ValueError(f"value_range must be (low, high) with low < high, got "
                             f"{value_range!r}")
        return np.linspace(bounds[0], bounds[1], count + 1)
    if value_range is not None:
        raise ValueError("value_range is only used with a number of bins; bins= are edges here")
    if bins is None:
        raise ValueError("'personalized_histogram' needs bins= (public edges, or a number of "
                         "bins with value_range=)")
    edges = check_finite_array(bins, "bins")
    if edges.size < 2 or edges.size > _MAX_BINS + 1 or np.any(np.diff(edges) <= 0):
        raise ValueError("bins must be 2 to 1,000,001 strictly increasing finite edges")
    return edges


def _optional_int(p: dict, name: str) -> int | None:
    value = p.pop(name, None)
    return None if value is None else check_positive_int(value, name)


# --------------------------------------------------------------------------------------------
# Plans: public, a function of the privacy vector and the parameters; computed once per
# parameter set (they take up to a few hundred ms for 100,000 continuous budgets) and reused by
# the cost, the run and later releases with other thresholds of the other methods. The vector
# is sorted once (PrivacyVector.order), whatever the method and the cap.
# --------------------------------------------------------------------------------------------
_PLANS: OrderedDict[tuple, pdp.ReleasePlan] = OrderedDict()
_PLANS_SIZE = 24
_PLANS_LOCK = threading.Lock()


def _plan_key(p: dict) -> tuple:
    return (str(p["budgets"]), p["epsilon"], p["method"], p["threshold"], p["rounds"],
            p["min_size"], p["max_partitions"], p["max_groups"], int(p["bins"].size - 1))


def release_plan(p: dict) -> pdp.ReleasePlan:
    """The engine's :class:`~dpwidgets.engine.personalized.ReleasePlan` for validated parameters.

    Computed from the capped privacy vector and the parameters only (public; no privacy cost),
    cached per parameter set. Raises ``ValueError`` on an infeasible combination (a threshold
    outside the budgets, ``rounds > 1`` for Sampling, too few records for ``min_size``, ...).
    """
    key = _plan_key(p)
    with _PLANS_LOCK:
        plan = _PLANS.get(key)
        if plan is not None:
            _PLANS.move_to_end(key)
            return plan
    n_bins = int(p["bins"].size - 1)
    vector = p["budgets"]
    budgets = np.minimum(vector.array, p["epsilon"])
    order = None
    if p["method"] in ("privacy_aware", "utility"):  # they sort the (capped) budgets
        order = _capped_order(vector, p["epsilon"])
    plan = pdp.plan_releases(
        budgets, p["method"], threshold=p["threshold"], rounds=p["rounds"],
        min_size=p["min_size"], max_partitions=p["max_partitions"], max_groups=p["max_groups"],
        utility="count", utility_options={"cell_variance": (1.0 - 1.0 / n_bins) / n_bins},
        default_threshold="mean", order=order,
    )
    with _PLANS_LOCK:
        _PLANS[key] = plan
        while len(_PLANS) > _PLANS_SIZE:
            _PLANS.popitem(last=False)
    return plan


# --------------------------------------------------------------------------------------------
# The mechanism
# --------------------------------------------------------------------------------------------
def _histogram_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    if len(shape) != 2 or shape[1] != 2:
        raise ValueError(
            f"'personalized_histogram' runs on a table of two columns [value, budget], one row "
            f"per record; this dataset has shape {tuple(shape)}"
        )
    n = int(shape[0])
    out: dict = {"epsilon": check_epsilon(p.pop("epsilon"), "epsilon (the cap)")}
    if "budgets" not in p:
        raise ValueError(
            "'personalized_histogram' needs budgets= : the public privacy vector (normally the "
            "table's budget column), one budget per record"
        )
    out["budgets"] = _check_budgets(p.pop("budgets"), n)
    method = p.pop("method", "utility")
    if not isinstance(method, str) or method not in METHOD_LABELS:
        raise ValueError(f"method must be one of {list(METHOD_LABELS)}, got {method!r}")
    out["method"] = method
    out["bins"] = _check_edges(p.pop("bins", None), p.pop("value_range", None))
    threshold = p.pop("threshold", None)
    if threshold is not None:
        threshold = check_epsilon(threshold, "threshold")
    out["threshold"] = threshold
    out["rounds"] = check_positive_int(p.pop("rounds", 1), "rounds")
    ensemble = p.pop("ensemble", "weighted")
    if ensemble not in _ENSEMBLES:
        raise ValueError(f"ensemble must be one of {list(_ENSEMBLES)}, got {ensemble!r}")
    out["ensemble"] = ensemble
    out["min_size"] = _optional_int(p, "min_size")
    out["max_partitions"] = _optional_int(p, "max_partitions")
    out["max_groups"] = check_positive_int(p.pop("max_groups", 1024), "max_groups")
    if p:
        raise ValueError(f"unknown parameter(s) for 'personalized_histogram': {sorted(p)}")
    if ensemble == "sum" and out["rounds"] > 1:
        raise ValueError("ensemble='sum' adds the round-1 partitions; use rounds=1 (or "
                         "'weighted')")
    plan = release_plan(out)  # raises ValueError on an infeasible plan: nothing charged yet
    out["threshold"] = None if plan.threshold is None else float(plan.threshold)
    out["charge"] = float(np.max(plan.enjoyed))
    return out


#: Relative slack when comparing a record's stated budget with what the plan gives it (the
#: plan's budgets are sums and minima of the vector's doubles).
_SLACK = 1e-12


def covered(asked: np.ndarray, enjoyed: np.ndarray) -> np.ndarray:
    """Which records a release counts: those whose stated budget (the table's budget column,
    ``asked``) covers the budget the release gives them (``enjoyed``, from the public plan).
    A record whose column says less -- or nothing readable (NaN) -- is left out: a rule
    applied record by record, so it costs no other record anything."""
    asked = np.asarray(asked, dtype=float)
    return np.asarray(enjoyed, dtype=float) <= asked * (1.0 + _SLACK)


def _aligned(table: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The table's value and budget columns at the vector's ``n`` positions: a table of
    another length (a rows view whose true row count is not the declared one) is aligned by
    position -- rows past ``n`` are not counted, positions past the table hold no record
    (NaN: left out) -- so no failure, and no message, depends on the true length."""
    table = np.asarray(table, dtype=float)
    values, asked = np.full(n, np.nan), np.full(n, np.nan)
    if table.ndim == 2 and table.shape[1] >= 2:
        m = min(n, table.shape[0])
        values[:m], asked[:m] = table[:m, 0], table[:m, 1]
    return values, asked


def _histogram_run(table: np.ndarray, p: dict, rng: np.random.Generator):
    budgets = np.minimum(p["budgets"].array, p["epsilon"])
    values, asked = _aligned(table, budgets.size)
    plan = release_plan(p)
    edges = p["bins"]
    # A value outside the public edges goes to the nearest end bin (record by record); a
    # value that is not a number (or no record) is left out like a record whose budget is
    # not covered.
    finite = np.isfinite(values)
    values = np.clip(np.where(finite, values, edges[0]), edges[0], edges[-1])
    include = covered(asked, plan.enjoyed) & finite
    return pdp.personalized_histogram(values, budgets, edges, p["method"], rng=rng,
                                      ensemble=p["ensemble"], plan=plan, include=include)


def histogram_outputs(result: pdp.PersonalizedResult, p: dict | None = None) -> dict:
    """The DP output of a personalized histogram, and public functions of the privacy vector.

    Returns the dict (``p``, the validated parameters, is unused: the spec's ``outputs``
    signature):

        ``counts`` (B,): the DP histogram; ``release_counts`` (k, B): each release's noisy
        histogram before the ensemble (for Sampling: the noisy histogram of the secret sample);
        ``edges`` (B+1,); ``labels`` (n,): each record's round-1 release (``-1``: none);
        ``enjoyed`` (n,): the budget each record spends; ``release_epsilons``,
        ``release_sizes``, ``release_rounds`` (k,); ``threshold`` (or None); ``charge`` (the
        largest enjoyed budget, what the ledger is charged); ``n``, ``method``, ``ensemble``,
        ``epsilon_parts``, ``guarantee``, ``neighbours``.

    Notes
    -----
    ``counts`` and ``release_counts`` are the Laplace outputs and their post-processing with
    public sizes and budgets. Everything else depends on the public privacy vector and the
    parameters only (the plan is computed before the data are read). Sampling's coins (which
    records were kept) are secret -- amplification needs them to be -- and are not in the
    engine's result.
    """
    plan = result.details["plan"]
    enjoyed = np.asarray(plan.enjoyed, dtype=float)
    return {
        "counts": np.asarray(result.counts, dtype=float).copy(),
        "release_counts": np.asarray(result.release_counts, dtype=float).copy(),
        "edges": np.asarray(result.edges, dtype=float).copy(),
        "labels": np.asarray(plan.labels, dtype=np.int64).copy(),
        "enjoyed": enjoyed.copy(),
        "release_epsilons": np.asarray(plan.epsilons, dtype=float).copy(),
        "release_sizes": np.asarray(plan.sizes, dtype=np.int64),
        "release_rounds": np.asarray(plan.rounds, dtype=np.int64).copy(),
        "threshold": None if plan.threshold is None else float(plan.threshold),
        "charge": float(enjoyed.max()),
        "n": int(enjoyed.size),
        "method": str(result.method),
        "ensemble": str(result.ensemble),
        "epsilon_parts": {str(k): float(v) for k, v in result.epsilon_parts.items()},
        "guarantee": str(result.guarantee),
        "neighbours": str(result.neighbours),
    }


def _histogram_label(p: dict) -> str:
    method = p["method"]
    source = ("Alaggan, Gambs & Kermarrec 2016" if method == "weighted" else "Li 2017, Ch. 5")
    parts = [f"personalized histogram, {METHOD_LABELS[method]} ({source})",
             f"{p['bins'].size - 1} bins"]
    if p["threshold"] is not None:
        parts.append(f"ε_T = {p['threshold']:.3g}")
    if method in _ROUNDS and p["rounds"] > 1:
        parts.append(f"T = {p['rounds']} rounds")
    if p["epsilon"] < float(np.max(p["budgets"].array)):
        parts.append(f"cap ε = {p['epsilon']:.3g}")
    parts.append(f"largest per-record loss {p['charge']:.3g}")
    return ", ".join(parts)


PERSONALIZED_MECHANISMS: dict[str, Mechanism] = {
    "personalized_histogram": Mechanism(
        "personalized_histogram", _histogram_validate, cost=lambda p: p["charge"],
        run=_histogram_run, outputs=histogram_outputs,
        label=_histogram_label, table=True,
        # Nothing here reads the table before the charge: a record whose budget column is
        # below what the plan gives it is left out inside the run (``covered``).
        neighbours=(f"{pdp.NEIGHBOURS}; a record whose own budget column is below what this "
                    f"release gives it is left out of the counts (it spends nothing)"),
    ),
}
"""The personalized-DP mechanisms, by session name (registered on import)."""

for _mechanism in PERSONALIZED_MECHANISMS.values():
    register_mechanism(_mechanism)


# --------------------------------------------------------------------------------------------
# A public stand-in
# --------------------------------------------------------------------------------------------
def personalized_stand_in(budgets, bins, *, value_range=None, profile=None,
                          seed: int = 0) -> np.ndarray:
    """A public stand-in table ``[value, budget]`` for a personalized dataset.

    The budget column is the public privacy vector itself (the widget reads it from here in
    analyst mode, and previews plan with it); the values depend on nothing but the public bins
    and ``profile``: each record falls in a bin drawn from ``profile`` (default: uniform over
    the bins) and takes the bin's centre.

    Parameters
    ----------
    budgets : array_like, 1-D
        The public privacy vector, one budget > 0 per record.
    bins : int or array_like
        Public bin edges, or a number of bins over ``value_range``.
    value_range : (float, float), optional
        With an integer ``bins``.
    profile : array_like, optional
        Public relative frequencies of the bins (non-negative, not all 0).
    seed : int
        Seed of the stand-in's own generator (reproducible, independent of any data).

    Returns
    -------
    numpy.ndarray, shape (n, 2)

    Raises
    ------
    ValueError
        Bad budgets, bins or profile.
    """
    vector = _check_budgets(budgets, int(np.size(budgets)))
    edges = _check_edges(bins, value_range)
    n_bins = edges.size - 1
    if profile is None:
        weights = np.full(n_bins, 1.0 / n_bins)
    else:
        weights = check_finite_array(profile, "profile")
        if weights.size != n_bins or np.any(weights < 0) or weights.sum() <= 0:
            raise ValueError(f"profile must hold {n_bins} non-negative weights, not all 0")
        weights = weights / weights.sum()
    rng = np.random.default_rng(seed)
    cells = rng.choice(n_bins, size=vector.array.size, p=weights)
    centres = 0.5 * (edges[:-1] + edges[1:])
    return np.column_stack((centres[cells], vector.array))
