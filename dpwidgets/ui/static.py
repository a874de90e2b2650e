"""Where the front-end files are: ``dpwidgets/_static`` in a wheel, the repo's ``js/`` otherwise."""

from __future__ import annotations

from pathlib import Path

__all__ = ["static_path"]

_PACKAGE = Path(__file__).resolve().parent.parent


def static_path(name: str) -> Path:
    """Return the path of a front-end file shipped with the package.

    The wheel force-includes the repository's ``js/`` as ``dpwidgets/_static/``; an editable
    install has no such folder, so fall back to ``<repo>/js/``.
    """
    for folder in (_PACKAGE / "_static", _PACKAGE.parent / "js"):
        candidate = folder / name
        if candidate.is_file():
            return candidate
    raise FileNotFoundError(
        f"front-end file {name!r} not found in {_PACKAGE / '_static'} or {_PACKAGE.parent / 'js'}"
    )
