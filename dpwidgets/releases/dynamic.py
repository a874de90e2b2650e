"""Session mechanisms for dynamic histogram release (Li 2017, Ch. 4).

A dataset here is a *series* of histogram snapshots: an ``(N, U)`` array of whole counts, one
row per time point (:class:`dpwidgets.datasets.DynamicSeries` ``.histograms``), added with
:meth:`dpwidgets.Session.add_dataset` and a public stand-in of the same shape
(:func:`dynamic_stand_in` makes one from the public shape and snapshot size alone).

Mechanisms (``session.release(dataset, name, epsilon=..., ...)``):

=====================  ====================================================  ===================
name                   engine (:mod:`dpwidgets.engine.dynamic`)              charged
=====================  ====================================================  ===================
``"dsat"``             :func:`~dpwidgets.engine.dynamic.dsat` (Li 2017, Alg. 8)    ``epsilon``
``"dsft"``             :func:`~dpwidgets.engine.dynamic.dsft` (Li 2017, Alg. 7)    ``epsilon``
``"dsat_w_event"``     :func:`~dpwidgets.engine.dynamic.dsat_w_event`         ``epsilon·⌈N/w⌉``
                       (Li 2017, Alg. 9)
``"dynamic_fixed"``    :func:`~dpwidgets.engine.dynamic.fixed_sampling_release`  ``epsilon``
``"dynamic_uniform"``  :func:`~dpwidgets.engine.dynamic.uniform_budget_release`  ``epsilon``
                       (ε/N per snapshot)
``"dynamic_bd"``       :func:`~dpwidgets.engine.dynamic.budget_distribution_release`  ``epsilon·⌈N/w⌉``
``"dynamic_ba"``       :func:`~dpwidgets.engine.dynamic.budget_absorption_release`    ``epsilon·⌈N/w⌉``
=====================  ====================================================  ===================

``"dsat"`` takes ``variant="paced"`` (the engine's default: a threshold steered by the release
count's lag behind the schedule ``C t/N``, distance to the true snapshot at the last release) or
``variant="text"`` (Li 2017, Alg. 8 as printed: the P term of eqs. 4.2.2-4.2.5 with ``delta`` and
``theta``); only the parameters the chosen variant uses enter the release's cache key. ``k``,
``decision_ratio``, ``reference`` and ``gain`` default to the engine's rules (``None``).

Neighbours and what the ledger is charged
-----------------------------------------
The ledger of a series dataset is kept at *user level* (Li 2017, Def. 4.1.1): two series are
neighbours when one user is added or removed with all of their occurrences. The user-level
mechanisms are ``epsilon``-DP under it and are charged ``epsilon``. The w-event mechanisms are
``epsilon``-DP for every window of ``w`` consecutive snapshots (Li 2017, Def. 4.1.3); a user present
in all N snapshots spans ``⌈N/w⌉`` disjoint windows, and changing them one window at a time is a
chain of ``⌈N/w⌉`` w-event neighbours, so the user-level guarantee is ``epsilon·⌈N/w⌉`` (group
privacy over the chain) -- that is what the ledger is charged (``epsilon`` when ``w >= N``).
The issue's "cost = ε" holds for the user-level mechanisms; for the w-event ones ``epsilon`` is
the per-window budget and charging it alone would understate the loss.

The public snapshot size
------------------------
The distance-based samplers compare the normalised L1 distance, whose sensitivity is
``Delta = 2/(n-1)`` for a *public* lower bound ``n`` on the snapshot sizes (Li 2017, Lemma 4.2.1).
The engine can read ``n`` off the data; a session cannot let it (that number would be
confidential), so ``"dsat"``, ``"dsft"`` and ``"dsat_w_event"`` require ``cardinality=n``. A series
with a snapshot of fewer than ``n - 1`` records is refused by the engine before anything is
charged; that refusal says only that the declared public fact is false.

Outputs
-------
Only the DP output leaves the session (:func:`dynamic_outputs`): the new private histograms at
the release points (``histograms``, shape ``(k, U)``: the series repeats them in between,
:func:`expand_releases` rebuilds the ``(N, U)`` series), the release flags, the budget of each
release, the threshold trajectory and the budget split. The threshold trajectory is public:
DSFT's is the constant ``T`` the user chose; DSAT's ``T_i`` is computed from the public
release count only (Li 2017, eq. 4.2.5, the specification erratum), i.e. post-processing of the release flags.
The secret offset ``rho`` of the SVT decisions (the text's noisy threshold ``T~ = T + Lap``) is
never in the engine's result and so never in an output; neither are the distances, noisy or
true.

References
----------
Li 2017, Ch. 4 (§4.1-4.5; Alg. 7, 8, 9; Lemma 4.2.1; Thms 4.2.1, 4.2.2, 4.3.4; Table 4.2).
Kellaris, Papadopoulos, Xiao, Papadias 2014 (w-event privacy, BD, BA).
"""

from __future__ import annotations

import math
from numbers import Real

import numpy as np

from ..engine.validation import check_epsilon, check_positive_int
from ..mechanism import Fact, Mechanism, integer_at_least, register_mechanism
from ..persistence.store import plain as _plain
from ._common import publisher_is_private

__all__ = [
    "DYNAMIC_MECHANISMS",
    "USER_LEVEL",
    "W_EVENT",
    "dynamic_outputs",
    "dynamic_stand_in",
    "expand_releases",
    "user_level_factor",
]

#: Mechanisms whose guarantee is user level (charged ``epsilon``).
USER_LEVEL = ("dsat", "dsft", "dynamic_fixed", "dynamic_uniform")
#: Mechanisms whose guarantee is w-event (charged ``epsilon * ceil(N / w)``).
W_EVENT = ("dsat_w_event", "dynamic_bd", "dynamic_ba")

#: Keys of ``DynamicRelease.details`` that are public (functions of the parameters, the public
#: shape and the release flags) and may leave the session. Anything else stays behind.
_PUBLIC_DETAILS = (
    "k", "epsilon1", "epsilon2", "sensitivity", "cardinality", "release_scale", "svt_c",
    "threshold_scale", "query_scale", "initial_threshold", "burn_in", "delta", "theta",
    "instance_epsilon", "instances", "dissimilarity_epsilon", "dissimilarity_scale",
    "k_rule", "decision_ratio", "reference", "variant", "gain", "schedule_threshold",
    "noise_floor", "publisher_rule", "publisher_note",
)


def _engine():
    from ..engine import dynamic

    return dynamic


# --------------------------------------------------------------------------------------------
# Validation: every check runs on the parameters and the public shape only, before anything
# is drawn or charged; the canonical dict spells out every default (one cache key per release).
# --------------------------------------------------------------------------------------------
def _real(value, name: str, lo: float, hi: float, *, lo_open: bool = False,
          hi_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    value = float(value)
    if (value < lo or (lo_open and value == lo)) or (value > hi or (hi_open and value == hi)):
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        raise ValueError(f"{name} must be in {left}{lo:g}, {hi:g}{right}, got {value!r}")
    return value


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not (0 < float(value) < math.inf):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _series_shape(shape: tuple, mechanism: str, min_times: int) -> tuple[int, int]:
    if len(shape) != 2:
        raise ValueError(f"{mechanism!r} runs on an (N, U) series of histograms, got shape {shape}")
    n_times, n_bins = (int(s) for s in shape)
    if n_times < min_times:
        raise ValueError(
            f"{mechanism!r} needs at least {min_times} snapshots (rows), the series has {n_times}"
        )
    if n_bins < 1:
        raise ValueError(f"{mechanism!r} needs at least one bin per snapshot, got shape {shape}")
    return n_times, n_bins


def _publisher(p: dict) -> str:
    """A registry name, or ``"auto"``: the engine picks by the public ``shape``
    (:data:`~dpwidgets.engine.dynamic.PUBLISHER_RULE`; a function of public parameters)."""
    from ..engine.histograms import PUBLISHERS

    name = p.pop("publisher", "identity")
    if name == "auto":
        return name
    if not isinstance(name, str) or name not in PUBLISHERS:
        raise ValueError(f"publisher must be 'auto' or one of {sorted(PUBLISHERS)}, got {name!r}")
    if 1 not in PUBLISHERS[name].dims:
        raise ValueError(f"publisher {name!r} does not publish 1-D histograms")
    return PUBLISHERS[name].name


def _shape(p: dict, n_bins: int) -> tuple[int, ...] | None:
    """The public attribute domains of one snapshot (product U), or None (not given)."""
    shape = p.pop("shape", None)
    if shape is None:
        return None
    if isinstance(shape, str | bytes) or not isinstance(shape, tuple | list):
        raise ValueError(f"shape must be a tuple of positive integers, got {shape!r}")
    dims = tuple(check_positive_int(d, "shape") for d in shape)
    if not dims or math.prod(dims) != n_bins:
        raise ValueError(f"shape {dims} has {math.prod(dims)} cells, but the snapshots have "
                         f"{n_bins} bins")
    return dims


def _cutoff(p: dict, limit: int, what: str) -> int:
    cutoff = p.pop("cutoff", None)
    fraction = p.pop("cutoff_fraction", None)
    if cutoff is not None and fraction is not None:
        raise ValueError("give cutoff= (C) or cutoff_fraction= (C/N), not both")
    if fraction is not None:
        fraction = _real(fraction, "cutoff_fraction", 0.0, 1.0, lo_open=True)
        return max(1, int(round(fraction * limit)))
    if cutoff is None:
        return max(1, int(round(0.01 * limit)))  # Li 2017, Table 4.2: C = 0.01 N
    cutoff = check_positive_int(cutoff, "cutoff")
    if cutoff > limit:
        raise ValueError(f"cutoff (C) must be between 1 and {what} = {limit}, got {cutoff}")
    return cutoff


def _cardinality(p: dict, mechanism: str) -> int:
    if p.get("cardinality") is None:
        p.pop("cardinality", None)
        raise ValueError(
            f"{mechanism!r} needs cardinality= : the public lower bound n on the snapshot sizes "
            f"(the distance's sensitivity is 2/(n-1), Li 2017, Lemma 4.2.1); it is not read off "
            f"the data"
        )
    return check_positive_int(p.pop("cardinality"), "cardinality", minimum=2)


def _burn_in(p: dict, limit: int, what: str) -> int:
    burn_in = p.pop("burn_in", None)
    if burn_in is None:
        return max(1, int(round(0.02 * limit)))
    burn_in = check_positive_int(burn_in, "burn_in")
    if burn_in >= max(limit, 2):
        raise ValueError(f"burn_in (M) must be in [1, {what}) with {what} = {limit}, got {burn_in}")
    return burn_in


def _k(p: dict) -> float | None:
    """``None``: the engine's rule (Thm 4.3.4 for DSFT and the text's DSAT, ``paced_k`` for the
    paced DSAT, 0 when C = 1). Not filled in here, so the rule stays the engine's."""
    k = p.pop("k", None)
    if k is None:
        return None
    return _real(k, "k (the decision share eps1 = k*eps)", 0.0, 1.0, lo_open=True, hi_open=True)


def _optional_positive(p: dict, name: str) -> float | None:
    value = p.pop(name, None)
    return None if value is None else _positive(value, name)


def _reference(p: dict) -> str | None:
    reference = p.pop("reference", None)
    if reference is not None and reference not in ("release", "snapshot"):
        raise ValueError(
            f"reference must be 'release' (distance to the last private release) or 'snapshot' "
            f"(to the true snapshot at the last release time), got {reference!r}"
        )
    return reference


def _variant(p: dict) -> str:
    variants = getattr(_engine(), "DSAT_VARIANTS", {"text": ""})
    variant = p.pop("variant", "paced" if "paced" in variants else "text")
    if variant not in variants:
        raise ValueError(f"variant must be one of {sorted(variants)}, got {variant!r}")
    return variant


def _w(p: dict) -> int:
    if p.get("w") is None:
        p.pop("w", None)
        raise ValueError("a w-event mechanism needs w= (the window length, an integer >= 1)")
    return check_positive_int(p.pop("w"), "w", maximum=_engine().MAX_WINDOW)


def _unknown(p: dict, mechanism: str) -> None:
    if p:
        raise ValueError(f"unknown parameter(s) for {mechanism!r}: {sorted(p)}")


def _sampling_validate(mechanism: str, adaptive: bool):
    def validate(params: dict, shape: tuple) -> dict:
        p = dict(params)
        n_times, n_bins = _series_shape(shape, mechanism, 2)
        out: dict = {"epsilon": check_epsilon(p.pop("epsilon")), "n_times": n_times}
        out["cutoff"] = _cutoff(p, n_times, "N")
        if adaptive:
            out["variant"] = _variant(p)
            out["threshold"] = _real(p.pop("threshold", 0.5), "threshold", 0.0, 2.0)
            out["burn_in"] = _burn_in(p, n_times, "N")
            delta = _positive(p.pop("delta", 0.05), "delta")
            theta = _positive(p.pop("theta", 0.5), "theta")
            gain = _optional_positive(p, "gain")
            # Only the parameters the variant uses enter the canonical dict (and the cache key):
            # moving θ under the paced controller is the same release, replayed for free.
            if out["variant"] == "text":
                out["delta"], out["theta"] = delta, theta
            else:
                out["gain"] = gain
        else:
            if p.get("threshold") is None:
                raise ValueError("'dsft' needs threshold= (T in [0, 2]; about 0.025 was best on "
                                 "the text's US data, Li 2017, Fig. 4.3)")
            out["threshold"] = _real(p.pop("threshold"), "threshold", 0.0, 2.0)
        out["cardinality"] = _cardinality(p, mechanism)
        out["k"] = _k(p)
        out["publisher"] = _publisher(p)
        out["shape"] = _shape(p, n_bins)
        out["decision_ratio"] = _optional_positive(p, "decision_ratio")
        out["reference"] = _reference(p)
        _unknown(p, mechanism)
        return out

    return validate


def _dsat_w_validate(params: dict, shape: tuple) -> dict:
    p = dict(params)
    n_times, n_bins = _series_shape(shape, "dsat_w_event", 2)
    out: dict = {"epsilon": check_epsilon(p.pop("epsilon")), "n_times": n_times, "w": _w(p)}
    out["cutoff"] = _cutoff(p, out["w"], "w")
    out["threshold"] = _real(p.pop("threshold", 0.5), "threshold", 0.0, 2.0)
    out["burn_in"] = _burn_in(p, out["w"], "w")
    out["delta"] = _positive(p.pop("delta", 0.05), "delta")
    out["theta"] = _positive(p.pop("theta", 0.5), "theta")
    out["cardinality"] = _cardinality(p, "dsat_w_event")
    out["k"] = _k(p)
    out["publisher"] = _publisher(p)
    out["shape"] = _shape(p, n_bins)
    _unknown(p, "dsat_w_event")
    return out


def _baseline_validate(mechanism: str, cutoff: bool):
    """The validator of a dynamic baseline: ε/N per snapshot, or fixed sampling (``cutoff``)."""

    def validate(params: dict, shape: tuple) -> dict:
        p = dict(params)
        n_times, n_bins = _series_shape(shape, mechanism, 1)
        out = {"epsilon": check_epsilon(p.pop("epsilon")), "n_times": n_times}
        if cutoff:
            out["cutoff"] = _cutoff(p, n_times, "N")
        out["publisher"] = _publisher(p)
        out["shape"] = _shape(p, n_bins)
        _unknown(p, mechanism)
        return out

    return validate


_fixed_validate = _baseline_validate("dynamic_fixed", cutoff=True)
_uniform_validate = _baseline_validate("dynamic_uniform", cutoff=False)


def _kellaris_validate(mechanism: str):
    def validate(params: dict, shape: tuple) -> dict:
        p = dict(params)
        n_times, n_bins = _series_shape(shape, mechanism, 1)
        out = {"epsilon": check_epsilon(p.pop("epsilon")), "n_times": n_times, "w": _w(p),
               "publisher": _publisher(p), "shape": _shape(p, n_bins)}
        _unknown(p, mechanism)
        return out

    return validate


# --------------------------------------------------------------------------------------------
# Running the engine and extracting the DP output
# --------------------------------------------------------------------------------------------
def _given(p: dict, *names: str) -> dict:
    """The optional engine arguments that were given (the engine's defaults otherwise)."""
    return {name: p[name] for name in names if p.get(name) is not None}


def _run_dsat(series: np.ndarray, p: dict, rng: np.random.Generator):
    extra = _given(p, "decision_ratio", "reference", "gain", "delta", "theta")
    if "variant" in (_engine().dsat.__kwdefaults__ or {}):
        extra["variant"] = p["variant"]
    return _engine().dsat(
        series, p["epsilon"], p["cutoff"], rng, threshold=p["threshold"], burn_in=p["burn_in"],
        k=p["k"], cardinality=p["cardinality"], publisher=p["publisher"], shape=p["shape"],
        **extra,
    )


def _run_dsft(series: np.ndarray, p: dict, rng: np.random.Generator):
    return _engine().dsft(
        series, p["epsilon"], p["cutoff"], p["threshold"], rng, k=p["k"],
        cardinality=p["cardinality"], publisher=p["publisher"], shape=p["shape"],
        **_given(p, "decision_ratio", "reference"),
    )


def _run_dsat_w(series: np.ndarray, p: dict, rng: np.random.Generator):
    return _engine().dsat_w_event(
        series, p["epsilon"], p["w"], p["cutoff"], rng, threshold=p["threshold"],
        burn_in=p["burn_in"], delta=p["delta"], theta=p["theta"], k=p["k"],
        cardinality=p["cardinality"], publisher=p["publisher"], shape=p["shape"],
    )


def _run_fixed(series: np.ndarray, p: dict, rng: np.random.Generator):
    return _engine().fixed_sampling_release(series, p["epsilon"], p["cutoff"], rng,
                                            publisher=p["publisher"], shape=p["shape"])


def _run_uniform(series: np.ndarray, p: dict, rng: np.random.Generator):
    return _engine().uniform_budget_release(series, p["epsilon"], rng, publisher=p["publisher"],
                                            shape=p["shape"])


def _run_bd(series: np.ndarray, p: dict, rng: np.random.Generator):
    return _engine().budget_distribution_release(series, p["epsilon"], p["w"], rng,
                                                 publisher=p["publisher"], shape=p["shape"])


def _run_ba(series: np.ndarray, p: dict, rng: np.random.Generator):
    return _engine().budget_absorption_release(series, p["epsilon"], p["w"], rng,
                                               publisher=p["publisher"], shape=p["shape"])


def dynamic_outputs(result, p: dict | None = None) -> dict:
    """The DP output of a :class:`~dpwidgets.engine.dynamic.DynamicRelease`, and nothing else.

    Returns the dict (``p``, the validated parameters, is unused: the spec's ``outputs``
    signature):

        ``histograms`` (k, U): the new private histograms, in time order; ``release_points``
        (N,) bool; ``release_epsilons`` (N,): the budget of each release (0 elsewhere);
        ``thresholds`` (N,): the public threshold trajectory (NaN for the methods without
        one); ``n_releases``, ``n_bins``, ``epsilon`` (the mechanism's budget: per window for
        w-event), ``epsilon_parts``, ``window_epsilons`` (w-event only), ``method``,
        ``guarantee``, ``neighbours``, ``details`` (public settings: k, noise scales, ...).

    Notes
    -----
    Every value is a DP output or a function of the parameters, the public shape and the
    release flags (post-processing): the release budgets and the DSAT threshold trajectory
    depend on the data only through the release count. The SVT's secret threshold offset is
    not in the engine's result; no distance and no true count is.
    """
    points = np.asarray(result.release_points, dtype=bool)
    # The k new histograms (read-only; the engine's (N, U) series repeats them in between and
    # is never built here).
    histograms = np.asarray(result.release_histograms, dtype=float)
    out = {
        "histograms": histograms,
        "release_points": points.copy(),
        "release_epsilons": np.asarray(result.release_epsilons, dtype=float).copy(),
        "thresholds": np.asarray(result.thresholds, dtype=float).copy(),
        "n_releases": int(points.sum()),
        "n_bins": int(histograms.shape[1]),
        "epsilon": float(result.epsilon),
        "epsilon_parts": {k: float(v) for k, v in result.epsilon_parts.items()},
        "method": str(result.method),
        "guarantee": str(result.guarantee),
        "neighbours": str(result.neighbours),
        "details": {k: _plain(v) for k, v in result.details.items() if k in _PUBLIC_DETAILS},
    }
    if result.window_epsilons is not None:
        out["window_epsilons"] = np.asarray(result.window_epsilons, dtype=float).copy()
    return out


def expand_releases(output: dict) -> np.ndarray:
    """The released ``(N, U)`` series from a :func:`dynamic_outputs` dict (post-processing).

    Row ``i`` is the last private histogram released at or before time ``i``; rows before the
    first release (BD/BA may wait) are zeros, as in the engine.
    """
    points = np.asarray(output["release_points"], dtype=bool)
    rows = np.asarray(output["histograms"], dtype=float).reshape(-1, int(output["n_bins"]))
    if rows.shape[0] != int(points.sum()):
        raise ValueError(
            f"output holds {rows.shape[0]} histograms for {int(points.sum())} release points"
        )
    index = np.cumsum(points) - 1
    padded = np.vstack([rows, np.zeros((1, rows.shape[1]))])  # index -1: nothing released yet
    return padded[index]


def user_level_factor(n_times: int, w: int) -> int:
    """``⌈N/w⌉``: the user-level cost of a w-event release, in units of its ``epsilon``."""
    n_times = check_positive_int(n_times, "n_times")
    w = check_positive_int(w, "w")
    return -(-n_times // w)


def dynamic_stand_in(
    n_times: int,
    n_bins: int,
    cardinality: int,
    *,
    n_periods: int = 10,
    seed: int = 0,
) -> np.ndarray:
    """A public stand-in series ``(N, U)`` that depends on nothing but the public shape and n.

    A smooth random distribution over the bins drifts towards a fresh random one in each of
    ``n_periods`` periods, at a rate that differs by period (some periods nearly static, some
    busy, as in Li 2017, §4.5.1's update model); every snapshot is a Poisson sample of about
    ``cardinality`` records, topped up to at least ``cardinality``. Seeded (``seed``), so a preview on it is reproducible and says
    nothing about any confidential series.

    Parameters
    ----------
    n_times, n_bins : int
        The public shape (N, U).
    cardinality : int
        The public snapshot size n (each row sums to it).
    n_periods : int
        Number of periods of different drift rates (at most N).
    seed : int
        Seed of the stand-in's own generator.

    Returns
    -------
    numpy.ndarray of float, shape (N, U)
        Whole counts.
    """
    n_times = check_positive_int(n_times, "n_times")
    n_bins = check_positive_int(n_bins, "n_bins")
    cardinality = check_positive_int(cardinality, "cardinality")
    n_periods = min(check_positive_int(n_periods, "n_periods"), n_times)
    rng = np.random.default_rng(seed)

    def smooth(size: int) -> np.ndarray:
        raw = rng.gamma(0.6, 1.0, size)
        kernel = np.ones(min(5, size)) / min(5, size)
        out = np.convolve(raw, kernel, mode="same") + 1e-3
        return out / out.sum()

    targets = np.stack([smooth(n_bins) for _ in range(n_periods + 1)])
    rates = rng.choice([0.0, 0.002, 0.02, 0.1], size=n_periods)
    period = np.minimum(np.arange(n_times) * n_periods // n_times, n_periods - 1)
    step = rates[period]  # the share moved towards the period's target at each time point
    dist = np.empty((n_times, n_bins))
    current = targets[0]
    for t in range(n_times):  # inherently sequential, a tiny body
        current = (1.0 - step[t]) * current + step[t] * targets[period[t] + 1]
        dist[t] = current
    # Poisson sampling noise (a multinomial per snapshot is far slower at this size), then
    # the shortfall below n, if any, added to each snapshot's largest cell: every row holds at
    # least n records, as the public size promises.
    counts = rng.poisson(cardinality * dist / dist.sum(axis=1, keepdims=True)).astype(float)
    short = np.maximum(cardinality - counts.sum(axis=1), 0.0)
    counts[np.arange(n_times), counts.argmax(axis=1)] += short
    return counts


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------
def _w_cost(p: dict) -> float:
    # The user-level charge must itself be a budget the ledger and engine accept.
    return check_epsilon(p["epsilon"] * user_level_factor(p["n_times"], p["w"]),
                         "epsilon * ceil(N / w) (the user-level charge)")


def _w_note(p: dict) -> str:
    factor = user_level_factor(p["n_times"], p["w"])
    return f"ε = {p['epsilon']:.3g} per window of w = {p['w']}, {factor}·ε at user level"


def _k_note(p: dict) -> str:
    return "k auto" if p["k"] is None else f"k = {p['k']:.3g}"


def _dsat_label(p: dict) -> str:
    if p["variant"] == "text":
        name = "DSAT (Li 2017, Alg. 8 as printed)"
        steer = f", δ = {p['delta']:g}, θ = {p['theta']:g}"
    else:
        name = f"DSAT ({p['variant']} controller; Li 2017, Alg. 8)"
        steer = "" if p.get("gain") is None else f", gain = {p['gain']:g}"
    return (f"{name}: C = {p['cutoff']}, T = {p['threshold']:g}{steer}, M = {p['burn_in']}, "
            f"{_k_note(p)}")


def _holds_cardinality(series: np.ndarray, n) -> bool:
    """Whether every snapshot holds at least ``n - 1`` records (Li 2017, Lemma 4.2.1)."""
    return bool(np.asarray(series).sum(axis=1).min() >= float(n) - 1)


#: The public lower bound n on the snapshot sizes is a fact about the data: declared by the
#: data owner (``facts={"cardinality": n}``); an analyst may only claim a smaller one (more noise).
_FACTS = {"cardinality": Fact("at_most", None, check=_holds_cardinality,
                              kind=integer_at_least(2))}
_USER = "one user added or removed with all of their occurrences (user level)"
_W = ("one user added or removed within any window of w snapshots (w-event); a user present "
      "throughout spans ceil(N/w) windows, which the charge covers")

def _series_mechanism(name: str, validate, run, label, **spec) -> Mechanism:
    """A mechanism on an (N, U) series: a table, the DP output of :func:`dynamic_outputs`, DP
    only with a DP publisher."""
    return Mechanism(name, validate, run, dynamic_outputs, label, table=True,
                     private=publisher_is_private, **spec)


DYNAMIC_MECHANISMS: dict[str, Mechanism] = {
    "dsat": _series_mechanism(
        "dsat", _sampling_validate("dsat", adaptive=True), _run_dsat, _dsat_label,
        facts=_FACTS, neighbours=_USER),
    "dsft": _series_mechanism(
        "dsft", _sampling_validate("dsft", adaptive=False), _run_dsft,
        lambda p: f"DSFT (Li 2017, Alg. 7): C = {p['cutoff']}, T = {p['threshold']:g}, "
                  f"{_k_note(p)}", facts=_FACTS, neighbours=_USER),
    "dsat_w_event": _series_mechanism(
        "dsat_w_event", _dsat_w_validate, _run_dsat_w,
        lambda p: f"w-event DSAT (Li 2017, Alg. 9): C = {p['cutoff']} per window, {_w_note(p)}",
        cost=_w_cost, facts=_FACTS, neighbours=_W),
    "dynamic_fixed": _series_mechanism(
        "dynamic_fixed", _fixed_validate, _run_fixed,
        lambda p: f"fixed sampling (Li 2017, §4.1.4): C = {p['cutoff']} releases of ε/C",
        neighbours=_USER),
    "dynamic_uniform": _series_mechanism(
        "dynamic_uniform", _uniform_validate, _run_uniform,
        lambda p: f"baseline (Li 2017, §4.1.4): every snapshot with ε/N, N = {p['n_times']}",
        neighbours=_USER),
    "dynamic_bd": _series_mechanism(
        "dynamic_bd", _kellaris_validate("dynamic_bd"), _run_bd,
        lambda p: f"BD, budget distribution (Kellaris et al.): {_w_note(p)}",
        cost=_w_cost, neighbours=_W),
    "dynamic_ba": _series_mechanism(
        "dynamic_ba", _kellaris_validate("dynamic_ba"), _run_ba,
        lambda p: f"BA, budget absorption (Kellaris et al.): {_w_note(p)}",
        cost=_w_cost, neighbours=_W),
}
"""The dynamic-histogram mechanisms, by session name (all registered on import)."""

for _mechanism in DYNAMIC_MECHANISMS.values():
    register_mechanism(_mechanism)
