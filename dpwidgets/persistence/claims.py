"""The claims on idempotency keys: who runs the release a key paid for, under which lease.

Claims: one output per charged key
----------------------------------
An idempotency key pays once, but several attempts may carry it at once (a client's retry
reaching another curator replica while the first attempt still runs).
:meth:`~dpwidgets.persistence.ledger.PrivacyLedger.claim` records, in the spend's own
transaction, a claim on the key: the attempt that holds it (its ``owner``) and a lease (an
expiry time, on the database's clock). Only the holder runs the release. Another attempt with
the key, while the lease lasts, waits for the holder's output in the release store (or its
failure, which it repeats); once the lease has run out with neither (the holder died: its output
never left it), it takes the claim over and runs under the spend already recorded. The holder
ends the claim (:meth:`~dpwidgets.persistence.ledger.PrivacyLedger.finish`) when it has stored
the output, or may :meth:`~dpwidgets.persistence.ledger.PrivacyLedger.renew` it. The lease must
outlast the slowest release: an attempt still alive when its lease runs out may see another run
beside it, and only the first output stored is released.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import TYPE_CHECKING

from .records import Claim

if TYPE_CHECKING:
    from .ledger import PrivacyLedger

__all__ = ["Claims"]


class Claims:
    """The claim half of :class:`~dpwidgets.persistence.ledger.PrivacyLedger` (a mixin: it runs
    in the ledger's transactions, on its backend)."""

    # -- claims on idempotency keys --------------------------------------------------------
    def claim(
        self,
        epsilon: float,
        label: str = "release",
        *,
        key: str,
        owner: str,
        lease: float,
        partition: str | None = None,
        parts: Iterable[str] | None = None,
        jointly: Iterable[PrivacyLedger] = (),
    ) -> Claim:
        """Charge a keyed spend and claim the right to run its release, in one transaction.

        Several attempts may carry one idempotency key at once (a client's retry reaching
        another curator replica while the first attempt runs). The key pays once; the claim
        decides which attempt runs the release, so that one output is made for one charge:

        * the first attempt records the spend (as :meth:`spend` does) and a claim held by
          ``owner`` for ``lease`` seconds;
        * a later attempt finds the claim. While the holder's lease lasts it must not run:
          it waits for the holder's output (:meth:`claim_state`, then the release store)
          or its failure. Once the lease has run out without an output (the holder died),
          the later attempt takes the claim over and runs under the spend already recorded
          (``resumed``); nothing is charged twice.
        * the holder calls :meth:`finish` when it has stored the output (or failed on the
          data), and may :meth:`renew` its lease while it runs.

        Leases are measured on the database's clock (SQLite: this machine's; PostgreSQL: the
        server's), so replicas on several machines agree on when one has run out.

        Parameters
        ----------
        epsilon, label, partition, parts, jointly
            As for :meth:`spend`.
        key : str
            The idempotency key (required).
        owner : str
            Names this attempt (unique per attempt: a uuid, say).
        lease : float
            Seconds the claim is held without an output before another attempt may take it
            over: longer than the slowest release.

        Returns
        -------
        Claim
            ``claim.held_by(owner)``: run the release (``claim.fresh``: this call charged it;
            ``claim.resumed``: under an earlier attempt's charge). Otherwise another attempt
            holds the claim (``"running"``, until ``claim.expires``) or ended it
            (``"done"``: replay its stored output; ``"failed"``: repeat its failure).

        Raises
        ------
        BudgetExceededError, ValueError
            As for :meth:`spend` (nothing recorded, no claim taken).
        """
        epsilon, label, partition, parts, ledgers = self._spend_args(
            epsilon, label, partition, parts, key, jointly
        )
        owner = self._check_owner(owner, key)
        lease = self._check_lease(lease)

        def body() -> Claim:
            fresh = self._spend_in(ledgers, epsilon, label, partition, parts, key)
            db = self._db
            now = db.now()
            row = db.execute(
                "SELECT owner, expires, state FROM claims WHERE dataset = ? AND key = ?",
                (self.dataset, key),
            ).fetchone()
            if row is not None and not (row[2] == "running" and (row[0] == owner or row[1] <= now)):
                return Claim(row[2], row[0], float(row[1]), now, fresh=fresh)
            db.execute(
                db.insert(
                    "claims",
                    ("dataset", "key", "owner", "expires", "state", "updated"),
                    replace=("dataset", "key"),
                ),
                (self.dataset, key, owner, now + lease, "running", now),
            )
            resumed = not fresh and (row is None or row[0] != owner)
            return Claim("running", owner, now + lease, now, fresh=fresh, resumed=resumed)

        return self._write(body, [ledger.dataset for ledger in ledgers])

    def claim_state(self, key: str) -> Claim | None:
        """The claim on ``key`` as last committed (a read: never blocked, never blocking),
        or ``None`` if there is none."""

        def body():
            row = self._db.execute(
                "SELECT owner, expires, state FROM claims WHERE dataset = ? AND key = ?",
                (self.dataset, key),
            ).fetchone()
            return None if row is None else Claim(row[2], row[0], float(row[1]), self._db.now())

        return self._transaction(body, write=False)

    def renew(self, key: str, owner: str, lease: float) -> bool:
        """Extend ``owner``'s lease on ``key`` to ``lease`` seconds from now; ``False`` if it
        no longer holds the claim (its lease ran out and another attempt took it over)."""
        owner = self._check_owner(owner, key)
        lease = self._check_lease(lease)

        def body() -> bool:
            db = self._db
            now = db.now()
            return db.execute(
                "UPDATE claims SET expires = ?, updated = ? WHERE dataset = ? AND key = ? "
                "AND owner = ? AND state = 'running'",
                (now + lease, now, self.dataset, key, owner),
            ).rowcount > 0

        return self._write(body, [self.dataset])

    def finish(self, key: str, owner: str, *, failed: bool = False) -> bool:
        """End the claim on ``key``: its output is stored (``failed=False``, whoever holds
        the claim now: the stored output is the release), or ``owner``'s run failed on the
        data (``failed=True``; only while ``owner`` still holds the claim, otherwise the
        attempt that took it over decides). Returns whether the claim changed."""
        owner = self._check_owner(owner, key)

        def body() -> bool:
            db = self._db
            now = db.now()
            if failed:
                sql = ("UPDATE claims SET state = 'failed', updated = ? WHERE dataset = ? "
                       "AND key = ? AND owner = ? AND state = 'running'")
                args = (now, self.dataset, key, owner)
            else:
                sql = ("UPDATE claims SET state = 'done', updated = ? WHERE dataset = ? "
                       "AND key = ? AND state <> 'done'")
                args = (now, self.dataset, key)
            return db.execute(sql, args).rowcount > 0

        return self._write(body, [self.dataset])

    @staticmethod
    def _check_owner(owner, key) -> str:
        if not isinstance(key, str) or not key:
            raise ValueError(f"a claim needs a non-empty string key, got {key!r}")
        if not isinstance(owner, str) or not owner:
            raise ValueError(f"owner must be a non-empty string naming the attempt, got {owner!r}")
        return owner

    @staticmethod
    def _check_lease(lease) -> float:
        if isinstance(lease, bool) or not isinstance(lease, int | float) or not (
            math.isfinite(lease) and lease > 0
        ):
            raise ValueError(f"lease must be a number of seconds > 0, got {lease!r}")
        return float(lease)
