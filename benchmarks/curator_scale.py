"""The curator at scale: a DP histogram release over a generated Parquet file, end to end
through the HTTP service, against the limit measured in the same run.

The limit: a chunked pyarrow scan of the one column with ``numpy.bincount`` per row group (the
least work any engine can do for a dense declared domain). Measured, each in its own process
(peak resident memory is per process): the limit; the view's query alone (ibis -> DuckDB, the
data-touching step); and a release through a running curator (``laplace_stream`` on the
per-cell counts: one discrete Laplace draw per cell), without and with contribution bounding
(at most 4 rows per person, chosen inside DuckDB). 2-D: the same for a 2-D histogram view
(``counts2d``), timed as the view's query.

    python -m benchmarks curator_scale [--quick] [--rows=1e8]

``--quick``: 1e6 rows. Default: 1e7 and 1e8 rows; ``--rows=1e9`` and ``--cells=service_bounded``
(comma-separated) choose sizes and cells. ``DPWIDGETS_DUCKDB_MEMORY`` caps DuckDB's memory
(it spills beyond); ``--out=NAME.md`` writes another results file. Results:
benchmarks/results/curator_scale.md.
"""

from __future__ import annotations

import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from dpwidgets._progress import progress

RESULTS = Path(__file__).parent / "results" / "curator_scale.md"
DOMAIN_A, DOMAIN_B, PEOPLE_PER_ROW = 1000, 100, 0.05

_LIMIT = f"""
import sys, time, numpy as np, pyarrow.parquet as pq
t0 = time.perf_counter()
f = pq.ParquetFile(sys.argv[1])
counts = np.zeros({DOMAIN_A}, dtype=np.int64)
for i in range(f.num_row_groups):
    col = f.read_row_group(i, columns=["a"]).column(0).to_numpy()
    counts += np.bincount(col, minlength={DOMAIN_A})[:{DOMAIN_A}]
print(time.perf_counter() - t0)
"""

_VIEW = f"""
import sys, time
from dpwidgets.tables import Table, View
unit = sys.argv[2] == "bounded"
cols = {{"a": {{"kind": "int", "domain": [0, {DOMAIN_A - 1}]}}, "b": {{"kind": "int", "domain": [0, {DOMAIN_B - 1}]}}}}
engine = sys.argv[4] if len(sys.argv) > 4 else "duckdb"
t = Table(sys.argv[1], cols, unit="person" if unit else None, max_rows=4 if unit else 1,
          engine=engine)
if engine == "pyspark":
    t.expr  # start Spark (about 10 s) before the clock: a cluster is already running

view = View(sys.argv[3], ("a",) if sys.argv[3] == "counts" else ("a", "b"))
t0 = time.perf_counter()
t.read(view)
print(time.perf_counter() - t0)
"""


# Peak RSS of this process image: VmHWM is reset by exec, unlike getrusage's ru_maxrss, which a
# child inherits from the parent that forked it.
_HWM = """
def _hwm():
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM"):
            return int(line.split()[1]) / 1024
"""


def _peak_run(code: str, *args: str) -> tuple[float, float]:
    """(seconds printed by the child, its peak RSS in MB)."""
    tail = "\n" + _HWM + "\nprint(_hwm())\n"
    out = subprocess.run([sys.executable, "-c", code + tail, *args], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[-2]), float(out[-1])


def _generate(path: Path, rows: int) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    chunk = 5_000_000
    writer = None
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        table = pa.table({
            "person": rng.integers(0, max(1, int(rows * PEOPLE_PER_ROW)), n),
            "a": np.minimum(rng.zipf(1.3, n) - 1, DOMAIN_A - 1),
            "b": rng.integers(0, DOMAIN_B, n),
        })
        if writer is None:
            writer = pq.ParquetWriter(path, table.schema, compression="snappy")
        writer.write_table(table, row_group_size=1_000_000)
    writer.close()


def _service(path: Path, bounded: bool) -> tuple[float, float]:
    """Seconds of one release through a running curator (client side), and the curator's
    peak RSS in MB."""
    import httpx

    from dpwidgets.curator.config import load_config
    from dpwidgets.curator.door import Analysts

    home = Path(tempfile.mkdtemp(prefix="dpw-scale-"))
    unit = 'unit = "person"\nmax_rows = 4\n' if bounded else ""
    cfg = home / "curator.toml"
    cfg.write_text(textwrap.dedent(f"""
        [datasets.big]
        source = "{path}"
        total_epsilon = 10.0
        {unit}
        columns.a = {{ kind = "int", domain = [0, {DOMAIN_A - 1}] }}
        views.a = {{ kind = "counts", columns = ["a"] }}
    """).replace("\n        ", "\n"))
    token = Analysts(load_config(cfg).analysts).add("bench", {"big": 10.0})
    port = 18765 + os.getpid() % 1000
    proc = subprocess.Popen([sys.executable, "-c", _HWM + textwrap.dedent(f"""
        import signal, sys
        def report(*a):
            print(_hwm(), flush=True)
            sys.exit(0)
        signal.signal(signal.SIGTERM, report)
        from dpwidgets.curator.cli import main
        main(["curator", "serve", "--config", {str(cfg)!r}, "--port", "{port}"])
    """)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        for _ in range(600):
            try:
                httpx.get(f"{url}/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        body = {"dataset": "big/a", "mechanism": "laplace_stream", "params": {"epsilon": 0.1}}
        t0 = time.perf_counter()
        r = httpx.post(f"{url}/releases", json=body, timeout=3600,
                       headers={"Authorization": f"Bearer {token}"})
        seconds = time.perf_counter() - t0
        if r.status_code != 200:
            raise RuntimeError(r.text)
    finally:
        proc.terminate()
        peak = float(proc.communicate(timeout=60)[0].split()[-1])
    return seconds, peak


def _round_trip(rounds: int = 30) -> dict:
    """Median and p95 (ms) of a small release in process vs through a running curator."""
    import numpy as np
    import pandas as pd

    from benchmarks._timing import stats
    from dpwidgets import Session
    from dpwidgets.curator.config import load_config
    from dpwidgets.curator.door import Analysts

    home = Path(tempfile.mkdtemp(prefix="dpw-rt-"))
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a": rng.integers(0, 50, 5000)})
    frame.to_parquet(home / "small.parquet")
    counts = np.bincount(frame["a"], minlength=50).astype(float)
    local = Session("analyst", ledger=home / "local.sqlite")
    local.add_dataset("small", counts, total_epsilon=1e6)
    cfg = home / "curator.toml"
    cfg.write_text(textwrap.dedent("""
        [datasets.small]
        source = "small.parquet"
        total_epsilon = 1e6
        columns.a = { kind = "int", domain = [0, 49] }
        views.a = { kind = "counts", columns = ["a"] }
    """))
    token = Analysts(load_config(cfg).analysts).add("bench", {"small": 1e6})
    port = 19765 + os.getpid() % 1000
    proc = subprocess.Popen([sys.executable, "-m", "dpwidgets.curator.cli", "curator", "serve",
                             "--config", str(cfg), "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import httpx

    try:
        for _ in range(600):
            try:
                httpx.get(f"http://127.0.0.1:{port}/v1/health", timeout=1)
                break
            except httpx.HTTPError:
                time.sleep(0.1)
        remote = Session.connect(f"http://127.0.0.1:{port}", token=token)
        times = {"in process": [], "through the curator": []}
        for i in range(rounds + 3):  # 3 warm-up rounds
            for name, session, ds in (("in process", local, "small"),
                                      ("through the curator", remote, "small/a")):
                t0 = time.perf_counter()
                session.release(ds, "top_c", epsilon=0.1, c=5, run=i)
                if i >= 3:
                    times[name].append((time.perf_counter() - t0) * 1e3)
        remote.close()
    finally:
        proc.terminate()
        proc.wait(30)
    return {k: stats(v) for k, v in times.items()}


def main(argv: list[str]) -> None:
    quick = "--quick" in argv
    sizes = [int(float(a.split("=", 1)[1])) for a in argv if a.startswith("--rows=")]
    sizes = sizes or ([1_000_000] if quick else [10_000_000, 100_000_000])
    lines = []
    cells = {"counts_plain", "counts_bounded", "counts2d_plain", "counts2d_bounded",
             "service_plain", "service_bounded", "spark_plain", "spark_bounded"}
    for a in argv:
        if a.startswith("--cells="):
            cells = set(a.split("=", 1)[1].split(","))
    trip = _round_trip(20 if quick else 50)
    print(json.dumps(trip))
    with tempfile.TemporaryDirectory(prefix="dpw-scale-") as tmp:
        for rows in progress(sizes, desc="curator_scale"):
            path = Path(tmp) / f"rows_{rows}.parquet"
            _generate(path, rows)
            mib = path.stat().st_size / 2**20
            limit, limit_mb = _peak_run(_LIMIT, str(path))
            row = {"rows": rows, "MiB": mib, "limit_s": limit, "limit_MB": limit_mb}
            for kind in ("counts", "counts2d"):
                for mode in ("plain", "bounded"):
                    if f"{kind}_{mode}" in cells:
                        row[f"{kind}_{mode}"] = _peak_run(_VIEW, str(path), mode, kind)
            for mode in ("plain", "bounded"):
                if f"spark_{mode}" in cells:
                    row[f"spark_{mode}"] = _peak_run(_VIEW, str(path), mode, "counts", "pyspark")
            for mode in ("plain", "bounded"):
                if f"service_{mode}" in cells:
                    row[f"service_{mode}"] = _service(path, mode == "bounded")
            print(json.dumps(row))
            lines.append(row)
            path.unlink()
    out = next((a.split("=", 1)[1] for a in argv if a.startswith("--out=")), None)
    _write(lines, quick, trip, RESULTS.with_name(out) if out else RESULTS)


def _write(rows: list[dict], quick: bool, trip: dict, path: Path = RESULTS) -> None:
    out = [
        "# The curator at scale (DP histogram releases over Parquet)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; {'quick run' if quick else 'full run'}, one round per "
        f"cell, all in one run (`python -m benchmarks curator_scale`). Data: `a` Zipf(1.3) over "
        f"{DOMAIN_A} cells, `b` uniform over {DOMAIN_B}, one person per {1 / PEOPLE_PER_ROW:.0f} "
        f"rows on average; bounded = at most 4 rows per person, chosen in DuckDB.",
        "",
        "Limit: chunked pyarrow scan + `numpy.bincount` per row group. Times in s, peak RSS "
        "in MB, ratio = time / limit.",
        "",
        "| rows | file MiB | limit s (MB) | 1-D view | 1-D bounded | 2-D view | 2-D bounded "
        "| release via service | release via service, bounded | Spark (local[2]) 1-D view "
        "| Spark, bounded |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    def cell(r, key):
        if key not in r:
            return "not run"
        s, mb = r[key]
        return f"{s:.2f} ({mb:.0f} MB) = {s / r['limit_s']:.1f}x"

    for r in rows:
        out.append(
            f"| {r['rows']:.0e} | {r['MiB']:.0f} | {r['limit_s']:.2f} ({r['limit_MB']:.0f}) | "
            f"{cell(r, 'counts_plain')} | {cell(r, 'counts_bounded')} | {cell(r, 'counts2d_plain')} | "
            f"{cell(r, 'counts2d_bounded')} | {cell(r, 'service_plain')} | "
            f"{cell(r, 'service_bounded')} | {cell(r, 'spark_plain')} | "
            f"{cell(r, 'spark_bounded')} |")
    out += ["", "Spark's peak is the Python driver's (the JVM's memory is not counted); its time "
            "excludes starting Spark.", "",
            "The service figures are the client's round trip (HTTP, the ledger's charge, "
            "the query, the noise, the store) and the curator process's peak RSS.", "",
            "## Round trip of a small release (top-c on 50 cells, 5,000 rows; charged each time)",
            "", "| path | median ms | p95 ms | max ms |", "|---|---:|---:|---:|"]
    out += [f"| {k} | {m:.1f} | {p:.1f} | {x:.1f} |" for k, (m, p, x) in trip.items()]
    (m0, p0, _), (m1, p1, _) = trip["in process"], trip["through the curator"]
    out += ["", f"The curator adds {m1 - m0:.1f} ms at the median and {p1 - p0:.1f} ms at p95 "
            f"(goal: under 50 ms)."]
    path.write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    main(sys.argv[1:])
