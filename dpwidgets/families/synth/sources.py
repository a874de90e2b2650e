"""The tables the synthetic-data widget runs on: the public teaching tables it adds to its
session, and an analyst's (or a teacher's own) dataset with its declared domains.

Either way the widget keeps the same public facts of a table (:class:`TableFacts`): its
session name, its columns, the public domain of every column (``None``: read from the data,
not DP) and the presets of the range-query error (the sanity bound) and of the hybrid. None of
them is read from a confidential table: a teaching table is public, an analyst's domains are
its owner's declaration.

Examples
--------
>>> from dpwidgets import Session
>>> from dpwidgets.families.synth.sources import teaching_table
>>> session = Session(mode="teaching", seed=1)
>>> facts = teaching_table(session, "gaussian", 500)
>>> facts.name, facts.columns, facts.domains["x1"].size, facts.sanity
('gaussian_500', ['x1', 'x2', 'x3', 'x4'], 1000, 1.0)
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from ...session import Session
from ...ui.base import PublicSource
from .params import domain_values

__all__ = ["DATASETS", "TableFacts", "TableSource", "declared_table", "teaching_table"]


@dataclass(frozen=True)
class TableSource(PublicSource):
    """A public coded table (:mod:`dpwidgets.families.synth.standins`); see
    :class:`~dpwidgets.ui.base.PublicSource`.

    Attributes
    ----------
    sanity_bound : callable ``n -> s``
        The sanity bound of the relative error (Li 2017, §3.3.1).
    hybrid : bool
        Whether the hybrid (Alg. 6) is on by default.
    """

    sanity_bound: Callable[[int], float]
    hybrid: bool = True


def _us(n, rng):
    from .standins import us_census_like

    return us_census_like(n, rng)


def _brazil(n, rng):
    from .standins import brazil_census_like

    return brazil_census_like(n, rng)


def _gaussian(n, rng):
    from .standins import gaussian_dependence_table

    return gaussian_dependence_table(n, 4, 1000, "gaussian", rng)


def _fair(n, rng):
    from .standins import load_fair_table

    return load_fair_table()


def _datasets() -> dict[str, TableSource]:
    out = {
        "us_census": TableSource(
            "US census-like (Li 2017, Fig. 3.3a): age 96 × income 1020 × occupation 511 × gender 2",
            _us, lambda n: max(1.0, 0.0005 * n)),
        "brazil_census": TableSource(
            "Brazil census-like (Li 2017, Fig. 3.3b): 8 attributes, 3 of them binary", _brazil,
            lambda n: 10.0),
        "gaussian": TableSource(
            "Gaussian dependence (Li 2017, §3.3.4): 4 attributes of domain 1000, correlation 0.5",
            _gaussian, lambda n: 1.0),
    }
    try:
        import statsmodels  # noqa: F401
    except ImportError:  # pragma: no cover - statsmodels comes with the demo and test extras
        return out
    out["fair"] = TableSource(
        "Fair (1978) affairs survey (statsmodels): 6,366 women, 9 ordinal attributes",
        _fair, lambda n: 1.0, hybrid=False, fixed_n=True)
    return out


#: The public tables of the teaching widget (Li 2017, §3.3.1's shapes, and one real survey).
DATASETS: dict[str, TableSource] = _datasets()


@dataclass(frozen=True)
class TableFacts:
    """What the widget knows of a table, all public.

    Attributes
    ----------
    name : str
        The dataset's name in the session; a built-in table's is ``<key>_<n>``, or ``<key>``
        alone for a table of fixed size (``fair``).
    columns : list of str
        Its columns, in the dataset's order.
    domains : dict or None
        Column -> the sorted values of its public domain; ``None``: none declared (read from
        the data, NOT DP: teaching only).
    sanity : float
        The sanity bound ``s`` of the relative error (Li 2017, §3.3.1) unless one is given.
    hybrid : bool
        Whether the hybrid (Li 2017, Alg. 6) starts on.
    """

    name: str
    columns: list[str]
    domains: dict[str, np.ndarray] | None
    sanity: float
    hybrid: bool

    def chosen(self, attributes) -> tuple[str, ...]:
        """``attributes`` (default: every column) in the table's column order.

        Raises
        ------
        ValueError
            One of ``attributes`` is not a column.
        """
        chosen = list(attributes or self.columns)
        unknown = [a for a in chosen if a not in self.columns]
        if unknown:
            raise ValueError(f"attributes {unknown} are not columns of {self.name!r}: "
                             f"{self.columns}")
        return tuple(c for c in self.columns if c in chosen)


def teaching_table(session: Session, key: str, n: int) -> TableFacts:
    """The public teaching table ``key`` of :data:`DATASETS` with ``n`` records, added to
    ``session`` (with a stand-in of the same schema) unless another widget added it already.

    The table is seeded by its session name, so every widget of a session (and every session)
    draws the same one; its domains are the generator's, which depend on the table's kind
    only.

    Parameters
    ----------
    session : Session
        A teaching session.
    key : str
        A key of :data:`DATASETS`.
    n : int
        Records to generate (ignored by a real table, ``fixed_n``).
    """
    src = DATASETS[key]
    name = key if src.fixed_n else f"{key}_{n}"
    if name not in session.datasets:
        from .standins import synth_stand_in

        table = src.make(n, np.random.default_rng(zlib.crc32(name.encode())))
        frame = table.frame
        stand_in = synth_stand_in(len(frame), table.domains, dtypes=dict(frame.dtypes))
        session.add_dataset(name, frame, total_epsilon=10.0, stand_in=stand_in,
                            description=src.title)
        domains = dict(table.domains)
    else:
        # Added by another widget of this session: the same generator, same public domains.
        domains = dict(src.make(64, np.random.default_rng(0)).domains)
    columns = session.columns(name)
    return TableFacts(name, list(columns), {c: domain_values(domains[c]) for c in columns},
                      src.sanity_bound(session.size(name)), src.hybrid)


def declared_table(session: Session, dataset: str, domains: Mapping[str, object] | None, *,
                   sanity_bound: float | None, hybrid: bool | None) -> TableFacts:
    """A dataset added to ``session`` as a DataFrame, with the public domain of every column:
    ``domains`` as given, else as its owner declared them; an analyst's widget refuses a
    table without them (reading them off the confidential data would not be DP).

    Raises
    ------
    ValueError
        The dataset has no named columns, an analyst gave no domains, or a column has none.
    """
    columns = session.columns(dataset)
    if columns is None:
        raise ValueError(f"dataset {dataset!r} was not added as a DataFrame: the "
                         f"synthetic-data widget needs named attributes")
    if domains is None:
        domains = session.domains(dataset)  # declared by the owner, if at all
    if domains is None and not session.teaching:
        raise ValueError(
            "an analyst widget needs domains= : the public domain of every attribute "
            "((min, max), a number of values or a list). Reading them off the "
            "confidential data would not be differentially private.")
    declared = None
    if domains is not None:
        missing = [c for c in columns if c not in domains]
        if missing:
            raise ValueError(f"domains must declare every column; missing {missing}")
        declared = {c: domain_values(domains[c]) for c in columns}
    return TableFacts(dataset, list(columns), declared, sanity_bound or 1.0,
                      True if hybrid is None else hybrid)
