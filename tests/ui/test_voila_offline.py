"""Voila dashboards that ask no host but their own server, as in an air-gapped enclave.

Voila's stock "lab" template links Font Awesome from a CDN. Binder's postBuild installs the
"lab-offline" template (``binder/share/jupyter/voila/templates/lab-offline``: the same page
without those links, the icons coming from the Font Awesome that Voila bundles) and makes it
Voila's default with ``binder/etc/jupyter/voila.json``. Here ``voila`` runs on a copy of
``notebooks/`` with exactly those files, found the way an installed environment finds them
(the template on ``JUPYTER_PATH``, the config on ``JUPYTER_CONFIG_PATH``). Chromium resolves no
host but 127.0.0.1 (see ``conftest.py``), every request to another host is also aborted by a
Playwright route and recorded: a lesson renders, its Bokeh figures (BokehJS sent inline by the
kernel), its widgets and its icons show, its math is typeset (by the MathJax 3 that Voila's
front end bundles: no MathJax is fetched), no output names a widget model that is gone (the
progress bars of the lesson's audits were tqdm widgets whose models closed when they finished:
"Error displaying widget: model not found", nine times in lesson 01; jupyterlab_widgets 3.0.17's
renderer said the same, now and then, for a model still on its way, hence its exclusion in
``pyproject.toml``) and no request went to another host. The notebook list is checked the same
way.
"""

from __future__ import annotations

import os
import re
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from .lab import assert_no_widget_errors, screenshot, wait_for_bokeh

pytestmark = pytest.mark.ui

REPO = Path(__file__).resolve().parents[2]
BINDER = REPO / "binder"
LESSONS = ["01_sparse_vector", "03_streams"]
SERVER_START_TIMEOUT = 90.0
# Voila runs the whole notebook before it shows the cells: over 30 s on a busy 2-core machine.
RENDER_TIMEOUT_MS = 180_000
LOCAL_HOSTS = {"127.0.0.1", "localhost"}

# Font Awesome icons (ipywidgets' button icons) and the font faces the page loaded for them.
_ICONS_JS = """
async () => {
  await document.fonts.ready;
  const icons = [...document.querySelectorAll('i.fa')];
  return {
    icons: icons.length,
    styled: icons.filter(i => getComputedStyle(i).fontFamily.includes('Font Awesome')).length,
    loaded: [...document.fonts]
      .filter(f => f.family.includes('Font Awesome') && f.status === 'loaded')
      .map(f => `${f.family} ${f.weight}`),
  };
}
"""


@dataclass
class VoilaServer:
    """A running standalone Voila server on a copy of ``notebooks/``."""

    base_url: str
    token: str
    log_path: Path
    process: subprocess.Popen = field(repr=False)

    def url(self, path: str = "") -> str:
        return f"{self.base_url}/{path.lstrip('/')}?token={self.token}"

    def render(self, lesson: str) -> str:
        return self.url(f"voila/render/{lesson}.ipynb")

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except OSError as exc:
            return f"(no voila log: {exc})"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def voila_server(tmp_path_factory) -> VoilaServer:
    """``voila`` on a temp copy of ``notebooks/`` with Binder's template and config only."""
    base = tmp_path_factory.mktemp("voila")
    root = base / "notebooks"
    shutil.copytree(REPO / "notebooks", root, ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    for sub in ("config", "data", "runtime"):
        (base / sub).mkdir()
    token = secrets.token_hex(16)
    port = _free_port()
    env = dict(os.environ)
    env.update(
        # What postBuild installs into the environment, read in place.
        JUPYTER_PATH=str(BINDER / "share" / "jupyter"),
        JUPYTER_CONFIG_PATH=str(BINDER / "etc" / "jupyter"),
        # Nothing from the user's own Jupyter folders.
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_DATA_DIR=str(base / "data"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        DPWIDGETS_LEDGER=str(base / "ledger.sqlite"),
        PYTHONUNBUFFERED="1",
    )
    cmd = [
        sys.executable, "-m", "voila", str(root),
        "--no-browser",
        "--Voila.ip=127.0.0.1",
        f"--Voila.port={port}",
        "--Voila.port_retries=0",
        f"--Voila.token={token}",
        "--show_tracebacks=True",
    ]
    log_path = base / "voila.log"
    with log_path.open("w") as log:
        # cwd is the temp folder: no voila.json from wherever pytest was started.
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=base)
    server = VoilaServer(f"http://127.0.0.1:{port}", token, log_path, proc)
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    try:
        while True:
            if proc.poll() is not None:
                pytest.fail(f"voila exited with {proc.returncode}:\n{server.log_tail()}")
            try:
                with urllib.request.urlopen(server.url(), timeout=10):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    pytest.fail(f"voila did not answer within {SERVER_START_TIMEOUT}s:\n"
                                f"{server.log_tail()}")
                time.sleep(0.25)  # polling the server's readiness, not synchronising a test
        yield server
    finally:
        proc.terminate()  # Voila shuts its kernels down on SIGTERM
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def _record_hosts(page) -> set[str]:
    """Every host the page asks for from now on (``scheme://host``); a request to any host but
    127.0.0.1 / localhost is aborted and kept in ``page.dpw_blocked``."""
    hosts: set[str] = set()
    page.dpw_blocked = []
    page.on("request", lambda r: hosts.add(
        f"{urlparse(r.url).scheme}://{urlparse(r.url).hostname or ''}"))

    def route(r):
        url = r.request.url
        if url.startswith(("data:", "blob:")) or urlparse(url).hostname in LOCAL_HOSTS:
            r.continue_()
        else:
            page.dpw_blocked.append(url)
            r.abort()

    page.route("**/*", route)
    return hosts


def _assert_only_local(page, hosts: set[str], voila_server: VoilaServer) -> None:
    remote = {h for h in hosts
              if not h.startswith(("data:", "blob:")) and h.split("://")[1] not in LOCAL_HOSTS}
    assert "http://127.0.0.1" in hosts, hosts  # the recorder saw the page itself
    assert not remote and not page.dpw_log.external_requests and not page.dpw_blocked, (
        f"requests beyond 127.0.0.1: {sorted(remote)}, blocked {page.dpw_blocked}\n"
        f"{page.dpw_log.summary()}\n--- voila log ---\n{voila_server.log_tail()}")


# The outputs that show a widget error, with the cell they are in (its index and first line).
_BROKEN_WIDGETS_JS = """
() => [...document.querySelectorAll('.jp-OutputArea-output')]
  .filter(o => /Error displaying widget|model not found/i.test(o.innerText))
  .map(o => {
    const cell = o.closest('[cell-index]');
    return {cell: cell && cell.getAttribute('cell-index'), output: o.innerText.slice(0, 200)};
  })
"""

# TeX left as typed: $...$, $$...$$, \(...\), \[...\] in the text a reader sees.
RAW_TEX = re.compile(r"\$\$?[^$\n]+\$|\\\(|\\\[")


def assert_math_rendered(body) -> int:
    """Every formula of the Markdown cells typeset (MathJax 3's ``mjx-container``), none left
    raw; returns the number typeset."""
    typeset = body.locator(".jp-RenderedMarkdown mjx-container").count()
    prose = "\n".join(body.locator(".jp-RenderedMarkdown").all_inner_texts())
    assert prose, "no Markdown cell rendered"
    raw = RAW_TEX.findall(prose)
    assert typeset > 0 and not raw, f"{typeset} formulas typeset; raw TeX left: {raw[:10]}"
    return typeset


@pytest.mark.parametrize("lesson", LESSONS)
def test_lesson_renders_with_no_other_host(page, voila_server, lab_server, lesson):
    hosts = _record_hosts(page)
    # Voila streams the page while it runs the notebook; "load" comes after the last cell.
    page.goto(voila_server.render(lesson), wait_until="commit", timeout=RENDER_TIMEOUT_MS)
    body = page.locator("body")
    wait_for_bokeh(body, timeout_ms=RENDER_TIMEOUT_MS)
    page.wait_for_load_state("load", timeout=RENDER_TIMEOUT_MS)
    expect(body.locator(".dpw-meter").first).to_be_visible()
    expect(body.locator(".jupyter-widgets").first).to_be_visible()
    # The last cell's widget and math are in: nothing still to come renders an error later.
    page.wait_for_function("() => !document.querySelector('.jp-RenderedMarkdown') ||"
                           " document.querySelectorAll('mjx-container').length > 0",
                           timeout=60_000)
    broken = page.evaluate(_BROKEN_WIDGETS_JS)
    assert not broken, f"widgets that failed to display, by cell: {broken}"
    assert_no_widget_errors(body)
    assert "model not found" not in body.inner_text().lower()
    assert not [e for e in page.dpw_log.console_errors if "model not found" in e.lower()], (
        page.dpw_log.summary())
    assert not page.dpw_log.page_errors, page.dpw_log.summary()
    formulas = assert_math_rendered(body)

    # The button icons use the Font Awesome bundled with Voila, its font loaded from here.
    icons = page.evaluate(_ICONS_JS)
    assert icons["icons"] > 0 and icons["styled"] == icons["icons"], icons
    assert icons["loaded"], icons
    screenshot(page, lab_server.screenshots, f"voila-offline-{lesson}")
    _assert_only_local(page, hosts, voila_server)
    print(f"{lesson}: requested hosts {sorted(hosts)}; icon fonts {icons['loaded']}; "
          f"{formulas} formulas typeset")


def test_notebook_list_asks_no_other_host(page, voila_server):
    hosts = _record_hosts(page)
    page.goto(voila_server.url())
    expect(page.get_by_text("01_sparse_vector.ipynb")).to_be_visible(timeout=30_000)
    page.wait_for_load_state("load")
    _assert_only_local(page, hosts, voila_server)
    print(f"notebook list: requested hosts {sorted(hosts)}")
