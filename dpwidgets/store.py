"""Deprecated: the release store moved to :mod:`dpwidgets.persistence.store`.

Every name this module held is still importable from here, with a ``DeprecationWarning`` that
names its new home.
"""

from __future__ import annotations

import importlib
import warnings

__all__: list[str] = []

# old name -> new name in dpwidgets.persistence.store
_MOVED = {
    "ReleaseStore": "ReleaseStore",
    "canonical": "canonical",
    "plain": "plain",
    "encode_output": "encode_output",
    "decode_output": "decode_output",
    "_to_jsonable": "to_jsonable",
    "_from_jsonable": "from_jsonable",
}


def __getattr__(name: str):
    try:
        new = _MOVED[name]
    except KeyError:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}") from None
    warnings.warn(
        f"dpwidgets.store.{name} moved to dpwidgets.persistence.store.{new}; import it from there",
        DeprecationWarning,
        stacklevel=2,
    )
    return getattr(importlib.import_module("dpwidgets.persistence.store"), new)
