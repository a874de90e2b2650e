"""Releases that leave the notebook: a table (CSV or Parquet) and a JSON sidecar of provenance.

The table holds the released arrays: 1-D outputs of one length as columns (with the index of
each entry), a 2-D output in long form (``row``, ``column``, ``value``); the sidecar holds
everything else -- the mechanism, its canonical parameters, ε, the guarantee with its neighbour
relation and sampler, the scalar outputs, the time and the ledger key. Only the declared public
output of a release is written: the same values the door handed out, unchanged.
"""

from __future__ import annotations

import json
import math
import os
import time
from pathlib import Path

import numpy as np

from .mechanism import Release
from .store import _to_jsonable

__all__ = ["release_table", "save_release", "sidecar"]


def release_table(output: dict):
    """The array fields of a release's output as one pandas DataFrame (see module docstring)."""
    import pandas as pd

    arrays = {k: np.asarray(v) for k, v in output.items()
              if isinstance(v, np.ndarray | list) and np.asarray(v).dtype.kind in "biuf"
              and np.asarray(v).ndim in (1, 2)}
    if not arrays:
        return pd.DataFrame()
    flat = {k: v for k, v in arrays.items() if v.ndim == 1}
    if flat:
        n = max(v.size for v in flat.values())
        frame = pd.DataFrame({"index": np.arange(n)})
        for k, v in flat.items():
            column = np.full(n, np.nan)
            column[: v.size] = v
            frame[k] = column if v.size < n else v
        if len(arrays) == len(flat):
            return frame
    # 2-D outputs (and 1-D ones beside them) in long form.
    parts = []
    for k, v in arrays.items():
        grid = v.reshape(-1, 1) if v.ndim == 1 else v
        rows, cols = np.indices(grid.shape)
        parts.append(pd.DataFrame({"output": k, "row": rows.ravel(), "column": cols.ravel(),
                                   "value": grid.ravel()}))
    return pd.concat(parts, ignore_index=True)


def sidecar(release: Release | dict) -> dict:
    """The provenance of a release as a JSON-able dict."""
    r = release if isinstance(release, dict) else {
        "dataset": release.dataset, "mechanism": release.mechanism, "label": release.label,
        "params": release.params, "epsilon": release.epsilon, "guarantee": release.guarantee,
        "time": release.time, "key": release.key, "output": release.output,
        "preview": release.preview,
    }
    scalars = {k: _to_jsonable(v) for k, v in r["output"].items()
               if not isinstance(v, np.ndarray | list | tuple | dict)}
    return {
        "dataset": r["dataset"], "mechanism": r["mechanism"], "label": r.get("label", ""),
        "parameters": _to_jsonable(r["params"]), "epsilon": r["epsilon"],
        "guarantee": r.get("guarantee", ""), "released": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.get("time") or time.time())),
        "ledger_key": r.get("key", ""), "preview": bool(r.get("preview", False)),
        "scalars": scalars, "written_by": "dpwidgets",
    }


def save_release(release: Release, path: str | os.PathLike, *, format: str | None = None
                 ) -> tuple[Path, Path]:
    """Write a release's arrays to ``path`` (CSV or Parquet, from ``format`` or the suffix)
    and its provenance to ``path`` + ``.json``; returns both paths.

    A preview is refused: it was computed on the public stand-in, not on the data."""
    if getattr(release, "preview", False):
        raise ValueError("this is a preview on the public stand-in, not a release of the data")
    path = Path(path)
    fmt = format or path.suffix.lstrip(".").lower() or "csv"
    if fmt not in ("csv", "parquet"):
        raise ValueError(f"format must be 'csv' or 'parquet', got {fmt!r}")
    frame = release_table(release.output)
    if fmt == "csv":
        frame.to_csv(path, index=False, float_format=None)
    else:
        frame.to_parquet(path, index=False)
    side = path.with_name(path.name + ".json")
    side.write_text(json.dumps(sidecar(release), indent=1, allow_nan=False,
                               default=lambda v: None if isinstance(v, float)
                               and not math.isfinite(v) else str(v)))
    return path, side
