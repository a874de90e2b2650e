"""A data owner's declarations as Python source: what the code a widget offers to copy starts
with, so that it runs as it is in a fresh kernel -- the source's path and the public
declarations only, never a row of data.

Examples
--------
>>> python_literal((1,))
'(1,)'
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import numpy as np

__all__ = ["declaration_call", "python_literal"]


def python_literal(value) -> str:
    """A declared value or a parameter as Python source (arrays as lists, numpy scalars as
    numbers, tuples and dicts kept): what copied code writes."""
    if isinstance(value, np.ndarray):
        return repr(value.tolist())
    if isinstance(value, np.generic):
        return repr(value.item())
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k!r}: {python_literal(v)}" for k, v in value.items()) + "}"
    if isinstance(value, tuple | list):
        items = ", ".join(python_literal(v) for v in value)
        return f"({items}{',' if len(value) == 1 else ''})" if isinstance(value, tuple) \
            else f"[{items}]"
    return repr(value)


def declaration_call(name: str, declared: Mapping) -> str:
    """The ``session.add_table(...)`` call of a table declared as ``name`` with ``declared``
    (the keywords :meth:`dpwidgets.Session.add_table` was given), as Python source: the
    source's path and the owner's public declarations only -- never a row of data. A table
    declared on an in-memory DataFrame names it ``frame``.

    Examples
    --------
    >>> declaration_call("visits", {"source": "visits.parquet", "columns": {"page": "str"},
    ...                             "max_rows": 1, "items": "page"})
    "session.add_table('visits', 'visits.parquet', columns={'page': 'str'}, items='page')"
    """
    source = declared["source"]
    source = (repr(os.fspath(source)) if isinstance(source, str | os.PathLike)
              else "frame")  # the DataFrame itself is data: named, never copied
    args = [repr(name), source]
    defaults = {"unit_column": None, "max_rows": 1, "table": None, "description": "",
                "allow_mechanisms": []}
    for key, value in declared.items():
        if key == "source" or (key in defaults and value == defaults[key]):
            continue
        args.append(f"{key}={python_literal(value)}")
    call = f"session.add_table({', '.join(args)})"
    if source == "frame":
        call = ("# frame = the DataFrame the table was declared on (data: never copied here)\n"
                + call)
    return call
