"""Run a lesson in JupyterLab and time it: Run All Cells until the kernel is idle and every code
cell has its execution count, with no error output.

Shared by the browser test ``test_lesson_times.py`` and the benchmark ``benchmarks/lesson_times.py``
(the issue's "every lesson runs top to bottom in under 30 s in the browser").
"""

from __future__ import annotations

import os
import time
import urllib.error
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from playwright.sync_api import Page
from playwright.sync_api import expect as pw_expect

from .lab import NOTEBOOK, _start_run_all, cell_state, open_notebook, wait_for_run_all
from .server import REPO, LabServer

#: The issue's goal for one lesson, top to bottom, in the browser.
LESSON_GOAL_S = 30.0
#: How long a lesson may run before the measurement gives up (well past the goal, so that a
#: slow lesson is measured, not just reported as "over 30 s").
LESSON_TIMEOUT_MS = 240_000

#: Server settings (``start_lab(..., settings=RECORD_TIMING)``) under which JupyterLab writes each
#: cell's execution timestamps into its metadata (``cell_timings`` reads them back).
RECORD_TIMING = {"@jupyterlab/notebook-extension/tracker.jupyterlab-settings":
                 {"recordTiming": True}}

# Error outputs render as stderr; a traceback (IPython's or Python's) names itself.
_ERRORS_JS = """
(scope) => [...document.querySelectorAll(
    scope + ' [data-mime-type="application/vnd.jupyter.stderr"]')]
  .map(e => e.innerText).filter(t => /Traceback|Error\\b/.test(t) && !/Warning/.test(t))
"""


def lessons() -> list[str]:
    """The lesson notebooks, ``notebooks/0*.ipynb``, as paths under the server's root."""
    return [f"notebooks/{p.name}" for p in sorted((REPO / "notebooks").glob("0*.ipynb"))]


@dataclass(frozen=True)
class LessonRun:
    """One lesson, run top to bottom: ``seconds`` from the Run All click to done."""

    notebook: str
    seconds: float
    cells: int
    done: int
    errors: tuple[str, ...]
    load: float  # 1-minute load average when the run finished
    started_at: float  # time.time() of the Run All click (to set against kernel timestamps)
    kernel_cpu: float  # CPU seconds the kernel used from the click to done (NaN if unknown)

    @property
    def complete(self) -> bool:
        return self.done == self.cells and not self.errors


def time_lesson(page: Page, server: LabServer, notebook: str,
                timeout_ms: int = LESSON_TIMEOUT_MS) -> LessonRun:
    """Open ``notebook`` (kernel idle), Run All Cells, and time it until the kernel is idle again
    and every code cell has an execution count (or the queue stopped on an error).

    The clock starts just before the Run menu is opened: the page has loaded and the kernel has
    started (JupyterLab starts it after the notebook shows), so what is timed is the lesson's
    own code and the widgets it shows.
    """
    open_notebook(page, server.lab(notebook))
    _wait_for_idle_kernel(server)
    state = cell_state(page)
    assert state and state["cells"] > 0, f"no code cells in {notebook}: {state}"
    assert state["done"] == 0, f"{notebook} was saved with execution counts ({state})"
    cpu_before = kernel_cpu_seconds(server)
    started_at, start = time.time(), time.perf_counter()
    _start_run_all(page)
    wait_for_run_all(page, timeout_ms, polling=100)  # a finer clock than the tests need
    pw_expect(page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')).to_have_count(
        1, timeout=timeout_ms)
    seconds = time.perf_counter() - start
    cpu = kernel_cpu_seconds(server) - cpu_before
    state = cell_state(page)
    errors = tuple(page.evaluate(_ERRORS_JS, NOTEBOOK))
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    return LessonRun(notebook, seconds, state["cells"], state["done"], errors, load, started_at,
                     cpu)


def _wait_for_idle_kernel(server: LabServer, timeout_s: float = 90.0) -> None:
    """Wait until the server has a kernel and it is idle (started, nothing running)."""
    import urllib.error

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            kernels = server.api("kernels")
        except urllib.error.HTTPError as exc:
            # jupyter_server answers 500 to a kernel list that races a kernel's shutdown (the
            # previous lesson's): ask again, within the same deadline.
            if exc.code < 500 or time.monotonic() > deadline:
                raise
            kernels = None
        if kernels and all(k["execution_state"] == "idle" for k in kernels):
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"no idle kernel within {timeout_s:g} s: {kernels}")
        time.sleep(0.25)  # polling the server's kernel state, not synchronising the page


def kernel_cpu_seconds(server: LabServer) -> float:
    """CPU seconds (user + system, children excluded) used so far by the server's running
    kernels: a measure of the lesson's own work that the other jobs on a shared machine do not
    inflate, unlike wall time. Linux only (``/proc``); NaN where it cannot be read.

    A kernel is found by its connection file (``kernel-<id>.json`` in the server's runtime
    folder) on its command line.
    """
    runtime = server.root.parent / "runtime"
    try:
        wanted = {str(runtime / f"kernel-{k['id']}.json") for k in server.api("kernels")}
        ticks = os.sysconf("SC_CLK_TCK")
        total, found = 0.0, 0
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            try:
                args = (proc / "cmdline").read_bytes().split(b"\0")
                if not any(a.decode(errors="replace") in wanted for a in args):
                    continue
                # Fields 14 and 15 of /proc/<pid>/stat (after the parenthesised command name).
                fields = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                total += (int(fields[11]) + int(fields[12])) / ticks
                found += 1
            except OSError:  # the process ended while we looked
                continue
    except (OSError, ValueError, AttributeError, urllib.error.URLError):
        return float("nan")
    return total if found else float("nan")


def lesson_name(notebook: str) -> str:
    return Path(notebook).stem


@dataclass(frozen=True)
class CellTiming:
    """One code cell of a lesson run in JupyterLab, from the timestamps JupyterLab records.

    ``kernel_s``: execute_input to execute_reply, the cell's own code; ``gap_s``: from the
    previous cell's reply to this cell's execute_input (near 0 in a Run All: the front end's
    widget messages queue behind the cells, and the kernel handles them after the last one).
    """

    index: int  # in the notebook, markdown cells counted
    first_line: str
    kernel_s: float
    gap_s: float


def _stamp(execution: dict, key: str) -> float:
    return datetime.fromisoformat(execution[key].replace("Z", "+00:00")).timestamp()


def cell_timings(page: Page, server: LabServer, notebook: str,
                 timeout_s: float = 60.0) -> list[CellTiming]:
    """Save the notebook just run (under ``RECORD_TIMING``) and read each code cell's times.

    Saving writes only the server's temporary copy of the lesson.
    """
    def saved() -> list | None:
        try:
            cells = server.api(f"contents/{notebook}")["content"]["cells"]
        except (urllib.error.URLError, OSError):  # read while the save is writing it
            return None
        code = [(i, c) for i, c in enumerate(cells) if c["cell_type"] == "code"]
        stamped = all("shell.execute_reply" in c["metadata"].get("execution", {})
                      for _, c in code)
        return code if stamped else None

    deadline = time.monotonic() + timeout_s
    code = None
    while code is None:
        if time.monotonic() > deadline:
            raise AssertionError(
                f"{notebook}: no execution timestamps after saving; is RECORD_TIMING set?")
        # Save (again, if a keystroke was lost): the notebook holds the BokehJS loader, a few
        # MB, so give each save a few seconds to land.
        page.locator(f"{NOTEBOOK} .jp-CodeCell .jp-InputArea-prompt").first.click()
        page.keyboard.press("Control+s")
        for _ in range(10):
            page.wait_for_timeout(500)  # re-check interval of the saved file, not a sync
            code = saved()
            if code is not None:
                break
    rows, previous = [], None
    for i, cell in code:
        ex = cell["metadata"]["execution"]
        start, reply = _stamp(ex, "iopub.execute_input"), _stamp(ex, "shell.execute_reply")
        source = "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
        first = next((line for line in source.splitlines()
                      if line.strip() and not line.startswith("#")), "")
        rows.append(CellTiming(i, first[:70], reply - start,
                               0.0 if previous is None else start - previous))
        previous = reply
    return rows
