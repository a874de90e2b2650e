"""The analyst's free previews of the synthetic-data widget, on the dataset's public stand-in.

In analyst mode every control change draws DPCopula (and, to compare, the baselines) run on
the stand-in (:meth:`dpwidgets.Session.preview`: free, nothing read but the stand-in, nothing
charged), never on the confidential table. A preview is kept by what it previews
(:meth:`~dpwidgets.Session.preview_key`: the canonical parameters), so a method whose
parameters did not change is not run again, as a teaching release is replayed from the
session's cache.

Examples
--------
>>> from dpwidgets import Session
>>> from dpwidgets.families.synth.preview import Previews
>>> from dpwidgets.families.synth.standins import synth_stand_in
>>> import pathlib, tempfile
>>> session = Session(mode="analyst", ledger=pathlib.Path(tempfile.mkdtemp()) / "l.sqlite")
>>> table = synth_stand_in(300, {"a": 5, "b": 3}, seed=2)  # the "confidential" table
>>> session.add_dataset("t", table, total_epsilon=1.0,
...                     stand_in=synth_stand_in(300, {"a": 5, "b": 3}))
>>> previews = Previews(session, lambda name, **p: session.preview("t", name, **p))
>>> params = {"epsilon": 0.5, "domains": {"a": 5, "b": 3}}
>>> first = previews.output("t", "independent_synth", params)
>>> previews.output("t", "independent_synth", params) is first, session.spent("t")
(True, 0.0)
"""

from __future__ import annotations

from collections.abc import Callable

from ...session import Release, Session

__all__ = ["Previews"]

#: Previews kept before the cache starts again: a few synthetic tables, not a history of them.
KEPT = 8


class Previews:
    """A widget's previews, kept by their canonical parameters.

    Parameters
    ----------
    session : Session
        The analyst's session (the door).
    run : callable ``(mechanism, **params) -> Release``
        Makes one preview of the widget's dataset (its ``_preview_run``, with its own
        generator).
    """

    def __init__(self, session: Session, run: Callable[..., Release]):
        self.session, self._run = session, run
        self._kept: dict[str, dict] = {}

    def output(self, dataset: str, mechanism: str, params: dict) -> dict:
        """The DP output a release of ``mechanism`` with ``params`` on ``dataset`` would
        publish, computed on its stand-in (the one kept, if these parameters were previewed
        before)."""
        key = self.session.preview_key(dataset, mechanism, **params)
        if key not in self._kept:
            if len(self._kept) > KEPT:
                self._kept.clear()
            self._kept[key] = self._run(mechanism, **params).output
        return self._kept[key]
