"""Progress bars for long work: tqdm in a terminal, a widget bar in a notebook, nothing otherwise.

Every long loop of the package and of ``benchmarks/`` (audits, benchmark sweeps) goes through
:func:`progress`, so that one switch decides for all of them whether a bar is drawn:

- ``disable=True`` / ``False`` decides for one loop;
- otherwise the environment variable ``DPWIDGETS_PROGRESS`` (``0`` or ``1``) decides;
- otherwise a bar is drawn when someone watches: in a Jupyter kernel or when standard error is
  a terminal, and never under CI (``CI`` set).

In a terminal the bar is tqdm's. In a kernel it is an HTML ``<progress>`` element updated in place
through a display id (:class:`_NotebookBar`), not an ipywidgets model: tqdm's notebook bar is a
widget whose model is closed when the bar finishes (``leave=False``), while the cell's output still
names it, so a page rendered from the outputs (Voila, a saved or executed notebook, the docs
site) shows "Error displaying widget: model not found" where each bar was. A display id needs no
model: a finished bar becomes plain text (``leave=True``) or nothing (``leave=False``), and every
front end that renders outputs (JupyterLab, Voila, nbconvert, myst-nb) draws it the same way.

So a test run, a CI log or a script whose output goes to a file stays free of bars, while a
person at a terminal or in a notebook sees how far the work is. A ``callback(done, total)`` is
called after every step whether or not a bar is drawn: a widget feeds its own
``ipywidgets.FloatProgress`` from it.

Inside a release the engine's longer loops call :func:`report` with steps whose number is
public (nodes of a public hierarchy, partitions of public domains): whoever runs the release
listens with :func:`reporting` (a widget's Release button shows the steps; nothing listens
by default and a report is then a no-op).
"""

from __future__ import annotations

import html
import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Generic, TypeVar

__all__ = ["ENV", "Progress", "progress", "report", "reporting", "watching"]

#: ``DPWIDGETS_PROGRESS=0`` silences every bar, ``=1`` draws them even without a terminal.
ENV = "DPWIDGETS_PROGRESS"

_OFF = {"0", "false", "no", "off"}
_ON = {"1", "true", "yes", "on"}

T = TypeVar("T")


def _in_kernel() -> bool:
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    try:
        ip = shell.get_ipython()
    except Exception:  # noqa: BLE001 - a half-initialised IPython: nobody watches
        return False
    return ip is not None and getattr(ip, "kernel", None) is not None


def watching() -> bool:
    """Whether a bar would be seen: ``DPWIDGETS_PROGRESS`` if set, else a Jupyter kernel or a
    terminal on standard error (never when ``CI`` is set)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in _OFF:
        return False
    if value in _ON:
        return True
    if os.environ.get("CI"):
        return False
    if _in_kernel():
        return True
    try:
        return sys.stderr is not None and sys.stderr.isatty()
    except (AttributeError, ValueError):  # a closed or replaced stream
        return False


class Progress(Generic[T]):
    """Steps of a long piece of work, drawn as a bar when someone watches.

    Iterate over it (each item taken is a step) or call :meth:`update` (then use it as a
    context manager, so that the bar is closed). Build it with :func:`progress`.

    Attributes
    ----------
    n : int
        Steps done so far.
    total : int or None
        Steps expected (``None``: unknown).
    shown : bool
        Whether a bar is drawn.
    """

    def __init__(self, iterable: Iterable[T] | None = None, *, total: int | None = None,
                 desc: str | None = None, disable: bool | None = None,
                 callback: Callable[[int, int | None], None] | None = None,
                 leave: bool = True, unit: str = "it"):
        if total is None and iterable is not None:
            try:
                total = len(iterable)  # type: ignore[arg-type]
            except TypeError:
                total = None
        self.total = total
        self.n = 0
        self._iterable = iterable
        self._callback = callback
        self.shown = watching() if disable is None else not disable
        self._bar = None
        if self.shown:
            if _in_kernel():
                self._bar = _NotebookBar(total=total, desc=desc, leave=leave, unit=unit)
            else:
                from tqdm.std import tqdm

                self._bar = tqdm(total=total, desc=desc, leave=leave, unit=unit,
                                 dynamic_ncols=True)

    def __iter__(self) -> Iterator[T]:
        if self._iterable is None:
            raise TypeError("this Progress counts steps with update(); it has nothing to iterate")
        try:
            for item in self._iterable:
                yield item
                self.update()
        finally:
            self.close()

    def update(self, n: int = 1) -> None:
        """Count ``n`` more steps done."""
        self.n += n
        if self._bar is not None:
            self._bar.update(n)
        if self._callback is not None:
            self._callback(self.n, self.total)

    def close(self) -> None:
        """Finish the bar (idempotent)."""
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def __enter__(self) -> Progress[T]:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _NotebookBar:
    """A progress bar in a Jupyter output: HTML (a ``<progress>`` element and tqdm's counts)
    shown with a display id and updated in place, at most every ``MIN_INTERVAL`` seconds.

    No widget model is made, so no output can name a closed one (see the module docstring).
    :meth:`close` leaves the last line as text (``leave=True``, or a bar stopped short of its
    total, so that the reader sees where it stopped) or clears the output (``leave=False``).
    """

    MIN_INTERVAL = 0.1  # seconds between two redraws (tqdm's default ``mininterval``)

    def __init__(self, *, total: int | None, desc: str | None, leave: bool, unit: str):
        from IPython.display import display

        self.total, self.desc, self.leave, self.unit = total, desc, leave, unit
        self.n = 0
        self._start = self._drawn = time.monotonic()
        self._handle = display(self._bundle(), raw=True, display_id=True)

    def _bundle(self, final: bool = False) -> dict[str, str]:
        from tqdm.std import tqdm

        elapsed = time.monotonic() - self._start
        text = tqdm.format_meter(self.n, self.total, elapsed, prefix=self.desc or "",
                                 unit=self.unit)
        counts = tqdm.format_meter(self.n, self.total, elapsed, unit=self.unit,
                                   bar_format="{r_bar}").lstrip("| ")
        if self.total:
            meter = f'<progress value="{min(self.n, self.total)}" max="{self.total}"></progress>'
        else:  # unknown total: the counts alone
            meter = ""
            counts = tqdm.format_meter(self.n, None, elapsed, unit=self.unit)
        desc = f"<span>{html.escape(self.desc)}</span> " if self.desc else ""
        state = "done" if final else "running"
        return {
            "text/plain": text,
            "text/html": (f'<div class="dpw-progress dpw-progress-{state}">{desc}{meter} '
                          f"<span>{html.escape(counts)}</span></div>"),
        }

    def update(self, n: int = 1) -> None:
        self.n += n
        now = time.monotonic()
        if now - self._drawn >= self.MIN_INTERVAL or (self.total and self.n >= self.total):
            self._drawn = now
            self._handle.update(self._bundle(), raw=True)

    def close(self) -> None:
        stopped_short = bool(self.total) and self.n < self.total
        if self.leave or stopped_short:
            self._handle.update(self._bundle(final=True), raw=True)
        else:
            self._handle.update({"text/plain": ""}, raw=True)


def progress(iterable: Iterable[T] | None = None, *, total: int | None = None,
             desc: str | None = None, disable: bool | None = None,
             callback: Callable[[int, int | None], None] | None = None,
             leave: bool = True, unit: str = "it") -> Progress[T]:
    """Wrap a long loop (or count steps with ``update()``) in a progress bar.

    Parameters
    ----------
    iterable : iterable, optional
        What the loop runs over; each item taken counts one step.
    total : int, optional
        Steps expected (default: ``len(iterable)`` when it has one).
    desc : str, optional
        What the bar is about, printed before it.
    disable : bool, optional
        ``True``: no bar; ``False``: a bar; ``None`` (default): a bar when someone watches
        (see :func:`watching`).
    callback : callable, optional
        ``callback(done, total)`` after every step, with or without a bar.
    leave : bool
        Keep the finished bar on screen (``False`` for inner loops).
    unit : str
        What one step is called on the bar.

    Returns
    -------
    Progress
    """
    return Progress(iterable, total=total, desc=desc, disable=disable, callback=callback,
                    leave=leave, unit=unit)


# Who listens to the release running in this context (a ContextVar: a release in another
# thread or task reports to its own listener).
_LISTENER: ContextVar[Callable[[int, int], None] | None] = ContextVar(
    "dpwidgets_release_progress", default=None)


@contextmanager
def reporting(callback: Callable[[int, int], None]) -> Iterator[None]:
    """Call ``callback(done, total)`` for every :func:`report` made inside the block."""
    token = _LISTENER.set(callback)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def report(done: int, total: int) -> None:
    """Tell whoever listens (:func:`reporting`) that ``done`` of ``total`` steps of the running
    release are done. ``total`` and ``done`` must be public (a count of nodes or partitions the
    parameters fix), never a number read from the data."""
    listener = _LISTENER.get()
    if listener is not None:
        listener(int(done), int(total))
