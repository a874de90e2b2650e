"""Privacy ledger throughput and budget-meter refresh, against SQLite's own limit.

A spend is one ``BEGIN IMMEDIATE`` transaction on a rollback-journal file with
``synchronous=FULL``: its cost is dominated by the fsyncs of the commit, which no accounting
scheme can avoid. The limit is therefore a bare ``INSERT`` of the same row into the same
``spends`` table, in its own ``BEGIN IMMEDIATE`` transaction, on a copy of the same file with
the same pragmas, measured in the same run (interleaved with the ledger runs so that drift of
the disk affects both alike). A second limit inserts one float into a one-column table.

Grid: starting ledger sizes 10 and 20,000 recorded spends; 1 process and 8 processes spending
concurrently on one file. Goal: ledger spends/s >= 0.8 x the bare-INSERT limit everywhere.
The budget meter's refresh (the kernel side of one redraw) is timed at both sizes too; goal:
within 1.1 x.

Run: ``python -m benchmarks ledger_throughput [--quick]`` (writes
``benchmarks/results/ledger_throughput.md``).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import platform
import random
import shutil
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path

from dpwidgets._progress import progress

RESULTS = Path(__file__).resolve().parent / "results" / "ledger_throughput.md"
SIZES = (10, 20_000)
PROCESSES = (1, 8)
GOAL_RATIO = 0.8
METER_GOAL = 1.1
DATASET = "bench"
CAP = 1e7  # never reached: the benchmark measures recording, not refusals


# -- work done in a worker process ---------------------------------------------------------


def _bare_connection(path: str) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=60.0, isolation_level=None)
    conn.execute("PRAGMA busy_timeout = 60000")
    conn.execute("PRAGMA journal_mode = TRUNCATE")  # the ledger's pragmas
    conn.execute("PRAGMA synchronous = FULL")
    return conn


def _prepare(kind: str, path: str):
    """Open what a run needs (not timed) and return the function doing one operation."""
    if kind == "ledger":
        from dpwidgets.engine.budget import PrivacyLedger

        ledger = PrivacyLedger(path, dataset=DATASET)

        def op(i):
            # With a key, as the session spends (the key lookup is part of the cost).
            ledger.spend(0.001, label=f"release {i}", key=uuid.uuid4().hex)

        return op, ledger.close
    conn = _bare_connection(path)
    if kind in ("bare-row", "bare-row-wait"):
        if kind == "bare-row":

            def begin():
                conn.execute("BEGIN IMMEDIATE")

        else:  # the ledger's own wait for the write lock, without its accounting
            from dpwidgets.engine.budget import _begin_immediate

            def begin():
                _begin_immediate(conn, 60.0, "PRAGMA busy_timeout = 60000")

        def op(i):
            begin()
            conn.execute(
                "INSERT INTO spends (dataset, epsilon, label, created, partition, parts, key, "
                "spent_after) VALUES (?, ?, ?, ?, NULL, NULL, ?, ?)",
                ("bare", 0.001, f"release {i}", time.time(), uuid.uuid4().hex, "1/1000"),
            )
            conn.execute("COMMIT")

    else:  # "bare-float"

        def op(i):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO bare (x) VALUES (?)", (0.001,))
            conn.execute("COMMIT")

    return op, conn.close


def _worker(commands, replies, go) -> None:
    while True:
        command = commands.get()
        if command is None:
            return
        kind, path, n = command
        try:
            op, close = _prepare(kind, path)
        except Exception as exc:  # tell the parent rather than leave it waiting
            replies.put(f"error: {type(exc).__name__}: {exc}")
            continue
        replies.put("ready")
        go.wait()
        start = time.perf_counter()  # CLOCK_MONOTONIC: comparable across processes
        for i in range(n):
            op(i)
        end = time.perf_counter()
        close()
        replies.put((start, end))


# -- the parent ----------------------------------------------------------------------------


class _Pool:
    """Worker processes started once (spawning and importing is not what is measured)."""

    def __init__(self, size: int):
        ctx = mp.get_context("spawn")
        self.go = ctx.Event()
        self.replies = ctx.Queue()
        self.commands = [ctx.Queue() for _ in range(size)]
        self.procs = [
            ctx.Process(target=_worker, args=(q, self.replies, self.go), daemon=True)
            for q in self.commands
        ]
        for p in self.procs:
            p.start()

    def run(self, kind: str, path: str, processes: int, per_process: int) -> tuple[int, float]:
        """(operations, seconds) of ``processes`` workers on one file."""
        self.go.clear()
        for q in self.commands[:processes]:
            q.put((kind, path, per_process))
        ready = [self.replies.get(timeout=300) for _ in range(processes)]
        errors = [r for r in ready if r != "ready"]
        if errors:
            raise RuntimeError(f"a worker could not start: {errors[0]}")
        self.go.set()
        spans = [self.replies.get(timeout=600) for _ in range(processes)]
        self.go.clear()
        start = min(s for s, _ in spans)
        end = max(e for _, e in spans)
        return processes * per_process, end - start

    def close(self) -> None:
        for q in self.commands:
            q.put(None)
        for p in self.procs:
            p.join(timeout=60)


def _template(directory: Path, size: int) -> Path:
    """A ledger file holding ``size`` spends of dataset ``bench``."""
    from dpwidgets.engine.budget import PrivacyLedger

    path = directory / f"template-{size}.sqlite"
    with PrivacyLedger(path, dataset=DATASET, total_epsilon=CAP) as ledger:
        # Filling is not measured: without fsyncs it takes seconds instead of a minute.
        ledger._conn.execute("PRAGMA synchronous = OFF")
        for i in range(size):
            ledger.spend(0.001, label=f"earlier {i}", key=f"earlier-{i}")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE bare (x REAL)")
    conn.close()
    return path


def _fresh_copy(template: Path, directory: Path) -> str:
    path = directory / f"run-{uuid.uuid4().hex[:8]}.sqlite"
    shutil.copyfile(template, path)
    return str(path)


def _meter_session(path: str):
    """A meter over one dataset of ``path``: (meter, session or None, description)."""
    import numpy as np

    from dpwidgets.engine.budget import PrivacyLedger
    from dpwidgets.ui.meter import BudgetMeter

    try:
        from dpwidgets import Session

        session = Session(mode="analyst", ledger=path)
        session.add_dataset(DATASET, np.arange(50.0), total_epsilon=CAP, stand_in=np.zeros(50))
        return session.meter, session, "a Session in analyst mode"
    except Exception as exc:  # the session's API moved: measure the meter alone
        ledger = PrivacyLedger(path, dataset=DATASET)

        class _Stub:
            mode, warn_fraction, last_refusal, datasets = "analyst", 0.8, "", [DATASET]

            def observe(self, callback):
                pass

            def ledger(self, name):
                return ledger

            def overdrafts(self, name):
                return []

        return BudgetMeter(_Stub()), None, f"a stub session (Session failed: {exc!r:.80})"


def _ratio(times: dict[int, list[float]], a: int, b: int) -> float:
    """Median over rounds of time at size ``a`` / time at size ``b`` (same round)."""
    return statistics.median(x / y for x, y in zip(times[a], times[b], strict=True))


def _redraws(templates: dict, directory: Path, repeats: int) -> tuple[dict, dict, str, str]:
    """Median ms of (a) ``BudgetMeter.refresh()`` and (b) one charged analyst release (the
    Release click: ledger spend, fsyncs included, then the meter's refresh), per size;
    sizes interleaved so that the disk's moods hit all alike."""
    meters = {size: _meter_session(_fresh_copy(t, directory)) for size, t in templates.items()}
    refresh: dict[int, list[float]] = {size: [] for size in templates}
    release: dict[int, list[float]] = {size: [] for size in templates}
    release_note = ""
    for i in progress(range(repeats), desc="ledger_throughput redraws"):
        for size, (meter, session, _) in meters.items():
            t0 = time.perf_counter()
            meter.refresh()
            refresh[size].append((time.perf_counter() - t0) * 1e3)
            if session is None or release_note:
                continue
            try:
                t0 = time.perf_counter()
                # A new epsilon each time: a new release, charged (not a cached replay).
                session.release(
                    DATASET, "svt", epsilon=0.001 + 1e-6 * i, label=f"click {i}",
                    variant="standard", c=2, threshold=10.0,
                )
                release[size].append((time.perf_counter() - t0) * 1e3)
            except Exception as exc:
                release_note = f"not measured: the session's release failed ({exc!r:.100})"
    driver = next(iter(meters.values()))[2]
    return (
        refresh,
        {size: v for size, v in release.items() if v},
        driver,
        release_note,
    )


def _read_us(template: Path, directory: Path, repeats: int) -> dict[str, float]:
    """Median microseconds of the ledger's O(1) reads."""
    from dpwidgets.engine.budget import PrivacyLedger

    out = {}
    with PrivacyLedger(_fresh_copy(template, directory), dataset=DATASET) as ledger:
        for name, read in [
            ("spent", lambda: ledger.spent),
            ("summary()", ledger.summary),
            ("recent(50)", lambda: ledger.recent(50)),
        ]:
            times = []
            for _ in range(repeats):
                t0 = time.perf_counter()
                read()
                times.append((time.perf_counter() - t0) * 1e6)
            out[name] = statistics.median(times)
    return out


KINDS = {
    "bare-row": "bare INSERT",
    "ledger": "ledger spend",
    "bare-row-wait": "bare INSERT, ledger's lock wait",
    "bare-float": "bare float INSERT",
}


def main(argv: list[str] | None = None) -> str:
    quick = "--quick" in (argv or [])
    # Many short runs rather than a few long ones: the disk is shared with other jobs whose
    # bursts last seconds, and a short run of each kind in a row sees the same burst.
    repeats = 4 if quick else 30
    per_run = {1: 40, 8: 6}
    order = random.Random(0)
    redraw_repeats = 10 if quick else 100
    runs: dict[tuple[int, int, str], list[tuple[int, float]]] = {}
    files: dict[tuple[int, int, str], str] = {}
    with tempfile.TemporaryDirectory(prefix="dpw-ledger-bench-") as tmp:
        directory = Path(tmp)
        # The meter is measured at 50 too: the first size whose window is full.
        templates = {size: _template(directory, size) for size in (*SIZES, 50)}
        pool = _Pool(max(PROCESSES))
        try:
            for size in SIZES:
                for processes in PROCESSES:
                    for _ in range(repeats):
                        # One round runs every kind once, in a shuffled order: the limit and
                        # the ledger see the same moods of a disk shared with other jobs, and
                        # each ratio below compares runs of one round.
                        for kind in order.sample(list(KINDS), len(KINDS)):
                            if size <= 1_000:
                                path = _fresh_copy(templates[size], directory)
                            else:
                                # Copying a 2 MB file before every run would load the disk
                                # more than the run: one copy per kind, grown by the rounds
                                # (by 1,440 spends at most).
                                path = files.setdefault(
                                    (size, processes, kind),
                                    _fresh_copy(templates[size], directory),
                                )
                            run = pool.run(kind, path, processes, per_run[processes])
                            runs.setdefault((size, processes, kind), []).append(run)
                            if size <= 1_000:
                                os.remove(path)
        finally:
            pool.close()
        refresh, release, driver, release_note = _redraws(
            {size: templates[size] for size in (SIZES[0], 50, SIZES[-1])},
            directory,
            redraw_repeats,
        )
        reads = {size: _read_us(templates[size], directory, 200 if quick else 2000)
                 for size in SIZES}

    # Pooled rate: all operations of a cell and kind / all their time.
    pooled = {k: sum(n for n, _ in v) / sum(t for _, t in v) for k, v in runs.items()}

    def round_ratios(size: int, processes: int, kind: str) -> list[float]:
        """ledger / ``kind`` within each round (both runs from the same round)."""
        return [
            (n1 / t1) / (n2 / t2)
            for (n1, t1), (n2, t2) in zip(
                runs[(size, processes, "ledger")], runs[(size, processes, kind)], strict=True
            )
        ]

    rows = []
    spread = []
    verdicts = []
    for size in SIZES:
        for processes in PROCESSES:
            cell = {kind: pooled[(size, processes, kind)] for kind in KINDS}
            ratios = round_ratios(size, processes, "bare-row")
            ratio = statistics.median(ratios)
            verdicts.append(ratio >= GOAL_RATIO)
            rows.append(
                f"| {size:,} | {processes} | {cell['bare-row']:,.0f} | {cell['ledger']:,.0f} | "
                f"**{ratio:.2f}** | {cell['ledger'] / cell['bare-row']:.2f} | "
                f"{'yes' if ratio >= GOAL_RATIO else 'NO'} | {cell['bare-row-wait']:,.0f} | "
                f"{statistics.median(round_ratios(size, processes, 'bare-row-wait')):.2f} | "
                f"{cell['bare-float']:,.0f} | "
                f"{statistics.median(round_ratios(size, processes, 'bare-float')):.2f} |"
            )
            q1, _, q3 = statistics.quantiles(ratios, n=4)
            spread.append(
                f"| {size:,} | {processes} | {q1:.2f} | {ratio:.2f} | {q3:.2f} | "
                f"{sum(r >= GOAL_RATIO for r in ratios)} of {len(ratios)} | "
                f"{min(cell.values()):,.0f}-{max(cell.values()):,.0f} |"
            )
    small, large = SIZES[0], SIZES[-1]
    read_rows = [
        f"| {name} | {reads[small][name]:.0f} | {reads[large][name]:.0f} | "
        f"{reads[large][name] / reads[small][name]:.2f} |"
        for name in reads[small]
    ]
    refresh_ratio = _ratio(refresh, large, small)
    if release:
        release_ratio = _ratio(release, large, small)
        release_lines = [
            "| spends recorded | Release click ms (spend + fsyncs + meter refresh) |",
            "|---|---|",
            *[f"| {size:,} | {statistics.median(ms):.2f} |" for size, ms in release.items()],
            "",
            f"Ratio {large:,} / {small:,}: **{release_ratio:.2f}** (goal <= {METER_GOAL}: "
            f"{'yes' if release_ratio <= METER_GOAL else 'NO'}).",
        ]
    else:
        release_lines = [f"Release click {release_note or 'not measured (no session)'}."]
    probe = sqlite3.connect(":memory:")
    sqlite_version = probe.execute("SELECT sqlite_version()").fetchone()[0]
    probe.close()
    report = "\n".join(
        [
            "# Privacy ledger throughput",
            "",
            "Produced by `python -m benchmarks ledger_throughput`"
            + (" --quick" if quick else "")
            + ". Every spend is one",
            "`BEGIN IMMEDIATE` transaction; the file uses `journal_mode=TRUNCATE` (a rollback",
            "journal, never WAL) and `synchronous=FULL`. The limit (\"bare INSERT\") inserts the",
            "same row into the same `spends` table in its own `BEGIN IMMEDIATE` transaction, on a",
            "copy of the same file with the same pragmas, in the same run, waiting for the lock",
            "with SQLite's busy handler. \"Bare INSERT, ledger's lock wait\" is the same insert",
            "taking the lock the way the ledger does (short randomised retries instead of SQLite's",
            "1-100 ms sleeps): against it the ratio isolates the cost of the accounting. \"Bare",
            "float\" inserts one REAL into a one-column table. The ledger spends with an",
            "idempotency key, as the session does. Every run starts from a fresh copy of a file",
            "holding the stated number of spends; the processes have started and opened the file",
            "before the clock starts; spends/s = all operations of the run / (last end - first",
            "start).",
            "",
            f"Machine: {platform.machine()}, {os.cpu_count()} cores (shared with other jobs "
            f"while this ran), {platform.system()} {platform.release()}, Python "
            f"{platform.python_version()}, SQLite {sqlite_version}. {repeats} rounds per "
            f"cell, each running every kind once in a shuffled order; {per_run[1]} operations "
            f"per run with 1 process, {per_run[8]} per process with 8. Starting sizes: "
            f"{', '.join(f'{s:,}' for s in SIZES)} recorded spends. Rates are pooled (all "
            "operations / all their time); a ratio is the median over rounds of ledger / other "
            "kind within a round, robust to the bursts of other jobs on the shared disk. "
            f"Goal: ledger >= {GOAL_RATIO} x bare INSERT.",
            "",
            "| spends recorded | processes | bare INSERT /s | ledger spend /s | ratio "
            f"(median of rounds) | pooled ratio | >= {GOAL_RATIO} | bare, ledger's wait /s | "
            "ratio | bare float /s | ratio |",
            "|---|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            f"All cells meet the goal: {'yes' if all(verdicts) else 'NO'}.",
            "",
            "Spread of the per-round ratio ledger / bare INSERT:",
            "",
            f"| spends | processes | 1st quartile | median | 3rd quartile | rounds >= "
            f"{GOAL_RATIO} | pooled rates of the 4 kinds /s |",
            "|---|---|---|---|---|---|---|",
            *spread,
            "",
            "## Reads (one process, microseconds, median)",
            "",
            f"| read | {small:,} spends | {large:,} spends | ratio |",
            "|---|---|---|---|",
            *read_rows,
            "",
            "`recent(50)` returns 10 spends from the 10-spend ledger and 50 from the other.",
            "",
            "## Budget meter",
            "",
            f"Driven by {driver}, one dataset, {redraw_repeats} rounds, each timing every size "
            "once (kernel side: ledger reads and traits; no browser). Times are medians; a ratio "
            "is the median over rounds of the ratio within a round.",
            "",
            "| spends recorded | `BudgetMeter.refresh()` ms | segments |",
            "|---|---|---|",
            *[
                f"| {size:,} | {statistics.median(ms):.3f} | {min(size, 50) + (size > 50)} |"
                for size, ms in refresh.items()
            ],
            "",
            f"Refresh ratio {large:,} / {small:,}: **{refresh_ratio:.2f}** (goal <= {METER_GOAL}: "
            f"{'yes' if refresh_ratio <= METER_GOAL else 'NO'}); {large:,} / 50: "
            f"**{_ratio(refresh, large, 50):.2f}**. The refresh reads the same things at any "
            "size (one snapshot: the totals row and the latest 50 spends); from 50 spends on it "
            "draws 50 "
            "segments plus one aggregated \"earlier releases\" segment, where the 10-spend "
            "ledger has 10 segments to draw.",
            "",
            *release_lines,
            "",
        ]
    )
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(report)
    return report


if __name__ == "__main__":
    import sys

    sys.stdout.write(main(sys.argv[1:]))
