"""Persistence: the privacy ledger and the release store, in SQLite or PostgreSQL.

=====================  ========================================================================
module                 what
=====================  ========================================================================
:mod:`.ledger`         :class:`PrivacyLedger`, the accounting core: what a charge costs
                       (composition), its transactions, caps, joint spends
:mod:`.totals`         the running totals a charge reads and writes (O(1)), rebuilt from the
                       spends
:mod:`.journal`        the reads: spent, remaining, summary, the spends, what a spend would cost
:mod:`.datasets`       how a dataset is found: normalised names, fingerprints, aliases, its cap
:mod:`.claims`         claims on idempotency keys and their leases (one output per charged key)
:mod:`.records`        what a ledger hands out: :class:`Spend`, :class:`Claim`,
                       :class:`LedgerView`
:mod:`.backend`        the interface between the accounting and a database; the tables, their
                       version
:mod:`.sqlite`         :class:`SQLiteBackend`: a ledger file, its path rules, ``BEGIN IMMEDIATE``
:mod:`.postgres`       :class:`PostgresBackend`: row locks, an advisory lock, the server's clock
:mod:`.paths`          :func:`default_ledger_path`, :func:`create_private`,
                       :func:`is_postgres_url`
:mod:`.store`          :class:`ReleaseStore`: released DP outputs, kept by the ledger for free
                       replays
=====================  ========================================================================

A refused spend raises :class:`~dpwidgets.engine.errors.BudgetExceededError`, one of the
refusals under the package's one error root (:mod:`dpwidgets.engine.errors`).
"""

from ..engine.errors import BudgetExceededError
from .backend import Backend
from .datasets import normalise_name
from .ledger import PrivacyLedger
from .paths import create_private, default_ledger_path, is_postgres_url
from .postgres import PostgresBackend
from .records import Claim, LedgerView, Spend
from .sqlite import SQLiteBackend
from .store import ReleaseStore, canonical, plain

__all__ = ["Backend", "BudgetExceededError", "Claim", "LedgerView", "PostgresBackend",
           "PrivacyLedger", "ReleaseStore", "SQLiteBackend", "Spend", "canonical", "create_private",
           "default_ledger_path", "is_postgres_url", "normalise_name", "plain"]
