"""The dynamic-histogram session mechanisms (dpwidgets/families/dynamic/spec.py, Li 2017, Ch. 4):
validation before any charge or noise, what each release costs, and that only DP output leaves
the session."""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.datasets import census_like_series
from dpwidgets.engine import dynamic as engine
from dpwidgets.families.dynamic.spec import (
    DYNAMIC_MECHANISMS,
    W_EVENT,
    expand_releases,
    user_level_factor,
)
from dpwidgets.families.dynamic.standins import dynamic_stand_in
from dpwidgets.session import MECHANISMS

N, U, SHAPE = 60, 40, (8, 5)
PUBLIC_N = 5_000  # the declared public lower bound on the snapshot sizes


def secret_series(seed: int = 3) -> np.ndarray:
    """A confidential (N, U) series whose counts (about 100,000-110,000), marginals and totals
    are far from anything public here (the stand-in holds about 5,000 records per snapshot,
    times and bins are below 100), so a leak check cannot be fooled by coincidence."""
    rng = np.random.default_rng(seed)
    drift = np.linspace(0.0, 1.0, N)[:, None] * rng.dirichlet(np.ones(U))[None, :]
    probs = (1 - 0.5 * drift / drift.max()) * rng.dirichlet(np.ones(U))[None, :] + 0.5 * drift
    probs /= probs.sum(axis=1, keepdims=True)
    counts = np.stack([rng.multinomial(200_000, p) for p in probs])
    return (100_000 + counts // 20).astype(float)


USER = {
    "dsat": {"cardinality": PUBLIC_N},
    "dsft": {"cardinality": PUBLIC_N, "threshold": 0.05},
    "dynamic_fixed": {},
    "dynamic_uniform": {},
}
WEVENT = {
    "dsat_w_event": {"cardinality": PUBLIC_N, "w": 25},
    "dynamic_bd": {"w": 25},
    "dynamic_ba": {"w": 25},
}


@pytest.fixture
def analyst(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=5)
    # The public snapshot size is a fact the data owner declares (an analyst cannot claim it).
    s.add_dataset("series", secret_series(), total_epsilon=20.0,
                  stand_in=dynamic_stand_in(N, U, PUBLIC_N), facts={"cardinality": PUBLIC_N})
    s.add_dataset("scores", np.arange(50.0), total_epsilon=1.0)
    yield s
    s.close()


@pytest.fixture
def teaching():
    s = Session(mode="teaching", seed=8)
    data = census_like_series(80, 20_000, attributes=("age", "income"),
                              rng=np.random.default_rng(1))
    s.add_dataset("census", data.histograms, total_epsilon=100.0,
                  stand_in=dynamic_stand_in(80, data.n_bins, 20_000))
    yield s
    s.close()


def test_every_mechanism_is_registered_as_a_private_series_mechanism():
    assert set(DYNAMIC_MECHANISMS) == set(USER) | set(WEVENT)
    for name, mech in DYNAMIC_MECHANISMS.items():
        assert MECHANISMS[name] is mech
        assert mech.table and not mech.frame
        assert mech.private({})


BAD = [
    ("dsat", {"epsilon": 0.5, "cardinality": 1}, "cardinality"),
    ("dsat", {"epsilon": -1.0, "cardinality": PUBLIC_N}, "epsilon"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "cutoff": 0}, "cutoff"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "cutoff": N + 1}, "cutoff"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "cutoff": 3, "cutoff_fraction": 0.1},
     "not both"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "cutoff_fraction": 0.0}, "cutoff_fraction"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "threshold": 2.5}, "threshold"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "burn_in": N}, "burn_in"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "delta": 0.0}, "delta"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "theta": -1.0}, "theta"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "k": 1.0}, "k"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "publisher": "ag"}, "1-D"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "publisher": "nope"}, "publisher"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "window": 3}, "unknown"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "variant": "pid"}, "variant"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "reference": "truth"}, "reference"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "gain": 0.0}, "gain"),
    ("dsft", {"epsilon": 0.5, "cardinality": PUBLIC_N}, "threshold"),
    ("dsft", {"epsilon": 0.5, "cardinality": PUBLIC_N, "threshold": 0.1, "decision_ratio": 0},
     "decision_ratio"),
    ("dsat_w_event", {"epsilon": 0.5, "cardinality": PUBLIC_N}, "w="),
    ("dsat_w_event", {"epsilon": 0.5, "cardinality": PUBLIC_N, "w": 10, "cutoff": 11}, "w = 10"),
    ("dsat_w_event", {"epsilon": 0.5, "cardinality": PUBLIC_N, "w": 10, "burn_in": 10},
     "burn_in"),
    ("dynamic_bd", {"epsilon": 0.5, "w": 0}, "w"),
    ("dynamic_ba", {"epsilon": 0.5}, "w="),
    ("dynamic_fixed", {"epsilon": 0.5, "cutoff": 0}, "cutoff"),
    ("dynamic_uniform", {"epsilon": 0.5, "cutoff": 3}, "unknown"),
    ("dynamic_uniform", {"epsilon": 0.5, "shape": (7, 5)}, "shape"),
    ("dsat", {"epsilon": 0.5, "cardinality": PUBLIC_N, "shape": "8x5"}, "shape"),
    ("dynamic_bd", {"epsilon": 0.5, "w": 5, "shape": (8, 0)}, "shape"),
]


@pytest.mark.parametrize("mechanism, params, match", BAD,
                         ids=[f"{m}-{i}" for i, (m, _, _) in enumerate(BAD)])
def test_bad_parameters_are_refused_before_any_noise_or_charge(analyst, monkeypatch, mechanism,
                                                               params, match):
    def forbidden(*args, **kwargs):
        raise AssertionError("the engine ran before the parameters were validated")

    for fn in ("dsat", "dsft", "dsat_w_event", "fixed_sampling_release",
               "uniform_budget_release", "budget_distribution_release",
               "budget_absorption_release"):
        monkeypatch.setattr(engine, fn, forbidden)
    with pytest.raises(ValueError, match=match):
        analyst.release("series", mechanism, **params)
    with pytest.raises(ValueError):
        analyst.cost("series", mechanism, **params)
    assert analyst.spent("series") == 0.0
    assert analyst.ledger("series").spends == []


def test_without_a_declared_size_the_samplers_refuse_and_never_read_it_off_the_data(tmp_path):
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("undeclared", secret_series(), total_epsilon=1.0,
                  stand_in=dynamic_stand_in(N, U, PUBLIC_N))
    for mechanism in ("dsat", "dsft", "dsat_w_event"):
        with pytest.raises(ValueError, match="cardinality"):
            s.release("undeclared", mechanism, epsilon=0.5, threshold=0.05, w=25)
        with pytest.raises(ValueError, match="cardinality"):
            s.release("undeclared", mechanism, epsilon=0.5, cardinality=PUBLIC_N)
    assert s.spent("undeclared") == 0.0


def test_a_series_mechanism_refuses_a_1d_dataset_and_dsat_a_single_snapshot(analyst):
    with pytest.raises(ValueError, match="runs on a table"):  # session wording
        analyst.release("scores", "dsat", epsilon=0.1, cardinality=10)
    one = Session(mode="teaching")
    one.add_dataset("one", np.full((1, 4), 10.0), stand_in=np.full((1, 4), 10.0))
    with pytest.raises(ValueError, match="at least 2 snapshots"):
        one.release("one", "dsat", epsilon=0.1, cardinality=10)
    assert one.release("one", "dynamic_uniform", epsilon=0.1).output["n_releases"] == 1


def test_a_false_public_size_is_refused_and_nothing_is_charged(analyst):
    # Every snapshot holds about 4.1M records; claiming n = 10M breaks Lemma 4.2.1's bound.
    with pytest.raises(ValueError, match="cardinality"):
        analyst.release("series", "dsat", epsilon=0.5, cardinality=10_000_000)
    assert analyst.spent("series") == 0.0


@pytest.mark.parametrize("mechanism", sorted(USER))
def test_user_level_release_costs_epsilon(analyst, mechanism):
    release = analyst.release("series", mechanism, epsilon=0.4, **USER[mechanism])
    assert release.charged and release.epsilon == pytest.approx(0.4)
    assert analyst.spent("series") == pytest.approx(0.4)
    assert analyst.meter.budget("series")["spent"] == pytest.approx(0.4)
    assert set(release.output["epsilon_parts"]) == {"decision", "release"}
    assert math.fsum(release.output["epsilon_parts"].values()) == pytest.approx(0.4)
    assert "user level" in release.output["guarantee"]


@pytest.mark.parametrize("mechanism", sorted(WEVENT))
def test_w_event_release_is_charged_at_user_level(analyst, mechanism):
    # N = 60, w = 25: a person in all 60 snapshots spans ceil(60/25) = 3 windows.
    assert user_level_factor(N, 25) == 3
    release = analyst.release("series", mechanism, epsilon=0.2, **WEVENT[mechanism])
    assert release.epsilon == pytest.approx(0.6)
    assert analyst.spent("series") == pytest.approx(0.6)
    assert "3·ε at user level" in release.label
    windows = release.output["window_epsilons"]
    assert windows.size == N - 25 + 1 and np.all(windows <= 0.2 + 1e-9)
    # w >= N: the whole series is one window, charged epsilon.
    assert analyst.cost("series", mechanism, epsilon=0.2, **{**WEVENT[mechanism], "w": N}) == \
        pytest.approx(0.2)


def test_defaults_are_canonical_so_an_explicit_default_is_a_free_replay(analyst):
    first = analyst.release("series", "dsat", epsilon=0.3, cardinality=PUBLIC_N)
    assert first.params["cutoff"] == 1 and first.params["burn_in"] == 1  # 0.01 N, 0.02 N
    assert first.params["k"] is None  # the engine's rule, not filled in here
    again = analyst.release("series", "dsat", epsilon=0.3, cardinality=PUBLIC_N, cutoff=1,
                            burn_in=1, threshold=0.5, variant="paced")
    assert not again.charged and analyst.spent("series") == pytest.approx(0.3)
    # δ and θ steer only the text's controller: under the paced one they change nothing.
    paced = analyst.release("series", "dsat", epsilon=0.3, cardinality=PUBLIC_N, theta=0.9,
                            delta=0.2)
    assert not paced.charged
    text = analyst.release("series", "dsat", epsilon=0.3, cardinality=PUBLIC_N, variant="text",
                           theta=0.9)
    assert text.charged and "θ = 0.9" in text.label
    assert analyst.spent("series") == pytest.approx(0.6)
    fraction = analyst.release("series", "dynamic_fixed", epsilon=0.3, cutoff_fraction=0.1)
    assert fraction.params["cutoff"] == 6


CASES = [*USER.items(), ("dsat", {"cardinality": PUBLIC_N, "variant": "text"}),
         ("dsft", {"cardinality": PUBLIC_N, "threshold": 0.05, "reference": "snapshot"}),
         *WEVENT.items()]


@pytest.mark.parametrize("mechanism, params", CASES,
                         ids=[f"{m}-{i}" for i, (m, _) in enumerate(CASES)])
def test_outputs_are_the_dp_release_only_and_expand_to_the_engine_series(teaching, mechanism,
                                                                         params):
    params = {**params, "cardinality": 20_000} if "cardinality" in params else params
    release = teaching.release("census", mechanism, epsilon=1.0, **params)
    result, out = release.result, release.output
    assert set(out) <= {"histograms", "release_points", "release_epsilons", "thresholds",
                        "n_releases", "n_bins", "epsilon", "epsilon_parts", "window_epsilons",
                        "method", "guarantee", "neighbours", "details"}
    assert ("window_epsilons" in out) == (mechanism in W_EVENT)
    np.testing.assert_array_equal(expand_releases(out), result.releases)
    np.testing.assert_array_equal(out["release_points"], result.release_points)
    np.testing.assert_array_equal(out["histograms"], result.releases[result.release_points])
    assert out["n_releases"] == result.n_releases
    np.testing.assert_array_equal(out["thresholds"], result.thresholds)
    assert set(out["details"]) <= set(result.details)
    for value in out["details"].values():
        assert value is None or isinstance(value, int | float | str)


def _text_trajectory(points: np.ndarray, p: dict) -> np.ndarray:
    """The text's DSAT threshold recomputed from the release flags and the parameters alone
    (Li 2017, Alg. 8 lines 6-8, eqs. 4.2.2-4.2.5, P term): if this matches the output, the
    trajectory is post-processing of released information."""
    n, target = points.size, p["cutoff"] / points.size
    out = np.full(n, p["threshold"])
    now, count = p["threshold"], 1
    for t in range(1, n):
        i = t + 1
        if not (count < p["cutoff"] and t == n - 1) and count < p["cutoff"] and i > p["burn_in"]:
            ratio = count / i
            u = p["theta"] * abs(abs(ratio - target) - p["delta"]) / p["delta"]
            now = max(0.0, now - u) if ratio - target <= 0 else min(2.0, now + u)
        out[t] = now
        count += int(points[t])
    return out


def _paced_trajectory(points: np.ndarray, cutoff: int, scale: float, gain: float) -> np.ndarray:
    """The paced DSAT threshold from the release flags alone: ``min(2, T_s exp(gain (C_t - 0.5
    - C t/N)))`` with ``C_t`` the releases before ``t`` (engine.dsat's docstring)."""
    before = np.r_[0, np.cumsum(points)[:-1]]
    t = np.arange(points.size)
    out = np.minimum(2.0, scale * np.exp(gain * (before - 0.5 - cutoff / points.size * t)))
    out[0] = scale
    return out


def test_dsat_threshold_trajectory_is_a_function_of_the_release_flags(teaching):
    text = teaching.release("census", "dsat", epsilon=2.0, cardinality=20_000, cutoff=8,
                            burn_in=3, threshold=0.3, variant="text")
    out = text.output
    assert out["n_releases"] >= 2
    np.testing.assert_allclose(out["thresholds"],
                               _text_trajectory(out["release_points"], text.params))
    paced = teaching.release("census", "dsat", epsilon=2.0, cardinality=20_000, cutoff=8,
                             variant="paced")
    out = paced.output
    details = out["details"]
    np.testing.assert_allclose(out["thresholds"], _paced_trajectory(
        out["release_points"], 8, details["schedule_threshold"], details["gain"]))
    for release in (text, paced):
        thresholds = release.output["thresholds"]
        assert np.all((thresholds >= 0) & (thresholds <= 2))


def test_analyst_release_carries_no_confidential_value_and_survives_a_restart(tmp_path):
    path = tmp_path / "ledger.sqlite"
    secret = secret_series()
    s = Session(mode="analyst", ledger=path, seed=1)
    s.add_dataset("series", secret, total_epsilon=5.0, stand_in=dynamic_stand_in(N, U, PUBLIC_N),
                  facts={"cardinality": PUBLIC_N})
    release = s.release("series", "dsat", epsilon=1.0, cardinality=PUBLIC_N, cutoff=4)
    assert release.result is None
    marginals = secret.reshape(N, *SHAPE).sum(axis=2)
    for value in release.output.values():
        if isinstance(value, np.ndarray) and value.dtype.kind == "f":
            for raw in (secret, marginals, secret.sum(axis=1)):
                # Analyst noise is discrete Laplace on a power-of-two grid
                # (floating_point_safe): a released count can equal some true count by
                # chance (~2**-10 per value); a leak would put most of them there.
                assert np.isin(raw, value).mean() < 0.01
    s.close()
    # A new process on the same ledger: the stored output is replayed, nothing is charged.
    s2 = Session(mode="analyst", ledger=path, seed=2)
    s2.add_dataset("series", secret, total_epsilon=None, stand_in=dynamic_stand_in(N, U, PUBLIC_N),
                   facts={"cardinality": PUBLIC_N})
    replay = s2.release("series", "dsat", epsilon=1.0, cardinality=PUBLIC_N, cutoff=4)
    assert not replay.charged and s2.spent("series") == pytest.approx(1.0)
    np.testing.assert_allclose(expand_releases(replay.output), expand_releases(release.output))
    np.testing.assert_array_equal(replay.output["release_points"],
                                  release.output["release_points"])
    s2.close()


def test_expand_releases_shows_zeros_before_the_first_release():
    out = {"histograms": np.array([[1.0, 2.0], [3.0, 4.0]]), "n_bins": 2,
           "release_points": np.array([False, True, False, True, False])}
    np.testing.assert_array_equal(
        expand_releases(out), [[0, 0], [1, 2], [1, 2], [3, 4], [3, 4]])
    empty = {"histograms": np.zeros((0, 3)), "n_bins": 3, "release_points": np.zeros(4, bool)}
    np.testing.assert_array_equal(expand_releases(empty), np.zeros((4, 3)))
    with pytest.raises(ValueError, match="release points"):
        expand_releases({**out, "release_points": np.ones(5, bool)})


def test_stand_in_depends_only_on_the_public_shape_and_size():
    a = dynamic_stand_in(50, 30, 2_000)
    b = dynamic_stand_in(50, 30, 2_000)
    np.testing.assert_array_equal(a, b)
    assert a.shape == (50, 30) and np.all(a == np.round(a)) and np.all(a >= 0)
    assert np.all(a.sum(axis=1) >= 2_000)  # the public size is a valid lower bound
    # It moves: some snapshots differ from the first by more than sampling noise.
    dist = np.abs(a / a.sum(1, keepdims=True) - a[0] / a[0].sum()).sum(axis=1)
    assert dist.max() > 0.2
    with pytest.raises(ValueError, match="cardinality"):
        dynamic_stand_in(50, 30, 0)


def test_auto_publisher_follows_the_public_shape(teaching):
    # Age x income (96 x 3) flattened to 288 cells: identity (DAWA's buckets would join
    # unrelated cells); the same series declared 1-D: DAWA. The rule and an explicit choice's
    # note are public details.
    n_bins = teaching.shape("census")[1]
    grid = (n_bins // 3, 3)
    flat = teaching.release("census", "dsat", epsilon=1.0, cardinality=20_000,
                            publisher="auto", shape=grid)
    assert flat.result.publisher == "identity"
    assert "auto" in flat.output["details"]["publisher_rule"]
    one = teaching.release("census", "dynamic_fixed", epsilon=1.0, publisher="auto",
                           shape=(n_bins,))
    assert one.result.publisher == "dawa_dyadic"
    chosen = teaching.release("census", "dynamic_uniform", epsilon=1.0, publisher="dawa",
                              shape=grid)
    assert "flattened" in chosen.output["details"]["publisher_note"]
