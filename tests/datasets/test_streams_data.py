"""Tests for dpwidgets.families.streams.standins: the Table 5.1-shaped streams of Chen 2018, Ch. 5.

Seeds are fixed; the shape checks (cycles, sparsity) state the measured values in comments and
use bounds far from them, so they only fail if the generator loses the published shape.
"""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets.datasets import (
    DAY,
    STREAM_SHAPES,
    WEEK,
    load_sunspot_counts,
    multi_state_streams,
    wifi_stream,
)
from dpwidgets.engine.streams import Hierarchy


@pytest.mark.parametrize("name", ["Low_5", "Med_5", "High_5"])
def test_published_length_and_total(name):
    c = wifi_stream(name, np.random.default_rng(0))
    shape = STREAM_SHAPES[name]
    assert c.dtype == np.int64 and c.shape == (57_901,)
    assert c.sum() == shape.total and c.min() >= 0
    np.testing.assert_array_equal(c, wifi_stream(name, np.random.default_rng(0)))
    assert not np.array_equal(c, wifi_stream(name, np.random.default_rng(1)))


@pytest.mark.parametrize("name", ["Med_5", "High_5"])
def test_daily_and_weekly_cycles(name):
    c = wifi_stream(name, np.random.default_rng(0)).astype(float)
    hour = (np.arange(c.size) % DAY) // 12
    weekday = (np.arange(c.size) // DAY) % 7
    # measured: working hours / night ~ 40-60x, weekday / weekend ~ 4x
    assert c[(hour >= 10) & (hour < 16)].mean() > 10 * c[(hour >= 1) & (hour < 5)].mean()
    assert c[weekday < 5].mean() > 2 * c[weekday >= 5].mean()
    x = c - c.mean()
    autocorr = lambda lag: float(np.dot(x[:-lag], x[lag:]) / np.dot(x, x))  # noqa: E731
    assert autocorr(DAY) > 0.3 and autocorr(WEEK) > 0.3 and autocorr(DAY // 2) < autocorr(DAY)


def test_low_5_is_sparse_and_bursty():
    c = wifi_stream("Low_5", np.random.default_rng(0))
    assert np.mean(c == 0) > 0.95  # measured 0.98
    assert c.max() >= 5  # episodes, not a thin uniform drizzle (measured max 24)


def test_multi_5_shape_and_hierarchy():
    leaves = multi_state_streams(np.random.default_rng(0))
    assert leaves.shape == (128, 20_000) and leaves.sum() == 646_254 and leaves.min() >= 0
    per_state = leaves.sum(axis=1)
    assert per_state.max() > 50 * max(per_state.min(), 1)  # very unequal loads (measured ~5600x)
    assert np.mean(leaves == 0) > 0.8  # mostly sparse cells (measured 0.91)
    tree = Hierarchy.binary(128)
    assert tree.height == 8
    assert tree.aggregate(leaves)[0].sum() == 646_254


def test_bad_arguments():
    with pytest.raises(ValueError, match="name"):
        wifi_stream("Huge_5")
    with pytest.raises(ValueError, match="n_states"):
        multi_state_streams(n_states=0)
    with pytest.raises(TypeError, match="Generator"):
        wifi_stream("Med_5", rng=3)


def test_sunspot_counts():
    c = load_sunspot_counts()
    assert c.shape == (309,) and c.min() >= 0 and c.dtype == np.int64
