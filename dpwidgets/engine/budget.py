"""Deprecated: the privacy ledger moved to :mod:`dpwidgets.persistence`.

Every name this module held is still importable from here, with a ``DeprecationWarning`` that
names its new home (:mod:`dpwidgets.persistence.ledger`, ``.datasets``, ``.records``,
``.sqlite``, ``.postgres``, ``.backend``, ``.paths``; :class:`BudgetExceededError` lives in
:mod:`dpwidgets.engine.errors` and is imported from here without a warning).
"""

from __future__ import annotations

from .._moved import moved
from .errors import BudgetExceededError

__all__ = ["BudgetExceededError"]

# old name -> (new module, new name)
__getattr__ = moved(__name__, {
    "PrivacyLedger": ("dpwidgets.persistence.ledger", "PrivacyLedger"),
    "normalise_name": ("dpwidgets.persistence.datasets", "normalise_name"),
    "Spend": ("dpwidgets.persistence.records", "Spend"),
    "Claim": ("dpwidgets.persistence.records", "Claim"),
    "LedgerView": ("dpwidgets.persistence.records", "LedgerView"),
    "create_private": ("dpwidgets.persistence.paths", "create_private"),
    "default_ledger_path": ("dpwidgets.persistence.paths", "default_ledger_path"),
    "_is_postgres_url": ("dpwidgets.persistence.paths", "is_postgres_url"),
    "_SCHEMA_VERSION": ("dpwidgets.persistence.backend", "SCHEMA_VERSION"),
    "_SCHEMA_TEMPLATE": ("dpwidgets.persistence.backend", "SCHEMA_TEMPLATE"),
    "_SQLite": ("dpwidgets.persistence.sqlite", "SQLiteBackend"),
    "_SQLITE_SCHEMA": ("dpwidgets.persistence.sqlite", "SQLITE_SCHEMA"),
    "_begin_immediate": ("dpwidgets.persistence.sqlite", "begin_immediate"),
    "_Postgres": ("dpwidgets.persistence.postgres", "PostgresBackend"),
    "_PG_SCHEMA": ("dpwidgets.persistence.postgres", "PG_SCHEMA"),
    "_POSTGRES_SCHEMA": ("dpwidgets.persistence.postgres", "POSTGRES_SCHEMA"),
    "_PG_OPEN_LOCK": ("dpwidgets.persistence.postgres", "PG_OPEN_LOCK"),
})
