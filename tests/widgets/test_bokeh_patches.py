"""What a control change sends to the browser: one document patch per figure, and nothing for
a source whose data did not change (``benchmarks/results/browser_redraw.md`` measures the
effect on the screen)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.ui.bokeh_widget import BatchedBokehModel, bokeh_widget, one_patch
from dpwidgets.ui.figures import FigureHandle, update
from dpwidgets.widgets import StreamWidget, SVTExplorer

# The leak checks of later tests serialize every live widget: close the ones made here.
pytestmark = pytest.mark.usefixtures("close_new_widgets")


@pytest.fixture
def frames(monkeypatch):
    """Every frame a BokehModel sends: (content, buffers)."""
    sent = []
    monkeypatch.setattr(BatchedBokehModel, "send",
                        lambda self, content, buffers=None: sent.append((content, buffers)))
    return sent


def _patch_docs(frames) -> list[dict]:
    """The PATCH-DOC messages among the frames (their headers), in order."""
    out = []
    for content, _ in frames:
        payload = content.get("payload")
        if isinstance(payload, str) and '"msgtype"' in payload:
            header = json.loads(payload)
            if header.get("msgtype") == "PATCH-DOC":
                out.append(header)
    return out


def test_an_epsilon_change_reaches_the_browser_as_one_patch(frames):
    # StreamWidget on High_5 (57,901 steps), teaching, seed 0: moving ε redraws a dozen
    # sources; they go as one PATCH-DOC carrying all their arrays.
    s = Session("teaching", seed=0)
    w = StreamWidget(s, stream="High_5", epsilon=0.1, debounce=0)
    frames.clear()
    w.epsilon.value = 0.2
    patches = _patch_docs(frames)
    assert len(patches) == 1
    assert patches[0]["num_buffers"] >= 10
    w.close()


def test_unchanged_sources_are_not_resent(frames):
    # SVTExplorer's 57,901 true answers do not change with ε: no array of that length is sent.
    s = Session("teaching", seed=0)
    w = SVTExplorer(s, epsilon=0.5, c=25)
    frames.clear()
    w.epsilon.value = 0.6
    sizes = [len(b) for _, buffers in frames for b in (buffers or [])]
    assert len(_patch_docs(frames)) == 1
    assert max(sizes, default=0) < 57_901 * 8
    w.close()


def test_update_skips_equal_columns_and_one_patch_flushes_on_error(frames):
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    p = figure()
    source = ColumnDataSource({"x": np.arange(3.0), "y": np.array([1.0, np.nan, 2.0])})
    p.line("x", "y", source=source)
    handle = FigureHandle(p, {"line": source})
    bokeh_widget(p)
    update(handle, {"line": {"x": np.arange(3.0), "y": np.array([1.0, np.nan, 2.0])}})
    assert _patch_docs(frames) == []  # equal values (NaN included): nothing sent
    with pytest.raises(RuntimeError), one_patch():
        update(handle, {"line": {"x": np.arange(3.0), "y": np.zeros(3)}})
        assert _patch_docs(frames) == []  # held until the block ends
        raise RuntimeError("a redraw that fails half way")
    assert len(_patch_docs(frames)) == 1  # the kernel's change still reaches the browser


def test_a_debounced_redraw_in_a_running_loop_is_sent(frames):
    # In a kernel the redraw runs later, from the event loop (Debouncer.call_later), in a copy
    # of the context of the slider's handler, itself inside a patch block: the redraw must
    # still send its own patch when it ends (it did not while the block lived in a ContextVar).
    import asyncio

    s = Session("teaching", seed=0)

    async def move() -> int:
        w = StreamWidget(s, stream="High_5", length=3000, epsilon=0.1, debounce=0.05)
        await asyncio.sleep(0.2)  # the first draw, debounced too
        frames.clear()
        w.epsilon.value = 0.2
        assert _patch_docs(frames) == []  # nothing yet: the redraw waits for the debounce
        await asyncio.sleep(0.5)
        w.close()
        return len(_patch_docs(frames))

    assert asyncio.run(move()) == 1


def test_in_a_kernel_the_document_is_serialised_once_when_it_is_needed(monkeypatch):
    # In a kernel the render bundle is a blank placeholder until the cell that made the widget
    # ends (here called by hand: no IPython in this process), then the drawn document; a view
    # appearing later gets nothing resent unless the document changed since.
    from bokeh.plotting import figure
    from jupyter_bokeh import BokehModel

    from dpwidgets.ui import bokeh_widget as _bokeh

    monkeypatch.setattr(_bokeh, "_in_kernel", lambda: True)
    monkeypatch.setattr(_bokeh, "_HOOKED", True)  # nothing to register the cell's end with
    serialised = []
    real = BokehModel._model_to_traits.__func__
    monkeypatch.setattr(BokehModel, "_model_to_traits", classmethod(
        lambda cls, model: serialised.append(model) or real(cls, model)))

    p = figure(title="made in the cell")
    model = bokeh_widget(p)
    assert serialised and p not in serialised  # only the placeholder so far
    assert "made in the cell" not in str(model.render_bundle)
    p.title.text = "drawn in the cell"
    _bokeh._refresh_pending()  # the cell ends
    assert serialised.count(p) == 1 and "drawn in the cell" in str(model.render_bundle)
    model._view_count = 1  # the browser shows it: the bundle is the document, nothing resent
    assert serialised.count(p) == 1
    p.title.text = "changed before a second view"
    model._view_count = 2
    assert serialised.count(p) == 2
    assert "changed before a second view" in str(model.render_bundle)


def test_a_widget_displayed_directly_carries_its_drawn_document(monkeypatch):
    # Displayed as a cell's result (OfflineBokehMixin), the widget's placeholder is replaced
    # before the display message, so the view is built once, from the drawn document.
    import ipywidgets
    from bokeh.plotting import figure

    from dpwidgets.ui import bokeh_widget as _bokeh

    monkeypatch.setattr(_bokeh, "_in_kernel", lambda: True)
    monkeypatch.setattr(_bokeh, "_HOOKED", True)
    monkeypatch.setattr(_bokeh, "ensure_bokehjs", lambda force=False: False)

    class Panel(_bokeh.OfflineBokehMixin, ipywidgets.VBox):
        pass

    p = figure(title="before")
    model = bokeh_widget(p)
    panel = Panel([ipywidgets.HBox([model])])
    p.title.text = "drawn before the display"
    panel._repr_mimebundle_()
    assert "drawn before the display" in str(model.render_bundle)
    assert not model.bundle_is_stale()
    panel.close()


def test_a_property_set_twice_in_one_patch_goes_once_with_its_last_value(frames):
    # Two data of different lengths for one source in one PATCH-DOC made BokehJS fail with
    # "Size mismatch" (its renderer applies a data change one await at a time); the last
    # value alone goes, a stream keeps its place.
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    p = figure()
    source = ColumnDataSource({"x": np.arange(5.0), "y": np.arange(5.0)})
    other = ColumnDataSource({"x": [0.0], "y": [0.0]})
    p.scatter("x", "y", source=source)
    p.scatter("x", "y", source=other)
    bokeh_widget(p)
    with one_patch():
        source.data = {"x": np.arange(9.0), "y": np.arange(9.0)}
        other.stream({"x": [1.0], "y": [1.0]})
        source.stream({"x": [9.0], "y": [9.0]})  # replaced by the data below: dropped
        source.data = {"x": np.arange(2.0), "y": np.arange(2.0)}
        p.title.text = "first"
        p.title.text = "last"
    (header,) = _patch_docs(frames)
    content = next(json.loads(c["payload"]) for c, _ in frames
                   if isinstance(c.get("payload"), str) and '"events"' in c["payload"])
    kinds = [(e["kind"], e.get("attr")) for e in content["events"]]
    assert kinds.count(("ColumnDataChanged", "data")) == 1
    assert kinds.count(("ColumnsStreamed", "data")) == 1  # another source's stream stays
    assert [e["new"] for e in content["events"] if e.get("attr") == "text"] == ["last"]
    assert header["num_buffers"] == 2  # the two columns of the last data only


def test_a_cell_sends_its_changes_once_when_it_ends(frames, monkeypatch):
    # In a kernel a cell's changes are held until it ends (IPython's pre/post_run_cell): a
    # loop of ten reruns reaches the browser as one patch with the last data.
    from bokeh.models import ColumnDataSource
    from bokeh.plotting import figure

    from dpwidgets.ui import bokeh_widget as _bokeh

    p = figure()
    source = ColumnDataSource({"x": [], "y": []})
    p.scatter("x", "y", source=source)
    bokeh_widget(p)  # outside a kernel: its bundle is the document, as if displayed
    _bokeh._start_cell()
    try:
        for k in range(10):
            with one_patch():  # each rerun's own block joins the cell's
                source.data = {"x": np.arange(k + 1.0), "y": np.arange(k + 1.0)}
        assert _patch_docs(frames) == []
    finally:
        _bokeh._end_cell()
    (header,) = _patch_docs(frames)
    assert header["num_buffers"] == 2
    assert _bokeh._held() is None
    # After the cell, a change from the browser's side (a slider) goes at once.
    source.data = {"x": [0.0], "y": [0.0]}
    assert len(_patch_docs(frames)) == 2


def test_a_widget_made_in_the_cell_gets_its_document_not_a_patch(frames, monkeypatch):
    from bokeh.plotting import figure

    from dpwidgets.ui import bokeh_widget as _bokeh

    monkeypatch.setattr(_bokeh, "_in_kernel", lambda: True)
    monkeypatch.setattr(_bokeh, "_HOOKED", True)
    _bokeh._start_cell()
    try:
        p = figure(title="made")
        model = bokeh_widget(p)
        p.title.text = "drawn in the cell"
    finally:
        _bokeh._end_cell()
    assert _patch_docs(frames) == []  # the view is built from the bundle, which has it all
    assert "drawn in the cell" in str(model.render_bundle)
