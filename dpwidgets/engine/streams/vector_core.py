"""PeGaSus's vectorised core: the Grouper batched over a feed, and the smoothers' running medians,
means and sums of squares of every step at once, with the scalar core's decisions and outputs
bit for bit. Part of :mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

from collections import Counter
from functools import cache

import numpy as np

from .checks import _EXACT_INT64, DEV_MAX, _deviations
from .constants import (
    _CROSS_CELLS,
    _GROUP_SUM_STEPS,
    _LONG_CHUNK,
    _MAX_CHUNK,
    _POINTER_STEP,
    _SCALAR_STEPS,
    _SHORT_FAIL_SHARE,
    _SHORT_OFFSETS,
    _SLICE_SHARE,
    _TREE_MIN_GROUP,
)
from .scalar_core import _count_member, _deviation_n, _GroupState, _move_pointer

# The vectorised Grouper. It must take every decision of the scalar loop above, bit for bit:
# the same float operations in the same order, only batched.


def _first_failures(
    counts: np.ndarray, csum: np.ndarray, thresholds: np.ndarray, zdev: np.ndarray
) -> tuple[np.ndarray, int]:
    """For a group opened at *every* step s at once: the first offset j (1, 2, ...) at which
    its deviation test fails (Alg. 16 line 11), 0 if none failed within ``depth`` offsets.

    With the text's defaults most groups end within a few steps, so deciding the first
    offsets of every possible start in a few array operations is cheaper than testing the
    actual starts one by one; where the tests nearly all pass (long groups) this stops early
    (:data:`_SHORT_FAIL_SHARE`) and :func:`_grow_group` takes over. The deviation of a group
    of j + 1 < ``_TREE_MIN_GROUP`` counts is summed as the scalar loop sums it: |c_t − m|
    first, then the members in order.
    """
    n = counts.size
    if n and int(counts.max()) >= _EXACT_INT64:  # (j + 1) dev in Python integers
        counts, csum = counts.astype(object), csum.astype(object)
    fail = np.zeros(n, dtype=np.int64)
    open_ = np.ones(n, dtype=bool)  # the starts with no failed test yet
    alive = None  # their indices, once few enough to gather rather than slice
    depth = 0
    for j in range(1, min(_SHORT_OFFSETS, n - 1) + 1):
        width = n - j  # starts s with s + j a step of this feed
        if alive is None:  # most starts still open: whole-array slices, no gathers
            total = csum[j + 1 :] - csum[:width]
            dev_n = np.abs((j + 1) * counts[j:] - total)  # (j + 1) dev, exact integers
            term = np.empty_like(dev_n)
            for k in range(j):
                np.subtract((j + 1) * counts[k : k + width], total, out=term)
                dev_n += np.abs(term, out=term)
            dev = _deviations(dev_n, j + 1)
            failed = open_[:width] & ~(dev < thresholds[:width] - zdev[j:])
            failed = np.flatnonzero(failed)
            open_[failed] = False
            remaining = np.count_nonzero(open_[:width])
            if remaining < _SLICE_SHARE * width:
                alive = np.flatnonzero(open_[:width])
        else:
            alive = alive[: np.searchsorted(alive, width)]
            if alive.size == 0:
                break
            total = csum[alive + j + 1] - csum[alive]
            dev_n = np.abs((j + 1) * counts[j:][alive] - total)
            term = np.empty_like(dev_n)
            for k in range(j):
                np.subtract((j + 1) * counts[k:][alive], total, out=term)
                dev_n += np.abs(term, out=term)
            ok = _deviations(dev_n, j + 1) < thresholds[alive] - zdev[j:][alive]
            failed = alive[~ok]
            alive = alive[ok]
            remaining = alive.size
        fail[failed] = j
        depth = j
        if j >= 2 and failed.size < _SHORT_FAIL_SHARE * (remaining + failed.size):
            break
    return fail, depth


def _direct_tests(counts: np.ndarray, zdev: np.ndarray, pos: int, values: list[int],
                  thr: float) -> tuple[int, int]:
    """The tests of an open group of fewer than ``_TREE_MIN_GROUP`` members, all at once:
    each sums |c_t − m| and then |c_i − m| over the members in order (the scalar loop's
    order; the padding adds exact zeros). Returns (the step that fails or -1, steps tested)."""
    n0 = len(values)
    span = min(_TREE_MIN_GROUP - n0, counts.size - pos)
    new = counts[pos : pos + span]
    members = np.concatenate((np.asarray(values, dtype=np.int64), new[:-1]))
    sizes = np.arange(n0, n0 + span)  # members before each test
    totals = sum(values) + np.cumsum(new)
    big = max(values, default=0) >= _EXACT_INT64 or int(new.max(initial=0)) >= _EXACT_INT64
    rows = np.empty((span, members.size + 1), dtype=object if big else np.int64)
    if big:
        totals = totals.astype(object)
    rows[:, 0] = new
    rows[:, 1:] = members
    terms = np.abs((sizes + 1)[:, None] * rows - totals[:, None])  # n1 |c - m|, exact
    terms[np.arange(members.size + 1) > sizes[:, None]] = 0
    ok = _deviations(terms.sum(axis=1), sizes + 1) < thr - zdev[pos : pos + span]
    return (-1 if ok.all() else pos + int(np.argmin(ok))), span


def _grow_group(
    counts: np.ndarray, zdev: np.ndarray, pos: int, values: list[int], thr: float,
    first_chunk: int = 0,
) -> tuple[int, list[int]]:
    """Grow the open group with members ``values`` from step ``pos`` on (Alg. 16 lines 11-12).

    Returns the step whose test fails (the closed singleton of line 14), or ``counts.size``
    if the group is still open at the end, and then its members. Below ``_TREE_MIN_GROUP``
    members the deviation is summed directly (:func:`_direct_tests`); from there on it is the
    scalar loop's histogram formula, evaluated for chunks of steps at once
    (:func:`_chunk_tests`): a step's test does not depend on whether later steps join. The
    first chunk is twice ``first_chunk`` (the last long group's length; between
    ``_LONG_CHUNK`` and ``_MAX_CHUNK``), then they double. A chunk has a fixed cost of some
    fifty array operations, so when ``first_chunk`` says that groups have been short, the
    first ``_SCALAR_STEPS`` tests run one by one (:func:`_histogram_tests`).
    """
    end = counts.size
    if len(values) < _TREE_MIN_GROUP:
        fails, span = _direct_tests(counts, zdev, pos, values, thr)
        if fails >= 0:
            return fails, values
        values = values + counts[pos : pos + span].tolist()
        pos += span
    if first_chunk < _SCALAR_STEPS and pos < end:  # groups have been short: one by one first
        stop = min(end, pos + _SCALAR_STEPS)
        fails, done = _histogram_tests(counts[pos:stop].tolist(), zdev[pos:stop].tolist(),
                                       values, thr)
        if fails >= 0:
            return pos + fails, values
        pos += done
    first = pos
    n, total = len(values), sum(values)
    ordered = np.sort(np.asarray(values, dtype=np.int64))
    size = min(max(_LONG_CHUNK, 2 * first_chunk), _MAX_CHUNK)
    while pos < end:
        vals = counts[pos : pos + size]
        size *= 2
        fails = _chunk_tests(vals, zdev[pos : pos + vals.size], n, total, ordered, thr)
        if fails >= 0:
            return pos + fails, values
        n, total = n + vals.size, total + int(vals.sum())
        ordered = np.sort(np.concatenate((ordered, vals)), kind="stable")
        pos += vals.size
    return end, values + counts[first:end].tolist()


def _histogram_tests(new: list[int], zdev: list[float], values: list[int],
                     thr: float) -> tuple[int, int]:
    """Tests of an open group of at least ``_TREE_MIN_GROUP`` members, one step at a time, as
    :func:`_run_core` makes them (a histogram of the members and a pointer at floor(m)).

    Appends the steps that join to ``values``. Returns (index in ``new`` of the step that
    fails or -1, steps done); stops early, undecided, where floor(m) jumps by more than
    ``_POINTER_STEP`` (very large counts), leaving the rest to :func:`_chunk_tests`.
    """
    n, total = len(values), sum(values)
    hist = Counter(values)  # a missing value counts 0, as in the scalar core's list
    ptr = (total + new[0]) // (n + 1)  # the first test's floor(m): start the pointer there
    below_n = below_s = 0
    for v in values:
        if v <= ptr:
            below_n += 1
            below_s += v
    for i, (c, e_dev) in enumerate(zip(new, zdev, strict=True)):
        n1 = n + 1
        s1 = total + c
        q = s1 // n1  # floor(m), m = s1 / n1
        if abs(q - ptr) > _POINTER_STEP:
            return -1, i
        ptr, below_n, below_s = _move_pointer(hist, ptr, below_n, below_s, q)
        if not min(_deviation_n(below_n, below_s, c, q, n1, s1) / n1, DEV_MAX) < thr - e_dev:
            return i, i
        values.append(c)
        n, total = n1, s1
        below_n, below_s = _count_member(hist, ptr, below_n, below_s, c)
    return -1, len(new)


def _chunk_tests(vals: np.ndarray, zdev: np.ndarray, n: int, total: int, ordered: np.ndarray,
                 thr: float) -> int:
    """Tests of the next ``vals.size`` steps of an open group with ``n`` members (sorted
    values ``ordered``, sum ``total``), as if each joined: the index of the first that fails,
    or -1.

    k (members <= floor(m_t)) counts the members before the chunk by a binary search in
    ``ordered``, and those in it by accumulating its changes: [c_t <= floor(m_t)] at each
    step and, where floor(m) moves, ± the occurrences so far of the values it crosses.
    """
    b = vals.size
    s1 = total + np.cumsum(vals)
    n1 = np.arange(n + 1, n + 1 + b)
    level = s1 // n1  # floor(m), m = s1 / n1: the members <= m are those <= level
    k_before = np.searchsorted(ordered, level, side="right")
    s_before = np.concatenate(([0], np.cumsum(ordered)))[k_before]
    joins = vals <= level
    dk = joins.astype(np.int64)
    ds = dk * vals
    moves = np.flatnonzero(level[1:] != level[:-1]) + 1  # steps where floor(m) moves
    if moves.size:
        prev, cur = level[moves - 1], level[moves]
        up = cur > prev
        lower = np.where(up, prev, cur)  # the move crosses the values lower+1 .. upper
        width = np.where(up, cur - prev, prev - cur)
        items = int(width.sum())
        if items * b <= _CROSS_CELLS:  # few crossings: compare with the chunk directly
            at = np.repeat(moves, width)
            crossed = np.repeat(lower + 1 - np.cumsum(width) + width, width) + np.arange(items)
            seen = ((vals == crossed[:, None]) & (np.arange(b) < at[:, None])).sum(axis=1)
        else:  # many: binary searches in (value or its rank, step) keys
            top = int(vals.max())
            if items <= 4 * b and top < 1 << 40:  # the crossed values themselves
                key_vals, first = vals, lower + 1
            else:  # ranks among the chunk's distinct values
                distinct = np.unique(vals)
                key_vals = np.searchsorted(distinct, vals)
                first = np.searchsorted(distinct, lower, side="right")
                width = np.searchsorted(distinct, lower + width, side="right") - first
            at = np.repeat(moves, width)
            key = np.repeat(first - np.cumsum(width) + width, width) + np.arange(at.size)
            crossed = key if key_vals is vals else distinct[key]
            order = np.argsort(key_vals.astype(np.uint16) if top < 1 << 16 and key_vals is vals
                               else key_vals, kind="stable")
            keys = key_vals[order] * b + order  # (value, step), sorted
            seen = np.searchsorted(keys, key * b + at) - np.searchsorted(keys, key * b)
        seen = np.where(np.repeat(up, width), seen, -seen)
        np.add.at(dk, at, seen)
        np.add.at(ds, at, seen * crossed)
    below = k_before + np.cumsum(dk)
    s = s_before + np.cumsum(ds)
    if int(s1[-1]) * int(n1[-1]) < 2**61:  # n1 dev = 2 (s1 below - n1 s) fits in int64
        dev_n = 2 * (s1 * below - n1 * s)
    else:  # exact in Python integers (very large counts)
        dev_n = np.array([2 * (int(a) * int(k) - int(c) * int(t))
                          for a, k, c, t in zip(s1, below, n1, s, strict=True)], dtype=object)
    ok = _deviations(dev_n, n1) < thr - zdev
    return -1 if ok.all() else int(np.argmin(ok))


def _grouper_run(st: _GroupState, counts: np.ndarray, zth: np.ndarray, zdev: np.ndarray,
                 theta: float) -> list[int]:
    """The Deviation-Based Grouper (Chen 2018 Alg. 16) over ``counts`` from ``st``.

    Returns the steps (indices into ``counts``) at which a group starts — opened with a fresh
    threshold (lines 6-8) or closed singletons (line 14) — and moves ``st`` past them. The
    decisions are those of :func:`_run_core`, bit for bit: groups are followed one after the
    other (each start depends on where the previous group failed), the first offsets of all
    possible starts decided at once by :func:`_first_failures`, longer groups grown by
    :func:`_grow_group`.
    """
    end = counts.size
    starts: list[int] = []
    pos = 0
    is_open, thr, values = st.open, st.noisy_threshold, st.values
    if is_open:  # the open group of the previous feed goes on
        pos, values = _grow_group(counts, zdev, 0, values, thr)
        if pos < end:
            starts.append(pos)
            is_open = False
            pos += 1
    if pos < end:
        thresholds = theta + zth  # Alg. 16 line 8, for a group opened at each step
        csum = np.concatenate(([0], np.cumsum(counts)))
        fail, depth = _first_failures(counts, csum, thresholds, zdev)
        fail_list = fail.tolist()
        put = starts.append
        last_long = 0
        while pos < end:
            put(pos)  # the last group is closed: {t} opens a new one
            f = fail_list[pos]
            if f:
                put(pos + f)  # closed singleton
                pos += f + 1
                continue
            tested = pos + min(depth, end - 1 - pos) + 1
            thr = float(thresholds[pos])
            fails, values = _grow_group(counts, zdev, tested, counts[pos:tested].tolist(), thr,
                                        last_long)
            # The next long group's first chunk: as long as this one (a second chunk costs
            # more than testing steps beyond a group's end).
            last_long = max(last_long // 2, fails - pos)
            if fails == end:
                is_open = True
                break
            put(fails)
            is_open = False
            pos = fails + 1
    st.t += end
    st.gid += len(starts)
    if starts:
        st.start = st.t - end + starts[-1]
    st.open, st.noisy_threshold = is_open, thr
    st.values = values if is_open else []
    st.caches = False
    return starts


def _running_median(values: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """``median(values[starts[t] .. t])`` for every t (``starts`` non-decreasing, <= t).

    The MedianSmoother (eq. 5.6) of every step at once: pandas' rolling median with these
    variable windows (a skip list, restarted where a group starts). The median of an even
    count is (lower + upper) / 2, the scalar loop's ``(hi[0] - lo[0]) / 2``, bit for bit.
    """
    import pandas as pd

    indexer = _group_window_indexer()(starts)
    return pd.Series(values).rolling(indexer, min_periods=1).median().to_numpy()


@cache
def _group_window_indexer():
    from pandas.api.indexers import BaseIndexer

    class GroupSoFar(BaseIndexer):
        """Windows from each step's group start to the step itself."""

        def __init__(self, starts: np.ndarray) -> None:
            super().__init__(window_size=0)
            self.starts = starts

        def get_window_bounds(self, num_values=0, min_periods=None, center=None,
                              closed=None, step=None):
            return (np.asarray(self.starts, dtype=np.int64),
                    np.arange(1, num_values + 1, dtype=np.int64))

    return GroupSoFar


def _group_means(noisy: np.ndarray, starts: list[int], k: int, total: float, mean: float,
                 m2: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Running sum, mean and sum of squared deviations of each step's group so far, in the
    scalar loop's arithmetic. ``starts`` are the steps that start a group; the steps before
    the first continue a group of ``k`` members with ``total``, ``mean`` and ``m2``.

    The sums are sequential, as the loop's running total makes them (:func:`_group_sums`);
    the means are those sums over the group's size so far; the squared deviations follow:
    each step adds the loop's ``delta·(x − mean)`` (the count minus the mean before it, times
    the count minus the mean after it), in order.
    """
    n = noisy.size
    carried = starts[0] if starts else n  # the steps continuing the last group
    heads = np.array(([0] if carried else []) + starts, dtype=np.int64)
    first = noisy[heads].copy()
    if carried:
        first[0] = total + noisy[0]
    sums = _group_sums(noisy, heads, n, first)
    fresh = np.zeros(n, dtype=bool)
    fresh[heads] = True
    head_at = np.maximum.accumulate(np.where(fresh, np.arange(n), 0))
    sizes = np.arange(n) - head_at + 1.0
    if carried:
        sizes[:carried] += k
    means = sums / sizes
    before = np.empty(n)
    before[0] = mean
    before[1:] = means[:-1]
    terms = (noisy - before) * (noisy - means)
    # m2 = 0 at a new group's first count; the carried group adds its first term to m2.
    first_m2 = np.zeros(heads.size)
    if carried:
        first_m2[0] = m2 + terms[0]
    return sums, means, _group_sums(terms, heads, n, first_m2)


def _group_sums(terms: np.ndarray, heads: np.ndarray, n: int, first: np.ndarray) -> np.ndarray:
    """``out[h] = first``, then ``out[t] = out[t-1] + terms[t]`` inside each group (heads
    ``heads``, one after the other up to ``n``): sequential sums, as a running total makes
    them. The first ``_GROUP_SUM_STEPS`` steps of all groups at once, the rest of each longer
    group by its own ``cumsum``."""
    out = np.empty(n)
    lengths = np.diff(np.append(heads, n))
    order = np.argsort(-lengths, kind="stable")  # longest first: the groups still going
    heads, lengths = heads[order], lengths[order]  # at an offset are a prefix
    total = first[order]
    out[heads] = total
    for k in range(1, min(_GROUP_SUM_STEPS, int(lengths[0]))):
        going = int(np.searchsorted(-lengths, -k, side="left"))  # groups longer than k
        at = heads[:going] + k
        total = total[:going] + terms[at]
        out[at] = total
    for head, length in zip(heads.tolist(), lengths.tolist(), strict=True):
        if length <= _GROUP_SUM_STEPS:
            break
        rest = slice(head + _GROUP_SUM_STEPS, head + length)
        out[rest] = np.cumsum(np.concatenate(([out[rest.start - 1]], terms[rest])))[1:]
    return out


def _vector_core(st: _GroupState, counts: np.ndarray, noise: np.ndarray, theta: float,
                 tau2: float, median_only: bool = False) -> dict[str, np.ndarray]:
    """Perturber, Grouper and smoothers over a whole feed, vectorised around the Grouper's
    sequential decisions; the outputs of :func:`_run_core` on the same noise, bit for bit.

    Returns ``noisy``, ``median``, ``start`` (and unless ``median_only`` also ``average``,
    ``james_stein`` and ``gid``) as arrays, and moves ``st`` past the feed.
    """
    n = counts.size
    t0, gid0, start0 = st.t, st.gid, st.start
    carried = st.noisy if st.open else []  # the open group goes on: its noisy counts so far
    k0, sum0, mean0, m20 = len(carried), st.sum, st.mean, st.m2
    noisy = counts + noise[:, 0]  # Alg. 15 line 2: Perturber
    starts = _grouper_run(st, counts, noise[:, 1], noise[:, 2], theta)
    fresh = np.zeros(n, dtype=bool)
    fresh[starts] = True
    first = np.maximum.accumulate(np.where(fresh, np.arange(n), -1))
    start = np.where(first >= 0, t0 + first, start0)
    # Window starts inside [carried, noisy]: the carried group starts at 0.
    window_starts = np.where(first >= 0, first + k0, 0)
    if k0:
        ext = np.concatenate((np.asarray(carried, dtype=float), noisy))
        window_starts = np.concatenate((np.zeros(k0, dtype=np.int64), window_starts))
        median = _running_median(ext, window_starts)[k0:]
    else:
        median = _running_median(noisy, window_starts)
    tail = noisy[starts[-1] :] if starts else noisy
    st.noisy = tail.tolist() if starts else carried + tail.tolist()
    out = {"noisy": noisy, "median": median, "start": start}
    if median_only:
        return out
    total, mean, m2 = _group_means(noisy, starts, k0, sum0, mean0, m20)
    st.sum, st.mean, st.m2 = float(total[-1]), float(mean[-1]), float(m2[-1])
    # eq. 5.7, James-Stein towards the group mean (module docstring), as the scalar loop
    sizes = np.arange(t0, t0 + n) - start + 1
    shrink = m2 > 0.0
    with np.errstate(divide="ignore", invalid="ignore"):
        js = mean + (1.0 - (sizes - 1) * tau2 / np.where(shrink, m2, 1.0)) * (noisy - mean)
    out.update(average=mean, james_stein=np.where(shrink, js, noisy),
               gid=gid0 + np.cumsum(fresh))
    return out
