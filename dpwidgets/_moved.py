"""Old import paths that keep working for a deprecation period.

A module whose names moved keeps a module-level ``__getattr__`` made by :func:`moved`: an old
name still resolves, to the object at its new home, with a ``DeprecationWarning`` that names
that home. Only names that moved resolve; any other is an ``AttributeError`` as usual.
"""

from __future__ import annotations

import importlib
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["moved"]


def moved(old_module: str, names: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old_module``: ``names`` maps each old name to
    ``(new module, new name)``.

    Examples
    --------
    In the old module::

        __getattr__ = moved(__name__, {"ReleaseStore": ("dpwidgets.persistence.store",
                                                         "ReleaseStore")})
    """
    names = dict(names)

    def __getattr__(name: str) -> Any:
        try:
            module, new = names[name]
        except KeyError:
            raise AttributeError(f"module {old_module!r} has no attribute {name!r}") from None
        warnings.warn(f"{old_module}.{name} moved to {module}.{new}; import it from there",
                      DeprecationWarning, stacklevel=2)
        return getattr(importlib.import_module(module), new)

    return __getattr__
