"""The session: the one door between widgets and data (SPEC.md §2, principles 2-5).

A :class:`Session` owns the named datasets and one :class:`~dpwidgets.engine.budget.PrivacyLedger`
per dataset. Widgets never hold a dataset; they ask the session to :meth:`~Session.release` the
output of a named mechanism. A release

1. validates the parameters (before anything is charged),
2. refuses what the mode forbids (in analyst mode: the broken SVT variants and the
   reconstruction attack),
3. looks the parameters up in the release cache -- a cached release is replayed for free,
4. runs the engine, charges the ledger, stores the DP output, and tells every observer (the
   budget meter) what happened.

Modes
-----
``"teaching"``
    The data is declared public. :meth:`Session.public_view` returns it, widgets may draw the
    ground truth and the engine's secret state (the noisy threshold). The ledger still records
    what each run would have cost; a run past the cap is *not* refused (the data is public),
    it is recorded as an overdraft so the meter can show what analyst mode would have refused.
``"analyst"``
    The data is confidential. :meth:`Session.public_view` returns the dataset's public
    stand-in; :meth:`Session.preview` runs a mechanism on the stand-in for free; only
    :meth:`Session.release` touches the data, and a :class:`Release` made in this mode carries
    only the DP output (``Release.result`` is ``None``).

The release cache and kernel restarts
-------------------------------------
A release is keyed by ``sha256(dataset, fingerprint of the data, mechanism, parameters)``.
The DP output of every release is stored next to the ledger, in a ``releases`` table of the same
SQLite file (opened through the session's own connection). A later process asking for the same
key gets the stored output back and is charged nothing: it learns nothing it had not already
paid for. The order of operations is *run the engine, charge, store*: if the process dies
after the charge but before the store, the ledger knows the key but no output exists; the next
request then charges again under a fresh key rather than handing out fresh noise for free
(which would leak). With a ``":memory:"`` ledger the cache lives in the process only, exactly
as long as the ledger does.

Examples
--------
>>> import numpy as np
>>> from dpwidgets import Session
>>> s = Session(mode="teaching", seed=1)
>>> s.add_dataset("scores", np.arange(100.0), total_epsilon=2.0)
>>> r = s.release("scores", "svt", epsilon=0.5, c=2, threshold=90.0)  # doctest: +SKIP
>>> s.spent("scores")  # doctest: +SKIP
0.5
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from .engine._validation import check_epsilon, check_finite_array, check_positive_int, check_rng
from .engine.budget import BudgetExceededError, PrivacyLedger, default_ledger_path

__all__ = [
    "MECHANISMS",
    "Overdraft",
    "PrivacyPolicyError",
    "Release",
    "Session",
]

Mode = Literal["teaching", "analyst"]


class PrivacyPolicyError(ValueError):
    """A release the session's mode forbids (e.g. a broken SVT variant in analyst mode)."""


@dataclass(frozen=True)
class Release:
    """The outcome of one :meth:`Session.release`.

    Attributes
    ----------
    dataset, mechanism, label : str
        What was released, by which mechanism, under which ledger label.
    params : dict
        The validated parameters (public: they are chosen by the user, not by the data).
    epsilon : float
        What the release cost when it was first made.
    output : dict
        The DP output only -- the one thing that may cross into widget or Bokeh state.
    charged : bool
        ``True`` if this call charged the ledger; ``False`` for a cached replay.
    result : object or None
        The engine's full result object (including secret state such as the noisy threshold).
        Only in teaching mode, and only for a release computed in this process.
    overdraft : bool
        Teaching mode only: the run went past the cap and would have been refused in analyst
        mode.
    """

    dataset: str
    mechanism: str
    label: str
    params: dict
    epsilon: float
    output: dict
    charged: bool
    time: float
    result: Any = None
    overdraft: bool = False
    key: str = field(default="", repr=False)


@dataclass(frozen=True)
class Overdraft:
    """A teaching-mode run that went past the cap (analyst mode would have refused it)."""

    epsilon: float
    label: str
    time: float


@dataclass
class _Dataset:
    name: str
    data: np.ndarray
    stand_in: np.ndarray
    fingerprint: str
    description: str = ""


# --------------------------------------------------------------------------------------------
# Mechanisms the session can release. Each entry validates its parameters into a canonical
# dict, states its cost before running, runs the engine, and extracts the DP output.
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Mechanism:
    name: str
    validate: Callable[[dict, int], dict]
    cost: Callable[[dict], float]
    run: Callable[[np.ndarray, dict, np.random.Generator], Any]
    outputs: Callable[[Any, dict], dict]
    private: Callable[[dict], bool]
    label: Callable[[dict], str]


def _svt_module():
    from .engine import svt

    return svt


def _threshold(value, n: int) -> float | np.ndarray:
    arr = check_finite_array(np.atleast_1d(value), "threshold")
    if arr.size == 1:
        return float(arr[0])
    if arr.size != n:
        raise ValueError(f"threshold must be a number or one per query ({n}), got {arr.size}")
    return arr


def _svt_validate(params: dict, n: int) -> dict:
    svt = _svt_module()
    p = dict(params)
    variant = p.pop("variant", "standard")
    if variant not in svt.VARIANTS:
        raise ValueError(f"variant must be one of {sorted(svt.VARIANTS)}, got {variant!r}")
    out = {
        "variant": variant,
        "epsilon": check_epsilon(p.pop("epsilon")),
        "c": check_positive_int(p.pop("c", 1), "c"),
        "threshold": _threshold(p.pop("threshold"), n),
        "sensitivity": check_epsilon(p.pop("sensitivity", 1.0), "sensitivity"),
        "monotonic": bool(p.pop("monotonic", False)),
        "epsilon3": check_epsilon(p.pop("epsilon3", 0.0), "epsilon3", allow_zero=True),
        "threshold_sensitivity": check_epsilon(
            p.pop("threshold_sensitivity", 0.0), "threshold_sensitivity", allow_zero=True
        ),
    }
    ratio = p.pop("ratio", None)
    out["ratio"] = None if ratio is None else check_epsilon(ratio, "ratio")
    if p:
        raise ValueError(f"unknown parameter(s) for 'svt': {sorted(p)}")
    return out


def _svt_run(data: np.ndarray, p: dict, rng: np.random.Generator):
    return _svt_module().sparse_vector(data, rng=rng, **p)


def _svt_outputs(result, p: dict) -> dict:
    outcomes = np.asarray(result.outcomes, dtype=bool)
    above = np.flatnonzero(outcomes)
    out = {"outcomes": outcomes, "above": above, "n_examined": int(outcomes.size)}
    # A noisy answer is part of the output only where the variant publishes it: for ⊤ queries
    # with epsilon3 > 0 (standard) or always (roth2011). NaN marks "not published".
    values = np.asarray(result.values, dtype=float)
    if np.any(np.isfinite(values[above])):
        out["above_values"] = values[above]
    return out


def _svt_private(p: dict) -> bool:
    return bool(_svt_module().VARIANTS[p["variant"]].private)


def _top_c_validate(params: dict, n: int) -> dict:
    p = dict(params)
    method = p.pop("method", "em")
    if method not in ("em", "svt_retr"):
        raise ValueError(f"method must be 'em' or 'svt_retr', got {method!r}")
    c = check_positive_int(p.pop("c", 1), "c")
    if c > n:
        raise ValueError(f"c must be at most the number of items ({n}), got {c}")
    out: dict = {
        "method": method,
        "c": c,
        "epsilon": check_epsilon(p.pop("epsilon")),
        "monotonic": bool(p.pop("monotonic", True)),
    }
    if method == "svt_retr":
        if "threshold" not in p:
            raise ValueError("top_c with method='svt_retr' needs a public threshold=")
        out["threshold"] = _threshold(p.pop("threshold"), n)
        out["increment"] = check_epsilon(p.pop("increment", 1.0), "increment", allow_zero=True)
        out["max_passes"] = check_positive_int(p.pop("max_passes", 10_000), "max_passes")
    if p:
        raise ValueError(f"unknown parameter(s) for 'top_c': {sorted(p)}")
    return out


def _top_c_run(data: np.ndarray, p: dict, rng: np.random.Generator):
    return _svt_module().top_c(data, rng=rng, **p)


def _top_c_outputs(result, p: dict) -> dict:
    return {"selected": np.asarray(result, dtype=int)}


def _recon_validate(params: dict, n: int) -> dict:
    from .engine._validation import check_probability

    p = dict(params)
    out = {
        "epsilon": check_epsilon(p.pop("epsilon")),
        "delta": check_probability(p.pop("delta", 0.05), "delta"),
    }
    if p:
        raise ValueError(f"unknown parameter(s) for 'reconstruction': {sorted(p)}")
    return out


def _recon_run(data: np.ndarray, p: dict, rng: np.random.Generator):
    from .engine.attacks import reconstruct_histogram

    return reconstruct_histogram(data, p["epsilon"], delta=p["delta"], rng=rng)


def _recon_outputs(result, p: dict) -> dict:
    return {"estimate": np.asarray(result.estimate, dtype=float)}


MECHANISMS: dict[str, _Mechanism] = {
    "svt": _Mechanism(
        "svt",
        _svt_validate,
        # epsilon is the total: the engine takes epsilon3 out of it (svt.py, budget convention).
        cost=lambda p: p["epsilon"],
        run=_svt_run,
        outputs=_svt_outputs,
        private=_svt_private,
        label=lambda p: f"SVT {p['variant']} c={p['c']}",
    ),
    "top_c": _Mechanism(
        "top_c",
        _top_c_validate,
        cost=lambda p: p["epsilon"],
        run=_top_c_run,
        outputs=_top_c_outputs,
        private=lambda p: True,
        label=lambda p: f"top-{p['c']} ({p['method']})",
    ),
    # The reconstruction attack runs GPTT, which is not private for any epsilon: teaching only.
    "reconstruction": _Mechanism(
        "reconstruction",
        _recon_validate,
        cost=lambda p: p["epsilon"],
        run=_recon_run,
        outputs=_recon_outputs,
        private=lambda p: False,
        label=lambda p: "reconstruction attack (GPTT)",
    ),
}
"""The mechanisms :meth:`Session.release` knows, by name."""


# --------------------------------------------------------------------------------------------
# JSON encoding of DP outputs (arrays keep their dtype; NaN survives as null).
# --------------------------------------------------------------------------------------------
def _to_jsonable(value):
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
        return {k: _to_jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_to_jsonable(v) for v in value]
    return value


def _from_jsonable(value):
    if isinstance(value, dict):
        if "__array__" in value:
            dtype = np.dtype(value["dtype"])
            items = value["__array__"]
            if dtype.kind == "f":
                items = [np.nan if v is None else v for v in items]
            return np.asarray(items, dtype=dtype)
        return {k: _from_jsonable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_from_jsonable(v) for v in value]
    return value


def _canonical(params: dict) -> str:
    return json.dumps(_to_jsonable(params), sort_keys=True, separators=(",", ":"))


class _ReleaseStore:
    """Released DP outputs, persisted in a ``releases`` table of the ledger's SQLite file."""

    _SCHEMA = """
    CREATE TABLE IF NOT EXISTS releases (
        dataset TEXT NOT NULL,
        key TEXT NOT NULL,
        mechanism TEXT NOT NULL,
        label TEXT NOT NULL,
        params TEXT NOT NULL,
        epsilon REAL NOT NULL,
        output TEXT NOT NULL,
        created REAL NOT NULL,
        PRIMARY KEY (dataset, key)
    );
    """

    def __init__(self, path: str):
        self._memory: dict[tuple[str, str], dict] = {}
        self._lock = threading.RLock()
        self._conn: sqlite3.Connection | None = None
        if path != ":memory:":
            self._conn = sqlite3.connect(
                path, timeout=60.0, isolation_level=None, check_same_thread=False
            )
            self._conn.execute("PRAGMA busy_timeout = 60000")
            self._conn.executescript(self._SCHEMA)

    def get(self, dataset: str, key: str) -> dict | None:
        with self._lock:
            row = self._memory.get((dataset, key))
            if row is not None or self._conn is None:
                return row
            got = self._conn.execute(
                "SELECT mechanism, label, params, epsilon, output, created FROM releases "
                "WHERE dataset = ? AND key = ?",
                (dataset, key),
            ).fetchone()
        if got is None:
            return None
        return {
            "mechanism": got[0],
            "label": got[1],
            "params": _from_jsonable(json.loads(got[2])),
            "epsilon": got[3],
            "output": _from_jsonable(json.loads(got[4])),
            "time": got[5],
        }

    def put(self, dataset: str, key: str, row: dict) -> None:
        with self._lock:
            self._memory[(dataset, key)] = row
            if self._conn is not None:
                self._conn.execute(
                    "INSERT OR IGNORE INTO releases "
                    "(dataset, key, mechanism, label, params, epsilon, output, created) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        dataset,
                        key,
                        row["mechanism"],
                        row["label"],
                        _canonical(row["params"]),
                        row["epsilon"],
                        json.dumps(_to_jsonable(row["output"])),
                        row["time"],
                    ),
                )

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()


def _default_stand_in(n: int) -> np.ndarray:
    """A public stand-in that depends on nothing but the public size: a Zipf(1) profile of
    ``n`` scores over 1,000,000 records (the 001 §6 setup), in a fixed shuffled order."""
    weights = 1.0 / np.arange(1, n + 1)
    scores = np.round(weights / weights.sum() * 1_000_000)
    return np.random.default_rng(0).permutation(scores)


class Session:
    """Owns the datasets and their privacy ledgers; the only way widgets reach data.

    Parameters
    ----------
    mode : {"teaching", "analyst"}
        ``"teaching"``: the data is public, widgets rerun live and may show the ground truth.
        ``"analyst"``: the data is confidential, only explicit releases spend budget and only
        DP outputs leave the session.
    ledger : str or path-like, optional
        The SQLite ledger file. Default: ``":memory:"`` in teaching mode,
        :func:`~dpwidgets.engine.budget.default_ledger_path` in analyst mode.
    seed : int, optional
        Seeds the session's :class:`numpy.random.Generator` (reproducible teaching runs).
    rng : numpy.random.Generator, optional
        The generator to draw all noise from (instead of ``seed``).
    warn_fraction : float
        The meter warns once this fraction of a budget is spent.

    Examples
    --------
    >>> s = Session(mode="analyst", ledger="/tmp/ledger.sqlite")  # doctest: +SKIP
    >>> s.add_dataset("sales", counts, total_epsilon=1.0, stand_in=public_counts)  # doctest: +SKIP
    >>> r = s.release("sales", "svt", epsilon=0.1, c=5, threshold=100.0)  # doctest: +SKIP
    >>> r.output["above"]  # doctest: +SKIP
    """

    def __init__(
        self,
        mode: Mode = "teaching",
        ledger: str | Path | None = None,
        *,
        seed: int | None = None,
        rng: np.random.Generator | None = None,
        warn_fraction: float = 0.8,
    ):
        if mode not in ("teaching", "analyst"):
            raise ValueError(f"mode must be 'teaching' or 'analyst', got {mode!r}")
        if rng is not None and seed is not None:
            raise ValueError("give either seed= or rng=, not both")
        self.mode: Mode = mode
        if ledger is None:
            ledger = ":memory:" if mode == "teaching" else default_ledger_path()
        self.ledger_path = str(ledger)
        if self.ledger_path != ":memory:":
            Path(self.ledger_path).expanduser().parent.mkdir(parents=True, exist_ok=True)
        self.rng = check_rng(rng) if rng is not None else np.random.default_rng(seed)
        if not 0.0 < warn_fraction <= 1.0:
            raise ValueError(f"warn_fraction must be in (0, 1], got {warn_fraction!r}")
        self.warn_fraction = float(warn_fraction)
        self._datasets: dict[str, _Dataset] = {}
        self._ledgers: dict[str, PrivacyLedger] = {}
        self._overdrafts: dict[str, list[Overdraft]] = {}
        self._listeners: list[Callable[[Session, dict], None]] = []
        self.last_refusal = ""
        self._meter = None
        self._lock = threading.RLock()
        # The ledger opens (and creates) the file first; the store adds its table to it.
        self._store: _ReleaseStore | None = None

    # -- datasets --------------------------------------------------------------------------
    @property
    def teaching(self) -> bool:
        """Whether the data is declared public."""
        return self.mode == "teaching"

    @property
    def datasets(self) -> list[str]:
        """The names of the datasets, in the order they were added."""
        return list(self._datasets)

    def add_dataset(
        self,
        name: str,
        data,
        *,
        total_epsilon: float | None = 1.0,
        stand_in=None,
        description: str = "",
    ) -> None:
        """Register a dataset and open (or create) its ledger.

        Parameters
        ----------
        name : str
            The name the ledger keys the budget by; reopening the same ledger file with the same
            name continues the same budget.
        data : array_like, 1-D
            The data the mechanisms run on: query answers / item scores for SVT and top-c,
            histogram counts for the reconstruction attack.
        total_epsilon : float, optional
            The budget cap. May be ``None`` when the ledger already records one.
        stand_in : array_like, optional
            A *public* array of the same (public) length, used by previews in analyst mode.
            Default: a Zipf(1) profile of that length (:func:`_default_stand_in`). Never derived
            from ``data``.
        description : str
            Shown in the meter.
        """
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if name in self._datasets:
            raise ValueError(f"dataset {name!r} is already in this session")
        data = check_finite_array(data, "data")
        data.setflags(write=False)
        if stand_in is None:
            stand_in = _default_stand_in(data.size)
        else:
            stand_in = check_finite_array(stand_in, "stand_in")
            if stand_in.shape != data.shape:
                raise ValueError(
                    f"stand_in must have the dataset's public shape {data.shape}, "
                    f"got {stand_in.shape}"
                )
        stand_in.setflags(write=False)
        ledger = PrivacyLedger(self.ledger_path, dataset=name, total_epsilon=total_epsilon)
        with self._lock:
            if self._store is None:
                self._store = _ReleaseStore(self.ledger_path)
            fingerprint = hashlib.sha256(data.tobytes()).hexdigest()
            self._datasets[name] = _Dataset(name, data, stand_in, fingerprint, description)
            self._ledgers[name] = ledger
            self._overdrafts[name] = []
        self._notify({"kind": "dataset", "dataset": name})

    def _dataset(self, name: str | None) -> _Dataset:
        if name is None:
            if not self._datasets:
                raise ValueError("this session has no dataset; call add_dataset() first")
            name = next(iter(self._datasets))
        try:
            return self._datasets[name]
        except KeyError:
            raise ValueError(
                f"unknown dataset {name!r}; this session has {self.datasets}"
            ) from None

    def size(self, dataset: str | None = None) -> int:
        """The public size (number of queries, items or cells) of a dataset."""
        return int(self._dataset(dataset).data.size)

    def public_view(self, dataset: str | None = None) -> np.ndarray:
        """The values a widget may draw: the data itself in teaching mode (it is public),
        the public stand-in in analyst mode. Read-only."""
        ds = self._dataset(dataset)
        return ds.data if self.teaching else ds.stand_in

    def stand_in(self, dataset: str | None = None) -> np.ndarray:
        """The dataset's public stand-in (read-only)."""
        return self._dataset(dataset).stand_in

    # -- budget ----------------------------------------------------------------------------
    def ledger(self, dataset: str | None = None) -> PrivacyLedger:
        """The privacy ledger of a dataset."""
        return self._ledgers[self._dataset(dataset).name]

    def spent(self, dataset: str | None = None) -> float:
        """Epsilon charged to a dataset's ledger (teaching overdrafts not included)."""
        return self.ledger(dataset).spent

    def remaining(self, dataset: str | None = None) -> float:
        """Epsilon still available on a dataset's ledger."""
        return self.ledger(dataset).remaining

    def overdrafts(self, dataset: str | None = None) -> list[Overdraft]:
        """Teaching-mode runs past the cap (what analyst mode would have refused)."""
        return list(self._overdrafts[self._dataset(dataset).name])

    @property
    def meter(self):
        """The session's :class:`~dpwidgets.widgets.meter.BudgetMeter` (created on first use)."""
        if self._meter is None:
            from .widgets.meter import BudgetMeter

            self._meter = BudgetMeter(self)
        return self._meter

    def observe(self, callback: Callable[[Session, dict], None]) -> None:
        """Call ``callback(session, event)`` after every dataset added and every release
        attempt (``event["kind"]`` is ``"dataset"``, ``"release"`` or ``"refused"``)."""
        self._listeners.append(callback)

    def unobserve(self, callback: Callable[[Session, dict], None]) -> None:
        """Stop calling ``callback``."""
        self._listeners = [c for c in self._listeners if c is not callback]

    def _notify(self, event: dict) -> None:
        if event["kind"] == "refused":
            self.last_refusal = event["message"]
        elif event["kind"] == "release":
            self.last_refusal = ""
        for callback in list(self._listeners):
            callback(self, event)

    # -- releases --------------------------------------------------------------------------
    def _validated(self, mechanism: str, params: dict, n: int) -> tuple[_Mechanism, dict]:
        try:
            mech = MECHANISMS[mechanism]
        except KeyError:
            raise ValueError(
                f"mechanism must be one of {sorted(MECHANISMS)}, got {mechanism!r}"
            ) from None
        if "epsilon" not in params:
            raise ValueError(f"{mechanism!r} needs epsilon=")
        if mechanism in ("svt",) and "threshold" not in params:
            raise ValueError("'svt' needs threshold= (a public number, or one per query)")
        return mech, mech.validate(params, n)

    def cost(self, mechanism: str, dataset: str | None = None, **params) -> float:
        """What a release with these parameters would charge (before any cache hit)."""
        mech, p = self._validated(mechanism, params, self.size(dataset))
        return float(mech.cost(p))

    def release_key(self, dataset: str | None, mechanism: str, **params) -> str:
        """The cache key of a release (it includes a fingerprint of the data; stays in Python)."""
        ds = self._dataset(dataset)
        run = params.pop("run", 0)
        mech, p = self._validated(mechanism, params, ds.data.size)
        return self._key(ds, mech.name, p, run)

    @staticmethod
    def _key(ds: _Dataset, mechanism: str, params: dict, run: int) -> str:
        blob = json.dumps(
            {
                "dataset": ds.name,
                "data": ds.fingerprint,
                "mechanism": mechanism,
                "params": _canonical(params),
                "run": int(run),
            },
            sort_keys=True,
        )
        return hashlib.sha256(blob.encode()).hexdigest()

    def is_cached(self, dataset: str | None, mechanism: str, **params) -> bool:
        """Whether a release with these parameters would be a free replay."""
        ds = self._dataset(dataset)
        key = self.release_key(ds.name, mechanism, **params)
        assert self._store is not None
        return self._store.get(ds.name, key) is not None

    def preview(self, dataset: str | None, mechanism: str, *, rng=None, **params):
        """Run a mechanism on the public stand-in: free, never touches the data.

        Returns the engine's full result object (the stand-in is public, so its secret state
        may be drawn).
        """
        ds = self._dataset(dataset)
        params.pop("run", None)
        mech, p = self._validated(mechanism, params, ds.data.size)
        return mech.run(ds.stand_in, p, check_rng(rng) if rng is not None else self.rng)

    def release(
        self, dataset: str | None, mechanism: str, *, label: str | None = None, run: int = 0,
        **params,
    ) -> Release:
        """Release a mechanism's DP output on a dataset, charging its ledger once.

        Parameters
        ----------
        dataset : str or None
            The dataset name (``None``: the first one added).
        mechanism : str
            A key of :data:`MECHANISMS`: ``"svt"``, ``"top_c"`` or ``"reconstruction"``.
        label : str, optional
            The ledger label (default: derived from the parameters).
        run : int
            Part of the cache key: the same parameters with another ``run`` draw fresh noise
            (and are charged again).
        **params
            The mechanism's parameters (``epsilon=`` always).

        Returns
        -------
        Release

        Raises
        ------
        ValueError
            A parameter is invalid (nothing charged).
        PrivacyPolicyError
            Analyst mode and the mechanism is not DP (nothing charged).
        BudgetExceededError
            Analyst mode and the release would exceed the budget (nothing charged).
        """
        ds = self._dataset(dataset)
        try:
            mech, p = self._validated(mechanism, params, ds.data.size)
            if not self.teaching and not mech.private(p):
                what = f"variant {p['variant']!r}" if "variant" in p else f"{mech.name!r}"
                raise PrivacyPolicyError(
                    f"{what} is not differentially private and is refused in analyst mode; "
                    f"it runs only in a teaching session on public data. Nothing was charged."
                )
        except ValueError as exc:
            self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
            raise
        label = label or mech.label(p)
        epsilon = float(mech.cost(p))
        key = self._key(ds, mech.name, p, run)
        assert self._store is not None
        with self._lock:
            cached = self._store.get(ds.name, key)
            if cached is not None:
                release = Release(
                    ds.name, mech.name, cached["label"], cached["params"], cached["epsilon"],
                    cached["output"], charged=False, time=cached["time"],
                    result=cached.get("result"), overdraft=cached.get("overdraft", False),
                    key=key,
                )
                self._notify({"kind": "release", "dataset": ds.name, "release": release})
                return release
            ledger = self._ledgers[ds.name]
            # Computing before charging is harmless: an output that is never shown leaks
            # nothing. It lets a refused release leave no trace at all.
            result = mech.run(ds.data, p, self.rng)
            output = mech.outputs(result, p)
            overdraft = False
            charge_key = key
            if ledger.has_key(key):
                # Charged in an earlier process whose output was lost: charge afresh rather
                # than hand out fresh noise for free.
                charge_key = f"{key}#{uuid.uuid4().hex}"
            try:
                if not ledger.spend(epsilon, label, key=charge_key):
                    # Another process charged this key between has_key and spend.
                    other = self._store.get(ds.name, key)
                    if other is not None:
                        return self.release(ds.name, mech.name, label=label, run=run, **params)
                    ledger.spend(epsilon, label, key=f"{key}#{uuid.uuid4().hex}")
            except BudgetExceededError as exc:
                if not self.teaching:
                    self._notify({"kind": "refused", "dataset": ds.name, "message": str(exc)})
                    raise
                overdraft = True
                self._overdrafts[ds.name].append(Overdraft(epsilon, label, time.time()))
            row = {
                "mechanism": mech.name,
                "label": label,
                "params": p,
                "epsilon": epsilon,
                "output": output,
                "time": time.time(),
            }
            self._store.put(ds.name, key, row)
            if self.teaching:
                # In-process only: the engine result (with its secret state) is never persisted.
                row["result"] = result
                row["overdraft"] = overdraft
            release = Release(
                ds.name, mech.name, label, p, epsilon, output, charged=True, time=row["time"],
                result=result if self.teaching else None, overdraft=overdraft, key=key,
            )
        self._notify({"kind": "release", "dataset": ds.name, "release": release})
        return release

    def close(self) -> None:
        """Close the ledgers' and the release store's database connections."""
        for ledger in self._ledgers.values():
            ledger.close()
        if self._store is not None:
            self._store.close()

    def __repr__(self) -> str:
        parts = ", ".join(
            f"{n}: {self._ledgers[n].spent:.3g}/{self._ledgers[n].total_epsilon:.3g}"
            for n in self._datasets
        )
        return f"Session(mode={self.mode!r}, ledger={self.ledger_path!r}, budgets={{{parts}}})"
