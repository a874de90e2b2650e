"""Session mechanisms for counting streams (Chen 2018, Ch. 5): PeGaSus on one stream,
the Laplace baseline, and PeGaSus over a public hierarchy of aggregated states.

The parameters of each are declared once, in :mod:`~dpwidgets.families.streams.params`
(:class:`~dpwidgets.families.streams.params.PegasusParams`,
:class:`~dpwidgets.families.streams.params.LaplaceStreamParams`,
:class:`~dpwidgets.families.streams.params.HierarchicalPegasusParams`): their ``validate`` is
the spec's.

Registered names
----------------
``"pegasus"`` (1-D data: a counting stream ``c_1..c_T``)
    Chen 2018, Alg. 15: Perturber (Laplace, ε_p) + Deviation-Based Grouper (Alg. 16, ε_g); cost ε.
    Parameters: ``epsilon``; ``defaults`` (``"new"``, the default, or ``"text"``: Chen 2018,
    §5.6.1; see :data:`dpwidgets.engine.streams.DEFAULTS`), which fills the others:
    ``perturber_share`` = ε_p/ε (0.95; text 0.8), ``theta`` (the Grouper's deviation
    threshold; 160/ε_g; text 5/ε_g) and ``threshold_share`` (ε_g's part on each group's
    threshold: Lyu, Su & Li 2017's 1/(1 + 2^(2/3)); text 0.5). The output is the Perturber's
    noisy counts c̃, the Grouper's partition (as group ``boundaries``), and the estimates of
    *every* smoother (``"estimates"`` is the defaults' smoother: adaptive; text median): a
    smoother is post-processing, so there is no ``smoother`` parameter — choose one afterwards
    with :func:`estimates`, for free.
``"laplace_stream"`` (1-D)
    The baseline LM of Chen 2018, §5.6.1 (ĉ_t = c_t + Lap(1/ε)); ``k > 0`` gives BS_k (the trailing
    mean of the last k+1 Laplace outputs, post-processing). Cost ε.
``"hierarchical_pegasus"`` (2-D data: one row per state, one column per time step)
    Chen 2018, §5.5 over a *public* hierarchy of aggregations: ``method="phs_pegasus"`` (Alg. 18, with
    pruning; default), ``"hs_pegasus"`` (HS-PGS, Thm 19) or ``"hs_laplace"`` (HS-LM). Parameters:
    ``epsilon``, ``parents`` (the tree as a parent array, leaves = the data's rows in increasing
    node id; default a complete binary tree when the number of states is a power of 2),
    ``defaults``, ``smoother``, ``theta``, ``threshold_share``, and for PHS-PGS ``epsilon_pr`` (pruning budget, part of ε) and
    ``beta`` (pruning threshold). Cost ε. The output is every node's private stream and, for
    PHS-PGS, which node-steps were pruned.

Privacy
-------
Every mechanism here is ε-DP under *event-level* neighbours (Chen 2018, §5.2.3, Def. 7): two stream
prefixes differ by adding or removing one tuple (user, state, time), so one count c_t of one
state changes by 1 (and, in a hierarchy, the aggregates above it, one node per level).
``"pegasus"``: Perturber ε_p-DP (Laplace, sensitivity 1 per step) + Grouper ε_g-DP (SVT per
group, Δ(dev) = 2, Thm 17, any public threshold/test split), sequential composition (Thm 15);
θ and the shares are public and smoothing is post-processing, so both sets of defaults have
the same guarantee.
``"laplace_stream"``: Laplace with sensitivity 1 per step (parallel over steps); BS_k is
post-processing. ``"hierarchical_pegasus"``: Thm 19 (HS-PGS, HS-LM) and Thm 21 (PHS-PGS), with
the pruning step read as the Laplace mechanism with ε_pr/h per level rather than the text's
SVT argument (see :mod:`dpwidgets.engine.streams`: the text's Thm 20 does not go through for
fresh threshold noise per node). The cost charged is exactly ε in every case.

References: Chen 2018, §5.2-5.6, Alg. 15-18, Thm 15, 17, 19, 21.

What may leave the session
--------------------------
Only DP output: the estimates, the Perturber's noisy counts (ε_p-DP themselves: releasing them
costs nothing beyond ε, Thm 15), the group boundaries (the Grouper's partition is its ε_g-DP
output — the groups are formed by the sparse vector technique on noisy comparisons, and a
step's group never changes after the step), the pruning pattern (PRUNE's ε_pr-DP output), the
budget split and the guarantee. Never a true count, a deviation, or the Grouper's noisy
threshold θ̃ (SVT's secret state).

Queries by post-processing (Chen 2018, §5.4)
--------------------------------------------
Sliding-window sums (:func:`window_sums`: WSS, Alg. 17, or the sum of the estimates) and event
detections (:func:`detections`: jump/drop, low signal) are computed from a release's *output*
dict only, so every window size w and threshold δ comes from the one release: moving w or δ
spends nothing.

Every estimate at step t depends on c_1..c_t only (real time, Chen 2018, §5.2.2): releasing the whole
stream at once and revealing it step by step shows exactly what the online algorithm would
have released at each step.
"""

from __future__ import annotations

import math
from types import MappingProxyType

import numpy as np

from ...engine import streams as st
from ...mechanism import Mechanism, register_mechanism
from .params import (
    DEFAULT_PERTURBER_SHARE,
    HIERARCHY_METHODS,
    TEXT_PERTURBER_SHARE,
    HierarchicalPegasusParams,
    LaplaceStreamParams,
    PegasusParams,
    _smoother,
    hierarchy_of,
)

__all__ = ["DEFAULT_PERTURBER_SHARE", "TEXT_PERTURBER_SHARE", "HIERARCHY_METHODS",
           "STREAM_MECHANISMS", "detections", "estimates", "event_statistic", "hierarchy_of",
           "pegasus_result", "window_sums"]


# --------------------------------------------------------------------------------------------
# "pegasus": one counting stream
# --------------------------------------------------------------------------------------------
def _pegasus_run(data: np.ndarray, p: dict, rng: np.random.Generator) -> st.PegasusResult:
    # Only ε_p is passed: the engine makes ε_g the exact remainder, so ε_p + ε_g == ε.
    return st.pegasus(
        data, p["epsilon"], None, rng,
        epsilon_p=p["perturber_share"] * p["epsilon"], theta=p["theta"],
        threshold_share=p["threshold_share"], defaults=p["defaults"],
    )


def _pegasus_outputs(result: st.PegasusResult, p: dict) -> dict:
    return {
        "estimates": np.asarray(result.estimates, dtype=float),
        "smoother": result.smoother,
        "smoothed": {k: np.asarray(v, dtype=float) for k, v in result.smoothed.items()},
        "noisy": np.asarray(result.noisy, dtype=float),
        "boundaries": np.asarray(result.group_boundaries, dtype=np.int64),
        "window": np.asarray(result.window, dtype=np.int64),
        "theta": float(result.theta),
        "threshold_share": float(result.threshold_share),
        "defaults": result.defaults,
        "epsilon_parts": dict(result.epsilon_parts),
        "guarantee": result.guarantee,
    }


def _pegasus_label(p: dict) -> str:
    share = p["perturber_share"]
    text = ", text defaults" if p["defaults"] == "text" else ""
    return f"PeGaSus stream (ε_p:ε_g = {share:.2g}:{1 - share:.2g}{text})"


# --------------------------------------------------------------------------------------------
# "laplace_stream": LM / BS_k baseline
# --------------------------------------------------------------------------------------------
def _lm_run(data: np.ndarray, p: dict, rng: np.random.Generator) -> st.StreamRelease:
    if p["k"] == 0:
        return st.laplace_stream(data, p["epsilon"], rng)
    return st.backward_smoothing(data, p["epsilon"], p["k"], rng)


def _lm_outputs(result: st.StreamRelease, p: dict) -> dict:
    return {
        "estimates": np.asarray(result.estimates, dtype=float),
        "method": result.method,
        "epsilon_parts": dict(result.epsilon_parts),
        "guarantee": result.guarantee,
    }


# --------------------------------------------------------------------------------------------
# "hierarchical_pegasus": a public hierarchy over the rows of a (states × time) array
# --------------------------------------------------------------------------------------------
def _hier_run(data: np.ndarray, p: dict, rng: np.random.Generator) -> st.HierarchyResult:
    h = st.Hierarchy.from_parents(p["parents"])
    if p["method"] == "hs_laplace":
        return st.hs_laplace(data, h, p["epsilon"], rng)
    if p["method"] == "hs_pegasus":
        return st.hs_pegasus(data, h, p["epsilon"], p["smoother"], rng, theta=p["theta"],
                             threshold_share=p["threshold_share"], defaults=p["defaults"])
    return st.phs_pegasus(
        data, h, p["epsilon"], p["smoother"], rng,
        epsilon_pr=p["epsilon_pr"], beta=p["beta"], theta=p["theta"],
        threshold_share=p["threshold_share"], defaults=p["defaults"],
    )


def _hier_outputs(result: st.HierarchyResult, p: dict) -> dict:
    out = {
        "estimates": np.asarray(result.estimates, dtype=float),
        "method": result.method,
        "epsilon_parts": dict(result.epsilon_parts),
        "guarantee": result.guarantee,
    }
    if result.pruned is not None:
        out["pruned"] = np.asarray(result.pruned, dtype=bool)
    return out


def _hier_label(p: dict) -> str:
    name = HIERARCHY_METHODS[p["method"]].split(":")[0]
    return f"{name} over {len(p['parents'])} aggregated streams"


# --------------------------------------------------------------------------------------------
# Post-processing of a release's output (Chen 2018, §5.4): free
# --------------------------------------------------------------------------------------------
def pegasus_result(output: dict) -> st.PegasusResult:
    """Rebuild the engine's :class:`~dpwidgets.engine.streams.PegasusResult` from the DP output
    of a ``"pegasus"`` release (noisy counts, smoothed estimates, group boundaries), so the
    engine's post-processing (WSS, event monitors) applies to it. Uses nothing else."""
    noisy = np.asarray(output["noisy"], dtype=float)
    bounds = np.asarray(output["boundaries"], dtype=np.int64)
    if noisy.ndim != 1 or noisy.size == 0 or bounds.size == 0 or bounds[0] != 0:
        raise ValueError("output must be the output of a 'pegasus' release")
    sizes = np.diff(np.append(bounds, noisy.size))
    groups = np.repeat(np.arange(bounds.size, dtype=np.int64), sizes)
    smoothed = {k: np.asarray(v, dtype=float) for k, v in output["smoothed"].items()}
    parts = dict(output["epsilon_parts"])
    smoother = str(output.get("smoother", "median"))
    window = output.get("window")
    return st.PegasusResult(
        estimates=smoothed[smoother],
        smoothed=MappingProxyType(smoothed),
        noisy=noisy,
        groups=groups,
        group_starts=bounds[groups],
        smoother=smoother,
        theta=float(output["theta"]),
        epsilon=math.fsum(parts.values()),
        epsilon_parts=MappingProxyType(parts),
        guarantee=str(output.get("guarantee", "")),
        threshold_share=float(output.get("threshold_share", 0.5)),
        defaults=str(output.get("defaults", "text")),
        window=None if window is None else np.asarray(window, dtype=np.int64),
    )


def estimates(output: dict, smoother: str | None = None) -> np.ndarray:
    """The released estimates ĉ under ``smoother`` (default: the release's own, ``"adaptive"``
    with the new defaults, ``"median"`` with the text's; all are in the output).

    Examples
    --------
    >>> from dpwidgets.families.streams.spec import estimates
    >>> output = {"estimates": [4.0, 6.0], "smoothed": {"median": [5.0, 5.0]}}
    >>> estimates(output), estimates(output, "median")
    (array([4., 6.]), array([5., 5.]))
    """
    if smoother is None:
        return np.asarray(output["estimates"], dtype=float)
    return np.asarray(output["smoothed"][_smoother(smoother)], dtype=float)


def window_sums(output: dict, w: int, method: str = "wss", smoother: str | None = None) -> np.ndarray:
    """Sliding-window sums of width ``w`` from a ``"pegasus"`` release's output, for free.

    Parameters
    ----------
    output : dict
        ``Release.output`` of a ``"pegasus"`` release (or ``mechanism.outputs`` of a preview).
    w : int
        Window size (1 <= w <= T).
    method : {"wss", "estimates", "noisy"}
        ``"wss"``: the Window Sum Smoother (Chen 2018, Alg. 17, PGS_WSS); ``"estimates"``: the sum of
        the estimates of ``smoother`` (PGS_MS with the median); ``"noisy"``: the sum of the
        Perturber's noisy counts (per-step Laplace at ε_p).

    Notes
    -----
    Post-processing of DP output: no budget (Chen 2018, §5.4). Windows at the start are partial.

    Examples
    --------
    >>> from dpwidgets.families.streams.spec import window_sums
    >>> window_sums({"noisy": [1.0, 2.0, 3.0, 4.0]}, 2, "noisy")  # the first window is partial
    array([1., 3., 5., 7.])
    """
    if method == "wss":
        return st.window_sum_smoother(pegasus_result(output), w)
    if method == "estimates":
        return st.sliding_window_sums(estimates(output, smoother), w)
    if method == "noisy":
        return st.sliding_window_sums(np.asarray(output["noisy"], dtype=float), w)
    raise ValueError(f"method must be 'wss', 'estimates' or 'noisy', got {method!r}")


def event_statistic(released, kind: str, w: int, smoother: str | None = None) -> np.ndarray:
    """The monitored statistic per step (Chen 2018, §5.2.2), NaN where the window is incomplete.

    ``kind="jump_drop"``: ``|x_t − x_{t−w+1}|``; ``kind="low_signal"``: the window sum
    ``Σ_{i=t−w+1}^{t} x_i``. ``released`` is a ``"pegasus"`` release's output dict (then x is
    its ``smoother`` estimates, and low-signal sums come from the WSS, Chen 2018, §5.4) or any 1-D
    array of per-step values (the Perturber's noisy counts, or — teaching only — the truth).
    """
    if isinstance(released, dict):
        if kind == "low_signal":
            sums = window_sums(released, w)
        else:
            values = estimates(released, smoother)
    else:
        values = np.asarray(released, dtype=float)
        if kind == "low_signal":
            sums = st.sliding_window_sums(values, w)
    if kind == "jump_drop":
        return st.jump_drop_statistic(values, w)
    if kind != "low_signal":
        raise ValueError(f"kind must be 'jump_drop' or 'low_signal', got {kind!r}")
    out = np.full(sums.size, np.nan)
    out[w - 1 :] = sums[w - 1 :]
    return out


def detections(
    output: dict, kind: str, w: int, delta: float, smoother: str | None = None
) -> np.ndarray:
    """Event detections ``b_t`` (bool per step) from a ``"pegasus"`` release's output, free.

    ``kind="jump_drop"``: ``|ĉ_t − ĉ_{t−w+1}| >= δ`` on the estimates of ``smoother`` (the
    MedianSmoother in Chen 2018, §5.6.3); ``kind="low_signal"``: WSS window sum ``< δ`` (Chen 2018, §5.4).
    Steps with an incomplete window are never events.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> from dpwidgets.families.streams.spec import detections
    >>> session = Session(mode="teaching", seed=1)
    >>> session.add_dataset("counts", np.full(200, 20.0), total_epsilon=10.0)
    >>> output = session.release("counts", "pegasus", epsilon=1.0).output
    >>> bool(detections(output, "jump_drop", 16, 1e6).any())
    False
    """
    if kind == "jump_drop":
        return st.jump_drop_events(estimates(output, smoother), w, delta)
    if kind == "low_signal":
        return st.low_signal_events(pegasus_result(output), w, delta)
    raise ValueError(f"kind must be 'jump_drop' or 'low_signal', got {kind!r}")


# --------------------------------------------------------------------------------------------
# Registration
# --------------------------------------------------------------------------------------------
_EVENT = st.NEIGHBOURS
STREAM_MECHANISMS: dict[str, Mechanism] = {
    "pegasus": Mechanism("pegasus", PegasusParams.validate, _pegasus_run, _pegasus_outputs,
                         _pegasus_label, neighbours=_EVENT, params=PegasusParams),
    "laplace_stream": Mechanism(
        "laplace_stream", LaplaceStreamParams.validate, _lm_run, _lm_outputs, neighbours=_EVENT,
        label=lambda p: "LM stream (Laplace per step)" if p["k"] == 0 else f"BS_{p['k']} stream",
        params=LaplaceStreamParams),
    "hierarchical_pegasus": Mechanism(
        "hierarchical_pegasus", HierarchicalPegasusParams.validate, _hier_run, _hier_outputs,
        _hier_label, table=True, neighbours=_EVENT, params=HierarchicalPegasusParams),
}
"""The stream mechanisms, by session name (all registered on import)."""
for _mechanism in STREAM_MECHANISMS.values():
    register_mechanism(_mechanism)
