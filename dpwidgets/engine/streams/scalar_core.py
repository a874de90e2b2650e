"""PeGaSus's sequential core (Chen 2018 Alg. 15-16, §5.3.3): the state where one stream's Grouper
and smoothers stopped, and the loop that feeds it one step at a time. Part of
:mod:`~dpwidgets.engine.streams`.
"""

from __future__ import annotations

import heapq
import math

from .checks import DEV_MAX
from .constants import _TREE_MIN_GROUP


class _GroupState:
    """Where one stream's Grouper and smoothers stopped, so a stream can be fed in pieces.

    Always current: ``t`` (steps seen), whether the last group is open, its noisy threshold,
    the last group's id and first step, ``values`` (the true counts of the open group, in
    order), ``noisy`` (the noisy counts of the last group, open or a closed singleton) and
    the running ``sum``, ``mean = sum / len(noisy)`` and Welford's ``m2`` of ``noisy`` (stale
    after a median-only run).

    Caches of the scalar loop (:func:`_run_core`), valid while ``caches`` is True: ``n`` and
    ``total`` of ``values``; once the group has ``_TREE_MIN_GROUP`` members a histogram of
    ``values`` with a pointer p and the number and sum of the values <= p, so
    ``dev = m·k − s + (S − s) − m·(n − k)`` (k values <= the mean m, summing to s) costs the
    pointer's move to floor(m); and two heaps for the running median. A vectorised run leaves
    them stale; :func:`_sync_scalar` rebuilds them from ``values`` and ``noisy`` (the outputs
    depend on the multisets only, not on how the heaps or the pointer got there).
    """

    __slots__ = (
        "t", "open", "noisy_threshold", "gid", "start", "values", "noisy", "sum", "mean", "m2",
        "caches", "n", "total", "cap", "hist", "ptr", "below_n", "below_s", "lo", "hi",
    )

    def __init__(self) -> None:
        self.t = 0
        self.open = False  # Alg. 16 line 2: at t = 1 the last group is "closed, empty"
        self.noisy_threshold = math.nan
        self.gid = -1
        self.start = 0
        self.values: list[int] = []
        self.noisy: list[float] = []
        self.sum = 0.0
        self.mean = 0.0
        self.m2 = 0.0
        self.caches = True
        self.n = 0
        self.total = 0
        self.cap = 0
        self.hist: list[int] | None = None
        self.ptr = -1
        self.below_n = 0
        self.below_s = 0
        self.lo: list[float] = []
        self.hi: list[float] = []


def _histogram(values: list[int], at_least: int) -> tuple[int, list[int]]:
    """Counts of the integer ``values`` by value, capacity (a power of 2) > ``at_least``."""
    cap = 64
    while cap <= at_least:
        cap *= 2
    hist = [0] * cap
    for v in values:
        hist[v] += 1
    return cap, hist


def _sync_scalar(st: _GroupState) -> None:
    """Rebuild the scalar loop's caches from ``values`` and ``noisy`` after a vectorised run."""
    if st.caches:
        return
    values = st.values
    st.n, st.total = len(values), sum(values)
    st.cap, st.hist = _histogram(values, max(values)) if len(values) >= _TREE_MIN_GROUP else (0, None)
    st.ptr, st.below_n, st.below_s = -1, 0, 0
    ordered = sorted(st.noisy)
    half = (len(ordered) + 1) // 2  # lo holds the smaller half (one more when odd)
    st.lo = [-x for x in reversed(ordered[:half])]  # ascending: already a heap
    st.hi = ordered[half:]
    st.caches = True


# The steps of one Grouper test and one join, shared with the vectorised core's histogram
# tests. A histogram ``hist`` counts the group's members by value (a list indexed by value
# here, a Counter there); the pointer ``ptr`` carries the number ``below_n`` and sum
# ``below_s`` of the members <= ptr.


def _move_pointer(hist, ptr: int, below_n: int, below_s: int, q: int) -> tuple[int, int, int]:
    """Move the pointer to ``q``, keeping the number and sum of the members <= it."""
    while ptr < q:
        ptr += 1
        below_n += hist[ptr]
        below_s += hist[ptr] * ptr
    while ptr > q:
        below_n -= hist[ptr]
        below_s -= hist[ptr] * ptr
        ptr -= 1
    return ptr, below_n, below_s


def _deviation_n(below_n: int, below_s: int, c: int, floor_m: int, n1: int, s1: int) -> int:
    """``n1 · dev`` of the group with ``c`` joined (``n1`` members summing to ``s1``), from the
    number and sum of the old members <= floor(m): ``sum |n1 c_i - s1|``, an exact integer."""
    if c <= floor_m:
        below_n += 1
        below_s += c
    return 2 * (s1 * below_n - n1 * below_s)


def _joined_deviation_n(c: int, values: list[int], n: int, total: int, hist: list[int] | None,
                        cap: int, ptr: int, below_n: int, below_s: int
                        ) -> tuple[int, int, int, int]:
    """``(n + 1) · dev`` of the open group (``n`` members ``values`` summing to ``total``) with
    ``c`` joined, and the pointer moved to floor(m): directly while the group is small
    (``hist`` None), by the histogram's pointer once it is not."""
    n1 = n + 1
    s1 = total + c
    floor_m = s1 // n1  # the values <= m = s1/n1 are those <= floor(m)
    if hist is None:
        dev_n = abs(n1 * c - s1)  # n1 dev, an exact integer
        for v in values:
            dev_n += abs(n1 * v - s1)
        return dev_n, ptr, below_n, below_s
    ptr, below_n, below_s = _move_pointer(hist, ptr, below_n, below_s, min(floor_m, cap - 1))
    return _deviation_n(below_n, below_s, c, floor_m, n1, s1), ptr, below_n, below_s


def _count_member(hist, ptr: int, below_n: int, below_s: int, c: int) -> tuple[int, int]:
    """Count the new member ``c`` in ``hist`` (in place) and in the pointer's number and sum."""
    hist[c] += 1
    if c <= ptr:
        below_n += 1
        below_s += c
    return below_n, below_s


def _fit(hist: list[int], cap: int, c: int) -> int:
    """Grow the list histogram (in place) by doublings until it holds value ``c``; its capacity."""
    if c >= cap:
        grown = cap
        while grown <= c:
            grown *= 2
        hist.extend([0] * (grown - cap))
        cap = grown
    return cap


def _push_median(lo: list[float], hi: list[float], x: float) -> float:
    """Add ``x`` to the two heaps of the running median (in place); the new median."""
    if x <= -lo[0]:
        heapq.heappush(lo, -x)
        if len(lo) > len(hi) + 1:
            heapq.heappush(hi, -heapq.heappop(lo))
    else:
        heapq.heappush(hi, x)
        if len(hi) > len(lo):
            heapq.heappush(lo, -heapq.heappop(hi))
    return -lo[0] if len(lo) > len(hi) else (hi[0] - lo[0]) / 2.0


def _shrink(gsum: float, mean: float, m2: float, n: int, x: float, tau2: float
            ) -> tuple[float, float, float, float]:
    """The running sum, mean and Welford's m2 of the group's noisy counts after ``x`` joined
    (the n-th), and ``x`` smoothed by James-Stein shrinkage towards the mean."""
    # The group's mean is its running sum over its size (vectorised exactly by _group_means).
    delta = x - mean
    gsum += x
    mean = gsum / n
    m2 += delta * (x - mean)
    # eq. 5.7 (read as shrinkage towards the mean; see the module docstring)
    js = mean + (1.0 - (n - 1) * tau2 / m2) * (x - mean) if m2 > 0.0 else x
    return gsum, mean, m2, js


def _run_core(
    st: _GroupState,
    counts: list[int],
    zp: list[float],
    zth: list[float],
    zdev: list[float],
    theta: float,
    tau2: float,
    out_noisy: list[float],
    out_median: list[float],
    out_average: list[float],
    out_js: list[float],
    out_gid: list[int],
    out_start: list[int],
    median_only: bool = False,
) -> None:
    """The scalar form of Perturber, Grouper and smoothers, one step at a time: the reference
    that :func:`_vector_core` reproduces bit for bit, and the online form's :meth:`push`.

    ``zp`` is the Perturber noise (already scaled, Lap(1/ε_p)); ``zth`` the threshold noise
    Lap(4/ε_g), used only at steps that open a group; ``zdev`` the deviation noise Lap(8/ε_g),
    used only at steps that test an open group. The state lives in local variables during the
    loop and is written back to ``st`` at the end. ``median_only`` (for the hierarchies,
    which keep one smoother) fills only ``out_noisy``, ``out_median`` and ``out_start`` (what
    the median and adaptive smoothers need) and skips the average and James-Stein state (left
    stale in ``st``: do not mix modes).
    """
    _sync_scalar(st)
    tree_min = _TREE_MIN_GROUP
    t, is_open, thr, gid, start = st.t, st.open, st.noisy_threshold, st.gid, st.start
    values, gnoisy, n, total, cap, hist = st.values, st.noisy, st.n, st.total, st.cap, st.hist
    ptr, below_n, below_s = st.ptr, st.below_n, st.below_s
    lo, hi, gsum, mean, m2 = st.lo, st.hi, st.sum, st.mean, st.m2
    put_noisy, put_median, put_average = out_noisy.append, out_median.append, out_average.append
    put_js, put_gid, put_start = out_js.append, out_gid.append, out_start.append
    for c, e_p, e_th, e_dev in zip(counts, zp, zth, zdev, strict=True):
        x = c + e_p  # Alg. 15 line 2: Perturber
        extend = False
        if is_open:
            # Alg. 16 line 11: dev(C_t[G ∪ {t}]) + Lap(8/eps_g) < theta~ ?
            dev_n, ptr, below_n, below_s = _joined_deviation_n(
                c, values, n, total, hist, cap, ptr, below_n, below_s
            )
            extend = min(dev_n / (n + 1), DEV_MAX) < thr - e_dev
        if extend:
            # Alg. 16 line 12: G <- G ∪ {t}, still open.
            values.append(c)
            gnoisy.append(x)
            n += 1
            total += c
            if hist is None:
                if n >= tree_min:
                    cap, hist = _histogram(values, max(values))
                    ptr, below_n, below_s = -1, 0, 0
            else:
                cap = _fit(hist, cap, c)
                below_n, below_s = _count_member(hist, ptr, below_n, below_s, c)
            med = _push_median(lo, hi, x)
            if not median_only:
                gsum, mean, m2, js = _shrink(gsum, mean, m2, n, x, tau2)
        else:
            # A new group {t}: open with a fresh noisy threshold (Alg. 16 lines 6-8) when the
            # last group was closed; otherwise (line 14) G is closed and so is {t}.
            gid += 1
            start = t
            if is_open:
                is_open = False
            else:
                is_open = True
                thr = theta + e_th
                values = [c]
                n = 1
                total = c
                hist = None
            gnoisy = [x]
            lo = [-x]
            hi = []
            gsum = mean = x
            m2 = 0.0
            med = js = x
        put_noisy(x)
        put_median(med)
        put_start(start)
        if not median_only:
            put_average(mean)
            put_js(js)
            put_gid(gid)
        t += 1
    st.t, st.open, st.noisy_threshold, st.gid, st.start = t, is_open, thr, gid, start
    st.values, st.noisy, st.n, st.total, st.cap, st.hist = values, gnoisy, n, total, cap, hist
    st.ptr, st.below_n, st.below_s = ptr, below_n, below_s
    st.lo, st.hi, st.sum, st.mean, st.m2 = lo, hi, gsum, mean, m2
