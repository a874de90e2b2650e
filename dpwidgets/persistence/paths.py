"""Where a ledger lives: the default file, private files, and PostgreSQL URLs."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["create_private", "default_ledger_path", "is_postgres_url"]


def create_private(path: str) -> None:
    """Create ``path`` (if missing) readable and writable by its owner only (mode 0600).

    The ledger and the release store hold the store's secret and every output; SQLite creates
    its journal (and WAL) files with the permissions of the database file, so they are 0600
    too. An existing file keeps its mode.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        return
    os.close(fd)


def default_ledger_path() -> Path:
    """The ledger file used when none is given.

    Returns
    -------
    pathlib.Path
        ``$DPWIDGETS_LEDGER`` (``~`` expanded, made absolute), else
        ``platformdirs.user_data_dir("dpwidgets")/ledger.sqlite``.
    """
    env = os.environ.get("DPWIDGETS_LEDGER")
    if env:
        # abspath, not resolve: the ledger resolves symlinks itself when it opens the file.
        return Path(os.path.abspath(Path(env).expanduser()))
    from platformdirs import user_data_dir

    return Path(os.path.abspath(Path(user_data_dir("dpwidgets", appauthor=False)))) / (
        "ledger.sqlite"
    )


def is_postgres_url(path) -> bool:
    """Whether ``path`` is a ``postgresql://`` (or ``postgres://``) URL: a PostgreSQL ledger."""
    return isinstance(path, str) and path.startswith(("postgresql://", "postgres://"))
