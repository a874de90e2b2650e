"""The diagnostics on a table that stays in its query engine: time and peak memory.

A generated Parquet file of ``rows`` records (two real features, a 0/1 outcome drawn from a
logistic model) is diagnosed three ways, each in its own process (peak resident memory is per
process):

- **in memory**: the rows view read into an array (``Table.read``), then the engine's PriROC
  and PriRP on it -- what a door that loads the table does;
- **pushed down**: the same releases on a :class:`dpwidgets.tables.RowsQuery`
  (:mod:`dpwidgets.scored`): the model's predictions and every count are queries, the rows
  never leave DuckDB;
- **the limit**: the least work for the same counts, a chunked pyarrow scan with numpy
  (predictions, then ``bincount`` of the score intervals) per row group.

Each run releases PriROC (fixed thresholds, the defaults) and PriRP (an OLS model of the
first feature on the second) with public coefficients, at epsilon = 1, seed 0.

    python -m benchmarks curator_diagnostics [--quick] [--rows=1e7]

``--quick``: 1e6 rows. Default: 1e6 and 1e7 rows. Results:
benchmarks/results/curator_diagnostics.md.
"""

from __future__ import annotations

import os
import platform
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.curator_scale import _peak_run

RESULTS = Path(__file__).parent / "results" / "curator_diagnostics.md"
COEF, INTERCEPT = (1.2, -0.7), -0.3  # the public model of the ROC

_SETUP = """
import sys, time, numpy as np
from dpwidgets.tables import Table, View, RowsQuery
cols = {"x1": {"kind": "float", "domain": [-5, 5]}, "x2": {"kind": "float", "domain": [-5, 5]},
        "label": {"kind": "int", "domain": [0, 1]}}
table = Table(sys.argv[1], cols)
roc_view = View("rows", ("x1", "x2", "label"), rows=1000)
rp_view = View("rows", ("x2", "x1"), rows=1000)
"""

_IN_MEMORY = _SETUP + f"""
from dpwidgets.engine import diagnostics as dx
from dpwidgets.families.diagnostics.spec import model_predictions
t0 = time.perf_counter()
rows = table.read(roc_view)
p, _, y = model_predictions(rows, kind="logistic", model="public", coef={list(COEF)},
                            intercept={INTERCEPT})
dx.private_roc_curve(y, p, 1.0, np.random.default_rng(0))
rows = table.read(rp_view)
p, r, _ = model_predictions(rows, kind="ols", model="public", coef=[0.5], intercept=0.0)
dx.private_residual_plot(p, r, 1.0, np.random.default_rng(0), publisher="hb")
print(time.perf_counter() - t0)
"""

_PUSHED = _SETUP + f"""
from dpwidgets.engine import diagnostics as dx
from dpwidgets.scored import TableRecords
t0 = time.perf_counter()
records = TableRecords(RowsQuery(table, roc_view), kind="logistic", model="public",
                       coef={list(COEF)}, intercept={INTERCEPT})
dx.private_roc_curve(records, None, 1.0, np.random.default_rng(0))
records = TableRecords(RowsQuery(table, rp_view), kind="ols", model="public", coef=[0.5],
                       intercept=0.0)
dx.private_residual_plot(records, None, 1.0, np.random.default_rng(0), publisher="hb")
print(time.perf_counter() - t0)
"""

_LIMIT = f"""
import sys, time, numpy as np, pyarrow.parquet as pq
t0 = time.perf_counter()
f = pq.ParquetFile(sys.argv[1])
cells = 2**10
tp, fp = np.zeros(cells), np.zeros(cells)
grid = np.zeros((64, 64))
for i in range(f.num_row_groups):
    g = f.read_row_group(i, columns=["x1", "x2", "label"])
    x1, x2 = (np.clip(g.column(c).to_numpy(), -5, 5) for c in ("x1", "x2"))
    y = g.column("label").to_numpy()
    p = 1 / (1 + np.exp(-({COEF[0]} * x1 + {COEF[1]} * x2 + {INTERCEPT})))
    k = np.minimum((p * cells).astype(np.int64), cells - 1)
    tp += np.bincount(k[y == 1], minlength=cells)
    fp += np.bincount(k[y == 0], minlength=cells)
    q, r = 0.5 * x2, x1 - 0.5 * x2
    i_, j_ = (np.clip(((v + 8) * 4).astype(np.int64), 0, 63) for v in (q, r))
    grid += np.bincount(i_ * 64 + j_, minlength=64 * 64).reshape(64, 64)
print(time.perf_counter() - t0)
"""

def _generate(path: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    writer = None
    for start in range(0, rows, 5_000_000):
        n = min(5_000_000, rows - start)
        x1, x2 = rng.normal(0, 1.5, n), rng.normal(0, 1, n)
        eta = COEF[0] * x1 + COEF[1] * x2 + INTERCEPT
        label = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(np.int64)
        table = pa.table({"x1": x1, "x2": x2, "label": label})
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="snappy")
        writer.write_table(table, row_group_size=1_000_000)
    writer.close()


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    sizes = [1_000_000] if quick else [1_000_000, 10_000_000]
    for a in argv:
        if a.startswith("--rows="):
            sizes = [int(float(v)) for v in a.split("=", 1)[1].split(",")]
    started = time.perf_counter()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in sizes:
            path = Path(tmp) / f"diag_{n}.parquet"
            _generate(path, n)
            row = {"rows": n, "MiB": path.stat().st_size / 2**20}
            for name, code in (("limit", _LIMIT), ("pushed", _PUSHED),
                               ("in_memory", _IN_MEMORY)):
                row[name] = _peak_run(code, str(path))
            rows.append(row)
    _write(rows, quick, time.perf_counter() - started)


def _write(rows: list[dict], quick: bool, seconds: float) -> None:
    lines = [
        "# The diagnostics on a table left in its query engine",
        "",
        f"Generated by `python -m benchmarks curator_diagnostics{' --quick' if quick else ''}` "
        f"in {seconds:.0f} s on {time.strftime('%Y-%m-%d')}; {platform.machine()}, "
        f"{os.cpu_count()} CPUs, load average at the end {os.getloadavg()[0]:.1f}. One process "
        "per cell (peak resident memory is per process); wall seconds of the work after "
        "imports. Data: two real features and a 0/1 outcome of a logistic model (seed 0). "
        "Work: PriROC (fixed thresholds, the defaults) of the public logistic model and PriRP "
        "(HB) of a public linear model, ε = 1 each, seed 0.",
        "",
        "| rows | Parquet MiB | limit: pyarrow + numpy (s / MB) | pushed down to DuckDB "
        "(s / MB) | rows read into memory (s / MB) | pushed / limit (time) |",
        "|---|---|---|---|---|---|",
    ]
    for r in rows:
        (lt, lm), (pt, pm), (mt, mm) = r["limit"], r["pushed"], r["in_memory"]
        lines.append(f"| {r['rows']:,} | {r['MiB']:.0f} | {lt:.2f} / {lm:.0f} | {pt:.2f} / "
                     f"{pm:.0f} | {mt:.2f} / {mm:.0f} | {pt / lt:.1f}x |")
    lines += [
        "",
        "The pushed-down releases ask DuckDB for the n, the 41 doubling counts of each "
        "private bound, the 2-D grid and the per-interval positives and negatives: what comes "
        "back is a few thousand numbers whatever the table's size. Reading the rows costs "
        "memory in proportion to the table (24 bytes a row for three columns, plus the "
        "predictions).",
    ]
    RESULTS.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
