"""Session mechanisms of the Sparse Vector Technique family (Lyu, Su & Li 2017; Chen 2018, Ch. 2-3).

=====================  ===========================================================  ==========
name                   engine                                                       charged
=====================  ===========================================================  ==========
``"svt"``              :func:`~dpwidgets.engine.svt.sparse_vector` (every variant)   ``epsilon``
``"top_c"``            :func:`~dpwidgets.engine.svt.top_c` (EM or SVT-ReTr)          ``epsilon``
``"reconstruction"``   :func:`~dpwidgets.engine.attacks.reconstruct_histogram`      ``epsilon``
=====================  ===========================================================  ==========

Neighbours: one row added or removed changes every query answer by at most the declared
``sensitivity`` (a fact the data owner declares with the dataset; default 1, counts). Whether
the answers are *monotonic* (Lyu, Su & Li 2017, Thm 4.9: all move in the same direction, which
halves the query noise) is another such fact. In analyst mode neither can be lowered by a
release: see :class:`dpwidgets.mechanism.Fact`.

The broken variants (``roth2011``, ``stoddard``, ``chen2015``, ``gptt``, ``lee_clifton``) and the
reconstruction attack (GPTT, Chen 2018, Alg. 6-7) exist to be shown failing: they are not DP
and are refused in analyst mode before anything is read or charged.
"""

from __future__ import annotations

import numpy as np

from ...mechanism import BOOL, NONNEGATIVE, POSITIVE, Fact, Mechanism, register_mechanism
from .params import MAX_PASSES, ReconstructionParams, SVTParams, TopCParams

__all__ = ["MAX_PASSES", "SVT_MECHANISMS"]


def _svt_module():
    from ...engine import svt

    return svt


def _svt_outputs(result, p: dict) -> dict:
    outcomes = np.asarray(result.outcomes, dtype=bool)
    above = np.flatnonzero(outcomes)
    out = {"outcomes": outcomes, "above": above, "n_examined": int(outcomes.size)}
    # A noisy answer is part of the output only where the variant publishes it: for ⊤ queries
    # with epsilon3 > 0 (standard) or always (roth2011). NaN marks "not published".
    values = np.asarray(result.values, dtype=float)
    if np.any(np.isfinite(values[above])):
        out["above_values"] = values[above]
    return out


def _svt_private(p: dict) -> bool:
    return bool(_svt_module().VARIANTS[p["variant"]].private)


def _top_c_outputs(result, p: dict) -> dict:
    return {"selected": np.asarray(result, dtype=int)}


def _recon_run(data: np.ndarray, p: dict, rng: np.random.Generator):
    from ...engine.attacks import reconstruct_histogram

    return reconstruct_histogram(data, p["epsilon"], delta=p["delta"], rng=rng)


def _recon_outputs(result, p: dict) -> dict:
    return {"estimate": np.asarray(result.estimate, dtype=float)}


_SVT_FACTS = {
    "sensitivity": Fact("at_least", 1.0, kind=POSITIVE),
    "threshold_sensitivity": Fact("at_least", 0.0, kind=NONNEGATIVE),
    "monotonic": Fact("at_most", False, kind=BOOL),
}

SVT_MECHANISMS: dict[str, Mechanism] = {
    # epsilon is the total: the engine takes epsilon3 out of it (the budget convention).
    "svt": Mechanism(
        "svt", SVTParams.validate,
        lambda data, p, rng: _svt_module().sparse_vector(data, rng=rng, **p), _svt_outputs,
        lambda p: f"SVT {p['variant']} c={p['c']}", private=_svt_private, facts=_SVT_FACTS,
        neighbours="one row added or removed; each answer moves by at most the sensitivity",
        spent=lambda result, p: result.epsilon, params=SVTParams),
    "top_c": Mechanism(
        "top_c", TopCParams.validate,
        lambda data, p, rng: _svt_module().top_c(data, rng=rng, **p), _top_c_outputs,
        lambda p: f"top-{p['c']} ({p['method']})",
        facts={"monotonic": Fact("at_most", True, kind=BOOL)},
        neighbours="one row added or removed; each score moves by at most 1",
        params=TopCParams),
    # The reconstruction attack runs GPTT, which is not private for any epsilon: teaching only.
    "reconstruction": Mechanism(
        "reconstruction", ReconstructionParams.validate, _recon_run, _recon_outputs,
        lambda p: "reconstruction attack (GPTT)", private=lambda p: False,
        guarantee=lambda p: "not differentially private for any epsilon (teaching only)",
        params=ReconstructionParams),
}
for _mechanism in SVT_MECHANISMS.values():
    register_mechanism(_mechanism)
