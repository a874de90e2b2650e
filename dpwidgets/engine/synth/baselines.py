"""The baselines DPCopula is judged against, and today's peers.

:func:`independent_synth` (DP margins only, no dependence), :func:`laplace_histogram_synth`
(the Laplace mechanism on the full-domain histogram, where it fits in memory) and
:func:`peer_synth` (AIM and MST from OpenDP's ``mbi`` extra, imported lazily). Each returns a
:class:`~dpwidgets.engine.synth.result.SynthResult` like :func:`dpcopula`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from ..histograms import publish
from ..validation import (
    check_epsilon,
    check_positive_int,
    check_rng,
)
from .domains import (
    DEFAULT_PUBLISHER,
    _check_n_rows,
    _check_publisher,
    _guarantee,
    _prepare,
    _warn_from_data,
)
from .margins import _check_fit, _distribution, _dp_margins, _sample_copula
from .result import SynthResult

__all__ = ["MAX_CELLS", "independent_synth", "laplace_histogram_synth", "peer_synth"]

#: The largest full histogram of :func:`laplace_histogram_synth` (``max_cells``; 800 MB).
MAX_CELLS = 10**8


def independent_synth(
    frame: pd.DataFrame,
    epsilon: float,
    domains: Mapping[str, Any] | None = None,
    publisher: str = DEFAULT_PUBLISHER,
    *,
    n_rows: int | None = None,
    margin_fit: str = "project",
    publisher_options: Mapping[str, Any] | None = None,
    rng: np.random.Generator | None = None,
) -> SynthResult:
    """The dependence-free baseline: DP margins only, attributes sampled independently.

    Each attribute's histogram is released with ``epsilon/m`` through
    :func:`~dpwidgets.engine.histograms.publish` (same publisher as DPCopula's margins);
    records are drawn from the product of the DP margins. This is DPCopula with the
    identity correlation and all the budget on the margins -- what DPCopula must beat to
    show that its dependence is worth the budget it takes.

    Parameters
    ----------
    frame, domains, publisher, n_rows, margin_fit, publisher_options, rng
        As :func:`dpcopula`.
    epsilon : float
        Total budget (> 0).

    Returns
    -------
    SynthResult
        ``correlation`` is the identity, ``epsilon_parts == {"margins": epsilon}``.

    Raises
    ------
    ValueError
        As :func:`dpcopula`, before any randomness.

    Notes
    -----
    Privacy: m histograms of L1 sensitivity 1 (add/remove one record) with ``epsilon/m``
    each compose to ``epsilon``; sampling is post-processing.

    References
    ----------
    Li 2017 §3.2 (the margins step of Alg. 1/4 on its own).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from dpwidgets.engine.synth import independent_synth
    >>> a = np.arange(500) % 5
    >>> frame = pd.DataFrame({"a": a, "b": a})  # b is a copy of a
    >>> rng = np.random.default_rng(0)
    >>> out = independent_synth(frame, 1.0, domains={"a": range(5), "b": range(5)}, rng=rng)
    >>> list(out.data.columns), out.correlation.tolist(), dict(out.epsilon_parts)  # no dependence
    (['a', 'b'], [[1.0, 0.0], [0.0, 1.0]], {'margins': 1.0})
    """
    epsilon = check_epsilon(epsilon)
    options = _check_publisher(publisher, publisher_options)
    n_rows = _check_n_rows(n_rows)
    fit = _check_fit(margin_fit)
    table = _prepare(frame, domains)
    rng = check_rng(rng)
    _warn_from_data(table)
    eps_each = epsilon / table.m
    probs, n_hat = _dp_margins(table.codes, table.sizes, eps_each, publisher, options, fit, rng)
    rows = max(int(round(n_hat)), 0) if n_rows is None else n_rows
    synthetic = _sample_copula(probs, None, rows, rng)
    return SynthResult(
        data=table.frame(synthetic),
        epsilon=epsilon,
        epsilon_parts={"margins": epsilon},
        method="independent",
        correlation=np.eye(table.m),
        correlation_columns=table.columns,
        margins=dict(zip(table.columns, probs, strict=True)),
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table),
        details={
            "publisher": publisher,
            "publisher_options": dict(options),
            "margin_fit": fit,
            "margin_epsilon_each": eps_each,
            "noisy_n": n_hat,
        },
    )


def laplace_histogram_synth(
    frame: pd.DataFrame,
    epsilon: float,
    domains: Mapping[str, Any] | None = None,
    rng: np.random.Generator | None = None,
    *,
    publisher: str = "identity",
    max_cells: int = 10**7,
    n_rows: int | None = None,
    margin_fit: str = "project",
) -> SynthResult:
    """The full-domain histogram baseline: Laplace per cell of the joint histogram, then
    sampling (Li 2017 §3.3.1's "methods with histograms as inputs", LM).

    The joint histogram over the product of all domains (``prod |A_j|`` cells, C order) is
    released with ``epsilon`` (``publisher="identity"``: ``Lap(1/epsilon)`` per cell),
    clipped at 0, normalised, and ``n_rows`` records (default: the unclipped noisy total)
    are drawn from it.

    Parameters
    ----------
    frame, domains, rng, n_rows, margin_fit
        As :func:`dpcopula` (``margin_fit`` applies to the joint histogram).
    epsilon : float
        Total budget (> 0).
    publisher : str
        Any 1-D publisher of :func:`~dpwidgets.engine.histograms.publish`.
    max_cells : int
        Refuse domains with more cells than this (the histogram must fit in memory).

    Returns
    -------
    SynthResult
        ``correlation`` is ``None`` (the joint histogram holds every dependence);
        ``epsilon_parts`` are the publisher's (all of epsilon on the one histogram).

    Raises
    ------
    ValueError
        If the full domain has more than ``max_cells`` cells (before any randomness), or as
        :func:`dpcopula`.

    Notes
    -----
    Privacy: the joint histogram has L1 sensitivity 1 under add/remove-one; the publisher
    is ``epsilon``-DP; sampling is post-processing.

    References
    ----------
    Dwork, McSherry, Nissim, Smith 2006; Li 2017 §3.3.1 (why histogram methods do not scale).

    Examples
    --------
    >>> import numpy as np
    >>> import pandas as pd
    >>> from dpwidgets.engine.synth import laplace_histogram_synth
    >>> frame = pd.DataFrame({"a": [0, 1, 1, 2] * 125, "b": [0, 1, 1, 0] * 125})
    >>> out = laplace_histogram_synth(frame, 1.0, domains={"a": range(3), "b": range(2)},
    ...                               rng=np.random.default_rng(0))
    >>> out.details["cells"], out.correlation is None, out.method  # 3 x 2 cells
    (6, True, 'laplace-histogram')
    """
    epsilon = check_epsilon(epsilon)
    options = _check_publisher(publisher, None)
    max_cells = check_positive_int(max_cells, "max_cells", maximum=MAX_CELLS)
    n_rows = _check_n_rows(n_rows)
    fit = _check_fit(margin_fit)
    table = _prepare(frame, domains)
    cells = math.prod(table.sizes)
    if cells > max_cells:
        raise ValueError(
            f"the full domain has {cells:.3g} cells ({' x '.join(map(str, table.sizes))}), more "
            f"than max_cells={max_cells}: the full-histogram baseline only runs where the "
            f"histogram fits in memory (use independent_synth or dpcopula)"
        )
    rng = check_rng(rng)
    _warn_from_data(table)
    flat = np.ravel_multi_index(tuple(table.codes.T), table.sizes) if len(table.codes) else []
    counts = np.bincount(np.asarray(flat, dtype=np.int64), minlength=cells)
    release = publish(counts, epsilon, publisher, rng=rng, **options)
    est = np.asarray(release.counts, dtype=float)
    rows = max(int(round(est.sum())), 0) if n_rows is None else n_rows
    prob = _distribution(est, fit)
    drawn = rng.choice(cells, size=rows, p=prob)
    synthetic = np.stack(np.unravel_index(drawn, table.sizes), axis=1).astype(np.int64)
    shaped = prob.reshape(table.sizes)
    margins = {
        col: shaped.sum(axis=tuple(i for i in range(table.m) if i != j))
        for j, col in enumerate(table.columns)
    }
    return SynthResult(
        data=table.frame(synthetic.reshape(rows, table.m)),
        epsilon=epsilon,
        epsilon_parts=dict(release.epsilon_parts),
        method="laplace-histogram",
        correlation=None,
        correlation_columns=(),
        margins=margins,
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table),
        details={
            "publisher": publisher,
            "margin_fit": fit,
            "cells": int(cells),
            "noisy_n": float(est.sum()),
        },
    )


_PEER_INSTALL = "pip install 'opendp[mbi]'  (pulls in mbi, JAX, polars and pyarrow)"


def peer_synth(
    frame: pd.DataFrame,
    epsilon: float,
    method: str = "aim",
    domains: Mapping[str, Any] | None = None,
    rng: np.random.Generator | None = None,
    *,
    n_rows: int | None = None,
) -> SynthResult:
    """Today's peers: AIM or MST from OpenDP's ``mbi`` extra (Private-PGM), as a baseline.

    The frame goes to OpenDP as a polars LazyFrame with ``privacy_unit=unit_of(
    contributions=1)`` (add/remove one row) and ``privacy_loss=loss_of(epsilon=epsilon)``
    (pure DP: every column's keys are the declared domain, so OpenDP needs no delta);
    ``contingency_table(keys=..., algorithm=AIM() or MST())`` is released and synthesised
    with ``n_rows`` rows (default: the model's DP total). OpenDP adds a "null" key to every
    column; synthetic values falling in it are replaced by a draw from that column's other
    synthetic values (post-processing, with ``rng``).

    Parameters
    ----------
    frame, domains, n_rows
        As :func:`dpcopula`.
    epsilon : float
        Total budget (> 0).
    method : {"aim", "mst"}
        AIM (McKenna, Mullins, Sheldon, Miklau 2022) or MST (McKenna, Miklau, Sheldon 2021).
    rng : numpy.random.Generator, optional
        Used only for the null replacement: OpenDP draws its noise from its own
        cryptographic generator and ``mbi`` samples from NumPy's global state, so a peer
        release is **not** reproducible from a seed.

    Returns
    -------
    SynthResult

    Raises
    ------
    ImportError
        If ``opendp[mbi]`` is not installed (the message gives the pip command).
    ValueError
        As :func:`dpcopula`, before any randomness.
    RuntimeError
        If OpenDP fails inside its noise calibration (seen with AIM under pure DP in
        opendp 0.16 on a 4 x 100-value table: "scale (-0.5) must not be finite and
        non-negative", OpenDP issue #2790). Nothing is released; a caller that charges a
        budget before calling should count it as spent.

    Notes
    -----
    Privacy: OpenDP's own accounting -- ``epsilon``-DP (pure) for add/remove-one-row
    neighbours with all keys public; the null replacement is post-processing.

    References
    ----------
    OpenDP ``opendp.extras.mbi`` (``make_contingency_table``, ``AIM``, ``MST``).

    Examples
    --------
    With ``opendp[mbi]`` installed (not reproducible from a seed, so not run here):

    >>> import numpy as np
    >>> import pandas as pd
    >>> from dpwidgets.engine.synth import peer_synth
    >>> frame = pd.DataFrame({"a": [0, 1, 2, 1] * 50, "b": [1, 0, 1, 1] * 50})
    >>> result = peer_synth(frame, 1.0, "mst",
    ...                     domains={"a": range(3), "b": range(2)})  # doctest: +SKIP
    >>> result.data.shape  # doctest: +SKIP
    (200, 2)
    """
    epsilon = check_epsilon(epsilon)
    if method not in ("aim", "mst"):
        raise ValueError(f"method must be 'aim' or 'mst', got {method!r}")
    n_rows = _check_n_rows(n_rows)
    table = _prepare(frame, domains)
    rng = check_rng(rng)
    try:
        import mbi  # noqa: F401
        import opendp.prelude as dp
        import polars as pl
        from opendp.mod import OpenDPException
    except ImportError as exc:
        raise ImportError(f"peer_synth needs OpenDP with its mbi extra: {_PEER_INSTALL}") from exc
    _warn_from_data(table)
    dp.enable_features("contrib")
    names = [f"c{j}" for j in range(table.m)]  # OpenDP needs string names, and no "len"
    coded = pl.DataFrame({name: table.codes[:, j] for j, name in enumerate(names)})
    context = dp.Context.compositor(
        data=coded.lazy(),
        privacy_unit=dp.unit_of(contributions=1),
        privacy_loss=dp.loss_of(epsilon=epsilon),
        split_evenly_over=1,
    )
    algorithm = dp.mbi.AIM() if method == "aim" else dp.mbi.MST()
    keys = {name: list(range(size)) for name, size in zip(names, table.sizes, strict=True)}
    released = context.query().select(*names).contingency_table(keys=keys, algorithm=algorithm)
    try:
        contingency = released.release()
    except OpenDPException as exc:
        raise RuntimeError(
            f"OpenDP's {method.upper()} failed inside its own release (see the chained "
            f"OpenDPException); with opendp 0.16 AIM can fail to calibrate its noise under "
            f"pure epsilon-DP (OpenDP issue #2790). Nothing was returned; try method='mst'"
        ) from exc
    out = contingency.synthesize(rows=n_rows)
    synthetic = np.empty((out.height, table.m), dtype=np.int64)
    for j, name in enumerate(names):
        col = out[name].to_numpy()
        col = np.asarray(col, dtype=float)
        bad = ~np.isfinite(col) | (col < 0) | (col >= table.sizes[j])
        good = col[~bad]
        if bad.any():
            col[bad] = (
                rng.choice(good, size=int(bad.sum()))
                if good.size
                else rng.integers(0, table.sizes[j], size=int(bad.sum()))
            )
        synthetic[:, j] = col.astype(np.int64)
    return SynthResult(
        data=table.frame(synthetic),
        epsilon=epsilon,
        epsilon_parts={method: epsilon},
        method=method,
        correlation=None,
        correlation_columns=(),
        margins={},
        domains=table.domains(),
        guarantee=_guarantee(epsilon, table, " (OpenDP's accounting)"),
        details={"opendp_rows": int(out.height)},
    )
