"""Moved to :mod:`dpwidgets.engine.validation`; this import path keeps working for a deprecation
period, with a ``DeprecationWarning``."""

from .._moved import alias

alias(__name__, "dpwidgets.engine.validation")
