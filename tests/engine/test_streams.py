"""Tests for dpwidgets.engine.streams: PeGaSus (Chen 2018 Ch. 5), its queries, hierarchies, baselines.

Every seed is fixed, so each test is deterministic. The exactness tests (constants, batch ==
online, real time, WSS) compare against small brute-force references fed the *same* noise;
the accuracy tests state the stream, epsilon, seeds and the measured margin in a comment.
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import time

import numpy as np
import pytest

from dpwidgets.datasets import multi_state_streams, wifi_stream
from dpwidgets.engine.mechanisms import floating_point_safe, laplace
from dpwidgets.engine.streams import (
    DEFAULTS,
    LYU_THRESHOLD_SHARE,
    SMOOTHERS,
    Hierarchy,
    PegasusStream,
    _GroupState,
    _run_core,
    _vector_core,
    average_l1,
    backward_smoothing,
    binary_tree_window_sums,
    deviation,
    deviation_grouper,
    event_roc,
    hs_laplace,
    hs_pegasus,
    jump_drop_events,
    laplace_stream,
    low_signal_events,
    pegasus,
    phs_pegasus,
    prune_released,
    scaled_total_l1,
    sliding_window_sums,
    window_sum_smoother,
)

TEXT = {"defaults": "text"}  # Chen 2018 §5.6.1: eps_p = 0.8 eps, theta = 5/eps_g, median


def _budget_exact(result) -> None:
    assert math.fsum(result.epsilon_parts.values()) == result.epsilon
    assert all(v > 0 for v in result.epsilon_parts.values())


def _bursty(n: int, seed: int) -> np.ndarray:
    """A small stream with flat stretches, jumps and zeros (exercises the tree path too)."""
    rng = np.random.default_rng(seed)
    level = np.repeat(rng.choice([0, 3, 20, 150], size=n // 50 + 1), 50)[:n]
    return rng.poisson(level).astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Reference implementation of Alg. 15-16 + smoothers, recomputing everything (O(n^2))
# ---------------------------------------------------------------------------------------------


def _reference(counts, eps_p, eps_g, theta, seed, threshold_share=0.5):
    """Chen 2018 Alg. 15-16 line by line, with the noise drawn as PegasusStream documents it."""
    n = len(counts)
    e1, e2 = threshold_share * eps_g, (1 - threshold_share) * eps_g
    noise = laplace(np.array([1 / eps_p, 2 / e1, 4 / e2]), (n, 3), rng=np.random.default_rng(seed))
    noisy = counts + noise[:, 0]
    groups, est_med, est_avg = [], [], []
    gid, start, is_open, thr = -1, 0, False, None
    for t in range(n):
        if not is_open:  # lines 6-8
            gid, start, is_open, thr = gid + 1, t, True, theta + noise[t, 1]
        elif deviation(counts[start : t + 1]) + noise[t, 2] < thr:  # line 11
            pass  # line 12: extend
        else:  # line 14
            gid, start, is_open = gid + 1, t, False
        groups.append(gid)
        est_med.append(np.median(noisy[start : t + 1]))
        est_avg.append(np.mean(noisy[start : t + 1]))
    return np.array(groups), np.array(est_med), np.array(est_avg), noisy


def test_example_7_noiseless_grouper():
    # Chen 2018 Example 7: C = [5, 5, 6, 9, 10], theta = 2 -> P_5 = {{1,2,3},{4},{5}}.
    assert deviation_grouper([5, 5, 6, 9, 10], math.inf, 2.0).tolist() == [0, 0, 0, 1, 2]
    assert deviation([5, 5, 6]) == pytest.approx(4 / 3)
    assert deviation([5, 5, 6, 9]) == pytest.approx(5.5)


@pytest.mark.parametrize("seed, theta", [(0, None), (1, None), (2, 400.0)])
def test_constants_and_rule_match_the_text_exactly(seed, theta):
    # Same noise, recomputed from scratch: pins Lap(1/eps_p), Lap(4/eps_g), Lap(8/eps_g), the
    # default theta = 5/eps_g, the Alg. 16 rule on the *true* counts, and the median / average
    # smoothers (n = 3000). theta = 400 gives groups of hundreds of steps, which exercises the
    # histogram deviation (used from 32 members on).
    counts = _bursty(3000, seed)
    eps = 0.5
    ref_theta = 5 / (0.2 * eps) if theta is None else theta
    groups, med, avg, noisy = _reference(counts, 0.8 * eps, 0.2 * eps, ref_theta, seed)
    r = pegasus(counts, eps, rng=np.random.default_rng(seed), theta=theta, **TEXT)
    assert r.smoother == "median" and r.defaults == "text"
    if theta is not None:
        assert np.bincount(r.groups).max() > 100
    np.testing.assert_array_equal(r.groups, groups)
    np.testing.assert_allclose(r.noisy, noisy, rtol=0, atol=1e-9)
    np.testing.assert_allclose(r.estimates, med, rtol=0, atol=1e-9)
    np.testing.assert_allclose(r.smoothed["average"], avg, rtol=0, atol=1e-7)
    assert r.theta == pytest.approx(ref_theta)
    assert r.epsilon_parts["perturber"] == pytest.approx(0.4)
    _budget_exact(r)


@pytest.mark.parametrize("seed", [0, 1])
def test_new_defaults_are_public_constants_on_the_same_rule(seed):
    # Same reference as above with the new defaults: eps_g = 0.05 eps, theta = 160/eps_g and
    # the threshold/test split of Lyu, Su & Li 2017 (threshold Lap(2/eps_1), tests Lap(4/eps_2)).
    counts = _bursty(3000, seed)
    eps = 0.5
    d = DEFAULTS["new"]
    eps_p = d["perturber_share"] * eps
    eps_g = eps - eps_p
    assert d["threshold_share"] == LYU_THRESHOLD_SHARE == pytest.approx(1 / (1 + 2 ** (2 / 3)))
    groups, med, _, noisy = _reference(counts, eps_p, eps_g, 160 / eps_g, seed, LYU_THRESHOLD_SHARE)
    r = pegasus(counts, eps, rng=np.random.default_rng(seed))
    assert r.smoother == "adaptive" and r.defaults == "new"
    np.testing.assert_array_equal(r.groups, groups)
    np.testing.assert_allclose(r.noisy, noisy, rtol=0, atol=1e-9)
    np.testing.assert_allclose(r.smoothed["median"], med, rtol=0, atol=1e-9)
    assert r.theta == pytest.approx(160 / eps_g)
    assert r.epsilon_parts["grouper"] == pytest.approx(0.05 * eps)
    _budget_exact(r)
    # The group size each estimate used is the group so far, never the final one.
    used = r.group_size_used
    assert used[0] == 1 and np.all(used <= np.bincount(r.groups)[r.groups])
    assert np.all(r.window <= used)


def test_huge_epsilon_groups_follow_the_noiseless_rule():
    # theta irrational: n * dev is an integer, so no deviation ties with theta (noise ~1e-8).
    counts = _bursty(2000, 3)
    theta = 40 + math.sqrt(2) / 10
    r = pegasus(counts, 1e9, rng=np.random.default_rng(0), theta=theta)
    assert 50 < r.n_groups < 1900
    np.testing.assert_array_equal(r.groups, deviation_grouper(counts, math.inf, theta))
    np.testing.assert_allclose(r.noisy, counts, atol=1e-6)


def test_james_stein_shrinks_towards_the_group_mean():
    counts = np.zeros(400, dtype=np.int64)
    r = pegasus(counts, 1.0, rng=np.random.default_rng(5), theta=1e6, **TEXT)  # one group
    assert r.n_groups == 1
    k = np.arange(1, 401)
    means = np.cumsum(r.noisy) / k
    m2 = np.array([np.sum((r.noisy[: i + 1] - means[i]) ** 2) for i in range(400)])
    tau2 = 2 / 0.8**2
    js = means + (1 - (k - 1) * tau2 / np.where(m2 > 0, m2, 1)) * (r.noisy - means)
    js[0] = r.noisy[0]
    np.testing.assert_allclose(r.smoothed["james_stein"], js, rtol=1e-9, atol=1e-9)


def _open_group_sizes(groups: np.ndarray) -> np.ndarray:
    """Sizes of the open groups of Alg. 16 on a stream where every open group ends by line 14.

    Line 14 closes G *and* the singleton {t}; line 7 then opens the next group, so the sizes
    alternate open, 1, open, 1, ... The last (possibly unfinished) group is dropped.
    """
    sizes = np.bincount(groups)
    assert np.all(sizes[1:-1:2] == 1)  # every closing step is a closed singleton (line 14)
    return sizes[0:-1:2]


def test_grouper_on_a_constant_stream_matches_the_svt_model_and_is_epsilon_free():
    # On a constant stream dev = 0, so an open group with threshold noise z (Lap(4/eps_g)) grows
    # while Lap(8/eps_g) < theta + z, theta = 5/eps_g: its size N is geometric given z, with
    # P(N = 1) = E_z[P(L8 >= 5 + z)] and P(N <= 4) = 1 - E_z[P(L8 < 5 + z)^4] (units 1/eps_g).
    # Every scale is a multiple of 1/eps_g, so the partition does not depend on eps at all
    # (same rng: identical groups). This is why PeGaSus with the text's defaults gains only a
    # fixed factor over LM on flat stretches (measured 0.756 of LM's L1 at any eps) and loses
    # to BS_k (k >= 2) there: see benchmarks/results/streams_unit_counts.md.
    from scipy import integrate, stats

    def expect(g):
        f = lambda z: g(z) * stats.laplace.pdf(z, scale=4)  # noqa: E731
        return sum(integrate.quad(f, a, b)[0] for a, b in [(-np.inf, -5), (-5, 0), (0, np.inf)])

    q = lambda z: stats.laplace.cdf(5 + z, scale=8)  # noqa: E731
    p1, p4 = expect(lambda z: 1 - q(z)), expect(lambda z: 1 - q(z) ** 4)  # 0.3091, 0.6933
    zeros = np.zeros(200_000, dtype=np.int64)
    runs = {eps: pegasus(zeros, eps, rng=np.random.default_rng(4), **TEXT) for eps in (1.0, 0.01)}
    np.testing.assert_array_equal(runs[1.0].groups, runs[0.01].groups)
    sizes = _open_group_sizes(runs[1.0].groups)
    # ~33,500 open groups: binomial sd of each proportion <= 0.0027, so 0.011 is 4 sd.
    assert sizes.size > 30_000
    assert np.mean(sizes == 1) == pytest.approx(p1, abs=0.011)
    assert np.mean(sizes <= 4) == pytest.approx(p4, abs=0.011)
    sevens = pegasus(np.full(50_000, 7), 0.1, rng=np.random.default_rng(4), **TEXT)
    np.testing.assert_array_equal(sevens.groups, runs[1.0].groups[:50_000])
    # Error of the median smoother relative to LM's E|Lap(1/eps)| = 1/eps: eps-free, 0.756
    # (200,000 steps; the per-step errors are dependent within groups, sd of the ratio < 0.01).
    ratios = [np.abs(r.estimates).mean() * eps for eps, r in runs.items()]
    assert ratios[0] == pytest.approx(ratios[1], rel=1e-9)
    assert 0.72 < ratios[0] < 0.79


# ---------------------------------------------------------------------------------------------
# The vectorised core: the scalar loop's bits (pinned before the core was vectorised)
# ---------------------------------------------------------------------------------------------


def _digest(*arrays) -> str:
    """First 16 hex digits of the SHA-256 of the arrays (float64 / int64, with their shapes)."""
    h = hashlib.sha256()
    for a in arrays:
        a = np.asarray(a)
        a = a.astype(np.float64 if a.dtype.kind == "f" else np.int64)
        h.update(str(a.shape).encode())
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()[:16]


def _result_digest(r, rng) -> str:
    """Every output of a PeGaSus result, and the generator's next draw (how much it used)."""
    return _digest(r.estimates, r.noisy, r.groups, r.group_starts, r.window,
                   *[r.smoothed[k] for k in sorted(SMOOTHERS)], rng.integers(0, 2**62, 1))


_SAMPLERS = {"continuous": contextlib.nullcontext, "safe": floating_point_safe}

# Recorded from the implementation before the core was vectorised (one Python step per time
# step), with the seeds and data below: the refactor changed no bit, in either sampler. The
# "safe" pins were re-recorded when the Grouper's comparisons moved onto one ComparisonGrid
# (its noise draws changed) and again when the discrete sampler's passes became 2**14 draws
# (PHS-PGS's pruning noise); they were recorded with the scalar loop forced for every feed
# (``_VECTOR_MIN`` raised) and the vectorised core gives the same bits. The exact integer
# deviations of that change left every "continuous" pin as it was.
# The average and James-Stein smoothers take a group's mean as its running sum over its size
# (vectorised exactly), no longer Welford's recursion: their last bits moved (relative
# differences below 5e-12), every other output kept its bits.
_PINNED = {
    ("continuous", "bursty new eps 0.1"): "b125db41c9e7209e",
    ("continuous", "bursty new eps 1"): "f5d3f331c8d1c737",
    ("continuous", "bursty text eps 0.5"): "20556bdeba9fe6d5",
    ("continuous", "bursty text theta 400 james-stein"): "a3f43af4d9147d3c",
    ("continuous", "flat new long groups"): "0120dd9d9ad9ce1e",
    ("continuous", "zeros text"): "13a8b838430dc31c",
    ("continuous", "split average"): "5f1af5e14da2bd2f",
    ("continuous", "short"): "1c2488ff8be48001",
    ("continuous", "online adaptive"): "af7cdf79da3cc483/e068c7b4016f4d8a",
    ("continuous", "online median"): "7d66d2050607199e/b41376f321cf0e09",
    ("continuous", "hs new"): "ff2d86b2a5c128a2",
    ("continuous", "hs text"): "7b662462f3e4f793",
    # PHS-PGS draws a pruning test only where the parent was kept (same distribution:
    # test_phs_pruning_has_the_probability_of_its_tests), so the pruning runs' bits moved.
    ("continuous", "phs new"): "de341e2c8b6feba4",
    ("continuous", "phs text never prunes"): "2a6dd6188b0780a9",
    ("continuous", "grouper"): "801aed95dfe5dc4f",
    ("continuous", "grouper noiseless"): "3847591b103ba4f0",
    ("safe", "bursty new eps 0.1"): "fafc70dc4b67e0a5",
    ("safe", "bursty new eps 1"): "07ee64743cf9376c",
    ("safe", "bursty text eps 0.5"): "40b48b55bd9455d4",
    ("safe", "bursty text theta 400 james-stein"): "f50de3e1797a0ef5",
    ("safe", "flat new long groups"): "4452b1ff8ae7700a",
    ("safe", "zeros text"): "4d08fd001dae6087",
    ("safe", "split average"): "8ed25149cb355f4d",
    ("safe", "short"): "4345b40d06231733",
    ("safe", "online adaptive"): "012575ab1d7ae6aa/7e4d4d553e8da793",
    ("safe", "online median"): "ef18dc563495450c/7a17d4cb0ffcba89",
    ("safe", "hs new"): "4afc4ca48e0d3a3b",
    ("safe", "hs text"): "b411790bf4d87e21",
    ("safe", "phs new"): "862b52cba58eb4e0",
    ("safe", "phs text never prunes"): "e7d469d035cc9c50",
    ("safe", "grouper"): "61057cd3711befd9",
    ("safe", "grouper noiseless"): "3847591b103ba4f0",
}

# Short and long groups, both defaults, every smoother, the histogram deviation (theta = 400;
# the flat stream's groups outgrow the adaptive smoother's longest window), groups that never
# end (zeros), a custom split, and a stream shorter than the vectorised core's minimum.
_PEGASUS_CASES = {
    "bursty new eps 0.1": (lambda: _bursty(4000, 21), {"epsilon": 0.1}),
    "bursty new eps 1": (lambda: _bursty(4000, 22), {"epsilon": 1.0}),
    "bursty text eps 0.5": (lambda: _bursty(4000, 23), {"epsilon": 0.5, **TEXT}),
    "bursty text theta 400 james-stein": (
        lambda: _bursty(4000, 24),
        {"epsilon": 0.5, **TEXT, "theta": 400.0, "smoother": "james_stein"}),
    "flat new long groups": (lambda: np.random.default_rng(25).poisson(6, 6000),
                             {"epsilon": 0.3}),
    "zeros text": (lambda: np.zeros(3000, dtype=np.int64), {"epsilon": 1.0, **TEXT}),
    "split average": (lambda: _bursty(3000, 26),
                      {"epsilon": 0.2, "epsilon_p": 0.15, "threshold_share": 0.2,
                       "smoother": "average"}),
    "short": (lambda: np.array([3, 0, 7]), {"epsilon": 1.0}),
}


@pytest.mark.parametrize("sampler", sorted(_SAMPLERS))
@pytest.mark.parametrize("case", sorted(_PEGASUS_CASES))
def test_seeded_pegasus_outputs_are_pinned(sampler, case):
    make, kw = _PEGASUS_CASES[case]
    kw = dict(kw)
    rng = np.random.default_rng(7)
    with _SAMPLERS[sampler]():
        r = pegasus(make(), kw.pop("epsilon"), rng=rng, **kw)
    assert _result_digest(r, rng) == _PINNED[sampler, case]


@pytest.mark.parametrize("sampler", sorted(_SAMPLERS))
@pytest.mark.parametrize("smoother", ["adaptive", "median"])
def test_seeded_online_outputs_are_pinned(sampler, smoother):
    # Pushes and extends of every size, so groups and the adaptive smoother's windows span
    # pieces fed by the scalar loop and by the vectorised core.
    counts = _bursty(6000, 27)
    rng = np.random.default_rng(8)
    with _SAMPLERS[sampler]():
        s = PegasusStream(0.2, smoother, rng=rng)
        parts = [s.extend(counts[:100]), [s.push(int(c)) for c in counts[100:150]],
                 s.extend(counts[150:4400]), [s.push(int(c)) for c in counts[4400:4420]],
                 s.extend(counts[4420:])]
        r = s.result()
    got = _digest(np.concatenate(parts)) + "/" + _result_digest(r, rng)
    assert got == _PINNED[sampler, f"online {smoother}"]


@pytest.mark.parametrize("sampler", sorted(_SAMPLERS))
def test_seeded_hierarchy_and_grouper_outputs_are_pinned(sampler):
    leaves = multi_state_streams(np.random.default_rng(0), n_states=16, length=1500, total=16_000)
    tree = Hierarchy.binary(16)
    runs = {
        "hs new": lambda rng: hs_pegasus(leaves, tree, 0.5, rng=rng),
        "hs text": lambda rng: hs_pegasus(leaves, tree, 0.5, rng=rng, **TEXT),
        "phs new": lambda rng: phs_pegasus(leaves, tree, 0.5, rng=rng),
        "phs text never prunes": lambda rng: phs_pegasus(leaves, tree, 0.5, rng=rng, beta=-1e9,
                                                         **TEXT),
    }
    with _SAMPLERS[sampler]():
        for label, run in runs.items():
            rng = np.random.default_rng(9)
            r = run(rng)
            pruned = [] if r.pruned is None else [r.pruned]
            assert _digest(r.estimates, *pruned, rng.integers(0, 2**62, 1)) == \
                _PINNED[sampler, label], label
        rng = np.random.default_rng(10)
        groups = deviation_grouper(_bursty(3000, 28), 0.3, 40.0, rng)
        assert _digest(groups, rng.integers(0, 2**62, 1)) == _PINNED[sampler, "grouper"]
        noiseless = deviation_grouper(_bursty(3000, 28), math.inf, 40.0)
        assert _digest(noiseless) == _PINNED[sampler, "grouper noiseless"]


def _scalar_outputs(counts, noise, theta, tau2, pieces) -> dict:
    st = _GroupState()
    outs: list[list] = [[] for _ in range(6)]
    for part in np.array_split(np.arange(counts.size), pieces):
        _run_core(st, counts[part].tolist(), *(noise[part, j].tolist() for j in range(3)),
                  theta, tau2, *outs)
    names = ("noisy", "median", "average", "james_stein", "gid", "start")
    return {k: np.asarray(v) for k, v in zip(names, outs, strict=True)}


@pytest.mark.parametrize("theta, scale", [(12.5, 2.0), (400.0, 2.0), (3e4, 0.5), (0.0, 1.0),
                                          (1e12, 1.0)])
def test_vectorised_core_equals_the_scalar_loop(theta, scale):
    # The same noise through the scalar loop (one step at a time) and the vectorised core,
    # whole and in pieces (state carried over), full and median-only: every output equal, bit
    # for bit. theta 12.5: groups of a few steps (the text's regime); 400: hundreds (the
    # histogram deviation, in chunks); 3e4 on counts in the thousands: the mean's floor moves
    # by many values per chunk; 0: every test fails; 1e12 on counts up to a million: one
    # group whose mean jumps by thousands per step at first (ranks instead of values).
    rng = np.random.default_rng(31)
    streams = [_bursty(5000, 13), rng.poisson(2500, 3000) + np.repeat([0, 4000], 1500),
               np.zeros(700, dtype=np.int64), rng.integers(0, 10**6, 1500)]
    for counts in streams:
        noise = laplace(np.array([scale, 10.0, 20.0]), (counts.size, 3), rng=rng)
        ref = _scalar_outputs(counts, noise, theta, 8.0, 1)
        for pieces in (1, 3):
            st = _GroupState()
            got = [_vector_core(st, counts[p], noise[p], theta, 8.0)
                   for p in np.array_split(np.arange(counts.size), pieces)]
            for k, v in ref.items():
                np.testing.assert_array_equal(np.concatenate([g[k] for g in got]), v, err_msg=k)
        fast = _vector_core(_GroupState(), counts, noise, theta, 8.0, median_only=True)
        assert set(fast) == {"noisy", "median", "start"}
        for k in fast:
            np.testing.assert_array_equal(fast[k], ref[k])


def test_trailing_window_medians_are_exact():
    # Sorting (short windows) and SciPy's rank filter (long ones), odd and even: the median of
    # each full trailing window, bit for bit ((lower + upper) / 2 for an even count).
    from dpwidgets.engine.streams import _trailing_medians

    continuous = np.random.default_rng(32).laplace(40.0, 10.0, 700)
    for values in (continuous, continuous.round()):  # distinct values, and many ties
        for w in (1, 2, 3, 4, 5, 8, 32, 33, 64, 65, 300):
            got = _trailing_medians(values, w, w + 6)
            want = [np.median(values[i - w + 1 : i + 1]) for i in range(w + 6, values.size)]
            np.testing.assert_array_equal(got, want, err_msg=f"w = {w}")


def test_group_sizes_reported_are_the_group_so_far():
    # Each step's group start is the first step of its group, the size its estimate used is
    # the group *so far* (never the final size), and the median smoother is the median of
    # exactly those noisy counts.
    counts = _bursty(3000, 14)
    for kw in ({"theta": 400.0, **TEXT}, {}):
        r = pegasus(counts, 0.5, rng=np.random.default_rng(15), **kw)
        first = np.flatnonzero(np.diff(r.groups, prepend=-1))
        np.testing.assert_array_equal(r.group_starts, first[r.groups])
        used = r.group_size_used
        np.testing.assert_array_equal(used, np.arange(counts.size) - r.group_starts + 1)
        final = np.bincount(r.groups)[r.groups]
        assert np.all(used <= final) and np.any(used < final)
        assert used.max() > 100  # long groups: the histogram deviation and chunked tests
        med = [np.median(r.noisy[s : t + 1]) for t, s in enumerate(r.group_starts)]
        np.testing.assert_array_equal(r.smoothed["median"], med)
        assert np.all(r.window <= used)


# ---------------------------------------------------------------------------------------------
# Online == batch; real time
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("smoother", sorted(SMOOTHERS))
def test_batch_equals_online(smoother):
    counts = _bursty(6000, 7)  # > the 4096-row noise block: crosses a block boundary
    batch = pegasus(counts, 0.1, smoother, rng=np.random.default_rng(11))
    online = PegasusStream(0.1, smoother, rng=np.random.default_rng(11))
    pushed = np.array([online.push(int(c)) for c in counts])
    np.testing.assert_array_equal(pushed, batch.estimates)
    mixed = PegasusStream(0.1, smoother, rng=np.random.default_rng(11))
    parts = [mixed.extend(counts[:10]), [mixed.push(int(counts[10]))], mixed.extend(counts[11:])]
    np.testing.assert_array_equal(np.concatenate(parts), batch.estimates)
    np.testing.assert_array_equal(online.result().groups, batch.groups)
    assert online.t == counts.size


def test_median_only_core_matches_the_full_core():
    # The hierarchies run the core in median-only mode (no average / James-Stein state): the
    # noisy counts, medians and group starts must be those of the full run on the same noise, including long (tree) groups.
    from dpwidgets.engine.streams import _GroupState, _run_core

    counts = _bursty(5000, 12).tolist()
    noise = laplace(np.array([2.0, 10.0, 20.0]), (5000, 3), rng=np.random.default_rng(6))
    cols = [noise[:, j].tolist() for j in range(3)]
    for theta in (12.5, 400.0):
        full, fast = [[] for _ in range(6)], [[] for _ in range(6)]
        _run_core(_GroupState(), counts, *cols, theta, 8.0, *full)
        _run_core(_GroupState(), counts, *cols, theta, 8.0, *fast, median_only=True)
        # noisy, median and group start (what the median and adaptive smoothers need) only
        assert [fast[k] for k in (0, 1, 5)] == [full[k] for k in (0, 1, 5)]
        assert not any(fast[k] for k in (2, 3, 4))
    assert max(np.bincount(full[4])) > 100


def test_real_time_estimates_ignore_the_future():
    counts = _bursty(3000, 2)
    tau = 1700
    changed = counts.copy()
    changed[tau + 1 :] = np.random.default_rng(9).poisson(40, counts.size - tau - 1)
    a = pegasus(counts, 0.2, rng=np.random.default_rng(4))
    b = pegasus(changed, 0.2, rng=np.random.default_rng(4))
    for k in SMOOTHERS:
        np.testing.assert_array_equal(a.smoothed[k][: tau + 1], b.smoothed[k][: tau + 1])
    assert not np.array_equal(a.estimates[tau + 1 :], b.estimates[tau + 1 :])
    np.testing.assert_array_equal(
        window_sum_smoother(a, 64)[: tau + 1], window_sum_smoother(b, 64)[: tau + 1]
    )
    for fn in (
        lambda c: backward_smoothing(c, 0.2, 5, np.random.default_rng(1)).estimates,
        lambda c: binary_tree_window_sums(c, 0.2, 48, np.random.default_rng(1)).sums,
    ):
        np.testing.assert_array_equal(fn(counts)[: tau + 1], fn(changed)[: tau + 1])


# ---------------------------------------------------------------------------------------------
# Queries
# ---------------------------------------------------------------------------------------------


def test_wss_matches_algorithm_17_brute_force():
    counts = _bursty(400, 4)
    r = pegasus(counts, 0.3, rng=np.random.default_rng(2))
    w = 37
    got = window_sum_smoother(r, w)
    for t in range(counts.size):
        lo = max(0, t - w + 1)
        total = 0.0
        for g in np.unique(r.groups[lo : t + 1]):  # groups of P_t meeting the window
            members = np.flatnonzero(r.groups[: t + 1] == g)  # G as known at time t
            overlap = np.count_nonzero(members >= lo)
            total += np.median(r.noisy[members]) * overlap
        assert got[t] == pytest.approx(total, abs=1e-9)


def test_window_sums_exact_without_noise():
    counts = _bursty(1000, 5)
    for w in (1, 8, 37, 64):
        truth = sliding_window_sums(counts, w)
        sw = binary_tree_window_sums(counts, 1e9, w, np.random.default_rng(0)).sums
        np.testing.assert_allclose(sw, truth, atol=1e-5)
    r = pegasus(counts, 1e9, rng=np.random.default_rng(0))  # groups: constant runs only
    np.testing.assert_allclose(window_sum_smoother(r, 37), sliding_window_sums(counts, 37), atol=1e-5)


def test_sw_noise_scale():
    # w = 64: L = 6, 7 levels, every node Lap(7/eps). The window ending at the last step of a
    # block is that block's root alone: error variance 2 (7/eps)^2. 900 blocks, eps = 1:
    # sd of the variance estimate ~ 2*98*sqrt(5/900) (Laplace kurtosis 6) = 14.6 -> +-45 is 3 sd.
    counts = np.zeros(64 * 900, dtype=np.int64)
    sw = binary_tree_window_sums(counts, 1.0, 64, np.random.default_rng(8))
    assert np.var(sw.sums[63::64]) == pytest.approx(98, abs=45)
    _budget_exact(sw)


def test_backward_smoothing_is_trailing_mean_of_lm():
    counts = _bursty(500, 6)
    lm = laplace_stream(counts, 0.5, np.random.default_rng(3)).estimates
    bs = backward_smoothing(counts, 0.5, 4, np.random.default_rng(3)).estimates
    expect = [lm[max(0, t - 4) : t + 1].mean() for t in range(counts.size)]
    np.testing.assert_allclose(bs, expect, atol=1e-9)


def test_baseline_releases_feed_the_queries():
    # SW_w sums are used as released (Fig. 5.7 compares them with WSS); LM / BS_k releases are
    # taken by their estimates; a window-sum release cannot answer per-step queries.
    counts = _bursty(2000, 8)
    sw = binary_tree_window_sums(counts, 0.5, 16, np.random.default_rng(0))
    np.testing.assert_array_equal(sliding_window_sums(sw, 16), sw.sums)
    with pytest.raises(ValueError, match="width"):
        sliding_window_sums(sw, 8)
    with pytest.raises(ValueError, match="per-step"):
        jump_drop_events(sw, 16, 5.0)
    from sklearn.metrics import roc_auc_score

    roc = event_roc(counts, sw, 16, 100, kind="low_signal")
    truth = sliding_window_sums(counts, 16)[15:] < 100
    assert 0 < truth.mean() < 1
    assert roc.auc == pytest.approx(roc_auc_score(truth, -sw.sums[15:]), abs=1e-12)
    lm = laplace_stream(counts, 0.5, np.random.default_rng(1))
    np.testing.assert_array_equal(jump_drop_events(lm, 3, 20), jump_drop_events(lm.estimates, 3, 20))
    np.testing.assert_array_equal(sliding_window_sums(lm, 5), sliding_window_sums(lm.estimates, 5))


def test_events_and_roc():
    counts = np.array([0, 0, 10, 10, 0, 0, 0, 5], dtype=np.int64)
    assert jump_drop_events(counts, 2, 10).tolist() == [False, False, True, False, True, False, False, False]
    assert low_signal_events(counts, 3, 1).tolist() == [False, False, False, False, False, False, True, False]
    perfect = event_roc(counts, counts.astype(float), 2, 10)
    assert perfect.auc == 1.0 and perfect.positives == 2
    c = wifi_stream("Med_5", np.random.default_rng(0))[:8000]
    r = pegasus(c, 0.1, rng=np.random.default_rng(0))
    roc = event_roc(c, r, 12, 40, kind="low_signal")
    assert np.all(np.diff(roc.fpr) >= 0) and np.all(np.diff(roc.tpr) >= 0)
    assert roc.fpr[-1] == 1 and roc.tpr[-1] == 1 and 0.5 < roc.auc <= 1


# ---------------------------------------------------------------------------------------------
# Accuracy (Chen 2018 Fig. 5.3-5.5, 5.8)
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("eps", [0.1, 0.01])
def test_pegasus_beats_lm_and_median_is_best_on_med5(eps):
    # Text defaults. Med_5-shaped stream (57,901 steps), seeds 0-2. Measured (mean over seeds)
    # log10 scaled L1: eps=0.1: median 0.66, average 0.675, JS 1.48, LM 0.755; eps=0.01: 1.64 /
    # 1.66 / 2.47 / 1.76. A 57,901-step L1 has a relative sd < 1%, so the 10-25% gaps cannot
    # flip by chance.
    c = wifi_stream("Med_5", np.random.default_rng(0))
    for seed in range(3):
        r = pegasus(c, eps, rng=np.random.default_rng(seed), **TEXT)
        err = {k: scaled_total_l1(c, v) for k, v in r.smoothed.items() if k != "adaptive"}
        lm = scaled_total_l1(c, laplace_stream(c, eps, np.random.default_rng(50 + seed)).estimates)
        assert err["median"] < 0.9 * lm
        assert err["median"] == min(err.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", ["Low_5", "Med_5", "High_5"])
@pytest.mark.parametrize("eps", [0.1, 0.01])
def test_new_defaults_beat_lm_and_every_backward_smoothing(name, eps):
    # Chen 2018 Fig. 5.3's claim, at the new defaults, on each 57,901-step stand-in; 2 seeds
    # each. Measured (20 trials, benchmarks/results/streams_unit_counts.md) PGS / best BS_k
    # (k <= 100): Low_5 0.13 / 0.08, Med_5 0.92 / 0.22, High_5 0.59 / 0.94 (eps = 0.1 / 0.01);
    # PGS / LM <= 0.78. The tightest, High_5 at eps = 0.01, is ~5% below BS_40-50 with a
    # per-seed relative sd of the ratio ~1% (a 57,901-step L1), so it cannot flip by chance;
    # the assertion is the claim itself.
    c = wifi_stream(name, np.random.default_rng(0))
    for seed in range(2):
        pgs = scaled_total_l1(c, pegasus(c, eps, rng=np.random.default_rng(seed)).estimates)
        lm = scaled_total_l1(c, laplace_stream(c, eps, np.random.default_rng(50 + seed)).estimates)
        assert pgs < 0.8 * lm
        for k in (1, 2, 5, 10, 20, 30, 40, 50, 70, 100):
            bs = backward_smoothing(c, eps, k, np.random.default_rng(50 + seed)).estimates
            assert pgs < scaled_total_l1(c, bs), k


@pytest.mark.parametrize("eps", [0.1, 0.01])
def test_wss_beats_median_smoother_for_windows(eps):
    # Med_5-shaped, 20,000 steps, seed 1; measured WSS/MS error ratio 0.80-0.93.
    # Text defaults (WSS against the MedianSmoother, the text's comparison).
    c = wifi_stream("Med_5", np.random.default_rng(1))[:20000]
    r = pegasus(c, eps, rng=np.random.default_rng(1), **TEXT)
    for w in (8, 64):
        truth = sliding_window_sums(c, w)
        wss = average_l1(truth, sliding_window_sums(r, w))
        ms = average_l1(truth, sliding_window_sums(r, w, method="estimates"))
        assert wss < 0.97 * ms


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.1, 0.01])
def test_phs_beats_hs_pgs_and_hs_lm(eps):
    # Multi_5-shaped, scaled down: 32 states x 2000 steps (same per-cell rate), h = 6, seed 0.
    # Measured average L1: eps=0.1 HS-LM 60, HS-PGS 45, PHS-PGS 0.8 (4000 steps); margins huge.
    leaves = multi_state_streams(np.random.default_rng(0), n_states=32, length=2000, total=16_156)
    tree = Hierarchy.binary(32)
    truth = tree.aggregate(leaves)
    lm = hs_laplace(leaves, tree, eps, np.random.default_rng(1))
    hs = hs_pegasus(leaves, tree, eps, rng=np.random.default_rng(1), **TEXT)
    phs = phs_pegasus(leaves, tree, eps, rng=np.random.default_rng(1), **TEXT)
    e_lm, e_hs, e_phs = (average_l1(truth, x.estimates) for x in (lm, hs, phs))
    assert e_phs < e_hs / 4 and e_phs < e_lm / 10
    assert e_hs < e_lm
    for x in (lm, hs, phs):
        _budget_exact(x)
        assert x.estimates.shape == truth.shape
    assert phs.pruned.mean() > 0.5  # most node-steps of sparse data are pruned


@pytest.mark.xfail(
    strict=True,
    reason="Chen 2018 §5.6.1 reports PeGaSus best against BS_k on every stream (k not stated). With "
    "Alg. 16 and the text's defaults (theta = 5/eps_g, Lap(8/eps_g) per test) the groups on flat "
    "stretches are eps-free and short (mean ~3), so PeGaSus only matches BS_1 there; BS_5 wins "
    "on the sparse Low_5 stand-in (log10 2.19 vs 1.97) — and would on any stream with Low_5's "
    "published total (>= 95% zeros). See benchmarks/results/streams_unit_counts.md.",
)
def test_published_pegasus_beats_backward_smoothing_on_low5_text_defaults():
    c = wifi_stream("Low_5", np.random.default_rng(0))
    r = pegasus(c, 0.1, rng=np.random.default_rng(1), **TEXT)
    bs = backward_smoothing(c, 0.1, 5, np.random.default_rng(2))
    assert scaled_total_l1(c, r.estimates) < scaled_total_l1(c, bs.estimates)


@pytest.mark.xfail(
    strict=True,
    reason="Chen 2018 Fig. 5.8: HS-PGS error ~19x (49x) below HS-LM at eps = 0.1 (0.01) (78/4, 445/9). "
    "With the text's Grouper defaults PeGaSus gains at most ~1/0.756 = 1.3x over LM per stream "
    "(constant streams are its best case), so HS-PGS stays within ~1.3x of HS-LM whatever the "
    "data. See benchmarks/results/streams_hierarchy.md.",
)
def test_published_hs_pgs_far_below_hs_lm_text_defaults():
    # 32 states x 2000 steps, Multi_5's per-cell rate, h = 6; measured HS-LM 60, HS-PGS 45.
    leaves = multi_state_streams(np.random.default_rng(0), n_states=32, length=2000, total=16_156)
    tree = Hierarchy.binary(32)
    truth = tree.aggregate(leaves)
    lm = average_l1(truth, hs_laplace(leaves, tree, 0.1, np.random.default_rng(1)).estimates)
    hs = average_l1(truth, hs_pegasus(leaves, tree, 0.1, rng=np.random.default_rng(1), **TEXT).estimates)
    assert hs < lm / 10


def test_published_claims_hold_at_the_new_defaults():
    # The two claims above, at the new defaults (same data and seeds, deterministic). Measured:
    # Low_5 at eps = 0.1 PGS/BS_5 = 0.025; HS-LM/HS-PGS on the 32-state tree 60.0/3.13 = 19.1
    # (40x and 67x on the full Multi_5 stand-in, benchmarks/results/streams_hierarchy.md).
    c = wifi_stream("Low_5", np.random.default_rng(0))
    r = pegasus(c, 0.1, rng=np.random.default_rng(1))
    bs = backward_smoothing(c, 0.1, 5, np.random.default_rng(2))
    assert scaled_total_l1(c, r.estimates) < scaled_total_l1(c, bs.estimates)
    leaves = multi_state_streams(np.random.default_rng(0), n_states=32, length=2000, total=16_156)
    tree = Hierarchy.binary(32)
    truth = tree.aggregate(leaves)
    lm = average_l1(truth, hs_laplace(leaves, tree, 0.1, np.random.default_rng(1)).estimates)
    hs = average_l1(truth, hs_pegasus(leaves, tree, 0.1, rng=np.random.default_rng(1)).estimates)
    assert hs < lm / 10


def test_pruning_from_released_estimates_is_free_real_time_and_follows_the_rule():
    # Chen 2018 §5.5.2's pruning, decided from the estimates released at t - 1 (post-processing).
    leaves = multi_state_streams(np.random.default_rng(0), n_states=32, length=2000, total=16_156)
    tree = Hierarchy.binary(32)
    truth = tree.aggregate(leaves)
    hs = hs_pegasus(leaves, tree, 0.1, rng=np.random.default_rng(1))
    pr = hs_pegasus(leaves, tree, 0.1, rng=np.random.default_rng(1), beta=2.0)
    assert pr.epsilon == hs.epsilon and dict(pr.epsilon_parts) == dict(hs.epsilon_parts)
    expect = np.zeros(hs.estimates.shape, dtype=bool)
    for node in tree.order[1:]:  # the rule, one node-step at a time, top-down
        parent = tree.parents[node]
        for t in range(1, expect.shape[1]):
            expect[node, t] = expect[parent, t] or hs.estimates[parent, t - 1] < 2.0
    np.testing.assert_array_equal(pr.pruned, expect)
    np.testing.assert_array_equal(pr.estimates, np.where(expect, 0.0, hs.estimates))
    assert not pr.pruned[tree.order[0]].any() and not pr.pruned[:, 0].any()
    # Same data and seeds (deterministic): measured HS-PGS 3.13, pruned at beta = 2: 1.00 (all
    # zeros: 0.77 on this sparse stand-in, 90% zero state-steps).
    assert average_l1(truth, pr.estimates) < average_l1(truth, hs.estimates) / 2
    # Real time: counts after tau change nothing up to tau.
    tau = 1200
    changed = leaves.copy()
    changed[:, tau + 1 :] = np.random.default_rng(3).poisson(2.0, (32, leaves.shape[1] - tau - 1))
    later = hs_pegasus(changed, tree, 0.1, rng=np.random.default_rng(1), beta=2.0)
    np.testing.assert_array_equal(later.estimates[:, : tau + 1], pr.estimates[:, : tau + 1])
    np.testing.assert_array_equal(later.pruned[:, : tau + 1], pr.pruned[:, : tau + 1])
    # Any hierarchical release can be pruned so; PHS-PGS keeps its own pruned node-steps.
    lm = hs_laplace(leaves, tree, 0.1, np.random.default_rng(1))
    assert prune_released(lm, 2.0).method.startswith("HS-LM")
    phs = phs_pegasus(leaves, tree, 0.1, rng=np.random.default_rng(1))
    assert np.all(prune_released(phs, 2.0).pruned[phs.pruned])
    with pytest.raises(ValueError, match="beta"):
        prune_released(hs, math.nan)
    with pytest.raises(ValueError, match="HierarchyResult"):
        prune_released(hs.estimates, 1.0)


# ---------------------------------------------------------------------------------------------
# Speed
# ---------------------------------------------------------------------------------------------


def test_speed_57901_steps_median():
    # Requirement: < 1 s; the assert allows 3 s for CI load. Measured ~0.1 s locally (new
    # defaults: the vectorised core ~0.03 s, the adaptive smoother's window medians ~0.04 s).
    c = wifi_stream("High_5", np.random.default_rng(0))
    start = time.perf_counter()
    r = pegasus(c, 0.1, rng=np.random.default_rng(0))
    elapsed = time.perf_counter() - start
    print(f"pegasus: {c.size} steps in {elapsed:.3f} s")
    assert r.estimates.size == 57_901
    assert elapsed < 3.0


# ---------------------------------------------------------------------------------------------
# Hierarchy and validation
# ---------------------------------------------------------------------------------------------


def test_binary_hierarchy_of_the_text():
    tree = Hierarchy.binary(128)
    assert tree.n_nodes == 255 and tree.height == 8 and tree.leaves.size == 128
    leaves = np.arange(128 * 3).reshape(128, 3)
    agg = tree.aggregate(leaves)
    np.testing.assert_array_equal(agg[0], leaves.sum(axis=0))
    np.testing.assert_array_equal(agg[1] + agg[2], agg[0])


@pytest.mark.parametrize(
    "parents, match",
    [
        ([-1, -1, 0], "exactly one root"),
        ([-1, 2, 1], "not reachable"),
        ([-1, 0, 5], r"node ids in \[0, 3\)"),
        ([-1, 1], "own parent"),
        ([-1.0, 0.0], "integer"),
    ],
)
def test_hierarchy_must_be_a_tree(parents, match):
    with pytest.raises(ValueError, match=match):
        Hierarchy.from_parents(parents)


def _unchanged(rng_state, rng):
    return rng.bit_generator.state == rng_state


@pytest.mark.parametrize(
    "call, match",
    [
        (lambda rng: pegasus([1, -1, 2], 1.0, rng=rng), "negative"),
        (lambda rng: pegasus([1, 0.5, 2], 1.0, rng=rng), "whole-number"),
        (lambda rng: pegasus([1, np.nan], 1.0, rng=rng), "NaN"),
        (lambda rng: pegasus([], 1.0, rng=rng), "empty"),
        (lambda rng: pegasus([1, 2], 1.0, rng=rng, epsilon_p=0.5, epsilon_g=0.6), "must equal"),
        (lambda rng: pegasus([1, 2], 1.0, rng=rng, epsilon_p=1.5), "epsilon_p must be <"),
        (lambda rng: pegasus([1, 2], 0.0, rng=rng), "epsilon"),
        (lambda rng: pegasus([1, 2], 1.0, "mode", rng=rng), "smoother"),
        (lambda rng: pegasus([1, 2], 1.0, rng=rng, theta=-1.0), "theta"),
        (lambda rng: PegasusStream(1.0, rng=rng).push(-3), "negative"),
        (lambda rng: laplace_stream([1, -2], 1.0, rng), "negative"),
        (lambda rng: backward_smoothing([1, 2], 1.0, -1, rng), "k must be"),
        (lambda rng: binary_tree_window_sums([1, 2], 1.0, 5, rng), "w must be <="),
        (lambda rng: hs_pegasus(np.ones((3, 4)), Hierarchy.binary(4), 1.0, rng=rng), "one row per state"),
        (lambda rng: phs_pegasus(np.ones((2, 4)), [-1, 0, 0, 4, 3], 1.0, rng=rng), "not reachable"),
        (lambda rng: phs_pegasus(np.ones((2, 4)), [-1, 0, 0], 1.0, rng=rng, epsilon_pr=1.0), "epsilon_pr"),
        (lambda rng: hs_pegasus(np.ones((2, 4)), [-1, 0, 0], 1.0, rng=rng, beta=math.inf), "beta"),
        (lambda rng: hs_laplace(-np.ones((2, 4)), [-1, 0, 0], 1.0, rng), "negative"),
    ],
)
def test_validation_before_any_randomness(call, match):
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(ValueError, match=match):
        call(rng)
    assert _unchanged(state, rng)


def test_metrics():
    assert scaled_total_l1([1, 3], [2, 3]) == 0.25
    assert average_l1([1, 3], [2, 5]) == 1.5
    with pytest.raises(ValueError, match="positive total"):
        scaled_total_l1([0, 0], [1, 1])
    with pytest.raises(ValueError, match="same shape"):
        average_l1([1, 2], [1])
    r = pegasus([3, 4, 5], 1.0, rng=np.random.default_rng(0))
    assert r.estimates.flags.writeable is False
    assert r.group_boundaries[0] == 0
    with pytest.raises(ValueError, match="no count"):
        PegasusStream(1.0).result()


# ---------------------------------------------------------------------------------------------
# The Grouper's tests, exactly: integer deviations, and one comparison grid inside the context
# ---------------------------------------------------------------------------------------------


def _exact_groups(counts, theta: float) -> np.ndarray:
    """Chen 2018 Alg. 16 without noise (Example 7), the deviation in exact integers:
    ``n1 dev = sum |n1 c_i - s1|``, compared as ``min(dev, DEV_MAX) < theta`` with the quotient
    ``n1 dev / n1`` correctly rounded (Python's ``int / int``)."""
    from dpwidgets.engine.streams import DEV_MAX

    gid, out, is_open, members = -1, [], False, []
    for c in (int(v) for v in counts):
        extend = False
        if is_open:
            vals = members + [c]
            n1, s1 = len(vals), sum(vals)
            dev_n = sum(abs(n1 * v - s1) for v in vals)
            extend = min(dev_n / n1, DEV_MAX) < theta
        if extend:
            members.append(c)
        else:
            gid += 1
            is_open = not is_open
            members = [c]
        out.append(gid)
    return np.array(out)


@pytest.mark.parametrize("theta", [1.0, 2.5, 3.0, 7.0, 40.0])
def test_grouper_deviations_are_exact_with_huge_counts(theta):
    # Counts 2**50 + {0..3} (seed 31, 1,500 steps): a double holds c - m only to 1/4, so a
    # float deviation misjudges tests whose deviation is at theta (ties: dev < theta fails);
    # the Grouper computes n1 dev in integers and must take every decision of the exact
    # reference. theta = 1, 3 hit ties (two counts one apart have deviation 1).
    counts = (2**50 + np.random.default_rng(31).integers(0, 4, 1500)).astype(np.int64)
    assert np.array_equal(deviation_grouper(counts, math.inf, theta), _exact_groups(counts, theta))


@pytest.mark.parametrize("theta", [5.0, 40.0, 400.0, 3000.0])
def test_grouper_deviations_are_exact_on_long_groups(theta):
    # A Poisson(6) stream (seed 32, 4,000 steps) and a bursty one (seed 33): long groups take the
    # vectorised chunk and histogram tests; every decision equals the exact reference's.
    for counts in (np.random.default_rng(32).poisson(6, 4000), _bursty(4000, 33)):
        assert np.array_equal(deviation_grouper(counts, math.inf, theta),
                              _exact_groups(counts, theta))


def test_grouper_compares_on_one_grid_inside_the_context():
    # Inside floating_point_safe() the threshold and deviation noise are whole steps of one
    # ComparisonGrid (so thr - zdev is an exact double) and theta is a whole number of steps;
    # outside they are continuous doubles. PegasusStream(0.3), seed 12, 5,000 rows of noise.
    with floating_point_safe():
        s = PegasusStream(0.3, rng=np.random.default_rng(12))
        rows = s._take_noise(5000)
    g = s._grid.grid
    assert s._grid.widen > 1.0 and g <= 2.0**-19
    for column in (rows[:, 1], rows[:, 2], np.array([s.theta])):
        steps = column / g
        assert np.all(steps == np.round(steps))
    assert np.all(np.isfinite(rows)) and np.std(rows[:, 2]) > 1.0
    outside = PegasusStream(0.3, rng=np.random.default_rng(12))
    assert outside._grid is None
    steps = outside._take_noise(5000)[:, 2] / g
    assert not np.all(steps == np.round(steps))


def test_phs_pruning_has_the_probability_of_its_tests():
    # PHS-PGS draws a pruning test only for a node whose parent was kept (the others are
    # pruned whatever their test says). The pruned mask must keep the distribution of Alg. 18
    # with every test drawn: a node is kept iff no strict ancestor's noisy count fell below β,
    # P(kept) = prod over ancestors a of P(c_a + Lap(h/ε_pr) >= β), tests independent.
    # Seed 11, 1,500 runs, 7 nodes x 12 steps; each frequency within 4.5 binomial standard
    # errors of the exact probability (84 comparisons: a false alarm about once in 10^3 seeds).
    tree = Hierarchy.binary(4)
    leaves = np.array([[0, 1, 2, 3, 4, 6, 8, 10, 0, 0, 5, 7],
                       [3, 0, 1, 2, 6, 4, 2, 0, 9, 1, 2, 3],
                       [1, 1, 0, 5, 0, 2, 7, 1, 2, 8, 0, 4],
                       [0, 2, 2, 0, 1, 3, 0, 9, 4, 2, 6, 1]], dtype=float)
    agg = tree.aggregate(leaves)
    eps, eps_pr, beta = 1.0, 0.5, 10.0
    scale = tree.height / eps_pr

    def p_below(c):  # P(c + Lap(scale) < beta)
        z = beta - c
        return np.where(z > 0, 1 - 0.5 * np.exp(-z / scale), 0.5 * np.exp(z / scale))

    kept = np.ones(agg.shape)
    for node in tree.order:
        parent = tree.parents[node]
        if parent >= 0:
            kept[node] = kept[parent] * (1 - p_below(agg[parent]))
    rng = np.random.default_rng(11)
    runs = 1500
    freq = np.mean([phs_pegasus(leaves, tree, eps, rng=rng, epsilon_pr=eps_pr, beta=beta)
                    .pruned for _ in range(runs)], axis=0)
    p = 1 - kept
    se = np.sqrt(np.maximum(p * (1 - p), 1e-12) / runs)
    z = np.abs(freq - p) / se
    assert np.all(np.where(p * (1 - p) < 1e-9, freq == p, z < 4.5)), z.max()
    assert 0.1 < p[tree.levels == tree.height].mean() < 0.9  # the test sees both outcomes
