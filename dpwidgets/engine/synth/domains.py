"""The table a release reads: domains, validation and integer coding (no randomness).

Every release of the package first turns its DataFrame into a :class:`_Table` (integer codes
into public domain values) with :func:`_prepare`, which refuses bad input before any random
draw; :func:`resolve_domains` shows the domains as a release reads them. Also here: the
privacy statement of a release (``_guarantee``, the :class:`DomainFromDataWarning` when the
domains come from the data), the margin publisher's check (:data:`DEFAULT_PUBLISHER`) and the
exact split of a budget into parts (``_exact_parts``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Integral
from typing import Any

import numpy as np
import pandas as pd

from .._results import eps_text
from ..histograms import PUBLISHERS
from ..validation import (
    check_positive_int,
)

__all__ = ["MAX_ROWS", "DEFAULT_PUBLISHER", "DomainFromDataWarning", "resolve_domains"]

#: The most synthetic rows one call generates (``n_rows``).
MAX_ROWS = 10**7

#: Largest domain (number of values) accepted for one attribute: its histogram must fit.
MAX_DOMAIN_SIZE = 2**22


class DomainFromDataWarning(UserWarning):
    """The attribute domains were read from the data: the release is not differentially
    private as such (declare ``domains`` to make it so)."""


@dataclass(frozen=True, eq=False)
class _Table:
    """A validated, integer-coded table: ``codes[:, j]`` indexes ``values[j]``."""

    columns: tuple[str, ...]
    dtypes: tuple[Any, ...]
    values: tuple[np.ndarray, ...]
    codes: np.ndarray
    from_data: bool

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(int(v.size) for v in self.values)

    @property
    def m(self) -> int:
        return len(self.columns)

    def domains(self) -> dict[str, np.ndarray]:
        return dict(zip(self.columns, self.values, strict=True))

    def frame(self, codes: np.ndarray) -> pd.DataFrame:
        """A DataFrame of the coded rows ``codes`` with the table's columns and dtypes."""
        dtype = self.dtypes[0] if self.dtypes else None
        if codes.size and isinstance(dtype, np.dtype) and all(d == dtype for d in self.dtypes):
            # One numpy dtype (the common case): decode into one column-major block, which
            # the DataFrame takes without the per-column copies and the consolidation.
            block = np.empty((codes.shape[0], self.m), dtype=dtype, order="F")
            for j, vals in enumerate(self.values):
                block[:, j] = vals[codes[:, j]]
            return pd.DataFrame(block, columns=list(self.columns), copy=False)
        data = {
            col: pd.Series(vals[codes[:, j]] if codes.size else vals[:0]).astype(dtype)
            for j, (col, vals, dtype) in enumerate(
                zip(self.columns, self.values, self.dtypes, strict=True)
            )
        }
        return pd.DataFrame(data, columns=list(self.columns))


def _is_allowed_dtype(dtype) -> bool:
    return pd.api.types.is_bool_dtype(dtype) or (
        pd.api.types.is_numeric_dtype(dtype) and not isinstance(dtype, pd.CategoricalDtype)
    )


def _domain_values(spec, name: str) -> np.ndarray:
    """The sorted domain values of a declared domain ``spec`` (validated)."""
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise ValueError(
                f"domains[{name!r}] as a tuple must be (min, max) (inclusive integer range), "
                f"got {spec!r}; give a list for explicit values"
            )
        lo, hi = spec
        if not all(isinstance(b, Integral | np.integer) and not isinstance(b, bool) for b in spec):
            raise ValueError(f"domains[{name!r}] = (min, max) needs integers, got {spec!r}")
        lo, hi = int(lo), int(hi)
        if hi - lo + 1 > MAX_DOMAIN_SIZE:
            raise ValueError(
                f"domains[{name!r}] has {hi - lo + 1} values, more than {MAX_DOMAIN_SIZE}; bin it"
            )
        values = np.arange(lo, hi + 1, dtype=np.int64)
    elif isinstance(spec, Integral | np.integer) and not isinstance(spec, bool):
        if spec > MAX_DOMAIN_SIZE:
            raise ValueError(f"domains[{name!r}] = {spec} is more than {MAX_DOMAIN_SIZE} values")
        values = np.arange(int(spec), dtype=np.int64)
    else:
        try:
            values = np.asarray(list(spec) if not isinstance(spec, np.ndarray) else spec)
        except TypeError:
            raise ValueError(
                f"domains[{name!r}] must be (min, max), a number of values A (0..A-1) or a "
                f"list of values, got {spec!r}"
            ) from None
        if values.ndim != 1 or not (np.issubdtype(values.dtype, np.number) or values.dtype == bool):
            raise ValueError(f"domains[{name!r}] must be a 1-D list of numbers, got {spec!r}")
        if values.size > MAX_DOMAIN_SIZE:
            raise ValueError(f"domains[{name!r}] has more than {MAX_DOMAIN_SIZE} values")
        if values.dtype != bool and not np.all(np.isfinite(values)):
            raise ValueError(f"domains[{name!r}] must be finite numbers")
        values = np.unique(values)
        if values.size != len(spec):
            raise ValueError(f"domains[{name!r}] must list distinct values, got {spec!r}")
    if values.size < 2:
        raise ValueError(
            f"domains[{name!r}] must have at least 2 values, got {values.size} (a constant "
            f"attribute carries no information; drop it)"
        )
    return values


def _check_frame(frame) -> None:
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"frame must be a pandas DataFrame, got {type(frame).__name__}")
    if frame.shape[1] < 2:
        raise ValueError(f"frame must have at least 2 columns, got {frame.shape[1]}")
    if not frame.columns.is_unique:
        raise ValueError("frame must have distinct column names")
    bad = [str(c) for c in frame.columns if not _is_allowed_dtype(frame[c].dtype)]
    if bad:
        raise ValueError(
            f"frame columns must be numeric (integer codes or pre-binned numbers); not numeric: "
            f"{bad}. Code them first (e.g. frame[col].astype('category').cat.codes) and declare "
            f"the coding's domain"
        )


def _prepare(frame, domains) -> _Table:
    """Validate ``frame`` against ``domains`` and integer-code it (no randomness)."""
    _check_frame(frame)
    columns = tuple(frame.columns)
    if domains is not None:
        if not isinstance(domains, Mapping):
            raise ValueError(f"domains must be a mapping column -> domain or None, got {domains!r}")
        missing = [str(c) for c in columns if c not in domains]
        extra = [str(c) for c in domains if c not in frame.columns]
        if missing or extra:
            raise ValueError(
                f"domains must declare exactly the frame's columns; missing {missing}, "
                f"unknown {extra}"
            )
    codes = np.empty((len(frame), len(columns)), dtype=np.int64)
    values_all = []
    for j, col in enumerate(columns):
        series = frame[col]
        # A numpy integer or bool column holds no missing and no non-finite value.
        plain_int = isinstance(series.dtype, np.dtype) and series.dtype.kind in "biu"
        if not plain_int and series.isna().any():
            raise ValueError(f"frame[{col!r}] has missing values")
        raw = series.to_numpy()
        if raw.dtype == object:  # a nullable extension dtype without NA
            raw = raw.astype(float)
        if raw.dtype.kind not in "biu" and not np.all(np.isfinite(raw)):
            raise ValueError(f"frame[{col!r}] has non-finite values")
        if domains is None:
            if raw.size == 0:
                raise ValueError("an empty frame needs declared domains")
            if raw.dtype == bool:
                values = np.array([False, True])
            elif np.all(raw == np.round(raw)):
                values = np.arange(int(raw.min()), int(raw.max()) + 1, dtype=np.int64)
            else:
                values = np.unique(raw)
            if values.size > MAX_DOMAIN_SIZE:
                raise ValueError(f"frame[{col!r}] spans more than {MAX_DOMAIN_SIZE} values; bin it")
            if values.size < 2:
                raise ValueError(
                    f"frame[{col!r}] takes a single value: a domain must have at least 2 values "
                    f"(declare it with domains=)"
                )
        else:
            values = _domain_values(domains[col], str(col))
            _check_domain_fits_dtype(values, series.dtype, str(col))
        contiguous = values.dtype.kind in "iu" and int(values[-1] - values[0]) + 1 == values.size
        offset = contiguous and raw.dtype.kind in "iu" and raw.size > 0
        if offset:
            # Integers on an integer range (the common case): the range is the whole check
            # and the code is the offset, written in place.
            lo = int(values[0])
            ok = lo <= int(raw.min()) and int(raw.max()) <= int(values[-1])
            if ok:
                np.subtract(raw, lo, out=codes[:, j], dtype=np.int64, casting="unsafe")
        elif contiguous and raw.dtype != bool:
            lo = int(values[0])
            ok = (raw >= lo) & (raw <= int(values[-1]))
            if raw.dtype.kind == "f":
                ok &= raw == np.floor(raw)
            idx = np.where(ok, raw - lo, 0).astype(np.int64)
        else:
            idx = np.searchsorted(values, raw)
            inside = idx < values.size
            ok = inside.copy()
            ok[inside] = values[idx[inside]] == raw[inside]
        if not np.all(ok):
            # No example value in the message: it may be shown to someone who may not see data.
            raise ValueError(
                f"frame[{col!r}] has values outside its declared domain "
                f"({values[0]!r}..{values[-1]!r}, {values.size} values); clip or recode them first"
            )
        if not offset:
            codes[:, j] = idx
        values_all.append(values)
    return _Table(
        columns=columns,
        dtypes=tuple(frame[c].dtype for c in columns),
        values=tuple(values_all),
        codes=codes,
        from_data=domains is None,
    )


def _check_domain_fits_dtype(values: np.ndarray, dtype, name: str) -> None:
    """Synthetic values are cast back to the column's dtype: every domain value must survive."""
    try:
        cast = pd.Series(values).astype(dtype).to_numpy()
        same = np.array_equal(np.asarray(cast, dtype=float), values.astype(float))
    except (TypeError, ValueError, OverflowError):
        same = False
    if not same:
        raise ValueError(
            f"domains[{name!r}] has values that the column's dtype {dtype} cannot hold "
            f"(e.g. non-integers for an integer column); change the dtype or the domain"
        )


def resolve_domains(frame, domains=None) -> dict[str, np.ndarray]:
    """The domain values of every column of ``frame``, as :func:`dpcopula` reads them.

    Parameters
    ----------
    frame : pandas.DataFrame
        Numeric (integer-coded or pre-binned) columns.
    domains : mapping or None
        Column -> ``(min, max)`` (inclusive integer range), an int ``A`` (values
        ``0..A-1``) or a list of values. ``None``: read from the data (integers: ``min..max``;
        other numbers: the distinct values) -- **not private**.

    Returns
    -------
    dict of str to numpy.ndarray
        Sorted domain values per column.

    Raises
    ------
    ValueError
        As :func:`dpcopula` for the frame and the domains.

    Examples
    --------
    >>> import pandas as pd
    >>> frame = pd.DataFrame({"a": [0, 2, 1], "b": [1, 1, 0]})
    >>> resolve_domains(frame, {"a": [3, 0, 1, 2], "b": range(2)})
    {'a': array([0, 1, 2, 3]), 'b': array([0, 1])}
    """
    table = _prepare(frame, domains)
    return table.domains()


def _warn_from_data(table: _Table) -> None:
    if table.from_data:
        warnings.warn(
            "domains=None: the attribute domains were read from the data (min..max or the "
            "distinct values), which is not differentially private. Declare domains= (public "
            "knowledge) for a DP release.",
            DomainFromDataWarning,
            stacklevel=3,
        )


def _guarantee(epsilon: float, table: _Table, what: str = "") -> str:
    base = (
        f"{eps_text(epsilon)}-DP{what} for add/remove-one-record neighbours (Li 2017 Def. 3.1.1); "
        f"{eps_text(2 * epsilon)}-DP under replace-one"
    )
    if table.from_data:
        return (
            base + ". NOT DP as released: the attribute domains were read from the data "
            "(domains=None); declare them to get the guarantee"
        )
    return base + "; attribute domains declared public"


#: DPCopula's default margin publisher (the text's is ``"efpa"``; see the module docstring,
#: departure 6).
DEFAULT_PUBLISHER = "dawa"


def _check_publisher(publisher: str, options) -> dict:
    if not isinstance(publisher, str) or publisher not in PUBLISHERS:
        raise ValueError(f"publisher must be one of {sorted(PUBLISHERS)}, got {publisher!r}")
    if 1 not in PUBLISHERS[publisher].dims:
        raise ValueError(f"publisher must release 1-D histograms; {publisher!r} is 2-D only")
    if options is None:
        return {}
    if not isinstance(options, Mapping):
        raise ValueError(f"publisher_options must be a mapping or None, got {options!r}")
    return dict(options)


def _check_n_rows(n_rows) -> int | None:
    if n_rows is None:
        return None
    return check_positive_int(n_rows, "n_rows", minimum=0, maximum=MAX_ROWS)


def _exact_parts(epsilon: float, parts: dict[str, float]) -> dict[str, float]:
    """Adjust the largest part by ulps so that ``math.fsum(parts) == epsilon`` exactly."""
    last = max(parts, key=parts.__getitem__)
    parts[last] = epsilon - math.fsum(v for k, v in parts.items() if k != last)
    for _ in range(64):
        total = math.fsum(parts.values())
        if total == epsilon:
            break
        parts[last] = float(np.nextafter(parts[last], np.inf if total < epsilon else -np.inf))
    return parts
