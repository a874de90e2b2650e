"""The door is a protocol: a local Session (a ledger port + a store port) and a curator's
RemoteSession answer the same questions; neither is built by overriding the other's private
hooks; an idempotency key works on a local door as on a curator's."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import time
import warnings

import numpy as np
import pytest

import dpwidgets
from dpwidgets import Session
from dpwidgets.curator.client import RemoteSession
from dpwidgets.door import Description, Door, LedgerFiles
from dpwidgets.engine.errors import ParameterError, ReleaseFailed

SVT = {"epsilon": 0.25, "threshold": 5.0, "c": 2}


def _analyst(tmp_path, **port) -> Session:
    path = str(tmp_path / "ledger.sqlite")
    s = Session("analyst", path, ledgers=LedgerFiles(path, **port) if port else None)
    s.add_dataset("scores", np.arange(12.0), stand_in=np.ones(12), total_epsilon=1.0)
    return s


def test_both_doors_answer_every_question_of_the_protocol_with_one_signature(tmp_path):
    assert isinstance(_analyst(tmp_path), Door)
    assert not issubclass(RemoteSession, Session) and not issubclass(Session, RemoteSession)
    questions = [n for n in vars(Door) if not n.startswith("_")]
    assert {"describe", "cost", "is_cached", "preview", "release", "opening_code"} <= set(questions)
    for name in questions:
        local, remote = getattr(Session, name), getattr(RemoteSession, name)
        if callable(local):
            assert list(inspect.signature(local).parameters) == list(
                inspect.signature(remote).parameters), name
        else:
            assert hasattr(RemoteSession, name), name


def _door_classes():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        for info in pkgutil.walk_packages(dpwidgets.__path__, "dpwidgets."):
            if not info.name.startswith(("dpwidgets.session", "dpwidgets.door",
                                         "dpwidgets.curator", "dpwidgets.persistence")):
                continue
            module = importlib.import_module(info.name)
            for cls in vars(module).values():
                if inspect.isclass(cls) and cls.__module__ == module.__name__:
                    yield cls


def test_no_class_of_the_door_overrides_a_private_hook_of_a_dpwidgets_base():
    overridden = []
    for cls in _door_classes():
        for base in cls.__mro__[1:]:
            if not base.__module__.startswith("dpwidgets"):
                continue
            overridden += [f"{cls.__qualname__}.{name} (of {base.__qualname__})"
                           for name, value in vars(cls).items()
                           if name.startswith("_") and not name.startswith("__")
                           and callable(vars(base).get(name))]
    assert overridden == []


def test_describe_says_only_what_the_owner_declared(tmp_path):
    s = _analyst(tmp_path)
    d = s.describe("scores")
    assert isinstance(d, Description)
    assert (d.name, d.shape, d.size, d.unit, d.unit_rows, d.budget) == (
        "scores", (12,), 12, "row", 1, "scores")
    assert "data" not in d.as_json() and d.as_json()["shape"] == [12]


def test_a_local_retry_with_the_same_key_charges_once_and_gives_the_same_output(tmp_path):
    a = _analyst(tmp_path)
    first = a.release("scores", "svt", idempotency_key="k-1", **SVT)
    # Another process on the same ledger file, retrying the request after a lost answer.
    b = _analyst(tmp_path)
    again = b.release("scores", "svt", idempotency_key="k-1", **SVT)
    assert first.charged and not again.charged
    assert np.array_equal(first.output["outcomes"], again.output["outcomes"])
    assert a.spent("scores") == b.spent("scores") == 0.25


def test_an_attempt_that_died_after_its_charge_is_taken_over_without_a_second_charge(tmp_path):
    s = _analyst(tmp_path, lease=0.2, wait=5.0)
    key = s.release_key("scores", "svt", **SVT)
    # What a process that died mid-run leaves: the charge and its claim, no output.
    s.ledger("scores").claim(0.25, "svt", key=f"{key}#k-2", owner="gone/1/x", lease=0.2)
    assert s.spent("scores") == 0.25
    time.sleep(0.3)  # its lease runs out
    r = s.release("scores", "svt", idempotency_key="k-2", **SVT)
    assert 1 <= r.output["outcomes"].size <= 12 and r.output["above"].size <= 2
    assert s.spent("scores") == 0.25  # run once more under the charge already recorded


def test_a_retry_of_an_attempt_that_failed_on_the_data_fails_again_for_free(tmp_path):
    s = _analyst(tmp_path)
    key = s.release_key("scores", "svt", **SVT)
    claim = s.ledger("scores").claim(0.25, "svt", key=f"{key}#k-3", owner="me/1/y", lease=60)
    assert claim.held_by("me/1/y")
    s.ledger("scores").finish(f"{key}#k-3", "me/1/y", failed=True)
    with pytest.raises(ReleaseFailed):
        s.release("scores", "svt", idempotency_key="k-3", **SVT)
    assert s.spent("scores") == 0.25


@pytest.mark.parametrize("key", ["", "x" * 201, "tab\there", 7])
def test_a_malformed_idempotency_key_is_refused_before_anything_is_charged(tmp_path, key):
    s = _analyst(tmp_path)
    with pytest.raises(ParameterError, match="idempotency_key"):
        s.release("scores", "svt", idempotency_key=key, **SVT)
    assert s.spent("scores") == 0.0


def test_check_release_refuses_what_release_refuses_and_reads_nothing(tmp_path):
    s = _analyst(tmp_path)
    assert s.check_release("scores", "svt", **SVT) == 0.25
    with pytest.raises(dpwidgets.session.PrivacyPolicyError):
        s.check_release("scores", "svt", variant="roth2011", **SVT)
    assert s.spent("scores") == 0.0


def test_the_code_a_widget_offers_opens_the_door_it_was_given(tmp_path):
    s = _analyst(tmp_path)
    assert s.opening_code("scores").startswith('session = Session("analyst", ledger=')
    t = Session("teaching")
    assert t.opening_code() == 'session = Session("teaching")  # then add the same public data'
