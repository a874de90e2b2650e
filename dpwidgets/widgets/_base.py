"""Moved to :mod:`dpwidgets.ui.base`; this import path keeps working for a deprecation period, with
a ``DeprecationWarning``."""

from .._moved import alias

alias(__name__, "dpwidgets.ui.base")
