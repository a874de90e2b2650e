"""The mechanism contract: what every releasable algorithm declares before it may touch data.

A :class:`Mechanism` is a *spec*, not code that runs on its own: the :class:`~dpwidgets.Session`
(the door) reads it to decide everything that can be decided without the data -- the canonical
parameters, the cost, the guarantee, whether the mode and the data owner allow it -- before the
data is read or any noise is drawn. Each algorithm family declares its mechanisms in its own
folder's ``spec`` module (``dpwidgets/families/<family>/spec.py``, :mod:`dpwidgets.families`)
and registers them with :func:`register_mechanism`.

Facts about the data
--------------------
Sensitivity, monotonicity, domains, snapshot sizes and the like are *facts about the data*: the
data owner declares them with the dataset (``Session.add_dataset(..., facts={...})``); an analyst
cannot lower them. A mechanism lists the facts it relies on in ``facts``, each with the direction
in which an analyst's own value is still safe and its type (:class:`Fact`, :class:`FactKind`:
a bool, a positive finite number, an integer of at least k, ...). A declared value and an
analyst's value are both checked against that type, so ``"false"`` is not a bool and ``-1`` is
not a sensitivity.

Nothing reads the data before the charge
----------------------------------------
A spec decides its refusals from the parameters and the public shape alone (``validate``,
``cost``, ``private``); there is no hook that sees the data before the ledger is charged. A
mechanism that must treat some records specially (a personalized-DP record whose own budget
is below what a release gives it) does so inside ``run``, by a rule applied to every record
the same way, and states it in its guarantee.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

__all__ = ["same_value", "BOOL", "Fact", "FactKind", "NONNEGATIVE", "POSITIVE", "MECHANISMS",
           "Mechanism", "Overdraft", "PublicShape", "Release", "always_private", "epsilon_cost",
           "integer_at_least", "is_builtin", "publisher_is_private", "register_mechanism",
           "registering_builtins"]


class PublicShape(tuple):
    """A dataset's public shape, as a tuple, carrying its public schema (``columns``, ``dtypes``;
    ``None`` unless the dataset was added as a DataFrame). What ``validate`` of a table
    mechanism receives: enough to check column names before anything is charged.

    Examples
    --------
    >>> from dpwidgets.mechanism import PublicShape
    >>> shape = PublicShape((100, 3), columns=("age", "income", "y"))
    >>> shape, shape[0], shape.columns
    ((100, 3), 100, ('age', 'income', 'y'))
    """

    columns: tuple[str, ...] | None
    dtypes: tuple[str, ...] | None
    #: Per column, the (low, high) range its owner declared (``None`` where none was), or
    #: ``None`` for a dataset declared without ranges.
    ranges: tuple | None

    def __new__(cls, shape, columns=None, dtypes=None, ranges=None):
        self = super().__new__(cls, (int(k) for k in shape))
        self.columns = None if columns is None else tuple(columns)
        self.dtypes = None if dtypes is None else tuple(dtypes)
        self.ranges = None if ranges is None else tuple(ranges)
        return self


@dataclass(frozen=True)
class FactKind:
    """The type of a fact: ``parse(value)`` returns the canonical value or raises
    ``ValueError``; ``text`` says what is accepted ("a positive finite number")."""

    text: str
    parse: Callable[[Any], Any]

    def __call__(self, name: str, value: Any) -> Any:
        """The canonical value of fact ``name``, or ``ValueError`` naming it."""
        try:
            return self.parse(value)
        except (TypeError, ValueError, OverflowError):
            pass
        shown = repr(value)
        shown = shown if len(shown) <= 60 else shown[:57] + "..."
        raise ValueError(f"fact {name!r} must be {self.text}, got {shown}") from None


def _is_real(value: Any) -> bool:
    return isinstance(value, int | float | np.integer | np.floating) and not isinstance(
        value, bool | np.bool_)


def _bool(value: Any) -> bool:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    raise ValueError


def _real(low: float, strict: bool) -> Callable[[Any], float]:
    def parse(value: Any) -> float:
        if not _is_real(value):
            raise ValueError
        x = float(value)
        if not math.isfinite(x) or x < low or (strict and x == low):
            raise ValueError
        return x
    return parse


def integer_at_least(k: int) -> FactKind:
    """An integer ``>= k`` (not a bool, not a float; numpy integers are fine).

    Examples
    --------
    >>> from dpwidgets.mechanism import integer_at_least
    >>> rows = integer_at_least(2)
    >>> rows.text, rows.parse(3)
    ('an integer >= 2', 3)
    """
    def parse(value: Any) -> int:
        if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
            raise ValueError
        if int(value) < k:
            raise ValueError
        return int(value)
    return FactKind(f"an integer >= {k}", parse)


#: ``True`` or ``False`` (a bool: the string ``"false"`` is not one).
BOOL = FactKind("True or False (a bool)", _bool)
#: A finite number ``> 0`` (a sensitivity).
POSITIVE = FactKind("a finite number > 0", _real(0.0, strict=True))
#: A finite number ``>= 0``.
NONNEGATIVE = FactKind("a finite number >= 0", _real(0.0, strict=False))


@dataclass(frozen=True)
class Fact:
    """A fact about the data that a mechanism relies on.

    Parameters
    ----------
    safe : {"at_least", "at_most", "equal"}
        Which analyst values are still safe in analyst mode: ``"at_least"`` the declared value
        (a larger sensitivity only adds noise), ``"at_most"`` (a smaller lower bound on a
        snapshot size; ``monotonic=False`` when ``True`` was declared), ``"equal"`` (domains).
    default : object, optional
        The value assumed when the owner declared nothing (``None``: the owner must declare it
        before an analyst may release).
    check : callable, optional
        ``check(data, value) -> bool``: whether ``data`` satisfies the declared ``value``;
        :meth:`Session.add_dataset` runs it once, for the owner, so that no release can later
        fail on the data because a declaration was false.
    kind : FactKind, optional
        The fact's type (:data:`BOOL`, :data:`POSITIVE`, :func:`integer_at_least`, ...): every
        declared value and every analyst's value is parsed by it, and refused with an error
        naming the fact if it is not one. ``None``: any value (third-party mechanisms only;
        every built-in fact has a kind).
    """

    safe: Literal["at_least", "at_most", "equal"] = "equal"
    default: Any = None
    check: Callable[[np.ndarray, Any], bool] | None = None
    kind: FactKind | None = None

    def parse(self, name: str, value: Any) -> Any:
        """``value`` as this fact's canonical value; ``ValueError`` naming ``name`` if it is
        not of the fact's kind."""
        return value if self.kind is None else self.kind(name, value)

    def allows(self, declared: Any, asked: Any) -> bool:
        """Whether an analyst's ``asked`` value is as safe as the ``declared`` one."""
        if self.safe == "at_least":
            return bool(asked >= declared)
        if self.safe == "at_most":
            return bool(asked <= declared)
        return same_value(asked, declared)


def same_value(a: Any, b: Any) -> bool:
    """Whether two declared values are the same: mappings key by key, sequences and arrays
    element by element, anything else by ``==`` (what a fact's ``"equal"`` rule compares, and
    what a client leaves out of a request because the owner declared it already).

    Examples
    --------
    >>> same_value({"a": [1, 2]}, {"a": (1, 2)})
    True
    """
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return set(a) == set(b) and all(same_value(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple | np.ndarray) or isinstance(b, list | tuple | np.ndarray):
        try:
            return bool(np.array_equal(np.asarray(a), np.asarray(b)))
        except (TypeError, ValueError):
            return False
    return bool(a == b)


_same = same_value  # its earlier, private name


def epsilon_cost(p: dict) -> float:
    """The usual cost: the ``epsilon`` parameter, all of it (the proof spends exactly that)."""
    return p["epsilon"]


def always_private(p: dict) -> bool:
    """The usual claim: the mechanism is DP for every valid parameter."""
    return True


def publisher_is_private(p: dict) -> bool:
    """A ``private`` claim for a mechanism that publishes histograms: whether the publisher its
    canonical parameters name (if any) is differentially private.

    A spec's ``private(p)`` is false as soon as one of its parts is not DP: the published
    calibration of DAWA (Li, Hay, Miklau & Wang 2014), registered for teaching under a name that
    says so, makes any release that uses it a refusal in analyst mode (nothing charged).

    Examples
    --------
    >>> from dpwidgets.mechanism import publisher_is_private
    >>> publisher_is_private({"publisher": "hb"}), publisher_is_private({"epsilon": 1.0})
    (True, True)
    """
    from .engine.histograms import PUBLISHERS

    name = p.get("publisher")
    publisher = PUBLISHERS.get(name) if isinstance(name, str) else None
    return publisher is None or bool(getattr(publisher, "private", True))


@dataclass(frozen=True)
class Mechanism:
    """A mechanism :meth:`Session.release` can run.

    Attributes
    ----------
    name : str
        The name releases ask for.
    validate : callable
        ``validate(params, n_or_shape) -> dict``: the canonical parameters (every default spelt
        out) from the request and the dataset's *public* size (1-D) or shape (``table=True``).
        Raises ``ValueError``/``TypeError`` naming the argument.
    cost : callable
        ``cost(p) -> float``: exactly what the proof spends, charged before the run (default:
        ``p["epsilon"]``).
    run : callable
        ``run(data, p, rng) -> result``: the engine call. ``rng`` is the only source of noise.
    outputs : callable
        ``outputs(result, p) -> dict``: the public fields of the result -- the only part that
        may leave the door.
    private : callable
        ``private(p) -> bool``: whether the release is DP (default: always; broken variants
        say no).
    label : callable
        ``label(p) -> str``: what the ledger and the meter show.
    table, frame : bool
        The data is a table (``validate`` gets its shape) / a pandas DataFrame with the public
        schema.
    facts : mapping of str to Fact
        The parameters that are facts about the data (declared by the owner), each typed by
        its :class:`FactKind` (required of a built-in mechanism).
    neighbours : str or callable
        The neighbour relation of the guarantee, in words ("one row added or removed"), or
        ``neighbours(p) -> str`` when a parameter chooses it.
    guarantee : callable, optional
        ``guarantee(p) -> str`` for mechanisms whose guarantee is not plain ε-DP at the charged
        cost (w-event releases, say).
    spent : callable, optional
        ``spent(result, p) -> float``: what the result says it spent; the door checks that it
        equals what was charged.
    params : type, optional
        The mechanism's frozen :class:`~dpwidgets.params.Params` class, when it has one: the
        single source of its parameters (``validate`` is then its ``validate``), from which a
        widget builds its controls.
    pushdown : bool
        ``run`` also accepts a :class:`dpwidgets.tables.RowsQuery` (a table's rows view that
        still lives in its query engine) in place of the array, and asks the engine for the
        aggregates it needs instead of loading the rows (the diagnostics).
    """

    name: str
    validate: Callable[[dict, Any], dict]
    run: Callable[[Any, dict, np.random.Generator], Any]
    outputs: Callable[[Any, dict], dict]
    label: Callable[[dict], str]
    cost: Callable[[dict], float] = epsilon_cost
    private: Callable[[dict], bool] = always_private
    table: bool = False
    frame: bool = False
    facts: Mapping[str, Fact] = field(default_factory=dict)
    neighbours: str | Callable[[dict], str] = "one row added or removed"
    guarantee: Callable[[dict], str] | None = None
    spent: Callable[[Any, dict], float] | None = None
    pushdown: bool = False
    params: type | None = None


@dataclass(frozen=True)
class Release:
    """The outcome of :meth:`Session.release` or :meth:`Session.preview`.

    Attributes
    ----------
    dataset, mechanism, label : str
        What was released (the dataset's name in the ledger), by which mechanism, how labelled.
    params : dict
        The canonical parameters (public: chosen by the user or declared by the owner).
    epsilon : float
        What the release cost (for a preview: what a release would cost).
    output : dict
        The declared public output fields -- the only thing that may reach a widget.
    charged : bool
        Whether this call charged the ledger (``False`` for a replay and for a preview).
    result : object or None
        The engine's full result with its secret state: previews (the stand-in is public) and
        teaching releases made in this process only.
    overdraft : bool
        Teaching mode: the run went past the cap and analyst mode would have refused it.
    preview : bool
        ``True``: computed on the public stand-in, never on the data.
    guarantee : str
        The guarantee in words, with its unit and neighbour relation.

    Examples
    --------
    The door makes them (:meth:`dpwidgets.Session.release`); a replay of a cached release is
    one with ``charged=False``:

    >>> from dpwidgets.mechanism import Release
    >>> replay = Release(dataset="scores", mechanism="svt", label="SVT standard c=1",
    ...                  params={"epsilon": 1.0, "threshold": 15.0}, epsilon=1.0,
    ...                  output={"outcomes": [False, True]}, charged=False, time=0.0)
    >>> replay.charged, replay.preview, replay.result is None
    (False, False, True)
    """

    dataset: str
    mechanism: str
    label: str
    params: dict
    epsilon: float
    output: dict
    charged: bool
    time: float
    result: Any = None
    overdraft: bool = False
    key: str = field(default="", repr=False)
    preview: bool = False
    guarantee: str = ""

    def save(self, path, *, format: str | None = None):
        """Write the released arrays as CSV or Parquet and the provenance (mechanism,
        parameters, ε, guarantee, time, ledger key) as ``path`` + ``.json``; returns both
        paths (:func:`dpwidgets.export.save_release`)."""
        from .export import save_release

        return save_release(self, path, format=format)


@dataclass(frozen=True)
class Overdraft:
    """A teaching-mode run that went past the cap (analyst mode would have refused it)."""

    epsilon: float
    label: str
    time: float


MECHANISMS: dict[str, Mechanism] = {}
"""The mechanisms :meth:`Session.release` knows, by name (filled by the family folders'
``spec`` modules, loaded by :mod:`dpwidgets.families`)."""

_BUILTIN: dict[str, Mechanism] = {}
_REGISTERING_BUILTINS = [False]


def register_mechanism(mechanism: Mechanism) -> None:
    """Make ``mechanism`` releasable through :meth:`Session.release` under its name.

    A mechanism registered outside dpwidgets' own family folders runs in teaching mode;
    in analyst mode only on datasets whose owner allowed it by name
    (``add_dataset(..., allow_mechanisms=[name])``): its privacy claim is the author's, not the
    library's.
    """
    if not isinstance(mechanism, Mechanism):
        raise TypeError(f"expected a Mechanism, got {type(mechanism).__name__}")
    if mechanism.name in MECHANISMS and MECHANISMS[mechanism.name] is not mechanism:
        raise ValueError(f"a mechanism named {mechanism.name!r} is already registered")
    if mechanism.frame and not mechanism.table:
        raise ValueError("a mechanism that runs on a DataFrame (frame=True) needs table=True")
    if not all(isinstance(f, Fact) for f in mechanism.facts.values()):
        raise TypeError("facts must map parameter names to Fact")
    if _REGISTERING_BUILTINS[0] and any(f.kind is None for f in mechanism.facts.values()):
        raise TypeError(f"{mechanism.name!r}: every built-in fact needs a kind (FactKind)")
    MECHANISMS[mechanism.name] = mechanism
    if _REGISTERING_BUILTINS[0]:
        _BUILTIN[mechanism.name] = mechanism


@contextlib.contextmanager
def registering_builtins() -> Iterator[None]:
    """Within this block, :func:`register_mechanism` registers dpwidgets' own (built-in)
    mechanisms: the loader of :mod:`dpwidgets.families` (and the 0.x paths in
    :mod:`dpwidgets.releases`) use it."""
    _REGISTERING_BUILTINS[0] = True
    try:
        yield
    finally:
        _REGISTERING_BUILTINS[0] = False


def is_builtin(name: str) -> bool:
    """Whether ``name`` is one of the mechanisms shipped with dpwidgets (the very object
    registered when the package loaded: a spec put into :data:`MECHANISMS` by hand is not)."""
    return name in _BUILTIN and MECHANISMS.get(name) is _BUILTIN[name]
