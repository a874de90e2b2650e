"""The door's attacks, run against the curator: a refused request reads nothing and charges
nothing; analyst noise never comes from a seed; a client cannot claim facts about the data;
several curator replicas on one PostgreSQL ledger never overspend."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient

from dpwidgets import Session
from dpwidgets.curator import Curator, load_config
from dpwidgets.curator.app import create_app
from dpwidgets.engine.budget import PrivacyLedger
from dpwidgets.tables import Table

from .conftest import MAX_ROWS, Server, bearer, write_curator

pytestmark = pytest.mark.slow


@pytest.fixture
def in_process(tmp_path, monkeypatch):
    """The curator's app in this process, with every read of the data counted."""
    path, tokens = write_curator(tmp_path)
    reads = []
    real = Table.read
    monkeypatch.setattr(Table, "read", lambda self, view: reads.append(view) or real(self, view))
    curator = Curator(load_config(path))
    client = TestClient(create_app(curator))
    yield client, tokens, reads, curator
    curator.close()


REFUSED = [
    {"epsilon": 1e12, "c": 3},                       # over every cap
    {"epsilon": 0.7, "c": 3},                        # 0.7 x 3 rows > alice's 2.0
    {"epsilon": 0.05, "c": 3, "sensitivity": 1e-9},  # a fact about the data
    {"epsilon": 0.05, "c": 3, "monotonic": False},   # a declared fact, restated
    {"epsilon": 0.05, "c": 3, "variant": "lyu"},     # not a parameter of top_c
    {"epsilon": -1.0, "c": 3},
    {"epsilon": 0.05, "c": 3.5},
]


@pytest.mark.parametrize("params", REFUSED)
def test_a_refused_request_reads_nothing_and_charges_nothing(in_process, params):
    client, tokens, reads, curator = in_process
    body = {"dataset": "visits/pages", "mechanism": "top_c", "params": params}
    r = client.post("/v1/releases", json=body, headers=bearer(tokens["alice"]))
    assert r.status_code in (400, 403, 409), r.text
    assert reads == []
    ledger = PrivacyLedger(curator.config.ledger, dataset="visits")
    assert ledger.spent == 0 and ledger.count == 0
    # The message carries nothing computed from the data: it is the same for any data.
    assert "selected" not in r.text


def test_an_accepted_request_reads_once(in_process):
    client, tokens, reads, _ = in_process
    body = {"dataset": "visits/pages", "mechanism": "top_c", "params": {"epsilon": 0.05, "c": 3}}
    assert client.post("/v1/releases", json=body, headers=bearer(tokens["alice"])).status_code == 200
    assert len(reads) == 1
    # A replay is free and reads nothing.
    assert client.post("/v1/releases", json=body, headers=bearer(tokens["bob"])).status_code == 200
    assert len(reads) == 1


def test_analyst_noise_never_comes_from_a_seed(tmp_path):
    outputs = []
    for i in range(2):
        home = tmp_path / f"c{i}"
        home.mkdir()
        path, tokens = write_curator(home)
        server = Server(path).start()
        try:
            s = Session.connect(server.url, token=tokens["alice"], seed=5)
            r = s.release("visits/daily", "laplace_stream", epsilon=0.05)
            outputs.append(np.asarray(r.output["estimates"]))
            s.close()
        finally:
            server.stop()
    # Same data, same request, same client seed, two curators: fresh noise each time.
    assert not np.array_equal(outputs[0], outputs[1])


def test_previews_stay_seeded_and_free(curator):
    server, tokens = curator
    a = Session.connect(server.url, token=tokens["alice"], seed=5)
    b = Session.connect(server.url, token=tokens["alice"], seed=5)
    pa = a.preview("visits/daily", "laplace_stream", epsilon=0.05)
    pb = b.preview("visits/daily", "laplace_stream", epsilon=0.05)
    np.testing.assert_array_equal(pa.output["estimates"], pb.output["estimates"])
    assert a.spent("visits/daily") == 0


def test_replicas_on_one_postgresql_ledger_never_overspend(tmp_path, curator_database):
    db_url = curator_database
    path, tokens = write_curator(tmp_path)
    text = path.read_text().replace('ledger = "ledger.sqlite"', f'ledger = "{db_url}"')
    path.write_text(text)
    replicas = [Server(path).start(), Server(path).start()]
    try:
        def one(i):
            server = replicas[i % 2]
            body = {"dataset": "visits/daily", "mechanism": "laplace_stream",
                    "params": {"epsilon": 0.02}, "run": i}
            token = tokens["alice"] if i % 3 else tokens["bob"]
            return httpx.post(f"{server.url}/v1/releases", json=body, timeout=120,
                              headers=bearer(token)).status_code

        with ThreadPoolExecutor(12) as pool:
            codes = list(pool.map(one, range(90)))
        assert set(codes) <= {200, 409}
        ledger = PrivacyLedger(db_url, dataset="visits")
        # alice and bob have 2.0 each, the dataset 3.0: exactly 3.0 / (0.02 x 3) releases.
        assert codes.count(200) == round(3.0 / (0.02 * MAX_ROWS)) == ledger.count
        assert ledger.spent <= 3.0 * (1 + 1e-12)
        for who in ("alice", "bob"):
            assert PrivacyLedger(db_url, dataset=f"visits@{who}").spent <= 2.0 + 1e-9
        ledger.close()
    finally:
        for server in replicas:
            server.stop()


def test_replicas_on_two_machines_replay_each_others_releases(tmp_path, curator_database):
    # Two replicas with no working directory in common (config and analysts file copied, as
    # on two machines; the data at one declared location, as a shared mount or database would
    # be) share one PostgreSQL ledger. A release made through the first is replayed by the
    # second for free, with the same numbers: the release store and its keyed-hash secret
    # live in the ledger's database, not in a per-host file.
    import shutil

    db_url = curator_database
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    path, tokens = write_curator(one)
    path.write_text(path.read_text()
                    .replace('ledger = "ledger.sqlite"', f'ledger = "{db_url}"')
                    .replace('source = "visits.parquet"',
                             f'source = "{(one / "visits.parquet").as_posix()}"'))
    shutil.copytree(one, two, ignore=shutil.ignore_patterns("*.parquet"))
    replicas = [Server(one / "curator.toml").start(), Server(two / "curator.toml").start()]
    try:
        body = {"dataset": "visits/daily", "mechanism": "laplace_stream",
                "params": {"epsilon": 0.05}}
        first, second = (httpx.post(f"{s.url}/v1/releases", json=body, timeout=120,
                                    headers=bearer(tokens["alice"])) for s in replicas)
        assert first.status_code == second.status_code == 200, second.text
        assert second.json()["output"] == first.json()["output"]
        ledger = PrivacyLedger(db_url, dataset="visits")
        assert ledger.count == 1 and ledger.spent == pytest.approx(0.05 * MAX_ROWS)
        ledger.close()
        assert not (two / "releases.sqlite").exists()
    finally:
        for server in replicas:
            server.stop()
