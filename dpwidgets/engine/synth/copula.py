"""DPCopula itself: :func:`dpcopula` (Li 2017 Alg. 1-6) and its hybrid (Alg. 6).

``_copula_release`` runs DPCopula on coded rows (margins, dependence, sampling); the hybrid
helpers decide which small attributes partition the table (``_hybrid_attributes``,
``_supported_partition``, :data:`HYBRID_MIN_SUPPORT`). The privacy argument and every
departure from the text are in :func:`dpcopula`'s Notes and the package docstring.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from ..._progress import report
from .._results import readonly as _readonly
from ..histograms import publish
from ..validation import (
    check_epsilon,
    check_nonnegative,
    check_positive,
    check_positive_int,
    check_rng,
)
from .dependence import (
    KENDALL_MIN_ROWS,
    SAMPLE_RULES,
    ConcordanceMemo,
    _correlation_from_tau,
    _dp_kendall,
    _dp_mle,
    kendall_sample_size,
    repair_correlation,
)
from .domains import (
    DEFAULT_PUBLISHER,
    _check_n_rows,
    _check_publisher,
    _exact_parts,
    _guarantee,
    _prepare,
    _Table,
    _warn_from_data,
)
from .margins import _check_fit, _distribution, _dp_margins, _sample_copula
from .result import SynthResult
from .ties import _calibrate_tied_pairs, _tie_corrected_tau, _tie_correction_mask

__all__ = ["MAX_PARTITIONS", "METHODS", "HYBRID_MIN_SUPPORT", "dpcopula"]

#: The most partitions of the hybrid / MLE methods (``max_partitions``, ``mle_partitions``).
MAX_PARTITIONS = 4096

#: The dependence estimators of :func:`dpcopula`.
METHODS: Mapping[str, str] = MappingProxyType(
    {
        "kendall": "DPCopula-Kendall: noisy pairwise Kendall's tau, P = sin(pi tau / 2) "
        "(Li 2017 Alg. 4-5)",
        "mle": "DPCopula-MLE: noisy average of per-block Gaussian-copula estimates over l "
        "disjoint blocks (Li 2017 Alg. 1-2)",
    }
)

#: The hybrid partitions by the small attributes only while ``epsilon * n~ / (P * m_c)``
#: (the DP size per partition times the budget, per margin each partition must pay for: m_c
#: attributes left to the copula) stays at least this (``hybrid_min_support``; 0 is the
#: text's rule, always partition). 500 per margin: for the 5 copula attributes of the
#: Brazil-census-shaped table it is the support per partition chosen there
#: (``benchmarks/synth_hybrid.py``).
HYBRID_MIN_SUPPORT = 500.0
#: The text's rule for the number of MLE blocks, l > C(m,2) / (0.025 eps2) (Li 2017 §3.2.1).
_MLE_CONSTANT = 0.025
#: Smallest average MLE block we allow when the text's l would make blocks smaller.
_MLE_MIN_BLOCK = 20


def _mle_blocks(m: int, eps2: float, n_est: float, requested: int | None) -> int:
    if requested is not None:
        return requested
    text_l = math.ceil((m * (m - 1) / 2) / (_MLE_CONSTANT * eps2))
    return int(max(1, min(text_l, math.floor(max(n_est, 0.0) / _MLE_MIN_BLOCK))))


def _copula_release(
    codes: np.ndarray,
    sizes: Sequence[int],
    eps_margin_each: float,
    eps_dep: float,
    method: str,
    publisher: str,
    options: dict,
    fit: str,
    n_est: float | None,
    n_out: int | None,
    sample_size: int | str | None,
    mle_partitions: int | None,
    rng: np.random.Generator,
    tie_correction: bool = True,
    given: Mapping[int, np.ndarray] | None = None,
    all_rows: bool = False,
    concordance: ConcordanceMemo | None = None,
) -> tuple[np.ndarray, np.ndarray | None, list[np.ndarray], dict[str, Any]]:
    """DPCopula on coded rows: margins, dependence, sampling. Returns (synthetic codes,
    correlation, margins, details). ``given``: DP margins already released (column -> probs);
    ``all_rows``: the default Kendall rule is every row the DP count allows (the copula runs
    on the whole table), else the floor rule (it runs in a partition); ``concordance``: a
    memo of the (public) table's concordance counts."""
    m = codes.shape[1]
    probs, n_margins = _dp_margins(
        codes, sizes, eps_margin_each, publisher, options, fit, rng, given
    )
    n_hat = n_margins if n_est is None else n_est
    rows = max(int(round(n_hat)), 0) if n_out is None else n_out
    details: dict[str, Any] = {"noisy_n": float(n_hat)}
    corr = None
    if m >= 2 and eps_dep > 0:
        if method == "kendall":
            if sample_size == "all" or (sample_size is None and all_rows):
                # Every row the DP count allows (t = n~; sensitivity 4/t, see dpcopula Notes).
                rule = max(int(round(n_hat)), 2)
            elif sample_size in (None, "floor"):
                rule = max(kendall_sample_size(m, eps_dep), KENDALL_MIN_ROWS)
            elif sample_size == "text":
                rule = kendall_sample_size(m, eps_dep)
            else:
                rule = sample_size
            t = int(min(rule, max(round(n_hat), 0)))
            tau, info = _dp_kendall(codes, t, eps_dep, rng, sizes, concordance)
            details.update(info, sample_rule=int(rule), noisy_tau=_readonly(tau))
            raw = _correlation_from_tau(tau)
            if tie_correction and info["kendall_noise_scale"] is not None:
                noise_sd = math.sqrt(2.0) * info["kendall_noise_scale"]
                mask = _tie_correction_mask(tau, probs, noise_sd)
                tau = _tie_corrected_tau(tau, probs, mask)
                raw, calibrated = _calibrate_tied_pairs(
                    tau, probs, _correlation_from_tau(tau), mask
                )
                pairs = np.triu_indices(m, 1)
                details.update(
                    tie_corrected_tau=_readonly(tau),
                    tie_corrected_pairs=int(mask[pairs].sum()),
                    tie_calibrated_pairs=calibrated,
                )
        else:
            blocks = _mle_blocks(m, eps_dep, n_hat, mle_partitions)
            raw, info = _dp_mle(codes, sizes, blocks, eps_dep, rng)
            details.update(info)
        corr, repaired = repair_correlation(raw)
        details.update(
            raw_correlation=_readonly(raw),
            repaired=bool(repaired),
            min_eigenvalue_before_repair=float(np.linalg.eigvalsh(raw).min()),
        )
    synthetic = _sample_copula(probs, corr, rows, rng)
    return synthetic, corr, probs, details


def _hybrid_attributes(
    sizes: Sequence[int], threshold: int | None, max_partitions: int
) -> tuple[list[int], int]:
    """The attributes the hybrid partitions by, and the number of partitions.

    Attributes with fewer than ``threshold`` values join, smallest domain first (ties: column
    order), while the product of their domain sizes stays <= ``max_partitions``; the rest are
    modelled by the copula. A function of public domain sizes only.
    """
    if threshold is None:
        return [], 1
    candidates = sorted((j for j, size in enumerate(sizes) if size < threshold),
                        key=lambda j: (sizes[j], j))
    chosen, n_parts = [], 1
    for j in candidates:
        if n_parts * sizes[j] > max_partitions:
            break
        chosen.append(j)
        n_parts *= sizes[j]
    return sorted(chosen), n_parts


def _check_min_support(value) -> float:
    if value is None:
        return HYBRID_MIN_SUPPORT
    return check_nonnegative(value, "hybrid_min_support")


def _supported_partition(
    small: Sequence[int], sizes: Sequence[int], epsilon: float, n_hat: float, min_support: float
) -> list[int]:
    """The small attributes the hybrid partitions by: all of ``small`` if ``epsilon * n_hat /
    (P * m_c) >= min_support`` for the ``P`` partitions they make, ``m_c`` the attributes
    left to the copula in each partition (at least 1), else none.

    Each partition pays for its own noisy margins of the ``m_c`` copula attributes on its
    share of the records, so the support needed grows with them. ``n_hat`` is the sum of the
    released noisy partition counts and ``epsilon``, ``min_support`` and the domain sizes are
    public: a function of DP outputs only (post-processing), so the choice costs no budget.
    All or nothing: on the Brazil-shaped table partitioning by some of the binary attributes
    (2 or 4 partitions) was worse than none wherever partitioning by all of them was.
    """
    n_parts = math.prod(sizes[j] for j in small)
    margins = max(len(sizes) - len(small), 1)
    return sorted(small) if epsilon * n_hat / (n_parts * margins) >= min_support else []


def dpcopula(
    frame: pd.DataFrame,
    epsilon: float,
    method: str = "kendall",
    k: float = 8.0,
    domains: Mapping[str, Any] | None = None,
    publisher: str = DEFAULT_PUBLISHER,
    hybrid_threshold: int | None = 10,
    *,
    n_rows: int | None = None,
    sample_size: int | str | None = None,
    mle_partitions: int | None = None,
    max_partitions: int = 8,
    hybrid_min_support: float | None = None,
    margin_fit: str = "project",
    publisher_options: Mapping[str, Any] | None = None,
    tie_correction: bool = True,
    rng: np.random.Generator | None = None,
    concordance: ConcordanceMemo | None = None,
) -> SynthResult:
    """Release a DP synthetic copy of ``frame`` with DPCopula (Li 2017 Alg. 1-6).

    Parameters
    ----------
    frame : pandas.DataFrame
        At least 2 numeric columns of integer codes (or pre-binned numbers listed in
        ``domains``); no missing values. Non-numeric columns must be coded first.
    epsilon : float
        Total budget (> 0).
    method : {"kendall", "mle"}
        Dependence estimator: DP Kendall's tau (Li 2017 Alg. 4-5) or DP MLE (Alg. 1-2).
    k : float
        Ratio ``eps1 / eps2`` of the margin and dependence budgets (> 0; the text's
        default 8, Li 2017 Table 3.2): ``eps2 = epsilon / (k + 1)``, ``eps1 = epsilon - eps2``.
    domains : mapping or None
        Public domain of every column: ``(min, max)`` (inclusive integers), an int ``A``
        (``0..A-1``) or a list of values. ``None`` reads them from the data -- not private
        (:class:`DomainFromDataWarning`); in analyst use they must be declared.
    publisher : str
        The :func:`~dpwidgets.engine.histograms.publish` method for the margins (any 1-D
        publisher; asked to serve the prefix workload, since a margin is used through its
        CDF). Default ``"dawa"`` (:data:`DEFAULT_PUBLISHER`); the text uses ``"efpa"``.
        EFPA keeps a few Fourier coefficients: excellent on smooth margins, poor on spiky
        ones (a point mass such as a zero income or a top code needs every coefficient,
        and then EFPA's noise per cell is about sqrt(domain size) times Laplace's; with
        ``publisher_options={"fallback": "identity"}`` its exponential mechanism may pick
        the Laplace histogram instead). DAWA's data-aware buckets keep spikes and flat
        stretches alike, so it is far more accurate on census-shaped margins and close to
        EFPA on smooth ones (``benchmarks/synth_margin_publishers.py`` and
        ``benchmarks/synth_synthetic.py`` measure it).
    hybrid_threshold : int or None
        Attributes with fewer than this many values are handled by the hybrid (Alg. 6):
        they partition the data and DPCopula runs in every partition. ``None`` (or 2)
        disables it. The text's default; its price is that every margin is estimated per
        partition (the same noise on a fraction of the data), which can outweigh keeping
        the small attributes' dependence exactly (``benchmarks/synth_margin_publishers.py``
        measures it with and without the hybrid).
    n_rows : int, optional
        Number of synthetic records (a public choice). Default: the DP estimate of the
        record count (mean of the margins' unclipped noisy totals; for the hybrid, the sum
        of the noisy partition sizes).
    sample_size : int, "all", "floor" or "text", optional
        Kendall only: the rule for ``t``, the number of rows tau is computed on; ``t`` is
        the smaller of it and the DP record count (:data:`SAMPLE_RULES`). Default: ``"all"``
        (every row the DP count allows, ``t = round(n~)``) when the copula models the whole
        table, ``"floor"`` inside the hybrid's partitions. ``"floor"`` is the larger of
        :func:`kendall_sample_size`, the text's ``50 m (m-1) / eps2``, and
        :data:`KENDALL_MIN_ROWS` = 20,000 (the text's rule alone samples fewer rows the
        larger epsilon is); ``"text"`` is the text's rule alone. At the text's rule the
        tau noise scale ``C(m,2) 4 / (t eps2)`` is 0.04 whatever ``n``, ``m`` and
        ``epsilon``; a larger ``t`` lowers it in proportion, and the sampling error with
        it, at ``O(t log t)`` per pair. All rows are somewhat more accurate than the floor
        rule (``benchmarks/synth_hybrid.py`` measures both).
    mle_partitions : int, optional
        MLE only: the number ``l`` of blocks. Default: the text's
        ``ceil(C(m,2) / (0.025 eps2))``, capped so that blocks hold >= 20 records on average
        (by the DP record count).
    max_partitions : int
        Largest number of hybrid partitions (default 8). The small attributes join the
        partition smallest domain first while the product of their domain sizes stays within
        it; the others are modelled by the copula with the large ones (their ties handled
        by ``tie_correction``). The text partitions by every small attribute (Alg. 6) -- 2
        partitions for its US table, 8 for Brazil, both within the default; but every
        partition gets its own noisy margins, so with many small attributes the hybrid
        drowns the data: with thousands of partitions the synthetic table is less accurate
        than independent margins, and far slower to release
        (``benchmarks/synth_hybrid.py`` measures it). A large value restores the text's rule.
    hybrid_min_support : float, optional
        Partition only if ``epsilon * n~ / (P * m_c)`` is at least this (default
        :data:`HYBRID_MIN_SUPPORT` = 500), ``n~`` the sum of the released noisy partition
        counts, ``P`` the number of partitions and ``m_c`` the number of attributes the
        copula models in each; otherwise the small attributes join the copula
        (``details["partition_attributes"]`` says which way it went). ``0`` always
        partitions (the text's rule). Each partition pays its own margins' noise on a
        fraction of the data, which at small epsilon costs more error than partitioning
        saves (``benchmarks/synth_hybrid.py`` and ``benchmarks/synth_hybrid_rule.py``
        measure the rule against the text's).
    margin_fit : {"clip", "project"}
        How a noisy margin becomes the DP empirical distribution (post-processing, free):
        ``"project"`` (default; Norm-Sub: the closest non-negative histogram with the same
        noisy total, which does not pile the positive noise of empty cells into phantom
        mass) or ``"clip"`` (negatives to 0, normalised); see :data:`MARGIN_FITS`. The text
        does not say how its margins are made non-negative; ``project`` is more accurate
        than ``clip`` for EFPA, identity and HB and level for DAWA
        (``benchmarks/synth_margin_publishers.py`` measures both), hence the default.
    publisher_options : mapping, optional
        Options passed to the margin publisher.
    tie_correction : bool
        Kendall only (default True): turn the DP tau-a into tau-b with the DP margins
        before ``P = sin(pi tau / 2)``, and for every pair with a tied attribute (a DP
        margin with ``sum p^2 >`` :data:`HEAVY_TIE_SHARE`) replace the sine by the
        correlation whose simulated copula data reproduce that tau-b (post-processing,
        free). Pairs whose corrected tau would carry DP noise of
        s.d. above :data:`TIE_NOISE_LIMIT` (0.1) keep tau-a: the correction divides the
        noise by ``sqrt(u_j u_k)`` as well, and for rare categories with many attributes
        (small ``t eps2 / C(m,2)``) the amplified noise is a bigger error than the ties'
        bias. The text treats attributes as continuous; on discrete ones tied pairs count
        0 in tau-a and the copula's correlation comes out too small
        (two balanced binary attributes with latent correlation 0.6 give sin(pi tau-a / 2)
        = 0.32; tau-b gives 0.60; for a 90/10 binary attribute tau-b's sine still gives
        0.41, the calibration 0.6). ``False`` is the text's estimator.
    rng : numpy.random.Generator, optional
        Source of all randomness (default: a fresh unseeded generator).
    concordance : ConcordanceMemo, optional
        Kendall only: per-row concordance counts of the table kept between calls, so that
        tau on a later call costs the rows left out of its sample, not a count of the whole
        sample (:class:`ConcordanceMemo`; the release is the same for the same generator).
        For public data only (a teaching table, a stand-in): it holds statistics of the
        table.

    Returns
    -------
    SynthResult
        The synthetic table with the DP margins and the repaired DP correlation matrix it
        was sampled from; ``epsilon_parts`` splits epsilon into margins and dependence.

    Raises
    ------
    ValueError
        Before any randomness: a non-DataFrame or fewer than 2 columns, a non-numeric column,
        missing or non-finite values, a domain with fewer than 2 values, values outside the
        declared domains, bad ``epsilon``/``k``/``method``/``publisher``/``n_rows``/
        ``sample_size``/``mle_partitions``/``max_partitions``.
    TypeError
        ``rng`` is not a :class:`numpy.random.Generator`.

    Notes
    -----
    Privacy (add/remove one record; domains public). Margins: each histogram has L1
    sensitivity 1 and gets ``eps1/m``; sequential composition gives ``eps1``. The record
    count ``n~``, the sample size ``t = min(rule, n~)`` and the MLE block count are functions
    of those DP outputs. Kendall: the statistic of pair (j, k) is
    ``S_jk(sample) / C(t, 2)`` with ``S_jk`` the sum of sign products over the pairs of the
    sample (a uniform ``t``-subset if there are more than ``t`` rows, else all rows). If the
    data have fewer than ``t`` rows, adding one adds at most ``t - 1`` pairs (change <=
    ``2/t``); otherwise the two samples can be coupled to differ by one replaced record,
    which changes ``t - 1`` pairs by at most 2 (change <= ``4/t``). So ``4/t`` bounds every
    coefficient, ``C(m,2) 4/t`` the vector, and ``Lap(C(m,2) (4/t) / eps2)`` per pair is
    ``eps2``-DP (the coupling averages the Laplace ratio bound). MLE: see ``_dp_mle``,
    ``eps2``-DP. Everything after is post-processing: ``epsilon = eps1 + eps2``
    (Thm 3.2.2's proof; its statement ``m eps1 + C(m,2) eps2`` is a slip).

    Sensitivity differs from Lemma 3.2.1's ``4/(n+1)``: the lemma adds a record to a set of
    ``n``, and removing one from a set of ``n`` needs ``4/n``. We use ``4/t`` for the rows
    tau is computed on; with the text's ``n^ = 50 m(m-1)/eps2 - 1`` and ``t = n^ + 1`` this is
    exactly the text's ``4/(n^+1)``. When the DP count overestimates a small table (``n <
    t``), tau is shrunk by ``C(n,2)/C(t,2)`` (the price of not assuming ``n`` public).

    Hybrid (Alg. 6): with ``m1`` small and ``m2`` large attributes, the partition sizes (one
    count per combination of small values, ``Lap(1/eps_p)`` each: Dwork's method as in the
    text) get ``eps_p = eps1 m1/m``; in every partition DPCopula runs on the large attributes
    with ``eps1/m`` per margin and ``eps2`` for the dependence (if ``m2 >= 2``; otherwise
    ``eps2`` is not split off and margins get ``epsilon/m`` each). Partitions are disjoint,
    so their releases compose in parallel: ``epsilon = eps_p + eps1 m2/m + eps2``. The
    text's Alg. 6 leaves ``eps_p`` open; this choice keeps each attribute's margin at
    ``eps1/m`` and the ratio ``k``. Partitions whose noisy size rounds to 0 produce no rows.
    Whether to partition (``hybrid_min_support``) is decided from ``n~ = sum`` of those
    noisy counts, ``epsilon`` and the domain sizes: post-processing of a released value and
    public parameters, so the decision itself spends nothing and the budget split above
    does not depend on it. Unpartitioned, the small attributes' margins are the margins of
    the released counts (post-processing), the copula covers all ``m`` attributes with
    ``eps2``, and the total is the same. The rule applies when ``m2 >= 2`` (``eps2`` is then
    set aside either way); with fewer large attributes the text's hybrid runs.

    References
    ----------
    Li 2017 Ch. 3: Alg. 1 and 4 (steps), Alg. 2 (DP MLE), Alg. 3 (sampling), Alg. 5 (DP
    Kendall and the repair), Alg. 6 (hybrid), Lemma 3.2.1, Thms 3.2.1-3.2.4, §3.3.2 (k = 8).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from dpwidgets.engine.synth import dpcopula
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 20, 500)
    >>> frame = pd.DataFrame({"a": a, "b": np.clip(a + rng.integers(-2, 3, 500), 0, 19)})
    >>> out = dpcopula(frame, 1.0, domains={"a": range(20), "b": range(20)}, rng=rng)
    >>> list(out.data.columns), sorted(out.epsilon_parts), out.correlation.shape
    (['a', 'b'], ['dependence', 'margins'], (2, 2))
    """
    (epsilon, k, options, hybrid_threshold, n_rows, sample_size, mle_partitions,
     max_partitions, min_support, fit) = _check_options(
        epsilon, k, concordance, tie_correction, method, publisher, publisher_options,
        hybrid_threshold, n_rows, sample_size, mle_partitions, max_partitions,
        hybrid_min_support, margin_fit,
    )
    table = _prepare(frame, domains)
    sizes = table.sizes
    m = table.m
    small, n_parts = _hybrid_attributes(sizes, hybrid_threshold, max_partitions)
    large = [j for j in range(m) if j not in small]
    rng = check_rng(rng)
    _warn_from_data(table)

    m1, m2 = len(small), len(large)
    with_dependence = m2 >= 2
    eps_dep = epsilon / (k + 1.0) if with_dependence else 0.0
    eps_margin_each = (epsilon - eps_dep) / m
    common = dict(
        method=method,
        publisher=publisher,
        options=options,
        fit=fit,
        sample_size=sample_size,
        mle_partitions=mle_partitions,
        rng=rng,
        tie_correction=bool(tie_correction),
        concordance=concordance,
    )
    details: dict[str, Any] = {
        "k": k,
        "tie_correction": bool(tie_correction) and method == "kendall",
        "publisher": publisher,
        "publisher_options": dict(options),
        "margin_fit": fit,
        "margin_epsilon_each": eps_margin_each,
        "hybrid_threshold": hybrid_threshold,
        "hybrid_min_support": min_support,
    }

    if not small:
        return _whole_table_release(
            table, sizes, m, epsilon, eps_margin_each, eps_dep, n_rows, method, common, details
        )
    return _hybrid_release(
        table, sizes, m, m1, m2, small, large, n_parts, epsilon, eps_margin_each, eps_dep,
        with_dependence, min_support, n_rows, hybrid_threshold, fit, method, rng, common,
        details,
    )


def _check_options(
    epsilon, k, concordance, tie_correction, method, publisher, publisher_options,
    hybrid_threshold, n_rows, sample_size, mle_partitions, max_partitions, hybrid_min_support,
    margin_fit,
) -> tuple:
    """:func:`dpcopula`'s parameters checked, before any randomness: ``(epsilon, k, options,
    hybrid_threshold, n_rows, sample_size, mle_partitions, max_partitions, min_support,
    fit)`` as the release uses them; a ValueError names the first bad one."""
    epsilon = check_epsilon(epsilon)
    k = check_positive(k, "k")
    if concordance is not None and not isinstance(concordance, ConcordanceMemo):
        raise ValueError(f"concordance must be a ConcordanceMemo or None, got "
                         f"{type(concordance).__name__}")
    if not isinstance(tie_correction, bool | np.bool_):
        raise ValueError(f"tie_correction must be True or False, got {tie_correction!r}")
    if method not in METHODS:
        raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
    options = _check_publisher(publisher, publisher_options)
    if hybrid_threshold is not None:
        hybrid_threshold = check_positive_int(hybrid_threshold, "hybrid_threshold", minimum=2)
    n_rows = _check_n_rows(n_rows)
    if isinstance(sample_size, str):
        if sample_size not in SAMPLE_RULES:
            raise ValueError(
                f"sample_size must be an integer >= 2 or one of {list(SAMPLE_RULES)}, got "
                f"{sample_size!r}"
            )
    elif sample_size is not None:
        sample_size = check_positive_int(sample_size, "sample_size", minimum=2)
    if mle_partitions is not None:
        mle_partitions = check_positive_int(mle_partitions, "mle_partitions", maximum=MAX_PARTITIONS)
    max_partitions = check_positive_int(max_partitions, "max_partitions", maximum=MAX_PARTITIONS)
    min_support = _check_min_support(hybrid_min_support)
    fit = _check_fit(margin_fit)
    return (epsilon, k, options, hybrid_threshold, n_rows, sample_size, mle_partitions,
            max_partitions, min_support, fit)


def _whole_table_release(
    table: _Table, sizes, m: int, epsilon: float, eps_margin_each: float, eps_dep: float,
    n_rows: int | None, method: str, common: dict, details: dict[str, Any],
) -> SynthResult:
    """:func:`dpcopula` without partitions: the copula models every attribute of ``table``."""
    parts = _exact_parts(epsilon, {"margins": eps_margin_each * m, "dependence": eps_dep})
    synthetic, corr, probs, info = _copula_release(
        table.codes, sizes, eps_margin_each, eps_dep, n_est=None, n_out=n_rows,
        all_rows=True, **common
    )
    details.update(info)
    return SynthResult(
        data=table.frame(synthetic),
        epsilon=epsilon,
        epsilon_parts=parts,
        method=f"dpcopula-{method}",
        correlation=corr,
        correlation_columns=table.columns,
        margins=dict(zip(table.columns, probs, strict=True)),
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table),
        details=details,
    )


def _hybrid_release(
    table: _Table, sizes, m: int, m1: int, m2: int, small: list[int], large: list[int],
    n_parts: int, epsilon: float, eps_margin_each: float, eps_dep: float,
    with_dependence: bool, min_support: float, n_rows: int | None,
    hybrid_threshold: int | None, fit: str, method: str, rng: np.random.Generator,
    common: dict, details: dict[str, Any],
) -> SynthResult:
    """:func:`dpcopula`'s hybrid (Li 2017 Alg. 6): the noisy partition counts, the choice of
    the partition attributes, one copula per partition (:func:`_release_partitions`), and the
    margins of the whole table; see :func:`dpcopula`, Notes."""
    # Hybrid (Li 2017 Alg. 6): noisy counts of every combination of the small attributes.
    eps_part = eps_margin_each * m1
    part_sizes = [sizes[j] for j in small]
    noisy = _noisy_partition_sizes(table, small, part_sizes, n_parts, eps_part, rng)
    clipped = np.clip(noisy, 0.0, None)
    weights = clipped / clipped.sum() if clipped.sum() > 0 else np.full(n_parts, 1.0 / n_parts)
    small_codes = np.stack(np.unravel_index(np.arange(n_parts), part_sizes), axis=1)
    n_hat = float(noisy.sum())
    # Partition only by the small attributes the DP size per partition supports (a function of
    # the released counts and public values: post-processing); the others join the copula with
    # the DP margins the released counts already give them (post-processing, nothing spent).
    keep = (
        _supported_partition(small, sizes, epsilon, n_hat, min_support)
        if with_dependence and min_support > 0
        else list(small)
    )
    moved = [j for j in small if j not in keep]
    keep_axes = [small.index(j) for j in keep]
    moved_axes = [small.index(j) for j in moved]
    keep_sizes = [sizes[j] for j in keep]
    n_used = math.prod(keep_sizes)
    grid = np.moveaxis(noisy.reshape(part_sizes), keep_axes + moved_axes,
                       list(range(m1))).reshape([n_used] + [sizes[j] for j in moved])
    coarse = grid.reshape(n_used, -1).sum(axis=1)
    coarse_clipped = np.clip(coarse, 0.0, None)
    coarse_weights = (coarse_clipped / coarse_clipped.sum() if coarse_clipped.sum() > 0
                      else np.full(n_used, 1.0 / n_used))
    if n_rows is None:
        rows = np.maximum(np.rint(coarse), 0).astype(np.int64)
    else:
        rows = rng.multinomial(n_rows, coarse_weights)
    synthetic, copula_cols, part_corr, large_mix = _release_partitions(
        table, sizes, m, keep, moved, large, keep_sizes, n_used, rows, grid, coarse,
        coarse_weights, eps_margin_each, eps_dep, fit, common, details,
    )
    synthetic = synthetic[rng.permutation(len(synthetic))]
    parts = _exact_parts(
        epsilon,
        {"partition_sizes": eps_part, "margins": eps_margin_each * m2, "dependence": eps_dep},
    )
    margins = _hybrid_margins(table, sizes, small, large, small_codes, weights, large_mix)
    details.update(
        small_attributes=tuple(table.columns[j] for j in small),
        small_in_copula=tuple(
            table.columns[j]
            for j in large
            if hybrid_threshold is not None and sizes[j] < hybrid_threshold
        ),
        large_attributes=tuple(table.columns[j] for j in large),
        partition_attributes=tuple(table.columns[j] for j in keep),
        n_partitions=int(n_used),
        counted_partitions=int(n_parts),
        partition_support=epsilon * n_hat / n_used,
        partition_noisy_sizes=_readonly(coarse),
        partition_rows=_readonly(rows, np.int64),
        partition_correlations=MappingProxyType(part_corr),
        partition_epsilon=eps_part,
        noisy_n=n_hat,
    )
    return SynthResult(
        data=table.frame(synthetic),
        epsilon=epsilon,
        epsilon_parts=parts,
        method=f"dpcopula-hybrid-{method}",
        correlation=part_corr.get(()) if not keep else None,
        correlation_columns=tuple(table.columns[j] for j in copula_cols),
        margins={c: margins[c] for c in table.columns},
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table),
        details=details,
    )


def _noisy_partition_sizes(table: _Table, small: list[int], part_sizes: list[int],
                           n_parts: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """Li 2017 Alg. 6's noisy counts of every combination of the small attributes (one
    histogram of L1 sensitivity 1, released with ``epsilon``)."""
    pid = (
        np.ravel_multi_index(tuple(table.codes[:, j] for j in small), part_sizes)
        if len(table.codes)
        else np.zeros(0, dtype=np.int64)
    )
    counts = np.bincount(pid, minlength=n_parts)
    return np.asarray(publish(counts, epsilon, "identity", rng=rng).counts, dtype=float)


def _hybrid_margins(table: _Table, sizes, small: list[int], large: list[int],
                    small_codes: np.ndarray, weights: np.ndarray,
                    large_mix: dict[int, np.ndarray]) -> dict[str, np.ndarray]:
    """The hybrid's DP margins of the whole table (post-processing): the noisy partition sizes
    (``weights`` of the combinations ``small_codes``) give the small attributes' margins, the
    size-weighted mixture of the partition margins the others."""
    margins: dict[str, np.ndarray] = {}
    for i, j in enumerate(small):
        margins[table.columns[j]] = np.bincount(
            small_codes[:, i], weights=weights, minlength=sizes[j]
        )
    for j in large:
        mass = large_mix[j].sum()
        margins[table.columns[j]] = (
            large_mix[j] / mass if mass > 0 else np.full(sizes[j], 1.0 / sizes[j])
        )
    return margins


def _release_partitions(
    table: _Table, sizes, m: int, keep: list[int], moved: list[int], large: list[int],
    keep_sizes: list[int], n_used: int, rows: np.ndarray, grid: np.ndarray,
    coarse: np.ndarray, coarse_weights: np.ndarray, eps_margin_each: float, eps_dep: float,
    fit: str, common: dict, details: dict[str, Any],
) -> tuple[np.ndarray, list[int], dict[tuple, np.ndarray | None], dict[int, np.ndarray]]:
    """The hybrid's synthetic rows, one block per partition with rows (in partition order,
    not yet shuffled): DPCopula on the partition's records over the copula attributes. Returns
    the rows, the copula attributes, each partition's correlation and the size-weighted
    mixture of the large attributes' partition margins."""
    cpid = (
        np.ravel_multi_index(tuple(table.codes[:, j] for j in keep), keep_sizes)
        if keep and len(table.codes)
        else np.zeros(len(table.codes), dtype=np.int64)
    )
    order = np.argsort(cpid, kind="stable")
    bounds = np.concatenate(([0], np.cumsum(np.bincount(cpid, minlength=n_used))))
    keep_codes = (np.stack(np.unravel_index(np.arange(n_used), keep_sizes), axis=1)
                  if keep else np.zeros((1, 0), dtype=np.int64))
    copula_cols = sorted(large + moved)
    copula_sizes = [sizes[j] for j in copula_cols]
    pieces = []
    part_corr: dict[tuple, np.ndarray | None] = {}
    large_mix = {j: np.zeros(sizes[j]) for j in large}
    for cell in np.flatnonzero(rows > 0).tolist():
        report(cell, n_used)  # partitions of the public domains
        block = np.empty((int(rows[cell]), m), dtype=np.int64)
        block[:, keep] = keep_codes[cell]
        if copula_cols:
            members = order[bounds[cell] : bounds[cell + 1]]
            given = {}
            for i, j in enumerate(moved):
                other = tuple(a for a in range(len(moved)) if a != i)
                given[copula_cols.index(j)] = _distribution(grid[cell].sum(axis=other), fit)
            synthetic, corr, probs, info = _copula_release(
                table.codes[np.ix_(members, copula_cols)],
                copula_sizes,
                eps_margin_each,
                eps_dep,
                n_est=float(coarse[cell]),
                n_out=int(rows[cell]),
                given=given,
                all_rows=not keep,
                **common,
            )
            block[:, copula_cols] = synthetic
            key = tuple(table.values[j][keep_codes[cell, i]].item() for i, j in enumerate(keep))
            part_corr[key] = corr
            if not keep:
                details.update(info)
            for i, j in enumerate(copula_cols):
                if j in large_mix:
                    large_mix[j] += coarse_weights[cell] * probs[i]
        pieces.append(block)
    synthetic = np.concatenate(pieces) if pieces else np.empty((0, m), dtype=np.int64)
    return synthetic, copula_cols, part_corr, large_mix
