"""What the SVT explorer computes besides the door's releases and previews: the variants'
public descriptions, and the top-c panel's comparison runs (EM and SVT-ReTr simulated on
public numbers -- the data in a teaching session, where it is declared public, the stand-in
otherwise -- and scored against the same numbers).

The explorer imports the engine only through this module (and the door): the widget is a
controller between its controls, the door and the display.

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.svt.preview import topc_rates, variant_info
>>> variant_info("standard").private
True
>>> topc_rates([np.array([0, 1])], np.array([9.0, 8.0, 1.0]), 2)
(0.0, 0.0)
"""

from __future__ import annotations

import math
import warnings

import numpy as np

from ...engine.attacks import attack_success, reconstruct_histogram_with_svt
from ...engine.evaluation import top_c_rates
from ...engine.svt import VARIANTS, top_c
from ...engine.validation import check_positive_int
from ...ui.text import shown, undust

__all__ = ["attack_rates", "broken_variants", "check_runs", "comparison_rates", "default_threshold",
           "drawn_share", "noiseless_rates", "offered_variants", "quietly", "reconstruct_with_svt",
           "release_rates", "simulate_top_c", "topc_rates", "true_top", "variant_info",
           "variant_names"]


def variant_names() -> list[str]:
    """Every SVT variant, private and broken (Lyu, Su & Li 2017, Alg. 1-7), in the engine's
    order."""
    return list(VARIANTS)


def variant_info(name: str):
    """A variant's public description: ``title``, ``source``, ``note``, ``private``,
    ``accepts_ratio`` and ``privacy_loss(epsilon, c, monotonic)`` (its true bound)."""
    return VARIANTS[name]


def offered_variants(teaching: bool) -> list[str]:
    """The variants a session offers: every one in teaching mode (the broken ones under a "not
    private" banner), the private ones otherwise.

    Examples
    --------
    >>> offered_variants(False)
    ['standard', 'dpbook', 'generalized']
    """
    return [v for v in variant_names() if teaching or variant_info(v).private]


def broken_variants(variants: list[str], *, first: str) -> list[str]:
    """The broken ones among ``variants`` (those whose claim an audit refutes), ``first``
    first: the order their audits are queued in.

    Examples
    --------
    >>> broken_variants(["standard", "roth2011", "gptt"], first="gptt")
    ['gptt', 'roth2011']
    """
    return sorted((v for v in variants if not variant_info(v).private),
                  key=lambda v: v != first)


def topc_rates(selections, scores: np.ndarray, c: int) -> tuple[float, float]:
    """The false negative rate and the score error rate of ``selections`` against the top
    ``c`` of ``scores``, averaged over the selections (Lyu, Su & Li 2017, §6)."""
    return top_c_rates(selections, scores, c)


def simulate_top_c(scores: np.ndarray, *, rng: np.random.Generator, **params) -> np.ndarray:
    """One top-c selection (EM or SVT-ReTr, ``params`` as for the ``"top_c"`` mechanism) run on
    public ``scores``: a simulation for the comparison panel, not a release."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return top_c(scores, rng=rng, **params)


def quietly(run, *args, **kwargs):
    """``run(*args, **kwargs)`` with its RuntimeWarnings silenced (a comparison run on the
    stand-in warns where an extreme ε overflows the exponential mechanism's weights).

    Examples
    --------
    >>> quietly(max, 1, 2)
    2
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return run(*args, **kwargs)


def comparison_rates(scores: np.ndarray, selected: np.ndarray, *, c: int, epsilon: float,
                     threshold: float, runs: int, select) -> dict:
    """The top-c panel's rates: FNR/SER of this run's SVT ``selected`` and of EM and SVT-ReTr
    at the same ``epsilon`` and ``c``, each averaged over ``runs`` selections
    ``select(method=..., c=..., epsilon=..., **extra)`` (simulations, not releases), all scored
    against ``scores`` (public: the data in teaching mode, the stand-in in a preview).

    Examples
    --------
    >>> import numpy as np
    >>> scores = np.array([9.0, 8.0, 1.0, 0.0])
    >>> rates = comparison_rates(scores, np.array([0, 1]), c=2, epsilon=1.0, threshold=5.0,
    ...                          runs=1, select=lambda **p: np.array([0, 2]))
    >>> rates["SVT (this run)"], rates["EM"][0]  # EM's "selection" missed one of the two
    ((0.0, 0.0), 0.5)
    """
    rates = {"SVT (this run)": topc_rates([selected], scores, c)}
    for label, method, extra in (
        ("EM", "em", {}),
        # A capped number of passes keeps the panel interactive with a high threshold; a
        # short selection then simply scores worse (its shortfall counts as misses).
        ("SVT-ReTr", "svt_retr", {"threshold": threshold, "max_passes": 25}),
    ):
        chosen = [select(method=method, c=c, epsilon=epsilon, **extra) for _ in range(runs)]
        rates[label] = topc_rates(chosen, scores, c)
    return rates


def true_top(scores: np.ndarray, c: int) -> np.ndarray:
    """The positions of the ``c`` highest of the public ``scores`` (in no particular order).

    Examples
    --------
    >>> import numpy as np
    >>> sorted(true_top(np.array([1.0, 5.0, 3.0]), 2).tolist())
    [1, 2]
    """
    return np.argpartition(-scores, c - 1)[:c]


def release_rates(positives: np.ndarray, stand_in: np.ndarray, c: int) -> np.ndarray:
    """``(FNR, SER)`` of a preview's first ``c`` ⊤ queries against the stand-in's own top c.

    Why these two numbers: a reader of the explorer asks "which of my top c will a release
    find, and how much of their score will it miss?" -- the top-c panel's SVT bars. The ⊤
    positions themselves are not aligned across runs (a run stops after its c-th ⊤), and a
    per-query 0/1 "selected" vector has a 5-95% band that is either 0 or the whole of [0, 1],
    its median half-width 0 (most queries are never selected): it says nothing. The two rates
    are in [0, 1], fixed in number, and their band is what the whiskers on the SVT bars draw.

    Examples
    --------
    >>> import numpy as np
    >>> release_rates(np.array([0, 2, 1]), np.array([9.0, 1.0, 8.0]), 2).tolist()
    [0.0, 0.0]
    """
    return np.array(topc_rates([positives[:c]], stand_in, c))


def noiseless_rates(stand_in: np.ndarray, threshold: float, c: int) -> np.ndarray:
    """The rates of SVT without noise on the stand-in: the first ``c`` queries (in the order
    examined) whose answer reaches the public ``threshold``.

    Examples
    --------
    >>> import numpy as np
    >>> noiseless_rates(np.array([9.0, 1.0, 8.0]), 5.0, 2).tolist()
    [0.0, 0.0]
    """
    chosen = np.flatnonzero(stand_in >= np.asarray(threshold, dtype=float))[:c]
    return np.array(topc_rates([chosen], stand_in, c))


def drawn_share(result, share: float) -> float:
    """ε1's share of ε the split panel marks: the slider's ``share``, or the split a run
    ``result`` of a variant with its own split actually used.

    Examples
    --------
    >>> drawn_share(None, 0.25)
    0.25
    """
    if result is not None and not (variant_info(result.variant).accepts_ratio
                                   and result.variant == "standard"):
        return result.epsilon1 / (result.epsilon1 + result.epsilon2)
    return share


def default_threshold(scores: np.ndarray, c: int, step: float | None = None) -> float:
    """Lyu, Su & Li 2017, §6's threshold: the mean of the c-th and (c+1)-th highest scores,
    to the 3 significant digits every label shows (:func:`~dpwidgets.ui.text.shown`: 4008.5
    is 4010 in the box, the note, the button and the run alike).

    ``step``: the threshold slider's step (1, 2 or 5 times a power of ten). When it is coarser
    than the third significant digit the value is rounded to the step instead (604.4 -> 605
    at a step of 5), so the slider's readout shows the value too. Either way the result has
    at most 3 significant digits: a multiple of a step of ``{1, 2, 5}·10^m`` above the third
    digit's ``10^k`` is a multiple of ``10^m``, ``m >= k``.

    Only ever applied to public values (the data in teaching mode, the stand-in otherwise).

    Examples
    --------
    >>> import numpy as np
    >>> default_threshold(np.array([10.0, 8.0, 6.0, 1.0]), 2)
    7.0
    """
    scores = np.asarray(scores, dtype=float)
    c = min(max(1, c), scores.size - 1)
    top = np.sort(np.partition(scores, scores.size - c - 1)[scores.size - c - 1 :])[::-1]
    value = shown((top[c - 1] + top[c]) / 2.0)
    if step and value and step > 10.0 ** (math.floor(math.log10(abs(value))) - 2):
        value = undust(round(value / step) * step)
    return value


def check_runs(runs, name: str, maximum: int) -> int:
    """The number of comparison runs: an integer in [1, ``maximum``]."""
    return check_positive_int(runs, name, maximum=maximum)


def reconstruct_with_svt(counts: np.ndarray, epsilon: float, delta: float,
                         rng: np.random.Generator, *, c: int) -> np.ndarray | None:
    """What the GPTT attacker reconstructs through *standard* SVT at the same ε (Chen 2018,
    Alg. 7 against Lyu, Su & Li 2017, Alg. 1): the attack demo's comparison, run on public
    teaching data."""
    return reconstruct_histogram_with_svt(counts, epsilon, delta, rng, c=c)


def attack_rates(counts: np.ndarray, estimate: np.ndarray, *, small_max: int):
    """How much of ``counts`` the attacker recovered (``overall``, and among the cells of at
    most ``small_max``, ``small``): Chen 2018, Table 3.2's success rates."""
    return attack_success(counts, estimate, small_max=small_max)
