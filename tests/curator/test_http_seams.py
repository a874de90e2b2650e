"""The curator's HTTP seams: bodies bounded on the bytes received (chunked too), labels and
parameters that cannot collide or overflow, no 500 without an audit row, an audit export that
opens safely in a spreadsheet, owner-only files, token expiry and revocation, the timing
mitigation (``respond_after``) and a configuration checked field by field."""

from __future__ import annotations

import asyncio
import csv
import datetime
import io
import os
import socket
import stat
import time
from urllib.parse import urlparse

import httpx
import pytest
from fastapi.testclient import TestClient

from dpwidgets.curator import Curator, load_config
from dpwidgets.curator.app import MAX_BODY, create_app
from dpwidgets.curator.cli import main as cli
from dpwidgets.curator.door import Analysts, AuditLog
from dpwidgets.engine.budget import PrivacyLedger
from dpwidgets.session import Session

from .conftest import Server, bearer, write_curator

DAILY = {"dataset": "visits/daily", "mechanism": "laplace_stream", "params": {"epsilon": 0.01}}


@pytest.fixture
def app(tmp_path):
    """(client, tokens, curator, config path): the curator's app in this process."""
    path, tokens = write_curator(tmp_path)
    curator = Curator(load_config(path))
    client = TestClient(create_app(curator), raise_server_exceptions=False)
    yield client, tokens, curator, path
    curator.close()


def _spent(curator) -> tuple[float, int]:
    ledger = PrivacyLedger(curator.config.ledger, dataset="visits")
    return ledger.spent, ledger.count


def _last(curator) -> dict:
    return curator.audit.rows()[-1]


# -- 7. bounded requests ---------------------------------------------------------------------

def test_a_chunked_body_is_cut_off_past_the_limit_whatever_the_headers_say(app):
    client, tokens, curator, _ = app
    chunk = b"x" * (1 << 16)
    sent = []

    async def body():  # a valid JSON object with an 8 MiB label, sent chunked
        head = b'{"dataset": "visits/daily", "mechanism": "laplace_stream", ' \
               b'"params": {"epsilon": 0.01}, "label": "'
        sent.append(len(head))
        yield head
        for _ in range(128):
            sent.append(len(chunk))
            yield chunk
        yield b'"}'

    async def post():
        transport = httpx.ASGITransport(app=client.app)
        async with httpx.AsyncClient(transport=transport, base_url="http://curator") as c:
            return await c.post("/v1/releases", content=body(), headers={
                **bearer(tokens["alice"]), "content-type": "application/json"})

    r = asyncio.run(post())
    assert r.status_code == 413, r.text
    assert str(MAX_BODY) in r.json()["error"]
    # The curator stopped reading one chunk past the limit, not at the end of the body.
    assert sum(sent) <= MAX_BODY + 2 * len(chunk)
    assert _spent(curator) == (0.0, 0)
    row = _last(curator)
    assert row["status"] == 413 and row["analyst"] == "alice"


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmRSS:"))


def _frame(data: bytes) -> bytes:
    return f"{len(data):x}\r\n".encode() + data + b"\r\n"


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/proc/self/status"), reason="reads /proc for memory")
def test_a_live_curator_refuses_a_chunked_40_mib_body_and_keeps_its_memory(curator):
    server, tokens = curator
    url = urlparse(server.url)
    before = _rss_kib(server.proc.pid)
    with socket.create_connection((url.hostname, url.port), timeout=60) as sock:
        sock.sendall(b"POST /v1/releases HTTP/1.1\r\nHost: curator\r\n"
                     b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n"
                     + f"Authorization: Bearer {tokens['alice']}\r\n\r\n".encode())
        # A well-formed request whose label is 40 MiB, with no Content-Length.
        chunk = _frame(b"x" * (1 << 16))
        try:
            sock.sendall(_frame(b'{"dataset": "visits/daily", "mechanism": "laplace_stream", '
                                b'"params": {"epsilon": 0.01}, "label": "'))
            for _ in range(640):
                sock.sendall(chunk)
            sock.sendall(_frame(b'"}') + b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the curator answered and closed before the end: fine
        answer = b""
        try:
            while b"\r\n\r\n" not in answer:
                more = sock.recv(65536)
                if not more:
                    break
                answer += more
        except ConnectionResetError:
            pass
    if answer:  # the 413 may be lost to a reset; the audit row below is not
        assert answer.startswith(b"HTTP/1.1 413"), answer[:200]
    # Nothing was stored: not a spend, not 40 MiB of label; the server did not hold the body.
    grown = _rss_kib(server.proc.pid) - before
    assert grown < 20 * 1024, f"the curator grew by {grown} KiB"
    budget = httpx.get(f"{server.url}/v1/budget", headers=bearer(tokens["alice"])).json()
    assert budget["budgets"]["visits"]["count"] == 0
    log = httpx.get(f"{server.url}/v1/audit", headers=bearer(tokens["owner"])).text
    assert '"status": 413' in log


@pytest.mark.parametrize("label", ["x" * (MAX_BODY // 2), "x" * 201, "line\nbreak", "",
                                   "\x1b[2J"])
def test_a_label_is_short_and_printable_or_nothing_is_charged(app, label):
    client, tokens, curator, _ = app
    r = client.post("/v1/releases", json={**DAILY, "label": label},
                    headers=bearer(tokens["alice"]))
    assert r.status_code == 400 and "label" in r.json()["error"], r.text
    assert _spent(curator) == (0.0, 0)
    row = _last(curator)
    assert row["status"] == 400 and "label" in row["message"]
    assert len(row["message"]) < 500  # the label itself is not copied into the log


@pytest.mark.parametrize("endpoint", ["/v1/releases", "/v1/cost", "/v1/cached"])
@pytest.mark.parametrize("name", ["run", "label", "dataset", "mechanism", "idempotency_key"])
def test_parameters_cannot_name_the_requests_own_fields(app, endpoint, name):
    client, tokens, curator, _ = app
    body = {**DAILY, "params": {"epsilon": 0.01, name: "visits/pages"}}
    r = client.post(endpoint, json=body, headers=bearer(tokens["alice"]))
    assert r.status_code == 400 and name in r.json()["error"], r.text
    row = _last(curator)
    assert row["status"] == 400 and name in row["params"]  # what was asked is recorded
    assert row["dataset"] == "visits/daily" and row["mechanism"] == "laplace_stream"
    assert _spent(curator) == (0.0, 0)


@pytest.mark.parametrize("endpoint", ["/v1/releases", "/v1/cost"])
@pytest.mark.parametrize("epsilon", [4e8, 1e9])  # x 3 rows a person: past the 1e9 bound
def test_a_cost_past_the_bound_is_refused_as_a_bad_request(app, endpoint, epsilon):
    client, tokens, curator, _ = app
    body = {**DAILY, "params": {"epsilon": epsilon}}
    r = client.post(endpoint, json=body, headers=bearer(tokens["alice"]))
    assert r.status_code == 400 and "cost" in r.json()["error"], r.text
    assert _last(curator)["status"] == 400
    assert _spent(curator) == (0.0, 0)


@pytest.mark.parametrize("run", ["abc", 1.5, -1, True, [1], 2**60])
def test_run_is_a_bounded_integer_on_every_endpoint(app, run):
    client, tokens, curator, _ = app
    for endpoint in ("/v1/cached", "/v1/releases"):
        r = client.post(endpoint, json={**DAILY, "run": run}, headers=bearer(tokens["alice"]))
        assert r.status_code == 400 and "run" in r.json()["error"], (endpoint, r.text)
        assert _last(curator)["status"] == 400
    assert _spent(curator) == (0.0, 0)


def test_an_unexpected_failure_is_a_fixed_500_and_audited(app, monkeypatch):
    client, tokens, curator, _ = app

    def boom(self, *args, **kwargs):
        raise RuntimeError("secret 31337 from inside the curator")

    for endpoint, method in (("/v1/cost", "cost"), ("/v1/cached", "is_cached")):
        monkeypatch.setattr(Session, method, boom)
        before = len(curator.audit.rows())
        r = client.post(endpoint, json=DAILY, headers=bearer(tokens["alice"]))
        assert r.status_code == 500
        assert "31337" not in r.text and "RuntimeError" not in r.text
        rows = curator.audit.rows()
        assert len(rows) == before + 1
        assert rows[-1]["status"] == 500 and rows[-1]["analyst"] == "alice"
        assert "31337" not in rows[-1]["message"]


def test_malformed_bodies_and_missing_releases_are_audited(app):
    client, tokens, curator, _ = app
    h = {**bearer(tokens["alice"]), "content-type": "application/json"}
    for do in (lambda: client.post("/v1/releases", content=b"{{{{", headers=h),
               lambda: client.get("/v1/releases/visits/nope", headers=h),
               lambda: client.get("/v1/audit", headers=h),
               lambda: client.post("/v1/cost", content=b"1" * 64,
                                   headers={**h, "content-length": "x"})):
        before = len(curator.audit.rows())
        r = do()
        assert 400 <= r.status_code < 500, r.text
        assert len(curator.audit.rows()) == before + 1
    # Too deep for the JSON parser: a 400 that says so, audited.
    r = client.post("/v1/releases", content=b"[" * 200_000 + b"]" * 200_000, headers=h)
    assert r.status_code == 400 and "JSON" in r.json()["error"]
    assert _last(curator)["status"] == 400 and "JSON" in _last(curator)["message"]


# -- 8. the audit export ------------------------------------------------------------------------

FORMULAS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+1", "-2+3", "@SUM(A1)", "\t=1", "\r=1",
            "  =1+1", " \t@x", "\uff1d1+1"]


def test_the_csv_export_neutralises_formulas_and_gives_iso_times(app):
    client, tokens, curator, _ = app
    h = bearer(tokens["alice"])
    for text in FORMULAS:
        client.post("/v1/cost", json={"dataset": text, "mechanism": "top_c",
                                      "params": {"epsilon": 0.1}}, headers=h)
        client.post("/v1/releases", json={**DAILY, "params": {"epsilon": 0.01, "x": text}},
                    headers={**h, "Idempotency-Key": text.strip().encode("ascii", "ignore")
                             .decode() or "=k"})
    log = client.get("/v1/audit", params={"format": "csv"}, headers=bearer(tokens["owner"]))
    rows = list(csv.DictReader(io.StringIO(log.text)))
    assert len(rows) >= 2 * len(FORMULAS)
    for row in rows:
        for column, cell in row.items():
            if cell.startswith("'"):
                continue
            assert cell[:1] not in ("\t", "\r"), (column, cell)
            assert not cell.lstrip().startswith(("=", "+", "-", "@", "\uff1d")), (column, cell)
        when = datetime.datetime.fromisoformat(row["time"].replace("Z", "+00:00"))
        assert when.utcoffset() == datetime.timedelta(0)
        assert abs(when.timestamp() - time.time()) < 600
    # The formulas are still there, readable, after the quote.
    datasets = {r["dataset"] for r in rows}
    assert "'" + FORMULAS[0] in datasets and "'  =1+1" in datasets


def test_refusals_on_cost_and_cached_record_what_was_asked(app):
    client, tokens, curator, _ = app
    h = bearer(tokens["alice"])
    for endpoint in ("/v1/cost", "/v1/cached"):
        body = {"dataset": "visits/pages", "mechanism": "top_c",
                "params": {"epsilon": -1.0, "c": 3, "note": "y" * 50_000}}
        r = client.post(endpoint, json=body, headers=h)
        assert r.status_code == 400
        row = _last(curator)
        assert row["dataset"] == "visits/pages" and row["mechanism"] == "top_c"
        assert '"epsilon":-1.0' in row["params"].replace(" ", "")
        assert len(row["params"]) <= AuditLog.MAX_TEXT + 1  # bounded in size


# -- 9. files and surfaces ------------------------------------------------------------------------

def test_the_audit_database_and_its_journal_are_owner_only(tmp_path):
    old = os.umask(0o022)
    try:
        log = AuditLog(tmp_path / "audit" / "audit.sqlite")
        log.record(analyst="a", dataset="d", mechanism="m", params={}, epsilon=None,
                   outcome="bad request", status=400)
        log.close()
    finally:
        os.umask(old)
    for name in ("audit.sqlite", "audit.sqlite-journal"):
        path = tmp_path / "audit" / name
        assert path.exists(), name
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, name


@pytest.mark.parametrize("host, warned", [("0.0.0.0", True), ("192.168.1.5", True),
                                          ("::", True), ("127.0.0.1", False),
                                          ("localhost", False), ("::1", False)])
def test_serving_off_the_loopback_warns_about_tls(tmp_path, monkeypatch, capsys, host, warned):
    import uvicorn

    path, _ = write_curator(tmp_path)
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: None)
    assert cli(["curator", "serve", "--config", str(path), "--host", host]) == 0
    err = capsys.readouterr().err
    assert ("TLS" in err and "reverse proxy" in err) == warned, err


def test_the_docs_say_what_is_exposed_and_what_is_not(app):
    client, *_ = app
    info = client.get("/v1/openapi.json").json()["info"]
    assert "Not exposed" in info["description"] and "Exposed" in info["description"]
    assert client.get("/v1/docs").status_code == 200


def test_an_expired_token_is_refused_and_audited(app):
    client, tokens, curator, path = app
    config = load_config(path)
    token = Analysts(config.analysts).add("dave", {"visits": 1.0}, expires=time.time() + 1.5)
    h = bearer(token)
    assert client.get("/v1/datasets", headers=h).status_code == 200
    time.sleep(1.6)
    r = client.get("/v1/datasets", headers=h)
    assert r.status_code == 401 and "expired" in r.json()["error"]
    row = _last(curator)
    assert row["status"] == 401 and row["analyst"] == "dave" and row["outcome"] == "expired"


def test_add_analyst_takes_an_expiry_as_a_date_or_a_duration(tmp_path, capsys):
    path, _ = write_curator(tmp_path)
    config = load_config(path)
    now = time.time()
    for expires, low, high in (("30d", now + 30 * 86400 - 5, now + 30 * 86400 + 60),
                               ("PT2H", now + 7200 - 5, now + 7200 + 60),
                               ("2999-01-01", 32472144000 - 1, 32472144000 + 1),
                               ("2999-01-01T12:00:00Z", 32472187200 - 1, 32472187200 + 1)):
        assert cli(["curator", "add-analyst", "erin", "--config", str(path), "--cap",
                    "visits=1", "--expires", expires]) == 0
        assert low <= Analysts(config.analysts)._load()["erin"]["expires"] <= high
    for bad in ("yesterday", "2000-01-01", "-5d", "0s"):
        with pytest.raises(SystemExit, match="--expires"):
            cli(["curator", "add-analyst", "erin", "--config", str(path), "--cap", "visits=1",
                 f"--expires={bad}"])
    capsys.readouterr()


def test_revocation_takes_effect_without_a_restart(app, capsys):
    client, tokens, curator, path = app
    h = bearer(tokens["bob"])
    assert client.get("/v1/budget", headers=h).status_code == 200
    assert cli(["curator", "revoke", "bob", "--config", str(path)]) == 0
    r = client.get("/v1/budget", headers=h)
    assert r.status_code == 401 and "revoked" in r.json()["error"]
    assert _last(curator)["outcome"] == "revoked"
    assert client.get("/v1/budget", headers=bearer(tokens["alice"])).status_code == 200
    with pytest.raises(SystemExit, match="nobody"):
        cli(["curator", "revoke", "nobody", "--config", str(path)])
    capsys.readouterr()


# -- 10. timing ---------------------------------------------------------------------------------

QUANTUM = 0.2


def test_releases_leave_on_the_respond_after_grid(tmp_path, monkeypatch):
    path, tokens = write_curator(tmp_path)
    path.write_text(path.read_text().replace(
        "total_epsilon = 3.0\n", f"total_epsilon = 3.0\nrespond_after = {QUANTUM}\n"))
    curator = Curator(load_config(path))
    client = TestClient(create_app(curator))
    h = bearer(tokens["alice"])
    real = Session._run_sealed
    delay = {"s": 0.0}

    def slow(self, *args, **kwargs):
        time.sleep(delay["s"])
        return real(self, *args, **kwargs)

    monkeypatch.setattr(Session, "_run_sealed", slow)
    try:
        client.post("/v1/releases", json={**DAILY, "run": 99}, headers=h)  # warm the engine
        # A fast run leaves at one quantum; a run of over 1.3 quanta at two or more, and on
        # the grid: past a multiple by no more than the test client's own time (slack 0.12 s
        # for a loaded 2-core machine; an unpadded run lands anywhere in the quantum).
        for run, (pause, multiple) in enumerate(((0.0, 1), (1.3 * QUANTUM, 2))):
            delay["s"] = pause
            t = time.monotonic()
            r = client.post("/v1/releases", json={**DAILY, "run": run}, headers=h)
            took = time.monotonic() - t
            assert r.status_code == 200, r.text
            assert took >= multiple * QUANTUM, took
            assert took % QUANTUM < 0.12, took  # past the last multiple by the overhead
        t = time.monotonic()
        r = client.post("/v1/releases", json={**DAILY, "params": {"epsilon": -1}}, headers=h)
        assert r.status_code == 400 and time.monotonic() - t >= QUANTUM
        # Other datasets are not held back.
        t = time.monotonic()
        client.post("/v1/cost", json=DAILY, headers=h)
        assert time.monotonic() - t < QUANTUM
    finally:
        curator.close()


# -- 4. the configuration, field by field ----------------------------------------------------

BAD = [
    ('mechanisms = ["top_c", "svt", "laplace_stream", "pegasus", "dpcopula", "fit_model", '
     '"roc_curve"]', 'mechanisms = "svt"', "datasets.visits.mechanisms"),
    ("total_epsilon = 3.0", "total_epsilon = nan", "datasets.visits.total_epsilon"),
    ("total_epsilon = 3.0", "total_epsilon = -3.0", "datasets.visits.total_epsilon"),
    ("total_epsilon = 3.0", 'total_epsilon = "3.0"', "datasets.visits.total_epsilon"),
    ("total_epsilon = 3.0", "total_epsilon = true", "datasets.visits.total_epsilon"),
    ("total_epsilon = 3.0", "total_epsilon = inf", "datasets.visits.total_epsilon"),
    ("max_rows = 3", "max_rows = 3.0", "datasets.visits.max_rows"),
    ("max_rows = 3", 'max_rows = "3"', "datasets.visits.max_rows"),
    ("max_rows = 3", "max_rows = 3\ndistinct = \"false\"", "datasets.visits.distinct"),
    ("max_rows = 3", "max_rows = 3\nrespond_after = -1", "datasets.visits.respond_after"),
    ("max_rows = 3", "max_rows = 3\nrespond_after = \"2\"", "datasets.visits.respond_after"),
    ("max_rows = 3", "max_rows = 3\ntotal_epsilon_typo = 1", "datasets.visits: unknown"),
    ('unit = "person"', "unit = 7", "datasets.visits.unit"),
    ('source = "visits.parquet"', "source = 3", "datasets.visits.source"),
    ("rows = 500", 'rows = "500"', "datasets.visits.views.xy.rows"),
    ('views.daily = { kind = "per_step", columns = ["day"] }',
     'views.daily = { kind = "per_step", columns = "day" }', "datasets.visits.views.daily"),
    ('ledger = "ledger.sqlite"', "ledger = 3", "[curator] ledger"),
    ('ledger = "ledger.sqlite"', 'ledger = "ledger.sqlite"\nclaim_lease = nan',
     "claim_lease"),
]


@pytest.mark.parametrize("old, new, field", BAD, ids=[b[2] + ":" + b[1][-12:] for b in BAD])
def test_every_config_field_is_typed_and_the_error_names_it(tmp_path, old, new, field):
    path, _ = write_curator(tmp_path)
    text = path.read_text()
    assert text.count(old) >= 1, old
    path.write_text(text.replace(old, new, 1))
    with pytest.raises(ValueError) as info:
        load_config(path)
    assert field in str(info.value)


def test_respond_after_is_read_per_dataset(tmp_path):
    path, _ = write_curator(tmp_path)
    path.write_text(path.read_text().replace("total_epsilon = 3.0\n",
                                             "total_epsilon = 3.0\nrespond_after = 1.5\n"))
    config = load_config(path)
    assert config.datasets["visits"].respond_after == 1.5
    assert config.datasets["other"].respond_after is None


def test_a_declared_fact_as_a_string_is_refused(tmp_path):
    # "false" is a (truthy) string, not a boolean: the catalog's fact check refuses it.
    path, _ = write_curator(tmp_path)
    path.write_text(path.read_text().replace("facts = { monotonic = true }",
                                             'facts = { monotonic = "false" }'))
    with pytest.raises(ValueError, match="monotonic"):
        load_config(path)


def test_a_live_curator_starts_with_the_checked_config(tmp_path):
    # The checks refuse bad fields, not the configuration every other test serves.
    path, tokens = write_curator(tmp_path)
    server = Server(path).start()
    try:
        r = httpx.post(f"{server.url}/v1/cost", json=DAILY, headers=bearer(tokens["alice"]))
        assert r.status_code == 200 and r.json()["epsilon"] == pytest.approx(0.03)
    finally:
        server.stop()
