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

from ..engine._validation import check_epsilon, check_finite_array, check_positive_int
from ..mechanism import BOOL, NONNEGATIVE, POSITIVE, Fact, Mechanism, register_mechanism

__all__ = ["MAX_PASSES", "SVT_MECHANISMS"]

#: The most retraversals SVT-ReTr may make (each pass is one vectorised sweep of the queries).
MAX_PASSES = 10_000

def _svt_module():
    from ..engine import svt

    return svt


def _threshold(value, n: int) -> float | np.ndarray:
    arr = check_finite_array(np.atleast_1d(value), "threshold")
    if arr.size == 1:
        return float(arr[0])
    if arr.size != n:
        raise ValueError(f"threshold must be a number or one per query ({n}), got {arr.size}")
    return arr


def _cutoff(value, n: int) -> int:
    c = check_positive_int(value, "c")
    if c > n:
        raise ValueError(f"c must be at most the number of queries ({n}), got {c}")
    return c


def _svt_validate(params: dict, n: int) -> dict:
    svt = _svt_module()
    p = dict(params)
    variant = p.pop("variant", "standard")
    if variant not in svt.VARIANTS:
        raise ValueError(f"variant must be one of {sorted(svt.VARIANTS)}, got {variant!r}")
    if p.get("threshold") is None:
        raise ValueError("'svt' needs the parameter threshold= (public: a number, or one per "
                         "query; never computed from the data). Nothing was charged.")
    out = {
        "variant": variant,
        "epsilon": check_epsilon(p.pop("epsilon")),
        "c": _cutoff(p.pop("c", 1), n),
        "threshold": _threshold(p.pop("threshold"), n),
        "sensitivity": check_epsilon(p.pop("sensitivity", 1.0), "sensitivity"),
        "monotonic": bool(p.pop("monotonic", False)),
        "epsilon3": check_epsilon(p.pop("epsilon3", 0.0), "epsilon3", allow_zero=True),
        "threshold_sensitivity": check_epsilon(
            p.pop("threshold_sensitivity", 0.0), "threshold_sensitivity", allow_zero=True
        ),
    }
    ratio = p.pop("ratio", None)
    out["ratio"] = None if ratio is None else check_epsilon(ratio, "ratio")
    # The engine's own parameter checks (epsilon3 within the total, data-dependent thresholds
    # only for the generalized variant, ...): data-free, so they run before the charge.
    svt._check_params(out["variant"], out["epsilon"], out["c"], out["sensitivity"],
                      out["monotonic"], out["ratio"], out["epsilon3"],
                      out["threshold_sensitivity"])
    if p:
        raise ValueError(f"unknown parameter(s) for 'svt': {sorted(p)}")
    return out


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


def _top_c_validate(params: dict, n: int) -> dict:
    p = dict(params)
    method = p.pop("method", "em")
    if method not in ("em", "svt_retr"):
        raise ValueError(f"method must be 'em' or 'svt_retr', got {method!r}")
    c = check_positive_int(p.pop("c", 1), "c")
    if c > n:
        raise ValueError(f"c must be at most the number of items ({n}), got {c}")
    out: dict = {
        "method": method,
        "c": c,
        "epsilon": check_epsilon(p.pop("epsilon")),
        "monotonic": bool(p.pop("monotonic", True)),
    }
    if method == "svt_retr":
        if "threshold" not in p:
            raise ValueError("top_c with method='svt_retr' needs a public threshold=")
        out["threshold"] = _threshold(p.pop("threshold"), n)
        out["increment"] = check_epsilon(p.pop("increment", 1.0), "increment", allow_zero=True)
        out["max_passes"] = check_positive_int(p.pop("max_passes", 10_000), "max_passes")
        if out["max_passes"] > MAX_PASSES:
            raise ValueError(f"max_passes must be at most {MAX_PASSES}, got {out['max_passes']}")
    if p:
        raise ValueError(f"unknown parameter(s) for 'top_c': {sorted(p)}")
    return out


def _top_c_outputs(result, p: dict) -> dict:
    return {"selected": np.asarray(result, dtype=int)}


def _recon_validate(params: dict, n: int) -> dict:
    from ..engine._validation import check_probability

    p = dict(params)
    out = {
        "epsilon": check_epsilon(p.pop("epsilon")),
        "delta": check_probability(p.pop("delta", 0.05), "delta"),
    }
    if p:
        raise ValueError(f"unknown parameter(s) for 'reconstruction': {sorted(p)}")
    return out


def _recon_run(data: np.ndarray, p: dict, rng: np.random.Generator):
    from ..engine.attacks import reconstruct_histogram

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
        "svt", _svt_validate,
        lambda data, p, rng: _svt_module().sparse_vector(data, rng=rng, **p), _svt_outputs,
        lambda p: f"SVT {p['variant']} c={p['c']}", private=_svt_private, facts=_SVT_FACTS,
        neighbours="one row added or removed; each answer moves by at most the sensitivity",
        spent=lambda result, p: result.epsilon),
    "top_c": Mechanism(
        "top_c", _top_c_validate,
        lambda data, p, rng: _svt_module().top_c(data, rng=rng, **p), _top_c_outputs,
        lambda p: f"top-{p['c']} ({p['method']})",
        facts={"monotonic": Fact("at_most", True, kind=BOOL)},
        neighbours="one row added or removed; each score moves by at most 1"),
    # The reconstruction attack runs GPTT, which is not private for any epsilon: teaching only.
    "reconstruction": Mechanism(
        "reconstruction", _recon_validate, _recon_run, _recon_outputs,
        lambda p: "reconstruction attack (GPTT)", private=lambda p: False,
        guarantee=lambda p: "not differentially private for any epsilon (teaching only)"),
}
for _mechanism in SVT_MECHANISMS.values():
    register_mechanism(_mechanism)
