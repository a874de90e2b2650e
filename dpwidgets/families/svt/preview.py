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

import warnings

import numpy as np

from ...engine.attacks import attack_success, reconstruct_histogram_with_svt
from ...engine.evaluation import top_c_rates
from ...engine.svt import VARIANTS, top_c
from ...engine.validation import check_positive_int

__all__ = ["attack_rates", "check_runs", "reconstruct_with_svt", "simulate_top_c", "topc_rates",
           "variant_info", "variant_names"]


def variant_names() -> list[str]:
    """Every SVT variant, private and broken (Lyu, Su & Li 2017, Alg. 1-7), in the engine's
    order."""
    return list(VARIANTS)


def variant_info(name: str):
    """A variant's public description: ``title``, ``source``, ``note``, ``private``,
    ``accepts_ratio`` and ``privacy_loss(epsilon, c, monotonic)`` (its true bound)."""
    return VARIANTS[name]


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
