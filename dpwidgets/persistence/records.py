"""What a ledger hands out: a recorded :class:`Spend`, the :class:`Claim` on a key, and the
read-only :class:`LedgerView` of a summary."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Claim", "LedgerView", "Spend"]


@dataclass(frozen=True)
class Spend:
    """One recorded spend.

    Attributes
    ----------
    epsilon : float
        The epsilon the release asked for.
    label : str
        What was released.
    time : float
        When it was recorded (seconds since the epoch).
    partition, parts : str and tuple of str, optional
        The disjoint parts it touched (parallel composition), or ``None`` for the whole data.
    key : str, optional
        Its idempotency key.
    charged : float, optional
        How much ``spent`` grew when it was recorded (less than ``epsilon`` for a part whose
        partition had already been charged more on another part); ``None`` if not known.

    Examples
    --------
    >>> from dpwidgets.persistence import PrivacyLedger
    >>> ledger = PrivacyLedger(":memory:", dataset="visits", total_epsilon=1.0)
    >>> ledger.spend(0.25, "histogram")
    True
    >>> spend = ledger.recent()[-1]
    >>> spend.epsilon, spend.label, spend.charged
    (0.25, 'histogram', 0.25)
    """

    epsilon: float
    label: str
    time: float
    partition: str | None = None
    parts: tuple[str, ...] | None = None
    key: str | None = None
    charged: float | None = None


@dataclass(frozen=True)
class Claim:
    """The claim on an idempotency key, as
    :meth:`~dpwidgets.persistence.ledger.PrivacyLedger.claim` left it.

    Attributes
    ----------
    state : {"running", "done", "failed"}
        ``"running"``: ``owner`` is running the release until its lease ends; ``"done"``: its
        output is stored; ``"failed"``: it failed on the data (a retry repeats the failure).
    owner : str
        The attempt holding (or that last held) the claim.
    expires : float
        When the holder's lease ends, on the database's clock (seconds since the epoch).
    now : float
        The database's clock when the claim was read.
    fresh : bool
        This call recorded the spend (the first attempt with this key).
    resumed : bool
        This call took the claim over under a spend already recorded: the earlier holder's
        lease ran out (it died before storing an output), or the key was charged before
        claims existed.

    Examples
    --------
    The first attempt with a key charges it and holds the claim; a second attempt with the
    key, while the lease lasts, charges nothing and must not run:

    >>> from dpwidgets.persistence import PrivacyLedger
    >>> ledger = PrivacyLedger(":memory:", dataset="visits", total_epsilon=1.0)
    >>> first = ledger.claim(0.25, "histogram", key="r1", owner="attempt-1", lease=60.0)
    >>> first.state, first.fresh, first.held_by("attempt-1"), first.live
    ('running', True, True, True)
    >>> second = ledger.claim(0.25, "histogram", key="r1", owner="attempt-2", lease=60.0)
    >>> second.fresh, second.held_by("attempt-2"), ledger.spent
    (False, False, 0.25)
    """

    state: str
    owner: str
    expires: float
    now: float
    fresh: bool = False
    resumed: bool = False

    def held_by(self, owner: str) -> bool:
        """Whether ``owner`` holds the claim (and should run the release)."""
        return self.state == "running" and self.owner == owner

    @property
    def live(self) -> bool:
        """Whether the holder's lease is still running."""
        return self.state == "running" and self.expires > self.now

class LedgerView:
    """A ledger seen through its :meth:`summary` alone (read-only properties derived from one
    snapshot): what a curator's joint ledger and an analyst's remote ledger provide.

    Examples
    --------
    A subclass gives :meth:`summary`; the rest follows from it:

    >>> from dpwidgets.persistence import LedgerView
    >>> class Fixed(LedgerView):
    ...     def summary(self, recent=0):
    ...         return {"total_epsilon": 1.0, "spent": 0.25, "remaining": 0.75, "count": 1,
    ...                 "recent": []}
    >>> view = Fixed()
    >>> view.remaining, view.count, view.history()
    (0.75, 1, [])
    """

    def summary(self, recent: int = 0) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    total_epsilon = property(lambda self: self.summary()["total_epsilon"], doc="The cap.")
    spent = property(lambda self: self.summary()["spent"], doc="Epsilon spent so far.")
    remaining = property(lambda self: self.summary()["remaining"], doc="Epsilon left.")
    count = property(lambda self: self.summary()["count"], doc="Spends recorded.")

    def recent(self, limit: int = 50) -> list[Spend]:
        """The latest ``limit`` spends, oldest first."""
        return self.summary(limit)["recent"]

    def history(self, latest: int = 50) -> list[Spend]:
        """The spends this view can show, oldest first: the ``latest`` (a view holds no more)."""
        return self.recent(latest)
