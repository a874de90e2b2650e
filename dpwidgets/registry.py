"""The datasets a local door holds, by name, and the public declarations of the tables they view.

A :class:`Registry` is the door's catalogue: it turns what a data owner hands over into
:class:`~dpwidgets.catalog.Entry` objects (:meth:`~Registry.dataset_entry` for an array or a
DataFrame, :meth:`~Registry.table_entries` for a table's views), refuses a name already taken,
finds an entry by name (``None``: the first one added), and keeps each table's declarations so
that copied code can declare the table again (:meth:`~Registry.declaration`). It opens no
budget: a :class:`~dpwidgets.session.Session` holds an entry once its ledger is open
(:meth:`dpwidgets.session.Session.hold`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from . import catalog
from .catalog import Entry
from .declarations import declaration_call
from .door import Description
from .engine.validation import check_epsilon

__all__ = ["Registry"]


def _check_total(total_epsilon) -> None:
    """A budget cap (``None``: the ledger's recorded one), checked before anything is read."""
    if total_epsilon is not None:
        try:
            check_epsilon(total_epsilon, "total_epsilon")
        except TypeError as exc:
            raise ValueError(str(exc)) from None


class Registry:
    """The datasets a door holds, in the order they were added, and its tables' declarations.

    ``entries`` maps a dataset's name to its :class:`~dpwidgets.catalog.Entry`; ``tables`` maps
    a table's name to the arguments of the ``add_table`` call that declared it (its public
    declarations only). Every check here is made before any budget is opened.

    Examples
    --------
    >>> import numpy as np
    >>> from dpwidgets.registry import Registry
    >>> registry = Registry()
    >>> registry.add(registry.dataset_entry("scores", np.arange(6.0), total_epsilon=1.0))
    >>> "scores" in registry, registry.describe("scores").shape
    (True, (6,))
    >>> try:
    ...     registry.get("other")
    ... except ValueError as exc:
    ...     print(exc)
    unknown dataset 'other'; this session has ['scores']
    """

    def __init__(self):
        self.entries: dict[str, Entry] = {}
        self.tables: dict[str, dict] = {}

    @property
    def names(self) -> list[str]:
        """The names of the datasets, in the order they were added."""
        return list(self.entries)

    def __contains__(self, name) -> bool:
        return name in self.entries

    def get(self, name: str | None) -> Entry:
        """The entry of a dataset by name (``None``: the first one added)."""
        if name is None:
            if not self.entries:
                raise ValueError("this session has no dataset; call add_dataset() first")
            name = next(iter(self.entries))
        try:
            return self.entries[name]
        except (KeyError, TypeError):
            raise ValueError(f"unknown dataset {name!r}; this session has {self.names}") from None

    def refuse_taken(self, name: str) -> None:
        """Refuse a name this door already holds."""
        if name in self.entries:
            raise ValueError(f"dataset {name!r} is already in this session")

    def add(self, held: Entry) -> None:
        """Hold an entry under its name (its budget is the caller's to open first)."""
        self.entries[held.name] = held

    def dataset_entry(self, name: str, data, *, total_epsilon: float | None, stand_in=None,
                      description: str = "", privacy_unit: str = "row",
                      facts: Mapping[str, Any] | None = None,
                      allow_mechanisms: Iterable[str] = ()) -> Entry:
        """The entry of an array or DataFrame its owner hands over, checked as
        :meth:`dpwidgets.session.Session.add_dataset` documents (the name first, then the
        cap, then the data and its declarations: :func:`~dpwidgets.catalog.entry`)."""
        self.refuse_taken(name)
        _check_total(total_epsilon)
        return catalog.entry(name, data, stand_in, description, privacy_unit, facts,
                             allow_mechanisms)

    def table_entries(self, name: str, source, *, columns, unit_column: str | None,
                      max_rows: int, table: str | None, total_epsilon: float,
                      description: str, allow_mechanisms: Iterable[str], teaching: bool,
                      views: dict) -> tuple[list[Entry], dict]:
        """The entries of a table's views and the declarations to keep once they are held,
        checked as :meth:`dpwidgets.session.Session.add_table` documents: every argument
        before the source is read, then the schema, then names already taken."""
        from .tables import Table, declared_views, view_entries

        catalog.check_allowed(allow_mechanisms)
        declared = {"source": source, "columns": columns, "unit_column": unit_column,
                    "max_rows": max_rows, "table": table, "total_epsilon": total_epsilon,
                    "description": description, "allow_mechanisms": list(allow_mechanisms),
                    **views}
        _check_total(total_epsilon)
        catalog.check_description(description)
        src = Table(source, columns, unit=unit_column, max_rows=max_rows, table=table,
                    distinct=views.pop("distinct", False))
        src.check_schema()
        entries = view_entries(name, src, declared_views(**views), load=teaching,
                               description=description, allowed=allow_mechanisms,
                               fingerprint=src.fingerprint())
        clash = [h.name for h in entries if h.name in self.entries]
        if clash:
            raise ValueError(f"datasets {clash} are already in this session")
        return entries, declared

    def declare(self, table: str, declared: dict) -> None:
        """Keep a table's declarations (once its views are held)."""
        self.tables[table] = declared

    def declaration(self, dataset: str | None = None) -> str | None:
        """The ``add_table(...)`` call that declared a view's table, as Python source, or
        ``None`` for a dataset that is no table's view
        (:func:`~dpwidgets.declarations.declaration_call`)."""
        held = self.get(dataset)
        declared = self.tables.get(held.budget) if held.budget else None
        return None if declared is None else declaration_call(held.budget, declared)

    def describe(self, dataset: str | None = None) -> Description:
        """The owner's public declarations about a dataset (never a number read from it)."""
        return Description.of(self.get(dataset))
