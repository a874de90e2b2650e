"""The door as a protocol: everything a widget or a script may ask of whoever keeps the data.

A widget holds a :class:`Door` and asks it the same questions whoever answers them:

============================  =========================================================================
:class:`Door`                 the questions (:meth:`~Door.describe`, :meth:`~Door.cost`,
                              :meth:`~Door.is_cached`, :meth:`~Door.preview`,
                              :meth:`~Door.release` with an ``idempotency_key``, the budget, ...)
:class:`dpwidgets.Session`    the local door: the datasets in this process, composed of a
                              :class:`LedgerPort` (one ledger per dataset) and a :class:`StorePort`
                              (the outputs already paid for)
``RemoteSession``             the same questions over HTTP to a curator
                              (:class:`dpwidgets.curator.client.RemoteSession`)
curator                       a local door per analyst, composed with the curator's joint ledgers
                              (:mod:`dpwidgets.curator.door`) and its shared store
============================  =========================================================================

:class:`Description` is what a door says about a dataset without reading it: the public facts
its owner declared. :class:`LedgerFiles` is the default ledger port (a SQLite file or a
PostgreSQL database: :mod:`dpwidgets.persistence`).

Idempotency: a release may carry a key naming the attempt. The first attempt with a key
charges the budget and *claims* the key in the same transaction; a retry with that key (after
a dropped connection, in this process or another) charges nothing and gets the one output the
key paid for (:class:`Attempt`).

Examples
--------
>>> import numpy as np
>>> from dpwidgets import Session
>>> from dpwidgets.door import Door
>>> door = Session("teaching", seed=0)
>>> door.add_dataset("scores", np.arange(20.0), total_epsilon=1.0)
>>> isinstance(door, Door)
True
>>> door.describe("scores").shape
(20,)
>>> door.cost("scores", "svt", epsilon=0.5, threshold=10.0, c=2)
0.5
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .catalog import FAILED
from .engine.errors import DPWidgetsError, ParameterError, ReleaseFailed
from .persistence import BudgetExceededError, PrivacyLedger

__all__ = ["CLAIM_LEASE", "CLAIM_WAIT", "Attempt", "Description", "Door", "LedgerFiles",
           "LedgerPort", "ReleaseInProgress", "StorePort", "notify"]

#: Seconds an attempt holds its claim on an idempotency key before another attempt may take
#: it over and run the release again (the holder is then presumed dead): longer than the
#: slowest release.
CLAIM_LEASE = 600.0

#: Seconds an attempt with a key another attempt holds waits for that attempt's output before
#: answering :class:`ReleaseInProgress`.
CLAIM_WAIT = 60.0

class ReleaseInProgress(DPWidgetsError):
    """Another attempt with this idempotency key is running the release and its lease lasts:
    retry with the same key later (this attempt charged nothing and read nothing).

    Examples
    --------
    A first attempt holds the key; a second one, with no time to wait, is told to retry:

    >>> from dpwidgets.door import Attempt, LedgerFiles, ReleaseInProgress
    >>> from dpwidgets.persistence import PrivacyLedger, ReleaseStore
    >>> ledger = PrivacyLedger(":memory:", dataset="visits", total_epsilon=1.0)
    >>> store, port = ReleaseStore(":memory:"), LedgerFiles(":memory:", wait=0.0)
    >>> def attempt():
    ...     return Attempt(ledger, store, port, print, dataset="visits", budget="visits",
    ...                    store_key="k", idempotency_key="retry-1")
    >>> holder = attempt().take(0.25, "histogram")
    >>> try:
    ...     attempt().take(0.25, "histogram")
    ... except ReleaseInProgress as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    a release with this Idempotency-Key is still running ...; retry with the same key later. ...
    >>> ledger.spent  # charged once
    0.25
    """


@dataclass(frozen=True)
class Description:
    """What a door may say about a dataset without reading it: its owner's declarations.

    Attributes
    ----------
    name : str
        The dataset's name at this door (a table's view is ``"<table>/<view>"``).
    shape : tuple of int
        The public shape (queries, cells, rows of a table, ...).
    columns, dtypes : tuple of str or None
        A table's public schema.
    unit : {"row", "person"}
        The privacy unit.
    unit_rows : int
        How many rows one unit may contribute (the group-privacy factor of every cost).
    facts : dict
        The facts about the data mechanisms rely on (``sensitivity``, ``monotonic``, ...).
    domains : dict or None
        A table's declared attribute domains.
    ranges : tuple or None
        Per column of a table, its declared ``(low, high)`` or ``None``.
    description : str
        The owner's words about it.
    budget : str
        The budget it is charged to (its own name, or its table's).
    mechanisms : tuple of str
        Mechanisms registered outside dpwidgets that its owner allows on it.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> door = Session("teaching", seed=0)
    >>> door.add_dataset("scores", np.arange(20.0), total_epsilon=1.0, description="exam scores")
    >>> described = door.describe("scores")
    >>> described.name, described.shape, described.unit, described.budget
    ('scores', (20,), 'row', 'scores')
    >>> described.description
    'exam scores'
    >>> described.as_json()["shape"]
    [20]
    """

    name: str
    shape: tuple[int, ...]
    columns: tuple[str, ...] | None = None
    dtypes: tuple[str, ...] | None = None
    unit: str = "row"
    unit_rows: int = 1
    facts: dict = field(default_factory=dict)
    domains: dict | None = None
    ranges: tuple | None = None
    description: str = ""
    budget: str = ""
    mechanisms: tuple[str, ...] = ()

    @classmethod
    def of(cls, entry) -> Description:
        """The public part of a door's :class:`~dpwidgets.catalog.Entry` (never its data)."""
        return cls(entry.name, tuple(int(k) for k in entry.shape), entry.columns, entry.dtypes,
                   entry.unit, int(entry.unit_rows), dict(entry.facts), entry.domains,
                   entry.ranges, entry.description, entry.budget or entry.ledger_name,
                   tuple(sorted(entry.allowed)))

    @property
    def size(self) -> int:
        """The first dimension of :attr:`shape`."""
        return int(self.shape[0])

    def as_json(self) -> dict:
        """The description as JSON carries it (what a curator answers on ``/datasets``)."""
        return {"name": self.name, "shape": list(self.shape),
                "columns": list(self.columns) if self.columns else None,
                "dtypes": list(self.dtypes) if self.dtypes else None,
                "unit": self.unit, "unit_rows": self.unit_rows, "facts": self.facts,
                "domains": self.domains,
                "ranges": None if self.ranges is None else [
                    None if r is None else list(r) for r in self.ranges],
                "description": self.description, "budget": self.budget,
                "mechanisms": list(self.mechanisms)}


@runtime_checkable
class Door(Protocol):
    """What a widget may ask of a door (:class:`dpwidgets.Session`, a curator's
    ``RemoteSession``). Every question is answered from public declarations, except
    :meth:`release`, which is charged before the data is read.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> door = Session("teaching", seed=1)
    >>> door.add_dataset("counts", np.full(8, 50.0))
    >>> door.release("counts", "svt", epsilon=0.5, threshold=40.0, c=1).charged
    True
    """

    @property
    def mode(self) -> str:
        """``"teaching"`` (the data is public) or ``"analyst"``."""

    @property
    def teaching(self) -> bool:
        """Whether the data is declared public."""

    @property
    def datasets(self) -> list[str]:
        """The datasets this door holds, by name."""

    def describe(self, dataset: str | None = None) -> Description:
        """The owner's public declarations about a dataset."""

    def cost(self, dataset: str | None, mechanism: str | None = None, **params) -> float:
        """What a release with these parameters would charge."""

    def is_cached(self, dataset: str | None, mechanism: str, **params) -> bool:
        """Whether that release would be a free replay."""

    def preview(self, dataset: str | None, mechanism: str, *, rng=None, **params):
        """The mechanism run on the public stand-in: free."""

    def preview_key(self, dataset: str | None, mechanism: str, **params) -> str:
        """A public key naming a preview by its canonical parameters."""

    def release(self, dataset: str | None, mechanism: str, *, label: str | None = None,
                run: int = 0, idempotency_key: str | None = None, **params):
        """The DP output on the data, charged once (a retry with ``idempotency_key`` is free)."""

    def ledger(self, dataset: str | None = None):
        """The budget of a dataset (its ``summary``, ``remaining``, ``recent`` spends)."""

    def spent(self, dataset: str | None = None) -> float:
        """Epsilon charged to a dataset's budget."""

    def remaining(self, dataset: str | None = None) -> float:
        """Epsilon still available."""

    def check_budget(self, dataset: str | None, epsilon: float, label: str) -> None:
        """Refuse, before anything is charged, a group of releases costing ``epsilon``."""

    def public_view(self, dataset: str | None = None) -> np.ndarray:
        """What a widget may draw: the data in teaching mode, the stand-in in analyst mode."""

    def stand_in(self, dataset: str | None = None) -> np.ndarray:
        """The dataset's public stand-in."""

    def observe(self, callback: Callable[[Any, dict], None]) -> None:
        """Call ``callback(door, event)`` after every dataset added and release attempt."""

    def unobserve(self, callback: Callable[[Any, dict], None]) -> None:
        """Stop calling ``callback``."""

    def opening_code(self, dataset: str | None = None) -> str:
        """The lines of Python that open this door again (what copied code starts with)."""

    def close(self) -> None:
        """Close the door's connections."""


class LedgerPort(Protocol):
    """How a local door opens and charges its budgets.

    ``open(entry, total_epsilon)`` gives the ledger of a dataset being added (a
    :class:`~dpwidgets.persistence.ledger.PrivacyLedger`, a curator's
    :class:`~dpwidgets.curator.door.JointLedger`, ...): it must offer ``spend``, ``has_key``,
    ``claim``, ``claim_state``, ``finish``, ``remaining`` and ``summary``. ``lease`` and
    ``wait`` time idempotent attempts (:class:`Attempt`); ``failed_before(idempotency_key)``
    says whether an earlier attempt with that key failed on the data (it must not run again
    for free).

    Examples
    --------
    A port that says when a budget is opened, around the default one
    (:class:`LedgerFiles`):

    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> from dpwidgets.door import LedgerFiles
    >>> class Logged(LedgerFiles):
    ...     def open(self, entry, total_epsilon):
    ...         print("opening the budget of", entry.name, "capped at", total_epsilon)
    ...         return super().open(entry, total_epsilon)
    >>> door = Session("teaching", seed=0, ledgers=Logged(":memory:"))
    >>> door.add_dataset("scores", np.arange(20.0), total_epsilon=1.0)
    opening the budget of scores capped at 1.0
    >>> door.remaining("scores")
    1.0
    """

    lease: float
    wait: float

    def open(self, entry, total_epsilon: float | None): ...

    def failed_before(self, idempotency_key: str) -> bool: ...


class StorePort(Protocol):
    """Where a local door keeps the outputs already paid for
    (:class:`~dpwidgets.persistence.store.ReleaseStore`): ``key(blob)`` names a release,
    ``get(dataset, key)`` finds it, ``put(dataset, key, row)`` stores it (the first stored
    wins and is returned).

    Examples
    --------
    A store that counts what it is given: a replay is found, not stored again.

    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> from dpwidgets.persistence import ReleaseStore
    >>> class Counted(ReleaseStore):
    ...     puts = 0
    ...     def put(self, dataset, key, row):
    ...         Counted.puts += 1
    ...         return super().put(dataset, key, row)
    >>> door = Session("teaching", seed=0, store=Counted(":memory:"))
    >>> door.add_dataset("counts", np.full(8, 50.0))
    >>> first = door.release("counts", "svt", epsilon=0.5, threshold=40.0, c=1)
    >>> again = door.release("counts", "svt", epsilon=0.5, threshold=40.0, c=1)
    >>> Counted.puts, first.charged, again.charged
    (1, True, False)
    """

    def key(self, blob: str) -> str: ...

    def get(self, dataset: str, key: str) -> dict | None: ...

    def put(self, dataset: str, key: str, row: dict) -> dict: ...

    def close(self) -> None: ...


class LedgerFiles:
    """The default ledger port: one :class:`~dpwidgets.persistence.ledger.PrivacyLedger` per
    budget in the ledger file (or PostgreSQL database) at ``path``, found by name or by the
    data's fingerprint (so a new name never resets a budget).

    Examples
    --------
    >>> from dpwidgets.door import LedgerFiles
    >>> LedgerFiles(":memory:").lease
    600.0
    """

    def __init__(self, path: str, *, lease: float = CLAIM_LEASE, wait: float = CLAIM_WAIT):
        self.path, self.lease, self.wait = path, float(lease), float(wait)

    def open(self, entry, total_epsilon: float | None) -> PrivacyLedger:
        return PrivacyLedger(self.path, dataset=entry.budget or entry.name,
                             total_epsilon=total_epsilon,
                             fingerprint=entry.ledger_fingerprint or entry.fingerprint)

    def failed_before(self, idempotency_key: str) -> bool:
        """A failure is recorded on the claim itself (:meth:`Attempt.failed`)."""
        return False


def notify(door, listeners, event: dict) -> None:
    """Tell a door's listeners of an event (:meth:`Door.observe`), after recording it on the door.

    A ``"refused"`` event's message becomes ``door.last_refusal``; a ``"release"`` clears it.
    Then every listener is called as ``callback(door, event)``, in the order it subscribed (a
    listener that subscribes or unsubscribes meanwhile takes effect at the next event).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> from dpwidgets.door import notify
    >>> door, heard = SimpleNamespace(last_refusal=""), []
    >>> notify(door, [lambda d, e: heard.append(e["kind"])],
    ...        {"kind": "refused", "dataset": "x", "message": "over budget"})
    >>> door.last_refusal, heard
    ('over budget', ['refused'])
    """
    if event["kind"] == "refused":
        door.last_refusal = event["message"]
    elif event["kind"] == "release":
        door.last_refusal = ""
    for callback in list(listeners):
        callback(door, event)


def check_idempotency_key(key) -> str:
    """An idempotency key: 1 to 200 printable characters (else a ``ParameterError``)."""
    if not (isinstance(key, str) and 0 < len(key) <= 200 and key.isprintable()):
        raise ParameterError("idempotency_key: 1 to 200 printable characters")
    return key


class Attempt:
    """One release attempt with an idempotency key and its claim in the ledger.

    After :meth:`take`, ``stored`` is the output another attempt stored (replay it; nothing is
    run) or ``None``: this attempt holds the claim, runs the release, then calls :meth:`done`
    once the output is stored or :meth:`failed` if the run failed on the data. Another attempt
    with the key:

    * if the output is stored, replays it;
    * while the holder's lease lasts, waits, polling the store, for up to the port's ``wait``
      seconds, then replays the output; if the holder failed on the data it repeats the
      failure (never rerun for free); if the wait ends first it raises
      :class:`ReleaseInProgress` (retry with the same key);
    * once the lease has run out with neither (the holder died, so its output never left it),
      takes the claim over and runs the release once more under the charge already recorded.

    Parameters
    ----------
    ledger
        The dataset's ledger (``claim``, ``claim_state``, ``finish``).
    store : StorePort
        Where outputs are stored.
    port : LedgerPort
        Its ``lease``, ``wait`` and ``failed_before``.
    notify : callable
        Called with the door's ``"refused"`` event before a refusal is raised.
    dataset, budget : str
        The dataset asked for and the budget its outputs are stored under.
    store_key, idempotency_key : str
        The release's key in the store and the attempt's key.

    Examples
    --------
    The first attempt charges and runs; once it has stored its output, a retry with the key
    replays that output and charges nothing:

    >>> from dpwidgets.door import Attempt, LedgerFiles
    >>> from dpwidgets.persistence import PrivacyLedger, ReleaseStore
    >>> ledger = PrivacyLedger(":memory:", dataset="visits", total_epsilon=1.0)
    >>> store, port = ReleaseStore(":memory:"), LedgerFiles(":memory:")
    >>> def attempt():
    ...     return Attempt(ledger, store, port, print, dataset="visits", budget="visits",
    ...                    store_key="k", idempotency_key="retry-1")
    >>> first = attempt().take(0.25, "histogram")
    >>> first.stored is None  # this attempt holds the claim: it runs the release
    True
    >>> _ = store.put("visits", "k", {"mechanism": "svt", "label": "histogram", "params": {},
    ...                               "epsilon": 0.25, "output": {"hits": [3]}, "time": 0.0})
    >>> first.done()
    >>> retry = attempt().take(0.25, "histogram")
    >>> retry.stored["output"], ledger.spent, ledger.count
    ({'hits': [3]}, 0.25, 1)
    """

    POLL = 0.05  # seconds between two looks at the store while another attempt runs

    def __init__(self, ledger, store: StorePort, port: LedgerPort,
                 notify: Callable[[dict], None], *, dataset: str, budget: str, store_key: str,
                 idempotency_key: str):
        self.ledger, self.store, self.port, self.notify = ledger, store, port, notify
        self.dataset, self.budget, self.store_key = dataset, budget, store_key
        self.idempotency_key = check_idempotency_key(idempotency_key)
        self.key = f"{store_key}#{idempotency_key}"  # the spend's key
        self.owner = f"{socket.gethostname()}/{os.getpid()}/{uuid.uuid4().hex}"
        self.stored: Mapping | None = None

    def take(self, epsilon: float, label: str) -> Attempt:
        """Charge and claim the key, or find the output another attempt with it stored."""
        deadline = time.monotonic() + self.port.wait
        while True:
            try:
                claim = self.ledger.claim(epsilon, label, key=self.key, owner=self.owner,
                                          lease=self.port.lease)
            except BudgetExceededError as exc:
                self.notify({"kind": "refused", "dataset": self.dataset, "message": str(exc)})
                raise
            if claim.held_by(self.owner):
                if claim.resumed:
                    # Under an earlier attempt's charge: it died, or (a key charged before
                    # claims existed) failed on the data, which the port knows.
                    if self.port.failed_before(self.idempotency_key):
                        self.failed()
                        self._fail()
                    self.stored = self._look()  # it stored its output, then died
                    if self.stored is not None:
                        self.done()
                return self
            # Another attempt holds the claim or ended it: wait for its output.
            while True:
                self.stored = self._look()
                if self.stored is not None:
                    return self
                if claim is None or claim.state != "running":
                    self._fail()  # it failed on the data (or its output is gone): repeat
                if not claim.live:
                    break  # its lease ran out: take the claim over
                if time.monotonic() >= deadline:
                    raise ReleaseInProgress(
                        "a release with this Idempotency-Key is still running (on this or "
                        "another replica of the curator); retry with the same key later. "
                        "Nothing was charged again.")
                time.sleep(min(self.POLL, max(0.0, claim.expires - claim.now)))
                claim = self.ledger.claim_state(self.key)

    def _look(self) -> dict | None:
        return self.store.get(self.budget, self.store_key)

    def _fail(self):
        self.notify({"kind": "refused", "dataset": self.dataset, "message": FAILED})
        raise ReleaseFailed(FAILED)

    def done(self) -> None:
        """The output is stored: end the claim."""
        self.ledger.finish(self.key, self.owner)

    def failed(self) -> None:
        """The run failed on the data: end the claim as failed (a retry repeats the failure)."""
        self.ledger.finish(self.key, self.owner, failed=True)
