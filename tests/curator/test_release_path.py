"""One release from a widget's Release button to the ledger, room by room, on a curator.

The curator's documentation (``docs/curator.md``, "One release, room by room") walks a newcomer
through the path an analyst's release takes. This test replays that path on a real curator
app (in this process, over its HTTP interface) and records every room it passes through: it
fails if a room is added, skipped or visited in another order, if the release needs more than
one HTTP round trip, and if the page and the path disagree.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path

import httpx
import pytest
from fastapi.testclient import TestClient

import dpwidgets.curator.routes.releases as routes
import dpwidgets.engine.svt as svt_engine
from dpwidgets.curator import Curator, load_config
from dpwidgets.curator.app import create_app
from dpwidgets.curator.client import RemoteSession
from dpwidgets.curator.door import AuditLog, JointLedger
from dpwidgets.door import Attempt
from dpwidgets.families.svt.widget import SVTExplorer
from dpwidgets.persistence.ledger import PrivacyLedger
from dpwidgets.releasing import ReleasePipeline
from dpwidgets.session import Session
from dpwidgets.ui.base import ReleaseWidget

from .conftest import write_curator

pytestmark = pytest.mark.usefixtures("close_new_widgets")

DOC = Path(__file__).resolve().parents[2] / "docs" / "curator.md"

# (owner, attribute): the rooms a release may pass through, recorded under
# "<module>.<class>.<name>" (or "<module>.<name>" for a function).
ROOMS = [
    (ReleaseWidget, "release"), (ReleaseWidget, "make_release"),
    (RemoteSession, "cost"), (RemoteSession, "release"),
    (Session, "cost"), (Session, "check_release"), (Session, "release"),
    (ReleasePipeline, "decide"), (ReleasePipeline, "release"), (ReleasePipeline, "charge"),
    (ReleasePipeline, "run_sealed"),
    (Attempt, "take"), (Attempt, "done"),
    (JointLedger, "claim"), (JointLedger, "finish"),
    (PrivacyLedger, "claim"), (PrivacyLedger, "finish"),
    (AuditLog, "record"), (routes, "analyst"), (routes, "request_of"), (Curator, "door"),
    (svt_engine, "sparse_vector"),
]

# The path, in order: on the analyst's machine, one HTTP request, on the curator, back.
PATH = [
    "dpwidgets.ui.base.ReleaseWidget.release",
    "dpwidgets.ui.base.ReleaseWidget.make_release",
    "dpwidgets.curator.client.RemoteSession.release",
    "dpwidgets.session.Session.check_release",
    "dpwidgets.releasing.ReleasePipeline.decide",
    "POST /v1/releases",
    "dpwidgets.curator.routes.access.analyst",
    "dpwidgets.curator.door.Curator.door",
    "dpwidgets.curator.routes.checks.request_of",
    "dpwidgets.session.Session.release",
    "dpwidgets.releasing.ReleasePipeline.release",
    "dpwidgets.releasing.ReleasePipeline.decide",
    "dpwidgets.releasing.ReleasePipeline.charge",
    "dpwidgets.door.Attempt.take",
    "dpwidgets.curator.door.JointLedger.claim",
    "dpwidgets.persistence.claims.Claims.claim",
    "dpwidgets.releasing.ReleasePipeline.run_sealed",
    "dpwidgets.engine.svt.run.sparse_vector",
    "dpwidgets.door.Attempt.done",
    "dpwidgets.curator.door.JointLedger.finish",
    "dpwidgets.persistence.claims.Claims.finish",
    "dpwidgets.curator.door.AuditLog.record",
    # Back on the analyst's machine: the widget shows the release and prices the next one.
    "dpwidgets.curator.client.RemoteSession.cost",
    "dpwidgets.session.Session.cost",
    "dpwidgets.releasing.ReleasePipeline.decide",
]


def _name(owner, attribute: str) -> str:
    target = getattr(owner, attribute)
    module = getattr(target, "__module__", None) or owner.__name__
    return f"{module}.{getattr(target, '__qualname__', attribute)}"


@pytest.fixture
def recorded(tmp_path, monkeypatch):
    """(widget, its remote session, the list the rooms are recorded in, the curator)."""
    seen: list[str] = []
    for owner, attribute in ROOMS:
        target, name = getattr(owner, attribute), _name(owner, attribute)

        def recording(*args, _target=target, _name=name, **kwargs):
            seen.append(_name)
            return _target(*args, **kwargs)

        monkeypatch.setattr(owner, attribute, functools.wraps(target)(recording))

    path, tokens = write_curator(tmp_path)
    curator = Curator(load_config(path))
    app = TestClient(create_app(curator))

    class Counted(httpx.BaseTransport):  # every request the analyst's machine sends
        def handle_request(self, request):
            seen.append(f"{request.method} {request.url.path}")
            return app._transport.handle_request(request)

    session = RemoteSession("http://testserver", tokens["alice"], transport=Counted())
    widget = SVTExplorer(session, "visits/pages", epsilon=0.05, c=2, threshold=50.0)
    yield widget, session, seen, curator
    session.close()
    curator.close()


def test_a_release_takes_the_documented_path_with_one_round_trip(recorded):
    widget, session, seen, curator = recorded
    spent = session.spent("visits/pages")
    seen.clear()
    release = widget.release()
    assert release is not None and release.charged, widget.message.value
    assert seen == PATH, "\n".join(seen)
    assert sum(step.startswith(("GET ", "POST ")) for step in seen) == 1
    # What the path charged, once, on both caps: the analyst's and the dataset's.
    assert session.spent("visits/pages") == pytest.approx(spent + release.epsilon)
    shared = PrivacyLedger(curator.config.ledger, dataset="visits")
    assert shared.spent == pytest.approx(release.epsilon)


def test_a_retry_of_the_same_release_is_a_replay_that_reaches_no_ledger(recorded):
    widget, session, seen, _ = recorded
    first = widget.release()
    seen.clear()
    again = session.release("visits/pages", "svt", idempotency_key=None, **widget.params)
    assert not again.charged and again.key == first.key
    assert not any("Ledger" in step or "sparse_vector" in step or "charge" in step
                   for step in seen)


def test_the_curator_page_walks_the_same_path():
    text = DOC.read_text()
    section = text.split("### One release, room by room", 1)[1].split("\n### ", 1)[0]
    rooms = re.findall(r"`((?:dpwidgets\.[\w.]+)|(?:(?:GET|POST) /[\w/]+))`", section)
    assert rooms == PATH, "docs/curator.md and the path disagree"
