"""Two curator replicas on one ledger (one SQLite file, or one PostgreSQL database): one
idempotency key is one charge and one output, whichever replica each attempt reaches, and a
replica that dies mid-release is taken over only once its claim's lease has run out.

The replicas are real ``dpwidgets curator serve`` processes. Their release is a test-only
mechanism, ``slow_stream``: ``laplace_stream`` after a fixed sleep, so that attempts with one key
overlap for certain (registered by a launcher before the CLI runs, and allowed by name in the
configuration, as an owner allows any mechanism registered outside dpwidgets).
"""

from __future__ import annotations

import os
import sqlite3
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from dpwidgets.curator import Curator, load_config
from dpwidgets.engine.budget import BudgetExceededError, PrivacyLedger

from .conftest import MAX_ROWS, Server, bearer, write_curator

pytestmark = pytest.mark.slow

SLOW = 1.5  # seconds slow_stream sleeps before it runs: longer than any request's round trip

_REGISTER = """
import dataclasses, os, time
from dpwidgets.mechanism import MECHANISMS, register_mechanism

_base = MECHANISMS["laplace_stream"]

def _slow_run(data, p, rng):
    time.sleep(float(os.environ.get("DPW_TEST_SLOW", "0")))
    return _base.run(data, p, rng)

if "slow_stream" not in MECHANISMS:
    register_mechanism(dataclasses.replace(_base, name="slow_stream", run=_slow_run))
"""
exec(_REGISTER)  # the same mechanism here, so that load_config() accepts the configuration

BODY = {"dataset": "visits/daily", "mechanism": "slow_stream", "params": {"epsilon": 0.05}}
COST = 0.05 * MAX_ROWS


class Replica(Server):
    """``dpwidgets curator serve`` in its own process, after registering ``slow_stream``."""

    def start(self) -> Replica:
        launcher = self.config.parent / "serve_with_slow_stream.py"
        launcher.write_text(_REGISTER + textwrap.dedent("""
            import sys
            from dpwidgets.curator.cli import main
            sys.exit(main(sys.argv[1:]))
        """))
        return self.launch([sys.executable, str(launcher)], env={"DPW_TEST_SLOW": str(SLOW)})


@pytest.fixture(params=["sqlite", "postgresql"])
def replicated(request, tmp_path):
    """(config path, ledger, tokens): a curator configuration allowing ``slow_stream``, on a
    SQLite file or on a fresh PostgreSQL database (skipped without ``$DPW_POSTGRES_URL``)."""
    path, tokens = write_curator(tmp_path)
    text = path.read_text().replace('mechanisms = ["top_c",', 'mechanisms = ["slow_stream", "top_c",')
    if request.param == "postgresql":
        url = request.getfixturevalue("curator_database")
        text = text.replace('ledger = "ledger.sqlite"', f'ledger = "{url}"')
    path.write_text(text)
    return path, load_config(path).ledger, tokens


def _claims(ledger: str) -> list[tuple]:
    """Every claim row (owner, expires, state), read straight from the ledger's database."""
    sql = "SELECT owner, expires, state FROM {}claims"
    if "://" in ledger:
        import psycopg

        with psycopg.connect(ledger) as conn:
            return conn.execute(sql.format("dpwidgets_ledger.")).fetchall()
    with sqlite3.connect(ledger) as conn:
        return conn.execute(sql.format("")).fetchall()


def _counts(ledger: str) -> tuple[int, int]:
    with PrivacyLedger(ledger, dataset="visits") as shared, \
            PrivacyLedger(ledger, dataset="visits@alice") as mine:
        return shared.count, mine.count


def test_one_key_on_two_replicas_is_one_charge_and_one_output(replicated):
    path, ledger, tokens = replicated
    replicas = [Replica(path).start(), Replica(path).start()]
    headers = {**bearer(tokens["alice"]), "Idempotency-Key": "one-click"}
    try:
        def one(i):
            return httpx.post(f"{replicas[i % 2].url}/v1/releases", json=BODY,
                              headers=headers, timeout=120)

        # Eight attempts with one key, four on each replica, all sent within the first
        # attempt's run (SLOW seconds): before claims, each replica ran the release itself and
        # handed out its own noise for the one charge.
        with ThreadPoolExecutor(8) as pool:
            answers = list(pool.map(one, range(8)))
        assert [a.status_code for a in answers] == [200] * 8, [a.text for a in answers]
        outputs = {(a.json()["output"], a.json()["blob"]) for a in answers}
        assert len(outputs) == 1
        assert sum(a.json()["charged"] for a in answers) == 1
        assert _counts(ledger) == (1, 1)
        with PrivacyLedger(ledger, dataset="visits") as shared:
            assert shared.spent == pytest.approx(COST)
        (_, _, state), = _claims(ledger)
        assert state == "done"
    finally:
        for replica in replicas:
            replica.stop()


def test_a_replica_killed_mid_release_is_taken_over_only_after_its_lease(replicated):
    path, ledger, tokens = replicated
    lease = 4.0
    path.write_text(path.read_text().replace("[curator]\n", f"[curator]\nclaim_lease = {lease}\n"))
    holder, other = Replica(path).start(), Replica(path).start()
    headers = {**bearer(tokens["alice"]), "Idempotency-Key": "dies-midway"}
    try:
        def doomed():
            try:
                httpx.post(f"{holder.url}/v1/releases", json=BODY, headers=headers, timeout=60)
            except httpx.HTTPError:
                pass  # its replica is killed under it

        sent = time.time()
        thread = threading.Thread(target=doomed)
        thread.start()
        deadline = time.monotonic() + 30
        while not _claims(ledger):  # the claim is recorded with the charge, before the run
            assert time.monotonic() < deadline, "the first attempt never charged"
            time.sleep(0.02)
        holder.kill()  # kill -9 while slow_stream sleeps: no output was stored
        thread.join(30)
        (dead_owner, expires, state), = _claims(ledger)
        assert state == "running" and expires >= sent + lease - 1.0
        assert _counts(ledger) == (1, 1)

        retry = httpx.post(f"{other.url}/v1/releases", json=BODY, headers=headers, timeout=120)
        answered = time.time()
        assert retry.status_code == 200, retry.text
        # Not before the dead holder's lease ran out (then SLOW seconds of its own run).
        assert answered >= expires + SLOW
        # Run under the charge already recorded: one spend in all, on both budgets.
        assert _counts(ledger) == (1, 1)
        (owner, _, state), = _claims(ledger)
        assert owner != dead_owner and state == "done"
        # And it is the one output: replayed by the surviving replica for free.
        again = httpx.post(f"{other.url}/v1/releases", json=BODY, headers=headers, timeout=60)
        assert again.json()["output"] == retry.json()["output"] and not again.json()["charged"]
    finally:
        holder.stop()
        other.stop()


def test_a_wait_past_the_bound_answers_503_and_charges_nothing(tmp_path):
    # In one process (no server): a live claim held by another attempt, a waiter whose wait
    # bound is shorter than the holder's lease. It must neither run nor charge: HTTP 503.
    from fastapi.testclient import TestClient

    from dpwidgets.curator.app import create_app

    path, tokens = write_curator(tmp_path)
    path.write_text(path.read_text().replace('mechanisms = ["top_c",',
                                             'mechanisms = ["slow_stream", "top_c",'))
    curator = Curator(load_config(path))
    curator.claim_wait = 0.3
    app = create_app(curator)
    client = TestClient(app)
    headers = {**bearer(tokens["alice"]), "Idempotency-Key": "held-elsewhere"}
    door = curator.door("alice", curator.analysts._load()["alice"])
    key = door.release_key("visits/daily", "slow_stream", epsilon=0.05)
    ledger = door.ledger("visits/daily")
    claim = ledger.claim(COST, "elsewhere", key=f"{key}#held-elsewhere", owner="another-replica",
                         lease=60)
    assert claim.held_by("another-replica") and claim.fresh
    started = time.monotonic()
    answer = client.post("/v1/releases", json=BODY, headers=headers)
    assert answer.status_code == 503 and answer.headers["Retry-After"] == "1"
    assert 0.3 <= time.monotonic() - started < 10
    assert ledger.mine.count == 1 and ledger.shared.count == 1  # nothing charged again
    # The holder fails on the data: the waiter repeats the failure, never runs for free.
    ledger.finish(f"{key}#held-elsewhere", "another-replica", failed=True)
    failed = client.post("/v1/releases", json=BODY, headers=headers)
    assert failed.status_code == 422
    assert ledger.mine.count == 1
    curator.close()


# -- one table, one budget --------------------------------------------------------------------

TWINS = """
[datasets.copy]
source = "copy.parquet"
unit = "person"
max_rows = {max_rows}
total_epsilon = {cap}
columns.day = {{ kind = "int", domain = [0, 14] }}
views.daily = {{ kind = "per_step", columns = ["day"] }}

[datasets.link]
source = "link.parquet"
unit = "person"
max_rows = {max_rows}
total_epsilon = {cap}
columns.day = {{ kind = "int", domain = [0, 14] }}
views.daily = {{ kind = "per_step", columns = ["day"] }}
"""


def _twins(tmp_path, cap=3.0, copy_cap=None):
    """The curator's visits declared three times: the file, a byte copy, a symlink."""
    import shutil

    path, tokens = write_curator(tmp_path)
    shutil.copyfile(tmp_path / "visits.parquet", tmp_path / "copy.parquet")
    os.symlink(tmp_path / "visits.parquet", tmp_path / "link.parquet")
    twins = TWINS.format(max_rows=MAX_ROWS, cap=cap)
    if copy_cap is not None:
        twins = twins.replace(f"total_epsilon = {cap}", f"total_epsilon = {copy_cap}", 1)
    path.write_text(path.read_text() + textwrap.dedent(twins))
    return path, tokens


def test_one_file_declared_three_times_has_one_budget(tmp_path):
    path, _ = _twins(tmp_path)
    curator = Curator(load_config(path))
    try:
        assert {curator.budget_of(n) for n in ("visits", "copy", "link")} == {"visits"}
        assert curator.budget_of("other") == "other"
        token = curator.analysts.add("dave", {"visits": 2.0, "copy": 2.0, "link": 1.5})
        door = curator.door("dave", curator.analysts.who(token)[1])
        ledgers = {door.ledger(f"{n}/daily") for n in ("visits", "copy", "link")}
        assert len(ledgers) == 1  # one joint ledger: the content's cap and dave's on it
        (ledger,) = ledgers
        assert ledger.shared.dataset == "visits" and ledger.mine.dataset == "visits@dave"
        assert ledger.total_epsilon == 1.5  # the smallest of dave's caps on the three
        # Spend through each declaration in turn until refused: 1.5 in all, not 5.5.
        spent, names = 0.0, ["visits", "copy", "link"]
        for i in range(40):
            try:
                door.release(f"{names[i % 3]}/daily", "laplace_stream", epsilon=0.1, run=i)
            except BudgetExceededError:
                break
            spent += 0.1 * MAX_ROWS
        assert spent == pytest.approx(1.5)
        assert ledger.mine.spent == pytest.approx(1.5) and ledger.shared.spent == pytest.approx(1.5)
    finally:
        curator.close()
    # The budget is recorded by content: a restart binds every declaration to it again.
    again = Curator(load_config(path))
    try:
        with PrivacyLedger(again.config.ledger, dataset="copy") as copy:
            assert copy.dataset == "visits" and copy.spent == pytest.approx(1.5)
    finally:
        again.close()


def test_the_dataset_cap_cannot_be_multiplied_by_declaring_the_file_again(tmp_path):
    path, _ = _twins(tmp_path)
    curator = Curator(load_config(path))
    try:
        analysts = [curator.analysts.add(f"a{i}", {name: 3.0}) for i, name in
                    enumerate(["visits", "copy", "link"])]
        granted = 0.0
        for i, token in enumerate(analysts):
            door = curator.door(f"a{i}", curator.analysts.who(token)[1])
            name = ["visits", "copy", "link"][i]
            for run in range(30):
                try:
                    door.release(f"{name}/daily", "laplace_stream", epsilon=0.2, run=run)
                except BudgetExceededError:
                    break
                granted += 0.2 * MAX_ROWS
        # Three analysts on three declarations of one file: the one cap of 3.0, not 9.0.
        assert granted == pytest.approx(3.0)
    finally:
        curator.close()


def test_two_caps_on_one_content_refuse_to_start_naming_both(tmp_path):
    path, _ = _twins(tmp_path, cap=3.0, copy_cap=6.0)
    with pytest.raises(ValueError, match=r"'visits' and 'copy' hold the same data") as info:
        Curator(load_config(path))
    assert "3" in str(info.value) and "6" in str(info.value)


def test_a_copy_declared_alone_later_keeps_the_recorded_cap(tmp_path):
    # Day 1 records visits with 3.0; day 2 the owner declares only a copy, with a larger cap:
    # the copy is the recorded budget, whose cap the new declaration cannot raise.
    path, _ = _twins(tmp_path)
    Curator(load_config(path)).close()
    text = path.read_text().replace("[datasets.visits]", "[datasets.renamed]")
    text = text.replace("total_epsilon = 3.0\n", "total_epsilon = 9.0\n", 3)
    path.write_text(text)
    with pytest.raises(ValueError, match=r"same data as the budget 'visits'"):
        Curator(load_config(path))

