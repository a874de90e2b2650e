"""Releases that leave the notebook: tables (CSV or Parquet) and a JSON sidecar of provenance.

Everything a release handed out is written, and :func:`load_release` reads it back unchanged
(values, dtypes and shapes): ``load_release(path)["output"] == release.output``.

Layout (``path`` = ``out.csv``):

* ``out.csv``, the **principal table**: the release's main arrays as columns of one table, with
  the index of each entry -- the top-level 1-D arrays of one length that has the most of them
  (a curve's ``fpr``, ``tpr`` and ``thresholds``; a stream's estimates), or, when there are none,
  the largest dict of equal-length columns (a synthetic release's records, ``data``), or else
  the first array in long form.
* ``out.<field>.csv``, one file per other array field (``field`` is its dotted path, e.g.
  ``out.margins.csv``, ``out.noisy_tp.csv``): a dict of equal-length 1-D arrays as one wide
  table; a dict of 1-D arrays of different lengths in long form (``key``, ``index``, ``value``);
  a lone 1-D array as (``index``, ``value``); a 2-D or larger array in long form (``output``
  naming the field, ``row``, ``column``, ``value``). Ragged fields are never padded with NaN.
* ``out.csv.json``, the **sidecar**: the mechanism, its canonical parameters, ε, the guarantee
  with its neighbour relation and sampler, the time and the ledger key; the whole output as
  JSON with each array replaced by a reference to its file and column (dtype and shape kept);
  and the list of files written. Non-finite floats are written as ``{"__float__": "nan"}``.

Only the declared public output of a release is written: the same values the door handed out.
"""

from __future__ import annotations

import json
import math
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:  # Release.save calls down into this module, which needs Release for hints only
    from .mechanism import Release

__all__ = ["export_bytes", "load_release", "release_files", "release_table", "save_release",
           "sidecar"]

FORMAT = "dpwidgets-release/2"

_FORMATS = ("csv", "parquet")


# -- walking an output -------------------------------------------------------------------------
def _is_table_array(value) -> bool:
    return isinstance(value, np.ndarray) and value.dtype.kind in "biuf"


def _arrays(tree, path: tuple = ()) -> Iterator[tuple[tuple, np.ndarray]]:
    """Every numeric array in an output, with its path of keys (lists are kept as JSON)."""
    if _is_table_array(tree):
        yield path, tree
    elif isinstance(tree, dict):
        for key, value in tree.items():
            yield from _arrays(value, (*path, str(key)))


@dataclass
class _Part:
    """One file: which array paths it holds and how they are laid out."""

    name: str           # "" for the principal table, else the dotted field
    layout: str         # "wide", "keyed" (long with a key column), "vector", "grid"
    paths: list         # the array paths, in column order


def _wide(arrays: list[np.ndarray]) -> bool:
    return all(a.ndim == 1 for a in arrays) and len({a.size for a in arrays}) == 1


def _plan(output: dict) -> list[_Part]:
    """Which array goes to which file (decided from the output's structure and shapes only)."""
    found = list(_arrays(output))
    if not found:
        return []
    parts: list[_Part] = []
    done: set[tuple] = set()
    # Top-level 1-D arrays, grouped by length: the largest group is the principal table.
    groups: dict[int, list[tuple]] = {}
    for path, a in found:
        if len(path) == 1 and a.ndim == 1:
            groups.setdefault(a.size, []).append(path)
    principal = None
    if groups:
        size = max(groups, key=lambda s: (len(groups[s]), s))
        principal = _Part("", "wide", groups[size])
    # Dicts whose values are all arrays: one file each.
    dicts: dict[tuple, list[tuple]] = {}
    for path, _ in found:
        if len(path) > 1:
            dicts.setdefault(path[:-1], []).append(path)
    by_path = dict(found)
    for parent, paths in dicts.items():
        node = output
        for key in parent:
            node = node[key]
        if len(paths) != len(node) or any(by_path[p].ndim != 1 for p in paths):
            continue  # a mixed dict: its arrays go one file each, below
        arrays = [by_path[p] for p in paths]
        if _wide(arrays):
            layout = "wide"
        elif len({a.dtype.kind for a in arrays}) == 1:
            layout = "keyed"
        else:
            continue  # one value column cannot keep several dtypes: one file each, below
        parts.append(_Part(".".join(parent), layout, paths))
        done.update(paths)
    if principal is None:
        wide = [p for p in parts if p.layout == "wide"]
        if wide:
            principal = max(wide, key=lambda p: len(p.paths) * by_path[p.paths[0]].size)
            parts.remove(principal)
            principal = _Part("", "wide", principal.paths)
    if principal is not None:
        done.update(principal.paths)
    for path, a in found:
        if path in done:
            continue
        layout = "vector" if a.ndim == 1 else "grid"
        parts.append(_Part(".".join(path), layout, [path]))
    if principal is None:
        first = parts.pop(next(i for i, p in enumerate(parts) if p.paths[0] == found[0][0]))
        principal = _Part("", first.layout, first.paths)
    return [principal, *parts]


def _index_name(part: _Part) -> str:
    """The index column of a wide table (``index``, unless a field has that name)."""
    return "_index" if any(p[-1] == "index" for p in part.paths) else "index"


def _column(path: tuple, part: _Part) -> str:
    return path[-1] if part.layout == "wide" else "value"


def _frame(part: _Part, by_path: dict):
    import pandas as pd

    arrays = [by_path[p] for p in part.paths]
    if part.layout == "wide":
        columns = {_index_name(part): np.arange(arrays[0].size)}
        columns.update((p[-1], a) for p, a in zip(part.paths, arrays, strict=True))
        return pd.DataFrame(columns)
    if part.layout == "keyed":
        return pd.concat([pd.DataFrame({"key": p[-1], "index": np.arange(a.size), "value": a})
                          for p, a in zip(part.paths, arrays, strict=True)], ignore_index=True)
    a = arrays[0]
    if part.layout == "vector":
        return pd.DataFrame({"index": np.arange(a.size), "value": a})
    dims = ["row", "column"] if a.ndim == 2 else [f"axis{i}" for i in range(a.ndim)]
    where = np.indices(a.shape).reshape(a.ndim, -1)
    return pd.DataFrame({"output": ".".join(part.paths[0]), **dict(zip(dims, where, strict=True)),
                         "value": a.ravel()})


def release_files(output: dict, stem: str = "release", format: str = "csv"):
    """The tables a release's output is written as: ``[(file name, DataFrame), ...]``, the
    principal table first, and the output's JSON skeleton with each array replaced by a
    reference to its file (see the module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.export import release_files
    >>> files, skeleton = release_files({"outcomes": np.array([False, True])}, "svt")
    >>> [name for name, _ in files], skeleton["outcomes"]["__file__"]
    (['svt.csv'], 'svt.csv')
    """
    if format not in _FORMATS:
        raise ValueError(f"format must be 'csv' or 'parquet', got {format!r}")
    by_path = dict(_arrays(output))
    files, refs = [], {}
    for part in _plan(output):
        name = f"{stem}.{format}" if not part.name else f"{stem}.{part.name}.{format}"
        files.append((name, _frame(part, by_path)))
        for p in part.paths:
            a = by_path[p]
            refs[p] = {"__file__": name, "layout": part.layout, "column": _column(p, part),
                       "key": p[-1] if part.layout == "keyed" else None,
                       "dtype": a.dtype.str, "shape": list(a.shape)}
    return files, _skeleton(output, refs)


def release_table(output: dict):
    """The principal table of a release's output (see the module docstring); an empty
    DataFrame when the output holds no array.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.export import release_table
    >>> release_table({"outcomes": np.array([False, True]), "epsilon": 1.0})
       index  outcomes
    0      0     False
    1      1      True
    """
    import pandas as pd

    files, _ = release_files(output)
    return files[0][1] if files else pd.DataFrame()


# -- JSON with exact floats --------------------------------------------------------------------
def _skeleton(tree, refs: dict, path: tuple = ()):
    if path in refs and _is_table_array(tree):
        return refs[path]
    if isinstance(tree, dict):
        return {str(k): _skeleton(v, refs, (*path, str(k))) for k, v in tree.items()}
    return _json_value(tree)


def _json_value(value):
    if isinstance(value, np.ndarray):
        return {"__array__": [_json_value(v) for v in value.tolist()],
                "dtype": value.dtype.str, "shape": list(value.shape)}
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return {"__float__": repr(value)}
    if isinstance(value, dict):
        return {str(k): _json_value(v) for k, v in value.items()}
    if isinstance(value, tuple):
        return {"__tuple__": [_json_value(v) for v in value]}
    if isinstance(value, list):
        return [_json_value(v) for v in value]
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def _from_json(value, read):
    if isinstance(value, list):
        return [_from_json(v, read) for v in value]
    if not isinstance(value, dict):
        return value
    if "__float__" in value:
        return float(value["__float__"])
    if "__tuple__" in value:
        return tuple(_from_json(v, read) for v in value["__tuple__"])
    if "__array__" in value:
        items = _from_json(value["__array__"], read)
        return np.asarray(items, dtype=np.dtype(value["dtype"])).reshape(value["shape"])
    if "__file__" in value:
        return read(value)
    return {k: _from_json(v, read) for k, v in value.items()}


# -- the sidecar, saving and loading -----------------------------------------------------------
def sidecar(release: Release | dict, files: list[str] | None = None, skeleton=None) -> dict:
    """The provenance of a release as a JSON-able dict (the mechanism, its parameters, ε, the
    guarantee, when, the ledger key, the scalar outputs; with ``skeleton``, the whole output
    with its arrays referenced in ``files``).

    Examples
    --------
    >>> import numpy as np
    >>> release = {"dataset": "scores", "mechanism": "svt", "label": "SVT standard c=1",
    ...            "params": {"epsilon": 1.0, "threshold": 15.0}, "epsilon": 1.0,
    ...            "output": {"outcomes": np.array([False, True])}}
    >>> from dpwidgets.export import sidecar
    >>> meta = sidecar(release)
    >>> meta["mechanism"], meta["parameters"]["threshold"]
    ('svt', 15.0)
    """
    r = release if isinstance(release, dict) else {
        "dataset": release.dataset, "mechanism": release.mechanism, "label": release.label,
        "params": release.params, "epsilon": release.epsilon, "guarantee": release.guarantee,
        "time": release.time, "key": release.key, "output": release.output,
        "preview": release.preview,
    }
    scalars = {k: _json_value(v) for k, v in r["output"].items()
               if not isinstance(v, np.ndarray | list | tuple | dict)}
    out = {
        "format": FORMAT,
        "dataset": r["dataset"], "mechanism": r["mechanism"], "label": r.get("label", ""),
        "parameters": _json_value(r["params"]), "epsilon": r["epsilon"],
        "guarantee": r.get("guarantee", ""), "released": time.strftime(
            "%Y-%m-%dT%H:%M:%SZ", time.gmtime(r.get("time") or time.time())),
        "ledger_key": r.get("key", ""), "preview": bool(r.get("preview", False)),
        "scalars": scalars, "written_by": "dpwidgets",
    }
    if skeleton is not None:
        out["files"] = list(files or [])
        out["output"] = skeleton
    return out


def _export(release, stem: str, fmt: str) -> tuple[list, dict]:
    """The files of an export, the principal table first, and its sidecar."""
    if fmt not in _FORMATS:
        raise ValueError(f"format must be 'csv' or 'parquet', got {fmt!r}")
    output = release["output"] if isinstance(release, dict) else release.output
    files, skeleton = release_files(output, stem, fmt)
    if not files:  # nothing but scalars: an empty principal table keeps the layout uniform
        import pandas as pd

        files = [(f"{stem}.{fmt}", pd.DataFrame())]
    return files, sidecar(release, [name for name, _ in files], skeleton)


def _encode(frame, fmt: str) -> bytes:
    import io

    if fmt == "csv":
        return frame.to_csv(index=False).encode()
    buf = io.BytesIO()
    frame.to_parquet(buf, index=False)
    return buf.getvalue()


def save_release(release: Release, path: str | os.PathLike, *, format: str | None = None
                 ) -> tuple[Path, Path]:
    """Write a release to ``path`` (the principal table; CSV or Parquet, from ``format`` or the
    suffix), its other array fields beside it (``<stem>.<field>.<suffix>``) and its provenance
    to ``path`` + ``.json`` (module docstring); returns (principal table, sidecar). Read it
    back with :func:`load_release`.

    A preview is refused: it was computed on the public stand-in, not on the data.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> from dpwidgets.export import load_release, save_release
    >>> session = Session("teaching", seed=0)
    >>> session.add_dataset("scores", np.arange(20.0))
    >>> run = session.release("scores", "svt", epsilon=1.0, threshold=15.0, c=1)
    >>> table, provenance = save_release(run, pathlib.Path(tempfile.mkdtemp()) / "svt.csv")
    >>> table.name, provenance.name
    ('svt.csv', 'svt.csv.json')
    >>> back = load_release(table)
    >>> back["mechanism"], back["epsilon"], back["parameters"]["threshold"]
    ('svt', 1.0, 15.0)
    """
    if getattr(release, "preview", False):
        raise ValueError("this is a preview on the public stand-in, not a release of the data")
    path = Path(path)
    fmt = format or path.suffix.lstrip(".").lower() or "csv"
    if fmt not in _FORMATS:
        raise ValueError(f"format must be 'csv' or 'parquet', got {fmt!r}")
    stem = path.name[: -len(path.suffix)] if path.suffix.lstrip(".").lower() == fmt else path.name
    files, meta = _export(release, stem, fmt)
    for i, (name, frame) in enumerate(files):
        (path if i == 0 else path.with_name(name)).write_bytes(_encode(frame, fmt))
    meta["files"][0] = path.name
    meta["output"] = _relink(meta["output"], files[0][0], path.name)
    side = path.with_name(path.name + ".json")
    side.write_text(json.dumps(meta, indent=1, allow_nan=False))
    return path, side


def export_bytes(release: Release | dict, *, format: str = "csv", file: str | None = None,
                 stem: str = "release") -> tuple[bytes, str]:
    """One download of an exported release, as ``(content, media type)``: the sidecar
    (``format="json"``), the principal table or the file named ``file`` of the sidecar's
    ``files`` (``"csv"``, ``"parquet"``), or every file and the sidecar in one zip archive
    (``"zip"``, CSV inside; unpacked, :func:`load_release` reads it). What the curator's
    ``GET /v1/releases/...`` serves.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.export import export_bytes
    >>> content, media_type = export_bytes(
    ...     {"dataset": "scores", "mechanism": "svt", "params": {"epsilon": 1.0}, "epsilon": 1.0,
    ...      "output": {"outcomes": np.array([False, True])}})
    >>> media_type, content.splitlines()[0]
    ('text/csv', b'index,outcomes')
    """
    if format == "zip":
        import io
        import zipfile

        files, meta = _export(release, stem, "csv")
        buf = io.BytesIO()
        with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as archive:
            for name, frame in files:
                archive.writestr(name, _encode(frame, "csv"))
            archive.writestr(f"{stem}.csv.json", json.dumps(meta, indent=1, allow_nan=False))
        return buf.getvalue(), "application/zip"
    if format == "json":
        _, meta = _export(release, stem, "csv")
        return json.dumps(meta, indent=1, allow_nan=False).encode(), "application/json"
    files, meta = _export(release, stem, format)
    names = dict(files)
    name = files[0][0] if file is None else file
    if name not in names:
        raise ValueError(f"file must be one of {sorted(names)}, got {file!r}")
    media = "text/csv" if format == "csv" else "application/vnd.apache.parquet"
    return _encode(names[name], format), media


def _relink(tree, old: str, new: str):
    """Point the principal table's references at the name it was saved under."""
    if isinstance(tree, list):
        return [_relink(v, old, new) for v in tree]
    if isinstance(tree, dict):
        if tree.get("__file__") == old:
            return {**tree, "__file__": new}
        return {k: _relink(v, old, new) for k, v in tree.items()}
    return tree


def _exact_floats(pd) -> dict:
    """pandas 2's default CSV float parser is not always exact; pandas 3's is (and deprecates
    the flag that asks for it)."""
    return {"float_precision": "round_trip"} if int(pd.__version__.split(".")[0]) < 3 else {}


def load_release(path: str | os.PathLike) -> dict:
    """Read a release written by :func:`save_release` (the table's path or its sidecar's):
    the sidecar as a dict whose ``"output"`` is the release's output, arrays restored with
    their dtypes and shapes.

    Examples
    --------
    See :func:`save_release`, whose example writes a release and reads it back.
    """
    import pandas as pd

    path = Path(path)
    side = path if path.name.endswith(".json") else path.with_name(path.name + ".json")
    meta = json.loads(side.read_text())
    if meta.get("format") != FORMAT:
        raise ValueError(f"{side.name} was not written by this version's save_release "
                         f"(format {meta.get('format')!r}, expected {FORMAT!r})")
    frames: dict[str, pd.DataFrame] = {}

    def read(ref: dict) -> np.ndarray:
        name = ref["__file__"]
        if name not in frames:
            target = side.with_name(name)
            frames[name] = (pd.read_parquet(target) if name.endswith(".parquet") else
                            pd.read_csv(target, keep_default_na=False, na_values=[""],
                                        **_exact_floats(pd)))
        frame = frames[name]
        if ref["key"] is not None:
            frame = frame[frame["key"].astype(str) == ref["key"]]
        values = frame[ref["column"]].to_numpy()
        return values.astype(np.dtype(ref["dtype"])).reshape(ref["shape"])

    meta["output"] = _from_json(meta.get("output", {}), read)
    meta["parameters"] = _from_json(meta["parameters"], read)
    return meta
