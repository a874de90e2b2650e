"""Mechanism specs, one module per algorithm family.

Each module declares the :class:`~dpwidgets.mechanism.Mechanism` entries of its engine -- how
to validate the parameters, what a release costs, which facts about the data it relies on, its
guarantee, which parts of the result are DP output -- and registers them with
:func:`~dpwidgets.mechanism.register_mechanism`. Importing this package (which
:mod:`dpwidgets.session` does) imports every module in it, so a new family adds a module here
and nothing else (see ``CONTRIBUTING.md``).
"""

from __future__ import annotations

import importlib
import pkgutil

from .. import mechanism as _mechanism

_mechanism._REGISTERING_BUILTINS[0] = True
try:
    for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if not _module.startswith("_"):
            importlib.import_module(f"{__name__}.{_module}")
finally:
    _mechanism._REGISTERING_BUILTINS[0] = False
