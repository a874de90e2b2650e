"""The parameters of ``"personalized_histogram"``, one frozen object, and the public plan they
decide.

Each field is declared once (:func:`~dpwidgets.params.param`): its default, its check against
the table's public number of records, what it means, and how a widget shows it. The spec's
``validate`` is :meth:`PersonalizedHistogramParams.validate`; the canonical dict it returns is
what the run receives and what keys the release cache. Besides the request's parameters it
holds what the public plan decides before anything is charged: the threshold ε_T in force and
the ``charge`` (the largest per-record loss, Li 2017, §5.2's plan read as a uniform bound).

The privacy vector travels in the parameters as a :class:`PrivacyVector` (a digest string
carrying the array), and :func:`release_plan` plans a release from it and the other parameters
only (public; no privacy cost), once per parameter set.

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.personalized.params import PersonalizedHistogramParams
>>> p = PersonalizedHistogramParams.validate(
...     {"epsilon": 1.0, "budgets": np.full(100, 0.5), "bins": 4, "value_range": (0, 1),
...      "method": "minimum"}, (100, 2))
>>> p["method"], p["bins"].size, p["charge"]
('minimum', 5, 0.5)
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Mapping
from numbers import Integral
from typing import Any

import numpy as np

from ...engine import personalized as pdp
from ...engine.validation import check_epsilon, check_finite_array, check_positive_int
from ...params import NOT_GIVEN, Choice, Context, Epsilon, Params, Range, one_of, param

__all__ = ["METHOD_LABELS", "PersonalizedHistogramParams", "PrivacyVector", "check_budgets",
           "check_edges", "release_plan"]

#: Short names of the methods, as the widget and the ledger labels show them.
METHOD_LABELS = {
    "minimum": "Minimum",
    "threshold": "Threshold",
    "sampling": "Sampling",
    "privacy_aware": "Privacy-aware",
    "utility": "Utility-based",
    "weighted": "Weighted",
}

_ENSEMBLES = ("weighted", "sum")
_MAX_BINS = 1_000_000


class PrivacyVector(str):
    """The public privacy vector of a release, carried in its parameters.

    A ``str`` whose text is a digest of the vector (``"privacy-vector:<n>:<blake2b>"``): the
    text is what the session's cache key and the persisted parameters hold, so 100,000 budgets
    are not serialised into every key; :attr:`array` is the vector itself (read-only).
    Two equal vectors give equal strings, hence the same cached release.

    Examples
    --------
    >>> v = PrivacyVector([0.5, 0.1, 1.0])
    >>> v == PrivacyVector([0.5, 0.1, 1.0]), v.order.tolist()
    (True, [1, 0, 2])
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


def check_budgets(value, n: int) -> PrivacyVector:
    """The privacy vector of a release: one finite budget > 0 per record of the table (``n``).

    A :class:`PrivacyVector` is checked once (it is read-only); an array becomes one; a digest
    string alone is refused (a stored release's parameters hold only the digest).

    Examples
    --------
    >>> check_budgets([0.1, 1.0], 2)
    'privacy-vector:2:...'
    """
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


def check_edges(bins, value_range) -> np.ndarray:
    """Public bin edges: ``bins`` edges themselves, or a number of equal bins over the public
    ``value_range`` (never read from the data).

    Examples
    --------
    >>> check_edges(4, (0.0, 1.0)).tolist()
    [0.0, 0.25, 0.5, 0.75, 1.0]
    """
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


# --------------------------------------------------------------------------------------------
# Plans: public, a function of the privacy vector and the parameters; computed once per
# parameter set and reused by the cost, the run and later releases with other thresholds of
# the other methods. The vector is sorted once (PrivacyVector.order), whatever the method and
# the cap.
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

    Examples
    --------
    >>> import numpy as np
    >>> p = PersonalizedHistogramParams.validate(
    ...     {"epsilon": 1.0, "budgets": np.array([0.1, 0.1, 1.0, 1.0]), "bins": [0.0, 1.0],
    ...      "method": "minimum"}, (4, 2))
    >>> release_plan(p).enjoyed.tolist()
    [0.1, 0.1, 0.1, 0.1]
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


# -- the checks of the fields below (each names its parameter) ---------------------------------
def _cap(value, ctx: Context) -> float:
    if value is NOT_GIVEN:
        raise KeyError("epsilon")  # the door: "needs the parameter epsilon="
    return check_epsilon(value, "epsilon (the cap)")


def _budgets(value, ctx: Context) -> PrivacyVector:
    if value is NOT_GIVEN:
        raise ValueError(
            "'personalized_histogram' needs budgets= : the public privacy vector (normally the "
            "table's budget column), one budget per record"
        )
    return check_budgets(value, ctx.n)


_method = one_of("method", METHOD_LABELS, shown=list, strings_only=True)


def _as_given(value, ctx: Context):
    return value


def _edges(value, ctx: Context) -> np.ndarray:
    return check_edges(value, ctx.values["value_range"])


def _threshold(value, ctx: Context) -> float | None:
    return None if value is None else check_epsilon(value, "threshold")


def _positive_int(name: str):
    def check(value, ctx: Context) -> int:
        return check_positive_int(value, name)
    return check


def _optional_int(name: str):
    def check(value, ctx: Context) -> int | None:
        return None if value is None else check_positive_int(value, name)
    return check


_ensemble = one_of("ensemble", lambda: _ENSEMBLES, shown=list)


def _decided(values: Mapping[str, Any]) -> bool:
    return False  # decided by the plan, never a request's parameter


class PersonalizedHistogramParams(Params, mechanism="personalized_histogram"):
    """``"personalized_histogram"``: a histogram under personalized DP (Li 2017, Ch. 5), by
    Minimum, Threshold, Sampling (Jorgensen, Yu & Cormode 2015), privacy-aware partitioning
    (Li 2017, Alg. 10), utility-based partitioning (Alg. 11) or Alaggan, Gambs & Kermarrec 2016's
    weighting.

    The table is ``[value, budget]``; its size is public, and so is the privacy vector
    ``budgets`` this release honours. Once every field is checked the public plan
    (:func:`release_plan`) decides ``threshold`` (the ε_T in force, or None) and ``charge``
    (the largest per-record loss, what the ledger is charged); an infeasible plan is refused
    here, before anything is read or charged.

    Examples
    --------
    >>> import numpy as np
    >>> PersonalizedHistogramParams.validate(
    ...     {"epsilon": 1.0, "budgets": np.ones(10), "bins": [0.0, 1.0], "rounds": 2,
    ...      "ensemble": "sum"}, (10, 2))
    Traceback (most recent call last):
        ...
    ValueError: ensemble='sum' adds the round-1 partitions; use rounds=1 (or 'weighted')
    """

    epsilon: float = param(NOT_GIVEN, check=_cap, control=Epsilon(),
                           label="ε cap (most any record spends)",
                           doc="a cap: the most any one record may spend in this release")
    budgets: PrivacyVector = param(NOT_GIVEN, check=_budgets,
                                   doc="the public privacy vector, one budget per record")
    method: str = param("utility", check=_method, label="mechanism",
                        control=Choice(tuple(METHOD_LABELS.items())),
                        doc="how the records are partitioned or weighted")
    value_range: tuple[float, float] | None = param(
        None, check=_as_given, canonical=False,  # it becomes the edges of ``bins``
        doc="with a number of bins: the public range they cover")
    bins: np.ndarray = param(None, check=_edges,
                             doc="public bin edges, or a number of bins over value_range")
    threshold: float | None = param(None, check=_threshold, label="ε_T (sampling threshold)",
                                    control=Range(0.0, 1.0, 0.005),
                                    doc="ε_T of Sampling / Threshold (default: the mean budget)")
    rounds: int = param(1, check=_positive_int("rounds"), label="T rounds (Li 2017, §5.2.3)",
                        control=Range(1, 4, 1, integer=True),
                        doc="T-round partitioning: the left-over budgets partitioned again")
    ensemble: str = param("weighted", check=_ensemble,
                          doc="how the releases combine: inverse-variance weights, or a sum")
    min_size: int | None = param(None, check=_optional_int("min_size"),
                                 doc="the smallest partition (default: the engine's)")
    max_partitions: int | None = param(None, check=_optional_int("max_partitions"),
                                       doc="the most partitions (default: the engine's)")
    max_groups: int = param(1024, check=_positive_int("max_groups"),
                            doc="candidate cuts of the partitioning dynamic programme")
    charge: float = param(None, when=_decided,
                          doc="decided by the plan: the largest per-record loss, charged")

    @classmethod
    def precheck(cls, request: Mapping[str, Any], shape: Any) -> None:
        """The table must be ``[value, budget]``: refused before any parameter is read."""
        if len(shape) != 2 or shape[1] != 2:
            raise ValueError(
                f"'personalized_histogram' runs on a table of two columns [value, budget], one "
                f"row per record; this dataset has shape {tuple(shape)}"
            )

    def check(self, shape: Any) -> None:
        """``ensemble="sum"`` adds the round-1 partitions: one round only."""
        if self.ensemble == "sum" and self.rounds > 1:
            raise ValueError("ensemble='sum' adds the round-1 partitions; use rounds=1 (or "
                             "'weighted')")

    def decide(self, shape: Any) -> dict:
        """The public plan: it raises ``ValueError`` on an infeasible plan (nothing charged
        yet) and decides ``threshold`` and ``charge``."""
        plan = release_plan(self.as_dict())
        return {"threshold": None if plan.threshold is None else float(plan.threshold),
                "charge": float(np.max(plan.enjoyed))}
