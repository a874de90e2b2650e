"""A release request's body, checked field by field before anything is read or charged.

``POST /cost``, ``/cached`` and ``/releases`` (:mod:`dpwidgets.curator.routes.releases`) take
the same body: ``{"dataset", "mechanism", "params", "run", "label"}``. :func:`request_of`
checks it in a fixed order -- the fields, the dataset (403 unless the analyst holds it), the
mechanism (403 unless the owner allows it), the parameters (finite numbers, bounded lists and
nesting, none named like the request's own fields), ``run`` and ``label``, and no fact about the
data (the owner declared those) -- raising a :class:`~dpwidgets.engine.errors.ReleaseRefused`
that names the argument. Only then does a route ask the door.
"""

from __future__ import annotations

import inspect
import math
from typing import Any

from ...engine.errors import ParameterError, PrivacyPolicyError
from ...mechanism import MECHANISMS
from ...session import Session
from ..door import Curator
from .access import held_dataset

__all__ = ["MAX_LABEL", "MAX_RUN", "RESERVED", "asked", "check_params", "request_of",
           "run_and_label"]

MAX_LABEL = 200  # characters of a ledger label
MAX_RUN = 2**53  # run is part of the cache key; far more than any analyst needs
_MAX_DEPTH = 8
_FIELDS = {"dataset", "mechanism", "params", "run", "label"}


def _reserved() -> frozenset[str]:
    names = {"run", "label"}
    for method in (Session.cost, Session.is_cached, Session.release_key, Session.release):
        names |= {n for n, q in inspect.signature(method).parameters.items()
                  if q.kind is not inspect.Parameter.VAR_KEYWORD}
    return frozenset(names)


#: Names a request's parameters cannot take: they would collide with the door's own arguments
#: (``run``, ``label``, ``dataset``, ``mechanism``, the idempotency key, ...).
RESERVED = _reserved()


def check_params(value: Any, where: str, depth: int = 0) -> None:
    """Refuse what JSON lets through but no parameter needs: NaN and infinities, giant lists,
    deep nesting (400, naming the argument)."""
    if depth > _MAX_DEPTH:
        raise ParameterError(f"{where}: nested too deeply")
    if isinstance(value, float) and not math.isfinite(value):
        raise ParameterError(f"{where}: must be a finite number, got {value!r}")
    if isinstance(value, list):
        if len(value) > 100_000:
            raise ParameterError(f"{where}: a list of at most 100,000 values")
        for i, v in enumerate(value):
            check_params(v, f"{where}[{i}]", depth + 1)
    elif isinstance(value, dict):
        for k, v in value.items():
            check_params(v, f"{where}.{k}", depth + 1)


def asked(body) -> tuple[Any, Any, Any]:
    """What a request asked for, as sent (for the audit log: bounded there)."""
    if not isinstance(body, dict):
        return None, None, {"body": body if isinstance(body, str | int | float) else
                            type(body).__name__}
    ds, mech, params = body.get("dataset"), body.get("mechanism"), body.get("params")
    return (None if ds is None else str(ds)[:200],
            None if mech is None else str(mech)[:200],
            params if isinstance(params, dict) or params is None else {"params": params})


def run_and_label(body: dict) -> tuple[int, str | None]:
    """The request's ``run`` (an integer in ``[0, 2**53)``, default 0) and ``label`` (1 to
    :data:`MAX_LABEL` printable characters, or none)."""
    run, label = body.get("run", 0), body.get("label")
    if isinstance(run, bool) or not isinstance(run, int) or not 0 <= run < MAX_RUN:
        raise ParameterError(f"run must be an integer in [0, 2**53), got "
                             f"{str(run)[:40]!r}. Nothing was charged.")
    if label is not None and (not isinstance(label, str) or not 0 < len(label) <= MAX_LABEL
                              or not label.isprintable()):
        shown = (f"a string of {len(label)} characters" if isinstance(label, str)
                 else type(label).__name__)
        raise ParameterError(f"label must be a printable string of 1 to {MAX_LABEL} "
                             f"characters, got {shown}. Nothing was charged.")
    return run, label


def _mechanism(curator: Curator, name: str, mech: Any) -> str:
    """The mechanism asked for, if it exists (400) and the owner allows it on ``name`` (403)."""
    ds, _ = curator.config.view(name)
    if not isinstance(mech, str) or mech not in MECHANISMS:
        raise ParameterError(f"mechanism must be one of {sorted(ds.mechanisms)}")
    if mech not in ds.mechanisms:
        raise PrivacyPolicyError(f"the data owner does not allow {mech!r} on {ds.name!r}; "
                                 f"allowed: {sorted(ds.mechanisms)}. Nothing was charged.")
    return mech


def request_of(curator: Curator, body: Any, who: str, door: Session) -> tuple[str, str, dict]:
    """``(dataset, mechanism, params)`` of a well-formed request the analyst may make; else a
    refusal naming the argument (nothing read, nothing charged)."""
    if not isinstance(body, dict):
        raise ParameterError("the body must be a JSON object")
    unknown = set(body) - _FIELDS
    if unknown:
        raise ParameterError(f"unknown field(s) {sorted(str(k)[:50] for k in unknown)[:20]}")
    name = held_dataset(curator, door, who, body.get("dataset"))
    mech = _mechanism(curator, name, body.get("mechanism"))
    params = body.get("params", {})
    if not isinstance(params, dict):
        raise ParameterError("params must be a JSON object of the mechanism's parameters")
    check_params(params, "params")
    clash = sorted(RESERVED & set(params))
    if clash:
        raise ParameterError(
            f"params cannot name {clash}: they are fields of the request (run and label "
            f"go next to params) or the curator's own arguments. Nothing was charged.")
    run_and_label(body)
    declared = set(MECHANISMS[mech].facts) | {"unit", "unit_rows", "domains"}
    claimed = sorted(declared & set(params))
    if claimed:
        raise ParameterError(
            f"{claimed} are facts about the data, declared by its owner; a request cannot "
            f"pass them (the curator fills them in). Nothing was charged.")
    return name, mech, params
