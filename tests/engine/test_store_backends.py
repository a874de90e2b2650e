"""The release store on both ledger backends: a SQLite file and a PostgreSQL database.

What one process (or one curator replica, on another machine) released is replayed by every
other for free, with the same bytes, because the store and its keyed-hash secret live with the
ledger. Runs on a real PostgreSQL (``make test`` starts one; see tests/engine/test_budget.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.store import ReleaseStore

from . import test_budget

ledger_url = test_budget.ledger_url
postgres_url = test_budget.postgres_url
postgres_server = test_budget.postgres_server


def _row(output: dict) -> dict:
    return {"mechanism": "laplace_stream", "label": "test", "params": {"epsilon": 0.5},
            "epsilon": 0.5, "output": output, "time": 1.0}


def test_two_stores_on_one_ledger_share_secret_and_rows(ledger_url):
    a, b = ReleaseStore(ledger_url), ReleaseStore(ledger_url)
    try:
        assert a.secret == b.secret and len(a.secret) == 32
        key = a.key("some release")
        assert key == b.key("some release")
        noisy = np.array([1.5, -2.0, np.nan, 7.25])
        a.put("visits", key, _row({"noisy": noisy, "counts": np.arange(3), "guarantee": "x"}))
        got = b.get("visits", key)  # another connection: read from the database
        assert got is not None and got["epsilon"] == 0.5 and got["output"]["guarantee"] == "x"
        np.testing.assert_array_equal(got["output"]["noisy"], noisy)
        assert got["output"]["counts"].dtype == np.arange(3).dtype
        # The first row of a key stays: a second put is ignored, never overwritten.
        b.put("visits", key, _row({"noisy": np.zeros(4), "guarantee": "y"}))
        assert ReleaseStore(ledger_url).get("visits", key)["output"]["guarantee"] == "x"
        assert b.get("visits", "no such key") is None
    finally:
        a.close()
        b.close()


def test_an_analyst_release_is_replayed_free_by_another_session(ledger_url):
    # Two analyst sessions on one ledger (two kernels, or two curator replicas): the second
    # asks for the same release and gets the first one's output, charged once.
    counts = np.random.default_rng(4).poisson(20, 300).astype(float)
    first = Session(mode="analyst", ledger=ledger_url)
    first.add_dataset("visits", counts, total_epsilon=2.0, stand_in=np.full(300, 20.0))
    released = first.release("visits", "laplace_stream", epsilon=0.5)
    second = Session(mode="analyst", ledger=ledger_url)
    second.add_dataset("visits", counts, total_epsilon=2.0, stand_in=np.full(300, 20.0))
    again = second.release("visits", "laplace_stream", epsilon=0.5)
    np.testing.assert_array_equal(again.output["estimates"], released.output["estimates"])
    assert second.spent("visits") == pytest.approx(0.5)
    first.close()
    second.close()
