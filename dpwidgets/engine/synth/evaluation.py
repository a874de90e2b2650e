"""How close a synthetic table is to the real one (evaluation only: it reads the real data).

Random range-count queries over all attributes (:func:`random_range_queries`, Li 2017
§3.3.1) and their relative error with a sanity bound (:func:`range_count_error`); the total
variation distance of every margin (:func:`marginal_comparison`); Kendall and Pearson
matrices of both tables (:func:`dependence_comparison`). Their outputs are not DP.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._results import readonly as _readonly
from ..validation import (
    check_positive,
    check_positive_int,
    check_rng,
)
from .dependence import _pair_indices
from .domains import _domain_values

__all__ = ["MAX_QUERIES", "RangeQueries", "RangeCountError", "DependenceComparison",
           "random_range_queries", "range_count_error", "marginal_comparison",
           "dependence_comparison"]

#: The most random range queries of :func:`random_range_queries`.
MAX_QUERIES = 10**7


@dataclass(frozen=True, eq=False)
class RangeQueries:
    """Random range-count queries ``COUNT(*) WHERE lower_j <= A_j <= upper_j for all j``.

    Attributes
    ----------
    columns : tuple of str
    lower, upper : numpy.ndarray, shape (n_queries, m)
        Inclusive bounds, in domain values.
    """

    columns: tuple[str, ...]
    lower: np.ndarray
    upper: np.ndarray

    def __post_init__(self) -> None:
        object.__setattr__(self, "lower", _readonly(self.lower))
        object.__setattr__(self, "upper", _readonly(self.upper))

    def __len__(self) -> int:
        return int(self.lower.shape[0])

    def answer(self, frame: pd.DataFrame, *, chunk_cells: int = 2**24) -> np.ndarray:
        """The count of every query on ``frame`` (vectorised over queries in chunks)."""
        missing = [c for c in self.columns if c not in frame.columns]
        if missing:
            raise ValueError(f"frame lacks the queried columns {missing}")
        data = [frame[c].to_numpy(dtype=float) for c in self.columns]
        n = len(frame)
        out = np.zeros(len(self), dtype=np.int64)
        if n == 0:
            return out
        step = max(1, chunk_cells // n)
        for start in range(0, len(self), step):
            stop = min(start + step, len(self))
            mask = np.ones((stop - start, n), dtype=bool)
            for j, col in enumerate(data):
                mask &= col[None, :] >= self.lower[start:stop, j, None]
                mask &= col[None, :] <= self.upper[start:stop, j, None]
            out[start:stop] = mask.sum(axis=1)
        return out


def random_range_queries(
    domains: Mapping[str, Any],
    n_queries: int,
    rng: np.random.Generator | None = None,
    *,
    width: float | None = None,
) -> RangeQueries:
    """Random hyper-rectangles over all attributes (Li 2017 §3.3.1, "Metrics").

    For every query and attribute an interval of the domain is drawn: with ``width=None``
    its two end points are independent uniform domain positions (sorted); with a
    ``width`` in (0, 1] it covers ``max(1, round(width |A_j|))`` consecutive domain values
    at a uniform position (Li 2017 Fig. 3.7 fixes the range size this way).

    Parameters
    ----------
    domains : mapping
        Column -> domain (any form :func:`dpcopula` accepts, or the ``domains`` of a
        :class:`SynthResult`). Public: drawing queries spends no budget.
    n_queries : int
    rng : numpy.random.Generator, optional
    width : float, optional

    Returns
    -------
    RangeQueries

    Examples
    --------
    >>> import numpy as np
    >>> queries = random_range_queries({"a": range(5), "b": range(5)}, 20, np.random.default_rng(0))
    >>> type(queries).__name__
    'RangeQueries'
    """
    if not isinstance(domains, Mapping) or len(domains) == 0:
        raise ValueError("domains must be a non-empty mapping column -> domain")
    n_queries = check_positive_int(n_queries, "n_queries", maximum=MAX_QUERIES)
    if width is not None and not (isinstance(width, Real) and 0 < width <= 1):
        raise ValueError(f"width must be in (0, 1] or None, got {width!r}")
    values = {
        c: (np.asarray(v) if isinstance(v, np.ndarray) else _domain_values(v, str(c)))
        for c, v in domains.items()
    }
    rng = check_rng(rng)
    columns = tuple(values)
    lower = np.empty((n_queries, len(columns)))
    upper = np.empty((n_queries, len(columns)))
    for j, c in enumerate(columns):
        vals = values[c]
        size = vals.size
        if width is None:
            ends = np.sort(rng.integers(0, size, size=(n_queries, 2)), axis=1)
            lo, hi = ends[:, 0], ends[:, 1]
        else:
            span = max(1, int(round(width * size)))
            lo = rng.integers(0, size - span + 1, size=n_queries)
            hi = lo + span - 1
        lower[:, j] = vals[lo]
        upper[:, j] = vals[hi]
    return RangeQueries(columns=columns, lower=lower, upper=upper)


@dataclass(frozen=True, eq=False)
class RangeCountError:
    """Errors of range-count queries answered on synthetic data (Li 2017 §3.3.1).

    Attributes
    ----------
    true_answers, synthetic_answers : numpy.ndarray of int
        (``synthetic_answers`` is real-valued with ``rescale_to``.)
    relative : numpy.ndarray
        ``|A_syn - A_act| / max(A_act, s)`` per query.
    absolute : numpy.ndarray
        ``|A_syn - A_act|`` per query.
    sanity_bound : float
        ``s``.
    """

    true_answers: np.ndarray
    synthetic_answers: np.ndarray
    relative: np.ndarray
    absolute: np.ndarray
    sanity_bound: float

    @property
    def mean_relative(self) -> float:
        """The text's reported figure: the average relative error over the queries."""
        return float(np.mean(self.relative))

    @property
    def median_relative(self) -> float:
        return float(np.median(self.relative))

    @property
    def mean_absolute(self) -> float:
        return float(np.mean(self.absolute))


def range_count_error(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    queries: RangeQueries,
    sanity_bound: float = 1.0,
    *,
    rescale_to: float | None = None,
) -> RangeCountError:
    """Relative error of range-count queries: ``|A_noisy(q) - A_act(q)| / max(A_act(q), s)``.

    Li 2017 §3.3.1: the sanity bound ``s`` mitigates queries with tiny true answers; the text
    uses ``s = 1`` by default, ``0.05%`` of the cardinality for the US census and 10 for the
    Brazil census. By default the synthetic answers are raw counts (the text's figure).
    Evaluation only: it reads the real data, so its output is not DP.

    Parameters
    ----------
    real, synthetic : pandas.DataFrame
    queries : RangeQueries
    sanity_bound : float
        ``s`` (> 0).
    rescale_to : float, optional
        Answer from the synthetic table's frequencies scaled to this size:
        ``A_syn(q) * rescale_to / len(synthetic)`` (real-valued). Pass the DP record count
        (``result.details["noisy_n"]``) and a synthetic table drawn larger than it (a public
        ``n_rows``): the answers approach the model's expected counts, and the sampling
        noise of a table of DP size is gone. Post-processing of DP outputs; never worse in
        expectation for a convex error such as this one (Jensen: it replaces a draw of the
        model's count by, up to the oversampled table's own noise, its mean).

    Returns
    -------
    RangeCountError

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from dpwidgets.engine.synth import random_range_queries, range_count_error
    >>> rng = np.random.default_rng(0)
    >>> real = pd.DataFrame({"a": rng.integers(0, 5, 500), "b": rng.integers(0, 5, 500)})
    >>> queries = random_range_queries({"a": range(5), "b": range(5)}, 20, rng)
    >>> err = range_count_error(real, real, queries)  # a perfect copy: no error
    >>> err.relative.shape, float(err.relative.max())
    ((20,), 0.0)
    """
    if not isinstance(queries, RangeQueries):
        raise ValueError("queries must come from random_range_queries")
    _check_finite_frame(real, "real")
    _check_finite_frame(synthetic, "synthetic")
    s = check_positive(sanity_bound, "sanity_bound")
    if rescale_to is not None:
        rescale_to = check_positive(rescale_to, "rescale_to")
        if len(synthetic) == 0:
            raise ValueError("rescale_to needs a non-empty synthetic table")
    true = queries.answer(real)
    syn = queries.answer(synthetic)
    if rescale_to is not None:
        syn = syn * (rescale_to / len(synthetic))
    absolute = np.abs(syn - true).astype(float)
    return RangeCountError(
        true_answers=_readonly(true, np.int64),
        synthetic_answers=_readonly(syn, np.int64 if rescale_to is None else float),
        relative=_readonly(absolute / np.maximum(true, s)),
        absolute=_readonly(absolute),
        sanity_bound=s,
    )


def marginal_comparison(real: pd.DataFrame, synthetic: pd.DataFrame) -> pd.Series:
    """Total variation distance between the real and synthetic margin of every column,
    ``TVD = 0.5 sum_v |p_real(v) - p_syn(v)|`` in [0, 1] (evaluation only, not DP).

    Examples
    --------
    >>> import pandas as pd
    >>> real = pd.DataFrame({"a": [0, 0, 1, 1]})
    >>> float(marginal_comparison(real, pd.DataFrame({"a": [0, 1, 1, 1]}))["a"])
    0.25
    """
    _check_same_columns(real, synthetic)
    out = {}
    for c in real.columns:
        p = real[c].value_counts(normalize=True)
        q = synthetic[c].value_counts(normalize=True)
        p, q = p.align(q, fill_value=0.0)
        out[c] = 0.5 * float(np.abs(p - q).sum())
    return pd.Series(out, name="tvd", dtype=float)


def _check_finite_frame(frame, name: str) -> None:
    """Refuse a DataFrame with NaN or infinite cells (non-numeric columns: missing cells)."""
    if not isinstance(frame, pd.DataFrame):
        raise ValueError(f"{name} must be a pandas DataFrame")
    if frame.isna().to_numpy().any():
        raise ValueError(f"{name} must not hold missing (NaN) cells")
    try:
        values = frame.to_numpy(dtype=float)
    except (TypeError, ValueError):
        return  # non-numeric columns: compared by their codes
    if not np.all(np.isfinite(values)):
        raise ValueError(f"{name} must hold finite values: found infinite cells")


def _check_same_columns(real, synthetic) -> None:
    for name, f in (("real", real), ("synthetic", synthetic)):
        _check_finite_frame(f, name)
    if list(real.columns) != list(synthetic.columns):
        raise ValueError(
            f"real and synthetic must have the same columns, got {list(real.columns)} and "
            f"{list(synthetic.columns)}"
        )


@dataclass(frozen=True, eq=False)
class DependenceComparison:
    """Pairwise dependence of the real and the synthetic table (evaluation only, not DP).

    Attributes
    ----------
    real_kendall, synthetic_kendall, kendall_difference : pandas.DataFrame
        Kendall's tau-b matrices and ``synthetic - real``.
    real_pearson, synthetic_pearson, pearson_difference : pandas.DataFrame
        Pearson correlation matrices and ``synthetic - real``.
    """

    real_kendall: pd.DataFrame
    synthetic_kendall: pd.DataFrame
    real_pearson: pd.DataFrame
    synthetic_pearson: pd.DataFrame

    @property
    def kendall_difference(self) -> pd.DataFrame:
        return self.synthetic_kendall - self.real_kendall

    @property
    def pearson_difference(self) -> pd.DataFrame:
        return self.synthetic_pearson - self.real_pearson

    @property
    def max_abs_kendall_difference(self) -> float:
        """Largest ``|tau_syn - tau_real|`` over the pairs."""
        return float(np.nanmax(np.abs(self.kendall_difference.to_numpy())))

    @property
    def mean_abs_kendall_difference(self) -> float:
        """Mean ``|tau_syn - tau_real|`` over the pairs j < k."""
        d = np.abs(self.kendall_difference.to_numpy())
        return float(np.nanmean(d[np.triu_indices(d.shape[0], 1)]))


def _kendall_matrix(frame: pd.DataFrame) -> pd.DataFrame:
    x = frame.to_numpy(dtype=float)
    m = x.shape[1]
    out = np.eye(m)
    rows, cols = _pair_indices(m)
    for j, k in zip(rows.tolist(), cols.tolist(), strict=True):
        out[j, k] = out[k, j] = stats.kendalltau(x[:, j], x[:, k]).statistic
    return pd.DataFrame(out, index=frame.columns, columns=frame.columns)


def dependence_comparison(
    real: pd.DataFrame,
    synthetic: pd.DataFrame,
    *,
    max_rows: int | None = 20_000,
    rng: np.random.Generator | None = None,
) -> DependenceComparison:
    """Kendall's tau-b and Pearson matrices of ``real`` and ``synthetic`` and their difference.

    Tables longer than ``max_rows`` are subsampled (uniformly, with ``rng``) before the
    O(n log n) Kendall computation; ``None`` uses every row.

    Examples
    --------
    >>> import pandas as pd
    >>> real = pd.DataFrame({"a": [0, 1, 2, 3, 4], "b": [0, 1, 2, 3, 4]})
    >>> synthetic = pd.DataFrame({"a": [0, 1, 2, 3, 4], "b": [4, 3, 2, 1, 0]})
    >>> out = dependence_comparison(real, synthetic)
    >>> round(out.max_abs_kendall_difference, 6)
    2.0
    """
    _check_same_columns(real, synthetic)
    if max_rows is not None:
        max_rows = check_positive_int(max_rows, "max_rows", minimum=2)
    rng = check_rng(rng)

    def cut(f: pd.DataFrame) -> pd.DataFrame:
        if max_rows is None or len(f) <= max_rows:
            return f
        return f.iloc[np.sort(rng.choice(len(f), size=max_rows, replace=False))]

    r, s = cut(real), cut(synthetic)
    return DependenceComparison(
        real_kendall=_kendall_matrix(r),
        synthetic_kendall=_kendall_matrix(s),
        real_pearson=r.astype(float).corr(),
        synthetic_pearson=s.astype(float).corr(),
    )
