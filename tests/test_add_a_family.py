"""CONTRIBUTING.md's recipe: a new family is one new folder, and no other file is edited.

The toy family in ``tests/fixtures/toy_family/`` (a Laplace count above a public threshold) is
copied into a copy of the package as ``dpwidgets/families/toy_count/``; a fresh interpreter then
finds its mechanism (registered as built-in), its widget (exported from ``dpwidgets.widgets``),
its stand-in (from ``dpwidgets.datasets``) and its API pages (``docs/conf.py``), and drives the
widget in both modes. The copy is compared with the package afterwards: apart from the new
folder, not a byte differs.
"""

from __future__ import annotations

import filecmp
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOY = Path(__file__).resolve().parent / "fixtures" / "toy_family"

DRIVE = textwrap.dedent('''
    import ast, importlib, sys
    from pathlib import Path

    import numpy as np

    import dpwidgets
    from dpwidgets import Session, families
    from dpwidgets.mechanism import MECHANISMS, is_builtin

    print(dpwidgets.__file__)
    assert "toy_count" in families.names(), families.names()
    assert is_builtin("toy_count_above")
    from dpwidgets.families.toy_count.params import CountAboveParams
    assert MECHANISMS["toy_count_above"].params is CountAboveParams

    # The door decides from the params object, before anything is read or charged.
    s = Session(mode="analyst", ledger=sys.argv[1], seed=None)
    data = np.arange(100.0)                       # 89 values above 10
    s.add_dataset("d", data, total_epsilon=1.0, stand_in=np.zeros(100))
    try:
        s.release("d", "toy_count_above", epsilon=0.5, bins=3)
    except dpwidgets.engine.errors.ParameterError as exc:
        assert "unknown parameter(s) for 'toy_count_above': ['bins']" in str(exc), exc
    else:
        raise AssertionError("an unknown parameter was not refused")
    assert s.spent("d") == 0.0

    # The widget, exported by name, in analyst mode: a slider move previews on the stand-in
    # for free; Release spends exactly epsilon, once.
    from dpwidgets.widgets import ToyCountWidget
    widget = ToyCountWidget(s, "d", epsilon=0.5)
    widget.epsilon.value = 0.25
    assert s.spent("d") == 0.0 and widget.last_release is None
    release = widget.release()
    assert release.charged and abs(s.spent("d") - 0.25) < 1e-12, s.spent("d")
    assert list(widget.figure.sources["bars"].data["value"]) == [release.output["count"]]

    # Teaching mode: live on the data. Laplace scale 1/2 at epsilon = 2: the plotted count is
    # within 10 scales of the truth, 89, except with probability e^-10.
    t = Session(mode="teaching", seed=0)
    t.add_dataset("d", data, total_epsilon=10.0)
    live = ToyCountWidget(t, "d", epsilon=2.0)
    assert abs(live.figure.sources["bars"].data["value"][0] - 89) < 5
    live.threshold.value = 50.0                   # 49 values above 50
    assert abs(live.figure.sources["bars"].data["value"][0] - 49) < 5

    # The stand-in generator, exported by name.
    from dpwidgets.datasets import toy_values
    assert toy_values(5, rng=np.random.default_rng(0)).shape == (5,)

    # The API reference finds the family's modules as the package does.
    conf = Path(sys.argv[2])
    tree = ast.parse(conf.read_text(encoding="utf-8"))
    fn = next(n for n in tree.body if isinstance(n, ast.FunctionDef)
              and n.name == "_family_modules")
    scope = {"importlib": importlib}
    exec(compile(ast.Module([fn], []), str(conf), "exec"), scope)
    modules = scope["_family_modules"]()
    for part in ("params", "engine", "spec", "display", "widget", "standins"):
        assert f"dpwidgets.families.toy_count.{part}" in modules, modules
    print("ok")
''')


def _copy_package(dest: Path) -> Path:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "_static")
    shutil.copytree(ROOT / "dpwidgets", dest / "dpwidgets", ignore=ignore)
    shutil.copytree(ROOT / "js", dest / "js", ignore=ignore)  # the front end, as in a checkout
    return dest / "dpwidgets"


def _differences(a: Path, b: Path, skip: Path) -> list[str]:
    """Files that differ between trees ``a`` and ``b`` or exist in one only (``__pycache__``
    and the folder ``skip`` of ``b`` aside)."""
    out = []

    def walk(cmp: filecmp.dircmp, rel: Path) -> None:
        for name in cmp.left_only + cmp.right_only:
            if name != "__pycache__" and (b / rel / name) != skip and not name.endswith(".pyc"):
                out.append(str(rel / name))
        out.extend(str(rel / name) for name in cmp.diff_files)
        for name, sub in cmp.subdirs.items():
            if name != "__pycache__":
                walk(sub, rel / name)

    walk(filecmp.dircmp(a, b, ignore=["__pycache__", "_static"]), Path("."))
    return out


def test_a_new_family_is_one_folder_and_no_other_file(tmp_path):
    package = _copy_package(tmp_path / "site")
    folder = package / "families" / "toy_count"
    shutil.copytree(TOY, folder, ignore=shutil.ignore_patterns("__pycache__"))
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "site")}
    run = subprocess.run(
        [sys.executable, "-c", DRIVE, str(tmp_path / "ledger.sqlite"),
         str(ROOT / "docs" / "conf.py")],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and run.stdout.strip().endswith("ok"), run.stderr[-3000:]
    # The interpreter ran the copy, not the checkout.
    assert run.stdout.splitlines()[0].startswith(str(package)), run.stdout
    assert _differences(ROOT / "dpwidgets", package, folder) == []


def test_the_toy_family_is_not_part_of_the_package():
    """The template stays a template: the shipped package has no toy family."""
    from dpwidgets import families

    assert "toy_count" not in families.names()
    assert (TOY / "spec.py").is_file() and (TOY / "params.py").is_file()


def test_every_family_mechanism_is_built_in_whichever_module_is_imported_first():
    """A family's spec imported before the session (``from dpwidgets.families.diagnostics.spec
    import ...``, as ``dpwidgets.session`` itself does) still registers its mechanisms as
    built-in: an analyst session runs them without ``allow_mechanisms``."""
    code = textwrap.dedent('''
        import importlib, sys
        first = sys.argv[1]
        importlib.import_module(first)
        from dpwidgets import families
        from dpwidgets.mechanism import MECHANISMS, is_builtin
        assert len(MECHANISMS) >= 22, sorted(MECHANISMS)
        outside = sorted(name for name in MECHANISMS if not is_builtin(name))
        assert not outside, (first, outside)
        print(first, len(MECHANISMS))
    ''')
    firsts = ["dpwidgets.families.diagnostics.spec", "dpwidgets.families.svt.params",
              "dpwidgets.mechanism", "dpwidgets.engine", "dpwidgets"]
    for first in firsts:
        done = subprocess.run([sys.executable, "-c", code, first], capture_output=True,
                              text=True, cwd=ROOT, check=False)
        assert done.returncode == 0, done.stderr
