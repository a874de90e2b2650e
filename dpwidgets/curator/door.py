"""The curator's door: one analyst-mode :class:`~dpwidgets.Session` per analyst, over views of
tables that stay where they live, with a ledger per dataset and per analyst.

Nothing about a request is taken from the analyst but the mechanism's own parameters: the
dataset's facts, domains, privacy unit and bound come from the owner's configuration. Each
release is charged, in one transaction, to the dataset's cap (shared by every analyst) and to
the analyst's own cap on it, before the data is read.

Idempotency: the client sends a key with each release. A retry with the same key charges
nothing again and gets the one output the key paid for, whichever replica it reaches. The
charge is a *claim* in the ledger, recorded in the spend's own transaction
(:meth:`~dpwidgets.persistence.ledger.PrivacyLedger.claim`): the attempt that holds it (a fresh
owner id per attempt) and a lease, ``[curator] claim_lease`` seconds (default
:data:`CLAIM_LEASE`, 10 minutes: longer than a slow release). Only the holder runs the
release; it ends the claim when it has stored the output. Another attempt with the key:

* if the output is stored, replays it;
* while the holder's lease lasts, waits, polling the release store, for up to
  :attr:`Curator.claim_wait` seconds, then replays the output; if the holder failed on the data
  it repeats the failure (never rerun for free); if the wait ends first it answers
  :class:`ReleaseInProgress` (HTTP 503: retry with the same key);
* once the lease has run out with neither (the holder died, so its output never left it),
  takes the claim over and runs the release once more under the charge already recorded.

Budgets are keyed by the data's content (:meth:`~dpwidgets.tables.Table.fingerprint`), so one
file declared as several datasets (a copy, a symlink, another name) has one budget: the
dataset's cap and each analyst's cap on it. Declarations of the same content must declare the
same ``total_epsilon`` (the curator refuses to start otherwise, naming both); an analyst with
caps on several of them gets the smallest.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
import os
import secrets
import sqlite3
import threading
import time
import uuid
from pathlib import Path

from ..catalog import Entry
from ..door import CLAIM_LEASE, CLAIM_WAIT, ReleaseInProgress
from ..persistence import LedgerView, PrivacyLedger
from ..persistence.store import ReleaseStore, canonical
from ..session import Session
from ..tables import view_entries
from .config import CuratorConfig

__all__ = ["CLAIM_LEASE", "AnalystLedgers", "Analysts", "AuditLog", "Curator", "JointLedger",
           "ReleaseInProgress"]

class Analysts:
    """The analysts file: names, hashed bearer tokens, roles, caps per dataset, expiry.

    Tokens are 256-bit random strings shown once; only their SHA-256 is stored (a token has
    full entropy, so a plain hash cannot be brute-forced). A token may carry an expiry (a UTC
    time, ``expires``) and may be revoked (:meth:`revoke`, kept as ``revoked``: the audit log
    can then say why it was refused). The file is re-read whenever it is replaced, so an
    analyst added or revoked while the curator runs is let in or shut out at the next request,
    without a restart.
    """

    def __init__(self, path: Path):
        self.path = Path(path)
        self._lock = threading.Lock()
        self._stamp = None
        self._records: dict[str, dict] = {}

    def _load(self) -> dict[str, dict]:
        try:
            st = self.path.stat()
        except FileNotFoundError:
            return {}
        # Every write replaces the file (a new inode), so two writes within the file system's
        # clock tick are still told apart.
        stamp = (st.st_ino, st.st_mtime_ns, st.st_size)
        with self._lock:
            if stamp != self._stamp:
                self._records = json.loads(self.path.read_text())
                self._stamp = stamp
            return self._records

    def _write(self, records: dict[str, dict]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{uuid.uuid4().hex}.tmp")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as fh:
            json.dump(records, fh, indent=1)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)

    def add(self, name: str, caps: dict[str, float], *, owner: bool = False,
            expires: float | None = None) -> str:
        """Add (or re-key) an analyst; returns the new token, which is stored only hashed.

        ``expires`` is a POSIX time (UTC) after which the token is refused (401), or ``None``.
        Re-keying an analyst lifts a revocation."""
        if not isinstance(name, str) or not name.strip() or "@" in name or "/" in name:
            raise ValueError(f"an analyst's name is a non-empty string without '@' or '/', "
                             f"got {name!r}")
        if expires is not None and not (isinstance(expires, int | float)
                                        and not isinstance(expires, bool)
                                        and math.isfinite(expires) and expires > time.time()):
            raise ValueError(f"expires must be a time in the future, got {expires!r}")
        token = secrets.token_urlsafe(32)
        records = dict(self._load())
        records[name] = {"token_sha256": hashlib.sha256(token.encode()).hexdigest(),
                         "caps": {k: float(v) for k, v in caps.items()},
                         "role": "owner" if owner else "analyst", "created": time.time()}
        if expires is not None:
            records[name]["expires"] = float(expires)
        self._write(records)
        return token

    def revoke(self, name: str) -> None:
        """Revoke an analyst's token at once (a running curator refuses it at the next
        request). Their releases and spends stay in the ledger."""
        records = dict(self._load())
        if name not in records:
            raise KeyError(name)
        records[name] = {**records[name], "revoked": time.time()}
        self._write(records)

    def lookup(self, token: str | None) -> tuple[str, dict, str | None] | None:
        """``(name, record, refusal)`` for a known token, or ``None``: ``refusal`` is
        ``None`` (let in), ``"revoked"`` or ``"expired"`` (compared in constant time)."""
        if not token:
            return None
        digest = hashlib.sha256(token.encode()).hexdigest()
        found = None
        for name, record in self._load().items():
            if hmac.compare_digest(digest, record.get("token_sha256", "")):
                found = (name, record)
        if found is None:
            return None
        name, record = found
        expires = record.get("expires")
        refusal = ("revoked" if record.get("revoked") is not None else
                   "expired" if expires is not None and time.time() >= float(expires) else None)
        return name, record, refusal

    def who(self, token: str | None) -> tuple[str, dict] | None:
        """The analyst a valid bearer token belongs to, or ``None`` (unknown, revoked or
        expired)."""
        found = self.lookup(token)
        if found is None or found[2] is not None:
            return None
        return found[0], found[1]


class AuditLog:
    """Every request the curator answered: who, what, ε, parameters, outcome, when.

    One SQLite file in rollback-journal mode with ``synchronous=FULL`` (a committed row
    survives a crash), readable by its owner only (the file and its journal are created 0600:
    the log names analysts and what they asked); the owner exports it with :meth:`export`.
    A refusal records what was asked (dataset, mechanism, parameters as sent, bounded in
    size: :data:`MAX_TEXT` characters a cell)."""

    MAX_TEXT = 4000

    _SCHEMA = """CREATE TABLE IF NOT EXISTS audit (
        id INTEGER PRIMARY KEY, time REAL NOT NULL, analyst TEXT, dataset TEXT,
        mechanism TEXT, params TEXT, epsilon REAL, outcome TEXT NOT NULL, status INTEGER,
        message TEXT, idempotency_key TEXT)"""
    COLUMNS = ("id", "time", "analyst", "dataset", "mechanism", "params", "epsilon",
               "outcome", "status", "message", "idempotency_key")

    def __init__(self, path: Path):
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        # Created owner-only before SQLite opens it (SQLite gives its journal the database
        # file's mode; the journal is created 0600 here as well). An older, wider file is
        # narrowed.
        for p in (path, path.with_name(path.name + "-journal")):
            os.close(os.open(p, os.O_RDWR | os.O_CREAT, 0o600))
            os.chmod(p, 0o600)
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
        text = None
        if params is not None:
            try:
                text = canonical(params)
            except (TypeError, ValueError):  # a refused request's parameters, as sent
                text = json.dumps(params, default=repr, sort_keys=True)[:self.MAX_TEXT + 1]

        def bounded(value):
            if value is None:
                return None
            value = value if isinstance(value, str) else repr(value)
            return value if len(value) <= self.MAX_TEXT else value[:self.MAX_TEXT] + "…"

        with self._lock:
            self._conn.execute(
                "INSERT INTO audit (time, analyst, dataset, mechanism, params, epsilon, outcome,"
                " status, message, idempotency_key) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (time.time(), bounded(analyst), bounded(dataset), bounded(mechanism),
                 bounded(text), epsilon, outcome, status, bounded(message or ""),
                 bounded(key)))

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

    # A cell a spreadsheet would read as a formula (OWASP, "CSV Injection"): its first
    # character, or its first after leading whitespace, is one of these.
    _FORMULA = ("=", "+", "-", "@", "\uff1d", "\uff0b", "\uff0d", "\uff20")

    @classmethod
    def _cell(cls, value):
        """A CSV cell that opens as text: a string a spreadsheet would take for a formula
        gets a leading single quote."""
        if isinstance(value, str) and value and (
                value[0] in ("\t", "\r") or value.lstrip().startswith(cls._FORMULA)):
            return "'" + value
        return value

    def export(self, fmt: str = "csv") -> str:
        """The whole log as CSV or JSON lines; ``time`` in ISO 8601, UTC. In CSV every string
        cell a spreadsheet would run as a formula is prefixed with ``'`` (the log holds
        analyst-supplied strings: parameters, dataset names, idempotency keys)."""
        import datetime

        if fmt not in ("csv", "jsonl"):
            raise ValueError(f"format must be 'csv' or 'jsonl', got {fmt!r}")
        rows = self.rows()
        for r in rows:
            r["time"] = datetime.datetime.fromtimestamp(
                r["time"], datetime.UTC).isoformat(timespec="microseconds").replace(
                    "+00:00", "Z")
        if fmt == "jsonl":
            return "".join(json.dumps(r) + "\n" for r in rows)
        import csv
        import io

        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=self.COLUMNS)
        writer.writeheader()
        writer.writerows({k: self._cell(v) for k, v in r.items()} for r in rows)
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

    def claim(self, epsilon: float, label: str, *, key: str, owner: str, lease: float):
        """Charge both caps and claim ``key`` (kept on the analyst's ledger), in one
        transaction (:meth:`~dpwidgets.persistence.ledger.PrivacyLedger.claim`)."""
        return self.mine.claim(epsilon, label, key=key, owner=owner, lease=lease,
                               jointly=(self.shared,))

    def claim_state(self, key: str):
        return self.mine.claim_state(key)

    def finish(self, key: str, owner: str, *, failed: bool = False) -> bool:
        return self.mine.finish(key, owner, failed=failed)

    def close(self) -> None:
        self.mine.close()
        self.shared.close()


class AnalystLedgers:
    """The ledger port of one analyst's door (:class:`~dpwidgets.door.LedgerPort`): each
    dataset's :class:`JointLedger` (the content's shared cap and this analyst's own cap on it),
    the curator's lease and wait for idempotent attempts, and its audit log's memory of an
    attempt that failed on the data."""

    def __init__(self, curator: Curator, analyst: str, caps: dict[str, float]):
        self.curator, self.analyst, self.caps = curator, analyst, caps

    @property
    def lease(self) -> float:
        return self.curator.claim_lease

    @property
    def wait(self) -> float:
        return self.curator.claim_wait

    def open(self, held: Entry, total_epsilon: float | None) -> JointLedger:
        dataset = held.name.partition("/")[0]
        # One content, one cap: the smallest of this analyst's caps on its declarations.
        budget = self.curator.budget_of(dataset)
        cap = min(c for d, c in self.caps.items() if self.curator.budget_of(d) == budget)
        return self.curator.ledger(dataset, self.analyst, cap)

    def failed_before(self, idempotency_key: str) -> bool:
        return self.curator.audit.failed(self.analyst, idempotency_key)


class Curator:
    """Holds the configuration, the ledgers, the release store, the audit log and one door per
    analyst. :func:`dpwidgets.curator.app.create_app` serves it over HTTP.

    Examples
    --------
    An analyst's door holds the views they have a cap on; a cost counts every row one person
    may contribute (``max_rows = 2``):

    >>> import pathlib, tempfile
    >>> from dpwidgets.curator import Curator, load_config
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (folder / "visits.csv").write_text("person,page\\n1,0\\n1,3\\n2,3\\n3,1\\n")
    >>> _ = (folder / "curator.toml").write_text(
    ...     '[datasets.visits]\\nsource = "visits.csv"\\nunit = "person"\\nmax_rows = 2\\n'
    ...     'total_epsilon = 1.0\\ncolumns.page = { kind = "int", domain = [0, 3] }\\n'
    ...     'views.pages = { kind = "counts", columns = ["page"] }\\n')
    >>> curator = Curator(load_config(folder / "curator.toml"))
    >>> token = curator.analysts.add("alice", {"visits": 0.5})
    >>> name, record, _ = curator.analysts.lookup(token)
    >>> door = curator.door(name, record)
    >>> door.datasets, door.remaining("visits/pages")
    (['visits/pages'], 0.5)
    >>> door.cost("visits/pages", "top_c", epsilon=0.1, c=2)
    0.2
    >>> curator.close()
    """

    def __init__(self, config: CuratorConfig):
        self.config = config
        self.analysts = Analysts(config.analysts)
        self.audit = AuditLog(config.audit)
        # Next to the ledger: in its SQLite file, or in its PostgreSQL database, where every
        # replica replays what any of them released.
        self.store = ReleaseStore(config.ledger)
        self.claim_lease = float(getattr(config, "claim_lease", None) or CLAIM_LEASE)
        # How long a request waits for another attempt with its idempotency key to store its
        # output before answering ReleaseInProgress (the client retries with the same key).
        self.claim_wait = CLAIM_WAIT
        self._doors: dict[str, tuple[dict[str, float], Session]] = {}
        self._ledgers: dict[tuple[str, str], JointLedger] = {}
        self._lock = threading.RLock()
        self._fingerprints: dict[str, str] = {}
        self._budgets: dict[str, str] = {}
        first: dict[str, str] = {}
        for ds in config.datasets.values():  # records each cap once, before any analyst
            ds.table.check_schema()
            fp = self._fingerprints[ds.name] = ds.table.fingerprint()  # one scan, in DuckDB
            other = config.datasets[first.setdefault(fp, ds.name)]
            if not math.isclose(other.total_epsilon, ds.total_epsilon):
                raise ValueError(
                    f"datasets {other.name!r} and {ds.name!r} hold the same data (the same "
                    f"content) but declare different caps (total_epsilon {other.total_epsilon:g}"
                    f" and {ds.total_epsilon:g}); one data, one budget: declare one cap for both")
            with PrivacyLedger(config.ledger, dataset=ds.name, total_epsilon=ds.total_epsilon,
                               fingerprint=fp) as ledger:
                if not math.isclose(ledger.total_epsilon, ds.total_epsilon):
                    # Found through its content under another name: the recorded cap stands.
                    raise ValueError(
                        f"dataset {ds.name!r} holds the same data as the budget "
                        f"{ledger.dataset!r} recorded in {ledger.path} with a cap of "
                        f"{ledger.total_epsilon:g}; its declared total_epsilon "
                        f"{ds.total_epsilon:g} cannot change it: declare "
                        f"{ledger.total_epsilon:g}")
                self._budgets[ds.name] = ledger.dataset

    def budget_of(self, dataset: str) -> str:
        """The recorded name of the budget a declared dataset is charged to (one per content)."""
        return self._budgets[dataset]

    def ledger(self, dataset: str, analyst: str, cap: float) -> JointLedger:
        """The analyst's joint ledger on a declared dataset: the content's shared budget and
        the analyst's own budget on that content (both found by name or fingerprint)."""
        with self._lock:
            budget = self._budgets[dataset]
            key = (budget, analyst)
            if key not in self._ledgers:
                fp = self._fingerprints[dataset]
                shared = PrivacyLedger(self.config.ledger, dataset=budget, fingerprint=fp)
                mine = PrivacyLedger(
                    self.config.ledger, dataset=f"{shared.dataset}@{analyst}", total_epsilon=cap,
                    fingerprint=hashlib.sha256(f"{fp}@{analyst}".encode()).hexdigest())
                self._ledgers[key] = JointLedger(mine, shared)
            return self._ledgers[key]

    def door(self, analyst: str, record: dict) -> Session:
        """The analyst's door: an analyst-mode :class:`~dpwidgets.Session` composed of this
        curator's joint ledgers (:class:`AnalystLedgers`) and its shared release store, holding
        the views of the datasets the analyst has a cap on (made afresh when the caps change)."""
        with self._lock:
            caps = {k: float(v) for k, v in record.get("caps", {}).items()
                    if k in self.config.datasets}
            held = self._doors.get(analyst)
            if held is None or held[0] != caps:
                held = self._doors[analyst] = (caps, self._open_door(analyst, caps))
            return held[1]

    def _open_door(self, analyst: str, caps: dict[str, float]) -> Session:
        door = Session("analyst", self.config.ledger, store=self.store,
                       ledgers=AnalystLedgers(self, analyst, caps))
        for ds in self.config.datasets.values():
            if ds.name not in caps:
                continue
            views = {v.name: {"view": v.view, "facts": v.facts, "stand_in": v.stand_in,
                              "description": v.description} for v in ds.views.values()}
            for held in view_entries(ds.name, ds.table, views, description=ds.description,
                                     allowed=ds.mechanisms):
                door.hold(held)
        return door

    def close(self) -> None:
        for ledger in self._ledgers.values():
            ledger.close()
        self.store.close()
        self.audit.close()
