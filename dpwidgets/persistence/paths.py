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

    Examples
    --------
    >>> import os, tempfile
    >>> from dpwidgets.persistence import create_private
    >>> path = os.path.join(tempfile.mkdtemp(), "ledger.sqlite")
    >>> create_private(path)
    >>> oct(os.stat(path).st_mode & 0o777)
    '0o600'
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

    Examples
    --------
    Only a path is computed (nothing is created):

    >>> import os
    >>> from unittest import mock
    >>> from dpwidgets.persistence import default_ledger_path
    >>> with mock.patch.dict(os.environ, {"DPWIDGETS_LEDGER": "/srv/dp/ledger.sqlite"}):
    ...     print(default_ledger_path())
    /srv/dp/ledger.sqlite
    >>> with mock.patch.dict(os.environ, {"DPWIDGETS_LEDGER": ""}):
    ...     print(default_ledger_path().name)
    ledger.sqlite
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
    """Whether ``path`` is a ``postgresql://`` (or ``postgres://``) URL: a PostgreSQL ledger.

    Examples
    --------
    >>> from dpwidgets.persistence import is_postgres_url
    >>> is_postgres_url("postgresql://curator@db.example/ledger"), is_postgres_url("l.sqlite")
    (True, False)
    """
    return isinstance(path, str) and path.startswith(("postgresql://", "postgres://"))
