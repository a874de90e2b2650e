"""Old import paths that keep working for a deprecation period.

A module whose names moved keeps a module-level ``__getattr__`` made by :func:`moved`: an old
name still resolves, to the object at its new home, with a ``DeprecationWarning`` that names
that home. Only names that moved resolve; any other is an ``AttributeError`` as usual.

A module that moved whole is an :func:`alias`: importing it by its old name warns and gives the
module at its new home (the same object, so a test's ``monkeypatch`` reaches the code).

A class whose subclasses overrode private steps, now public hooks, calls
:func:`warn_renamed_hooks` from its ``__init_subclass__``: the old override still runs (the
private step calls the public hook) and warns, pointing at the overriding ``def``.
"""

from __future__ import annotations

import importlib
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["adopt_renamed_hooks", "alias", "legacy_step", "moved", "warn_renamed_hooks"]


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


def warn_renamed_hooks(cls: type, base: str, hooks: Mapping[str, str]) -> None:
    """Warn (``DeprecationWarning``) for each private step ``cls`` itself overrides among
    ``hooks`` (private name -> what to do instead), at the line of the overriding ``def``.

    Examples
    --------
    >>> import warnings
    >>> class Old:
    ...     def _live(self): ...
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_renamed_hooks(Old, "ReleaseWidget", {"_live": "override 'draw_live'"})
    >>> str(caught[0].message).split(";")[0]
    'Old._live overrides a private step of ReleaseWidget'
    """
    for private, instead in hooks.items():
        override = vars(cls).get(private)
        if override is None:
            continue
        code = getattr(override, "__code__", None)
        warnings.warn_explicit(
            f"{cls.__qualname__}.{private} overrides a private step of {base}; {instead} "
            "(the private override stops working in dpwidgets 2.0)", DeprecationWarning,
            filename=code.co_filename if code else "<unknown>",
            lineno=code.co_firstlineno if code else 0, module=cls.__module__)


def adopt_renamed_hooks(cls: type, base: str, hooks: Mapping[str, str]) -> None:
    """For a subclass written against a base's old private hook names (``hooks``: private
    name -> public hook): warn at each override, and let the public hook run it.

    The base keeps each old name as a :func:`legacy_step`, so that an old override's
    ``super()._name()`` still reaches the public hook of the class above it.

    Examples
    --------
    >>> import warnings
    >>> class Base:
    ...     def make_figure(self): return "default"
    ...     _figure = legacy_step("_figure", "make_figure")
    >>> class New(Base):
    ...     def make_figure(self): return "new"
    >>> with warnings.catch_warnings(record=True):
    ...     warnings.simplefilter("always")
    ...     class Old(New):
    ...         def _figure(self): return "old over " + super()._figure()
    ...     adopt_renamed_hooks(Old, "Base", {"_figure": "make_figure"})
    >>> Old().make_figure(), New()._figure()
    ('old over new', 'new')
    """
    warn_renamed_hooks(cls, base, {private: f"override {public!r} instead"
                                   for private, public in hooks.items()})
    for private, public in hooks.items():
        if private in vars(cls) and public not in vars(cls):
            setattr(cls, public, vars(cls)[private])


def legacy_step(private: str, public: str) -> Callable:
    """The base's old private name of the hook ``public``: called on an object, it runs the
    public hook; called through ``super()`` from an old override, the public hook of the class
    above the old overrides (see :func:`adopt_renamed_hooks`)."""

    def step(self, *args, **kwargs):
        old = [c for c in type(self).__mro__ if vars(c).get(private, step) is not step]
        above = super(old[-1], self) if old else self
        return getattr(above, public)(*args, **kwargs)

    step.__name__ = private
    step.__doc__ = f"The 0.x name of :meth:`{public}`."
    return step
