"""Run every benchmark: ``python -m benchmarks`` (or ``make bench``).

Each module reproduces one figure or table of the source texts and writes its results to
``benchmarks/results/``; pass ``--quick`` for a smoke run with fewer repetitions.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    here = Path(__file__).parent
    names = sorted(
        m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_")
    )
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        if not hasattr(module, "main"):
            continue
        start = time.perf_counter()
        sys.stdout.write(f"== benchmarks.{name}\n")
        module.main(argv)
        sys.stdout.write(f"   done in {time.perf_counter() - start:.1f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
