"""How the ledger finds a dataset: its normalised names, its fingerprint, its cap.

Datasets and aliases
--------------------
A dataset is looked up by its normalised name (Unicode NFKC, surrounding whitespace stripped,
inner whitespace collapsed, case folded) and, if given, by a content fingerprint. Whatever
name or fingerprint finds an existing dataset binds to *its* budget and is recorded as an
alias, so the same data added as "visits", "Visits " or "visits_2" is charged to one budget.
"""

from __future__ import annotations

import math
import time
import unicodedata

from .backend import SCHEMA_VERSION

__all__ = ["Datasets", "normalise_name"]


def normalise_name(name: str) -> str:
    """The form under which dataset names are compared.

    Unicode NFKC, surrounding whitespace stripped, inner runs of whitespace collapsed to one
    space, case folded: "Visits", " visits" and "visits" name one dataset.

    Examples
    --------
    >>> from dpwidgets.persistence import normalise_name
    >>> normalise_name("  Web   Visits "), normalise_name("\uff36isits")
    ('web visits', 'visits')
    """
    folded = " ".join(unicodedata.normalize("NFKC", name).split()).casefold()
    # Case folding can produce characters NFKC would rewrite again (e.g. "ß" -> "ss" is fine,
    # but some compatibility characters reappear); one more pass makes the form a fixed point.
    return unicodedata.normalize("NFKC", folded)


class Datasets:
    """The opening half of :class:`~dpwidgets.persistence.ledger.PrivacyLedger` (a mixin: it
    runs in the ledger's opening transaction, on its backend)."""

    # -- opening --------------------------------------------------------------------------
    def _migrate(self) -> None:
        """Bring the database to the current schema (inside the opening transaction)."""
        db = self._db
        version = db.schema_version()
        if version >= SCHEMA_VERSION:
            return
        db.create_schema()
        alias = db.insert("aliases", ("kind", "value", "dataset", "created"), ignore=True)
        names = db.execute("SELECT name, created FROM datasets ORDER BY created, name")
        for name, created in names.fetchall() if version < 2 else ():
            # Oldest first: if two old datasets differ only in spelling, the older one keeps
            # the normalised name (both stay reachable by their exact names).
            db.execute(alias, ("name", normalise_name(name), name, created))
            self._rebuild(name)
        db.set_schema_version(SCHEMA_VERSION)

    def _open_dataset(
        self, requested: str, total_epsilon: float | None, fingerprint: str | None
    ) -> None:
        db = self._db
        db.lock_for_opening()
        self._migrate()
        now = time.time()
        normal = normalise_name(requested)
        exact = db.execute("SELECT name FROM datasets WHERE name = ?", (requested,)).fetchone()
        if exact is not None:
            by_name = exact[0]
        else:
            row = db.execute(
                "SELECT dataset FROM aliases WHERE kind = 'name' AND value = ?", (normal,)
            ).fetchone()
            by_name = row[0] if row else None
        by_fingerprint = None
        if fingerprint is not None:
            row = db.execute(
                "SELECT dataset FROM aliases WHERE kind = 'fingerprint' AND value = ?",
                (fingerprint,),
            ).fetchone()
            by_fingerprint = row[0] if row else None
        if by_name is not None and by_fingerprint is not None and by_name != by_fingerprint:
            raise ValueError(
                f"dataset name {requested!r} is recorded in the ledger {self.path} for other "
                f"data than the data given (whose content is recorded under another name); "
                f"use that name, or a new name for new data"
            )
        canonical = by_name or by_fingerprint
        if canonical is None:
            if total_epsilon is None:
                raise ValueError(
                    f"dataset {requested!r} has no budget recorded in {self.path}; "
                    f"pass total_epsilon= to set its cap"
                )
            canonical = requested
            db.execute(
                "INSERT INTO datasets (name, total_epsilon, created, fingerprint) "
                "VALUES (?, ?, ?, ?)",
                (canonical, total_epsilon, now, fingerprint),
            )
            db.execute(
                "INSERT INTO totals (dataset, whole, parallel, count, last_id) "
                "VALUES (?, '0', '0', 0, 0)",
                (canonical,),
            )
        cap = db.execute(
            "SELECT total_epsilon FROM datasets WHERE name = ?", (canonical,)
        ).fetchone()[0]
        if (
            exact is not None
            and total_epsilon is not None
            and not math.isclose(cap, total_epsilon)
        ):
            # Found by its own name: today's rule, a reopening cannot change the cap. Found
            # through an alias, the recorded cap wins without a word: an alias must not be a
            # way to change or reset a budget.
            raise ValueError(
                f"dataset {canonical!r} already has a cap of epsilon={cap:.6g} in "
                f"{self.path}; reopening cannot change it (asked for {total_epsilon:.6g})"
            )
        # Record every spelling and fingerprint that found (or created) the dataset, so a
        # later lookup by any of them finds it too.
        alias = db.insert("aliases", ("kind", "value", "dataset", "created"), ignore=True)
        db.execute(alias, ("name", normal, canonical, now))
        if fingerprint is not None:
            db.execute(alias, ("fingerprint", fingerprint, canonical, now))
            db.execute(
                "UPDATE datasets SET fingerprint = ? WHERE name = ? AND fingerprint IS NULL",
                (fingerprint, canonical),
            )
        self.dataset = canonical
        self.alias_of = canonical if canonical != requested else None
        self.total_epsilon = float(cap)
