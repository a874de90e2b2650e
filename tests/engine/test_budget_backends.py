"""The ledger on both databases: racing processes, joint spends, killed processes.

Every test taking ``ledger_url`` runs on a SQLite file and on a fresh PostgreSQL database (see
the fixtures in tests/engine/test_budget.py); the ``postgres_url`` ones on PostgreSQL only.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import traceback
from fractions import Fraction

import pytest

from dpwidgets.engine.budget import BudgetExceededError, PrivacyLedger

from . import test_budget

# The fixtures: a SQLite file or a fresh PostgreSQL database, and the server behind the latter.
ledger_url = test_budget.ledger_url
postgres_url = test_budget.postgres_url
postgres_server = test_budget.postgres_server

# -- racing processes -----------------------------------------------------------------------

_WORKERS = 8
_ATTEMPTS = 20
_STEP = 0.01


def _race(url: str, worker: int, analyst: str | None, barrier, queue) -> None:
    """Spend ``_STEP`` ``_ATTEMPTS`` times (jointly with ``analyst``'s ledger if given)."""
    data = PrivacyLedger(url, dataset="shared")
    jointly = [PrivacyLedger(url, dataset=analyst)] if analyst else []
    granted = refused = 0
    barrier.wait(timeout=120)  # every process is connected: now they race
    try:
        for i in range(_ATTEMPTS):
            try:
                data.spend(_STEP, label=f"w{worker}", key=f"w{worker}-{i}", jointly=jointly)
                granted += 1
            except BudgetExceededError:
                refused += 1
    except Exception as exc:  # reported, not lost in a dead process
        queue.put((worker, granted, refused, repr(exc)))
    else:
        queue.put((worker, granted, refused, None))


def _run_race(url: str, analysts: list[str | None]) -> dict[int, tuple[int, int]]:
    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(len(analysts))
    queue = ctx.Queue()
    workers = [
        ctx.Process(target=_race, args=(url, i, analyst, barrier, queue))
        for i, analyst in enumerate(analysts)
    ]
    for w in workers:
        w.start()
    results = [queue.get(timeout=300) for _ in workers]
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert [error for *_, error in results if error] == []
    return {worker: (granted, refused) for worker, granted, refused, _ in results}


def test_racing_processes_never_overspend(ledger_url):
    """8 processes x 20 spends of 0.01 against a cap of 1.0, all released at once.

    Exactly 100 fit (ten 0.01 make 0.1 exactly in the ledger's exact sums); a read-then-write
    race would grant more, a lost update would record fewer than it granted.
    """
    PrivacyLedger(ledger_url, dataset="shared", total_epsilon=1.0).close()
    results = _run_race(ledger_url, [None] * _WORKERS)
    granted = sum(g for g, _ in results.values())
    assert granted == 100
    assert sum(r for _, r in results.values()) == _WORKERS * _ATTEMPTS - 100
    with PrivacyLedger(ledger_url, dataset="shared") as ledger:
        assert ledger.count == len(ledger.spends) == 100
        assert ledger.spent == 1.0 and ledger.remaining == 0.0
        for worker, (g, _) in results.items():
            assert sum(s.label == f"w{worker}" for s in ledger.spends) == g


def test_racing_joint_spends_keep_every_cap(ledger_url):
    """8 processes, two per analyst, spend 0.01 jointly on the dataset (cap 1.0) and their
    analyst's ledger (cap 0.3).

    The analysts could take 1.2 together, so the dataset's cap binds: exactly 100 spends, no
    analyst past 30, and every spend on the dataset has its twin on one analyst's ledger.
    """
    PrivacyLedger(ledger_url, dataset="shared", total_epsilon=1.0).close()
    analysts = [f"shared/analyst{i}" for i in range(4)]
    for name in analysts:
        PrivacyLedger(ledger_url, dataset=name, total_epsilon=0.3).close()
    results = _run_race(ledger_url, [analysts[i % 4] for i in range(_WORKERS)])
    assert sum(g for g, _ in results.values()) == 100
    with PrivacyLedger(ledger_url, dataset="shared") as data:
        assert data.count == 100 and data.spent == 1.0
        keys = {s.key for s in data.spends}
    analyst_keys = set()
    for name in analysts:
        with PrivacyLedger(ledger_url, dataset=name) as ledger:
            assert ledger.count <= 30 and ledger.spent <= 0.3
            analyst_keys |= {s.key for s in ledger.spends}
            assert ledger.count == sum(
                results[i][0] for i in range(_WORKERS) if analysts[i % 4] == name
            )
    assert analyst_keys == keys and len(keys) == 100


# -- joint spends ---------------------------------------------------------------------------


def test_a_joint_spend_charges_every_ledger_or_none(ledger_url):
    data = PrivacyLedger(ledger_url, dataset="visits", total_epsilon=1.0)
    alice = PrivacyLedger(ledger_url, dataset="visits/alice", total_epsilon=0.3)
    bob = PrivacyLedger(ledger_url, dataset="visits/bob", total_epsilon=1.0)
    assert data.spend(0.2, "histogram", jointly=[alice])
    assert data.spent == alice.spent == 0.2 and bob.spent == 0
    # alice's cap would be exceeded: nothing is charged, on either ledger
    with pytest.raises(BudgetExceededError) as info:
        data.spend(0.2, "roc", jointly=[alice])
    err = info.value
    assert err.dataset == "visits/alice" and err.total == 0.3 and err.label == "roc"
    assert err.remaining == pytest.approx(0.1) and err.requested == 0.2
    assert "'visits/alice'" in str(err) and "0.1 of 0.3" in str(err)
    assert [s.label for s in data.spends] == [s.label for s in alice.spends] == ["histogram"]
    assert data.spent == alice.spent == 0.2
    # parallel composition holds on each ledger: a second disjoint part costs nothing more
    assert data.spend(0.3, "<30", partition="age", parts=["<30"], jointly=[bob])
    assert data.spend(0.3, "30+", partition="age", parts=["30+"], jointly=[bob])
    assert data.spent == pytest.approx(0.5) and bob.spent == pytest.approx(0.3)
    # the dataset's cap binds, whichever ledger the call is made on
    assert bob.spend(0.45, "bob's", jointly=[data])
    with pytest.raises(BudgetExceededError) as info:
        alice.spend(0.1, "last", jointly=(data,))
    assert info.value.dataset == "visits" and info.value.remaining == pytest.approx(0.05)
    assert alice.spent == 0.2 and data.spent == pytest.approx(0.95)
    assert alice.spend(0.05, "last", jointly=(data,))  # exactly what is left there
    assert data.spent == pytest.approx(1.0) and data.remaining == pytest.approx(0.0)
    assert (data.count, alice.count, bob.count) == (5, 2, 3)
    for ledger in (data, alice, bob):
        ledger.close()


def test_a_joint_spend_retried_with_its_key_charges_nothing_twice(ledger_url):
    data = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    alice = PrivacyLedger(ledger_url, dataset="d/alice", total_epsilon=0.5)
    assert data.spend(0.2, "r1", key="r1", jointly=[alice]) is True
    assert data.spend(0.2, "r1 again", key="r1", jointly=[alice]) is False
    assert alice.spend(0.2, "r1", key="r1", jointly=[data]) is False
    assert data.spent == alice.spent == 0.2 and data.count == alice.count == 1
    # a key names one release, on every ledger
    with pytest.raises(ValueError, match="key"):
        data.spend(0.3, "r1", key="r1", jointly=[alice])
    # a key recorded on one ledger only (a single spend before the analyst's cap existed):
    # the joint retry charges the other one, once
    assert data.spend(0.1, "r2", key="r2")
    assert data.spend(0.1, "r2", key="r2", jointly=[alice]) is True
    assert data.spend(0.1, "r2", key="r2", jointly=[alice]) is False
    assert data.spent == pytest.approx(0.3) and alice.spent == pytest.approx(0.3)
    assert data.has_key("r2") and alice.has_key("r2")
    # a refused joint spend records its key nowhere, so it can be retried once there is room
    with pytest.raises(BudgetExceededError):
        data.spend(0.3, "r3", key="r3", jointly=[alice])
    assert not data.has_key("r3") and not alice.has_key("r3")
    assert data.spend(0.2, "r3", key="r3", jointly=[alice])
    data.close()
    alice.close()


def test_a_joint_spend_needs_one_database_and_distinct_budgets(ledger_url, tmp_path):
    data = PrivacyLedger(ledger_url, dataset="visits", total_epsilon=1.0, fingerprint="fp")
    elsewhere = PrivacyLedger(tmp_path / "other.sqlite", dataset="alice", total_epsilon=1.0)
    memory = PrivacyLedger(":memory:", dataset="alice", total_epsilon=1.0)
    other_memory = PrivacyLedger(":memory:", dataset="bob", total_epsilon=1.0)
    for other in (elsewhere, memory):
        with pytest.raises(ValueError, match="one database"):
            data.spend(0.1, jointly=[other])
        with pytest.raises(ValueError, match="one database"):
            other.spend(0.1, jointly=[data])
    with pytest.raises(ValueError, match="one database"):
        memory.spend(0.1, jointly=[other_memory])  # two in-memory ledgers: two databases
    twin = PrivacyLedger(ledger_url, dataset="Visits")  # an alias: the same budget
    same_content = PrivacyLedger(ledger_url, dataset="visits copy", fingerprint="fp")
    for other in (data, twin, same_content):
        with pytest.raises(ValueError, match="twice"):
            data.spend(0.1, jointly=[other])
    with pytest.raises(ValueError, match="PrivacyLedger"):
        data.spend(0.1, jointly=["alice"])
    assert data.count == elsewhere.count == memory.count == other_memory.count == 0
    # a lone ledger may be given without a list
    alice = PrivacyLedger(ledger_url, dataset="alice", total_epsilon=1.0)
    assert data.spend(0.1, jointly=alice) and alice.spent == 0.1
    for ledger in (data, elsewhere, memory, other_memory, twin, same_content, alice):
        ledger.close()


# -- kill -9 --------------------------------------------------------------------------------

_HOLDER = textwrap.dedent(
    """
    import sys, time
    from dpwidgets.engine.budget import PrivacyLedger

    data = PrivacyLedger(sys.argv[1], dataset="d")
    alice = PrivacyLedger(sys.argv[1], dataset="d/alice")
    for i in range(5):
        data.spend(0.1, f"c{i}", key=f"c{i}", jointly=[alice])

    def hang():  # every write of the next spend is done; its COMMIT never comes
        print("holding", flush=True)
        time.sleep(600)

    data._db.commit = hang
    data.spend(0.5, "torn", key="torn", jointly=[alice])
    """
)


def test_kill_9_while_holding_a_transaction_loses_nothing_committed(ledger_url):
    """A process SIGKILLed inside a joint spend's transaction, after its writes and before its
    COMMIT: its five committed spends stay, the torn one is nowhere, and its locks are gone."""
    PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0).close()
    PrivacyLedger(ledger_url, dataset="d/alice", total_epsilon=1.0).close()
    waiter = PrivacyLedger(ledger_url, dataset="d", timeout=0.5)
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, ledger_url], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout.readline().strip() == "holding"
        # the transaction really holds the budget: another spend waits, then gives up
        if ledger_url.startswith("postgresql"):
            import psycopg

            gave_up: type[Exception] = psycopg.errors.LockNotAvailable
        else:
            gave_up = sqlite3.OperationalError
        with pytest.raises(gave_up, match="lock"):
            waiter.spend(0.1, "waits")
        os.kill(holder.pid, signal.SIGKILL)
        assert holder.wait(timeout=60) == -signal.SIGKILL
    finally:
        if holder.poll() is None:
            holder.kill()
        holder.stdout.close()
    with PrivacyLedger(ledger_url, dataset="d") as data, PrivacyLedger(
        ledger_url, dataset="d/alice"
    ) as alice:
        for ledger in (data, alice):
            assert [s.label for s in ledger.spends] == [f"c{i}" for i in range(5)]
            assert ledger.spent == pytest.approx(0.5) and not ledger.has_key("torn")
        # the locks died with the process: the retry goes through, once
        assert data.spend(0.5, "torn", key="torn", jointly=[alice])
        assert data.spend(0.5, "torn", key="torn", jointly=[alice]) is False
        assert data.remaining == alice.remaining == 0.0
    with pytest.raises(BudgetExceededError):
        waiter.spend(0.1, "waits")  # its lock is free again, and the budget is spent
    waiter.close()


# -- PostgreSQL only ------------------------------------------------------------------------


def test_postgres_never_shows_the_password(postgres_url):
    from urllib.parse import urlsplit

    parts = urlsplit(postgres_url)
    secret = "s3cret-in-the-url"
    netloc = f"{parts.username or 'nobody'}:{secret}@{parts.hostname}:{parts.port or 5432}"
    wrong = parts._replace(netloc=netloc).geturl()
    try:
        ledger = PrivacyLedger(wrong, dataset="d", total_epsilon=1.0, timeout=5)
    except ConnectionError as err:  # the server checks passwords (as scripts/postgres.sh's does)
        shown = "".join(traceback.format_exception(err))
        assert secret not in shown and "cannot connect" in shown
        assert parts.hostname in str(err)
    else:  # a server trusting every local user
        assert secret not in repr(ledger) and secret not in ledger.path
        ledger.close()
    # the real URL, under both schemes
    for url in (postgres_url, postgres_url.replace("postgresql://", "postgres://", 1)):
        with PrivacyLedger(url, dataset="d", total_epsilon=1.0) as ledger:
            assert ledger.persistent and ledger.path.startswith("postgresql://")
            if parts.password:
                assert parts.password not in repr(ledger) + ledger.path
            assert ledger.path.endswith(parts.path)
            with pytest.raises(ValueError, match="cap") as info:
                PrivacyLedger(url, dataset="d", total_epsilon=2.0)
            if parts.password:
                assert parts.password not in str(info.value)


def test_postgres_tables_keep_to_their_schema_and_guard_themselves(postgres_url):
    import psycopg

    with psycopg.connect(postgres_url, autocommit=True) as conn:
        # a curator's own table named like one of the ledger's is left alone
        conn.execute("CREATE TABLE public.datasets (name TEXT, secret TEXT)")
        conn.execute("INSERT INTO public.datasets VALUES ('mine', 'x')")
    with PrivacyLedger(postgres_url, dataset="d", total_epsilon=1.0) as ledger:
        assert ledger.spend(0.1, key="k")
        assert ledger.spends[0].epsilon == 0.1  # DOUBLE PRECISION: the float written
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        assert conn.execute("SELECT name FROM public.datasets").fetchall() == [("mine",)]
        conn.execute("SET search_path TO dpwidgets_ledger")
        # the unique index on (dataset, key), and the checks, hold against any writer
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(
                "INSERT INTO spends (dataset, epsilon, label, created, key) "
                "VALUES ('d', 0.1, 'again', 0, 'k')"
            )
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(
                "INSERT INTO spends (dataset, epsilon, label, created) VALUES ('d', -1, 'x', 0)"
            )
        totals = conn.execute("SELECT whole, count FROM totals WHERE dataset = 'd'").fetchone()
        assert Fraction(totals[0]) == Fraction(0.1) and totals[1] == 1


def test_postgres_ledger_reconnects_after_losing_an_idle_connection(postgres_url):
    """A server restart or a dropped idle connection: the next transaction reconnects (nothing
    of it had been sent), so a curator replica need not be restarted with the database."""
    import psycopg

    with PrivacyLedger(postgres_url, dataset="d", total_epsilon=1.0) as ledger:
        assert ledger.spend(0.25, key="a")
        pid = ledger._conn.info.backend_pid
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            assert admin.execute("SELECT pg_terminate_backend(%s)", (pid,)).fetchone()[0]
        assert ledger.spend(0.25, key="b") and ledger._conn.info.backend_pid != pid
        assert ledger.spent == 0.5 and ledger.has_key("a") and ledger.count == 2
