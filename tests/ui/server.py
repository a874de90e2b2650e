"""A hermetic JupyterLab server and Debian's headless Chromium, for the browser tests
(``conftest.py``) and the browser benchmark (``benchmarks/browser_redraw.py``).

The server is hermetic: a temporary root holding a copy of ``notebooks/``, its own config,
runtime, settings and workspace folders, a random token and a free localhost port. Its
settings turn notebook windowing off (every cell stays in the DOM, so Bokeh figures lay out
even below the fold) and the news check off. The browser resolves no host but 127.0.0.1, so
a widget that reaches for a CDN fails here exactly as it would on an offline machine.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path(os.environ.get("DPW_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    # Offline on purpose: any host other than the test server fails to resolve.
    "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
]
SERVER_START_TIMEOUT = 90.0

LAB_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification.jupyterlab-settings": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
}


@dataclass
class LabServer:
    """A running JupyterLab server; ``root`` is its ``root_dir``."""

    base_url: str
    token: str
    root: Path
    log_path: Path
    screenshots: Path
    process: subprocess.Popen = field(repr=False)
    log_file: object = field(default=None, repr=False)  # the open server log (start_lab)

    def url(self, path: str, **query: str) -> str:
        params = "&".join([*(f"{k}={v}" if v else k for k, v in query.items()),
                           f"token={self.token}"])
        return f"{self.base_url}/{path.lstrip('/')}?{params}"

    def lab(self, notebook: str) -> str:
        # ``reset`` starts from an empty workspace: no tab restored from an earlier test.
        return self.url(f"lab/tree/{notebook}", reset="")

    def voila(self, notebook: str) -> str:
        return self.url(f"voila/render/{notebook}")

    def api(self, path: str, method: str = "GET"):
        req = urllib.request.Request(
            f"{self.base_url}/api/{path}",
            method=method,
            headers={"Authorization": f"token {self.token}"},
        )
        with urllib.request.urlopen(req, timeout=10) as resp:
            body = resp.read()
        return json.loads(body) if body else None

    def log_tail(self, n: int = 80) -> str:
        try:
            lines = self.log_path.read_text(errors="replace").splitlines()
        except OSError as exc:
            return f"(no server log: {exc})"
        return "\n".join(lines[-n:])


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _write_settings(folder: Path, extra: dict | None = None) -> None:
    merged = {rel: dict(value) for rel, value in LAB_SETTINGS.items()}
    for rel, value in (extra or {}).items():
        merged.setdefault(rel, {}).update(value)
    for rel, value in merged.items():
        path = folder / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value))




class LabStartError(RuntimeError):
    """JupyterLab exited, or did not answer in time (the message holds its log's tail)."""


def start_lab(base: Path, settings: dict | None = None) -> LabServer:
    """Start a JupyterLab server in ``base`` (an empty folder) on a copy of ``notebooks/``.

    ``settings`` adds to (or overrides) ``LAB_SETTINGS``, per settings file and key.
    """
    root = base / "root"
    shutil.copytree(REPO / "notebooks", root / "notebooks",
                    ignore=shutil.ignore_patterns(".ipynb_checkpoints"))
    (root / "scratch").mkdir()
    settings_dir = base / "settings"
    _write_settings(settings_dir, extra=settings)
    for sub in ("config", "runtime", "workspaces", "screenshots"):
        (base / sub).mkdir()
    token = secrets.token_hex(16)
    port = _free_port()
    env = dict(os.environ)
    env.update(
        JUPYTER_CONFIG_DIR=str(base / "config"),
        JUPYTER_RUNTIME_DIR=str(base / "runtime"),
        # Analyst-mode notebooks must never touch the user's real ledger.
        DPWIDGETS_LEDGER=str(base / "ledger.sqlite"),
        PYTHONUNBUFFERED="1",
    )
    cmd = [
        sys.executable, "-m", "jupyter", "lab",
        "--no-browser", "--allow-root",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        f"--IdentityProvider.token={token}",
        f"--ServerApp.root_dir={root}",
        f"--LabApp.user_settings_dir={settings_dir}",
        f"--LabApp.workspaces_dir={base / 'workspaces'}",
    ]
    log_path = base / "server.log"
    log = log_path.open("w")
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, cwd=root)
    server = LabServer(f"http://127.0.0.1:{port}", token, root, log_path,
                       base / "screenshots", proc)
    server.log_file = log
    deadline = time.monotonic() + SERVER_START_TIMEOUT
    while True:
        if proc.poll() is not None:
            stop_lab(server)
            raise LabStartError(f"jupyter lab exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            server.api("status")
            return server
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            if time.monotonic() > deadline:
                tail = server.log_tail()
                stop_lab(server)
                raise LabStartError(
                    f"jupyter lab did not answer within {SERVER_START_TIMEOUT}s:\n{tail}") from None
            time.sleep(0.25)  # polling the server's readiness, not synchronising a test


def stop_lab(server: LabServer) -> None:
    """Terminate the server (kill it if it does not stop) and close its log."""
    server.process.terminate()
    try:
        server.process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.process.kill()
        server.process.wait(timeout=10)
    if server.log_file is not None:
        server.log_file.close()


@contextmanager
def recorded_page(playwright, profile: Path):
    """A fresh Chromium profile's page, its console, errors and off-host requests recorded
    (``page.dpw_log``); the browser is closed afterwards."""
    from .lab import PageLog

    context = launch_chromium(playwright, profile)
    page = context.pages[0] if context.pages else context.new_page()
    page.dpw_log = PageLog.attach(page, allowed_host="127.0.0.1")
    try:
        yield page
    finally:
        context.close()


def launch_chromium(playwright, profile: Path):
    """A persistent Chromium context on a fresh profile, offline but for 127.0.0.1."""
    context = playwright.chromium.launch_persistent_context(
        str(profile),
        executable_path=str(CHROMIUM),
        headless=True,
        args=CHROMIUM_ARGS,
        viewport={"width": 1400, "height": 1000},
    )
    context.set_default_timeout(30_000)
    return context
