"""The parameters of the dynamic-histogram mechanisms (Li 2017, Ch. 4), one frozen object each.

Each field is declared once (:func:`~dpwidgets.params.param`): its default, its check against
the series' public shape ``(N, U)``, what it means, and how a widget shows it. The spec's
``validate`` is :meth:`~dpwidgets.params.Params.validate` of these classes; the canonical dict
it returns is what the engine receives and what keys the release cache.

What the seven mechanisms share (:class:`SeriesParams`):

- the series' shape is checked before any parameter (an ``(N, U)`` series with enough
  snapshots), and ``epsilon=None`` is refused as a value (the budget's own message), not as
  an absent parameter;
- ``n_times`` (N) is in every canonical dict, read off the public shape; a request naming it
  is refused as an unknown parameter;
- ``cutoff_fraction`` (C/N) is another way of giving ``cutoff``: ``cutoff``'s check reads it,
  and only ``cutoff`` is in the canonical dict.

The paced DSAT (``variant="paced"``) and the text's (``"text"``) check every steering parameter
but keep only those they use (``delta``, ``theta`` for the text's; ``gain`` for the paced):
moving θ under the paced controller is the same release, replayed for free.

Examples
--------
>>> from dpwidgets.families.dynamic.params import DSATParams
>>> p = DSATParams.validate({"epsilon": 1.0, "cardinality": 1000}, (200, 30))
>>> p["n_times"], p["cutoff"], p["variant"], p["burn_in"], "theta" in p
(200, 2, 'paced', 4, False)
>>> DSATParams.validate({"epsilon": 1.0}, (200, 30))  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
ValueError: 'dsat' needs cardinality= : the public lower bound n on the snapshot sizes ...
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping
from numbers import Real
from typing import Any

from ...engine.validation import check_epsilon, check_positive_int
from ...params import OMITTED, Choice, Context, Epsilon, Params, Range, one_of, param

__all__ = ["BudgetAbsorptionParams", "BudgetDistributionParams", "DSATParams", "DSFTParams",
           "FixedSamplingParams", "SeriesParams", "UniformBudgetParams", "WEventDSATParams"]


def _engine():
    from ...engine import dynamic

    return dynamic


# -- checks (each names its parameter, with the messages the spec always gave) -----------------
def _real(value, name: str, lo: float, hi: float, *, lo_open: bool = False,
          hi_open: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(float(value)):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    value = float(value)
    if (value < lo or (lo_open and value == lo)) or (value > hi or (hi_open and value == hi)):
        left = "(" if lo_open else "["
        right = ")" if hi_open else "]"
        raise ValueError(f"{name} must be in {left}{lo:g}, {hi:g}{right}, got {value!r}")
    return value


def _positive(value, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not (0 < float(value) < math.inf):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return float(value)


def _series_shape(shape, mechanism: str, min_times: int) -> tuple[int, int]:
    if len(shape) != 2:
        raise ValueError(f"{mechanism!r} runs on an (N, U) series of histograms, got shape {shape}")
    n_times, n_bins = (int(s) for s in shape)
    if n_times < min_times:
        raise ValueError(
            f"{mechanism!r} needs at least {min_times} snapshots (rows), the series has {n_times}"
        )
    if n_bins < 1:
        raise ValueError(f"{mechanism!r} needs at least one bin per snapshot, got shape {shape}")
    return n_times, n_bins


def _never(values: Mapping[str, Any]) -> bool:
    return False


def _epsilon(value, ctx: Context) -> float:
    return check_epsilon(value)


def _over_n(ctx: Context) -> int:
    return ctx.n


def _over_w(ctx: Context) -> int:
    return ctx.values["w"]


def _cutoff(limit_of: Callable[[Context], int], what: str):
    """C, from ``cutoff`` or from ``cutoff_fraction`` (the field before it), of N or of w."""

    def check(value, ctx: Context) -> int:
        fraction = ctx.values["cutoff_fraction"]
        limit = limit_of(ctx)
        if value is not None and fraction is not None:
            raise ValueError("give cutoff= (C) or cutoff_fraction= (C/N), not both")
        if fraction is not None:
            fraction = _real(fraction, "cutoff_fraction", 0.0, 1.0, lo_open=True)
            return max(1, int(round(fraction * limit)))
        if value is None:
            return max(1, int(round(0.01 * limit)))  # Li 2017, Table 4.2: C = 0.01 N
        cutoff = check_positive_int(value, "cutoff")
        if cutoff > limit:
            raise ValueError(f"cutoff (C) must be between 1 and {what} = {limit}, got {cutoff}")
        return cutoff

    return check


def _burn_in(limit_of: Callable[[Context], int], what: str):
    def check(value, ctx: Context) -> int:
        limit = limit_of(ctx)
        if value is None:
            return max(1, int(round(0.02 * limit)))
        burn_in = check_positive_int(value, "burn_in")
        if burn_in >= max(limit, 2):
            raise ValueError(
                f"burn_in (M) must be in [1, {what}) with {what} = {limit}, got {burn_in}")
        return burn_in

    return check


def _threshold(value, ctx: Context) -> float:
    return _real(value, "threshold", 0.0, 2.0)


def _dsft_threshold(value, ctx: Context) -> float:
    if value is None:
        raise ValueError("'dsft' needs threshold= (T in [0, 2]; about 0.025 was best on "
                         "the text's US data, Li 2017, Fig. 4.3)")
    return _real(value, "threshold", 0.0, 2.0)


_variant = one_of("variant", lambda: _engine().DSAT_VARIANTS)


def _text_only(name: str):
    """A steering parameter of the text's controller: always checked, kept for it only."""

    def check(value, ctx: Context):
        value = _positive(value, name)
        return value if ctx.values["variant"] == "text" else OMITTED

    return check


def _positive_check(name: str):
    def check(value, ctx: Context) -> float:
        return _positive(value, name)

    return check


def _gain(value, ctx: Context):
    """The paced controller's gain: checked whatever the variant, kept for the paced one."""
    gain = None if value is None else _positive(value, "gain")
    return OMITTED if ctx.values["variant"] == "text" else gain


def _cardinality(value, ctx: Context) -> int:
    if value is None:
        raise ValueError(
            f"{ctx.mechanism!r} needs cardinality= : the public lower bound n on the snapshot "
            f"sizes (the distance's sensitivity is 2/(n-1), Li 2017, Lemma 4.2.1); it is not "
            f"read off the data"
        )
    return check_positive_int(value, "cardinality", minimum=2)


def _k(value, ctx: Context) -> float | None:
    """``None``: the engine's rule (Thm 4.3.4 for DSFT and the text's DSAT, ``paced_k`` for the
    paced DSAT, 0 when C = 1). Not filled in here, so the rule stays the engine's."""
    if value is None:
        return None
    return _real(value, "k (the decision share eps1 = k*eps)", 0.0, 1.0, lo_open=True,
                 hi_open=True)


def _publisher(value, ctx: Context) -> str:
    """A registry name, or ``"auto"``: the engine picks by the public ``shape``
    (:data:`~dpwidgets.engine.dynamic.PUBLISHER_RULE`; a function of public parameters)."""
    from ...engine.histograms import PUBLISHERS

    if value == "auto":
        return value
    if not isinstance(value, str) or value not in PUBLISHERS:
        raise ValueError(
            f"publisher must be 'auto' or one of {sorted(PUBLISHERS)}, got {value!r}")
    if 1 not in PUBLISHERS[value].dims:
        raise ValueError(f"publisher {value!r} does not publish 1-D histograms")
    return PUBLISHERS[value].name


def _shape(value, ctx: Context) -> tuple[int, ...] | None:
    """The public attribute domains of one snapshot (product U), or None (not given)."""
    if value is None:
        return None
    n_bins = int(ctx.shape[1])
    if isinstance(value, str | bytes) or not isinstance(value, tuple | list):
        raise ValueError(f"shape must be a tuple of positive integers, got {value!r}")
    dims = tuple(check_positive_int(d, "shape") for d in value)
    if not dims or math.prod(dims) != n_bins:
        raise ValueError(f"shape {dims} has {math.prod(dims)} cells, but the snapshots have "
                         f"{n_bins} bins")
    return dims


def _optional_positive(name: str):
    def check(value, ctx: Context) -> float | None:
        return None if value is None else _positive(value, name)

    return check


def _reference(value, ctx: Context) -> str | None:
    if value is not None and value not in ("release", "snapshot"):
        raise ValueError(
            f"reference must be 'release' (distance to the last private release) or 'snapshot' "
            f"(to the true snapshot at the last release time), got {value!r}"
        )
    return value


def _w(value, ctx: Context) -> int:
    if value is None:
        raise ValueError("a w-event mechanism needs w= (the window length, an integer >= 1)")
    return check_positive_int(value, "w", maximum=_engine().MAX_WINDOW)


# -- the fields several mechanisms declare (one factory each: a field object is per class) -----
def _epsilon_param(doc: str = "the budget, all of it, charged (user level)"):
    return param(check=_epsilon, control=Epsilon(), label="ε", doc=doc)


def _n_times_param():
    return param(OMITTED, when=_never,
                 doc="N, the public number of snapshots: read off the shape, never requested")


def _cutoff_fraction_param(what: str = "N"):
    return param(None, canonical=False,
                 doc=f"C as a share of {what}: C = max(1, round(share · {what})); "
                     f"instead of cutoff, not with it")


def _cutoff_param(limit_of: Callable[[Context], int] = _over_n, what: str = "N"):
    return param(None, check=_cutoff(limit_of, what), control=Range(1, 500, 1, integer=True),
                 label="C (most releases)",
                 doc=f"C, the most releases{' in every window' if what == 'w' else ''}; "
                     f"default 0.01·{what} (Li 2017, Table 4.2)")


def _threshold_param():
    return param(0.5, check=_threshold, control=Range(0.0, 2.0, 0.005), label="T",
                 doc="the distance threshold in [0, 2]: the paced DSAT's on-schedule T_s, the "
                     "text's initial T_1")


def _burn_in_param(limit_of: Callable[[Context], int] = _over_n, what: str = "N"):
    return param(None, check=_burn_in(limit_of, what),
                 control=Range(1, 100, 1, integer=True), label="burn-in M",
                 doc=f"DSAT's burn-in M, in [1, {what}); default max(1, round(0.02·{what}))")


def _delta_param(check):
    return param(0.05, check=check, control=Range(0.005, 0.5, 0.005), label="δ",
                 doc="the text's controller: the set point of the release ratio "
                     "(Li 2017, eq. 4.2.2, Table 4.2)")


def _theta_param(check):
    return param(0.5, check=check, control=Range(0.01, 2.0, 0.01), label="θ",
                 doc="the text's controller: the proportional gain (Li 2017, eq. 4.2.5, "
                     "Table 4.2)")


def _cardinality_param():
    return param(None, check=_cardinality,
                 doc="a fact about the data: the public lower bound n on the snapshot sizes "
                     "(the distance's sensitivity is 2/(n-1), Li 2017, Lemma 4.2.1)")


def _k_param():
    return param(None, check=_k, control=Range(0.01, 0.99, 0.01), label="k = ε1/ε",
                 doc="the decision share ε1 = kε; None: the engine's rule (Li 2017, Thm 4.3.4)")


def _publisher_param():
    return param("identity", check=_publisher,
                 doc="the histogram publisher of each release ('auto': by the public shape)")


def _decision_ratio_param():
    return param(None, check=_optional_positive("decision_ratio"),
                 doc="the SVT's threshold : query budget split (None: the engine's)")


def _reference_param(default: str):
    return param(None, check=_reference,
                 doc=f"what the distance is measured to: 'release' (the last private release) "
                     f"or 'snapshot' (None: {default})")


def _shape_param():
    return param(None, check=_shape,
                 doc="the public attribute domains of one snapshot (their product is U)")


def _w_param():
    return param(None, check=_w, control=Range(2, 1000, 1, integer=True), label="w (window)",
                 doc="the window of w-event privacy: epsilon is spent per w consecutive "
                     "snapshots, ⌈N/w⌉·epsilon at user level")


class SeriesParams:
    """What the parameters of every mechanism on an ``(N, U)`` series share (a mixin of the
    :class:`~dpwidgets.params.Params` classes below).

    Before any parameter: the series' shape (``min_times`` snapshots at least, one bin), and
    ``epsilon=None`` refused with the budget's own message. After them: ``n_times``, read off
    the public shape, and ``cutoff_fraction`` left out of the canonical dict (``cutoff`` holds
    the C it gave).

    Examples
    --------
    >>> from dpwidgets.families.dynamic.params import FixedSamplingParams
    >>> FixedSamplingParams.validate({"epsilon": 1.0, "cutoff_fraction": 0.05}, (200, 30))
    {'epsilon': 1.0, 'n_times': 200, 'cutoff': 10, 'publisher': 'identity', 'shape': None}
    >>> FixedSamplingParams.validate({"epsilon": 1.0, "n_times": 5}, (200, 30))
    Traceback (most recent call last):
        ...
    ValueError: unknown parameter(s) for 'dynamic_fixed': ['n_times']
    """

    #: The fewest snapshots the mechanism runs on.
    min_times = 1

    @classmethod
    def precheck(cls, request: Mapping[str, Any], shape: Any) -> None:
        """The series' shape, then an ``epsilon`` of ``None`` (a value the budget refuses)."""
        _series_shape(shape, cls.mechanism, cls.min_times)
        if "epsilon" in request and request["epsilon"] is None:
            check_epsilon(None)

    def decide(self, shape: Any) -> dict:
        """``n_times``: the public number of snapshots, read off the shape."""
        return {"n_times": int(shape[0])}


_VARIANT_OPTIONS = (("paced", "paced (engine default)"), ("text", "as printed (Li 2017, Alg. 8)"))


class DSATParams(SeriesParams, Params, mechanism="dsat"):
    """``"dsat"``: DSAT, distance-based sampling with an adaptive threshold (Li 2017, Alg. 8),
    user level.

    ``variant="paced"`` (the engine's controller: the threshold follows the release count's lag
    behind the schedule C·t/N) or ``"text"`` (Alg. 8 as printed: the P term of eqs.
    4.2.2-4.2.5, with ``delta`` and ``theta``).

    Examples
    --------
    >>> from dpwidgets.families.dynamic.params import DSATParams
    >>> p = DSATParams.validate({"epsilon": 1.0, "cardinality": 1000, "variant": "text",
    ...                          "theta": 0.3, "cutoff": 5}, (200, 30))
    >>> p["cutoff"], p["delta"], p["theta"], "gain" in p
    (5, 0.05, 0.3, False)
    """

    min_times = 2
    epsilon: float = _epsilon_param()
    n_times: int = _n_times_param()
    cutoff_fraction: float | None = _cutoff_fraction_param()
    cutoff: int = _cutoff_param()
    variant: str = param("paced", check=_variant, control=Choice(_VARIANT_OPTIONS),
                         label="DSAT controller",
                         doc="the threshold's controller: the engine's paced one or the text's")
    threshold: float = _threshold_param()
    burn_in: int = _burn_in_param()
    delta: float = _delta_param(_text_only("delta"))
    theta: float = _theta_param(_text_only("theta"))
    gain: float | None = param(None, check=_gain,
                               doc="the paced controller's gain (None: the engine's)")
    cardinality: int = _cardinality_param()
    k: float | None = _k_param()
    publisher: str = _publisher_param()
    shape: tuple[int, ...] | None = _shape_param()
    decision_ratio: float | None = _decision_ratio_param()
    reference: str | None = _reference_param("the variant's")


class DSFTParams(SeriesParams, Params, mechanism="dsft"):
    """``"dsft"``: DSFT, distance-based sampling with a fixed threshold T (Li 2017, Alg. 7),
    user level.

    Examples
    --------
    >>> from dpwidgets.families.dynamic.params import DSFTParams
    >>> DSFTParams.validate({"epsilon": 1.0, "cardinality": 1000, "threshold": 0.05},
    ...                     (200, 30))["threshold"]
    0.05
    """

    min_times = 2
    epsilon: float = _epsilon_param()
    n_times: int = _n_times_param()
    cutoff_fraction: float | None = _cutoff_fraction_param()
    cutoff: int = _cutoff_param()
    threshold: float = param(None, check=_dsft_threshold, control=Range(0.0, 2.0, 0.005),
                             label="T", doc="T in [0, 2], public (no default)")
    cardinality: int = _cardinality_param()
    k: float | None = _k_param()
    publisher: str = _publisher_param()
    shape: tuple[int, ...] | None = _shape_param()
    decision_ratio: float | None = _decision_ratio_param()
    reference: str | None = _reference_param("the engine's")


class WEventDSATParams(SeriesParams, Params, mechanism="dsat_w_event"):
    """``"dsat_w_event"``: DSAT under w-event privacy (Li 2017, Alg. 9): ``epsilon`` for every
    window of ``w`` snapshots, at most C releases in each, the text's controller.

    Examples
    --------
    >>> from dpwidgets.families.dynamic.params import WEventDSATParams
    >>> p = WEventDSATParams.validate({"epsilon": 0.5, "cardinality": 1000, "w": 50},
    ...                               (200, 30))
    >>> p["w"], p["cutoff"], p["burn_in"]
    (50, 1, 1)
    """

    min_times = 2
    epsilon: float = _epsilon_param("the budget of every window of w snapshots (⌈N/w⌉·epsilon "
                                    "charged at user level)")
    n_times: int = _n_times_param()
    w: int = _w_param()
    cutoff_fraction: float | None = _cutoff_fraction_param("w")
    cutoff: int = _cutoff_param(_over_w, "w")
    threshold: float = _threshold_param()
    burn_in: int = _burn_in_param(_over_w, "w")
    delta: float = _delta_param(_positive_check("delta"))
    theta: float = _theta_param(_positive_check("theta"))
    cardinality: int = _cardinality_param()
    k: float | None = _k_param()
    publisher: str = _publisher_param()
    shape: tuple[int, ...] | None = _shape_param()


class FixedSamplingParams(SeriesParams, Params, mechanism="dynamic_fixed"):
    """``"dynamic_fixed"``: C evenly spaced snapshots with ε/C each (Li 2017, §4.1.4).

    Examples
    --------
    >>> from dpwidgets.families.dynamic.params import FixedSamplingParams
    >>> FixedSamplingParams.validate({"epsilon": 1.0}, (200, 30))["cutoff"]  # 0.01 N
    2
    """

    epsilon: float = _epsilon_param()
    n_times: int = _n_times_param()
    cutoff_fraction: float | None = _cutoff_fraction_param()
    cutoff: int = _cutoff_param()
    publisher: str = _publisher_param()
    shape: tuple[int, ...] | None = _shape_param()


class UniformBudgetParams(SeriesParams, Params, mechanism="dynamic_uniform"):
    """``"dynamic_uniform"``: every snapshot with ε/N (Li 2017, §4.1.4, the baseline).

    Examples
    --------
    >>> from dpwidgets.families.dynamic.params import UniformBudgetParams
    >>> UniformBudgetParams.validate({"epsilon": 1.0, "shape": (6, 5)}, (200, 30))["shape"]
    (6, 5)
    """

    epsilon: float = _epsilon_param()
    n_times: int = _n_times_param()
    publisher: str = _publisher_param()
    shape: tuple[int, ...] | None = _shape_param()


@dataclasses.dataclass(frozen=True, kw_only=True, eq=False, repr=False)
class _WindowBaseline:
    """The parameters of the two w-event baselines of Kellaris, Papadopoulos, Xiao & Papadias
    2014 (budget distribution and absorption): the same five, in this order."""

    epsilon: float = _epsilon_param("the budget of every window of w snapshots")
    n_times: int = _n_times_param()
    w: int = _w_param()
    publisher: str = _publisher_param()
    shape: tuple[int, ...] | None = _shape_param()


class BudgetDistributionParams(_WindowBaseline, SeriesParams, Params, mechanism="dynamic_bd"):
    """``"dynamic_bd"``: budget distribution, w-event (Kellaris, Papadopoulos, Xiao &
    Papadias 2014).

    Examples
    --------
    >>> from dpwidgets.families.dynamic.params import BudgetDistributionParams
    >>> BudgetDistributionParams.validate({"epsilon": 1.0}, (200, 30))
    Traceback (most recent call last):
        ...
    ValueError: a w-event mechanism needs w= (the window length, an integer >= 1)
    """


class BudgetAbsorptionParams(_WindowBaseline, SeriesParams, Params, mechanism="dynamic_ba"):
    """``"dynamic_ba"``: budget absorption, w-event (Kellaris, Papadopoulos, Xiao & Papadias
    2014).

    Examples
    --------
    >>> from dpwidgets.families.dynamic.params import BudgetAbsorptionParams
    >>> BudgetAbsorptionParams.validate({"epsilon": 1.0, "w": 20}, (200, 30))["w"]
    20
    """
