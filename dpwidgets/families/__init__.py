"""The algorithm families, one folder each: everything a family adds to dpwidgets.

A family's folder holds, by name (each module optional but ``spec``):

=================  ===========================================================================
module             what it holds
=================  ===========================================================================
``__init__.py``    the family's map: what it implements, from which text, where each part is
``params.py``      one frozen :class:`~dpwidgets.params.Params` per mechanism: the single source
                   of its parameters, their checks, defaults and controls
``spec.py``        the :class:`~dpwidgets.mechanism.Mechanism` entries (cost, guarantee,
                   neighbours, facts, public outputs), registered as built-in when loaded
``engine.py``      the numpy/scipy algorithm, when no other family reuses it (the built-in
                   engines live in :mod:`dpwidgets.engine`, shared between families)
``display.py``     Bokeh figure builders (plain functions from public numbers to a figure)
                   and the family's :class:`~dpwidgets.ui.figures.Display` classes: built
                   once from a release or a preview, they only draw
``widget.py``      the widgets (its ``__all__``), thin controllers between controls, door and
                   display; exported from :mod:`dpwidgets.widgets`
``standins.py``    public data generators for the family's setups (its ``__all__``); exported
                   from :mod:`dpwidgets.datasets`
=================  ===========================================================================

Nothing lists the families: :func:`names` finds every sub-package here, so a new family is
one new folder (``CONTRIBUTING.md``). Loading a family's ``spec`` (which :mod:`dpwidgets.session`
does for every family) imports no UI code; :func:`exports` loads ``widget`` or ``standins``
only when asked.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
from collections.abc import Callable
from types import ModuleType

__all__ = ["exports", "load_specs", "module", "names"]


def names() -> list[str]:
    """The families, by folder name, sorted (``_``-prefixed folders are not families)."""
    return sorted(m.name for m in pkgutil.iter_modules(__path__)
                  if m.ispkg and not m.name.startswith("_"))


def module(family: str, part: str) -> ModuleType | None:
    """``dpwidgets.families.<family>.<part>``, imported, or ``None`` if the family has no such
    module."""
    name = f"{__name__}.{family}.{part}"
    if importlib.util.find_spec(name) is None:
        return None
    return importlib.import_module(name)


def exports(part: str, keep: Callable[[object], bool] | None = None
            ) -> dict[str, tuple[str, str]]:
    """Every family's public names in its module ``part`` (``"widget"``, ``"standins"``):
    ``{name: (module, name)}``, from each module's ``__all__``, only those whose object ``keep``
    accepts (default: all). Two families exporting one kept name is an error (the second would
    hide the first); a name such as ``DATASETS`` that every widget module has stays reachable
    on its module when ``keep`` leaves it out.

    Examples
    --------
    >>> from dpwidgets.families import exports
    >>> exports("widget", keep=lambda obj: isinstance(obj, type))["SVTExplorer"]
    ('dpwidgets.families.svt.widget', 'SVTExplorer')
    """
    found: dict[str, tuple[str, str]] = {}
    for family in names():
        mod = module(family, part)
        if mod is None:
            continue
        for name in getattr(mod, "__all__", ()):
            if keep is not None and not keep(getattr(mod, name)):
                continue
            if name in found:
                raise ImportError(f"{name!r} is exported by both {found[name][0]} and "
                                  f"{mod.__name__}")
            found[name] = (mod.__name__, name)
    return found


def load_specs() -> None:
    """Import every family's ``spec`` module, registering its mechanisms as built-in (their
    privacy claims are the library's, reviewed with it)."""
    from ..mechanism import registering_builtins

    with registering_builtins():
        for family in names():
            module(family, "spec")


# Every family's mechanisms are registered as built-in when this package is first imported,
# whichever module imports a family first (importing ``dpwidgets.families.<f>.spec`` runs this
# package before it): a spec imported outside :func:`registering_builtins` would otherwise
# register its mechanisms as an analyst's own.
load_specs()
