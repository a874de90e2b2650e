"""The budget meter: an anywidget showing spent and remaining epsilon per dataset.

The front end (``js/meter.js``) only draws what the traits say: one bar per dataset made of
one segment per recent release (hover: label, epsilon, time) after one aggregated segment for
every earlier release, a warning once ``warn_fraction`` of the budget is spent, and the
remaining budget in odds terms. Nothing in the traits is derived from the data: labels,
epsilons and times of releases are public ledger information.

A refresh reads each ledger through its bounded API (one
:meth:`~dpwidgets.persistence.journal.Journal.summary` snapshot: totals and the latest
:attr:`BudgetMeter.LATEST` spends), so its cost does not grow with the number of spends.

The meter refreshes after every release attempt of its session, and also whenever its view
asks: when it is drawn, when it comes into sight, when the pointer enters it, and every
:data:`REFRESH_SECONDS` while it is on screen. So two notebooks on one ledger file (or two
kernels on one curator) agree as soon as either meter is looked at, without a thread of ours
polling the ledger. A replay (a release already paid for, asked again) is said to be free.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import threading
from typing import TYPE_CHECKING

import anywidget
import traitlets

from .static import static_path

if TYPE_CHECKING:
    from ..session import Session

__all__ = ["REFRESH_SECONDS", "BudgetMeter", "odds_sentence"]

#: While a meter is on screen, its view asks for a refresh this often (seconds).
REFRESH_SECONDS = 5


def odds_sentence(epsilon: float, unit: str = "row") -> str:
    """State a privacy loss as the factor by which an observer's odds may change.

    Parameters
    ----------
    epsilon : float
        The privacy loss.
    unit : {"row", "person"}
        What one neighbouring dataset differs by. The bound protects one *row*; it protects a
        person only when the data owner declared one row per person. A person with k rows is
        protected at k * epsilon (group privacy; Dwork and Roth 2014, Thm. 2.2), so the
        sentence says "row" unless the unit is "person".

    Returns
    -------
    str
    """
    if unit not in ("row", "person"):
        raise ValueError(f"unit must be 'row' or 'person', got {unit!r}")
    if epsilon > 700:  # e^ε overflows a float; say it in powers of ten instead
        factor = f"10^{epsilon / math.log(10):.0f}"
    else:
        factor = f"{math.exp(epsilon):.3g}"
    sentence = (
        f"an observer's odds about any one {unit} can change by at most a factor "
        f"e^{epsilon:.3g} ≈ {factor}"
    )
    if unit == "row":
        sentence += f" (about a person with k rows: e^(k·{epsilon:.3g}))"
    return sentence


@functools.lru_cache(maxsize=4096)
def _iso(t: float) -> str:
    # Cached: every refresh formats the same latest times again.
    return _dt.datetime.fromtimestamp(t).isoformat(timespec="seconds")


def _segments(items, limit: int, *, overdraft: bool, total_count: int, total_charged: float):
    """One segment per item of the latest ``limit``, after one for all earlier ones."""
    shown = items[-limit:] if limit else []
    segments = [
        {
            "label": s.label,
            "epsilon": s.epsilon,
            # What the release added to the bar: less than epsilon for a release on a part
            # whose partition had already been charged more (parallel composition).
            "charged": s.epsilon if getattr(s, "charged", None) is None else s.charged,
            "time": _iso(s.time),
            "overdraft": overdraft,
            "count": 1,
        }
        for s in shown
    ]
    earlier = total_count - len(shown)
    if earlier > 0:
        charged = max(0.0, total_charged - math.fsum(seg["charged"] for seg in segments))
        segments.insert(
            0,
            {
                "label": f"{earlier} earlier release{'s' if earlier > 1 else ''}",
                "epsilon": charged,
                "charged": charged,
                "time": f"before {segments[0]['time']}" if segments else "",
                "overdraft": overdraft,
                "count": earlier,
                "earlier": True,
            },
        )
    return segments


class BudgetMeter(anywidget.AnyWidget):
    """Spent and remaining epsilon of every dataset of a :class:`~dpwidgets.Session`.

    Use ``session.meter`` rather than constructing one: the session keeps it live, refreshing
    it after every release attempt of any widget of the session.

    Traits
    ------
    budgets : list of dict
        One entry per dataset: ``dataset``, ``total``, ``spent``, ``remaining``, ``fraction``,
        ``count`` (releases recorded), ``warning`` (spent >= ``warn_fraction`` of total),
        ``overdraft`` (teaching-mode epsilon past the cap), ``unit`` ("row" or "person"),
        ``odds`` (the remaining budget in odds terms) and ``segments``: one per release among
        the latest :attr:`LATEST` (``label``, ``epsilon``, ``charged``, ``time``,
        ``overdraft``, ``count`` = 1), preceded by one aggregated segment (``earlier`` =
        True, ``count`` = how many) when there are more.
    active : str
        The dataset of the latest release (highlighted).
    message : str
        The latest refusal (over budget, not private), or "".
    notice : str
        What the latest release cost when it cost nothing: a replay of a release already
        paid for ("... replayed: free, nothing charged"), or "".
    refresh_seconds : int
        How often the view asks for a refresh while it is on screen.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets import Session
    >>> session = Session("teaching", seed=0)
    >>> session.add_dataset("scores", np.arange(20.0), total_epsilon=1.0)
    >>> meter = session.meter
    >>> _ = session.release("scores", "svt", epsilon=0.25, threshold=10.0, c=1)
    >>> budget = meter.budgets[0]
    >>> budget["dataset"], budget["spent"], budget["remaining"], budget["count"]
    ('scores', 0.25, 0.75, 1)
    >>> _ = session.release("scores", "svt", epsilon=0.25, threshold=10.0, c=1)
    >>> meter.notice
    'SVT standard c=1: replayed a release already paid for — free, nothing charged.'
    """

    #: Releases drawn one by one; earlier ones share one segment, so a redraw costs the same
    #: whatever the size of the ledger.
    LATEST = 50

    _esm = static_path("meter.js")
    _css = static_path("meter.css")

    mode = traitlets.Unicode("teaching").tag(sync=True)
    budgets = traitlets.List(traitlets.Dict()).tag(sync=True)
    active = traitlets.Unicode("").tag(sync=True)
    message = traitlets.Unicode("").tag(sync=True)
    notice = traitlets.Unicode("").tag(sync=True)
    warn_fraction = traitlets.Float(0.8).tag(sync=True)
    refresh_seconds = traitlets.Int(REFRESH_SECONDS).tag(sync=True)

    def __init__(self, session: Session, **kwargs):
        super().__init__(
            mode=session.mode,
            warn_fraction=session.warn_fraction,
            message=session.last_refusal,
            **kwargs,
        )
        self._session = session
        self._follow: threading.Event | None = None
        session.observe(self._on_event)
        self.on_msg(self._on_view_message)
        self.refresh()

    def _on_view_message(self, _widget, content, _buffers) -> None:
        """The view asks for a refresh (drawn, in sight, hovered, or its timer)."""
        if isinstance(content, dict) and content.get("kind") == "refresh":
            try:
                self.refresh()
            except Exception:  # noqa: BLE001 -- a closed ledger or a curator away: next time
                pass

    def history(self, dataset: str | None = None):
        """Every spend recorded on a dataset's budget (default: the active one), oldest first,
        as a pandas DataFrame: when, what, ε asked, ε charged, partition and ledger key. A
        curator's ledger answers with the latest :attr:`LATEST` spends."""
        import pandas as pd

        name = dataset or self.active or (self._session.datasets or [None])[0]
        ledger = self._session.ledger(name)
        spends = ledger.history(self.LATEST)
        return pd.DataFrame(
            [{"time": _iso(s.time), "label": s.label, "epsilon": s.epsilon,
              "charged": s.epsilon if s.charged is None else s.charged,
              "partition": s.partition, "key": s.key} for s in spends],
            columns=["time", "label", "epsilon", "charged", "partition", "key"])

    def export(self, path, dataset: str | None = None):
        """Write :meth:`history` to ``path`` as CSV; returns the path."""
        self.history(dataset).to_csv(path, index=False)
        return path

    def follow(self, interval: float = 2.0) -> None:
        """Re-read the ledgers every ``interval`` seconds, so that what other processes spend
        (another notebook on the same ledger file, other kernels of the same analyst on a
        curator) shows without a release here. Stops when the meter is closed."""
        if not (isinstance(interval, int | float) and interval >= 0.1):
            raise ValueError(f"interval must be >= 0.1 s, got {interval!r}")
        self.unfollow()
        stop = self._follow = threading.Event()

        def loop():
            while not stop.wait(interval):
                try:
                    self.refresh()
                except Exception:  # noqa: BLE001 -- a closed ledger or a curator away: retry
                    continue

        threading.Thread(target=loop, name="dpwidgets-meter", daemon=True).start()

    def unfollow(self) -> None:
        """Stop :meth:`follow`."""
        if self._follow is not None:
            self._follow.set()
            self._follow = None

    def close(self) -> None:
        self.unfollow()
        super().close()

    def _on_event(self, session: Session, event: dict) -> None:
        if event.get("kind") == "refused":
            self.message = event.get("message", "")
            self.notice = ""
        elif event.get("kind") == "release":
            self.message = ""
            release = event.get("release")
            replay = release is not None and not getattr(release, "charged", True)
            self.notice = (f"{release.label}: replayed a release already paid for — free, "
                           f"nothing charged." if replay else "")
        if event.get("dataset"):
            self.active = event["dataset"]
        self.refresh()

    def budget(self, dataset: str | None = None) -> dict:
        """The entry of ``budgets`` for one dataset (default: the active one): the views of one
        table share one entry, found by any of their names or by the table's."""
        name = dataset or self.active or (self.budgets[0]["dataset"] if self.budgets else "")
        for entry in self.budgets:
            if name == entry["dataset"] or name in entry.get("datasets", ()):
                return entry
        raise KeyError(f"no budget for dataset {name!r}")

    def _groups(self) -> list[tuple[str, list[str]]]:
        """The session's datasets grouped by the ledger they are charged to, in the session's
        order: the views of one table share one budget, so they are one bar, not one each.
        Each group is ``(label, names)``: a dataset alone keeps its name; a table's views read
        ``"visits (items, stream)"``."""
        groups: dict[str, list[str]] = {}
        for name in self._session.datasets:
            key = getattr(self._session.ledger(name), "dataset", None) or name
            groups.setdefault(key, []).append(name)
        out = []
        for key, names in groups.items():
            if len(names) == 1:
                out.append((names[0], names))
                continue
            short = [n.partition("/")[2] if n.startswith(f"{key}/") else n for n in names]
            out.append((f"{key} ({', '.join(short)})", names))
        return out

    def _unit(self, dataset: str) -> str:
        """The privacy unit the data owner declared: "person" only when the session says so."""
        unit = getattr(self._session, "unit", None)
        if unit is None:
            return "row"
        try:
            value = unit(dataset) if callable(unit) else unit
        except Exception:  # an older or partial session: the weaker, always true claim
            return "row"
        return "person" if value == "person" else "row"

    def refresh(self) -> None:
        """Re-read every ledger (O(1) in its number of spends) and push the result."""
        budgets = []
        latest: tuple[float, str] | None = None  # (time, dataset) of the newest spend
        teaching = self._session.mode == "teaching"
        active = self.active
        for name, names in self._groups():
            ledger = self._session.ledger(names[0])  # one ledger for the group
            # One snapshot: the count, the total and the latest spends agree even while
            # another process spends.
            summary = ledger.summary(recent=self.LATEST)
            if summary["recent"]:
                newest = max(float(s.time) for s in summary["recent"])
                latest = max(latest or (newest, name), (newest, name))
            total, spent = summary["total_epsilon"], summary["spent"]
            segments = _segments(
                summary["recent"],
                self.LATEST,
                overdraft=False,
                total_count=summary["count"],
                total_charged=spent,
            )
            # Overdrafts exist in teaching mode only, where the data is public; analyst mode
            # shows none, whatever the session holds.
            overdrafts = sorted((o for n in names for o in self._session.overdrafts(n)),
                                key=lambda o: o.time) if teaching else []
            overdraft = math.fsum(o.epsilon for o in overdrafts)
            segments += _segments(
                overdrafts,
                self.LATEST,
                overdraft=True,
                total_count=len(overdrafts),
                total_charged=overdraft,
            )
            remaining = summary["remaining"]
            unit = self._unit(names[0])
            if active in names:
                active = name  # the view released last: its table's bar is the active one
            budgets.append(
                {
                    "dataset": name,
                    "datasets": list(names),
                    "total": total,
                    "spent": spent,
                    "remaining": remaining,
                    "fraction": spent / total,
                    "count": summary["count"],
                    "warning": spent >= self.warn_fraction * total * (1 - 1e-9),
                    "overdraft": overdraft,
                    "unit": unit,
                    "odds": odds_sentence(remaining, unit),
                    "segments": segments,
                }
            )
        if not active and budgets:
            # A meter shown after the releases: the dataset released last is the active one.
            active = latest[1] if latest else budgets[0]["dataset"]
        if active != self.active:
            self.active = active
        self.budgets = budgets
