"""'Copy the code': every widget shows the Session API lines of the release it would make, and
those lines, run on the same session, make exactly that release (a free replay)."""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.datasets import zipf_item_scores
from dpwidgets.widgets import StreamWidget, SVTExplorer

pytestmark = pytest.mark.usefixtures("close_new_widgets")


def _run_code(code: str, session) -> object:
    lines = [line for line in code.splitlines() if line.startswith("release = ")]
    assert len(lines) == 1, code
    namespace = {"session": session}
    exec(lines[0], namespace)  # noqa: S102 -- the widget's own generated line
    return namespace["release"]


@pytest.fixture
def analyst(tmp_path):
    s = Session("analyst", ledger=tmp_path / "ledger.sqlite", seed=1)
    scores = np.random.default_rng(2).permutation(zipf_item_scores(n_items=500))
    s.add_dataset("sales", scores, total_epsilon=5.0)
    s.add_dataset("stream", np.random.default_rng(3).poisson(5, 400).astype(float),
                  total_epsilon=5.0)
    yield s
    s.close()


def test_the_code_reproduces_the_widgets_release(analyst):
    widget = SVTExplorer(analyst, "sales", epsilon=0.2, c=5, threshold=2_000.0)
    widget.epsilon.value = 0.3  # a control set: the code follows it
    code = widget.code_box.value
    assert "epsilon=0.3" in code and "'sales'" in code and code.startswith("from dpwidgets")
    released = widget.release()
    spent = analyst.spent("sales")
    again = _run_code(code, analyst)
    assert not again.charged and analyst.spent("sales") == spent
    np.testing.assert_array_equal(again.output["above"], released.output["above"])


def test_every_rerun_is_in_the_code(analyst):
    widget = StreamWidget(analyst, "stream", epsilon=0.1)
    widget.release()
    widget.release_button.click()  # the same parameters again: a free replay
    code = widget.code()
    assert code.count("session.release(") == 1
    again = _run_code(code, analyst)
    assert np.array_equal(np.asarray(again.output["estimates"]),
                          np.asarray(widget.last_release.output["estimates"]))
