"""Tests for the privacy ledger (dpwidgets/engine/budget.py).

Tests taking the ``ledger_url`` fixture run twice: on a SQLite file and on a fresh PostgreSQL
database. The PostgreSQL server is ``$DPW_POSTGRES_URL`` (``make test`` starts one with
``scripts/postgres.sh``), else one ``scripts/postgres.sh`` starts for the session; those runs
are skipped only when neither is possible. Tests of SQLite's own rules (file paths, journal
mode, migration of old files) take a path. tests/engine/test_budget_backends.py holds the
races, joint spends and killed processes.
"""

from __future__ import annotations

import math
import multiprocessing as mp
import os
import sqlite3
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from dpwidgets.engine.budget import BudgetExceededError, PrivacyLedger, default_ledger_path

_POSTGRES_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "postgres.sh"


@pytest.fixture(scope="session")
def postgres_server():
    """The URL of a PostgreSQL server whose user may create databases.

    ``$DPW_POSTGRES_URL`` if set (an unreachable one fails the tests); else the server
    ``scripts/postgres.sh`` runs, started for this session (and stopped after it) if needed,
    without installing anything; skipped if that fails too.
    """
    url = os.environ.get("DPW_POSTGRES_URL")
    if url:
        yield url
        return
    running = subprocess.run(
        ["bash", str(_POSTGRES_SCRIPT), "url"], capture_output=True, text=True, timeout=60
    )
    if running.returncode == 0:
        yield running.stdout.strip()
        return
    started = subprocess.run(
        ["bash", str(_POSTGRES_SCRIPT), "start", "--no-install"],
        capture_output=True,
        text=True,
        timeout=180,
    )
    if started.returncode != 0:
        why = (started.stderr.strip().splitlines() or ["no output"])[-1]
        pytest.skip(f"DPW_POSTGRES_URL is unset and scripts/postgres.sh could not start a server: {why}")
    try:
        yield started.stdout.strip()
    finally:
        subprocess.run(["bash", str(_POSTGRES_SCRIPT), "stop"], capture_output=True, timeout=120)


@pytest.fixture
def postgres_url(postgres_server):
    """The URL of a new, empty database on the test server (dropped after the test)."""
    import psycopg

    name = f"dpw_test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"CREATE DATABASE {name}")
    yield urlsplit(postgres_server)._replace(path=f"/{name}").geturl()
    with psycopg.connect(postgres_server, autocommit=True) as admin:
        admin.execute(f"DROP DATABASE {name} WITH (FORCE)")


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path):
    """Where a ledger lives: a SQLite file, or a PostgreSQL URL (a new database)."""
    if request.param == "sqlite":
        return str(tmp_path / "ledger.sqlite")
    return request.getfixturevalue("postgres_url")


def test_sequential_composition_and_exact_cap(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    for _ in range(10):
        assert ledger.spend(0.1, label="step")
    # ten spends of 0.1 use the cap exactly; not one more
    assert ledger.spent == pytest.approx(1.0, abs=1e-12)
    assert ledger.remaining == pytest.approx(0.0, abs=1e-12)
    with pytest.raises(BudgetExceededError):
        ledger.spend(1e-6, label="one more")
    assert len(ledger.spends) == 10


def test_exceeding_spend_records_nothing_and_says_what_is_left(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="census", total_epsilon=1.0)
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


def test_spends_keep_labels_times_and_order(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=2.0)
    ledger.spend(0.5, label="a")
    ledger.spend(0.25, label="b")
    spends = ledger.spends
    assert [(s.label, s.epsilon) for s in spends] == [("a", 0.5), ("b", 0.25)]
    assert spends[0].time <= spends[1].time


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), "0.1", None, True])
def test_bad_epsilon_is_refused_before_anything_is_recorded(bad, ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    with pytest.raises(ValueError, match="epsilon"):
        ledger.spend(bad, label="x")
    assert ledger.spends == []


def test_bad_construction_arguments(ledger_url):
    with pytest.raises(ValueError, match="total_epsilon"):
        PrivacyLedger(ledger_url, dataset="d", total_epsilon=0)
    with pytest.raises(ValueError, match="dataset"):
        PrivacyLedger(ledger_url, dataset="", total_epsilon=1)
    with pytest.raises(ValueError, match="total_epsilon"):
        PrivacyLedger(ledger_url, dataset="new")  # no cap recorded yet


def test_parallel_composition_over_disjoint_parts(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
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


def test_different_partitions_may_overlap_so_they_add_up(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    ledger.spend(0.4, label="by age", partition="age", parts=["<30", ">=30"])
    ledger.spend(0.4, label="by sex", partition="sex", parts=["f", "m"])
    # a person is in one age part and one sex part: 0.8 spent on them
    assert ledger.spent == pytest.approx(0.8)
    assert ledger.cost_of(0.4, partition="age", parts=["<30"]) == pytest.approx(0.4)
    assert ledger.cost_of(0.4, partition="zip", parts=["1"]) == pytest.approx(0.4)


def test_parts_validation(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    with pytest.raises(ValueError, match="parts"):
        ledger.spend(0.1, partition="age")
    with pytest.raises(ValueError, match="partition"):
        ledger.spend(0.1, parts=["a"])
    with pytest.raises(ValueError, match="parts"):
        ledger.spend(0.1, partition="age", parts="abc")
    with pytest.raises(ValueError, match="repeat"):
        ledger.spend(0.1, partition="age", parts=["a", "a"])
    assert ledger.spends == []


def test_idempotency_key_charges_once(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    assert ledger.spend(0.3, label="release", key="abc") is True
    assert ledger.spend(0.3, label="release", key="abc") is False
    assert ledger.spent == pytest.approx(0.3)
    assert ledger.has_key("abc") and not ledger.has_key("other")


def test_persists_across_reopen_and_keeps_its_cap(ledger_url):
    path = ledger_url
    with PrivacyLedger(path, dataset="d", total_epsilon=1.0) as ledger:
        ledger.spend(0.4, label="first")
    # "kernel restart": reopen without restating the cap
    with PrivacyLedger(path, dataset="d") as ledger:
        assert ledger.total_epsilon == 1.0
        assert ledger.spent == pytest.approx(0.4)
        assert [s.label for s in ledger.spends] == ["first"]
    with pytest.raises(ValueError, match="cap"):
        PrivacyLedger(path, dataset="d", total_epsilon=5.0)
    # datasets in one database are independent
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


def test_eight_processes_never_exceed_the_cap_together(ledger_url):
    """Eight processes race to spend 0.01 at a time against one cap of 1.0.

    Exactly 100 spends can fit; a read-then-write race would let more through.
    """
    path = ledger_url
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


# -- errors ---------------------------------------------------------------------------------


def test_budget_error_is_a_refusal_and_a_runtime_error(ledger_url):
    from dpwidgets.engine.errors import DPWidgetsError, ReleaseRefused

    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    with pytest.raises(ReleaseRefused) as info:
        ledger.spend(2.0, label="big")
    assert isinstance(info.value, RuntimeError) and isinstance(info.value, DPWidgetsError)
    assert isinstance(info.value, BudgetExceededError)
    assert info.value.total == 1.0 and info.value.label == "big"


# -- exact, O(1) accounting -----------------------------------------------------------------


def test_running_sums_are_exact(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    for _ in range(10):
        ledger.spend(0.1, label="step")
    assert ledger.spent == 1.0 and ledger.remaining == 0.0  # exactly, as math.fsum gave
    ledger = PrivacyLedger(ledger_url, dataset="e", total_epsilon=1.0)
    for _ in range(10):
        ledger.spend(0.1, label="step", partition="age", parts=["<30"])
    assert ledger.spent == 1.0


def _reference_spent(spends) -> float:
    """The composition rule computed from scratch (the pre-totals implementation)."""
    from fractions import Fraction

    whole = Fraction(0)
    parts: dict = {}
    for s in spends:
        if s.partition is None:
            whole += Fraction(s.epsilon)
        else:
            for p in s.parts:
                parts.setdefault(s.partition, {}).setdefault(p, Fraction(0))
                parts[s.partition][p] += Fraction(s.epsilon)
    return float(whole + sum((max(v.values()) for v in parts.values()), Fraction(0)))


def test_running_totals_match_the_composition_rule(ledger_url):
    import random

    rng = random.Random(3)
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1e6)
    for i in range(300):
        eps = rng.choice([0.1, 0.3, 1e-3, rng.random()])
        kind = rng.random()
        if kind < 0.4:
            ledger.spend(eps, label=f"w{i}")
        else:
            partition = rng.choice(["age", "sex", "zip"])
            parts = rng.sample(["a", "b", "c", "d"], rng.randint(1, 3))
            ledger.spend(eps, label=f"p{i}", partition=partition, parts=parts)
        if i % 50 == 0:
            assert ledger.spent == _reference_spent(ledger.spends)
    spends = ledger.spends
    assert ledger.spent == _reference_spent(spends)
    assert ledger.count == len(spends) == 300
    # charged: what each spend added; they add up to spent
    assert math.fsum(s.charged for s in spends) == pytest.approx(ledger.spent, rel=1e-12)
    assert all(0 <= s.charged <= s.epsilon * (1 + 1e-12) for s in spends)
    # cost_of agrees with what a spend then charges
    before = ledger.spent
    cost = ledger.cost_of(0.5, partition="age", parts=["a", "b"])
    ledger.spend(0.5, label="x", partition="age", parts=["a", "b"])
    assert ledger.spent - before == pytest.approx(cost, abs=1e-9)


def test_recent_count_and_summary(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=10.0)
    assert ledger.recent(5) == [] and ledger.count == 0
    for i in range(8):
        ledger.spend(0.5, label=f"s{i}", partition="age", parts=["a" if i % 2 else "b"])
    recent = ledger.recent(3)
    assert [s.label for s in recent] == ["s5", "s6", "s7"]  # newest last
    # s5 raised part a to 1.5 while b was at 1.5: free; s6 raised b to 2.0: +0.5
    assert [s.charged for s in recent] == [0.0, 0.5, 0.0]
    assert ledger.recent(0) == [] and len(ledger.recent(100)) == 8
    assert ledger.summary() == {
        "dataset": "d",
        "total_epsilon": 10.0,
        "spent": 2.0,
        "remaining": 8.0,
        "count": 8,
        "recent": [],
    }
    assert ledger.summary(recent=3)["recent"] == recent
    with pytest.raises(ValueError, match="limit"):
        ledger.recent(-1)


def _vm_steps(ledger, action) -> int:
    """SQLite virtual-machine steps an action takes (deterministic, unlike a timer)."""
    steps = [0]

    def tick():
        steps[0] += 1
        return 0

    ledger._conn.set_progress_handler(tick, 1)
    try:
        action()
    finally:
        ledger._conn.set_progress_handler(None, 1)
    return steps[0]


def test_accounting_does_not_read_every_spend(tmp_path):
    ledger = PrivacyLedger(tmp_path / "l.sqlite", dataset="d", total_epsilon=1e6)
    ledger._conn.execute("PRAGMA synchronous = OFF")  # only to fill the file quickly

    def costs():
        return (
            _vm_steps(ledger, lambda: ledger.spend(0.01, label="x")),
            _vm_steps(ledger, lambda: ledger.spend(0.01, label="p", partition="q", parts=["a"])),
            _vm_steps(ledger, lambda: ledger.spent),
            _vm_steps(ledger, lambda: ledger.remaining),
            _vm_steps(ledger, lambda: ledger.cost_of(0.1, partition="q", parts=["b"])),
            _vm_steps(ledger, lambda: ledger.recent(50)),
            _vm_steps(ledger, lambda: ledger.summary()),
        )

    for _ in range(60):
        ledger.spend(0.01, label="fill")
    small = costs()
    for _ in range(5000):
        ledger.spend(0.01, label="fill")
    large = costs()
    for s, big in zip(small, large, strict=True):
        # a deeper B-tree costs a few steps more; reading 5,000 spends would cost thousands
        assert big <= 1.2 * s + 20, (small, large)


# -- migration and older writers ------------------------------------------------------------

_OLD_SCHEMA = """
CREATE TABLE datasets (name TEXT PRIMARY KEY, total_epsilon REAL NOT NULL CHECK
    (total_epsilon > 0), created REAL NOT NULL);
CREATE TABLE spends (id INTEGER PRIMARY KEY AUTOINCREMENT, dataset TEXT NOT NULL REFERENCES
    datasets(name), epsilon REAL NOT NULL CHECK (epsilon > 0), label TEXT NOT NULL,
    created REAL NOT NULL, partition TEXT, parts TEXT, key TEXT, UNIQUE (dataset, key));
CREATE INDEX spends_by_dataset ON spends(dataset);
"""


def _old_ledger(path) -> None:
    """A ledger file as the previous version wrote it (WAL, no totals, no fingerprints)."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.executescript(_OLD_SCHEMA)
    conn.execute("INSERT INTO datasets VALUES ('d', 1.0, 0), ('e', 2.0, 1)")
    rows = [("d", 0.1, None, None)] * 5 + [
        ("d", 0.2, "age", '["a"]'),
        ("d", 0.3, "age", '["b", "c"]'),
        ("e", 1.5, None, None),
    ]
    conn.executemany(
        "INSERT INTO spends (dataset, epsilon, label, created, partition, parts) "
        "VALUES (?, ?, 'old', 0, ?, ?)",
        rows,
    )
    conn.close()


def test_an_old_ledger_file_is_migrated_on_open(tmp_path):
    path = tmp_path / "ledger.sqlite"
    _old_ledger(path)
    with PrivacyLedger(path, dataset="d") as ledger:
        assert ledger.total_epsilon == 1.0
        assert ledger.spent == pytest.approx(0.8) and ledger.count == 7
        assert [s.charged for s in ledger.recent(2)] == [pytest.approx(0.2), pytest.approx(0.1)]
        # the file left WAL for a rollback journal
        assert ledger._conn.execute("PRAGMA journal_mode").fetchone()[0] == "truncate"
        with pytest.raises(BudgetExceededError):
            ledger.spend(0.25)
        assert ledger.spend(0.2)
    with PrivacyLedger(path, dataset="e", fingerprint="fp-e") as other:
        assert other.spent == 1.5 and other.remaining == 0.5
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] >= 2
    assert conn.execute("SELECT fingerprint FROM datasets WHERE name = 'e'").fetchone() == ("fp-e",)
    conn.close()


def test_spends_recorded_by_an_older_writer_are_counted(tmp_path):
    """A process still running the previous version inserts spends without totals."""
    path = tmp_path / "ledger.sqlite"
    with PrivacyLedger(path, dataset="d", total_epsilon=1.0) as ledger:
        ledger.spend(0.25, label="new")
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute(
            "INSERT INTO spends (dataset, epsilon, label, created) VALUES ('d', 0.5, 'old', 0)"
        )
        conn.close()
        assert ledger.spent == 0.75 and ledger.count == 2
        with pytest.raises(BudgetExceededError):
            ledger.spend(0.5)
        assert [s.charged for s in ledger.spends] == [0.25, 0.5]


# -- the file alone holds every committed spend ----------------------------------------------


def test_a_copy_of_the_file_alone_holds_every_committed_spend(tmp_path):
    import shutil

    path = tmp_path / "ledger.sqlite"
    PrivacyLedger(path, dataset="d", total_epsilon=10.0).close()
    script = textwrap.dedent(
        f"""
        import os
        from dpwidgets.engine.budget import PrivacyLedger
        ledger = PrivacyLedger({str(path)!r}, dataset="d")
        for i in range(20):
            ledger.spend(0.1, label=f"s{{i}}")
        os._exit(7)  # no close, no checkpoint
        """
    )
    result = subprocess.run([sys.executable, "-c", script], timeout=120)
    assert result.returncode == 7
    copy_dir = tmp_path / "copy"
    copy_dir.mkdir()
    shutil.copyfile(path, copy_dir / "ledger.sqlite")  # the main file only
    assert not (copy_dir / "ledger.sqlite-wal").exists()
    with PrivacyLedger(copy_dir / "ledger.sqlite", dataset="d") as copy:
        assert copy.count == 20 and copy.spent == pytest.approx(2.0)
        assert [s.label for s in copy.spends] == [f"s{i}" for i in range(20)]


# -- one file, one name ---------------------------------------------------------------------


def test_a_hard_linked_ledger_file_is_refused(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with PrivacyLedger(path, dataset="d", total_epsilon=1.0) as ledger:
        ledger.spend(0.9)
    os.link(path, tmp_path / "second-name.sqlite")
    for name in (path, tmp_path / "second-name.sqlite"):
        with pytest.raises(ValueError, match="hard link") as info:
            PrivacyLedger(name, dataset="d")
        assert "0.9" not in str(info.value)


def test_a_symlink_shares_the_budget(tmp_path):
    path = tmp_path / "ledger.sqlite"
    link = tmp_path / "alias.sqlite"
    PrivacyLedger(path, dataset="d", total_epsilon=1.0).close()
    link.symlink_to(path)
    a = PrivacyLedger(path, dataset="d")
    b = PrivacyLedger(link, dataset="d")
    assert a.path == b.path == str(path.resolve())
    a.spend(0.9)
    with pytest.raises(BudgetExceededError):
        b.spend(0.9)
    a.close()
    b.close()


def test_paths_are_resolved_and_bad_ones_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.chdir(tmp_path)
    with PrivacyLedger("~/sub/l.sqlite", dataset="d", total_epsilon=1.0) as ledger:
        assert ledger.path == str((tmp_path / "sub" / "l.sqlite").resolve())
        assert ledger.persistent is True
        ledger.spend(0.5)
    with PrivacyLedger("sub/../sub/l.sqlite", dataset="d") as same:  # relative, made absolute
        assert same.spent == 0.5
    for bad, why in [("", "empty"), ("   ", "empty"), ("file:l.sqlite", "URI"),
                     ("file:x?mode=memory", "URI"), (str(tmp_path), "directory")]:
        with pytest.raises(ValueError, match=why):
            PrivacyLedger(bad, dataset="d", total_epsilon=1.0)
    memory = PrivacyLedger(":memory:", dataset="d", total_epsilon=1.0)
    assert memory.persistent is False and memory.path == ":memory:"


def test_default_location_is_absolute(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("DPWIDGETS_LEDGER", "~/x.sqlite")
    assert default_ledger_path() == tmp_path / "x.sqlite"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPWIDGETS_LEDGER", "rel.sqlite")
    assert default_ledger_path().is_absolute()
    monkeypatch.delenv("DPWIDGETS_LEDGER")
    assert default_ledger_path().is_absolute()


# -- idempotency keys -----------------------------------------------------------------------


def test_an_idempotency_key_names_one_release(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=1.0)
    assert ledger.spend(0.3, label="release", key="k")
    assert ledger.spend(0.3, label="other label", key="k") is False  # same release: free
    with pytest.raises(ValueError, match="key"):
        ledger.spend(0.1, label="release", key="k")
    assert ledger.spend(0.2, partition="age", parts=["a", "b"], key="p")
    assert ledger.spend(0.2, partition="age", parts=["b", "a"], key="p") is False
    for other in [dict(partition="age", parts=["a"]), dict(partition="sex", parts=["a", "b"]), {}]:
        with pytest.raises(ValueError, match="key"):
            ledger.spend(0.2, key="p", **other)
    assert ledger.spent == pytest.approx(0.5) and ledger.count == 2


# -- aliases and fingerprints ---------------------------------------------------------------


def test_aliases_of_one_dataset_share_one_budget(ledger_url):
    path = ledger_url
    first = PrivacyLedger(path, dataset="visits", total_epsilon=1.0, fingerprint="fp1")
    assert first.dataset == "visits" and first.alias_of is None
    first.spend(0.6)
    for name in ["visits ", "Visits", "  VISITS\t", "visits_2", "ｖｉｓｉｔｓ"]:
        ledger = PrivacyLedger(path, dataset=name, total_epsilon=1.0, fingerprint="fp1")
        assert ledger.dataset == "visits" and ledger.requested_name == name
        assert ledger.alias_of == "visits"
        assert ledger.spent == pytest.approx(0.6)
        with pytest.raises(BudgetExceededError):
            ledger.spend(0.6)
        ledger.close()
    # the name "visits_2" was recorded as an alias: found without the fingerprint too
    with PrivacyLedger(path, dataset="Visits_2") as later:
        assert later.dataset == "visits" and later.spent == pytest.approx(0.6)
    # inner whitespace is collapsed, not removed
    with PrivacyLedger(path, dataset="my  data", total_epsilon=1.0) as a:
        assert a.dataset == "my  data"
    with PrivacyLedger(path, dataset="My data") as b:
        assert b.dataset == "my  data"
    with pytest.raises(ValueError, match="total_epsilon"):
        PrivacyLedger(path, dataset="mydata")
    first.close()


def test_an_alias_cannot_change_the_cap(ledger_url):
    path = ledger_url
    PrivacyLedger(path, dataset="visits", total_epsilon=1.0, fingerprint="fp1").close()
    with PrivacyLedger(path, dataset="copy", total_epsilon=5.0, fingerprint="fp1") as alias:
        assert alias.total_epsilon == 1.0 and alias.dataset == "visits"
    with PrivacyLedger(path, dataset="Visits", total_epsilon=5.0) as alias:
        assert alias.total_epsilon == 1.0
    # by its own name, a different cap is still an error
    with pytest.raises(ValueError, match="cap"):
        PrivacyLedger(path, dataset="visits", total_epsilon=5.0, fingerprint="fp1")


def test_a_name_and_a_fingerprint_of_two_datasets_are_refused(ledger_url):
    path = ledger_url
    PrivacyLedger(path, dataset="a", total_epsilon=1.0, fingerprint="secret-fp-a").close()
    PrivacyLedger(path, dataset="b", total_epsilon=1.0, fingerprint="secret-fp-b").close()
    with pytest.raises(ValueError) as info:
        PrivacyLedger(path, dataset="a", fingerprint="secret-fp-b")
    assert "secret-fp" not in str(info.value)
    # new data under a known name keeps the name's budget, and its fingerprint finds it later
    with PrivacyLedger(path, dataset="a", fingerprint="fp-new") as same:
        assert same.dataset == "a"
    with PrivacyLedger(path, dataset="c", fingerprint="fp-new") as alias:
        assert alias.dataset == "a"
    with pytest.raises(ValueError, match="fingerprint"):
        PrivacyLedger(path, dataset="x", total_epsilon=1.0, fingerprint="")


def _open_alias(path: str, name: str, queue) -> None:
    ledger = PrivacyLedger(path, dataset=name, total_epsilon=1.0, fingerprint="same-content")
    queue.put(ledger.dataset)
    ledger.close()


def test_concurrent_aliases_end_with_one_dataset(ledger_url):
    path = ledger_url
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    names = ["visits", "Visits ", "visits_2", "visits_copy"]
    workers = [ctx.Process(target=_open_alias, args=(path, n, queue)) for n in names]
    for w in workers:
        w.start()
    got = {queue.get(timeout=120) for _ in workers}
    for w in workers:
        w.join(timeout=60)
        assert w.exitcode == 0
    assert len(got) == 1
    with PrivacyLedger(path, dataset="visits") as ledger:
        assert ledger._db.execute("SELECT count(*) FROM datasets").fetchone()[0] == 1


def test_a_spend_waits_for_the_write_lock_then_gives_up(tmp_path):
    import time

    path = tmp_path / "l.sqlite"
    ledger = PrivacyLedger(path, dataset="d", total_epsilon=1.0, timeout=0.3)
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    t0 = time.monotonic()
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        ledger.spend(0.1)
    assert 0.3 <= time.monotonic() - t0 < 5
    other.execute("ROLLBACK")
    other.close()
    assert ledger.spend(0.1) and ledger.count == 1
    # the connection's own busy timeout is back for every other wait
    assert ledger._conn.execute("PRAGMA busy_timeout").fetchone()[0] == 300
    ledger.close()


def test_a_wal_file_held_open_elsewhere_is_switched_at_the_next_open(tmp_path):
    path = tmp_path / "ledger.sqlite"
    _old_ledger(path)
    old_process = sqlite3.connect(path, isolation_level=None)  # an older version, still running
    old_process.execute("SELECT count(*) FROM spends").fetchall()
    with pytest.warns(RuntimeWarning, match="wal"):
        ledger = PrivacyLedger(path, dataset="d")
    assert ledger.spend(0.1) and ledger.spent == pytest.approx(0.9)  # still safe, still shared
    ledger.close()
    old_process.close()
    with PrivacyLedger(path, dataset="d") as ledger:
        assert ledger._conn.execute("PRAGMA journal_mode").fetchone()[0] == "truncate"
        assert ledger.spent == pytest.approx(0.9)


def test_a_release_over_many_parts(ledger_url):
    ledger = PrivacyLedger(ledger_url, dataset="d", total_epsilon=10.0)
    bins = [str(i) for i in range(40_000)]  # more than SQLite binds in one statement
    ledger.spend(0.5, partition="bins", parts=bins)
    ledger.spend(0.25, partition="bins", parts=bins[:20_001])
    assert ledger.spent == 0.75
    assert ledger.cost_of(1.0, partition="bins", parts=bins[30_000:]) == 0.75
