"""Fixtures for the browser tests: a real JupyterLab server and Debian's headless Chromium.

The server is hermetic: a temporary root holding a copy of ``notebooks/``, its own config,
runtime, settings and workspace folders, a random token and a free localhost port. Its
settings turn notebook windowing off (every cell stays in the DOM, so Bokeh figures lay out
even below the fold) and the news check off. The browser resolves no host but 127.0.0.1, so
a widget that reaches for a CDN fails here exactly as it would on an offline machine; every
request to another host is recorded on the page (``page.external_requests``).

On failure the report gets the server log and the screenshot folder.
"""

from __future__ import annotations

import urllib.error

import pytest

from .server import CHROMIUM, LabServer, LabStartError, recorded_page, start_lab, stop_lab

_SERVER: LabServer | None = None


@pytest.fixture(scope="package")
def lab_server(tmp_path_factory) -> LabServer:
    """A JupyterLab server on a temp copy of ``notebooks/``, killed at the end of the session."""
    global _SERVER
    try:
        server = start_lab(tmp_path_factory.mktemp("lab"))
    except LabStartError as exc:
        pytest.fail(str(exc))
    _SERVER = server
    try:
        yield server
    finally:
        stop_lab(server)
        _SERVER = None


# Package scope, not session: Playwright's sync API keeps an asyncio loop marked as running in
# the main thread while it is alive, which would make every later test (the widget tests'
# debouncers among them) believe it runs inside a kernel's event loop.
@pytest.fixture(scope="package")
def playwright_driver():
    if not CHROMIUM.exists():
        pytest.fail(f"no Chromium at {CHROMIUM}: run `make browser` (Debian: apt-get install "
                    f"chromium) or point DPW_CHROMIUM at a Chromium binary")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture
def page(playwright_driver, lab_server, tmp_path):
    """A fresh Chromium profile and page; console errors and off-host requests recorded."""
    with recorded_page(playwright_driver, tmp_path / "chromium-profile") as pg:
        yield pg
    # Shut down the kernels this test started (they belong to our server).
    try:
        for kernel in lab_server.api("kernels"):
            lab_server.api(f"kernels/{kernel['id']}", method="DELETE")
    except (urllib.error.URLError, OSError):
        pass


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.failed and _SERVER is not None and "lab_server" in item.fixturenames:
        report.sections.append(("jupyter server log (tail)", _SERVER.log_tail()))
        report.sections.append(("screenshots", str(_SERVER.screenshots)))
        pg = item.funcargs.get("page")
        log = getattr(pg, "dpw_log", None)
        if log is not None:
            report.sections.append(("browser console", log.summary()))
            try:
                shot = _SERVER.screenshots / f"{item.name}-failure.png"
                pg.screenshot(path=str(shot), full_page=True)
                report.sections.append(("failure screenshot", str(shot)))
            except Exception as exc:  # the page may be gone; the report matters more
                report.sections.append(("failure screenshot", f"(none: {exc})"))
