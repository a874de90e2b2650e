"""The curator under stress: racing analysts against one cap, a curator killed mid-release,
and the user-level guarantee of contribution bounding, checked by adding one person's rows."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pandas as pd
import pytest

from dpwidgets.curator.config import load_config
from dpwidgets.curator.door import Analysts
from dpwidgets.engine.budget import PrivacyLedger
from dpwidgets.tables import Table, View

from .conftest import MAX_ROWS, PAGES, Server, bearer, visits_frame, write_curator

pytestmark = pytest.mark.slow


def test_racing_analysts_never_overspend_the_dataset_cap(tmp_path):
    path, tokens = write_curator(tmp_path)
    config = load_config(path)
    analysts = Analysts(config.analysts)
    # Eight analysts with 2.0 each against a dataset cap of 3.0: only the cap can stop them.
    racers = [analysts.add(f"r{i}", {"visits": 2.0}) for i in range(8)]
    server = Server(path).start()
    try:
        def one(i):
            body = {"dataset": "visits/daily", "mechanism": "laplace_stream",
                    "params": {"epsilon": 0.02}, "run": i}
            r = httpx.post(f"{server.url}/v1/releases", json=body, timeout=120,
                           headers=bearer(racers[i % len(racers)]))
            return r.status_code

        with ThreadPoolExecutor(16) as pool:
            codes = list(pool.map(one, range(80)))
        cost = 0.02 * MAX_ROWS
        granted = codes.count(200)
        assert set(codes) <= {200, 409}
        assert granted == int(3.0 / cost + 1e-9)  # 50 releases of 0.06 fill 3.0 exactly
        ledger = PrivacyLedger(config.ledger, dataset="visits")
        assert ledger.spent <= 3.0 * (1 + 1e-12)
        assert ledger.count == granted
    finally:
        server.stop()


def _charge_then_die(config_path, token_name: str, key: str) -> None:
    """In a child process: charge a release with an idempotency key, then SIGKILL itself
    before the output is stored (a curator dying mid-release)."""
    code = textwrap.dedent(f"""
        import os, signal
        from dpwidgets.session import Session
        from dpwidgets.curator import Curator, load_config
        config = load_config({str(config_path)!r})
        curator = Curator(config)
        record = curator.analysts._load()[{token_name!r}]
        door = curator.door({token_name!r}, record)
        def die(self, *a, **k):
            os.kill(os.getpid(), signal.SIGKILL)
        Session._run_sealed = die
        door.release_with_key({key!r}, "visits/daily", "laplace_stream", epsilon=0.05)
    """)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=120)
    assert proc.returncode == -9, proc.stderr.decode()


def test_kill_9_mid_release_loses_and_doubles_nothing(tmp_path):
    path, tokens = write_curator(tmp_path)
    # The dead attempt's claim on the key is taken over once its lease has run out.
    path.write_text(path.read_text().replace("[curator]\n", "[curator]\nclaim_lease = 2\n"))
    config = load_config(path)
    _charge_then_die(path, "alice", "retry-me")
    ledger = PrivacyLedger(config.ledger, dataset="visits@alice")
    assert ledger.spent == pytest.approx(0.05 * MAX_ROWS) and ledger.count == 1
    server = Server(path).start()
    try:
        body = {"dataset": "visits/daily", "mechanism": "laplace_stream",
                "params": {"epsilon": 0.05}}
        headers = {**bearer(tokens["alice"]), "Idempotency-Key": "retry-me"}
        first = httpx.post(f"{server.url}/v1/releases", json=body, headers=headers, timeout=60)
        assert first.status_code == 200
        # The retry ran under the charge already recorded: nothing charged twice.
        assert ledger.spent == pytest.approx(0.05 * MAX_ROWS) and ledger.count == 1
        assert PrivacyLedger(config.ledger, dataset="visits").count == 1
        server.kill()
        server.start()
        again = httpx.post(f"{server.url}/v1/releases", json=body, headers=headers, timeout=60)
        assert again.status_code == 200 and again.json()["output"] == first.json()["output"]
        assert again.json()["blob"] == first.json()["blob"] and not again.json()["charged"]
        assert ledger.count == 1
    finally:
        server.stop()


def _counts(frame: pd.DataFrame, seed_rows: int) -> np.ndarray:
    table = Table(frame, {"page": {"kind": "int", "domain": [0, PAGES - 1]}},
                  unit="person", max_rows=MAX_ROWS)
    return table.read(View("counts", ("page",)))


def test_contribution_bounding_makes_one_person_change_at_most_max_rows_counts():
    base = visits_frame(seed=3, people=300)
    heavy = pd.DataFrame({"person": 10_000, "page": np.arange(200) % PAGES, "day": 0,
                          "device": "phone", "x": 0.0, "y": 0.0})
    for trial in range(5):
        without = _counts(base, trial)
        with_person = _counts(pd.concat([base, heavy], ignore_index=True), trial)
        # Everyone else keeps at most MAX_ROWS rows: totals are exact; the added person adds
        # exactly MAX_ROWS rows, whatever the random subset kept.
        expected = base.groupby("person").size().clip(upper=MAX_ROWS).sum()
        assert without.sum() == expected
        assert with_person.sum() - without.sum() == MAX_ROWS
    # Values outside a declared domain are dropped, never clipped into a cell.
    odd = pd.DataFrame({"person": [1, 2], "page": [PAGES + 5, -1]})
    assert _counts(odd, 0).sum() == 0


def test_distinct_bounding_counts_people_per_value():
    # A person with many rows on few pages counts once per page, on at most MAX_ROWS pages.
    frame = pd.DataFrame({"person": [1] * 50 + [2] * 5 + [3] * 2,
                          "page": list(np.arange(50) % 10) + [4] * 5 + [0, 1]})
    table = Table(frame, {"page": {"kind": "int", "domain": [0, PAGES - 1]}}, unit="person",
                  max_rows=MAX_ROWS, distinct=True)
    for _ in range(5):
        counts = table.read(View("counts", ("page",)))
        # person 1: MAX_ROWS distinct pages; person 2: page 4 once; person 3: pages 0 and 1.
        assert counts.sum() == MAX_ROWS + 1 + 2
        assert counts.max() <= 3  # three people at most on any page
