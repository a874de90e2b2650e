"""Session mechanisms for dynamic histogram release (Li 2017, Ch. 4).

A dataset here is a *series* of histogram snapshots: an ``(N, U)`` array of whole counts, one
row per time point (:class:`dpwidgets.datasets.DynamicSeries` ``.histograms``), added with
:meth:`dpwidgets.Session.add_dataset` and a public stand-in of the same shape
(:func:`~dpwidgets.families.dynamic.standins.dynamic_stand_in` makes one from the public shape
and snapshot size alone). The parameters of each mechanism, their defaults and checks, are its
object in :mod:`~dpwidgets.families.dynamic.params`.

Mechanisms (``session.release(dataset, name, epsilon=..., ...)``):

=====================  =============================================================  =================
name                   engine (:mod:`dpwidgets.engine.dynamic`)                       charged
=====================  =============================================================  =================
``"dsat"``             :func:`~dpwidgets.engine.dynamic.dsat` (Li 2017, Alg. 8)       ``epsilon``
``"dsft"``             :func:`~dpwidgets.engine.dynamic.dsft` (Li 2017, Alg. 7)       ``epsilon``
``"dsat_w_event"``     :func:`~dpwidgets.engine.dynamic.dsat_w_event`                 ``epsilon·⌈N/w⌉``
                       (Li 2017, Alg. 9)
``"dynamic_fixed"``    :func:`~dpwidgets.engine.dynamic.fixed_sampling_release`       ``epsilon``
``"dynamic_uniform"``  :func:`~dpwidgets.engine.dynamic.uniform_budget_release`       ``epsilon``
                       (ε/N per snapshot)
``"dynamic_bd"``       :func:`~dpwidgets.engine.dynamic.budget_distribution_release`  ``epsilon·⌈N/w⌉``
``"dynamic_ba"``       :func:`~dpwidgets.engine.dynamic.budget_absorption_release`    ``epsilon·⌈N/w⌉``
=====================  =============================================================  =================

``"dsat"`` takes ``variant="paced"`` (the engine's default: a threshold steered by the release
count's lag behind the schedule ``C t/N``, distance to the true snapshot at the last release) or
``variant="text"`` (Li 2017, Alg. 8 as printed: the P term of eqs. 4.2.2-4.2.5 with ``delta`` and
``theta``); only the parameters the chosen variant uses enter the release's cache key. ``k``,
``decision_ratio``, ``reference`` and ``gain`` default to the engine's rules (``None``).

Examples
--------
>>> import numpy as np
>>> from dpwidgets import Session
>>> from dpwidgets.families.dynamic.spec import expand_releases
>>> from dpwidgets.families.dynamic.standins import dynamic_stand_in
>>> series = dynamic_stand_in(40, 12, 500, seed=1)
>>> s = Session(mode="teaching", seed=0)
>>> s.add_dataset("series", series, total_epsilon=5.0, facts={"cardinality": 500},
...               stand_in=dynamic_stand_in(40, 12, 500))
>>> r = s.release("series", "dsat", epsilon=1.0, cutoff=3)
>>> r.epsilon, r.output["n_releases"] <= 3, expand_releases(r.output).shape
(1.0, True, (40, 12))
>>> s.close()

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
release count only (Li 2017, eq. 4.2.5, the specification erratum), i.e. post-processing of
the release flags.
The secret offset ``rho`` of the SVT decisions (the text's noisy threshold ``T~ = T + Lap``) is
never in the engine's result and so never in an output; neither are the distances, noisy or
true.

References
----------
Li 2017, Ch. 4 (§4.1-4.5; Alg. 7, 8, 9; Lemma 4.2.1; Thms 4.2.1, 4.2.2, 4.3.4; Table 4.2).
Kellaris, Papadopoulos, Xiao, Papadias 2014 (w-event privacy, BD, BA).
"""

from __future__ import annotations

import numpy as np

from ...engine.validation import check_epsilon, check_positive_int
from ...mechanism import (
    Fact,
    Mechanism,
    integer_at_least,
    publisher_is_private,
    register_mechanism,
)
from ...persistence.store import plain as _plain
from .params import (
    BudgetAbsorptionParams,
    BudgetDistributionParams,
    DSATParams,
    DSFTParams,
    FixedSamplingParams,
    UniformBudgetParams,
    WEventDSATParams,
)

# Its old home was this module (dpwidgets.releases.dynamic, an alias of this one).
from .standins import dynamic_stand_in  # noqa: F401

__all__ = ["DYNAMIC_MECHANISMS", "USER_LEVEL", "W_EVENT", "dynamic_outputs", "expand_releases",
           "user_level_factor"]

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
    from ...engine import dynamic

    return dynamic


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

def _series_mechanism(params, run, label, **spec) -> Mechanism:
    """A mechanism on an (N, U) series: a table, the DP output of :func:`dynamic_outputs`, DP
    only with a DP publisher; its parameters are ``params`` (:mod:`~dpwidgets.families.dynamic.params`)."""
    return Mechanism(params.mechanism, params.validate, run, dynamic_outputs, label, table=True,
                     private=publisher_is_private, params=params, **spec)


DYNAMIC_MECHANISMS: dict[str, Mechanism] = {
    "dsat": _series_mechanism(DSATParams, _run_dsat, _dsat_label, facts=_FACTS,
                              neighbours=_USER),
    "dsft": _series_mechanism(
        DSFTParams, _run_dsft,
        lambda p: f"DSFT (Li 2017, Alg. 7): C = {p['cutoff']}, T = {p['threshold']:g}, "
                  f"{_k_note(p)}", facts=_FACTS, neighbours=_USER),
    "dsat_w_event": _series_mechanism(
        WEventDSATParams, _run_dsat_w,
        lambda p: f"w-event DSAT (Li 2017, Alg. 9): C = {p['cutoff']} per window, {_w_note(p)}",
        cost=_w_cost, facts=_FACTS, neighbours=_W),
    "dynamic_fixed": _series_mechanism(
        FixedSamplingParams, _run_fixed,
        lambda p: f"fixed sampling (Li 2017, §4.1.4): C = {p['cutoff']} releases of ε/C",
        neighbours=_USER),
    "dynamic_uniform": _series_mechanism(
        UniformBudgetParams, _run_uniform,
        lambda p: f"baseline (Li 2017, §4.1.4): every snapshot with ε/N, N = {p['n_times']}",
        neighbours=_USER),
    "dynamic_bd": _series_mechanism(
        BudgetDistributionParams, _run_bd,
        lambda p: f"BD, budget distribution (Kellaris et al.): {_w_note(p)}",
        cost=_w_cost, neighbours=_W),
    "dynamic_ba": _series_mechanism(
        BudgetAbsorptionParams, _run_ba,
        lambda p: f"BA, budget absorption (Kellaris et al.): {_w_note(p)}",
        cost=_w_cost, neighbours=_W),
}
"""The dynamic-histogram mechanisms, by session name (all registered on import)."""

for _mechanism in DYNAMIC_MECHANISMS.values():
    register_mechanism(_mechanism)
