"""The curator's door: one analyst-mode :class:`~dpwidgets.Session` per analyst, over views of
tables that stay where they live, with a ledger per dataset and per analyst.

Nothing about a request is taken from the analyst but the mechanism's own parameters: the
dataset's facts, domains, privacy unit and bound come from the owner's configuration. Each
release is charged, in one transaction, to the dataset's cap (shared by every analyst) and to
the analyst's own cap on it, before the data is read.

Idempotency: the client sends a key with each release. A retry with the same key charges
nothing again; if the first attempt's output was stored it is replayed, if it failed on the
data the failure is repeated (never rerun for free), and if the curator died before either
(the output never left it) the release runs once more under the charge already recorded.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import sqlite3
import threading
import time
from pathlib import Path

from ..catalog import _FAILED, Entry
from ..engine.budget import BudgetExceededError, LedgerView, PrivacyLedger
from ..engine.errors import ReleaseFailed
from ..session import Session
from ..store import ReleaseStore, canonical
from ..tables import view_entries
from .config import CuratorConfig

__all__ = ["Analysts", "AuditLog", "Curator", "JointLedger"]

class Analysts:
    """The analysts file: names, hashed bearer tokens, roles and caps per dataset.

    Tokens are 256-bit random strings shown once; only their SHA-256 is stored (a token has
    full entropy, so a plain hash cannot be brute-forced). The file is re-read when it changes,
    so an analyst added while the curator runs can connect at once.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp = None
        self._records: dict[str, dict] = {}

    def _load(self) -> dict[str, dict]:
        try:
            stamp = self.path.stat().st_mtime_ns
        except FileNotFoundError:
            return {}
        with self._lock:
            if stamp != self._stamp:
                self._records = json.loads(self.path.read_text())
                self._stamp = stamp
            return self._records

    def add(self, name: str, caps: dict[str, float], *, owner: bool = False) -> str:
        """Add (or re-key) an analyst; returns the new token, which is stored only hashed."""
        if not isinstance(name, str) or not name.strip() or "@" in name or "/" in name:
            raise ValueError(f"an analyst's name is a non-empty string without '@' or '/', "
                             f"got {name!r}")
        token = secrets.token_urlsafe(32)
        records = dict(self._load())
        records[name] = {"token_sha256": hashlib.sha256(token.encode()).hexdigest(),
                         "caps": {k: float(v) for k, v in caps.items()},
                         "role": "owner" if owner else "analyst", "created": time.time()}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "w") as fh:
            json.dump(records, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        os.replace(tmp, self.path)
        return token

    def who(self, token: str | None) -> tuple[str, dict] | None:
        """The analyst a bearer token belongs to, or ``None`` (compared in constant time)."""
        if not token:
            return None
        digest = hashlib.sha256(token.encode()).hexdigest()
        found = None
        for name, record in self._load().items():
            if hmac.compare_digest(digest, record.get("token_sha256", "")):
                found = (name, record)
        return found


class AuditLog:
    """Every request the curator answered: who, what, ε, parameters, outcome, when.

    One SQLite file in rollback-journal mode with ``synchronous=FULL`` (a committed row
    survives a crash); the owner exports it with :meth:`export`."""

    _SCHEMA = """CREATE TABLE IF NOT EXISTS audit (
        id INTEGER PRIMARY KEY, time REAL NOT NULL, analyst TEXT, dataset TEXT,
        mechanism TEXT, params TEXT, epsilon REAL, outcome TEXT NOT NULL, status INTEGER,
        message TEXT, idempotency_key TEXT)"""
    COLUMNS = ("id", "time", "analyst", "dataset", "mechanism", "params", "epsilon",
               "outcome", "status", "message", "idempotency_key")

    def __init__(self, path: Path):
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(str(path), check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._conn.execute("PRAGMA journal_mode = TRUNCATE")
            self._conn.execute("PRAGMA synchronous = FULL")
            self._conn.execute("PRAGMA busy_timeout = 60000")
            self._conn.execute(self._SCHEMA)
            self._conn.execute("CREATE INDEX IF NOT EXISTS audit_key ON audit "
                               "(analyst, idempotency_key)")

    def record(self, *, analyst, dataset, mechanism, params, epsilon, outcome, status,
               message="", key=None) -> None:
        try:
            text = canonical(params) if isinstance(params, dict) else None
        except (TypeError, ValueError):
            text = None
        with self._lock:
            self._conn.execute(
                "INSERT INTO audit (time, analyst, dataset, mechanism, params, epsilon, outcome,"
                " status, message, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (time.time(), analyst, dataset, mechanism, text, epsilon, outcome, status,
                 message[:2000], key))

    def failed(self, analyst: str, key: str) -> bool:
        """Whether this analyst's release with this idempotency key failed on the data."""
        with self._lock:
            row = self._conn.execute(
                "SELECT 1 FROM audit WHERE analyst = ? AND idempotency_key = ? AND "
                "outcome = 'failed'", (analyst, key)).fetchone()
        return row is not None

    def rows(self) -> list[dict]:
        with self._lock:
            rows = self._conn.execute(
                f"SELECT {', '.join(self.COLUMNS)} FROM audit ORDER BY id").fetchall()
        return [dict(zip(self.COLUMNS, r, strict=True)) for r in rows]

    def export(self, fmt: str = "csv") -> str:
        """The whole log as CSV or JSON lines."""
        rows = self.rows()
        if fmt == "jsonl":
            return "".join(json.dumps(r) + "\n" for r in rows)
        if fmt != "csv":
            raise ValueError(f"format must be 'csv' or 'jsonl', got {fmt!r}")
        import csv
        import io

        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=self.COLUMNS)
        writer.writeheader()
        writer.writerows(rows)
        return out.getvalue()

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class JointLedger(LedgerView):
    """An analyst's view of a dataset's budget: every spend is charged to the analyst's cap and
    to the dataset's cap in one transaction; what is left is the smaller of the two."""

    def __init__(self, mine: PrivacyLedger, shared: PrivacyLedger):
        self.mine, self.shared = mine, shared
        self.dataset = shared.dataset  # releases are keyed by the dataset: replays are shared
        self.persistent = True

    def summary(self, recent: int = 0) -> dict:
        out = self.mine.summary(recent)
        out["dataset_remaining"] = self.shared.remaining  # one read of the shared ledger
        out["remaining"] = min(out["remaining"], out["dataset_remaining"])
        return out

    def has_key(self, key: str) -> bool:
        return self.mine.has_key(key)

    def spend(self, epsilon: float, label: str = "release", *, key: str | None = None) -> bool:
        return self.mine.spend(epsilon, label, key=key, jointly=(self.shared,))

    def close(self) -> None:
        self.mine.close()
        self.shared.close()


class AnalystDoor(Session):
    """One analyst's analyst-mode session on the curator's views (internal)."""

    def __init__(self, curator: Curator, analyst: str, caps: dict[str, float]):
        super().__init__("analyst", curator.config.ledger)
        self._curator, self.analyst, self._caps = curator, analyst, caps
        self._local = threading.local()
        self._store = curator.store
        for ds in curator.config.datasets.values():
            if ds.name not in caps:
                continue
            views = {v.name: {"view": v.view, "facts": v.facts, "stand_in": v.stand_in,
                              "description": v.description} for v in ds.views.values()}
            for held in view_entries(ds.name, ds.table, views, description=ds.description,
                                     allowed=ds.mechanisms):
                self._hold(held, None)

    def _open_ledger(self, held: Entry, total_epsilon):
        dataset = held.name.partition("/")[0]
        return self._curator.ledger(dataset, self.analyst, self._caps[dataset])

    def release_with_key(self, idempotency_key: str | None, *args, **kwargs):
        self._local.key = idempotency_key
        try:
            return self.release(*args, **kwargs)
        finally:
            self._local.key = None

    def _charge(self, ds: Entry, epsilon: float, label: str, key: str) -> None:
        idem = getattr(self._local, "key", None)
        if idem is None:
            return super()._charge(ds, epsilon, label, key)
        try:
            fresh = self._ledgers[ds.name].spend(epsilon, label, key=f"{key}#{idem}")
        except BudgetExceededError as exc:
            self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise
        if not fresh and self._curator.audit.failed(self.analyst, idem):
            raise ReleaseFailed(_FAILED)


class Curator:
    """Holds the configuration, the ledgers, the release store, the audit log and one door per
    analyst. :func:`dpwidgets.curator.app.create_app` serves it over HTTP."""

    def __init__(self, config: CuratorConfig):
        self.config = config
        self.analysts = Analysts(config.analysts)
        self.audit = AuditLog(config.audit)
        # Next to the ledger: in its SQLite file, or in its PostgreSQL database, where every
        # replica replays what any of them released.
        self.store = ReleaseStore(config.ledger)
        self._doors: dict[str, AnalystDoor] = {}
        self._ledgers: dict[tuple[str, str], JointLedger] = {}
        self._lock = threading.RLock()
        for ds in config.datasets.values():  # records each cap once, before any analyst
            ds.table.check_schema()
            PrivacyLedger(config.ledger, dataset=ds.name,
                          total_epsilon=ds.total_epsilon).close()

    def ledger(self, dataset: str, analyst: str, cap: float) -> JointLedger:
        with self._lock:
            key = (dataset, analyst)
            if key not in self._ledgers:
                shared = PrivacyLedger(self.config.ledger, dataset=dataset)
                mine = PrivacyLedger(self.config.ledger, dataset=f"{dataset}@{analyst}",
                                     total_epsilon=cap)
                self._ledgers[key] = JointLedger(mine, shared)
            return self._ledgers[key]

    def door(self, analyst: str, record: dict) -> AnalystDoor:
        with self._lock:
            door = self._doors.get(analyst)
            caps = {k: float(v) for k, v in record.get("caps", {}).items()
                    if k in self.config.datasets}
            if door is None or door._caps != caps:
                door = self._doors[analyst] = AnalystDoor(self, analyst, caps)
            return door

    def close(self) -> None:
        for ledger in self._ledgers.values():
            ledger.close()
        self.store.close()
        self.audit.close()
