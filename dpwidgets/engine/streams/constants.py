"""The stream engine's public constants and defaults (the neighbour relation, the smoothers, the
two sets of PeGaSus defaults, the adaptive smoother's settings) and the private tuning constants
of its cores. Part of :mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

__all__ = [
    "NEIGHBOURS", "SMOOTHERS", "DEFAULTS", "ADAPTIVE_SMOOTHER", "LYU_THRESHOLD_SHARE",
    "MAX_WINDOW",
]


#: The largest window ``w`` (and backward-smoothing ``k``) accepted: ten million steps.
MAX_WINDOW = 10**7

#: The neighbour relation of every function in this module.
NEIGHBOURS = "event-level: add/remove one tuple (user, state, time), i.e. one c_t changes by 1"

#: The smoothers (post-processing of the Perturber and Grouper outputs): the three of Chen 2018
#: §5.3.3 and this package's adaptive trailing window (:func:`adaptive_window_smoother`).
SMOOTHERS: Mapping[str, str] = MappingProxyType(
    {
        "median": "MedianSmoother, eq. 5.6: median of the noisy counts of the current group",
        "average": "AverageSmoother, eq. 5.5: mean of the noisy counts of the current group",
        "james_stein": "JSSmoother, eq. 5.7: James-Stein shrinkage of c̃_t to the group mean",
        "adaptive": "median of a trailing window inside the group, the window chosen from past "
        "prediction errors, shrunk towards c̃_t where the errors exceed the noise",
    }
)

#: Lyu, Su & Li 2017 (budget allocation for Alg. 7): for SVT that stops at the first
#: positive answer (c = 1) the threshold : query budget ratio 1 : (2c)^(2/3) minimises the
#: error; this is ε_threshold/ε_g:
LYU_THRESHOLD_SHARE = 1.0 / (1.0 + 2.0 ** (2.0 / 3.0))

#: The two sets of defaults. ``"text"``: Chen 2018 §5.6.1 (ε_p = 0.8ε, ε_g = 0.2ε,
#: θ = 5/ε_g, the Grouper's budget halved between threshold and tests, MedianSmoother).
#: ``"new"`` (the default): a Grouper share of 0.05ε, θ = 160/ε_g, the threshold/test split
#: of Lyu, Su & Li 2017 and the adaptive smoother — all public choices, so the privacy
#: argument is the text's (benchmarks/streams_unit_counts.py measures both).
DEFAULTS: Mapping[str, Mapping[str, object]] = MappingProxyType(
    {
        "new": MappingProxyType(
            {"perturber_share": 0.95, "theta_times_eps_g": 160.0,
             "threshold_share": LYU_THRESHOLD_SHARE, "smoother": "adaptive"}
        ),
        "text": MappingProxyType(
            {"perturber_share": 0.8, "theta_times_eps_g": 5.0, "threshold_share": 0.5,
             "smoother": "median"}
        ),
    }
)

#: The adaptive smoother's public settings (:func:`adaptive_window_smoother`): the trailing
#: windows it chooses from (and the whole group so far), the half-life in steps of the
#: prediction-error average that chooses (288 = one day of five-minute steps), the tolerance
#: within which the longest window wins, the half-life of the squared-error average that
#: decides the shrinkage, and how many standard errors above the noise variance it must be.
ADAPTIVE_SMOOTHER: Mapping[str, object] = MappingProxyType(
    {"windows": tuple(2**j for j in range(12)), "horizon": 288.0, "tolerance": 0.005,
     "shrink_horizon": 24.0, "z": 4.0}
)

# Alg. 16 / Thm 17: Delta(dev) = 2 (Lemma 16). The Grouper is SVT (Lyu, Su & Li 2017, Alg. 7
# with c = 1) with eps_1 = share * eps_g on the threshold, Lap(Delta/eps_1), and
# eps_2 = (1 - share) * eps_g on the tests, Lap(2 Delta/eps_2). share = 1/2 gives the text's
# Lap(4/eps_g) (line 8) and Lap(8/eps_g) (line 11).
_SENSITIVITY = 2.0
# Below this size the open group's deviation is summed directly (faster than the tree).
_TREE_MIN_GROUP = 32
# Noise rows drawn at a time by the online form.
_CHUNK = 4096
# Feeds of at least this many steps take the vectorised core (:func:`_vector_core`); shorter
# ones (a push, a sparse hierarchy node) the scalar loop. Both give the same bits.
_VECTOR_MIN = 64
# The vectorised Grouper decides up to this many first offsets of a group opened at every
# step at once, and stops early when fewer than this share of the open candidates fail.
_SHORT_OFFSETS = _TREE_MIN_GROUP - 1
_SHORT_FAIL_SHARE = 0.02
# ... on whole arrays while more than this share of the starts is still open, then on the
# indices of the open ones.
_SLICE_SHARE = 0.4
# An open group of _TREE_MIN_GROUP members or more is tested in chunks of steps, the first
# twice as long as the last long group took (within these bounds: a chunk costs some fifty
# array operations however short), doubling while it grows; a chunk compares at most
# _CROSS_CELLS pairs of (crossed value, step) directly.
_LONG_CHUNK = 256
_MAX_CHUNK = 8192
_CROSS_CELLS = 1 << 13
# While groups are short, the first tests of a long group run one by one, up to this many,
# unless floor(mean) jumps by more than _POINTER_STEP (the pointer would walk too far).
_SCALAR_STEPS = 128
_POINTER_STEP = 64
# The adaptive smoother sorts every window of up to this many steps; longer ones use
# Bottleneck's moving median (two heaps).
_SORTED_WINDOWS = 4
# ... and filters only the steps that use a window when they are fewer than this share.
_SPARSE_WINDOWS = 0.7
# Running group sums (means and Welford's sums of squares): the first steps of all groups at once,
# up to this offset.
_GROUP_SUM_STEPS = 64
