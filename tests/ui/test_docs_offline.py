"""The documentation site's lesson pages render their math and widgets with no other host.

The site ships RequireJS, the Jupyter widget manager and MathJax in its ``_static/``
(``docs/offline_assets.py``), where myst-nb and Sphinx would load them from CDNs. Here a
minimal site is built into a temporary folder with the repository's own ``docs/conf.py``:
the home page, the lessons' index and lesson 01 (an SVT explorer with its budget meter, an
anywidget, and Bokeh figures, plus formulas), executed as ``make docs`` executes it, so the
page carries the widget state the kernel saved. Building the whole site is
``tests/test_docs.py``'s job; one lesson keeps this test near a minute. The page is then served
by a static HTTP server on 127.0.0.1 (as a reader would serve ``docs/_build/html``) and opened in
Chromium with every request to another host aborted by a Playwright route and recorded: the
formulas are typeset by MathJax (no TeX left raw), the embedded widgets are drawn by the widget
manager (sliders, the meter, the Bokeh canvases), no widget shows an error, the page raises
nothing and no request left 127.0.0.1. The same page is also opened from ``file://``.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import sys
import threading
from pathlib import Path
from urllib.parse import urlparse

import pytest
from playwright.sync_api import expect

from .lab import assert_no_widget_errors
from .server import recorded_page

pytestmark = [pytest.mark.ui, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
LESSON = "01_sparse_vector"
BUILD_TIMEOUT = 420  # seconds: one lesson executed, under pytest-timeout's 600
LOCAL_HOSTS = {"127.0.0.1", "localhost"}

# Text a reader sees in the article (not code, not scripts, not typeset math) and what the
# page typeset: TeX left raw shows as $...$, \(...\) or \[...\].
_READ_JS = r"""
() => {
  const article = document.querySelector('article') || document.body;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT, {
    acceptNode: (n) => n.parentElement.closest(
      'pre, code, script, style, mjx-container, .highlight, .cell_input, .cell_output')
      ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
  });
  let text = '';
  while (walker.nextNode()) text += walker.currentNode.textContent;
  const raw = text.match(/\$\$?[^$\n]+\$|\\\(|\\\[/g) || [];
  return {
    raw: raw.slice(0, 10),
    typeset: article.querySelectorAll('mjx-container').length,
    mathSpans: article.querySelectorAll('.math').length,
    mathjax: typeof window.MathJax === 'object' && !!window.MathJax.version,
    widgets: article.querySelectorAll('.jupyter-widgets').length,
    sliders: article.querySelectorAll('.widget-slider').length,
    meters: article.querySelectorAll('.dpw-meter').length,
    widgetErrors: article.querySelectorAll('.jupyter-widgets-error-widget').length,
    scripts: [...document.scripts].map(s => s.src).filter(Boolean),
  };
}
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """A minimal build of the site (home, lessons index, lesson 01) with docs/conf.py."""
    out = tmp_path_factory.mktemp("docs-offline")
    env = dict(os.environ, DPWIDGETS_DOCS_EXECUTE="cache",
               DPWIDGETS_LEDGER=str(out / "ledger.sqlite"))
    # No -W: the home page's toctree names pages this minimal build leaves out.
    cmd = [sys.executable, "-m", "sphinx", "-q", "-b", "html",
           "-D", f"include_patterns=index.md,lessons/index.md,lessons/{LESSON}.ipynb",
           "-d", str(out / "doctrees"), str(REPO / "docs"), str(out / "html")]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT, cwd=REPO,
                          env=env)
    page = out / "html" / "lessons" / f"{LESSON}.html"
    assert proc.returncode == 0 and page.is_file(), (
        f"sphinx-build failed ({proc.returncode}):\n{(proc.stdout + proc.stderr)[-4000:]}")
    return out / "html"


@pytest.fixture(scope="module")
def static_server(site):
    """``python -m http.server`` on the built site, on 127.0.0.1 and a free port."""
    handler = functools.partial(_QuietHandler, directory=str(site))
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):  # the test reports what the browser asked, not the server
        pass


@pytest.fixture
def page(playwright_driver, tmp_path):
    """A fresh Chromium page (no JupyterLab server needed); its console, errors and off-host
    requests recorded."""
    with recorded_page(playwright_driver, tmp_path / "chromium-profile") as pg:
        yield pg


def _block_other_hosts(page) -> list[str]:
    """Abort every request that is not to 127.0.0.1 / localhost / a file, data or blob URL;
    return the list the aborted URLs are appended to."""
    blocked: list[str] = []

    def route(r):
        url = r.request.url
        parsed = urlparse(url)
        if parsed.scheme in ("file", "data", "blob") or parsed.hostname in LOCAL_HOSTS:
            r.continue_()
        else:
            blocked.append(url)
            r.abort()

    page.route("**/*", route)
    return blocked


def _open_lesson(page, url: str) -> dict:
    blocked = _block_other_hosts(page)
    page.goto(url, wait_until="load")
    article = page.locator("article")
    # The widget manager renders the embedded state after load; MathJax typesets after load.
    expect(article.locator(".dpw-meter").first).to_be_visible(timeout=60_000)
    expect(article.locator(".widget-slider").first).to_be_visible(timeout=60_000)
    expect(article.locator("mjx-container").first).to_be_attached(timeout=60_000)
    page.wait_for_function("() => window.MathJax && MathJax.startup && MathJax.startup.promise"
                           " && MathJax.startup.promise.then(() => true)", timeout=60_000)
    seen = page.evaluate(_READ_JS)
    seen["blocked"] = blocked
    return seen


def _check(page, seen: dict) -> None:
    log = page.dpw_log
    assert not seen["blocked"] and not log.external_requests, (
        f"requests to other hosts: {seen['blocked'] or log.external_requests}\n{log.summary()}")
    assert seen["mathjax"] and seen["typeset"] > 0 and seen["typeset"] >= seen["mathSpans"], seen
    assert not seen["raw"], f"TeX left raw: {seen['raw']}"
    assert seen["widgets"] > 0 and seen["sliders"] > 0 and seen["meters"] > 0, seen
    assert seen["widgetErrors"] == 0, seen
    assert_no_widget_errors(page.locator("article"))
    assert not log.page_errors, log.summary()
    assert not any(src.startswith("http") and urlparse(src).hostname not in LOCAL_HOSTS
                   for src in seen["scripts"]), seen["scripts"]


def test_lesson_page_renders_math_and_widgets_served_locally(page, static_server):
    seen = _open_lesson(page, f"{static_server}/lessons/{LESSON}.html")
    _check(page, seen)
    # The Bokeh figures of the embedded state draw too (BokehJS comes inline with the page).
    expect(page.locator("article .bk-Canvas").first).to_be_visible(timeout=60_000)
    print(f"served: {seen['typeset']} formulas typeset, {seen['widgets']} widgets, "
          f"{len(seen['scripts'])} scripts, none from another host")


def test_lesson_page_renders_from_file_url(page, site):
    seen = _open_lesson(page, (site / "lessons" / f"{LESSON}.html").as_uri())
    _check(page, seen)
    print(f"file://: {seen['typeset']} formulas typeset, {seen['widgets']} widgets")
