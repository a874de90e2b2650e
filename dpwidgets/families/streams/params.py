"""The parameters of the streams family's mechanisms, one frozen object each.

Each field is declared once (:func:`~dpwidgets.params.param`): its default, its check against
the dataset's public size (a stream's number of steps, or a hierarchy's (states, steps)), what
it means, and how a widget shows it. The spec's ``validate`` is
:meth:`~dpwidgets.params.Params.validate` of these classes; the canonical dict it returns is
what the engine receives and what keys the release cache.

Three of PeGaSus's parameters take their default from the chosen set of defaults
(``defaults="new"`` or ``"text"``, :data:`DEFAULTS`): their declared default is
:data:`FROM_DEFAULTS`, and the canonical dict spells out the value of the chosen set.

Examples
--------
>>> from dpwidgets.families.streams.params import PegasusParams
>>> p = PegasusParams.validate({"epsilon": 0.5, "defaults": "text"}, 1000)
>>> p["perturber_share"], p["threshold_share"], p["theta"]
(0.8, 0.5, None)
>>> PegasusParams.validate({"epsilon": 0.5, "smoother": "median"}, 1000)  # doctest: +ELLIPSIS
Traceback (most recent call last):
    ...
ValueError: 'pegasus' takes no smoother: a smoother is post-processing: ...
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from numbers import Real
from types import MappingProxyType
from typing import Any

from ...engine import streams as st
from ...engine.validation import check_epsilon, check_positive_int
from ...params import Choice, Context, Epsilon, Params, Range, one_of, param

__all__ = ["DEFAULTS", "DEFAULT_PERTURBER_SHARE", "FROM_DEFAULTS", "HIERARCHY_METHODS",
           "HierarchicalPegasusParams", "LaplaceStreamParams", "PegasusParams", "SMOOTHERS",
           "TEXT_PERTURBER_SHARE", "hierarchy_of"]

#: The two sets of defaults of PeGaSus, by name: ``"new"`` (this package's) and ``"text"``
#: (Chen 2018, §5.6.1); each gives ``perturber_share``, ``theta_times_eps_g`` (θ·ε_g),
#: ``threshold_share`` and ``smoother`` (:data:`dpwidgets.engine.streams.DEFAULTS`).
DEFAULTS = st.DEFAULTS
#: The smoothers of a PeGaSus release, by name, with what each does (Chen 2018, §5.3.3, and
#: the adaptive window; :data:`dpwidgets.engine.streams.SMOOTHERS`).
SMOOTHERS = st.SMOOTHERS
#: ε_p/ε by default (``defaults="new"``: ε_g = 0.05ε).
DEFAULT_PERTURBER_SHARE = float(st.DEFAULTS["new"]["perturber_share"])
#: ε_p/ε of Chen 2018, §5.6.1 (ε_p = 0.8ε, ε_g = 0.2ε; ``defaults="text"``).
TEXT_PERTURBER_SHARE = float(st.DEFAULTS["text"]["perturber_share"])

#: The hierarchy methods of Chen 2018, §5.5-5.6.4, by parameter value.
HIERARCHY_METHODS = MappingProxyType(
    {
        "phs_pegasus": "PHS-PGS: PeGaSus with pruning (Chen 2018, Alg. 18)",
        "hs_pegasus": "HS-PGS: PeGaSus with ε/h on every aggregated stream (Chen 2018, §5.5.1)",
        "hs_laplace": "HS-LM: the Laplace mechanism with ε/h on every aggregated stream",
    }
)

_SMOOTHER_HINT = (
    "a smoother is post-processing: every 'pegasus' release carries the estimates of all "
    f"smoothers ({', '.join(st.SMOOTHERS)}) in output['smoothed']; choose one afterwards with "
    "dpwidgets.families.streams.spec.estimates(output, smoother) at no cost"
)


class _FromDefaults:
    def __repr__(self) -> str:
        return "FROM_DEFAULTS"


#: The declared default of a parameter whose value comes from the chosen set of defaults
#: (the ``defaults`` parameter, :data:`DEFAULTS`); never a canonical value.
FROM_DEFAULTS: Any = _FromDefaults()


# -- checks (each names its parameter, with the messages the spec always gave) -----------------
def _real(value, name: str, *, lower: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, Real) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    if lower is not None and value < lower:
        raise ValueError(f"{name} must be >= {lower:g}, got {value!r}")
    return float(value)


def _open_fraction(value, name: str) -> float:
    value = _real(value, name)
    if not 0.0 < value < 1.0:
        raise ValueError(f"{name} must be in the open interval (0, 1), got {value!r}")
    return value


def _epsilon(value, ctx: Context) -> float:
    return check_epsilon(value)


_defaults = one_of("defaults", lambda: st.DEFAULTS, strings_only=True)


def _chosen(value, ctx: Context, name: str):
    """``value``, or the chosen set of defaults' value of ``name`` when none was given."""
    return st.DEFAULTS[ctx.values["defaults"]][name] if value is FROM_DEFAULTS else value


def _perturber_share(value, ctx: Context) -> float:
    return _open_fraction(_chosen(value, ctx, "perturber_share"), "perturber_share (ε_p/ε)")


def _threshold_share(value, ctx: Context) -> float:
    return _open_fraction(_chosen(value, ctx, "threshold_share"),
                          "threshold_share (ε_g's part on the Grouper's threshold)")


def _theta(value, ctx: Context) -> float | None:
    return None if value is None else _real(value, "theta (a deviation threshold)", lower=0.0)


def _smoother(value) -> str:
    if not isinstance(value, str) or value not in st.SMOOTHERS:
        raise ValueError(f"smoother must be one of {sorted(st.SMOOTHERS)}, got {value!r}")
    return value


def _smoother_field(value, ctx: Context) -> str:
    return _smoother(_chosen(value, ctx, "smoother"))


def _k(value, ctx: Context) -> int:
    return check_positive_int(value, "k (backward-smoothing steps)", minimum=0,
                              maximum=st.MAX_WINDOW)


_method = one_of("method", lambda: HIERARCHY_METHODS)


def _parents(value, ctx: Context) -> list[int]:
    return hierarchy_of(value, ctx.n).parents.tolist()


def _epsilon_pr(value, ctx: Context) -> float | None:
    if value is None:
        return None
    eps_pr = check_epsilon(value, "epsilon_pr")
    epsilon = ctx.values["epsilon"]
    if not eps_pr < epsilon:
        raise ValueError(f"epsilon_pr must be < epsilon = {epsilon}, got {eps_pr!r}")
    return eps_pr


def _beta(value, ctx: Context) -> float | None:
    return None if value is None else _real(value, "beta (pruning threshold)")


def _refuse_a_none_epsilon(request: Mapping[str, Any]) -> None:
    # epsilon=None is a value, refused as one (by its check), not an absent parameter.
    if "epsilon" in request and request["epsilon"] is None:
        check_epsilon(None)


def hierarchy_of(parents, n_states: int) -> st.Hierarchy:
    """The public hierarchy of a release: from ``parents``, or the complete binary tree over
    ``n_states`` leaves when ``parents`` is None.

    Parameters
    ----------
    parents : sequence of int or None
        The tree as a parent array (the root's parent is -1); its leaves are the data's rows,
        in increasing node id.
    n_states : int
        The public number of states (rows of the data).

    Returns
    -------
    dpwidgets.engine.streams.Hierarchy

    Raises
    ------
    ValueError
        Its leaves are not one per state, or no parents are given and ``n_states`` is not a
        power of 2.

    Examples
    --------
    >>> from dpwidgets.families.streams.params import hierarchy_of
    >>> hierarchy_of(None, 4).parents.tolist()
    [-1, 0, 0, 1, 1, 2, 2]
    >>> hierarchy_of([-1, 0, 0, 1, 1], 3).leaves.tolist()
    [2, 3, 4]
    """
    if parents is None:
        if n_states & (n_states - 1):
            raise ValueError(
                f"no parents= given and the number of states ({n_states}) is not a power of 2, "
                f"so there is no default binary hierarchy: pass parents= (a parent array)"
            )
        return st.Hierarchy.binary(n_states)
    h = st.Hierarchy.from_parents(parents)
    if h.leaves.size != n_states:
        raise ValueError(
            f"parents must describe a tree with one leaf per state (row of the data): "
            f"{h.leaves.size} leaves for {n_states} states"
        )
    return h


_DEFAULTS_CHOICE = Choice((("new", "new (engine)"), ("text", "Chen 2018, §5.6.1")))
_DEFAULTS_DOC = ("the set of defaults that fills perturber_share, theta and threshold_share "
                 "(and the smoother): 'new' (this package's) or 'text' (Chen 2018, §5.6.1)")
_THETA_DOC = ("the Grouper's public deviation threshold θ (None: θ·ε_g = 160, or 5 with the "
              "text's defaults)")
_THRESHOLD_SHARE_DOC = ("of ε_g, the part spent on each group's noisy threshold (the rest on "
                        "its deviation tests)")


class PegasusParams(Params, mechanism="pegasus"):
    """``"pegasus"``: PeGaSus on one counting stream (Chen 2018, Alg. 15).

    ``epsilon`` is the total: the Perturber spends ε_p = ``perturber_share``·ε, the Grouper
    (Alg. 16) the rest. No ``smoother``: a smoother is post-processing, and every release
    carries the estimates of all of them (choose one afterwards, for free, with
    :func:`~dpwidgets.families.streams.spec.estimates`).

    Examples
    --------
    >>> PegasusParams.validate({"epsilon": 0.1}, 500)["perturber_share"]
    0.95
    """

    epsilon: float = param(check=_epsilon, control=Epsilon(), label="ε",
                           doc="the release's whole budget ε = ε_p + ε_g, charged")
    defaults: str = param("new", check=_defaults, control=_DEFAULTS_CHOICE, label="defaults",
                          doc=_DEFAULTS_DOC)
    perturber_share: float = param(FROM_DEFAULTS, check=_perturber_share,
                                   control=Range(0.05, 0.95, 0.05), label="ε_p / ε",
                                   doc="ε_p/ε, the Perturber's share of ε (text: 0.8)")
    theta: float | None = param(None, check=_theta, doc=_THETA_DOC)
    threshold_share: float = param(FROM_DEFAULTS, check=_threshold_share,
                                   doc=_THRESHOLD_SHARE_DOC)

    @classmethod
    def precheck(cls, request: Mapping[str, Any], shape: Any) -> None:
        """A smoother is refused first, whatever else the request holds: it is no parameter
        of a release but a choice made afterwards, for free."""
        if "smoother" in request:
            raise ValueError(f"'pegasus' takes no smoother: {_SMOOTHER_HINT}")
        _refuse_a_none_epsilon(request)

    def check(self, shape: Any) -> None:
        if shape < 1:
            raise ValueError("a stream needs at least one time step")


class LaplaceStreamParams(Params, mechanism="laplace_stream"):
    """``"laplace_stream"``: the baseline LM of Chen 2018, §5.6.1 (ĉ_t = c_t + Lap(1/ε)), or
    with ``k > 0`` BS_k, the trailing mean of the last k+1 Laplace outputs
    (post-processing).

    Examples
    --------
    >>> LaplaceStreamParams.validate({"epsilon": 0.1, "k": 3}, 500)
    {'epsilon': 0.1, 'k': 3}
    """

    epsilon: float = param(check=_epsilon, control=Epsilon(), label="ε",
                           doc="the budget of every step's Laplace count, charged")
    k: int = param(0, check=_k, label="k",
                   doc="BS_k: the estimates are the mean of the last k+1 Laplace outputs "
                       "(0: LM itself)")

    @classmethod
    def precheck(cls, request: Mapping[str, Any], shape: Any) -> None:
        """epsilon=None is refused by epsilon's check, as a value."""
        _refuse_a_none_epsilon(request)

    def check(self, shape: Any) -> None:
        if shape < 1:
            raise ValueError("a stream needs at least one time step")


def _pegasus_method(values: Mapping[str, Any]) -> bool:
    return values["method"] != "hs_laplace"


def _pruning(values: Mapping[str, Any]) -> bool:
    return values["method"] == "phs_pegasus"


#: The parameters of PHS-PGS only, and of the PeGaSus methods only, in the order the spec
#: refuses them for another method.
_PRUNING_ONLY = ("epsilon_pr", "beta")
_PEGASUS_ONLY = ("smoother", "theta", "defaults", "threshold_share")


class HierarchicalPegasusParams(Params, mechanism="hierarchical_pegasus"):
    """``"hierarchical_pegasus"``: streams over a public hierarchy of aggregated states
    (Chen 2018, §5.5): ``method="phs_pegasus"`` (Alg. 18, with pruning), ``"hs_pegasus"``
    (HS-PGS) or ``"hs_laplace"`` (HS-LM).

    The data is a (states × steps) array; ``parents`` is the tree over its rows (default: the
    complete binary tree when the number of states is a power of 2). The PeGaSus parameters
    apply to the two PeGaSus methods, ``epsilon_pr`` and ``beta`` to PHS-PGS only: another
    method's parameter is refused by name, after the parameters that apply are checked.

    Examples
    --------
    >>> HierarchicalPegasusParams.validate({"epsilon": 0.5, "method": "hs_laplace"}, (4, 10))
    {'epsilon': 0.5, 'method': 'hs_laplace', 'parents': [-1, 0, 0, 1, 1, 2, 2]}
    """

    epsilon: float = param(check=_epsilon, control=Epsilon(), label="ε",
                           doc="the whole budget, over every level of the hierarchy, charged")
    method: str = param("phs_pegasus", check=_method,
                        control=Choice(tuple((name, text.split(":")[0])
                                             for name, text in HIERARCHY_METHODS.items())),
                        label="method", doc="PHS-PGS (with pruning), HS-PGS or HS-LM")
    parents: list[int] = param(None, check=_parents,
                               doc="the public tree as a parent array, leaves = the data's "
                                   "rows (None: the complete binary tree)")
    defaults: str = param("new", check=_defaults, control=_DEFAULTS_CHOICE, label="defaults",
                          when=_pegasus_method, doc=_DEFAULTS_DOC)
    smoother: str = param(FROM_DEFAULTS, check=_smoother_field, when=_pegasus_method,
                          control=Choice((("adaptive", "adaptive window"), ("median", "median"),
                                          ("average", "average"),
                                          ("james_stein", "James-Stein"))),
                          label="smoother", doc="each node's smoother (post-processing of "
                                                "its noisy counts)")
    theta: float | None = param(None, check=_theta, when=_pegasus_method, doc=_THETA_DOC)
    threshold_share: float = param(FROM_DEFAULTS, check=_threshold_share, when=_pegasus_method,
                                   doc=_THRESHOLD_SHARE_DOC)
    epsilon_pr: float | None = param(None, check=_epsilon_pr, when=_pruning,
                                     doc="PHS-PGS only: the pruning budget, part of epsilon")
    beta: float | None = param(None, check=_beta, when=_pruning,
                               doc="PHS-PGS only: the pruning threshold (None: 2h/ε_pr)")

    @classmethod
    def precheck(cls, request: Mapping[str, Any], shape: Any) -> None:
        """Refuse another method's parameter by name ("beta is a parameter of
        method='phs_pegasus' only").

        The refusal comes after the checks of the parameters that apply (a request with two
        faults is refused for the first, as the spec always did): those are checked first,
        on the request without the other method's parameters and without unknown names.
        """
        n_states, _ = int(shape[0]), int(shape[1])  # (states × steps), as the spec always read it
        _refuse_a_none_epsilon(request)
        method = request.get("method", "phs_pegasus")
        if not isinstance(method, str) or method not in ("hs_pegasus", "hs_laplace"):
            return
        foreign = [name for name in _PRUNING_ONLY if name in request]
        if method == "hs_laplace":
            foreign += [name for name in _PEGASUS_ONLY if name in request]
        if not foreign:
            return
        applies = set(cls.names()) - set(_PRUNING_ONLY)
        if method == "hs_laplace":
            applies -= set(_PEGASUS_ONLY)
        # One step is enough for the parameters' checks: the steps are checked last.
        cls.from_request({k: v for k, v in request.items() if k in applies},
                         (n_states, 1))
        name = foreign[0]
        if name in _PRUNING_ONLY:
            raise ValueError(f"{name} is a parameter of method='phs_pegasus' only")
        raise ValueError(f"{name} is a parameter of the PeGaSus methods, not of 'hs_laplace'")

    def check(self, shape: Any) -> None:
        if int(shape[1]) < 1:
            raise ValueError("the streams need at least one time step")
