"""Released DP outputs, persisted next to the ledger so that a replay is free across processes.

The store lives where the ledger lives: in the ledger's SQLite file, or, for a PostgreSQL
ledger (curator replicas on several machines), in the same database, so that every replica
replays what any of them released, under one keyed-hash secret.

Only DP outputs are stored (never the data, never an engine result with its secret state). An
output is stored as a JSON skeleton and, for its numeric arrays, one binary blob of ``.npy``
segments (dtype and shape kept, read back with ``allow_pickle=False``: a tampered file cannot
run code), far faster to encode than JSON for a long stream. Rows
written by earlier versions (arrays inlined in the JSON) are still read.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import math
import secrets
import sqlite3
import threading
from collections import OrderedDict
from numbers import Integral, Real

import numpy as np

__all__ = ["ReleaseStore", "canonical", "plain"]


def plain(value):
    """A public detail of a result as a JSON-able value (ints stay ints; arrays are copied).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.persistence import plain
    >>> plain((np.int64(3), np.float32(0.5), "x", None))
    [3, 0.5, 'x', None]
    """
    if isinstance(value, np.ndarray):
        return value.copy()
    if isinstance(value, bool | str) or value is None:
        return value
    if isinstance(value, tuple | list):
        return [plain(v) for v in value]
    if isinstance(value, Integral):
        return int(value)
    if isinstance(value, Real):
        return float(value)
    return str(value)


def to_jsonable(value):
    if isinstance(value, np.ndarray):
        return {
            "__array__": [None if (isinstance(v, float) and not math.isfinite(v)) else v
                          for v in value.tolist()],
            "dtype": str(value.dtype),
        }
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_jsonable(v) for v in value]
    return value


def from_jsonable(value):
    if isinstance(value, dict):
        if "__array__" in value:
            dtype = np.dtype(value["dtype"])
            items = value["__array__"]
            if dtype.kind == "f":
                items = [np.nan if v is None else v for v in items]
            return np.asarray(items, dtype=dtype)
        return {k: from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_jsonable(v) for v in value]
    return value


def _pack(value, blob: io.BytesIO):
    """The JSON skeleton of ``value``; numeric arrays go to ``blob`` as ``.npy`` segments."""
    if isinstance(value, np.ndarray) and value.dtype.kind in "biufcUS":
        start = blob.tell()
        np.save(blob, value, allow_pickle=False)
        return {"__npy__": [start, blob.tell() - start]}
    if isinstance(value, dict):
        return {k: _pack(v, blob) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_pack(v, blob) for v in value]
    return to_jsonable(value)


def _unpack(value, blob: bytes | None):
    if isinstance(value, dict):
        if "__npy__" in value:
            start, length = value["__npy__"]
            return np.load(io.BytesIO(blob[start:start + length]), allow_pickle=False)
        if "__array__" in value:
            return from_jsonable(value)
        return {k: _unpack(v, blob) for k, v in value.items()}
    if isinstance(value, list):
        return [_unpack(v, blob) for v in value]
    return value


def encode_output(output: dict) -> tuple[str, bytes]:
    """An output as (JSON skeleton, binary blob of its arrays)."""
    blob = io.BytesIO()
    skeleton = json.dumps(_pack(output, blob))
    return skeleton, blob.getvalue()


def decode_output(skeleton: str, blob: bytes | None) -> dict:
    """The inverse of :func:`encode_output` (also reads rows with arrays inlined as JSON)."""
    return _unpack(json.loads(skeleton), blob)


def canonical(params: dict) -> str:
    """Parameters as one canonical JSON text: keys sorted, no spaces, NumPy scalars as
    numbers and arrays with their dtype (what release keys and the audit log are made of).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.persistence import canonical
    >>> canonical({"threshold": np.int64(2), "epsilon": 0.5})
    '{"epsilon":0.5,"threshold":2}'
    >>> canonical({"cuts": np.array([0.5, 1.0])})
    '{"cuts":{"__array__":[0.5,1.0],"dtype":"float64"}}'
    """
    return json.dumps(to_jsonable(params), sort_keys=True, separators=(",", ":"))


class ReleaseStore:
    """Released DP outputs, persisted in a ``releases`` table of the ledger's database: its
    SQLite file, or its PostgreSQL database for a ``postgresql://`` ledger URL.

    Examples
    --------
    Two stores on one file (two processes) share the secret release keys are made with, and
    the first output stored under a key is the one every later attempt gets:

    >>> import os, tempfile
    >>> import numpy as np
    >>> from dpwidgets.persistence import ReleaseStore
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
    >>> store, other = ReleaseStore(path), ReleaseStore(path)
    >>> key = store.key('{"mechanism": "svt", "epsilon": 0.5}')
    >>> other.key('{"mechanism": "svt", "epsilon": 0.5}') == key
    True
    >>> row = {"mechanism": "svt", "label": "first", "params": {"epsilon": 0.5},
    ...        "epsilon": 0.5, "output": {"hits": np.array([1, 4])}, "time": 0.0}
    >>> store.put("visits", key, row) is row
    True
    >>> other.get("visits", key)["output"]["hits"]
    array([1, 4])
    >>> other.put("visits", key, {**row, "label": "second"})["label"]
    'first'
    >>> store.close(); other.close()
    """

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS releases (
        dataset TEXT NOT NULL,
        key TEXT NOT NULL,
        mechanism TEXT NOT NULL,
        label TEXT NOT NULL,
        params TEXT NOT NULL,
        epsilon {real} NOT NULL,
        output TEXT NOT NULL,
        created {real} NOT NULL,
        arrays {blob},
        PRIMARY KEY (dataset, key)
    );
    CREATE TABLE IF NOT EXISTS store_secret (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        value {blob} NOT NULL
    );
    """

    # Rows kept in memory (with the teaching-mode engine results). Older ones are evicted: a
    # file-backed store reads them back from SQLite (without the result); an in-memory ledger
    # forgets them, so replaying one is charged afresh -- never less than the truth.
    MEMORY_ROWS = 64

    def __init__(self, path: str):
        self._memory: OrderedDict[tuple[str, str], dict] = OrderedDict()
        self._lock = threading.RLock()
        self._conn = None  # a sqlite3 connection, or the ledger's PostgreSQL backend
        self._ignore = "INSERT OR IGNORE INTO"
        self._suffix = ""
        self.secret = secrets.token_bytes(32)
        if "://" in path:
            self._open_postgres(path)
        elif path != ":memory:":
            from .paths import create_private

            create_private(path)  # it holds the secret and every output: mode 0600
            self._conn = sqlite3.connect(
                path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA busy_timeout = 60000")
            self._conn.executescript(self._SCHEMA.format(real="REAL", blob="BLOB"))
            columns = {r[1] for r in self._conn.execute("PRAGMA table_info(releases)")}
            if "arrays" not in columns:  # a file written before arrays were stored binary
                self._conn.execute("ALTER TABLE releases ADD COLUMN arrays BLOB")
        if self._conn is not None:
            # One secret per ledger, shared by every process (and every replica): release keys
            # are keyed hashes of it, so a key seen through the API is no fingerprint of the
            # data that an analyst could match against guesses.
            self._conn.execute(f"{self._ignore} store_secret (id, value) VALUES (1, ?)"
                               f"{self._suffix}", (self.secret,))
            self.secret = bytes(self._conn.execute(
                "SELECT value FROM store_secret WHERE id = 1").fetchone()[0])

    def _open_postgres(self, url: str) -> None:
        """The store in the ledger's PostgreSQL database (its schema, its connection rules)."""
        from .postgres import PG_SCHEMA, PostgresBackend

        backend = PostgresBackend(url, timeout=60.0)
        backend.execute(f"CREATE SCHEMA IF NOT EXISTS {PG_SCHEMA}")
        for statement in self._SCHEMA.format(real="DOUBLE PRECISION", blob="BYTEA").split(";"):
            if statement.strip():
                backend.execute(statement)
        self._conn = backend
        self._ignore, self._suffix = "INSERT INTO", " ON CONFLICT DO NOTHING"

    def key(self, blob: str) -> str:
        """The cache key of a release description (a keyed hash: see ``secret``)."""
        return hmac.new(self.secret, blob.encode(), hashlib.sha256).hexdigest()

    def get(self, dataset: str, key: str) -> dict | None:
        with self._lock:
            row = self._memory.get((dataset, key))
            if row is not None:
                self._memory.move_to_end((dataset, key))
                return row
            if self._conn is None:
                return None
            got = self._conn.execute(
                "SELECT mechanism, label, params, epsilon, output, created, arrays FROM releases "
                "WHERE dataset = ? AND key = ?",
                (dataset, key),
            ).fetchone()
        if got is None:
            return None
        return {
            "mechanism": got[0],
            "label": got[1],
            "params": from_jsonable(json.loads(got[2])),
            "epsilon": got[3],
            "output": decode_output(got[4], None if got[6] is None else bytes(got[6])),
            "time": got[5],
        }

    def put(self, dataset: str, key: str, row: dict) -> dict:
        """Store ``row`` under ``key`` unless a row is stored there already; return the row
        stored, which is the release: the first one stored wins, so two attempts of one
        release (curator replicas racing on one idempotency key) hand out one output."""
        with self._lock:
            if self._conn is not None:
                skeleton, arrays = encode_output(row["output"])
                inserted = self._conn.execute(
                    f"{self._ignore} releases "
                    "(dataset, key, mechanism, label, params, epsilon, output, created, arrays) "
                    f"VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?){self._suffix}",
                    (dataset, key, row["mechanism"], row["label"], canonical(row["params"]),
                     row["epsilon"], skeleton, row["time"], arrays),
                ).rowcount
                if not inserted:
                    self._memory.pop((dataset, key), None)
                    stored = self.get(dataset, key)
                    if stored is not None:
                        row = stored
            self._memory[(dataset, key)] = row
            self._memory.move_to_end((dataset, key))
            while len(self._memory) > self.MEMORY_ROWS:
                self._memory.popitem(last=False)
            return row

    def close(self) -> None:
        if isinstance(self._conn, sqlite3.Connection):
            self._conn.close()
        elif self._conn is not None:
            self._conn.conn.close()

