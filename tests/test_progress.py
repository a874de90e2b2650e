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


@pytest.mark.slow
def test_a_kernel_bar_names_no_widget_model(tmp_path):
    """In a kernel the bar is HTML updated through a display id: no output names a widget model
    (tqdm's notebook bar closed its model when it finished while the output kept its id, so
    Voila and saved notebooks showed "model not found"); a kept bar ends as text, a
    ``leave=False`` one as nothing, and an audit's bars leave nothing behind."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in (
        "import os; os.environ['DPWIDGETS_PROGRESS'] = '1'\n"
        "from dpwidgets._progress import progress\n"
        "for _ in progress(range(3), desc='kept'): pass",
        "for _ in progress(range(3), desc='inner', leave=False): pass",
        "import numpy as np\nfrom dpwidgets.engine.audit import audit_svt\n"
        "audit_svt('roth2011', epsilon=1.0, trials=2000, rng=np.random.default_rng(1));",
    )]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}
    NotebookClient(nb, timeout=120, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    outputs = [cell.outputs for cell in nb.cells]
    for cell_outputs in outputs:
        for out in cell_outputs:
            assert "application/vnd.jupyter.widget-view+json" not in out.get("data", {}), out
    kept = [o for o in outputs[0] if o.get("output_type") == "display_data"]
    assert len(kept) == 1 and "kept" in kept[0]["data"]["text/plain"], outputs[0]
    assert "3/3" in kept[0]["data"]["text/plain"] and "<progress" in kept[0]["data"]["text/html"]
    for cell_outputs in outputs[1:]:
        shown = [o["data"].get("text/plain", "") for o in cell_outputs
                 if o.get("output_type") == "display_data"]
        assert shown and all(text == "" for text in shown), cell_outputs
