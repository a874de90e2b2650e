"""Moved to :mod:`dpwidgets.ui.accuracy`; this import path keeps working for a deprecation period, with
a ``DeprecationWarning``."""

from .._moved import alias

alias(__name__, "dpwidgets.ui.accuracy")
