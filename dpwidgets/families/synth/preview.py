"""What a redraw of the synthetic-data widget runs: the methods, their parameters, and the
analyst's free previews on the dataset's public stand-in.

A redraw runs DPCopula and, to compare, the baselines (:func:`comparisons`: the independent
DP margins and, where the full-domain histogram fits, the Laplace mechanism on it), each a
session mechanism (:data:`MECHANISMS`) with the public parameters of :func:`base_params` and
its own. In analyst mode every control change draws them run on the stand-in
(:meth:`dpwidgets.Session.preview`: free, nothing read but the stand-in, nothing charged),
never on the confidential table. A preview is kept by what it previews
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

import math
from collections.abc import Callable, Mapping, Sequence

from ...session import Release, Session
from .params import LaplaceHistogramSynthParams
from .text import laplace_note

__all__ = ["MECHANISMS", "Previews", "base_params", "comparisons"]

#: The session mechanism of each method key.
MECHANISMS = {"dpcopula": "dpcopula", "independent": "independent_synth",
              "laplace": "laplace_histogram_synth", "peer": "peer_synth"}

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


def base_params(epsilon: float, attributes: list[str], domains: Mapping | None) -> dict:
    """The parameters every method shares: ε, the ``attributes`` and (when declared) their
    public ``domains``.

    Examples
    --------
    >>> base_params(0.5, ["a", "b"], None)
    {'epsilon': 0.5, 'attributes': ['a', 'b']}
    """
    p: dict = {"epsilon": float(epsilon), "attributes": attributes}
    if domains is not None:
        p["domains"] = {a: domains[a] for a in attributes}
    return p


def comparisons(compare: bool, attributes: Sequence[str],
                domains: Mapping | None) -> tuple[list[str], dict[str, str]]:
    """The baselines run beside DPCopula (none unless ``compare``), and a note for each one
    that is not: the Laplace mechanism needs declared ``domains`` whose full-domain histogram
    over ``attributes`` fits (the baseline's own ``max_cells``).

    Examples
    --------
    >>> import numpy as np
    >>> comparisons(True, ["a", "b"], {"a": np.arange(10), "b": np.arange(3)})
    (['independent', 'laplace'], {})
    >>> comparisons(True, ["a", "b"], None)[0]
    ['independent']
    """
    if not compare:
        return [], {}
    keys, notes = ["independent"], {}
    cells = (None if domains is None
             else math.prod(int(domains[a].size) for a in attributes))
    note = laplace_note(cells, LaplaceHistogramSynthParams.default("max_cells"))
    if note is None:
        keys.append("laplace")
    else:
        notes["laplace"] = note
    return keys, notes
