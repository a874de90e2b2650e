"""Parameter objects: one frozen dataclass per mechanism, the single source of its parameters.

A mechanism's parameters used to be restated in several places (the spec's ``validate``, the
widget's controls, the canonical dict that keys the release cache). A :class:`Params` subclass
states each parameter once, as a field made by :func:`param`: its default, how a requested value
becomes the canonical one (``check``), what it means (``doc``), and how a widget shows it
(``control``: a UI-free hint, :class:`Epsilon`, :class:`Range`, :class:`Choice`, :class:`Toggle`).

From that one declaration:

- :meth:`Params.validate` is the spec's ``validate(request, n_or_shape) -> dict``: every
  requested name is a field or refused, a required one is present, each value is checked in
  field order, then :meth:`Params.check` checks the fields together -- all from the request and
  the dataset's *public* size or shape, before anything is read or charged;
- :meth:`Params.as_dict` is the canonical parameters: what ``run`` receives and what the door
  hashes into the release's cache key (every default spelt out);
- :func:`dpwidgets.ui.controls.control_for` builds a field's ipywidget from its hint.

Examples
--------
>>> from dpwidgets.params import Epsilon, Params, param
>>> from dpwidgets.engine.validation import check_epsilon
>>> class CountParams(Params, mechanism="count_above"):
...     epsilon: float = param(check=lambda v, ctx: check_epsilon(v), control=Epsilon(),
...                            doc="the budget, all of it")
...     threshold: float = param(0.0, check=lambda v, ctx: float(v), doc="public threshold")
>>> CountParams.validate({"epsilon": 1}, 100)
{'epsilon': 1.0, 'threshold': 0.0}
>>> CountParams.validate({"epsilon": 1, "bins": 3}, 100)
Traceback (most recent call last):
    ...
ValueError: unknown parameter(s) for 'count_above': ['bins']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

__all__ = ["Choice", "Context", "Epsilon", "NOT_GIVEN", "OMITTED", "ParamInfo", "Params",
           "REQUIRED", "Range", "Toggle", "one_of", "param"]


class _Marker:
    def __init__(self, name: str):
        self._name = name

    def __repr__(self) -> str:
        return self._name


#: The default of a parameter without one: a request must give it (``None`` counts as absent).
REQUIRED: Any = _Marker("REQUIRED")
#: The value of a conditional parameter that does not apply (its ``when`` is false): it is not
#: a parameter of this request, is refused if given, and is left out of :meth:`Params.as_dict`.
OMITTED: Any = _Marker("OMITTED")
#: The default of a parameter whose own ``check`` says what its absence means: a required one
#: refused in its turn, in field order (``raise KeyError(name)``), or one decided from the
#: fields before it or the public shape. A ``None`` given is checked like any other value.
NOT_GIVEN: Any = _Marker("NOT_GIVEN")


# -- how a widget shows a parameter (hints only: no UI code here) -----------------------------
@dataclass(frozen=True)
class Epsilon:
    """A privacy budget: a log slider with a box for the exact value.

    Examples
    --------
    >>> from dpwidgets.params import Epsilon
    >>> from dpwidgets.families.svt.params import SVTParams
    >>> isinstance(SVTParams.info("epsilon").control, Epsilon)
    True
    """


@dataclass(frozen=True)
class Range:
    """A number in [``low``, ``high``] (the range dragging covers; a typed value may lie
    outside it where ``check`` allows), in steps of ``step``; ``integer`` for counts.

    Examples
    --------
    >>> from dpwidgets.params import Range
    >>> Range(0.0, 1.0, 0.01)
    Range(low=0.0, high=1.0, step=0.01, integer=False)
    """

    low: float
    high: float
    step: float | None = None
    integer: bool = False


@dataclass(frozen=True)
class Choice:
    """One of ``options``: ``(value, label)`` pairs, or a function returning them (for options
    another module defines, read when a control is built).

    Examples
    --------
    >>> from dpwidgets.params import Choice
    >>> Choice((("em", "exponential mechanism"), ("svt_retr", "SVT with retraversal"))).pairs()[0]
    ('em', 'exponential mechanism')
    """

    options: tuple[tuple[Any, str], ...] | Callable[[], tuple[tuple[Any, str], ...]]

    def pairs(self) -> tuple[tuple[Any, str], ...]:
        """The ``(value, label)`` pairs."""
        return tuple(self.options() if callable(self.options) else self.options)


@dataclass(frozen=True)
class Toggle:
    """True or False.

    Examples
    --------
    >>> from dpwidgets.params import Toggle
    >>> Toggle()
    Toggle()
    """


@dataclass(frozen=True)
class Context:
    """What a parameter's ``check`` may use: the mechanism's name, the dataset's public size
    (1-D) or :class:`~dpwidgets.mechanism.PublicShape` (tables), and the canonical values of the
    fields checked before it. Never the data.

    Examples
    --------
    >>> from dpwidgets.params import Context
    >>> Context("svt", 100, {}).n
    100
    """

    mechanism: str
    shape: Any
    values: Mapping[str, Any]

    @property
    def n(self) -> int:
        """The public number of records (rows, queries, time steps)."""
        return int(self.shape if isinstance(self.shape, int) else self.shape[0])


@dataclass(frozen=True)
class ParamInfo:
    """The declaration of one parameter (the metadata of a :func:`param` field).

    Examples
    --------
    >>> from dpwidgets.families.svt.params import SVTParams
    >>> info = SVTParams.info("c")
    >>> info.label, info.when is None
    ('c (cutoff)', True)
    """

    check: Callable[[Any, Context], Any] | None
    doc: str
    label: str | None
    control: Epsilon | Range | Choice | Toggle | None
    when: Callable[[Mapping[str, Any]], bool] | None
    missing: str | None
    canonical: bool = True


def param(default: Any = REQUIRED, *, check: Callable[[Any, Context], Any] | None = None,
          doc: str = "", label: str | None = None,
          control: Epsilon | Range | Choice | Toggle | None = None,
          when: Callable[[Mapping[str, Any]], bool] | None = None,
          missing: str | None = None, canonical: bool = True) -> Any:
    """A field of a :class:`Params` class.

    Parameters
    ----------
    default : object, optional
        The value a request without this parameter gets (spelt out in the canonical dict);
        :data:`REQUIRED` (the default): the request must give it, checked before any value;
        :data:`NOT_GIVEN`: ``check`` receives it and decides (required in field order, or
        derived).
    check : callable, optional
        ``check(value, ctx) -> canonical value``; raises ``ValueError``/``TypeError`` naming the
        parameter. ``ctx`` is a :class:`Context`. Default: the value as given.
    doc, label : str
        What the parameter means (shown in the widget's tooltip) and its control's label
        (default: its name).
    control : Epsilon, Range, Choice or Toggle, optional
        How a widget shows it (:func:`dpwidgets.ui.controls.control_for`).
    when : callable, optional
        ``when(values) -> bool`` from the fields before it: whether the parameter applies to
        this request (``top_c``'s threshold only for ``method="svt_retr"``). When it does not,
        giving it is an unknown parameter and it is left out of the canonical dict.
    missing : str, optional
        The refusal when a required parameter is absent (default: the door's "needs the
        parameter name=").
    canonical : bool, optional
        False for a parameter of the request only: it is checked in its turn (and later fields
        may use it) but left out of the canonical dict, because another field carries what it
        said (a value range becomes the edges of the bins).

    Examples
    --------
    >>> from dpwidgets.families.svt.params import SVTParams
    >>> SVTParams.info("c").doc
    'how many ⊤ answers before the run stops'
    """
    info = ParamInfo(check, doc, label, control, when, missing, canonical)
    return dataclasses.field(default=default, metadata={"dpwidgets": info})


def one_of(name: str, options: Any, *, shown: Callable[[Any], Any] = sorted,
           strings_only: bool = False) -> Callable[[Any, Context], Any]:
    """A ``check`` for :func:`param`: the value must be one of ``options``.

    Parameters
    ----------
    name : str
        The parameter's name, as the refusal says it.
    options : collection or callable
        The accepted values, or a callable returning them when the check runs (for an engine
        imported only when first needed).
    shown : callable, optional
        How the refusal lists them (default ``sorted``).
    strings_only : bool, optional
        Refuse a value that is not a string before looking it up (an unhashable value is then
        refused with the same message instead of a ``TypeError``).

    Examples
    --------
    >>> from dpwidgets.params import one_of
    >>> check = one_of("smoother", ("median", "mean"))
    >>> check("mean", None)
    'mean'
    >>> check("mode", None)
    Traceback (most recent call last):
        ...
    ValueError: smoother must be one of ['mean', 'median'], got 'mode'
    """

    def check(value: Any, ctx: Context | None = None) -> Any:
        found = options() if callable(options) else options
        if (strings_only and not isinstance(value, str)) or value not in found:
            raise ValueError(f"{name} must be one of {shown(found)}, got {value!r}")
        return value

    return check


class Params:
    """Base of the frozen parameter object of one mechanism.

    A subclass names its mechanism and declares its fields with :func:`param`; it becomes a
    frozen, keyword-only dataclass::

        class TopCParams(Params, mechanism="top_c"):
            method: str = param("em", check=..., control=Choice(...))
            epsilon: float = param(check=..., control=Epsilon())

    Three hooks, each optional: :meth:`precheck` refuses a request as a whole before any field
    is read, :meth:`check` checks the fields together, and :meth:`decide` fills in what is
    decided once every field is known (a depth from the public row count, a plan's charge).
    ``listed_after`` says where a decided value stands in the canonical dict.

    Examples
    --------
    >>> from dpwidgets.families.svt.params import SVTParams
    >>> SVTParams.names()[:4], SVTParams.default("c")
    (('variant', 'epsilon', 'c', 'threshold'), 1)
    >>> SVTParams.validate({"epsilon": 1.0, "threshold": 5.0}, 100)["variant"]
    'standard'
    """

    mechanism: ClassVar[str]
    #: Decided fields listed after another in the canonical dict: ``{name: the field it
    #: follows}`` (a value decided from later fields is listed after them).
    listed_after: ClassVar[Mapping[str, str]] = {}

    def __init_subclass__(cls, *, mechanism: str, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.mechanism = mechanism
        dataclasses.dataclass(frozen=True, kw_only=True, eq=False)(cls)
        for f in dataclasses.fields(cls):
            if "dpwidgets" not in f.metadata:
                raise TypeError(f"{cls.__name__}.{f.name} must be declared with param()")

    # -- the declaration -------------------------------------------------------------------
    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The parameter names, in the order they are checked."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def info(cls, name: str) -> ParamInfo:
        """The declaration of parameter ``name``."""
        for f in dataclasses.fields(cls):
            if f.name == name:
                return f.metadata["dpwidgets"]
        raise KeyError(name)

    @classmethod
    def default(cls, name: str) -> Any:
        """The default of parameter ``name`` (:data:`REQUIRED` if it has none)."""
        for f in dataclasses.fields(cls):
            if f.name == name:
                return f.default
        raise KeyError(name)

    # -- from a request ----------------------------------------------------------------------
    @classmethod
    def from_request(cls, request: Mapping[str, Any], shape: Any) -> Params:
        """The checked parameters of ``request`` on a dataset of public size/shape ``shape``.

        Raises
        ------
        KeyError
            A required parameter is absent (the door turns it into a ``ParameterError`` naming
            it).
        ValueError, TypeError
            A value is not acceptable, a name is not a parameter, or the fields together are
            not (:meth:`check`).
        """
        cls.precheck(request, shape)
        given = dict(request)
        fields = dataclasses.fields(cls)
        # Every required parameter first: a request without one is refused for that, whatever
        # else is wrong with it.
        applies: dict[str, bool] = {}
        for f in fields:
            info = f.metadata["dpwidgets"]
            if f.default is REQUIRED and info.when is None and given.get(f.name) is None:
                if info.missing is not None:
                    raise ValueError(info.missing)
                raise KeyError(f.name)
        values: dict[str, Any] = {}
        for f in fields:
            info = f.metadata["dpwidgets"]
            applies[f.name] = info.when is None or bool(info.when(values))
            if not applies[f.name]:
                values[f.name] = OMITTED
                continue
            if f.name in given:
                raw = given.pop(f.name)
            elif f.default is REQUIRED:
                if info.missing is not None:
                    raise ValueError(info.missing)
                raise KeyError(f.name)
            else:
                raw = f.default
            if raw is REQUIRED or (raw is None and f.default is REQUIRED):
                raise ValueError(info.missing) if info.missing else KeyError(f.name)
            ctx = Context(cls.mechanism, shape, dict(values))
            values[f.name] = raw if info.check is None else info.check(raw, ctx)
        if given:
            raise ValueError(f"unknown parameter(s) for {cls.mechanism!r}: {sorted(given)}")
        made = cls(**values)
        made.check(shape)
        decided = made.decide(shape)
        return made.replace(**decided) if decided else made

    @classmethod
    def validate(cls, request: Mapping[str, Any], shape: Any) -> dict:
        """A spec's ``validate``: :meth:`from_request` as the canonical dict."""
        return cls.from_request(request, shape).as_dict()

    @classmethod
    def precheck(cls, request: Mapping[str, Any], shape: Any) -> None:
        """Checks on the request as a whole, made before any field (default: none); raises
        ``ValueError``. A family whose methods take different parameters refuses another
        method's parameter here, by name, before any value is read."""

    def check(self, shape: Any) -> None:
        """The checks that involve several fields (default: none); raises ``ValueError``."""

    def decide(self, shape: Any) -> Mapping[str, Any]:
        """The values decided once every field is checked, from the checked fields and the
        public size or shape only (default: none): ``{field: value}``. It may raise
        ``ValueError`` (an infeasible plan), still before anything is read or charged."""
        return {}

    # -- the canonical form ------------------------------------------------------------------
    def as_dict(self) -> dict:
        """The canonical parameters: every field that applies, defaults spelt out, in field
        order (a decided one where ``listed_after`` puts it), without the request-only ones.
        What ``run`` gets and what the door hashes into the cache key."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
               if getattr(self, f.name) is not OMITTED and f.metadata["dpwidgets"].canonical}
        for name, after in self.listed_after.items():
            if name in out and after in out:
                value = out.pop(name)
                items = list(out.items())
                at = list(out).index(after) + 1
                out = dict([*items[:at], (name, value), *items[at:]])
        return out

    def replace(self, **changes) -> Params:
        """A copy with ``changes`` (not re-checked: use :meth:`from_request` for a request)."""
        return dataclasses.replace(self, **changes)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.as_dict().items())
        return f"{type(self).__name__}({inner})"
