"""The curator over real HTTP: refusals decided before the data, nothing charged for them, the
analyst's side unchanged, user-level guarantees, replays across analysts, the audit log."""

from __future__ import annotations

import io
import json

import httpx
import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session
from dpwidgets.engine.budget import BudgetExceededError
from dpwidgets.engine.errors import ParameterError, PrivacyPolicyError

from .conftest import MAX_ROWS, PAGES, bearer

pytestmark = pytest.mark.slow


def _budget(server, token) -> dict:
    r = httpx.get(f"{server.url}/v1/budget", headers=bearer(token))
    assert r.status_code == 200
    return r.json()["budgets"]


def _release(server, token, body, **headers):
    return httpx.post(f"{server.url}/v1/releases", json=body,
                      headers={**bearer(token), **headers}, timeout=60)


TOP = {"dataset": "visits/pages", "mechanism": "top_c", "params": {"epsilon": 0.05, "c": 3}}


def test_tokens_datasets_and_mechanisms_are_checked_first(curator):
    server, tokens = curator
    assert httpx.get(f"{server.url}/v1/datasets").status_code == 401
    r = httpx.get(f"{server.url}/v1/datasets", headers=bearer("not-a-token"))
    assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
    assert _release(server, "wrong", TOP).status_code == 401
    # carol has a cap on "other" only: visits is another analyst's dataset.
    assert _release(server, tokens["carol"], TOP).status_code == 403
    r = _release(server, tokens["alice"], {**TOP, "mechanism": "reconstruction"})
    assert r.status_code == 403 and "does not allow" in r.json()["error"]
    names = [d["name"] for d in httpx.get(f"{server.url}/v1/datasets",
                                           headers=bearer(tokens["alice"])).json()["datasets"]]
    assert names == ["visits/pages", "visits/daily", "visits/table", "visits/xy"]
    assert _budget(server, tokens["alice"])["visits"]["spent"] == 0


@pytest.mark.parametrize("body, where", [
    ({**TOP, "params": {"epsilon": 0.05, "c": 3, "colour": 1}}, "colour"),
    ({**TOP, "params": {"epsilon": 0.05, "c": 3, "monotonic": False}}, "monotonic"),
    ({**TOP, "params": {"epsilon": 0.05, "c": 3, "sensitivity": 0.001}}, "sensitivity"),
    ({**TOP, "params": {"epsilon": 0.05, "c": 3, "unit": "row"}}, "unit"),
    ({**TOP, "params": {"epsilon": 0.05, "c": 10**9}}, "c"),
    ({**TOP, "params": {"epsilon": "lots", "c": 3}}, "epsilon"),
    ({**TOP, "params": {"epsilon": 0.05, "c": [1] * 200_000}}, "params"),
    ({**TOP, "extra": 1}, "extra"),
    ({"dataset": "visits/pages", "mechanism": "nope", "params": {"epsilon": 0.1}}, "mechanism"),
])
def test_bad_requests_are_400_naming_the_argument_and_charge_nothing(curator, body, where):
    server, tokens = curator
    r = _release(server, tokens["alice"], body)
    assert r.status_code == 400, r.text
    assert where in r.json()["error"]
    assert _budget(server, tokens["alice"])["visits"]["spent"] == 0


@pytest.mark.parametrize("raw", [
    b'{"dataset": "visits/pages", "mechanism": "top_c", "params": {"epsilon": NaN, "c": 3}}',
    b'{"dataset": "visits/pages", "mechanism": "top_c", "params": {"epsilon": Infinity}}',
    b'{"dataset": "visits/pages", ',
    b'[1, 2, 3]',
])
def test_malformed_json_and_non_finite_numbers_are_400(curator, raw):
    server, tokens = curator
    r = httpx.post(f"{server.url}/v1/releases", content=raw,
                   headers={**bearer(tokens["alice"]), "content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert _budget(server, tokens["alice"])["visits"]["spent"] == 0


def test_over_budget_names_what_is_left_and_charges_nothing(curator):
    server, tokens = curator
    r = _release(server, tokens["alice"], {**TOP, "params": {"epsilon": 1.0, "c": 3}})
    assert r.status_code == 409
    body = r.json()
    # One person contributes up to MAX_ROWS rows: epsilon 1 per row costs MAX_ROWS.
    assert body["requested"] == pytest.approx(MAX_ROWS * 1.0)
    assert body["remaining"] == pytest.approx(2.0)
    assert "2" in body["error"]
    assert _budget(server, tokens["alice"])["visits"]["spent"] == 0


def test_remote_session_previews_locally_and_releases_on_the_curator(curator):
    server, tokens = curator
    s = Session.connect(server.url, token=tokens["alice"])
    assert s.mode == "analyst" and s.datasets[0] == "visits/pages"
    assert s.shape("visits/pages") == (PAGES,) and s.unit("visits/pages") == "person"
    assert s.cost("visits/pages", "top_c", epsilon=0.05, c=3) == pytest.approx(0.05 * MAX_ROWS)
    preview = s.preview("visits/pages", "top_c", epsilon=0.05, c=3)
    assert preview.preview and not preview.charged
    assert _budget(server, tokens["alice"])["visits"]["spent"] == 0
    r = s.release("visits/pages", "top_c", epsilon=0.05, c=3)
    assert r.charged and r.epsilon == pytest.approx(0.15)
    assert "user-level" in r.guarantee and f"{MAX_ROWS} rows" in r.guarantee
    assert set(r.output["selected"]) <= set(range(PAGES))
    assert s.spent("visits/pages") == pytest.approx(0.15)
    assert s.remaining("visits/daily") == pytest.approx(2.0 - 0.15)  # one budget per dataset
    # The meter reads the curator's ledger for this analyst.
    meter = s.meter
    meter.refresh()
    assert meter.budgets[0]["spent"] == pytest.approx(0.15)
    # Refusals raise the same exceptions as a local session, before the data is read.
    with pytest.raises(BudgetExceededError):
        s.release("visits/pages", "top_c", epsilon=1.0, c=3)
    with pytest.raises(ParameterError):
        s.release("visits/pages", "top_c", epsilon=0.05, c=0)
    with pytest.raises(PrivacyPolicyError):
        s.add_dataset("mine", np.arange(10.0))
    assert s.spent("visits/pages") == pytest.approx(0.15)
    s.close()


def test_replays_are_free_across_analysts_and_kernels(curator):
    server, tokens = curator
    a = Session.connect(server.url, token=tokens["alice"])
    first = a.release("visits/daily", "laplace_stream", epsilon=0.05)
    b = Session.connect(server.url, token=tokens["bob"])
    assert b.is_cached("visits/daily", "laplace_stream", epsilon=0.05)
    again = b.release("visits/daily", "laplace_stream", epsilon=0.05)
    assert not again.charged and b.spent("visits/daily") == 0
    np.testing.assert_array_equal(again.output["estimates"], first.output["estimates"])
    fresh = b.release("visits/daily", "laplace_stream", epsilon=0.05, run=1)
    assert fresh.charged
    # The dataset's cap is shared: what alice and bob spent is gone for both.
    assert _budget(server, tokens["alice"])["visits"]["dataset_remaining"] == pytest.approx(
        3.0 - 2 * 0.05 * MAX_ROWS)


def test_synthetic_data_uses_the_declared_domains(curator):
    server, tokens = curator
    s = Session.connect(server.url, token=tokens["alice"])
    r = s.release("visits/table", "dpcopula", epsilon=0.1)
    assert r.charged and r.epsilon == pytest.approx(0.1 * MAX_ROWS)
    # A client cannot pass domains: they are the owner's.
    with pytest.raises(ParameterError):
        s.release("visits/table", "dpcopula", epsilon=0.1, domains={"page": (0, 5)})


def test_downloads_and_audit_log(curator):
    server, tokens = curator
    s = Session.connect(server.url, token=tokens["alice"])
    r = s.release("visits/pages", "top_c", epsilon=0.05, c=3)
    table = pd.read_csv(io.BytesIO(s.download(r, "csv")))
    np.testing.assert_array_equal(table["selected"], r.output["selected"])
    parquet = pd.read_parquet(io.BytesIO(s.download(r, "parquet")))
    np.testing.assert_array_equal(parquet["selected"], r.output["selected"])
    side = httpx.get(f"{server.url}/v1/releases/{r.dataset}/{r.key}",
                     headers=bearer(tokens["alice"])).json()
    assert side["mechanism"] == "top_c" and side["epsilon"] == pytest.approx(0.15)
    # carol cannot download alice's release; analysts cannot read the audit log.
    assert httpx.get(f"{server.url}/v1/releases/{r.dataset}/{r.key}",
                     headers=bearer(tokens["carol"])).status_code == 403
    assert httpx.get(f"{server.url}/v1/audit", headers=bearer(tokens["alice"])).status_code == 403
    _release(server, tokens["alice"], {**TOP, "params": {"epsilon": 9.0, "c": 3}})
    log = httpx.get(f"{server.url}/v1/audit", params={"format": "csv"},
                    headers=bearer(tokens["owner"]))
    rows = pd.read_csv(io.StringIO(log.text))
    assert {"released", "over budget"} <= set(rows["outcome"])
    assert set(rows.loc[rows.outcome == "released", "analyst"]) == {"alice"}


def test_the_meter_follows_the_curators_ledger_across_kernels(curator):
    import time

    server, tokens = curator
    watcher = Session.connect(server.url, token=tokens["alice"])
    meter = watcher.meter
    assert meter.budget("visits/pages")["spent"] == 0
    other_kernel = Session.connect(server.url, token=tokens["alice"])
    other_kernel.release("visits/pages", "top_c", epsilon=0.05, c=3)
    deadline = time.monotonic() + 10
    while meter.budget("visits/pages")["spent"] == 0 and time.monotonic() < deadline:
        time.sleep(0.2)
    assert meter.budget("visits/pages")["spent"] == pytest.approx(0.05 * MAX_ROWS)
    meter.close()
    assert meter._follow is None


def test_the_demo_curator_starts_with_one_command(tmp_path):
    import re
    import subprocess
    import sys
    import time

    from .conftest import _free_port

    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "dpwidgets.curator.cli", "curator", "demo", "--dir",
         str(tmp_path / "demo"), "--port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        printed = "".join(proc.stdout.readline() for _ in range(3))
        token = re.search(r"token='([^']+)'", printed).group(1)
        deadline = time.monotonic() + 60
        while True:
            try:
                session = Session.connect(f"http://127.0.0.1:{port}", token=token)
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.2)
        assert session.datasets == ["visits/pages", "visits/daily", "visits/table"]
        assert session.release("visits/pages", "top_c", epsilon=0.05, c=3).charged
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_dp_fit_takes_the_declared_ranges(curator):
    server, tokens = curator
    s = Session.connect(server.url, token=tokens["alice"])
    fit = s.release("visits/xy", "fit_model", epsilon=0.1)
    assert fit.charged and fit.params["bounds_y"] == [-3.0, 3.0]
    assert fit.epsilon == pytest.approx(0.1 * MAX_ROWS)


def test_a_download_carries_the_whole_release(curator, tmp_path):
    """A synthetic release downloaded as a zip reads back as exactly what was released, with
    its guarantee; its records are the principal table, every other field a file of its own."""
    import zipfile

    from dpwidgets.export import load_release

    server, tokens = curator
    s = Session.connect(server.url, token=tokens["alice"])
    r = s.release("visits/table", "dpcopula", epsilon=0.1)
    with zipfile.ZipFile(io.BytesIO(s.download(r, "zip"))) as archive:
        archive.extractall(tmp_path)
    back = load_release(next(tmp_path.glob("*.csv.json")))
    assert back["guarantee"] == r.guarantee and "per person" in back["guarantee"]
    assert back["mechanism"] == "dpcopula" and back["ledger_key"] == r.key
    for name, column in r.output["data"].items():
        np.testing.assert_array_equal(back["output"]["data"][name], column)
        assert back["output"]["data"][name].dtype == column.dtype
    np.testing.assert_array_equal(back["output"]["correlation"], r.output["correlation"])
    assert set(back["output"]) == set(r.output)
    records = pd.read_csv(io.BytesIO(s.download(r, "csv")))
    assert len(records) == r.output["n_rows"] and set(r.output["data"]) <= set(records.columns)
    side = json.loads(s.download(r, "json"))
    margins = pd.read_csv(io.BytesIO(s.download(r, "csv", file=side["files"][1])))
    assert not margins.isna().any().any()
    with pytest.raises(ParameterError):
        s.download(r, "csv", file="../ledger.sqlite")
