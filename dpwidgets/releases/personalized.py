"""Moved to :mod:`dpwidgets.families.personalized.spec`; this import path keeps working for a
deprecation period, with a ``DeprecationWarning``."""

from .._moved import alias

alias(__name__, "dpwidgets.families.personalized.spec")
