"""Old import paths that keep working for a deprecation period.

A module whose names moved keeps a module-level ``__getattr__`` made by :func:`moved`: an old
name still resolves, to the object at its new home, with a ``DeprecationWarning`` that names
that home. Only names that moved resolve; any other is an ``AttributeError`` as usual.

A module that moved whole is an :func:`alias`: importing it by its old name warns and gives the
module at its new home (the same object, so a test's ``monkeypatch`` reaches the code).
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["alias", "moved"]


def moved(old_module: str, names: Mapping[str, tuple[str, str]]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``old_module``: ``names`` maps each old name to
    ``(new module, new name)``; a new name of ``None`` stands for the new module itself (a
    submodule that moved).

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
        home = module if new is None else f"{module}.{new}"
        warnings.warn(f"{old_module}.{name} moved to {home}; import it from there",
                      DeprecationWarning, stacklevel=2)
        found = importlib.import_module(module)
        return found if new is None else getattr(found, new)

    return __getattr__


def alias(old_module: str, new_module: str) -> None:
    """Make ``old_module`` (being imported) the module ``new_module``, with a
    ``DeprecationWarning`` naming the new home. Call it as the old module's only statement::

        alias(__name__, "dpwidgets.families.svt.spec")
    """
    warnings.warn(f"{old_module} moved to {new_module}; import it from there",
                  DeprecationWarning, stacklevel=3)
    sys.modules[old_module] = importlib.import_module(new_module)
