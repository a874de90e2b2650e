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


#: The packages a user starts from: every public class and function they export has an
#: Examples section (exceptions need none).
ENTRY_POINTS = ("dpwidgets", "dpwidgets.widgets", "dpwidgets.datasets", "dpwidgets.door",
                "dpwidgets.curator", "dpwidgets.persistence", "dpwidgets.params",
                "dpwidgets.export")


def _engine_packages() -> list[str]:
    import pkgutil

    import dpwidgets.engine

    return [f"dpwidgets.engine.{m.name}" for m in pkgutil.iter_modules(dpwidgets.engine.__path__)
            if not m.name.startswith("_")]


def _without_examples(name: str, classes: bool) -> list[str]:
    import inspect

    module = importlib.import_module(name)
    missing = []
    for attr in getattr(module, "__all__", ()):
        obj = getattr(module, attr)
        wanted = inspect.isfunction(obj) or (
            classes and inspect.isclass(obj) and not issubclass(obj, BaseException))
        if wanted and "Examples\n" not in (obj.__doc__ or ""):
            missing.append(f"{name}.{attr}")
    return missing


def test_every_public_entry_point_has_an_example():
    # The engine's result dataclasses are what its functions return (their examples show
    # them); its functions each have one.
    missing = [m for name in ENTRY_POINTS for m in _without_examples(name, classes=True)]
    missing += [m for name in _engine_packages() for m in _without_examples(name, classes=False)]
    assert not missing, f"no Examples section: {missing}"
