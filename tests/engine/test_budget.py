"""Tests for the privacy ledger (dpwidgets/engine/budget.py)."""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
import subprocess
import sys
import textwrap

import pytest

from dpwidgets.engine.budget import BudgetExceededError, PrivacyLedger, default_ledger_path


def test_sequential_composition_and_exact_cap():
    ledger = PrivacyLedger(":memory:", dataset="d", total_epsilon=1.0)
    for _ in range(10):
        assert ledger.spend(0.1, label="step")
    # ten spends of 0.1 use the cap exactly; not one more
    assert ledger.spent == pytest.approx(1.0, abs=1e-12)
    assert ledger.remaining == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(BudgetExceededError):
        ledger.spend(1e-6, label="one more")
    assert len(ledger.spends) == 10


def test_exceeding_spend_records_nothing_and_says_what_is_left():
    ledger = PrivacyLedger(":memory:", dataset="census", total_epsilon=1.0)
    ledger.spend(0.7, label="histogram")
    with pytest.raises(BudgetExceededError) as info:
        ledger.spend(0.5, label="roc curve")
    err = info.value
    assert err.dataset == "census"
    assert err.requested == pytest.approx(0.5)
    assert err.remaining == pytest.approx(0.3)
    message = str(err)
    assert "census" in message and "0.5" in message and "0.3" in message
    assert ledger.spent == pytest.approx(0.7)
    assert [s.label for s in ledger.spends] == ["histogram"]


def test_spends_keep_labels_times_and_order():
    ledger = PrivacyLedger(":memory:", dataset="d", total_epsilon=2.0)
    ledger.spend(0.5, label="a")
    ledger.spend(0.25, label="b")
    spends = ledger.spends
    assert [(s.label, s.epsilon) for s in spends] == [("a", 0.5), ("b", 0.25)]
    assert spends[0].time <= spends[1].time


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "0.1", None, True])
def test_bad_epsilon_is_refused_before_anything_is_recorded(bad):
    ledger = PrivacyLedger(":memory:", dataset="d", total_epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        ledger.spend(bad, label="x")
    assert ledger.spends == []


def test_bad_construction_arguments():
    with pytest.raises(ValueError, match="total_epsilon"):
        PrivacyLedger(":memory:", dataset="d", total_epsilon=0)
    with pytest.raises(ValueError, match="dataset"):
        PrivacyLedger(":memory:", dataset="", total_epsilon=1)
    with pytest.raises(ValueError, match="total_epsilon"):
        PrivacyLedger(":memory:", dataset="new")  # no cap recorded yet


def test_parallel_composition_over_disjoint_parts():
    ledger = PrivacyLedger(":memory:", dataset="d", total_epsilon=1.0)
    # Three releases over disjoint age bands each cost 0.5, but together only 0.5.
    for band in ["<30", "30-60", ">60"]:
        ledger.spend(0.5, label=f"hist {band}", partition="age", parts=[band])
    assert ledger.spent == pytest.approx(0.5)
    # A second release on one band stacks on that band only.
    ledger.spend(0.25, label="again", partition="age", parts=["<30"])
    assert ledger.spent == pytest.approx(0.75)
    # A release over the whole dataset adds to everything.
    ledger.spend(0.25, label="total count")
    assert ledger.spent == pytest.approx(1.0)
    with pytest.raises(BudgetExceededError):
        ledger.spend(0.01, label="too much", partition="age", parts=["<30"])
    # A band that has had less can still... not: the whole-dataset spend already used the rest.
    with pytest.raises(BudgetExceededError):
        ledger.spend(0.3, label="30-60 again", partition="age", parts=["30-60"])


def test_different_partitions_may_overlap_so_they_add_up():
    ledger = PrivacyLedger(":memory:", dataset="d", total_epsilon=1.0)
    ledger.spend(0.4, label="by age", partition="age", parts=["<30", ">=30"])
    ledger.spend(0.4, label="by sex", partition="sex", parts=["f", "m"])
    # a person is in one age part and one sex part: 0.8 spent on them
    assert ledger.spent == pytest.approx(0.8)
    assert ledger.cost_of(0.4, partition="age", parts=["<30"]) == pytest.approx(0.4)
    assert ledger.cost_of(0.4, partition="zip", parts=["1"]) == pytest.approx(0.4)


def test_parts_validation():
    ledger = PrivacyLedger(":memory:", dataset="d", total_epsilon=1.0)
    with pytest.raises(ValueError, match="parts"):
        ledger.spend(0.1, partition="age")
    with pytest.raises(ValueError, match="partition"):
        ledger.spend(0.1, parts=["a"])
    with pytest.raises(ValueError, match="parts"):
        ledger.spend(0.1, partition="age", parts="abc")
    with pytest.raises(ValueError, match="repeat"):
        ledger.spend(0.1, partition="age", parts=["a", "a"])
    assert ledger.spends == []


def test_idempotency_key_charges_once():
    ledger = PrivacyLedger(":memory:", dataset="d", total_epsilon=1.0)
    assert ledger.spend(0.3, label="release", key="abc") is True
    assert ledger.spend(0.3, label="release", key="abc") is False
    assert ledger.spent == pytest.approx(0.3)
    assert ledger.has_key("abc") and not ledger.has_key("other")


def test_persists_across_reopen_and_keeps_its_cap(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with PrivacyLedger(path, dataset="d", total_epsilon=1.0) as ledger:
        ledger.spend(0.4, label="first")
    # "kernel restart": reopen without restating the cap
    with PrivacyLedger(path, dataset="d") as ledger:
        assert ledger.total_epsilon == 1.0
        assert ledger.spent == pytest.approx(0.4)
        assert [s.label for s in ledger.spends] == ["first"]
    with pytest.raises(ValueError, match="cap"):
        PrivacyLedger(path, dataset="d", total_epsilon=5.0)
    # datasets in one file are independent
    with PrivacyLedger(path, dataset="other", total_epsilon=2.0) as other:
        assert other.spent == 0.0


def test_default_location(monkeypatch, tmp_path):
    monkeypatch.setenv("DPWIDGETS_LEDGER", str(tmp_path / "x.sqlite"))
    assert default_ledger_path() == tmp_path / "x.sqlite"
    monkeypatch.delenv("DPWIDGETS_LEDGER")
    path = default_ledger_path()
    assert path.name == "ledger.sqlite" and "dpwidgets" in str(path)


def _spend_until_refused(path: str, worker: int, step: float, queue) -> None:
    ledger = PrivacyLedger(path, dataset="shared", total_epsilon=1.0)
    granted = 0
    while True:
        try:
            ledger.spend(step, label=f"worker {worker}")
        except BudgetExceededError:
            break
        granted += 1
    queue.put(granted)


def test_eight_processes_never_exceed_the_cap_together(tmp_path):
    """Eight processes race to spend 0.01 at a time against one cap of 1.0.

    Exactly 100 spends can fit; a read-then-write race would let more through.
    """
    path = str(tmp_path / "ledger.sqlite")
    PrivacyLedger(path, dataset="shared", total_epsilon=1.0).close()
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    workers = [ctx.Process(target=_spend_until_refused, args=(path, i, 0.01, queue)) for i in range(8)]
    for w in workers:
        w.start()
    granted = [queue.get(timeout=120) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert sum(granted) == 100
    # reopened after they exit, the ledger holds exactly what was granted
    with PrivacyLedger(path, dataset="shared") as ledger:
        assert len(ledger.spends) == 100
        assert ledger.spent == pytest.approx(1.0)
        assert {s.label for s in ledger.spends} <= {f"worker {i}" for i in range(8)}


def test_a_crash_mid_spend_loses_nothing_and_charges_nothing(tmp_path):
    """A process killed while holding the write transaction leaves the ledger as it was."""
    path = tmp_path / "ledger.sqlite"
    with PrivacyLedger(path, dataset="d", total_epsilon=1.0) as ledger:
        ledger.spend(0.2, label="before")
    script = textwrap.dedent(
        f"""
        import os, sqlite3
        conn = sqlite3.connect({str(path)!r}, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO spends (dataset, epsilon, label, created) VALUES ('d', 0.5, 'torn', 0)")
        os._exit(9)  # die with the transaction open
        """
    )
    result = subprocess.run([sys.executable, "-c", script], timeout=60)
    assert result.returncode == 9
    with PrivacyLedger(path, dataset="d") as ledger:
        assert [s.label for s in ledger.spends] == ["before"]
        assert ledger.spent == pytest.approx(0.2)
        ledger.spend(0.8, label="after")  # the write lock was released by the crash
        assert ledger.remaining == pytest.approx(0.0)


def test_schema_refuses_non_positive_spends_at_the_database_level(tmp_path):
    path = tmp_path / "ledger.sqlite"
    PrivacyLedger(path, dataset="d", total_epsilon=1.0).close()
    conn = sqlite3.connect(path)
    with pytest.raises(sqlite3.IntegrityError):
        conn.execute("INSERT INTO spends (dataset, epsilon, label, created) VALUES ('d', -1, 'x', 0)")
    conn.close()
    assert os.path.exists(path)
