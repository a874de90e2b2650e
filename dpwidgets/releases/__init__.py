"""Mechanism specs, one module per algorithm family.

Each module declares the :class:`~dpwidgets.mechanism.Mechanism` entries of its engine -- how
to validate the parameters, what a release costs, which facts about the data it relies on, its
guarantee, which parts of the result are DP output -- and registers them with
:func:`~dpwidgets.mechanism.register_mechanism`. Importing this package (which
:mod:`dpwidgets.session` does) imports every module in it. Families are moving into
``dpwidgets/families/<family>/spec.py`` (see ``CONTRIBUTING.md``); a module here whose family
has moved is an old import path only.
"""

from __future__ import annotations

import importlib
import pkgutil

from ..families import load_specs
from ..families import names as _families
from ..mechanism import registering_builtins

# A module whose family has moved into dpwidgets/families/ is only an old import path (it warns).
with registering_builtins():
    for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        if not _module.startswith("_") and _module not in _families():
            importlib.import_module(f"{__name__}.{_module}")
load_specs()
