"""Session mechanisms of the later chapters, one module per chapter.

Each module defines the :class:`~dpwidgets.session.Mechanism` entries for its engine (how to
validate the parameters, what a release costs, which parts of the result are DP output) and
registers them with :func:`~dpwidgets.session.register_mechanism`. Importing this package
(which :mod:`dpwidgets.session` does) imports every module in it, so a new chapter adds a
module here and nothing else.
"""

from __future__ import annotations

import importlib
import pkgutil

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    if not _module.startswith("_"):
        importlib.import_module(f"{__name__}.{_module}")
