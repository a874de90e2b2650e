"""The progress helper: a bar when enabled or watched, nothing when disabled or unwatched."""

from __future__ import annotations

import numpy as np
import pytest

from dpwidgets import _progress
from dpwidgets._progress import ENV, progress, watching
from dpwidgets.engine.audit import audit_privacy_loss, audit_svt


def test_a_bar_is_drawn_when_enabled_and_nothing_when_disabled(capsys):
    assert list(progress(range(5), desc="sweep", disable=False)) == [0, 1, 2, 3, 4]
    err = capsys.readouterr().err
    assert "sweep" in err and "5/5" in err
    assert list(progress(range(5), desc="sweep", disable=True)) == [0, 1, 2, 3, 4]
    assert capsys.readouterr() == ("", "")


def test_the_environment_decides_when_the_caller_does_not(capsys, monkeypatch):
    monkeypatch.setenv(ENV, "0")
    assert not watching()
    list(progress(range(3), desc="quiet"))
    assert capsys.readouterr().err == ""
    monkeypatch.setenv(ENV, "1")
    assert watching()
    list(progress(range(3), desc="loud"))
    assert "loud" in capsys.readouterr().err
    # Unset: a terminal or a kernel watches, a captured stream (this test) or CI does not.
    monkeypatch.delenv(ENV)
    monkeypatch.setenv("CI", "true")
    assert not watching()
    monkeypatch.delenv("CI")
    monkeypatch.setattr(_progress, "_in_kernel", lambda: False)
    assert not watching()  # pytest captures stderr: not a terminal
    monkeypatch.setattr(_progress, "_in_kernel", lambda: True)
    assert watching()


def test_steps_reach_the_callback_with_or_without_a_bar(capsys):
    steps = []
    with progress(total=3, disable=True, callback=lambda d, t: steps.append((d, t))) as bar:
        for _ in range(3):
            bar.update()
    assert steps == [(1, 3), (2, 3), (3, 3)] and bar.n == 3 and not bar.shown
    assert capsys.readouterr() == ("", "")
    steps.clear()
    for _ in progress(iter("ab"), disable=False, callback=lambda d, t: steps.append((d, t))):
        pass
    assert steps == [(1, None), (2, None)]  # an iterator without len: total unknown
    assert "2it" in capsys.readouterr().err


def test_an_audit_reports_every_batch_and_draws_nothing_when_told(capsys):
    def mechanism(data, size, rng):
        return rng.laplace(data, 1.0, size)

    def event(out):
        return out > 0.5

    seen = []
    result = audit_privacy_loss(mechanism, 0.0, 1.0, event, trials=1000, batch_size=300,
                                rng=np.random.default_rng(0),
                                progress=lambda d, t: seen.append((d, t)))
    # ceil(1000 / 300) = 4 batches per input, two inputs.
    assert seen == [(i, 8) for i in range(1, 9)]
    again = audit_privacy_loss(mechanism, 0.0, 1.0, event, trials=1000, batch_size=300,
                               rng=np.random.default_rng(0), progress=False)
    assert again.epsilon_lower == result.epsilon_lower  # progress changes no draw
    assert capsys.readouterr() == ("", "")
    audit_svt("roth2011", epsilon=1.0, trials=2000, rng=np.random.default_rng(1), progress=True)
    assert "audit: roth2011" in capsys.readouterr().err
    with pytest.raises(TypeError, match="progress"):
        audit_privacy_loss(mechanism, 0.0, 1.0, event, trials=10, progress="yes")
