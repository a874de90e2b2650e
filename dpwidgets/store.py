"""Deprecated: the release store moved to :mod:`dpwidgets.persistence.store`.

Every name this module held is still importable from here, with a ``DeprecationWarning`` that
names its new home.
"""

from __future__ import annotations

from ._moved import moved

__all__: list[str] = []

_NEW = "dpwidgets.persistence.store"
# old name -> (new module, new name)
__getattr__ = moved(__name__, {
    "ReleaseStore": (_NEW, "ReleaseStore"),
    "canonical": (_NEW, "canonical"),
    "plain": (_NEW, "plain"),
    "encode_output": (_NEW, "encode_output"),
    "decode_output": (_NEW, "decode_output"),
    "_to_jsonable": (_NEW, "to_jsonable"),
    "_from_jsonable": (_NEW, "from_jsonable"),
})
