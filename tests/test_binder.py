"""The Binder image, built the way repo2docker builds it, runs every lesson top to bottom.

mybinder.org builds the image with repo2docker from ``binder/``: ``pip install -r
binder/requirements.txt`` from the repository root, then ``binder/postBuild`` from the
repository root with the environment's ``bin/`` first on ``PATH``; the notebooks then run on
that environment's kernel. Here the same steps run into a fresh virtualenv made from the
running Python (``binder/runtime.txt`` names its minor version), on a copy of the repository
(the files git tracks or would add: the work tree as a commit would hold it). That environment's
kernel is registered under a name of its own inside the virtualenv, and each lesson runs on it
with nbclient in a temporary working directory, its ledger redirected there. A dependency the
Binder environment lacks (lesson 07 starts a curator with ``python -m dpwidgets.curator.cli``,
so the ``curator`` extra) fails here rather than on mybinder.org. A failed build fails every
test of this module; nothing is skipped.

repo2docker installs with ``--no-cache-dir`` to keep the image small; this test uses pip's
cache (``PIP_CACHE_DIR`` or pip's default), so a second run downloads nothing again. On 2 busy
cores the module takes 2 to 4.5 minutes: 1 to 2.5 to build, about one for the nine lessons, and
up to one to delete the virtualenv (over a gigabyte) at the end.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import uuid
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
CELL_TIMEOUT = 300  # seconds per cell, as in tests/notebooks/test_notebooks.py
STEP_TIMEOUT = 1200  # seconds for one build step (pip's cold cache, a loaded machine)
# The build runs in the first test's setup: pytest-timeout's default 600 s covers too little.
pytestmark = [pytest.mark.slow, pytest.mark.timeout(2 * STEP_TIMEOUT)]

# What never goes into the copy when the tree is not a git checkout.
_NOT_SOURCE = (".git", ".venv", ".cache", "__pycache__", ".pytest_cache", ".ruff_cache",
               "_build", "build", "dist", "*.egg-info", ".ipynb_checkpoints")


@dataclass(frozen=True)
class BinderEnv:
    """A built Binder environment: the repository copy, its virtualenv and its kernel."""

    repo: Path
    venv: Path
    kernel_name: str
    logs: Path

    @property
    def bin(self) -> Path:
        return self.venv / "bin"


def _copy_repository(dest: Path) -> None:
    """Copy the files git tracks or would add (tracked, and untracked but not ignored)."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, capture_output=True, check=True, timeout=60).stdout
    except (OSError, subprocess.CalledProcessError):
        shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(*_NOT_SOURCE))
        return
    for rel in filter(None, listed.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():  # a tracked file deleted in the work tree is not sent
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)


def _step(name: str, cmd: list[str], *, cwd: Path, env: dict, logs: Path) -> None:
    """Run one build step; fail the build, quoting the end of its log, if it fails."""
    log = logs / f"{name}.log"
    with log.open("w") as out:
        proc = subprocess.run(cmd, cwd=cwd, env=env, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, timeout=STEP_TIMEOUT)
    if proc.returncode != 0:
        tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
        pytest.fail(f"Binder build step {name!r} failed ({proc.returncode}): "
                    f"{' '.join(cmd)}\n--- {log} (tail) ---\n{tail}", pytrace=False)


def _check_runtime(repo: Path) -> None:
    runtime = repo / "binder" / "runtime.txt"
    if not runtime.exists():
        return
    match = re.fullmatch(r"python-(\d+)\.(\d+)(?:\.\d+)?", runtime.read_text().strip())
    if match and tuple(map(int, match.groups())) != sys.version_info[:2]:
        warnings.warn(f"binder/runtime.txt asks for Python {'.'.join(match.groups())}; this "
                      f"test builds with {sys.version.split()[0]}", stacklevel=2)


@pytest.fixture(scope="module")
def binder_env(tmp_path_factory) -> Iterator[BinderEnv]:
    base = tmp_path_factory.mktemp("binder")
    repo, venv, logs = base / "repo", base / "venv", base / "logs"
    logs.mkdir()
    _copy_repository(repo)
    _check_runtime(repo)
    requirements = repo / "binder" / "requirements.txt"
    if not requirements.is_file():
        pytest.fail("binder/requirements.txt is missing: Binder would build an image without "
                    "dpwidgets", pytrace=False)

    env = {k: v for k, v in os.environ.items()
           if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "JUPYTER_PATH")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_PROGRESS_BAR="off")
    _step("venv", [sys.executable, "-m", "venv", str(venv)], cwd=base, env=env, logs=logs)
    python = str(venv / "bin" / "python")
    # As repo2docker does, from the repository root (relative paths in the file resolve there),
    # minus its --no-cache-dir.
    _step("requirements", [python, "-m", "pip", "install", "-r", "binder/requirements.txt"],
          cwd=repo, env=env, logs=logs)
    post_build = repo / "binder" / "postBuild"
    if post_build.exists():
        post_build.chmod(post_build.stat().st_mode | 0o111)  # repo2docker: chmod +x, then run
        _step("postBuild", ["./binder/postBuild"], cwd=repo, env=env, logs=logs)
    kernel_name = f"dpw-binder-{uuid.uuid4().hex[:8]}"
    _step("kernel", [python, "-m", "ipykernel", "install", "--prefix", str(venv),
                     "--name", kernel_name, "--display-name", f"Binder build ({kernel_name})"],
          cwd=repo, env=env, logs=logs)
    yield BinderEnv(repo, venv, kernel_name, logs)
    # The virtualenv is over a gigabyte; the copy and the build logs are small and stay.
    shutil.rmtree(venv, ignore_errors=True)


def test_the_lessons_are_there():
    assert {"00_quickstart.ipynb", "07_curator.ipynb"} <= {p.name for p in LESSONS}


def test_the_kernel_is_the_binder_environment(binder_env, tmp_path, monkeypatch):
    """The lessons run on the built environment (its packages, its copy of dpwidgets), not on
    the one running pytest; postBuild made the offline Voila template its default."""
    monkeypatch.setenv("JUPYTER_PATH", str(binder_env.venv / "share" / "jupyter"))
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(
        "import sys, dpwidgets, fastapi, uvicorn, psycopg, voila\n"
        "print(sys.prefix); print(dpwidgets.__file__)")])
    NotebookClient(nb, kernel_name=binder_env.kernel_name, timeout=CELL_TIMEOUT,
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    prefix, package = "".join(out.get("text", "") for out in nb.cells[0].outputs).split()
    assert Path(prefix).resolve() == binder_env.venv.resolve()
    assert Path(package).resolve().is_relative_to(binder_env.repo.resolve())
    assert (binder_env.venv / "etc" / "jupyter" / "voila.json").is_file()
    assert (binder_env.venv / "share" / "jupyter" / "voila" / "templates" / "lab-offline"
            / "index.html.j2").is_file()


@pytest.mark.parametrize("lesson", LESSONS, ids=[p.stem for p in LESSONS])
def test_lesson_runs_on_the_binder_build(lesson, binder_env, tmp_path, monkeypatch):
    # nbclient finds the kernel by name in the built environment's Jupyter data; that
    # environment's bin/ is first on PATH, as in the Binder image.
    monkeypatch.setenv("JUPYTER_PATH", str(binder_env.venv / "share" / "jupyter"))
    monkeypatch.setenv("PATH", f"{binder_env.bin}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setenv("DPWIDGETS_LEDGER", str(tmp_path / "ledger.sqlite"))
    nb = nbformat.read(binder_env.repo / "notebooks" / lesson.name, as_version=4)
    client = NotebookClient(nb, kernel_name=binder_env.kernel_name, timeout=CELL_TIMEOUT,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()  # raises CellExecutionError, naming the cell, on the first failure
    errors = [output for cell in nb.cells if cell.cell_type == "code"
              for output in cell.outputs if output.output_type == "error"]
    assert not errors, errors
