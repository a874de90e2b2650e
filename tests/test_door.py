"""The door against an adversarial analyst: each test is an attack through the public API.

Every attack here worked against an earlier version of the session; each must now fail to
learn anything about the data beyond what the ledger paid for, or to overspend.
"""

from __future__ import annotations

import os
import warnings

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine.budget import BudgetExceededError
from dpwidgets.engine.errors import (
    DPWidgetsError,
    ParameterError,
    PrivacyPolicyError,
    ReleaseRefused,
)

SECRET = np.array([977.0, 13.0, 4.0, 250.0, 61.0] * 20)  # distinctive values: 977 must not leak
STAND_IN = np.zeros(100)
SVT = dict(epsilon=0.2, c=2, threshold=100.0)


def analyst(path, name="visits", data=SECRET, total=1.0, **kw) -> Session:
    s = Session(mode="analyst", ledger=path)
    s.add_dataset(name, data, total_epsilon=total, stand_in=STAND_IN, **kw)
    return s


# -- 1. A refused release never runs on the data ------------------------------------------------
def test_a_refused_release_never_reads_the_data_nor_draws(tmp_path, monkeypatch):
    from dpwidgets.engine import svt

    calls = []
    real = svt.sparse_vector
    monkeypatch.setattr(svt, "sparse_vector", lambda *a, **k: calls.append(1) or real(*a, **k))
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=0)
    s.add_dataset("visits", SECRET, total_epsilon=1.0, stand_in=STAND_IN)
    state = s.rng.bit_generator.state
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning would fail the test
        for bad in (dict(SVT, epsilon=1e12), dict(SVT, epsilon=1.5), dict(SVT, c=0),
                    dict(SVT, variant="stoddard"), dict(SVT, sensitivity=1e-12)):
            with pytest.raises(ReleaseRefused) as info:
                s.release("visits", "svt", **bad)
            assert "977" not in str(info.value)
    assert calls == [] and s.spent("visits") == 0.0
    assert s.rng.bit_generator.state == state


def test_every_refusal_is_one_catchable_class(tmp_path):
    s = analyst(tmp_path / "l.sqlite", total=0.3)
    s.release("visits", "svt", **SVT)
    for request in (dict(SVT, c=3), dict(SVT, epsilon=float("nan")), dict(SVT, bogus=1)):
        with pytest.raises(DPWidgetsError):
            s.release("visits", "svt", **request)
    with pytest.raises(BudgetExceededError):
        s.release("visits", "svt", **dict(SVT, c=3))
    with pytest.raises(ParameterError, match="epsilon"):
        s.release("visits", "svt", **dict(SVT, epsilon=-1.0))
    assert s.spent("visits") == pytest.approx(0.2)


# -- 3. Seeds never drive analyst noise ----------------------------------------------------------
def test_a_seeded_analyst_session_does_not_make_the_noise_public(tmp_path):
    # epsilon3 > 0 publishes the noisy answers of the positives: with seeded noise an analyst
    # would subtract it and recover the answers exactly.
    params = dict(SVT, epsilon3=0.1)
    outs = []
    for k in range(2):
        s = Session(mode="analyst", ledger=tmp_path / f"l{k}.sqlite", seed=5)
        s.add_dataset("visits", SECRET, total_epsilon=1.0, stand_in=STAND_IN)
        outs.append(s.release("visits", "svt", **params).output["above_values"])
        # Previews on the public stand-in may be seeded (reproducible teaching material).
    assert not np.array_equal(outs[0], outs[1])
    a = Session(mode="analyst", ledger=tmp_path / "p.sqlite", seed=5)
    b = Session(mode="analyst", ledger=tmp_path / "q.sqlite", seed=5)
    for s in (a, b):
        s.add_dataset("visits", SECRET, total_epsilon=1.0, stand_in=np.arange(100.0) * 3)
    pa, pb = (s.preview("visits", "svt", **params).output for s in (a, b))
    np.testing.assert_array_equal(pa["above_values"], pb["above_values"])


# -- 4. Teaching sessions never touch a file ledger ----------------------------------------------
def test_teaching_mode_cannot_write_an_analyst_ledger(tmp_path):
    path = tmp_path / "l.sqlite"
    analyst(path).close()
    with pytest.raises(ValueError, match="teaching"):
        Session(mode="teaching", ledger=path)
    s = Session(mode="teaching")
    with pytest.raises(AttributeError):
        s.mode = "analyst"


# -- 5. Another name for the same data is the same budget ----------------------------------------
def test_aliases_share_one_budget(tmp_path):
    path = tmp_path / "l.sqlite"
    s = analyst(path)
    s.release("visits", "svt", **dict(SVT, epsilon=0.9))
    shuffled = np.random.default_rng(1).permutation(SECRET)
    for alias, data in (("visits ", SECRET), ("Visits", SECRET), ("visits_2", SECRET),
                        ("shuffled", shuffled)):
        other = Session(mode="analyst", ledger=path)
        other.add_dataset(alias, data, total_epsilon=1.0, stand_in=STAND_IN)
        assert other.spent(alias) == pytest.approx(0.9), alias
        with pytest.raises(BudgetExceededError):
            other.release(alias, "svt", **dict(SVT, epsilon=0.2))
        other.close()


# -- 6. Analyst ledgers are files, resolved once ------------------------------------------------
def test_in_memory_analyst_ledgers_are_refused(tmp_path, monkeypatch):
    for ledger in (":memory:", "file::memory:?cache=shared", "file:x.sqlite", ""):
        with pytest.raises(ValueError, match="ledger"):
            Session(mode="analyst", ledger=ledger)
    monkeypatch.setenv("DPWIDGETS_LEDGER", ":memory:")
    with pytest.raises(ValueError, match="ledger"):
        Session(mode="analyst")
    monkeypatch.setenv("HOME", str(tmp_path))
    s = Session(mode="analyst", ledger="~/sub/../l.sqlite")
    assert s.ledger_path == str((tmp_path / "l.sqlite").resolve())
    monkeypatch.chdir(tmp_path)
    assert Session(mode="analyst", ledger="l.sqlite").ledger_path == s.ledger_path


# -- 7. Facts about the data are the owner's ---------------------------------------------------
def test_an_analyst_cannot_lower_a_declared_fact(tmp_path):
    s = analyst(tmp_path / "l.sqlite", facts={"sensitivity": 2.0})
    for claim in (dict(sensitivity=1e-12), dict(sensitivity=1.0), dict(monotonic=True),
                  dict(threshold_sensitivity=0.0, sensitivity=0.5)):
        with pytest.raises(PrivacyPolicyError, match="fact about the data"):
            s.release("visits", "svt", **dict(SVT, **claim))
    assert s.spent("visits") == 0.0
    # Omitted: the declared value is used; more conservative: allowed.
    assert s.release("visits", "svt", **SVT).params["sensitivity"] == 2.0
    assert s.release("visits", "svt", **dict(SVT, sensitivity=3.0)).params["sensitivity"] == 3.0
    # Teaching mode: the data is public, the knobs are free to turn.
    t = Session(mode="teaching")
    t.add_dataset("visits", SECRET, total_epsilon=1.0)
    assert t.release("visits", "svt", **dict(SVT, sensitivity=0.5)).params["sensitivity"] == 0.5


def test_a_false_declaration_is_caught_when_the_owner_makes_it():

    s = Session(mode="teaching")
    series = np.full((12, 4), 5.0)  # 20 records per snapshot
    with pytest.raises(ValueError, match="cardinality") as info:
        s.add_dataset("series", series, stand_in=np.ones((12, 4)), facts={"cardinality": 500})
    assert "20" not in str(info.value)
    with pytest.raises(ValueError, match="unknown fact"):
        s.add_dataset("series", series, stand_in=np.ones((12, 4)), facts={"colour": 1})


def test_an_analyst_claims_no_snapshot_size_the_owner_did_not_declare(tmp_path):
    series = np.full((12, 4), 50.0)
    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    s.add_dataset("series", series, total_epsilon=5.0, stand_in=np.full((12, 4), 50.0))
    with pytest.raises(PrivacyPolicyError, match="cardinality"):
        s.release("series", "dsat", epsilon=1.0, cardinality=200)
    s2 = Session(mode="analyst", ledger=tmp_path / "m.sqlite")
    s2.add_dataset("series", series, total_epsilon=5.0, stand_in=np.full((12, 4), 50.0),
                   facts={"cardinality": 200})
    with pytest.raises(PrivacyPolicyError, match="cardinality"):
        s2.release("series", "dsat", epsilon=1.0, cardinality=1000)
    r = s2.release("series", "dsat", epsilon=1.0)
    assert r.charged and r.params["cardinality"] == 200


def test_custom_mechanisms_need_the_owners_leave(tmp_path):
    from dpwidgets.session import MECHANISMS, Mechanism, register_mechanism

    register_mechanism(Mechanism(
        "toy_identity", validate=lambda params, n: {"epsilon": float(params["epsilon"])},
        cost=lambda p: p["epsilon"], run=lambda data, p, rng: data,
        outputs=lambda r, p: {"values": r}, private=lambda p: True, label=lambda p: "identity",
    ))
    try:
        s = analyst(tmp_path / "l.sqlite")
        with pytest.raises(PrivacyPolicyError, match="allow"):
            s.release("visits", "toy_identity", epsilon=0.1)
        assert s.spent("visits") == 0.0
    finally:
        MECHANISMS.pop("toy_identity", None)


# -- 9. Guarantees say what they protect --------------------------------------------------------
def test_guarantees_are_per_row_unless_the_owner_declared_one_row_per_person(tmp_path):
    s = analyst(tmp_path / "l.sqlite")
    r = s.release("visits", "svt", **SVT)
    assert "per row" in r.guarantee and "person" not in r.guarantee
    assert "discrete Laplace" in r.guarantee  # the sampler an analyst release used
    assert "continuous" in s.preview("visits", "svt", **SVT).guarantee
    assert s.unit("visits") == "row"
    p = analyst(tmp_path / "m.sqlite", name="people", data=SECRET + 1, privacy_unit="person")
    assert "per person" in p.release("people", "svt", **SVT).guarantee
    with pytest.raises(ValueError, match="unit"):
        analyst(tmp_path / "n.sqlite", privacy_unit="household")


def test_the_door_imports_no_ui():
    import subprocess
    import sys

    code = ("import sys, dpwidgets.session; "
            "print(any(m.startswith(('dpwidgets.widgets', 'ipywidgets', 'bokeh')) "
            "for m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "PYTHONWARNINGS": "ignore"})
    assert out.stdout.strip() == "False"


def test_release_keys_are_no_fingerprint_of_the_data(tmp_path):
    # A key computable from the data would let an analyst test guesses of the data against it
    # (a neighbouring dataset gives another key). Keys are keyed hashes of a per-ledger secret:
    # the same request on the same data gets another key under another ledger, the same key in
    # every process of one ledger (so replays stay free).
    a = analyst(tmp_path / "a.sqlite")
    b = analyst(tmp_path / "b.sqlite")
    assert a.release_key("visits", "svt", **SVT) != b.release_key("visits", "svt", **SVT)
    again = Session(mode="analyst", ledger=tmp_path / "a.sqlite")
    again.add_dataset("visits", SECRET, total_epsilon=1.0, stand_in=STAND_IN)
    assert again.release_key("visits", "svt", **SVT) == a.release_key("visits", "svt", **SVT)


def test_a_spec_swapped_into_the_registry_is_not_built_in(tmp_path):
    import dataclasses

    from dpwidgets.mechanism import MECHANISMS

    original = MECHANISMS["svt"]
    MECHANISMS["svt"] = dataclasses.replace(original, run=lambda data, p, rng: data)
    try:
        s = analyst(tmp_path / "l.sqlite")
        with pytest.raises(PrivacyPolicyError, match="allow"):
            s.release("visits", "svt", **SVT)
        assert s.spent("visits") == 0.0
    finally:
        MECHANISMS["svt"] = original


def test_a_non_private_publisher_is_refused_in_every_family(tmp_path):
    # The published DAWA calibration is not DP (Li, Hay, Miklau & Wang 2014 as published): any
    # release naming it is refused in analyst mode before the charge, whatever the family.
    import pandas as pd

    s = Session(mode="analyst", ledger=tmp_path / "l.sqlite")
    series = np.full((12, 8), 50.0)
    s.add_dataset("series", series, total_epsilon=5.0, stand_in=series,
                  facts={"cardinality": 400})
    frame = pd.DataFrame({"a": np.arange(200) % 10, "b": np.arange(200) % 4})
    s.add_dataset("table", frame, total_epsilon=5.0, stand_in=frame)
    for dataset, mechanism, extra in (
            ("series", "dynamic_uniform", {}), ("series", "dsat", {}),
            ("table", "independent_synth", {"domains": {"a": (0, 9), "b": (0, 3)}})):
        with pytest.raises(PrivacyPolicyError, match="not differentially private"):
            s.release(dataset, mechanism, epsilon=1.0, publisher="dawa_published_not_private",
                      **extra)
    assert s.spent("series") == 0.0 and s.spent("table") == 0.0


def test_a_diagnostics_guarantee_names_the_relation_it_is_calibrated_for():
    # The diagnostics run the text's replace-one calibration unless asked for add/remove; the
    # guarantee must say which (an add/remove claim would be false for replace-one noise).
    from dpwidgets.catalog import table_stand_in

    s = Session("teaching", seed=0)
    s.add_dataset("t", table_stand_in(300), stand_in="continuous")
    text = s.release("t", "residual_plot", epsilon=1.0).guarantee
    assert "replace-one" in text and "added or removed" not in text
    text = s.release("t", "residual_plot", epsilon=1.0, neighbours="add/remove").guarantee
    assert "add/remove one record" in text
