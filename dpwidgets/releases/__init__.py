"""Old import paths of the mechanism specs: each family's specs live in
``dpwidgets/families/<family>/spec.py`` now (:mod:`dpwidgets.families`), loaded by
:mod:`dpwidgets.session`. ``dpwidgets.releases.<family>`` keeps working for a deprecation
period, with a ``DeprecationWarning``.
"""

from __future__ import annotations

from .. import families as _families  # noqa: F401  (registers the built-in mechanisms)
