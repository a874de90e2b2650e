"""A real curator for the tests: a temporary Parquet table with repeated people, a config file,
and `dpwidgets curator serve` started as its own process on a free loopback port."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import textwrap
import time

import httpx
import numpy as np
import pandas as pd
import pytest

from dpwidgets.curator.config import load_config
from dpwidgets.curator.door import Analysts

PEOPLE, PAGES, DAYS = 400, 20, 15
MAX_ROWS = 3


def visits_frame(seed: int = 7, people: int = PEOPLE) -> pd.DataFrame:
    """Visits of `people` persons, 1-12 rows each (so bounding to MAX_ROWS matters)."""
    rng = np.random.default_rng(seed)
    rows = rng.integers(1, 13, people)
    pid = np.repeat(np.arange(people), rows)
    n = pid.size
    return pd.DataFrame({
        "person": pid,
        "page": rng.integers(0, PAGES, n),
        "day": rng.integers(0, DAYS, n),
        "device": rng.choice(["phone", "desktop", "tablet"], n),
        "x": rng.normal(0, 1, n),
        "y": rng.normal(0, 1, n),
    })


CONFIG = """
[curator]
ledger = "ledger.sqlite"

[datasets.visits]
source = "visits.parquet"
unit = "person"
max_rows = {max_rows}
total_epsilon = 3.0
mechanisms = ["top_c", "svt", "laplace_stream", "pegasus", "dpcopula", "fit_model", "roc_curve"]
columns.page = {{ kind = "int", domain = [0, {pmax}] }}
columns.day = {{ kind = "int", domain = [0, {dmax}] }}
columns.device = {{ kind = "category", domain = ["phone", "desktop", "tablet"] }}
columns.x = {{ kind = "float", domain = [-3, 3] }}
columns.y = {{ kind = "float", domain = [-3, 3] }}
views.pages = {{ kind = "counts", columns = ["page"], facts = {{ monotonic = true }} }}
views.daily = {{ kind = "per_step", columns = ["day"] }}
views.table = {{ kind = "rows", columns = ["page", "day", "device"], rows = 2000 }}
views.xy = {{ kind = "rows", columns = ["x", "y"], rows = 500 }}

[datasets.other]
source = "other.csv"
total_epsilon = 1.0
columns.page = {{ kind = "int", domain = [0, {pmax}] }}
views.pages = {{ kind = "counts", columns = ["page"] }}
"""


def write_curator(tmp_path, frame: pd.DataFrame | None = None):
    (frame if frame is not None else visits_frame()).to_parquet(tmp_path / "visits.parquet")
    # Other data: the same file declared twice would be one budget (one content, one cap).
    visits_frame(seed=8, people=100)[["page"]].to_csv(tmp_path / "other.csv", index=False)
    path = tmp_path / "curator.toml"
    path.write_text(textwrap.dedent(CONFIG.format(max_rows=MAX_ROWS, pmax=PAGES - 1,
                                                  dmax=DAYS - 1)))
    config = load_config(path)
    analysts = Analysts(config.analysts)
    tokens = {
        "alice": analysts.add("alice", {"visits": 2.0}),
        "bob": analysts.add("bob", {"visits": 2.0}),
        "carol": analysts.add("carol", {"other": 1.0}),
        "owner": analysts.add("owner", {}, owner=True),
    }
    return path, tokens


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, config):
        self.config = config
        self.proc = None
        self.url = ""

    def start(self) -> Server:
        return self.launch([sys.executable, "-m", "dpwidgets.curator.cli"])

    def launch(self, command: list[str], env: dict | None = None) -> Server:
        """Run ``command curator serve --config ... --port ...`` and wait until it answers."""
        port = _free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            [*command, "curator", "serve", "--config", str(self.config), "--port", str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ, **(env or {})})
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(self.proc.stderr.read().decode())
            try:
                if httpx.get(f"{self.url}/v1/health", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError("the curator did not start")

    def kill(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.kill()


@pytest.fixture
def curator(tmp_path):
    """(server, tokens): a running curator on a fresh table, ledger and audit log."""
    path, tokens = write_curator(tmp_path)
    server = Server(path).start()
    try:
        yield server, tokens
    finally:
        server.stop()


def bearer(token: str) -> dict:
    return {"Authorization": f"Bearer {token}"}


@pytest.fixture
def curator_database():
    """The URL of a new, empty database on the test PostgreSQL (``$DPW_POSTGRES_URL``, which
    ``make test`` sets), dropped after the test; skipped without a server."""
    url = os.environ.get("DPW_POSTGRES_URL")
    if not url:
        pytest.skip("DPW_POSTGRES_URL is unset (make test starts PostgreSQL and sets it)")
    import uuid

    import psycopg

    name = f"curator_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    try:
        yield url.rsplit("/", 1)[0] + f"/{name}"
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
