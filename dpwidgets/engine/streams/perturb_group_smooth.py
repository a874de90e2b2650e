"""PeGaSus (Perturb-Group-Smooth, Chen 2018 Alg. 15): the release :class:`PegasusResult`, the
online :class:`PegasusStream`, the batch :func:`pegasus` and the Grouper alone,
:func:`deviation_grouper` (Alg. 16). Part of :mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from types import MappingProxyType

import numpy as np

from .._results import eps_text
from .._results import frozen as _readonly
from ..validation import (
    check_epsilon,
    check_rng,
)
from .adaptive_smoother import _adaptive_chunk, _AdaptiveState
from .checks import (
    _budget_parts,
    _check_share,
    _check_stream,
    _grouper_setup,
    _noise_rows,
    _resolve_options,
    _split_pegasus_budget,
)
from .constants import _CHUNK, _VECTOR_MIN, ADAPTIVE_SMOOTHER, NEIGHBOURS, SMOOTHERS
from .scalar_core import _GroupState, _run_core
from .vector_core import _grouper_run, _vector_core

__all__ = ["PegasusResult", "PegasusStream", "pegasus", "deviation_grouper"]


class _Column:
    """One growing output of the online form: arrays from vectorised feeds and a list of the
    values pushed one at a time since, joined when read (pushing stays O(1) per step)."""

    __slots__ = ("pieces", "pending", "size", "dtype")

    def __init__(self, dtype) -> None:
        self.pieces: list[np.ndarray] = []
        self.pending: list = []
        self.size = 0  # values in pieces (pending not counted)
        self.dtype = dtype

    def _flush(self) -> None:
        if self.pending:
            self.pieces.append(np.asarray(self.pending, dtype=self.dtype))
            self.size += len(self.pending)
            self.pending = []

    def add(self, values: np.ndarray) -> None:
        self._flush()
        if values.size:
            self.pieces.append(np.asarray(values, dtype=self.dtype))
            self.size += values.size

    def array(self) -> np.ndarray:
        self._flush()
        if len(self.pieces) != 1:
            self.pieces = [np.concatenate(self.pieces) if self.pieces
                           else np.empty(0, dtype=self.dtype)]
        return self.pieces[0]

    def tail(self, k: int) -> np.ndarray:
        """The last ``k`` values."""
        if k <= len(self.pending):
            return np.asarray(self.pending[len(self.pending) - k :], dtype=self.dtype)
        self._flush()
        parts, need = [], k
        for piece in reversed(self.pieces):
            if need <= 0:
                break
            parts.append(piece[max(piece.size - need, 0) :])
            need -= piece.size
        return np.concatenate(parts[::-1]) if len(parts) != 1 else parts[0]

    def last(self):
        return self.pending[-1] if self.pending else self.pieces[-1][-1]


@dataclass(frozen=True, eq=False)
class PegasusResult:
    """A PeGaSus release of one stream and what it cost.

    Attributes
    ----------
    estimates : numpy.ndarray
        ĉ_t, one per step, from the chosen ``smoother`` (real time: ĉ_t uses only c_1..c_t).
    smoothed : mapping
        The estimates of every smoother in :data:`SMOOTHERS` (all post-processing of the same
        Perturber and Grouper outputs, so comparing them costs nothing).
    noisy : numpy.ndarray
        The Perturber's output c̃_t = c_t + Lap(1/ε_p).
    groups : numpy.ndarray of int
        The Grouper's partition: the group id (0, 1, ...) of each step. Groups are contiguous;
        a step's group never changes after the step (a group may only grow to the right).
    group_starts : numpy.ndarray of int
        Index of the first step of each step's group.
    smoother : str
    theta : float
        The deviation threshold θ of Alg. 16.
    threshold_share : float
        The part of ε_g spent on each group's noisy threshold (the rest on its tests).
    defaults : str
        ``"new"`` or ``"text"``: which set of defaults filled the unspecified parameters.
    window : numpy.ndarray of int
        How many noisy counts the adaptive smoother's window median used at each step.
    epsilon : float
        ``ε_p + ε_g``, the budget spent (== ``sum(epsilon_parts.values())``).
    epsilon_parts : mapping
        ``perturber`` (ε_p) and ``grouper`` (ε_g).
    guarantee, neighbours : str
    """

    estimates: np.ndarray
    smoothed: Mapping[str, np.ndarray]
    noisy: np.ndarray
    groups: np.ndarray
    group_starts: np.ndarray
    smoother: str
    theta: float
    epsilon: float
    epsilon_parts: Mapping[str, float]
    guarantee: str = ""
    neighbours: str = NEIGHBOURS
    threshold_share: float = 0.5
    defaults: str = "text"
    window: np.ndarray | None = None

    @property
    def n_groups(self) -> int:
        return int(self.groups[-1]) + 1 if self.groups.size else 0

    @property
    def group_boundaries(self) -> np.ndarray:
        """Start index of every group, increasing (the partition as boundaries)."""
        return np.flatnonzero(np.diff(self.groups, prepend=-1))

    @property
    def group_size_used(self) -> np.ndarray:
        """Size of each step's group *as of that step* (the group so far: what its estimate used,
        not the group's final size)."""
        return np.arange(self.groups.size) - self.group_starts + 1


class PegasusStream:
    """Online PeGaSus (Chen 2018 Alg. 15): :meth:`push` one count, get its private estimate back.

    Parameters
    ----------
    epsilon : float
        Total budget ε = ε_p + ε_g, spent once for the whole (unbounded) stream.
    smoother : {"adaptive", "median", "average", "james_stein"}, optional
        Which smoother gives the returned estimate (all are kept in :meth:`result`); default
        ``"adaptive"`` (``"median"`` with ``defaults="text"``).
    rng : numpy.random.Generator, optional
    epsilon_p, epsilon_g : float, optional
        Perturber and Grouper budgets; default ε_g = 0.05ε (0.2ε with ``defaults="text"``, Chen
        2018 §5.6.1). Give one and the other is the remainder; give both and they must sum to ε.
    theta : float, optional
        Deviation threshold θ of Alg. 16; default 160/ε_g (5/ε_g with ``defaults="text"``).
    threshold_share : float in (0, 1), optional
        Part of ε_g spent on each group's noisy threshold, the rest on its deviation tests;
        default ``LYU_THRESHOLD_SHARE`` = 1/(1 + 2^(2/3)) ≈ 0.387 (Lyu, Su & Li 2017), 0.5 with
        ``defaults="text"`` (the text's Lap(4/ε_g) and Lap(8/ε_g)).
    defaults : {"new", "text"}
        Which set of :data:`DEFAULTS` fills the parameters not given.

    Raises
    ------
    ValueError
        Bad budgets (ε_p + ε_g ≠ ε), θ, smoother; from :meth:`push`, a count that is negative,
        fractional or not finite (nothing is drawn and the state is unchanged).

    Notes
    -----
    Noise is drawn in rows of three per step (Perturber Lap(1/ε_p), threshold Lap(2/ε_1),
    deviation Lap(4/ε_2), ε_1 + ε_2 = ε_g), a block of rows at a time; a row's unused entries
    are discarded.
    Blocks concatenate to the same sequence as one large draw, so :func:`pegasus` on the same
    ``rng`` gives identical estimates.

    Privacy: ε-DP under event-level neighbours (:data:`NEIGHBOURS`): ε_p-DP Perturber
    (Laplace, sensitivity 1 per step) + ε_g-DP Grouper (Thm 17: SVT on the disjoint groups,
    Δ(dev) = 2, any threshold/test split), sequential composition (Thm 15); θ, the shares and
    the smoother are public, and smoothing is post-processing.

    References
    ----------
    Chen 2018 §5.3, Alg. 15-16, eq. 5.5-5.7, Thm 15, 17; Lyu, Su & Li 2017 (SVT budget split).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import PegasusStream
    >>> stream = PegasusStream(epsilon=1.0, rng=np.random.default_rng(0))
    >>> estimates = [stream.push(c) for c in (10, 11, 9, 10)]
    >>> stream.t, len(estimates), stream.result().estimates.shape
    (4, 4, (4,))
    """

    def __init__(
        self,
        epsilon: float,
        smoother: str | None = None,
        rng: np.random.Generator | None = None,
        *,
        epsilon_p: float | None = None,
        epsilon_g: float | None = None,
        theta: float | None = None,
        threshold_share: float | None = None,
        defaults: str = "new",
    ) -> None:
        defaults, smoother, share = _resolve_options(defaults, smoother, threshold_share)
        eps, eps_p, eps_g, th = _split_pegasus_budget(epsilon, epsilon_p, epsilon_g, theta, defaults)
        self.smoother = smoother
        self.defaults = defaults
        self.threshold_share = share
        self._rng = check_rng(rng)
        self.epsilon = eps
        self.epsilon_parts = _budget_parts(eps, perturber=eps_p, grouper=eps_g)
        # Inside floating_point_safe() (decided here, once): the Grouper's comparisons on a grid.
        self._grid, self.theta, grouper_scales = _grouper_setup(eps_g, share, th)
        self._scales = np.array([1.0 / eps_p, *grouper_scales])
        self._tau2 = 2.0 / eps_p**2
        self._adaptive: _AdaptiveState | None = None
        self._adaptive_done = 0  # steps the adaptive smoother has processed
        self._noise = np.empty((0, 3))
        self._pos = 0
        self._state = _GroupState()
        self._out: dict[str, _Column] = {
            k: _Column(np.int64 if k in ("gid", "start", "window") else float)
            for k in ("noisy", "median", "average", "james_stein", "gid", "start",
                      "adaptive", "window")
        }

    @property
    def t(self) -> int:
        """Number of counts pushed so far."""
        return self._state.t

    def _take_noise(self, k: int) -> np.ndarray:
        available = self._noise.shape[0] - self._pos
        if available < k:
            fresh = _noise_rows(self._scales, (max(_CHUNK, k - available), 3), self._rng,
                                self._grid)
            self._noise = np.concatenate([self._noise[self._pos :], fresh])
            self._pos = 0
        rows = self._noise[self._pos : self._pos + k]
        self._pos += k
        return rows

    def _feed(self, counts: np.ndarray, last: bool = False) -> None:
        """Run ``counts``; ``last``: nothing will follow (:func:`pegasus`), so the adaptive
        smoother keeps no state."""
        noise = self._take_noise(counts.size)
        o = self._out
        if counts.size >= _VECTOR_MIN:
            out = _vector_core(self._state, counts, noise, self.theta, self._tau2)
            for k, v in out.items():
                o[k].add(v)
        else:
            _run_core(
                self._state, counts.tolist(), noise[:, 0].tolist(), noise[:, 1].tolist(),
                noise[:, 2].tolist(), self.theta, self._tau2,
                *(o[k].pending for k in ("noisy", "median", "average", "james_stein", "gid",
                                         "start")),
            )
        if self.smoother == "adaptive" or last:
            self._smooth_adaptive(last)

    def _smooth_adaptive(self, last: bool = False) -> None:
        """The adaptive smoother on the steps not smoothed yet, continuing from where it
        stopped (lazily, in one vectorised piece, unless it is the smoother pushes return:
        the result is the same however the steps are split)."""
        first, now = self._adaptive_done, self._state.t
        if first == now:
            return
        self._adaptive_done = now
        o = self._out
        noisy = o["noisy"].tail(now - first)
        sizes = np.arange(first, now) - o["start"].tail(now - first) + 1
        gmed = o["median"].tail(now - first)
        est, used, self._adaptive = _adaptive_chunk(
            noisy, sizes, gmed, self._tau2, self._adaptive, ADAPTIVE_SMOOTHER, last
        )
        if now - first == 1:
            o["adaptive"].pending.append(float(est[0]))
            o["window"].pending.append(int(used[0]))
        else:
            o["adaptive"].add(est)
            o["window"].add(used)

    def push(self, count) -> float:
        """Release ĉ_t for the next count c_t (Chen 2018 Alg. 15 lines 2-5)."""
        if isinstance(count, int | np.integer) and not isinstance(count, bool) and count >= 0:
            c = int(count)  # fast path for the common case; anything else is fully checked
        else:
            c = int(_check_stream([count], "count")[0])
        zp, zth, zdev = self._take_noise(1)[0].tolist()
        o = self._out
        _run_core(
            self._state, [c], [zp], [zth], [zdev], self.theta, self._tau2,
            *(o[k].pending for k in ("noisy", "median", "average", "james_stein", "gid",
                                     "start")),
        )
        if self.smoother == "adaptive":
            self._smooth_adaptive()
        return float(o[self.smoother].last())

    def extend(self, counts) -> np.ndarray:
        """Push many counts; returns their estimates (same as pushing them one by one)."""
        counts = _check_stream(counts)
        self._feed(counts)
        return np.array(self._out[self.smoother].tail(counts.size), dtype=float)

    def result(self) -> PegasusResult:
        """Everything released so far as a :class:`PegasusResult`."""
        if self._state.t == 0:
            raise ValueError("no count has been pushed yet; push at least one count")
        self._smooth_adaptive()
        o = self._out
        smoothed = {k: _readonly(o[k].array()) for k in SMOOTHERS}
        eps_p, eps_g = self.epsilon_parts["perturber"], self.epsilon_parts["grouper"]
        return PegasusResult(
            estimates=smoothed[self.smoother],
            smoothed=MappingProxyType(smoothed),
            noisy=_readonly(o["noisy"].array()),
            groups=_readonly(o["gid"].array()),
            group_starts=_readonly(o["start"].array()),
            smoother=self.smoother,
            theta=self.theta,
            epsilon=self.epsilon,
            epsilon_parts=self.epsilon_parts,
            guarantee=(
                f"{eps_text(self.epsilon)}-DP (event-level): Perturber {eps_text(eps_p)}-DP + Grouper "
                f"{eps_text(eps_g)}-DP (Chen 2018 Thm 15, 17)"
            ),
            threshold_share=self.threshold_share,
            defaults=self.defaults,
            window=_readonly(o["window"].array()),
        )


def pegasus(
    counts,
    epsilon: float,
    smoother: str | None = None,
    rng: np.random.Generator | None = None,
    *,
    epsilon_p: float | None = None,
    epsilon_g: float | None = None,
    theta: float | None = None,
    threshold_share: float | None = None,
    defaults: str = "new",
) -> PegasusResult:
    """Release a counting stream in real time with PeGaSus (Perturb-Group-Smooth).

    Perturber: c̃_t = c_t + Lap(1/ε_p). Grouper (Alg. 16): a new open group gets a noisy
    threshold θ̃ = θ + Lap(2/ε_1); the open group G takes step t while
    dev(C[G ∪ {t}]) + Lap(4/ε_2) < θ̃ (dev on the *true* counts, eq. 5.4), otherwise G is closed
    and {t} is a closed singleton; ε_1 + ε_2 = ε_g (the text: ε_1 = ε_2, i.e. Lap(4/ε_g) and
    Lap(8/ε_g)). Smoother: ĉ_t from the noisy counts of t's group as of t.

    Two sets of defaults (:data:`DEFAULTS`), one argument apart. ``defaults="text"`` is Chen
    2018 §5.6.1: ε_p = 0.8ε, θ = 5/ε_g, ε_1 = ε_2, MedianSmoother. Every scale of that Grouper
    is a multiple of 1/ε_g, so on flat data its groups are ~3 steps long whatever ε is, and
    PeGaSus cannot gain more than ~1/0.76 over LM (BS_k, k >= 2, beats it). The default
    ``"new"``: ε_g = 0.05ε, θ = 160/ε_g (long groups on flat data), the SVT split of Lyu, Su &
    Li 2017 and the ``"adaptive"`` smoother (which keeps long groups from lagging on ramps and
    shrinks towards c̃_t where counts jump more than the noise). All are public choices: the
    privacy argument is unchanged.

    Parameters
    ----------
    counts : array_like of int, shape (n,)
        The true stream c_1..c_n (non-negative whole counts).
    epsilon : float
        Total budget ε = ε_p + ε_g.
    smoother : {"adaptive", "median", "average", "james_stein"}, optional
        Default "adaptive" ("median" with ``defaults="text"``: Chen 2018 §5.3.4, the most
        accurate in the text's experiments). All are in ``.smoothed`` anyway.
    rng : numpy.random.Generator, optional
    epsilon_p, epsilon_g, theta : float, optional
        Defaults 0.95ε, 0.05ε, 160/ε_g (``defaults="text"``: 0.8ε, 0.2ε, 5/ε_g, Chen 2018
        §5.6.1).
    threshold_share : float in (0, 1), optional
        ε_1/ε_g; default 1/(1 + 2^(2/3)) ≈ 0.387 (Lyu, Su & Li 2017), 0.5 with
        ``defaults="text"``.
    defaults : {"new", "text"}
        Which set of :data:`DEFAULTS` fills the parameters not given.

    Returns
    -------
    PegasusResult
        ``.estimates`` (length n), ``.smoothed`` (all smoothers), ``.noisy``, ``.groups``,
        ``.epsilon``, ``.epsilon_parts``.

    Raises
    ------
    ValueError
        Empty stream, NaN/inf, negative or fractional counts, ε ≤ 0, ε_p + ε_g ≠ ε, θ < 0,
        unknown smoother — before any noise is drawn.

    Notes
    -----
    Privacy: ε-DP under event-level neighbours (one tuple; one c_t changes by 1): the
    Perturber is the Laplace mechanism (ε_p), the Grouper the SVT per group (ε_g, Thm 17; the
    threshold/test split is public), composed sequentially (Thm 15); θ is public and
    smoothing is post-processing, so neither set of defaults changes the guarantee.

    Floating point. The Grouper computes every deviation exactly (``n1 dev = sum |n1 c_i -
    s1|`` in integers; the quotient rounded once and capped at :data:`DEV_MAX`, both monotone
    and 1-Lipschitz) and tests ``dev < θ̃ - noise``. Inside
    :func:`~.mechanisms.floating_point_safe` (analyst releases) θ is rounded to, and both
    Grouper noises are discrete Laplace in whole steps of, one
    :class:`~.mechanisms.ComparisonGrid` for the deviation's sensitivity 2: the right-hand side
    is an exact double, the quotient's rounding (below a quarter step) stays within the
    grid's ``K`` steps, and the widened scales pay for it, so every test is exact and the
    Grouper spends ε_g. The Perturber's noise is :func:`~.mechanisms.laplace`'s grid noise.

    Runs :class:`PegasusStream` over the whole stream; identical to pushing the counts one by
    one with the same ``rng``.

    References
    ----------
    Chen 2018 §5.3, Alg. 15 (PeGaSus), Alg. 16 (DBG), eq. 5.4-5.7, Thm 15, 17; text defaults
    §5.6.1. Lyu, Su & Li 2017, Alg. 7 (SVT budget split).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.engine.streams import pegasus
    >>> counts = np.array([10] * 30 + [60] * 30)
    >>> r = pegasus(counts, epsilon=1.0, rng=np.random.default_rng(0))
    >>> r.estimates.shape, r.smoother
    ((60,), 'adaptive')
    >>> r.estimates[[5, 55]].round(0).tolist()
    [10.0, 59.0]
    """
    counts = _check_stream(counts)
    stream = PegasusStream(
        epsilon, smoother, rng, epsilon_p=epsilon_p, epsilon_g=epsilon_g, theta=theta,
        threshold_share=threshold_share, defaults=defaults,
    )
    stream._feed(counts, last=True)
    return stream.result()


def deviation_grouper(
    counts,
    epsilon_g: float,
    theta: float,
    rng: np.random.Generator | None = None,
    *,
    threshold_share: float = 0.5,
) -> np.ndarray:
    """The Deviation-Based Grouper alone (Chen 2018 Alg. 16): the group id of every step.

    ``threshold_share`` is the part of ε_g on each group's threshold (0.5: the text's
    Lap(4/ε_g) and Lap(8/ε_g); :data:`LYU_THRESHOLD_SHARE` for Lyu, Su & Li 2017's split).

    ``epsilon_g = math.inf`` runs the noiseless rule of Chen 2018 Example 7 (not private).

    Notes
    -----
    Privacy: ε_g-DP (event-level neighbours) for finite ε_g (Chen 2018 Thm 17): SVT with
    Lap(2/ε_1) on each group's threshold and Lap(4/ε_2) on each deviation test, ε_1 + ε_2 = ε_g.

    References
    ----------
    Chen 2018 §5.3.2, Alg. 16, Example 7, Lemma 16, Thm 17.

    Examples
    --------
    >>> import math
    >>> from dpwidgets.engine.streams import deviation_grouper
    >>> deviation_grouper([5] * 6 + [90] * 6, epsilon_g=math.inf, theta=20.0).tolist()
    [0, 0, 0, 0, 0, 0, 1, 2, 2, 2, 2, 2]
    """
    counts = _check_stream(counts)
    if isinstance(theta, bool) or not isinstance(theta, Real) or not math.isfinite(theta) or theta < 0:
        raise ValueError(f"theta must be a finite number >= 0, got {theta!r}")
    threshold_share = _check_share(threshold_share, "threshold_share")
    if isinstance(epsilon_g, Real) and not isinstance(epsilon_g, bool) and epsilon_g == math.inf:
        noise = np.zeros((counts.size, 2))
    else:
        epsilon_g = check_epsilon(epsilon_g, "epsilon_g")
        rng = check_rng(rng)
        grid, theta, grouper_scales = _grouper_setup(epsilon_g, threshold_share, float(theta))
        noise = _noise_rows(np.array(grouper_scales), (counts.size, 2), rng, grid)
    starts = _grouper_run(_GroupState(), counts, noise[:, 0], noise[:, 1], float(theta))
    fresh = np.zeros(counts.size, dtype=np.int64)
    fresh[starts] = 1
    return np.cumsum(fresh) - 1
