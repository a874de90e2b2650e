"""Run the benchmarks: ``python -m benchmarks [name ...] [--quick]`` (or ``make bench``).

Each module reproduces one figure or table of the source texts and writes its results to
``benchmarks/results/``. With names (or name prefixes, e.g. ``streams_``) only those modules
run; ``--quick`` asks each for a smoke run with fewer repetitions.
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
    wanted = [a for a in argv if not a.startswith("-")]
    options = [a for a in argv if a.startswith("-")]
    if wanted:
        unknown = [w for w in wanted if not any(n.startswith(w) for n in names)]
        if unknown:
            sys.stderr.write(f"no benchmark matches {unknown}; known: {', '.join(names)}\n")
            return 2
        names = [n for n in names if any(n.startswith(w) for w in wanted)]
    for name in names:
        module = importlib.import_module(f"benchmarks.{name}")
        if not hasattr(module, "main"):
            continue
        start = time.perf_counter()
        sys.stdout.write(f"== benchmarks.{name}\n")
        module.main(options)
        sys.stdout.write(f"   done in {time.perf_counter() - start:.1f} s\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
