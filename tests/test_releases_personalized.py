"""The personalized-DP session mechanism (dpwidgets/families/personalized/, Li 2017, Ch. 5):
validation before any charge or noise, what a release costs on the uniform ledger, and that
only DP output and functions of the public privacy vector leave the session."""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine import personalized as engine
from dpwidgets.families.personalized.spec import (
    PERSONALIZED_MECHANISMS,
    PrivacyVector,
    personalized_stand_in,
    release_plan,
)
from dpwidgets.families.personalized.standins import budgets_mixed, budgets_normal
from dpwidgets.session import MECHANISMS

N = 4_000
EDGES = np.linspace(0.0, 100.0, 21)
NAME = "personalized_histogram"


def secret_values(n: int = N, seed: int = 3) -> np.ndarray:
    """Confidential values, each recognisable (…+ 0.371 + i·1e-7): no budget, bin edge, count
    or stand-in value here can equal one by chance."""
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(50.0, 15.0, n), 0.0, 99.0) + 0.371 + np.arange(n) * 1e-7


@pytest.fixture(scope="module")
def budgets() -> np.ndarray:
    return budgets_normal(N, rng=np.random.default_rng(11))  # Li 2017, §5.3.1: N(0.1, 1) clipped


@pytest.fixture
def analyst(tmp_path, budgets):
    s = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=5)
    s.add_dataset("survey", np.column_stack((secret_values(), budgets)), total_epsilon=5.0,
                  stand_in=personalized_stand_in(budgets, EDGES))
    s.add_dataset("scores", np.arange(50.0), total_epsilon=1.0)
    s.add_dataset("wide", np.column_stack((secret_values(), budgets, budgets)),
                  total_epsilon=1.0, stand_in=np.ones((N, 3)))
    yield s
    s.close()


def params(vector, **kw) -> dict:
    p = {"epsilon": float(np.max(vector)), "budgets": vector, "bins": EDGES}
    p.update(kw)
    return p


def test_the_mechanism_is_registered_as_a_private_table_mechanism():
    mech = PERSONALIZED_MECHANISMS[NAME]
    assert MECHANISMS[NAME] is mech
    assert mech.table and not mech.frame and mech.private({})


BAD = [
    ({"budgets": None}, "budgets"),
    ({"budgets": np.full(N - 1, 0.5)}, "one budget per record"),
    ({"budgets": np.r_[0.0, np.full(N - 1, 0.5)]}, "> 0"),
    ({"budgets": np.r_[np.nan, np.full(N - 1, 0.5)]}, "finite"),
    ({"budgets": "privacy-vector:4000:abc"}, "not a digest"),
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": -1.0}, "epsilon"),
    ({"method": "median"}, "method"),
    ({"bins": None}, "bins"),
    ({"bins": [0.0, 50.0, 40.0]}, "strictly increasing"),
    ({"bins": 10}, "value_range"),
    ({"bins": EDGES, "value_range": (0, 100)}, "value_range"),
    ({"method": "sampling", "threshold": 5.0}, "threshold"),
    ({"method": "utility", "threshold": 0.5}, "threshold"),
    ({"method": "sampling", "rounds": 2}, "rounds"),
    ({"method": "weighted", "threshold": 0.5}, "threshold"),
    ({"method": "weighted", "rounds": 2}, "rounds"),
    ({"rounds": 0}, "rounds"),
    ({"ensemble": "median"}, "ensemble"),
    ({"ensemble": "sum", "rounds": 2}, "rounds=1"),
    ({"min_size": N + 1}, "min_size"),
    ({"max_partitions": 0}, "max_partitions"),
    ({"colour": "red"}, "unknown parameter"),
]


@pytest.mark.parametrize("change, message", BAD, ids=[m for _, m in BAD])
def test_bad_parameters_are_refused_before_any_charge_or_noise(analyst, budgets, change,
                                                               message):
    p = {**params(budgets), **change}
    if p["budgets"] is None:
        del p["budgets"]
    state = analyst.rng.bit_generator.state
    with pytest.raises(ValueError, match=message):
        analyst.release("survey", NAME, **p)
    with pytest.raises(ValueError, match=message):
        analyst.cost("survey", NAME, **p)
    assert analyst.spent("survey") == 0.0
    assert analyst.ledger("survey").spends == []
    assert analyst.rng.bit_generator.state == state  # no noise was drawn
    assert message.split()[0].lower() in analyst.last_refusal.lower()


@pytest.mark.parametrize("dataset", ["scores", "wide"])
def test_only_two_column_tables_are_accepted(analyst, budgets, dataset):
    with pytest.raises(ValueError, match=r"\[value, budget\]|runs on a table"):
        analyst.release(dataset, NAME, **params(budgets))
    assert analyst.spent(dataset) == 0.0


def test_a_privacy_vector_above_what_the_records_asked_leaves_those_records_out(analyst,
                                                                                budgets):
    """A release may protect a record more than it asked for, never less. The door no longer
    compares the vector with the table before the charge (that read the data, and its refusal
    said how many records were above: issue 21). The run leaves out of the counts every record
    whose column is below what the plan gives it; everything but the noisy counts is a
    function of the parameters. Seeded check: at ε = 1e4 per record (Laplace scale 2e-4 per
    cell, so |noise| < 0.5 with probability 1 - e^-2500), Minimum's counts are exactly the
    histogram of the covered records."""
    more = budgets.copy()
    more[[3, 7]] += 0.5
    release = analyst.release("survey", NAME, **params(more, method="minimum"))
    assert release.charged and analyst.spent("survey") == pytest.approx(float(np.min(more)))
    assert np.all(release.output["enjoyed"] <= more)
    # Lower anywhere is fine: more protection than asked.
    less = budgets.copy()
    less[::2] *= 0.5
    release = analyst.release("survey", NAME, **params(less))
    assert np.all(release.output["enjoyed"] <= less)

    teaching = Session(mode="teaching", seed=3)
    asked = np.full(N, 1e4)
    asked[:100] = 1.0  # these 100 records ask for more protection than the release gives
    values = secret_values()
    teaching.add_dataset("t", np.column_stack((values, asked)), total_epsilon=1e9,
                         stand_in=personalized_stand_in(asked, EDGES))
    out = teaching.release("t", NAME, epsilon=1e4, budgets=np.full(N, 1e4), bins=EDGES,
                           method="minimum").output
    truth = np.histogram(values[100:], bins=EDGES)[0]
    np.testing.assert_array_equal(np.round(out["counts"]), truth)


@pytest.mark.parametrize("method", ["minimum", "threshold", "sampling", "privacy_aware",
                                    "utility", "weighted"])
def test_a_release_is_charged_its_largest_per_record_loss(analyst, budgets, method):
    """The ledger keeps one ε for everybody: a personalized release costs max_j enjoyed[j],
    which is what the engine's plan (a function of the public vector) gives every record."""
    p = params(budgets, method=method)
    cost = analyst.cost("survey", NAME, **p)
    plan = engine.plan_releases(budgets, method, utility_options={
        "cell_variance": (1 - 1 / 20) / 20})
    assert cost == pytest.approx(float(np.max(plan.enjoyed)))
    assert cost <= float(np.max(budgets))
    if method == "minimum":
        assert cost == pytest.approx(float(np.min(budgets)))
    if method in ("sampling", "threshold"):
        assert cost == pytest.approx(float(np.mean(budgets)))  # ε_T defaults to the mean
    if method == "weighted":
        assert cost == float(np.max(budgets))  # the top record enjoys its whole budget
    release = analyst.release("survey", NAME, **p)
    assert release.charged and release.epsilon == pytest.approx(cost)
    assert analyst.spent("survey") == pytest.approx(cost)
    assert analyst.ledger("survey").spends[-1].epsilon == pytest.approx(cost)
    assert release.output["charge"] == pytest.approx(cost)
    assert f"{cost:.3g}" in release.label
    np.testing.assert_array_equal(release.output["enjoyed"], plan.enjoyed)
    assert np.all(release.output["enjoyed"] <= budgets)


def test_the_cap_bounds_the_charge_and_every_enjoyed_budget(analyst, budgets):
    release = analyst.release("survey", NAME, **params(budgets, epsilon=0.3,
                                                       method="privacy_aware", rounds=2))
    assert release.epsilon <= 0.3 + 1e-12
    assert np.all(release.output["enjoyed"] <= np.minimum(budgets, 0.3) + 1e-12)
    assert "cap ε = 0.3" in release.label and "T = 2 rounds" in release.label


def test_replays_are_free_and_new_parameters_are_charged_again(analyst, budgets):
    first = analyst.release("survey", NAME, **params(budgets, method="sampling",
                                                     threshold=0.4))
    again = analyst.release("survey", NAME, **params(budgets.copy(), method="sampling",
                                                     threshold=0.4))
    assert not again.charged
    np.testing.assert_array_equal(again.output["counts"], first.output["counts"])
    # ε_T omitted = the mean budget: the same release as asking for the mean explicitly.
    mean = analyst.release("survey", NAME, **params(budgets, method="sampling"))
    explicit = analyst.release("survey", NAME, **params(budgets, method="sampling",
                                                        threshold=float(np.mean(budgets))))
    assert mean.charged and not explicit.charged
    assert analyst.spent("survey") == pytest.approx(0.4 + float(np.mean(budgets)))


def test_the_outputs_are_the_dp_histogram_and_public_functions_of_the_vector(analyst,
                                                                              budgets):
    release = analyst.release("survey", NAME, **params(budgets, method="utility"))
    out = release.output
    assert set(out) == {"counts", "release_counts", "edges", "labels", "enjoyed",
                        "release_epsilons", "release_sizes", "release_rounds", "threshold",
                        "charge", "n", "method", "ensemble", "epsilon_parts", "guarantee",
                        "neighbours"}
    assert release.result is None  # analyst mode: the engine result stays behind
    values = secret_values()
    arrays = [np.ravel(v) for v in out.values() if isinstance(v, np.ndarray)]
    assert not np.isin(values, np.concatenate(arrays)).any()
    # The public part depends on the privacy vector and the parameters only: another table
    # with the same vector (the stand-in) gives the same partitions and enjoyed budgets.
    preview = analyst.preview("survey", NAME, **params(budgets, method="utility")).output
    for key in ("labels", "enjoyed", "release_epsilons", "release_sizes", "release_rounds"):
        np.testing.assert_array_equal(out[key], preview[key])
    assert not np.array_equal(out["counts"], preview["counts"])
    assert out["release_counts"].shape == (out["release_epsilons"].size, 20)
    assert int(out["release_sizes"].sum()) == N
    assert "replace-one" in out["neighbours"] and "personalized DP" in out["guarantee"]


def test_the_release_is_the_engine_on_the_data_with_the_public_plan(budgets):
    """Same seed, same data, same plan: the session's release equals the engine's output."""
    s = Session(mode="teaching", seed=9)
    values = secret_values()
    s.add_dataset("t", np.column_stack((values, budgets)), total_epsilon=100.0,
                  stand_in=personalized_stand_in(budgets, EDGES))
    p = params(budgets, method="privacy_aware", rounds=2)
    validated = PERSONALIZED_MECHANISMS[NAME].validate(p, (N, 2))
    release = s.release("t", NAME, **p)
    expected = engine.personalized_histogram(values, budgets, EDGES, "privacy_aware",
                                             rng=np.random.default_rng(9),
                                             plan=release_plan(validated))
    np.testing.assert_array_equal(release.output["counts"], expected.counts)
    assert release.result is not None  # teaching mode keeps the engine result in process
    s.close()


def test_values_outside_the_public_bins_are_clipped_into_the_end_bins_not_refused():
    """A refusal that depended on the confidential values would leak; the public rule is to
    clip. With budgets of 1,000 the Laplace noise (scale 2/1000 per cell) is negligible: the
    Minimum estimate equals the clipped histogram within 0.1 per cell (50 s.d.)."""
    n = 1_000
    values = np.linspace(-50.0, 150.0, n)
    wide = np.full(n, 1000.0)
    s = Session(mode="teaching", seed=1)
    s.add_dataset("t", np.column_stack((values, wide)), total_epsilon=1e6,
                  stand_in=personalized_stand_in(wide, EDGES))
    release = s.release("t", NAME, epsilon=1000.0, budgets=wide, bins=EDGES, method="minimum")
    expected = np.histogram(np.clip(values, 0.0, 100.0), bins=EDGES)[0]
    np.testing.assert_allclose(release.output["counts"], expected, atol=0.1)
    assert expected[0] > 250 and expected[-1] > 250
    s.close()


def test_a_persisted_release_replays_free_in_a_new_session_and_stores_only_a_digest(
        tmp_path, budgets):
    ledger = tmp_path / "shared.sqlite"
    table = np.column_stack((secret_values(), budgets))
    stand_in = personalized_stand_in(budgets, EDGES)
    one = Session(mode="analyst", ledger=ledger, seed=1)
    one.add_dataset("survey", table, total_epsilon=2.0, stand_in=stand_in)
    first = one.release("survey", NAME, **params(budgets, method="utility"))
    one.close()
    two = Session(mode="analyst", ledger=ledger, seed=2)
    two.add_dataset("survey", table, total_epsilon=2.0, stand_in=stand_in)
    again = two.release("survey", NAME, **params(budgets, method="utility"))
    assert not again.charged and two.spent("survey") == pytest.approx(first.epsilon)
    np.testing.assert_array_equal(again.output["counts"], first.output["counts"])
    np.testing.assert_array_equal(again.output["enjoyed"], first.output["enjoyed"])
    stored = again.params["budgets"]
    assert isinstance(stored, str) and stored.startswith(f"privacy-vector:{N}:")
    assert stored == str(PrivacyVector(budgets))
    two.close()


def test_the_privacy_vector_digest_identifies_the_vector():
    a = PrivacyVector([0.1, 0.2, 0.3])
    assert a == PrivacyVector(np.array([0.1, 0.2, 0.3])) and a != PrivacyVector([0.1, 0.2, 0.4])
    assert not a.array.flags.writeable


def test_the_stand_in_carries_the_public_vector_and_public_values_only():
    b = budgets_mixed(500, [(0.5, 0.01, 0.2), (0.5, 0.2, 1.0)], np.random.default_rng(1))
    table = personalized_stand_in(b, 10, value_range=(0.0, 10.0), seed=4)
    assert table.shape == (500, 2)
    np.testing.assert_array_equal(table[:, 1], b)
    assert set(np.unique(table[:, 0])) <= set(np.arange(10) + 0.5)  # bin centres only
    np.testing.assert_array_equal(table, personalized_stand_in(b, 10, value_range=(0, 10),
                                                               seed=4))
    only_first = personalized_stand_in(b, 10, value_range=(0, 10), profile=[1] + [0] * 9)
    assert np.all(only_first[:, 0] == 0.5)
    with pytest.raises(ValueError, match="profile"):
        personalized_stand_in(b, 10, value_range=(0, 10), profile=[1, 2])
    with pytest.raises(ValueError, match="> 0"):
        personalized_stand_in(np.zeros(5), 10, value_range=(0, 10))


def test_the_weighted_method_is_the_engine_one_release_weighting(tmp_path, budgets):
    """method="weighted" (Alaggan, Gambs & Kermarrec 2016): teaching mode gives the engine's
    output bit for bit with the same seed; an analyst release (floating-point-safe noise) is
    charged max(budgets), every record enjoys at most its budget, and the outputs are the
    usual public fields (one release holding every record)."""
    values = secret_values()
    s = Session(mode="teaching", seed=9)
    s.add_dataset("t", np.column_stack((values, budgets)), total_epsilon=100.0,
                  stand_in=personalized_stand_in(budgets, EDGES))
    release = s.release("t", NAME, **params(budgets, method="weighted"))
    expected = engine.weighted_histogram(values, budgets, EDGES, rng=np.random.default_rng(9))
    np.testing.assert_array_equal(release.output["counts"], expected.counts)
    assert "Weighted" in release.label and "Alaggan" in release.label
    s.close()

    a = Session(mode="analyst", ledger=tmp_path / "ledger.sqlite", seed=5)
    a.add_dataset("survey", np.column_stack((values, budgets)), total_epsilon=5.0,
                  stand_in=personalized_stand_in(budgets, EDGES))
    capped = a.release("survey", NAME, **params(budgets, method="weighted", epsilon=0.5))
    out = capped.output
    assert capped.charged and capped.epsilon == pytest.approx(0.5)
    assert np.all(out["enjoyed"] <= np.minimum(budgets, 0.5))
    assert out["method"] == "weighted" and out["release_sizes"].tolist() == [N]
    assert out["release_counts"].shape == (1, 20) and np.all(np.isfinite(out["counts"]))
    assert not np.isin(values, out["counts"]).any()
    a.close()


def test_a_privacy_vector_is_sorted_once_for_every_plan(budgets, monkeypatch):
    """The plans of every method and cap of one vector share its sort (the vector is public);
    each plan is the one the engine makes from the capped budgets."""
    from dpwidgets.families.personalized import params as rp

    sorts = []
    original = rp._sort
    monkeypatch.setattr(rp, "_sort", lambda b: sorts.append(1) or original(b))
    vector = PrivacyVector(budgets * (1 + 1e-12))  # a vector no earlier test planned
    spec = PERSONALIZED_MECHANISMS[NAME]
    for method in ("privacy_aware", "utility", "minimum"):
        for cap in (0.3, float(budgets.max())):
            p = spec.validate({"budgets": vector, "bins": EDGES, "method": method,
                               "epsilon": cap}, (N, 2))
            plan = release_plan(p)
            expected = engine.plan_releases(
                np.minimum(vector.array, cap), method, max_groups=1024,
                utility_options={"cell_variance": (1 - 1 / 20) / 20})
            assert np.array_equal(plan.labels, expected.labels)
            assert np.array_equal(plan.enjoyed, expected.enjoyed)
    assert sorts == [1]
    assert not vector.order.flags.writeable


@pytest.mark.parametrize("cap", [0.005, 0.3, 0.31, 1.0, 2.0])
def test_the_capped_order_is_the_stable_sort_of_the_capped_budgets(cap):
    from dpwidgets.families.personalized.params import _capped_order

    rng = np.random.default_rng(1)
    b = np.round(rng.uniform(0.01, 1.0, 5000) / 0.05) * 0.05 + 0.01  # many ties
    b[rng.random(5000) < 0.2] = 1.0
    vector = PrivacyVector(b)
    assert np.array_equal(vector.order, np.argsort(b, kind="stable"))
    assert np.array_equal(_capped_order(vector, cap),
                          np.argsort(np.minimum(b, cap), kind="stable"))
