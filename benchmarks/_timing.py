"""Timing shared by the widget redraw benchmarks: CPU beside wall time, nearest-rank p95."""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable

from dpwidgets._progress import progress

__all__ = ["Clock", "stats", "timed"]


class Clock:
    """Wall and CPU time (``time.process_time``: this process only, so the other jobs on a
    shared machine do not count) of a block, in ms."""

    def __enter__(self):
        self.wall0, self.cpu0 = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc):
        self.wall = (time.perf_counter() - self.wall0) * 1e3
        self.cpu = (time.process_time() - self.cpu0) * 1e3


def timed(action: Callable[[int], object], repeats: int,
          warmup: bool = True) -> tuple[list[float], list[float]]:
    """CPU and wall ms of ``repeats`` calls ``action(i)``, after one warm-up call
    ``action(-1)`` (first-call imports and caches are not what a slider move costs)."""
    if warmup:
        action(-1)
    cpu, wall = [], []
    # The bar moves between timed blocks, never inside one.
    for i in progress(range(repeats), leave=False, unit="repeat"):
        with Clock() as c:
            action(i)
        cpu.append(c.cpu)
        wall.append(c.wall)
    return cpu, wall


def stats(ms: list[float]) -> tuple[float, float, float]:
    """Median, p95 (nearest rank: of 20 samples the 19th, of 40 the 38th) and max."""
    ordered = sorted(ms)
    return statistics.median(ms), ordered[math.ceil(0.95 * len(ordered)) - 1], max(ms)
