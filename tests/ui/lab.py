"""Page helpers for the browser tests: open a notebook, run it, find and poke its widgets.

Every wait is on a DOM condition (or, for "the figure changed", on a condition re-checked until
a deadline); nothing sleeps a fixed time and hopes.
"""

from __future__ import annotations

import re
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

from playwright.sync_api import Locator, Page
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError
from playwright.sync_api import expect as pw_expect

# What ipywidgets / JupyterLab show instead of a widget that failed to render.
WIDGET_ERRORS = ("Error displaying widget", "Click to show javascript error", "Model not found")

RUN_TIMEOUT_MS = 120_000

# Counts a notebook's code cells, how many have an execution count and how many are queued or
# running ("[*]"). A cell that raised keeps its execution count; the cells queued after it go
# back to "[ ]".
_CELL_STATE_JS = """
(scope) => {
  const root = document.querySelector(scope);
  if (!root) return null;
  const text = [...root.querySelectorAll('.jp-CodeCell .jp-InputArea-prompt')]
    .map(p => p.textContent.trim());
  return {
    cells: text.length,
    done: text.filter(t => /^\\[\\d+\\]:?$/.test(t)).length,
    running: text.filter(t => t.includes('*')).length,
  };
}
"""


@dataclass
class PageLog:
    """What the page complained about: console errors, uncaught exceptions, off-host requests."""

    allowed_host: str
    console_errors: list[str] = field(default_factory=list)
    page_errors: list[str] = field(default_factory=list)
    external_requests: list[str] = field(default_factory=list)
    failed_requests: list[str] = field(default_factory=list)

    @classmethod
    def attach(cls, page: Page, allowed_host: str) -> PageLog:
        log = cls(allowed_host)

        def on_request(request):
            if urlparse(request.url).hostname not in (allowed_host, None):
                if not request.url.startswith(("data:", "blob:")):
                    log.external_requests.append(request.url)

        page.on("request", on_request)
        page.on("console", lambda m: log.console_errors.append(m.text)
                if m.type == "error" else None)
        # The stack too: an uncaught error of BokehJS says little without it.
        page.on("pageerror", lambda e: log.page_errors.append(
            f"{e.message}\n{e.stack}" if e.stack else str(e)))
        page.on("requestfailed", lambda r: log.failed_requests.append(
            f"{r.url} ({r.failure})"))
        return log

    def summary(self) -> str:
        parts = [
            ("console errors", self.console_errors),
            ("page errors", self.page_errors),
            ("requests to other hosts", self.external_requests),
            ("failed requests", self.failed_requests),
        ]
        return "\n".join(f"{name}:\n  " + "\n  ".join(items or ["(none)"])
                         for name, items in parts)


def screenshot(page: Page, folder: Path, name: str) -> Path:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


# -- JupyterLab --------------------------------------------------------------------------------
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"


# The kernel of the current notebook as the server sees it: its session's kernel id and state
# (a same-origin GET with the page's cookie). JupyterLab shows "idle" in the toolbar before the
# session has a kernel on a loaded machine; the server's word is the one a run needs.
_KERNEL_JS = """
async () => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const title = panel && document.querySelector(
    `.lm-TabBar-tab[data-id="${panel.id}"] .lm-TabBar-tabLabel`);
  if (!panel || !title) return null;
  const name = title.textContent.trim();
  const sessions = await (await fetch('/api/sessions', {credentials: 'same-origin'})).json();
  const mine = sessions.filter(s => s.path.split('/').pop() === name && s.kernel);
  return mine.length === 1
    ? {id: mine[0].kernel.id, state: mine[0].kernel.execution_state} : null;
}
"""


def notebook_kernel(page: Page) -> dict | None:
    """``{"id", "state"}`` of the current notebook's kernel on the server, or None."""
    return page.evaluate(_KERNEL_JS)


def wait_for_kernel(page: Page, timeout_ms: int = 60_000) -> dict:
    """Wait until the current notebook has exactly one kernel on the server and it is idle."""
    deadline = time.monotonic() + timeout_ms / 1000
    while True:
        _accept_kernel_dialog(page)
        kernel = notebook_kernel(page)
        if kernel and kernel["state"] == "idle":
            return kernel
        if time.monotonic() > deadline:
            raise AssertionError(f"the notebook's kernel is not idle on the server: {kernel}")
        page.wait_for_timeout(250)  # the re-check interval of a condition, not a sync


def open_notebook(page: Page, url: str) -> Locator:
    """Open a notebook in JupyterLab and wait until its kernel is idle; return the notebook."""
    page.goto(url)
    notebook = page.locator(NOTEBOOK)
    pw_expect(notebook.locator(".jp-Cell").first).to_be_visible(timeout=60_000)
    pw_expect(page.locator('.jp-Notebook-ExecutionIndicator[data-status="idle"]')).to_have_count(
        1, timeout=60_000)
    wait_for_kernel(page)
    return notebook


def cell_state(page: Page) -> dict:
    return page.evaluate(_CELL_STATE_JS, NOTEBOOK)


def _accept_kernel_dialog(page: Page) -> None:
    """JupyterLab asks "Select Kernel" when a notebook's kernel is slow to start on a loaded
    machine; answer with the notebook's own kernel (the preselected ``python3``)."""
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    if dialog.count():
        dialog.locator(".jp-mod-accept").click()
        pw_expect(dialog).to_have_count(0, timeout=10_000)


def _start_run_all(page: Page, attempts: int = 3, fresh: bool = True) -> None:
    """Click Run > Run All Cells until the notebook shows a queued or finished cell.

    Right after the page loads, the notebook may not be JupyterLab's current widget yet and
    the menu item is then disabled (or the click is lost): focus a cell, check the item is
    enabled, and confirm on the DOM that the run started; else close the menu and retry.
    ``fresh=False`` (a rerun over cells that already ran): the run has started when a cell is
    queued again, or every cell already has its new count.
    """
    started = f"""() => {{
      const s = ({_CELL_STATE_JS})({NOTEBOOK!r});
      return s && ({'s.done > 0 || ' if fresh else 's.done === s.cells || '}s.running > 0);
    }}"""
    item = page.locator(".lm-Menu-item:not(.lm-mod-disabled)").filter(
        has=page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")))
    for _ in range(attempts):
        _accept_kernel_dialog(page)
        page.locator(f"{NOTEBOOK} .jp-CodeCell .jp-InputArea-prompt").first.click()
        page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        try:
            item.click(timeout=5_000)
            page.wait_for_function(started, timeout=10_000, polling=100)
            return
        except PlaywrightTimeoutError:
            if page.locator(".lm-Menu").count():
                page.keyboard.press("Escape")
    raise AssertionError(f"Run All Cells did not start after {attempts} attempts")


def write_notebook(path: Path, *cells: str) -> Path:
    """Write a notebook of ``cells`` (code, in order, no outputs) for the Python 3 kernel."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in cells]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    nbformat.write(nb, str(path))
    return path


def wait_for_run_all(page: Page, timeout_ms: int, polling: int = 250) -> None:
    """Wait until a Run All that has started (:func:`_start_run_all`) has finished: nothing is
    queued any more (or the queue stopped early: a cell raised, or the kernel was restarted
    under it, and the cells after went back to "[ ]")."""
    page.wait_for_function(
        f"""() => {{
          const s = ({_CELL_STATE_JS})({NOTEBOOK!r});
          return s && s.running === 0;
        }}""",
        timeout=timeout_ms,
        polling=polling,
    )


def _page_dialogs(page: Page) -> list[str]:
    return [t.strip() for t in page.locator(".jp-Dialog").all_inner_texts()]


def run_all_cells(page: Page, timeout_ms: int = RUN_TIMEOUT_MS) -> dict:
    """Run > Run All Cells from the menu bar; wait until the queue is empty.

    Returns the final cell state; fails (quoting the traceback) if a cell raised, i.e. if the
    queue stopped before every code cell had an execution count. A run that stopped because
    the kernel went away under it (the server gave the notebook another kernel, or restarted
    it: the queue is cancelled with no traceback) is run again once on the new kernel, from
    the first cell; a second loss, or a stop with the same kernel, fails with what the page
    and the server said.
    """
    state = cell_state(page)
    assert state and state["cells"] > 0, f"no code cells in {NOTEBOOK}: {state}"
    assert state["done"] == 0, (
        f"the notebook was saved with execution counts ({state}); strip its outputs")
    for attempt in (1, 2):
        before = wait_for_kernel(page)
        _start_run_all(page, fresh=attempt == 1)
        wait_for_run_all(page, timeout_ms)
        state = cell_state(page)
        if state["done"] == state["cells"]:
            return state
        after = notebook_kernel(page)
        stderr = page.locator(
            f'{NOTEBOOK} [data-mime-type="application/vnd.jupyter.stderr"]').all_inner_texts()
        tracebacks = [t for t in stderr if "Traceback" in t or "Error" in t]
        dialogs = _page_dialogs(page)
        lost = not tracebacks and (
            after is None or after["id"] != before["id"] or after["state"] != "idle"
            or any("Kernel Restarting" in d or "appears to have died" in d for d in dialogs))
        why = f"{state}; kernel {before} -> {after}; dialogs {dialogs}"
        if not lost or attempt == 2:
            raise AssertionError(f"Run All Cells stopped early ({why}):\n"
                                 + "\n---\n".join(tracebacks or stderr)[-4000:])
        # Not the notebook's doing (it raised nothing): the kernel process went away. Say so in
        # the test report, answer JupyterLab's dialog and run the whole notebook again.
        warnings.warn(f"the kernel went away under Run All Cells ({why}); running it again",
                      stacklevel=2)
        for button in page.locator(".jp-Dialog .jp-mod-accept").all():
            button.click()
    return state


# -- widgets, in any page (JupyterLab or Voila) -------------------------------------------------
def assert_no_widget_errors(scope: Locator) -> None:
    text = scope.inner_text()
    found = [e for e in WIDGET_ERRORS if e in text]
    assert not found, f"widget errors on the page: {found}"


def wait_for_bokeh(scope: Locator, count: int = 1, timeout_ms: int = 60_000) -> Locator:
    """Wait until ``count`` Bokeh canvases are visible in ``scope``; return them.

    BokehJS 3 renders into shadow roots; Playwright's CSS engine pierces them.
    """
    canvases = scope.locator(".bk-Canvas")
    pw_expect(canvases.nth(count - 1)).to_be_visible(timeout=timeout_ms)
    return canvases


def wait_until_changed(locator: Locator, before: bytes, timeout_s: float = 30.0) -> bytes:
    """Re-screenshot ``locator`` until it differs from ``before``; return the new image."""
    deadline = time.monotonic() + timeout_s
    while True:
        now = locator.screenshot(animations="disabled")
        if now != before:
            return now
        if time.monotonic() > deadline:
            raise AssertionError(f"{locator} did not change within {timeout_s}s")
        locator.page.wait_for_timeout(200)  # the re-check interval of a condition, not a sync


def nudge_slider(slider: Locator, presses: int = 3, key: str = "ArrowRight") -> None:
    """Move an ipywidgets slider (``.widget-slider``) with the keyboard on its handle."""
    handle = slider.locator(".noUi-handle").first
    handle.focus()
    for _ in range(presses):
        handle.press(key)


def readout(slider: Locator) -> str:
    return slider.locator(".widget-readout").first.inner_text().strip()


def type_into_readout(slider: Locator, text: str) -> None:
    """Set an ipywidgets slider by typing into its editable readout, then Enter."""
    box = slider.locator(".widget-readout").first
    box.click()
    box.press("Control+A")
    box.press_sequentially(text)
    box.press("Enter")
