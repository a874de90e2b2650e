"""Claims on idempotency keys (PrivacyLedger.claim) on both databases, and the mode of the
ledger's files.

Every test taking ``ledger_url`` runs on a SQLite file and on a fresh PostgreSQL database (the
fixtures of tests/engine/test_budget.py).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import sqlite3
import stat
import time

import numpy as np
import pytest

from dpwidgets.engine.budget import BudgetExceededError, PrivacyLedger
from dpwidgets.store import ReleaseStore

from . import test_budget

ledger_url = test_budget.ledger_url
postgres_url = test_budget.postgres_url
postgres_server = test_budget.postgres_server


def _pair(url):
    data = PrivacyLedger(url, dataset="visits", total_epsilon=1.0)
    mine = PrivacyLedger(url, dataset="visits@alice", total_epsilon=0.5)
    return data, mine


def test_the_first_attempt_charges_and_holds_the_others_wait(ledger_url):
    data, mine = _pair(ledger_url)
    first = mine.claim(0.2, "r", key="k", owner="a", lease=60, jointly=[data])
    assert first.held_by("a") and first.fresh and not first.resumed and first.live
    assert first.expires == pytest.approx(first.now + 60)
    second = mine.claim(0.2, "r", key="k", owner="b", lease=60, jointly=[data])
    # b is told a holds it, and is charged nothing
    assert not second.held_by("b") and second.owner == "a" and second.state == "running"
    assert second.live and not second.fresh
    assert (data.count, mine.count) == (1, 1)
    assert mine.spent == pytest.approx(0.2) and data.spent == pytest.approx(0.2)
    # The holder itself asking again keeps it (and renews the lease).
    assert mine.claim(0.2, "r", key="k", owner="a", lease=60, jointly=[data]).held_by("a")
    assert mine.claim_state("k").owner == "a"
    assert mine.claim_state("other key") is None


def test_a_finished_claim_is_never_run_again(ledger_url):
    data, mine = _pair(ledger_url)
    mine.claim(0.2, "r", key="k", owner="a", lease=0.05, jointly=[data])
    assert mine.finish("k", "a")
    time.sleep(0.1)  # long past the lease: a finished claim does not expire
    later = mine.claim(0.2, "r", key="k", owner="c", lease=60, jointly=[data])
    assert later.state == "done" and not later.held_by("c") and not later.fresh
    assert not mine.finish("k", "a")  # already done
    assert mine.count == 1


def test_a_failed_claim_is_repeated_not_rerun(ledger_url):
    data, mine = _pair(ledger_url)
    mine.claim(0.2, "r", key="k", owner="a", lease=0.05, jointly=[data])
    assert not mine.finish("k", "b", failed=True)  # only the holder says its run failed
    assert mine.finish("k", "a", failed=True)
    time.sleep(0.1)
    later = mine.claim(0.2, "r", key="k", owner="c", lease=60, jointly=[data])
    assert later.state == "failed" and not later.held_by("c")
    assert mine.count == 1


def test_an_expired_lease_is_taken_over_under_the_same_charge(ledger_url):
    data, mine = _pair(ledger_url)
    mine.claim(0.2, "r", key="k", owner="dead", lease=0.2, jointly=[data])
    early = mine.claim(0.2, "r", key="k", owner="b", lease=60, jointly=[data])
    assert not early.held_by("b") and early.live
    time.sleep(0.3)
    assert not mine.claim_state("k").live
    late = mine.claim(0.2, "r", key="k", owner="b", lease=60, jointly=[data])
    assert late.held_by("b") and late.resumed and not late.fresh
    assert (data.count, mine.count) == (1, 1)
    # The dead holder, if it was only slow: it no longer holds the claim.
    assert not mine.renew("k", "dead", 60)
    assert not mine.finish("k", "dead", failed=True)
    assert mine.renew("k", "b", 120)
    assert mine.claim_state("k").expires > late.expires
    # Storing an output ends the claim, whoever stored it first.
    assert mine.finish("k", "dead")
    assert mine.claim_state("k").state == "done"


def test_a_key_charged_before_claims_existed_is_resumed(ledger_url):
    data, mine = _pair(ledger_url)
    assert mine.spend(0.2, "r", key="old", jointly=[data])
    claim = mine.claim(0.2, "r", key="old", owner="b", lease=60, jointly=[data])
    assert claim.held_by("b") and claim.resumed and not claim.fresh
    assert mine.count == 1


def test_a_claim_is_refused_like_a_spend(ledger_url):
    data, mine = _pair(ledger_url)
    with pytest.raises(BudgetExceededError):
        mine.claim(0.6, "r", key="big", owner="a", lease=60, jointly=[data])
    assert mine.claim_state("big") is None and mine.count == 0
    with pytest.raises(ValueError, match="lease"):
        mine.claim(0.1, "r", key="k", owner="a", lease=0, jointly=[data])
    with pytest.raises(ValueError, match="owner"):
        mine.claim(0.1, "r", key="k", owner="", lease=1, jointly=[data])
    with pytest.raises(ValueError, match="key"):
        mine.claim(0.1, "r", key="", owner="a", lease=1, jointly=[data])
    assert mine.count == 0
    mine.claim(0.1, "r", key="k", owner="a", lease=1, jointly=[data])
    with pytest.raises(ValueError, match="already recorded for another spend"):
        mine.claim(0.2, "r", key="k", owner="b", lease=1, jointly=[data])


def _claimer(url: str, owner: str, barrier, queue) -> None:
    data = PrivacyLedger(url, dataset="visits")
    mine = PrivacyLedger(url, dataset="visits@alice")
    barrier.wait(timeout=120)
    claim = mine.claim(0.2, "r", key="race", owner=owner, lease=60, jointly=[data])
    queue.put((owner, claim.held_by(owner), claim.fresh))


def test_racing_processes_one_holder_one_charge(ledger_url):
    _pair(ledger_url)
    ctx = mp.get_context("spawn")
    n = 6
    barrier, queue = ctx.Barrier(n), ctx.Queue()
    procs = [ctx.Process(target=_claimer, args=(ledger_url, f"p{i}", barrier, queue))
             for i in range(n)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=300) for _ in procs]
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    assert sum(held for _, held, _ in results) == 1
    assert sum(fresh for *_, fresh in results) == 1
    data, mine = _pair(ledger_url)
    assert (data.count, mine.count) == (1, 1)


def test_a_version_2_file_gains_the_claims_table(tmp_path):
    path = str(tmp_path / "ledger.sqlite")
    data = PrivacyLedger(path, dataset="d", total_epsilon=1.0)
    data.spend(0.1, "before", key="k0")
    data.close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE claims")
        conn.execute("PRAGMA user_version = 2")
    data = PrivacyLedger(path, dataset="d")
    assert data.spent == pytest.approx(0.1)
    assert data.claim(0.1, "after", key="k1", owner="a", lease=5).held_by("a")
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 3


# -- file modes ---------------------------------------------------------------------------------

def _mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_ledger_and_its_journal_are_the_owners_only(tmp_path):
    old = os.umask(0o022)  # a usual umask: a plain sqlite3.connect would make 0644 files
    try:
        path = tmp_path / "ledger.sqlite"
        ledger = PrivacyLedger(str(path), dataset="d", total_epsilon=1.0)
        ledger.spend(0.1, "r")
        assert _mode(path) == 0o600
        # journal_mode=TRUNCATE leaves the journal file in place, emptied: SQLite gives it
        # the database file's mode.
        journal = tmp_path / "ledger.sqlite-journal"
        assert journal.exists() and _mode(journal) == 0o600
        store = ReleaseStore(str(path))
        store.put("d", "k", {"mechanism": "m", "label": "l", "params": {}, "epsilon": 0.1,
                             "output": {"x": np.arange(3.0)}, "time": 0.0})
        ledger.spend(0.1, "r")  # the ledger's journal again, after the store's (deleted) one
        assert _mode(path) == 0o600 and _mode(journal) == 0o600
        store.close()
        # The release store may be opened first (the curator does): it creates the file 0600.
        fresh = tmp_path / "store-first.sqlite"
        ReleaseStore(str(fresh)).close()
        assert _mode(fresh) == 0o600
        # An existing file keeps the mode its owner gave it.
        shared = tmp_path / "shared.sqlite"
        shared.touch()
        shared.chmod(0o640)
        PrivacyLedger(str(shared), dataset="d", total_epsilon=1.0).close()
        assert _mode(shared) == 0o640
    finally:
        os.umask(old)


def test_the_first_output_stored_is_the_release(ledger_url):
    PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0).close()
    one, two = ReleaseStore(ledger_url), ReleaseStore(ledger_url)
    row = {"mechanism": "m", "label": "l", "params": {}, "epsilon": 0.1, "time": 1.0}
    first = one.put("d", "k", {**row, "output": {"x": np.array([1.0])}})
    second = two.put("d", "k", {**row, "output": {"x": np.array([2.0])}})
    np.testing.assert_array_equal(first["output"]["x"], [1.0])
    np.testing.assert_array_equal(second["output"]["x"], [1.0])  # the stored one, not its own
    np.testing.assert_array_equal(two.get("d", "k")["output"]["x"], [1.0])
    one.close()
    two.close()
