"""The privacy-loss audits of SVT's broken variants, run in the background on an executor.

A broken variant's banner shows an empirical lower bound on its privacy loss
(:func:`dpwidgets.engine.audit.audit_svt`, on the variant's public counterexample from
Lyu, Su & Li 2017 or Chen 2018, never on the user's data). An audit takes up to a second or
two, so it never runs on a redraw: :class:`Audits` queues each ``(variant, ε)`` once, runs
the queue one audit at a time on the executor it is given (the cores are shared with the
kernel), and lets the key a banner waits for jump the queue.

Examples
--------
>>> from concurrent.futures import ThreadPoolExecutor
>>> from dpwidgets.families.svt.audits import Audits, audit_epsilon
>>> audits = Audits(ThreadPoolExecutor(max_workers=1), compute=lambda v, e, progress: 2 * e)
>>> audits.future("roth2011", audit_epsilon(0.47)).result(timeout=10)
1.0
"""

from __future__ import annotations

import collections
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future, ThreadPoolExecutor

import numpy as np

__all__ = ["AuditJob", "Audits", "audit_epsilon", "audited_loss", "default_audits"]

_LOSSES: dict[tuple[str, float], float | None] = {}


def audited_loss(variant: str, epsilon: float, *, progress=None) -> float | None:
    """Empirical lower bound on the privacy loss of a variant, cached per (variant, ε).

    The audit (:func:`dpwidgets.engine.audit.audit_svt`) runs on the variant's public
    counterexample from Lyu, Su & Li 2017 or Chen 2018 (never on the user's data), sized for
    this ε (more queries and runs at small ε), with a fixed seed, so the banner is
    reproducible. Callers round ε to one significant digit (:func:`audit_epsilon`), so dragging
    the slider costs one audit per new grid value, not per pixel. A value <= ε means no
    violation was found at that size, not that the variant is private. ``None`` if the variant
    has no counterexample of its own or the audit module is missing.

    ``progress(batches_done, batches_total)`` is called after every batch of the audit (and
    once, done, for a cached value); no bar is drawn otherwise.
    """
    key = (str(variant), float(epsilon))
    if key in _LOSSES:
        if progress is not None:
            progress(1, 1)
        return _LOSSES[key]
    try:
        from ...engine.audit import audit_svt
    except ImportError:
        return None
    try:
        result = audit_svt(variant, epsilon=epsilon, rng=np.random.default_rng(20170801),
                           progress=progress if progress is not None else False)
    except ValueError:  # no counterexample for this variant
        loss = None
    else:
        loss = float(result.epsilon_lower)
    if len(_LOSSES) >= 512:  # a bounded cache: the ε grid has few points per decade
        _LOSSES.pop(next(iter(_LOSSES)))
    _LOSSES[key] = loss
    return loss


def audit_epsilon(epsilon: float) -> float:
    """ε rounded to one significant digit: the grid the banner's audit is computed on.

    Examples
    --------
    >>> audit_epsilon(0.47)
    0.5
    """
    return float(f"{epsilon:.0e}")


class AuditJob(Future):
    """The Future of one background audit, which also reports how far it is.

    ``steps`` is ``(batches_done, batches_total)`` of the running audit (``(0, None)`` before
    it starts); :meth:`on_progress` registers ``callback(done, total)``, called from the
    worker thread after every batch (and at once with the current steps).
    """

    def __init__(self):
        super().__init__()
        self.steps: tuple[int, int | None] = (0, None)
        self._listeners: list = []
        self._steps_lock = threading.Lock()

    def on_progress(self, callback) -> None:
        """Call ``callback(done, total)`` now and after every batch."""
        with self._steps_lock:
            self._listeners.append(callback)
            steps = self.steps
        callback(*steps)

    def report(self, done: int, total: int | None) -> None:
        """The audit's progress (from the thread that runs it)."""
        with self._steps_lock:
            self.steps = (done, total)
            listeners = list(self._listeners)
        for callback in listeners:
            callback(done, total)


class Audits:
    """A queue of audits, each ``(variant, ε)`` computed once, run one at a time on
    ``executor``.

    Parameters
    ----------
    executor : concurrent.futures.Executor
        Where the audits run (one task at a time is submitted to it: the next audit in line).
    compute : callable, optional
        ``compute(variant, epsilon, progress)``: the audit (default :func:`audited_loss`).

    Examples
    --------
    >>> from concurrent.futures import ThreadPoolExecutor
    >>> audits = Audits(ThreadPoolExecutor(max_workers=1), compute=lambda v, e, progress: e)
    >>> [audits.future(v, 0.1).result(timeout=10) for v in ("roth2011", "stoddard")]
    [0.1, 0.1]
    """

    def __init__(self, executor: Executor,
                 compute: Callable[..., float | None] | None = None):
        self.executor = executor
        self._compute = compute
        self._jobs: dict[tuple[str, float], AuditJob] = {}
        self._queue: collections.deque[tuple[str, float]] = collections.deque()
        self._lock = threading.Lock()
        self._busy = False

    def future(self, variant: str, epsilon: float, *, urgent: bool = False) -> AuditJob:
        """The audit of ``(variant, epsilon)`` (``epsilon`` on the :func:`audit_epsilon`
        grid), computed in the background: the same :class:`AuditJob` for every call. The
        first call queues it; ``urgent`` puts a key that has not started yet at the front."""
        key = (str(variant), float(epsilon))
        with self._lock:
            job = self._jobs.get(key)
            if job is None:
                job = self._jobs[key] = AuditJob()
                self._queue.appendleft(key) if urgent else self._queue.append(key)
            elif urgent and not job.running() and not job.done() and key in self._queue:
                self._queue.remove(key)
                self._queue.appendleft(key)
            self._pump()
        return job

    def _pump(self) -> None:
        """Submit the next audit in line unless one is running (under the lock)."""
        if not self._busy and self._queue:
            self._busy = True
            self.executor.submit(self._run_next)

    def _run_next(self) -> None:
        with self._lock:
            key = self._queue.popleft()
            job = self._jobs[key]
        try:
            if job.set_running_or_notify_cancel():
                compute = self._compute or (lambda v, e, progress: audited_loss(
                    v, e, progress=progress))
                try:
                    job.set_result(compute(*key, progress=job.report))
                except BaseException as exc:  # noqa: BLE001 - handed to whoever reads it
                    job.set_exception(exc)
        finally:
            with self._lock:
                self._busy = False
                self._pump()


_DEFAULT: list[Audits] = []
_DEFAULT_LOCK = threading.Lock()


def default_audits() -> Audits:
    """The audits an explorer uses when it is given none: one daemon worker thread for the
    process, made on first use, so every explorer in a kernel shares each audit's result."""
    with _DEFAULT_LOCK:
        if not _DEFAULT:
            _DEFAULT.append(Audits(ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="dpwidgets-svt-audit")))
        return _DEFAULT[0]
