"""Every Examples section in the package runs as written (doctest), so the documentation
cannot drift from the code. Modules are found by their source holding a ``>>>`` prompt; the
old import paths (aliases of moved modules) are skipped, their targets are tested."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "dpwidgets"


def _modules_with_examples() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if ">>> " not in text or "alias(__name__" in text:
            continue
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found.append(".".join(parts))
    return found


MODULES = _modules_with_examples()


def test_the_door_the_params_and_the_families_have_examples():
    for name in ("dpwidgets.door", "dpwidgets.params", "dpwidgets.families",
                 "dpwidgets.families.svt.params", "dpwidgets.families.svt.display"):
        assert name in MODULES, name


@pytest.mark.parametrize("name", MODULES)
def test_examples_run(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # an example that writes a file writes it here
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed in {name}"
