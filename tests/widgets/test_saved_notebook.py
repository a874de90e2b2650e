"""A notebook saved with widgets is small: BokehJS is loaded by URL from the Jupyter server
(dpwidgets.bokehjs_server) when the kernel is one of that server's, and otherwise sent
inline once per kernel, never once per output.

The notebooks run through nbclient. Its kernel is a child of this test process, so setting
the two environment variables the server extension sets (with this process's id) makes the
kernel behave exactly as a kernel of a serving JupyterLab.
"""

from __future__ import annotations

import json
import os

import nbformat
import pytest
from nbclient import NotebookClient

from dpwidgets import bokehjs_server as served

pytestmark = pytest.mark.slow

CELLS = [
    "import numpy as np\nfrom dpwidgets import Session\nfrom dpwidgets.widgets import SVTExplorer",
    "s = Session('teaching', seed=0)\nSVTExplorer(s, epsilon=0.5, c=10, debounce=0)",
    "SVTExplorer(s, epsilon=1.0, c=5, debounce=0)",
    "s.meter",
]
#: Marks of BokehJS's own code (the inline bundles), absent from the 1 KB loader.
BOKEHJS_MARKS = ("Bokeh.require", "bokehjs")


def _run(tmp_path) -> tuple[dict, int]:
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(c) for c in CELLS]
    NotebookClient(nb, kernel_name="python3", timeout=300,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    text = nbformat.writes(nb)
    return json.loads(text), len(text.encode())


def _outputs_with_bokehjs(nb: dict) -> list[int]:
    found = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            blob = json.dumps(out.get("data", {}))
            if len(blob) > 500_000 and any(mark in blob for mark in BOKEHJS_MARKS):
                found.append(i)
    return found


def test_a_kernel_of_a_serving_server_saves_a_small_notebook(tmp_path, monkeypatch):
    monkeypatch.setenv("DPWIDGETS_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.setenv(served.ENV_URL, "/dpwidgets/bokehjs/")
    monkeypatch.setenv(served.ENV_PID, str(os.getpid()))
    nb, size = _run(tmp_path)
    # Two explorers and a meter: their outputs in a few KB, and with the widget state nbclient
    # stores (JupyterLab does not by default; about 0.3 MB here) well under 1 MB. Inline, the
    # BokehJS bundles alone take 3 MB (8 MB when every bundle was sent).
    outputs = len(json.dumps([c.get("outputs", []) for c in nb["cells"]]))
    assert outputs < 20_000, outputs
    assert size < 1_000_000, size
    assert _outputs_with_bokehjs(nb) == []
    loaders = [out for cell in nb["cells"] for out in cell.get("outputs", [])
               if "application/javascript" in out.get("data", {})]
    assert len(loaders) == 1  # once per kernel
    js = loaders[0]["data"]["application/javascript"]
    js = "".join(js) if isinstance(js, list) else js  # saved as a list of lines
    assert "/dpwidgets/bokehjs/" in js and "bokeh.min.js" in js and len(js) < 2000


def test_any_other_kernel_sends_bokehjs_inline_once(tmp_path, monkeypatch):
    monkeypatch.setenv("DPWIDGETS_LEDGER", str(tmp_path / "ledger.sqlite"))
    monkeypatch.delenv(served.ENV_URL, raising=False)
    monkeypatch.delenv(served.ENV_PID, raising=False)
    nb, size = _run(tmp_path)
    # The bundles travel once, in the first widget's cell, not in every output.
    assert _outputs_with_bokehjs(nb) == [1], size


def test_only_the_serving_servers_own_kernels_use_the_url(monkeypatch):
    monkeypatch.setenv(served.ENV_URL, "/base/dpwidgets/bokehjs/")
    monkeypatch.setenv(served.ENV_PID, "1")  # some other process
    assert served.served_url() is None and served.served_loader(("bokeh",)) is None
    monkeypatch.setenv(served.ENV_PID, str(os.getppid()))
    assert served.served_url() == "/base/dpwidgets/bokehjs/"
    js = served.served_loader(("bokeh", "bokeh-gl"))
    assert '"/base/dpwidgets/bokehjs/"' in js and '["bokeh.min.js", "bokeh-gl.min.js"]' in js
    monkeypatch.delenv(served.ENV_URL)
    assert served.served_url() is None


def test_the_server_extension_serves_the_installed_bundles(monkeypatch):
    """Loaded into a (stand-in) Jupyter server: one route for bokeh's ``*.min.js`` files under
    the base URL, and the two variables its kernels inherit."""
    import re
    from types import SimpleNamespace

    added = []
    app = SimpleNamespace(
        web_app=SimpleNamespace(settings={"base_url": "/user/ana/"},
                                add_handlers=lambda host, rules: added.extend(rules)),
        log=SimpleNamespace(info=lambda *a: None))
    monkeypatch.delenv(served.ENV_URL, raising=False)
    served._load_jupyter_server_extension(app)
    try:
        (pattern, handler, options), = added
        assert re.fullmatch(pattern, "/user/ana/dpwidgets/bokehjs/bokeh-gl.min.js")
        assert not re.fullmatch(pattern, "/user/ana/dpwidgets/bokehjs/../secrets.txt")
        assert not re.fullmatch(pattern, "/user/ana/dpwidgets/bokehjs/compiler.js")
        for name in ("bokeh", "bokeh-gl"):
            assert (served._bundle_dir() / f"{name}.min.js").is_file()
        assert options["path"] == str(served._bundle_dir())
        assert os.environ[served.ENV_URL] == "/user/ana/dpwidgets/bokehjs/"
        assert os.environ[served.ENV_PID] == str(os.getpid())
        assert served._jupyter_server_extension_points() == [
            {"module": "dpwidgets.bokehjs_server"}]
    finally:
        os.environ.pop(served.ENV_URL, None)
        os.environ.pop(served.ENV_PID, None)
