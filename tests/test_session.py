"""The session: validation, mode policy, charging, the release cache and its persistence."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine.budget import BudgetExceededError
from dpwidgets.session import PrivacyPolicyError

SCORES = np.round(1e4 / np.arange(1, 501))  # 500 public-looking integer scores
SECRET = np.full(500, 1_000.25)  # every query far above the threshold below
STAND_IN = np.zeros(500)  # every query far below it

SVT = dict(variant="standard", epsilon=0.2, c=3, threshold=500.0)


def analyst(path, total=1.0, **kw) -> Session:
    s = Session(mode="analyst", ledger=path, seed=kw.pop("seed", 0))
    s.add_dataset("d", SECRET, total_epsilon=total, stand_in=STAND_IN)
    return s


def test_mode_and_arguments_are_validated(tmp_path):
    with pytest.raises(ValueError, match="mode"):
        Session(mode="public")
    s = Session()
    with pytest.raises(ValueError, match="stand_in"):
        s.add_dataset("x", SCORES, stand_in=np.zeros(3))
    with pytest.raises(ValueError, match="finite"):
        s.add_dataset("y", [1.0, np.nan])
    s.add_dataset("x", SCORES)
    with pytest.raises(ValueError, match="already"):
        s.add_dataset("x", SCORES)
    with pytest.raises(ValueError, match="unknown dataset"):
        s.release("nope", "svt", **SVT)


def test_invalid_parameters_charge_nothing(tmp_path):
    s = analyst(tmp_path / "l.sqlite")
    for bad in (dict(SVT, epsilon=-1.0), dict(SVT, variant="magic"), dict(SVT, c=0),
                dict(SVT, bogus=1)):
        with pytest.raises(ValueError):
            s.release("d", "svt", **bad)
    with pytest.raises(ValueError, match="mechanism"):
        s.release("d", "histogram", epsilon=0.1)
    assert s.spent("d") == 0.0


def test_analyst_release_charges_once_and_replays_free(tmp_path):
    s = analyst(tmp_path / "l.sqlite")
    first = s.release("d", "svt", **SVT)
    assert first.charged and s.spent("d") == pytest.approx(0.2)
    again = s.release("d", "svt", **SVT)
    assert not again.charged and s.spent("d") == pytest.approx(0.2)
    np.testing.assert_array_equal(again.output["outcomes"], first.output["outcomes"])
    # Different parameters, or another run of the same ones, are new releases.
    s.release("d", "svt", **dict(SVT, c=4))
    s.release("d", "svt", run=1, **SVT)
    assert s.spent("d") == pytest.approx(0.6)
    assert len(s.ledger("d").spends) == 3


def test_analyst_release_carries_only_the_dp_output(tmp_path):
    s = analyst(tmp_path / "l.sqlite")
    r = s.release("d", "svt", **SVT)
    assert r.result is None
    assert set(r.output) <= {"outcomes", "above", "n_examined", "above_values"}
    # All answers are far above the threshold: with c=3 the run stops at the third query.
    np.testing.assert_array_equal(r.output["above"], [0, 1, 2])
    for value in r.output.values():
        assert not np.isin(SECRET, np.atleast_1d(value)).any()


def test_analyst_refuses_broken_variants_and_the_attack(tmp_path):
    s = analyst(tmp_path / "l.sqlite")
    for variant in ("roth2011", "stoddard", "chen2015", "gptt", "lee_clifton"):
        with pytest.raises(PrivacyPolicyError, match="not differentially private"):
            s.release("d", "svt", **dict(SVT, variant=variant))
    with pytest.raises(PrivacyPolicyError):
        s.release("d", "reconstruction", epsilon=0.5)
    assert s.spent("d") == 0.0


def test_over_budget_is_refused_and_charges_nothing(tmp_path):
    s = analyst(tmp_path / "l.sqlite", total=0.5)
    s.release("d", "svt", **dict(SVT, epsilon=0.4))
    with pytest.raises(BudgetExceededError) as info:
        s.release("d", "svt", **dict(SVT, epsilon=0.2))
    assert info.value.remaining == pytest.approx(0.1)
    assert s.spent("d") == pytest.approx(0.4)
    assert not s.is_cached("d", "svt", **dict(SVT, epsilon=0.2))


def test_preview_runs_on_the_stand_in_and_is_free(tmp_path):
    s = analyst(tmp_path / "l.sqlite")
    preview = s.preview("d", "svt", **SVT)
    # The stand-in is all zeros, far below the threshold: no ⊤ (the data would give 3).
    assert preview.preview and not preview.charged and preview.epsilon == pytest.approx(0.2)
    assert preview.result.positives.size == 0 and preview.result.n_examined == 500
    assert preview.output["above"].size == 0
    assert s.spent("d") == 0.0
    np.testing.assert_array_equal(s.public_view("d"), STAND_IN)


def test_cached_release_survives_a_restart(tmp_path):
    path = tmp_path / "l.sqlite"
    a = analyst(path, seed=1)
    first = a.release("d", "svt", epsilon=0.3, c=2, threshold=1_000.0)
    top = a.release("d", "top_c", epsilon=0.2, c=5)
    a.close()
    # A new process (new session, other seed) asking the same thing gets the same DP output
    # back -- not fresh noise -- and pays nothing.
    b = Session(mode="analyst", ledger=path, seed=99)
    b.add_dataset("d", SECRET, total_epsilon=None, stand_in=STAND_IN)
    assert b.spent("d") == pytest.approx(0.5)
    replay = b.release("d", "svt", epsilon=0.3, c=2, threshold=1_000.0)
    replay_top = b.release("d", "top_c", epsilon=0.2, c=5)
    assert not replay.charged and not replay_top.charged
    np.testing.assert_array_equal(replay.output["outcomes"], first.output["outcomes"])
    np.testing.assert_array_equal(replay_top.output["selected"], top.output["selected"])
    assert b.spent("d") == pytest.approx(0.5)
    b.close()


def test_lost_output_after_a_charge_is_charged_again(tmp_path):
    # Simulate a crash between the charge and the store: the key is in the ledger, no output.
    path = tmp_path / "l.sqlite"
    s = analyst(path)
    key = s.release_key("d", "svt", **SVT)
    s.ledger("d").spend(0.2, "crashed release", key=key)
    assert s.spent("d") == pytest.approx(0.2)
    r = s.release("d", "svt", **SVT)
    assert r.charged and s.spent("d") == pytest.approx(0.4)
    assert not s.release("d", "svt", **SVT).charged  # and now it is cached


def test_changed_data_under_the_same_name_is_a_new_release(tmp_path):
    path = tmp_path / "l.sqlite"
    a = analyst(path)
    a.release("d", "svt", **SVT)
    a.close()
    b = Session(mode="analyst", ledger=path)
    b.add_dataset("d", SECRET + 1, total_epsilon=None, stand_in=STAND_IN)
    assert b.release("d", "svt", **SVT).charged
    assert b.spent("d") == pytest.approx(0.4)


def test_teaching_mode_runs_past_the_cap_as_overdraft():
    s = Session(mode="teaching", seed=0)
    s.add_dataset("d", SCORES, total_epsilon=0.5)
    r1 = s.release("d", "svt", **dict(SVT, epsilon=0.4))
    assert r1.result is not None and r1.result.noisy_threshold.size > 0  # secret state shown
    r2 = s.release("d", "svt", **dict(SVT, epsilon=0.3))
    assert r2.overdraft and not r1.overdraft
    assert s.spent("d") == pytest.approx(0.4)
    assert [o.epsilon for o in s.overdrafts("d")] == [pytest.approx(0.3)]
    np.testing.assert_array_equal(s.public_view("d"), SCORES)


def test_observers_hear_releases_and_refusals(tmp_path):
    s = analyst(tmp_path / "l.sqlite", total=0.3)
    events = []
    s.observe(lambda session, event: events.append(event["kind"]))
    s.release("d", "svt", **SVT)
    with pytest.raises(BudgetExceededError):
        s.release("d", "svt", **dict(SVT, c=5))
    assert events == ["release", "refused"]


def test_default_ledger_of_analyst_mode_is_persistent(tmp_path, monkeypatch):
    monkeypatch.setenv("DPWIDGETS_LEDGER", str(tmp_path / "default.sqlite"))
    s = Session(mode="analyst")
    assert s.ledger_path == str(tmp_path / "default.sqlite")
    assert Session().ledger_path == ":memory:"


# -- DataFrame datasets and registered mechanisms ------------------------------------------------
def _column_sums(frame, p, rng):
    """A toy mechanism on a DataFrame: Laplace-noised column sums (values in [0, 9])."""
    from dpwidgets.engine.mechanisms import laplace

    sums = frame.sum().to_numpy(dtype=float)
    # Replace-one neighbours: each column sum moves by at most 9, and there are 2 columns.
    return {"columns": list(frame.columns), "sums": sums + laplace(18 / p["epsilon"], 2, rng=rng)}


def test_dataframe_dataset_keeps_its_schema_and_registered_mechanisms_run_on_it(tmp_path):
    import pandas as pd

    from dpwidgets.session import MECHANISMS, Mechanism, register_mechanism

    mech = Mechanism(
        "toy_column_sums",
        validate=lambda params, shape: {"epsilon": float(params["epsilon"])},
        cost=lambda p: p["epsilon"],
        run=_column_sums,
        outputs=lambda result, p: result,
        private=lambda p: True,
        label=lambda p: "column sums",
        table=True,
        frame=True,
    )
    register_mechanism(mech)
    try:
        frame = pd.DataFrame({"age": np.arange(100) % 10, "sex": np.arange(100) % 2})
        stand_in = pd.DataFrame({"age": np.zeros(100, int), "sex": np.ones(100, int)})
        s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=3)
        # A mechanism registered outside dpwidgets runs on data only where the owner allows it.
        s.add_dataset("people", frame, total_epsilon=1.0, stand_in=stand_in,
                      allow_mechanisms=["toy_column_sums"])
        assert s.columns("people") == ["age", "sex"]
        assert s.shape("people") == (100, 2)
        preview = s.preview("people", "toy_column_sums", epsilon=0.5)
        assert preview.output["columns"] == ["age", "sex"]
        r = s.release("people", "toy_column_sums", epsilon=0.5)
        assert r.charged and s.spent("people") == pytest.approx(0.5)
        # Seed 3, scale 36: the noisy sums stay within 400 of the true ones (450, 50).
        np.testing.assert_allclose(r.output["sums"], [450, 50], atol=400)
        with pytest.raises(ValueError, match="already registered"):
            register_mechanism(dataclasses.replace(mech))
        # A frame mechanism refuses a plain array dataset before charging anything.
        s.add_dataset("array", np.ones((10, 2)), stand_in=np.zeros((10, 2)),
                      allow_mechanisms=["toy_column_sums"])
        with pytest.raises(ValueError, match="DataFrame"):
            s.release("array", "toy_column_sums", epsilon=0.1)
        assert s.spent("array") == 0
    finally:
        MECHANISMS.pop("toy_column_sums", None)


def test_dataframe_dataset_validation():
    import pandas as pd

    s = Session(seed=0)
    with pytest.raises(ValueError, match="not numeric"):
        s.add_dataset("t", pd.DataFrame({"a": ["x", "y"], "b": [1, 2]}), stand_in="continuous")
    good = pd.DataFrame({"a": [1, 2], "b": [3, 4]})
    with pytest.raises(ValueError, match="columns and dtypes"):
        s.add_dataset("t", good, stand_in=good.rename(columns={"a": "c"}))
    with pytest.raises(ValueError, match="NaN|finite"):
        s.add_dataset("t", pd.DataFrame({"a": [1.0, np.nan], "b": [3, 4]}), stand_in=good.astype({"a": float}))


def test_release_store_keeps_a_bounded_number_of_rows_in_memory(tmp_path):
    # A file-backed analyst session: evicted rows come back from SQLite, so replays stay free.
    from dpwidgets.session import _ReleaseStore

    s = analyst(str(tmp_path / "l.sqlite"), total=100.0)
    n = _ReleaseStore.MEMORY_ROWS + 6
    for run in range(n):
        s.release("d", "svt", run=run, **SVT)
    assert len(s._store._memory) == _ReleaseStore.MEMORY_ROWS
    spent = s.spent("d")
    assert not s.release("d", "svt", run=0, **SVT).charged  # evicted, read back from SQLite
    assert s.spent("d") == pytest.approx(spent)


def test_a_failure_while_running_on_the_data_says_nothing_and_stays_charged(tmp_path):
    # In analyst mode the cost is charged before the data is read; whatever the mechanism then
    # says (an exception, a warning) may depend on the data, so the caller gets a fixed message
    # with no chained exception, and the charge stays (the failure itself depends on the data).
    from dpwidgets.engine.errors import ReleaseFailed
    from dpwidgets.session import MECHANISMS, Mechanism, register_mechanism

    def run(data, p, rng):
        raise ValueError(f"a snapshot holds {data.max():.0f}")

    register_mechanism(Mechanism(
        "toy_fails", validate=lambda params, n: {"epsilon": float(params["epsilon"])},
        cost=lambda p: p["epsilon"], run=run, outputs=lambda r, p: {}, private=lambda p: True,
        label=lambda p: "fails",
    ))
    try:
        s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
        s.add_dataset("d", SECRET, total_epsilon=1.0, stand_in=STAND_IN,
                      allow_mechanisms=["toy_fails"])
        heard = []
        s.observe(lambda session, event: heard.append(event["kind"]))
        with pytest.raises(ReleaseFailed) as info:
            s.release("d", "toy_fails", epsilon=0.5)
        assert "1000" not in str(info.value) and info.value.__context__ is None
        assert info.value.__cause__ is None
        assert heard == ["refused"] and s.spent("d") == pytest.approx(0.5)
        assert "1000" not in s.last_refusal
    finally:
        MECHANISMS.pop("toy_fails", None)


def test_stored_outputs_round_trip_binary_and_old_json_rows_still_read(tmp_path):
    from dpwidgets.store import _to_jsonable, decode_output, encode_output

    output = {"a": np.array([1.5, np.nan, -np.inf]), "b": np.arange(6).reshape(2, 3),
              "flags": np.array([True, False]), "labels": np.array(["x", "yz"]),
              "n": 3, "nested": {"c": [np.array([0.25]), "text", None]}, "eps": 0.5}
    skeleton, blob = encode_output(output)
    back = decode_output(skeleton, blob)
    for key in ("a", "b", "flags", "labels"):
        np.testing.assert_array_equal(back[key], output[key])
        assert back[key].dtype == output[key].dtype and back[key].shape == output[key].shape
    assert back["n"] == 3 and back["nested"]["c"][1:] == ["text", None]
    np.testing.assert_array_equal(back["nested"]["c"][0], [0.25])
    # A row written by an earlier version: arrays inlined in the JSON, no blob.
    import json

    old = decode_output(json.dumps(_to_jsonable({"a": np.array([1.0, 2.0])})), None)
    np.testing.assert_array_equal(old["a"], [1.0, 2.0])
