"""The busy line of a running release: how long it has run and, where the mechanism reports
them, its steps (public numbers only)."""

from __future__ import annotations

import math
import threading
import time

import ipywidgets as w

__all__ = ["ReleaseProgress"]


class ReleaseProgress:
    """The busy line of a running release in ``status``: how long it has run (refreshed every
    second from a timer thread, so a release of minutes on a large table -- or on a curator --
    shows it is alive) and, where the mechanism reports them
    (:func:`dpwidgets._progress.report`: nodes of a public hierarchy, partitions of public
    domains), its steps as a bar. Every number shown is public: a step count the parameters
    fix, or the time.

    Examples
    --------
    >>> import ipywidgets as w
    >>> from dpwidgets.ui.progress import ReleaseProgress
    >>> status = w.HTML()
    >>> with ReleaseProgress(status) as progress:
    ...     progress.step(2, 5)
    >>> "Releasing" in progress.text()
    True
    """

    #: Seconds between refreshes of the elapsed time; steps refresh at most this often too.
    TICK = 1.0

    def __init__(self, status: w.HTML) -> None:
        self.status = status
        self.steps: tuple[int, int] | None = None
        self._start = 0.0
        self._shown_at = -math.inf
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def text(self) -> str:
        """The busy line now."""
        seconds = time.monotonic() - self._start
        bar = ""
        if self.steps is not None:
            done, total = self.steps
            bar = (f" <progress value='{done}' max='{total}'></progress> step {done:,} of "
                   f"{total:,}")
        took = f" · {seconds:.0f} s" if seconds >= self.TICK else ""
        return (f"<span class='dpw-busy'>Releasing…{bar}{took} (the mechanism runs on the data; "
                "nothing is shown until it is done)</span>")

    def show(self) -> None:
        with self._lock:
            if not self._done.is_set():
                self.status.value = self.text()
                self._shown_at = time.monotonic()

    def step(self, done: int, total: int) -> None:
        """A step reported by the mechanism (drawn at most every :attr:`TICK` seconds)."""
        self.steps = (done, total)
        if time.monotonic() - self._shown_at >= self.TICK:
            self.show()

    def _tick(self) -> None:
        while not self._done.wait(max(self.TICK, 0.05)):
            self.show()

    def __enter__(self) -> ReleaseProgress:
        self._start = time.monotonic()
        self.show()
        self._thread = threading.Thread(target=self._tick, name="dpwidgets-release-progress",
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        with self._lock:
            self._done.set()
        if self._thread is not None:
            self._thread.join()
