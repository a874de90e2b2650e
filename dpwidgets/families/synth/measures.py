"""What the synthetic-data widget measures of a table: margins, Kendall's τ, range counts.

The widget compares a synthetic table with a *reference* it may show -- the real table in
teaching mode, the public stand-in in a preview, none after an analyst release -- by the
measures of Li 2017, §3.3.1: the relative error of random range-count queries over the
chosen attributes (with a sanity bound ``s``), the margins' total variation distance and the
difference of Kendall's τ. A table is coded once (``0..A-1`` per attribute, from the public
domains) and every measure is computed when a panel or the quality table first asks for it
(:class:`Evaluation`); :class:`Measures` keeps the codes and the measures per table, so a
replayed release or a kept preview is not measured again.

Everything here is post-processing of what the widget may already draw: DP outputs, the
public stand-in, or (teaching) the public data.

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.synth.measures import Measures
>>> domains = {"u": np.arange(10), "v": np.arange(5)}
>>> measures = Measures(n_queries=20)
>>> lower, upper = measures.queries(("u", "v"), domains)
>>> lower.shape, bool(np.all(lower <= upper))
((20, 2), True)
"""

from __future__ import annotations

import math
import zlib
from collections.abc import Callable, Sequence
from typing import NamedTuple

import numpy as np

from ...engine.evaluation import encode, kendall_matrix, range_counts, shares, tau_rows
from .display import binned, display_bins, margin_band_data

__all__ = ["Evaluation", "Measured", "Measures", "bar_margins", "bar_slice", "codes",
           "margin_band", "output_margins", "quality_values", "range_errors", "table_margins"]

#: How many tables (or query sets) a cache keeps before it starts again: a few synthetic
#: tables, not a history of them.
KEPT = 8

#: The quality table's name of each method key.
SHORT = {"dpcopula": "DPCopula", "independent": "independent", "laplace": "Laplace",
         "peer": "AIM/MST"}


def codes(columns: Sequence[np.ndarray], attrs: tuple[str, ...], domains: dict) -> np.ndarray:
    """The columns as codes ``0..A-1`` (n, m), in the smallest unsigned type that holds them
    (a table kept for lazy evaluation takes a quarter of the int64 memory)."""
    n = len(columns[0]) if columns else 0
    largest = max(int(np.asarray(domains[a]).size) for a in attrs)
    out = np.empty((n, len(attrs)), dtype=np.min_scalar_type(largest))
    for j, (column, a) in enumerate(zip(columns, attrs, strict=True)):
        out[:, j] = encode(column, domains[a])
    return out


class Evaluation:
    """What the widget measures of one table, computed when first asked for (lazy): the share
    of every code per attribute, Kendall's τ matrix, the range-count answers. ``scale``
    multiplies the answers (a live table of fewer rows stands for the full one)."""

    def __init__(self, codes: np.ndarray, attrs: tuple[str, ...], domains: dict, queries,
                 scale: float = 1.0):
        self.codes, self.attrs, self.domains, self.queries = codes, attrs, domains, queries
        self.scale = float(scale)
        self._shares: dict[str, np.ndarray] = {}
        self._tau: np.ndarray | None = None
        self._answers: np.ndarray | None = None

    def shares(self, attr: str) -> np.ndarray:
        """The share of the records per value of ``attr`` (its margin)."""
        if attr not in self._shares:
            j = self.attrs.index(attr)
            self._shares[attr] = shares(self.codes[:, j], int(np.asarray(self.domains[attr]).size))
        return self._shares[attr]

    @property
    def tau(self) -> np.ndarray:
        """Kendall's τ of every pair of attributes (on a fixed-seed sample of rows)."""
        if self._tau is None:
            self._tau = kendall_matrix(self.codes, tau_rows(self.codes.shape[1]))
        return self._tau

    @property
    def answers(self) -> np.ndarray:
        """The answers of the range-count queries (times ``scale``)."""
        if self._answers is None:
            counts = range_counts(self.codes, *self.queries)
            self._answers = counts * self.scale if self.scale != 1.0 else counts
        return self._answers


class Measured(NamedTuple):
    """What :meth:`Measures.measure` found of the outputs a widget draws."""

    #: The attributes released, in DPCopula's output order.
    attrs: tuple[str, ...]
    #: The random range queries over them (inclusive code bounds).
    queries: tuple[np.ndarray, np.ndarray]
    #: The reference's evaluation (None: no reference may be shown).
    reference: Evaluation | None
    #: Each output's evaluation, by method key.
    evals: dict[str, Evaluation]
    #: The relative range-count errors per method key (:func:`range_errors`).
    errors: dict[str, np.ndarray]


class Measures:
    """The range queries and the evaluations of the tables a widget draws, kept per table.

    Parameters
    ----------
    n_queries : int
        Random range-count queries per attribute set (Li 2017, §3.3.1 uses 1000).
    """

    def __init__(self, n_queries: int):
        self.n_queries = int(n_queries)
        self._queries: dict = {}
        self._references: dict = {}
        self._synthetic: dict = {}

    def queries(self, attrs: tuple[str, ...], domains: dict) -> tuple[np.ndarray, np.ndarray]:
        """The random range queries over ``attrs`` (public: drawn from the domains alone, with
        a fixed seed per attribute set), as inclusive code bounds."""
        from ...engine.synth import random_range_queries

        key = (attrs, tuple(hash(np.asarray(domains[a]).tobytes()) for a in attrs),
               self.n_queries)
        hit = self._queries.get(key)
        if hit is None:
            seed = zlib.crc32(("|".join(attrs)).encode())
            q = random_range_queries({a: np.asarray(domains[a]) for a in attrs}, self.n_queries,
                                     np.random.default_rng(seed))
            lower = np.stack([encode(q.lower[:, j], domains[a]) for j, a in enumerate(attrs)], 1)
            upper = np.stack([encode(q.upper[:, j], domains[a]) for j, a in enumerate(attrs)], 1)
            hit = (lower, upper)
            if len(self._queries) > KEPT:
                self._queries.clear()
            self._queries[key] = hit
        return hit

    def reference(self, table: np.ndarray, columns: list[str], attrs, domains,
                  queries) -> Evaluation:
        """The evaluation of a reference the widget may draw (the data in teaching mode, the
        stand-in in a preview; ``columns`` are its columns), once per array and attribute
        set."""
        key = (id(table), attrs, self.n_queries)
        hit = self._references.get(key)
        if hit is None or hit[0] is not table:
            if len(self._references) > KEPT:
                self._references.clear()
            idx = [columns.index(a) for a in attrs]
            hit = (table, Evaluation(codes([table[:, i] for i in idx], attrs, domains), attrs,
                                     domains, queries))
            self._references[key] = hit
        return hit[1]

    def synthetic(self, output: dict, attrs, domains, queries, live: bool) -> Evaluation:
        """The evaluation of a DP output, once per output (a replayed release and a kept
        preview are the same dict): redrawing for a view or a cached replay measures nothing
        again. A live output's range counts are scaled to its DP record count."""
        key = (id(output), attrs, self.n_queries)
        hit = self._synthetic.get(key)
        if hit is None or hit[0] is not output:
            if len(self._synthetic) > KEPT:
                self._synthetic.clear()
            rows = int(output["n_rows"])
            coded = codes([output["data"][a] for a in attrs], attrs, domains)
            scale = 1.0
            if live and rows:  # post-processing: the DP count of the release, public
                scale = max(round(float(output["details"]["noisy_n"])), 0) / rows
            hit = (output, Evaluation(coded, attrs, domains, queries, scale))
            self._synthetic[key] = hit
        return hit[1]

    def measure(self, outputs: dict[str, dict], reference: np.ndarray | None,
                columns: list[str], live: set[str], sanity_bound: float) -> Measured:
        """Measure the DP ``outputs`` (by method key; ``live``: those from live runs) against
        ``reference`` (a table with ``columns``, or ``None``), over DPCopula's attributes
        and their released domains."""
        main = outputs["dpcopula"]
        attrs = tuple(main["columns"])
        domains = {a: np.asarray(main["domains"][a]) for a in attrs}
        queries = self.queries(attrs, domains)
        ref = (self.reference(reference, columns, attrs, domains, queries)
               if reference is not None else None)
        evals = {key: self.synthetic(out, attrs, domains, queries, key in live)
                 for key, out in outputs.items()}
        return Measured(attrs, queries, ref, evals, range_errors(evals, ref, sanity_bound))


def range_errors(evals: dict[str, Evaluation], reference: Evaluation | None,
                 sanity_bound: float) -> dict[str, np.ndarray]:
    """The relative error of every range-count query per method key, against the reference's
    answers: ``|answer - truth| / max(truth, s)`` (Li 2017, §3.3.1); none without one."""
    if reference is None:
        return {}
    truth = reference.answers
    return {key: np.abs(ev.answers - truth) / np.maximum(truth, sanity_bound)
            for key, ev in evals.items()}


def quality_values(reference: Evaluation | None, evals: dict[str, Evaluation],
                   errors: dict[str, np.ndarray], attrs, live) -> tuple[dict, bool]:
    """The quality table's numbers per method run (by its :data:`SHORT` name): the mean and
    median relative error, the mean margin TVD and the mean ``|Δτ|`` against the reference;
    and whether a τ was left to the full tables (a baseline's, during a live step: NaN).
    Empty without a reference."""
    values: dict[str, dict[str, float]] = {}
    later = False
    if reference is None:
        return values, later
    iu = np.triu_indices(len(attrs), k=1)
    for key, ev in evals.items():
        tvd = [0.5 * float(np.abs(ev.shares(a) - reference.shares(a)).sum()) for a in attrs]
        # Lazy while the controls move: a baseline's τ is measured with its full table
        # (DPCopula's is drawn, so it is at hand).
        skip = key in live and key != "dpcopula"
        later = later or skip
        values[SHORT[key]] = {
            "mean relative error": float(np.mean(errors[key])),
            "median relative error": float(np.median(errors[key])),
            "mean margin TVD": float(np.mean(tvd)),
            "mean |Δτ|": (math.nan if skip
                          else float(np.mean(np.abs(ev.tau - reference.tau)[iu]))),
        }
    return values, later


def bar_margins(column: Callable[[str], np.ndarray], attrs: Sequence[str],
                domains: dict) -> np.ndarray:
    """Every attribute's margin as the margin panel draws it (shares summed per bar, the bars
    of :func:`~dpwidgets.families.synth.display.display_bins`), concatenated in the order of ``attrs``;
    ``column(a)`` gives attribute ``a``'s values."""
    return np.concatenate([
        binned(shares(encode(column(a), domains[a]), int(domains[a].size)),
               display_bins(domains[a])[0])
        for a in attrs])


def output_margins(output: dict, attrs: Sequence[str], domains: dict) -> np.ndarray:
    """The margins of a DP output's synthetic table, bar by bar, attribute after attribute
    (:func:`bar_margins`): what the accuracy panel plots.

    Why the margins: they are what the first row draws, fixed in number by the public
    domains, and every later use of a synthetic table (its range counts, its τ) builds on
    them. The range-count errors are already a distribution over queries, and τ is on another
    scale than a share (one median half-width over both would mean nothing).
    """
    data = output["data"]
    return bar_margins(lambda a: data[a], attrs, domains)


def table_margins(table: np.ndarray, columns: list[str], attrs: Sequence[str],
                  domains: dict) -> np.ndarray:
    """The margins of a public table (the stand-in; ``columns`` are its columns), bar by bar,
    aligned with :func:`output_margins`."""
    return bar_margins(lambda a: table[:, columns.index(a)], attrs, domains)


def bar_slice(attrs: Sequence[str], domains: dict, attr: str) -> slice | None:
    """Where attribute ``attr``'s bars lie in :func:`bar_margins` over ``attrs`` (``None``: not
    one of them).

    Examples
    --------
    >>> import numpy as np
    >>> bar_slice(["a", "b"], {"a": np.arange(3), "b": np.arange(2)}, "b")
    slice(3, 5, None)
    """
    offset = 0
    for a in attrs:
        size = display_bins(domains[a])[0].size
        if a == attr:
            return slice(offset, offset + size)
        offset += size
    return None


def margin_band(estimate, attrs: Sequence[str], domains: dict, attr: str) -> dict | None:
    """The ``margin_band`` source of attribute ``attr``'s slice of an accuracy estimate's band
    over :func:`output_margins` (``estimate``: an accuracy preview, or ``None``: the empty
    band); ``None`` when ``attr`` is not one of ``attrs``."""
    if estimate is None:
        return margin_band_data()
    cut = bar_slice(attrs, domains, attr)
    if cut is None:
        return None
    return margin_band_data(domains[attr], estimate.now.low[cut], estimate.now.high[cut])
