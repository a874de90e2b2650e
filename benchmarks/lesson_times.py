"""Every lesson, top to bottom, in a real browser: JupyterLab in headless Chromium, Run All Cells.

The issue's goal for the lessons as a course: each runs top to bottom in under 30 s in the
browser. Each lesson ``notebooks/0*.ipynb`` is opened once in a hermetic JupyterLab server (the
browser tests' ``tests/ui/server.py``) in a fresh Chromium profile; the clock starts at the Run
All Cells click and stops when the kernel is idle and every code cell has its execution count
(``tests/ui/lesson_timing.py``, shared with ``tests/ui/test_lesson_times.py``). JupyterLab
records each cell's execution timestamps; from them:

* kernel: the sum over the code cells of execute_input to execute_reply (the lesson's code);
* rest: browser time minus kernel time (the Run menu, messages to and from the page, and the
  page drawing the outputs, widgets and Bokeh figures while the kernel waits or has finished);
* kernel CPU: the CPU seconds the kernel process used from the click to done (``/proc``), a
  figure the other jobs of a shared machine do not inflate, unlike the wall times;
* the slowest cells by kernel time.

One pass per lesson (a lesson is run once per kernel: a second Run All would replay releases).
Headless Chromium paints without a GPU, like the browser tests.

Run: ``python -m benchmarks lesson_times [--only=03,05]`` (needs the ``test`` extra and
Chromium: ``make browser``; writes ``benchmarks/results/lesson_times.md``; ``--only`` is a
probe and writes nothing; ``--quick`` changes nothing, one pass is all this does).
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results" / "lesson_times.md"
REPO = Path(__file__).resolve().parents[1]
SLOWEST = 3  # cells listed per lesson


def measure(server, playwright, profiles: Path, notebooks: list[str]) -> list[dict]:
    """Run each lesson once in a fresh Chromium profile; its run and its cells' timings."""
    from tests.ui.lesson_timing import cell_timings, time_lesson
    from tests.ui.server import launch_chromium

    out = []
    for notebook in notebooks:
        context = launch_chromium(playwright, profiles / Path(notebook).stem)
        try:
            page = context.pages[0] if context.pages else context.new_page()
            run = time_lesson(page, server, notebook)
            cells = cell_timings(page, server, notebook) if run.done else []
        finally:
            context.close()
            for kernel in server.api("kernels"):
                server.api(f"kernels/{kernel['id']}", method="DELETE")
        out.append({"run": run, "cells": cells})
        print(f"{Path(notebook).stem}: {run.seconds:.1f} s "
              f"(kernel {sum(c.kernel_s for c in cells):.1f} s, kernel CPU "
              f"{run.kernel_cpu:.1f} s), load {run.load:.2f}", flush=True)
    return out


def report(results: list[dict], elapsed: float, load_before: float) -> str:
    from tests.ui.lesson_timing import LESSON_GOAL_S, lesson_name

    rows, slow_rows, missed = [], [], []
    for r in results:
        run, cells = r["run"], r["cells"]
        name = lesson_name(run.notebook)
        kernel = sum(c.kernel_s for c in cells)
        ok = run.complete and run.seconds < LESSON_GOAL_S
        if not ok:
            missed.append(name)
        state = "" if run.complete else f" ({run.done}/{run.cells} cells, stopped on an error)"
        rows.append(f"| {name} | {run.cells} | {run.seconds:.1f}{state} | {kernel:.1f} | "
                    f"{run.seconds - kernel:.1f} | {run.kernel_cpu:.1f} | {run.load:.1f} | "
                    f"{'yes' if ok else '**no**'} |")
        for c in sorted(cells, key=lambda c: -c.kernel_s)[:SLOWEST]:
            line = c.first_line.replace("|", "\\|").replace("`", "'")
            slow_rows.append(f"| {name} | {c.index} | {c.kernel_s:.2f} | `{line}` |")
    return "\n".join([
        "# Lessons top to bottom in a real browser (JupyterLab, headless Chromium)",
        "",
        f"Produced by `python -m benchmarks lesson_times` in {elapsed:.0f} s. Machine: "
        f"{platform.machine()}, {os.cpu_count()} cores, shared: 1-minute load average "
        f"{load_before:.1f} at the start (each lesson's at its end is in the table), Python "
        f"{platform.python_version()}, Chromium headless without a GPU. Each lesson once, in "
        f"a fresh Chromium profile and kernel; *browser*: from the Run All Cells click until "
        f"the kernel is idle and every code cell has its execution count; *kernel*: the sum of "
        f"the cells' execute_input to execute_reply (JupyterLab's recorded timing); *rest*: "
        f"the difference (menu, messages, the page drawing widgets and figures); *kernel CPU*: "
        f"CPU time of the kernel process over the run (not inflated by the machine's other "
        f"jobs, unlike the wall times); *load*: the 1-minute load average at the lesson's end. "
        f"Times in s.",
        "",
        "| lesson | code cells | browser | kernel | rest | kernel CPU | load | under "
        f"{LESSON_GOAL_S:g} s |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
        f"Goal: every lesson top to bottom in under {LESSON_GOAL_S:g} s in the browser: "
        + ("met." if not missed else f"NOT met for {', '.join(missed)}."),
        "",
        f"## The {SLOWEST} slowest cells of each lesson (kernel time)",
        "",
        "| lesson | cell | kernel s | first line |",
        "|---|---|---|---|",
        *slow_rows,
        "",
    ])


def main(argv: list[str] | None = None) -> str:
    # --only=03,05: the lessons whose names start with these (a probe: nothing written).
    only = [a.split("=", 1)[1].split(",") for a in (argv or []) if a.startswith("--only=")]
    sys.path.insert(0, str(REPO))
    from playwright.sync_api import sync_playwright

    from tests.ui.lesson_timing import RECORD_TIMING, lesson_name, lessons
    from tests.ui.server import CHROMIUM, start_lab, stop_lab

    if not CHROMIUM.exists():
        raise SystemExit(f"no Chromium at {CHROMIUM}: run `make browser`")
    chosen = [n for n in lessons()
              if not only or any(lesson_name(n).startswith(p) for p in only[0])]
    load_before = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        server = start_lab(Path(tmp) / "lab", settings=RECORD_TIMING)
        try:
            with sync_playwright() as p:
                results = measure(server, p, Path(tmp) / "profiles", chosen)
        finally:
            stop_lab(server)
    text = report(results, time.perf_counter() - start, load_before)
    if not only:
        RESULTS.write_text(text)
    print(text)
    return text


if __name__ == "__main__":
    main(sys.argv[1:])
