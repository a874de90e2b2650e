"""Evaluation helpers (dpwidgets/engine/evaluation.py): exact range counts, Kendall matrices,
event detection rates and top-c rates, checked against direct (slow) computations."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dpwidgets.engine import synth as sy
from dpwidgets.engine.evaluation import (
    detect_events,
    detection_rates,
    encode,
    kendall_matrix,
    range_counts,
    shares,
    top_c_rates,
)


def test_range_counts_are_exact_and_chunk_invariant():
    rng = np.random.default_rng(0)
    for n, sizes in ((5000, (96, 1020, 511, 2)), (777, (3, 5, 7)), (1, (4, 4))):
        codes = np.stack([rng.integers(0, a, n) for a in sizes], 1)
        q = sy.random_range_queries({f"c{j}": a for j, a in enumerate(sizes)}, 120, rng)
        frame = pd.DataFrame(codes, columns=[f"c{j}" for j in range(len(sizes))])
        truth = q.answer(frame)
        lo, hi = q.lower.astype(np.int64), q.upper.astype(np.int64)
        np.testing.assert_array_equal(range_counts(codes, lo, hi), truth)
        np.testing.assert_array_equal(range_counts(codes, lo, hi, max_bytes=4096), truth)
    assert range_counts(np.zeros((0, 2), dtype=int), lo[:, :2], hi[:, :2]).sum() == 0


def test_encode_and_shares():
    np.testing.assert_array_equal(encode(np.array([5, 7, 300, -2]), np.arange(5, 105)),
                                  [0, 2, 99, 0])
    np.testing.assert_array_equal(encode(np.array([0.4, 2.0, 9.0]), np.array([0.0, 2.5, 5.0])),
                                  [0, 1, 2])
    np.testing.assert_allclose(shares(np.array([0, 0, 2]), 4), [2 / 3, 0, 1 / 3, 0])
    assert shares(np.zeros(0, dtype=int), 3).sum() == 0


def test_kendall_matrix_matches_scipy_and_is_deterministic():
    rng = np.random.default_rng(3)  # 800 rows, 3 columns; exact comparison (same formula)
    z = rng.standard_normal((800, 3))
    codes = np.floor(50 * (1 + np.tanh(z + z[:, :1]))).astype(np.int64)
    tau = kendall_matrix(codes)
    assert tau[0, 1] == pytest.approx(stats.kendalltau(codes[:, 0], codes[:, 1]).statistic)
    np.testing.assert_allclose(tau, tau.T)
    np.testing.assert_allclose(np.diag(tau), 1.0)
    constant = np.column_stack([codes[:, 0], np.zeros(800, dtype=np.int64)])
    assert kendall_matrix(constant)[0, 1] == 0.0  # no τ for a constant column
    big = np.floor(10 * rng.random((6000, 2))).astype(np.int64)
    np.testing.assert_array_equal(kendall_matrix(big, 1000), kendall_matrix(big, 1000))


def test_detect_events_and_rates():
    stat = np.array([np.nan, 0.0, 5.0, 1.0, 7.0])
    np.testing.assert_array_equal(detect_events(stat, "jump_drop", 5.0),
                                  [False, False, True, False, True])
    np.testing.assert_array_equal(detect_events(stat, "low_signal", 1.0),
                                  [False, True, False, False, False])
    with pytest.raises(ValueError, match="kind"):
        detect_events(stat, "spike", 1.0)
    truth = np.array([True, False, True, True, False])
    detected = np.array([True, True, True, False, False])
    tpr, fpr = detection_rates(detected, truth, w=2)  # steps 1..4: 2 events, 2 quiet steps
    assert (tpr, fpr) == (0.5, 0.5)
    tpr, fpr = detection_rates(detected, np.zeros(5, bool), w=1)
    assert math.isnan(tpr) and fpr == pytest.approx(3 / 5)


def test_top_c_rates():
    scores = np.array([10.0, 9.0, 8.0, 1.0, 0.0])
    assert top_c_rates([[0, 1]], scores, 2) == (0.0, 0.0)
    fnr, ser = top_c_rates([[0, 1], [3, 4]], scores, 2)  # perfect, then all wrong
    assert fnr == pytest.approx(0.5) and ser == pytest.approx(0.5 * (1 - 1 / 19))
    assert all(math.isnan(x) for x in top_c_rates([], scores, 2))
