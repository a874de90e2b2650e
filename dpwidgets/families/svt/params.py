"""The parameters of the SVT family's mechanisms, one frozen object each.

Each field is declared once (:func:`~dpwidgets.params.param`): its default, its check against
the dataset's public number of queries, what it means, and how a widget shows it. The spec's
``validate`` is :meth:`~dpwidgets.params.Params.validate` of these classes, and the canonical
dict it returns is what the engine receives and what keys the release cache.

Examples
--------
>>> from dpwidgets.families.svt.params import SVTParams
>>> p = SVTParams.from_request({"epsilon": 0.5, "threshold": 10.0, "c": 3}, 100)
>>> p.variant, p.c, p.sensitivity
('standard', 3, 1.0)
"""

from __future__ import annotations

import numpy as np

from ...engine.validation import (
    check_epsilon,
    check_finite_array,
    check_positive_int,
    check_probability,
)
from ...params import Choice, Context, Epsilon, Params, Range, Toggle, one_of, param

__all__ = ["MAX_PASSES", "ReconstructionParams", "SVTParams", "TopCParams", "default_ratio",
           "default_share"]

#: The most retraversals SVT-ReTr may make (each pass is one vectorised sweep of the queries).
MAX_PASSES = 10_000


def _svt_engine():
    from ...engine import svt

    return svt


def default_ratio(c: int, monotonic: bool = False) -> float:
    """ε2/ε1 at standard SVT's default split, Lyu, Su & Li 2017, eq. 12: (2c)^(2/3), or
    c^(2/3) for monotonic queries (§4.3); the ``ratio`` a release uses when none is given.

    Examples
    --------
    >>> default_ratio(4, monotonic=True) == 4 ** (2 / 3)
    True
    """
    return _svt_engine().default_ratio(c, monotonic)


def default_share(c: int, monotonic: bool = False) -> float:
    """ε1's share of ε at standard SVT's default split, Lyu, Su & Li 2017, eq. 12's
    ε1:ε2 = 1:(2c)^(2/3) (1:c^(2/3) for monotonic queries, §4.3).

    Examples
    --------
    >>> round(default_share(1, monotonic=True), 3)
    0.5
    """
    return 1.0 / (1.0 + default_ratio(c, monotonic))


# -- checks shared by the fields below (each names its parameter) ------------------------------
def _epsilon(value, ctx: Context) -> float:
    return check_epsilon(value)


def _threshold(value, ctx: Context) -> float | np.ndarray:
    """One public threshold, or one per query."""
    arr = check_finite_array(np.atleast_1d(value), "threshold")
    if arr.size == 1:
        return float(arr[0])
    if arr.size != ctx.n:
        raise ValueError(f"threshold must be a number or one per query ({ctx.n}), got {arr.size}")
    return arr


_variant = one_of("variant", lambda: _svt_engine().VARIANTS)


def _cutoff(what: str):
    def check(value, ctx: Context) -> int:
        c = check_positive_int(value, "c")
        if c > ctx.n:
            raise ValueError(f"c must be at most the number of {what} ({ctx.n}), got {c}")
        return c
    return check


def _nonnegative(name: str):
    def check(value, ctx: Context) -> float:
        return check_epsilon(value, name, allow_zero=True)
    return check


def _positive(name: str):
    def check(value, ctx: Context) -> float:
        return check_epsilon(value, name)
    return check


def _optional_ratio(value, ctx: Context) -> float | None:
    return None if value is None else check_epsilon(value, "ratio")


def _flag(value, ctx: Context) -> bool:
    return bool(value)


def _variant_options() -> tuple[tuple[str, str], ...]:
    return tuple((name, spec.title) for name, spec in _svt_engine().VARIANTS.items())


class SVTParams(Params, mechanism="svt"):
    """``"svt"``: one run of a Sparse Vector variant (Lyu, Su & Li 2017, Alg. 1-7).

    ``epsilon`` is the total: the engine takes ``epsilon3`` (the budget for publishing the
    noisy answers of ⊤ queries) out of it, and splits the rest between the threshold and the
    queries by ``ratio`` (default: the text's optimal split, Lyu, Su & Li 2017, §4.2).
    """

    variant: str = param("standard", check=_variant, label="variant",
                         control=Choice(_variant_options),
                         doc="which SVT algorithm; the broken ones are teaching only")
    epsilon: float = param(check=_epsilon, control=Epsilon(), label="ε",
                           doc="the whole budget of the run, charged")
    c: int = param(1, check=_cutoff("queries"), control=Range(1, 300, 1, integer=True),
                   label="c (cutoff)", doc="how many ⊤ answers before the run stops")
    threshold: float | np.ndarray = param(
        check=_threshold, label="threshold", doc="public: a number, or one per query",
        missing="'svt' needs the parameter threshold= (public: a number, or one per query; "
                "never computed from the data). Nothing was charged.")
    sensitivity: float = param(1.0, check=_positive("sensitivity"),
                               doc="a fact about the data: how far one row moves an answer")
    monotonic: bool = param(False, check=_flag, control=Toggle(),
                            label="monotonic queries (counts)",
                            doc="a fact about the data: all answers move the same way")
    epsilon3: float = param(0.0, check=_nonnegative("epsilon3"),
                            doc="of epsilon, the budget for publishing noisy ⊤ answers")
    threshold_sensitivity: float = param(0.0, check=_nonnegative("threshold_sensitivity"),
                                         doc="how far one row moves a data-dependent threshold")
    ratio: float | None = param(None, check=_optional_ratio,
                                doc="threshold : query budget split (None: the optimal one)")

    def check(self, shape) -> None:
        # The engine's own parameter checks (epsilon3 within the total, data-dependent
        # thresholds only for the generalized variant, ...): data-free, before the charge.
        _svt_engine()._check_params(self.variant, self.epsilon, self.c, self.sensitivity,
                                    self.monotonic, self.ratio, self.epsilon3,
                                    self.threshold_sensitivity)


def _method(value, ctx: Context) -> str:
    if value not in ("em", "svt_retr"):
        raise ValueError(f"method must be 'em' or 'svt_retr', got {value!r}")
    return value


def _retraversal(values) -> bool:
    return values["method"] == "svt_retr"


def _max_passes(value, ctx: Context) -> int:
    passes = check_positive_int(value, "max_passes")
    if passes > MAX_PASSES:
        raise ValueError(f"max_passes must be at most {MAX_PASSES}, got {passes}")
    return passes


def _retr_threshold(value, ctx: Context):
    return _threshold(value, ctx)


class TopCParams(Params, mechanism="top_c"):
    """``"top_c"``: the c highest-scoring items, by the exponential mechanism (peeling) or by
    SVT with retraversal (Lyu, Su & Li 2017, §6)."""

    method: str = param("em", check=_method,
                        control=Choice((("em", "exponential mechanism"),
                                        ("svt_retr", "SVT with retraversal"))),
                        doc="how the items are selected")
    c: int = param(1, check=_cutoff("items"), control=Range(1, 300, 1, integer=True),
                   label="c", doc="how many items to select")
    epsilon: float = param(check=_epsilon, control=Epsilon(), label="ε",
                           doc="the whole budget, charged")
    monotonic: bool = param(True, check=_flag, control=Toggle(),
                            doc="a fact about the data: all scores move the same way")
    threshold: float | np.ndarray = param(
        check=_retr_threshold, when=_retraversal,
        missing="top_c with method='svt_retr' needs a public threshold=",
        doc="SVT-ReTr only: the public starting threshold")
    increment: float = param(1.0, check=_nonnegative("increment"), when=_retraversal,
                             doc="SVT-ReTr only: how far the threshold drops per pass")
    max_passes: int = param(10_000, check=_max_passes, when=_retraversal,
                            doc=f"SVT-ReTr only: at most {MAX_PASSES} passes")


def _delta(value, ctx: Context) -> float:
    return check_probability(value, "delta")


class ReconstructionParams(Params, mechanism="reconstruction"):
    """``"reconstruction"``: the GPTT reconstruction attack (Chen 2018, Alg. 6-7); not private
    for any ε, teaching only."""

    epsilon: float = param(check=_epsilon, control=Epsilon(), label="ε",
                           doc="the ε the broken GPTT run claims")
    delta: float = param(0.05, check=_delta, doc="the attack's failure probability")
