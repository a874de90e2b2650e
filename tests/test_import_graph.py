"""The ``dpwidgets`` package imports itself without a cycle.

The graph is read from the source, not from ``sys.modules``: every ``import`` and
``from ... import`` (at module level or inside a function), and every
``importlib.import_module("dpwidgets....")`` with a literal name, is an edge. Imports under
``if TYPE_CHECKING:`` are not, nor is the implicit import of a module's parent packages (Python
runs ``pkg/__init__.py`` before ``pkg/mod.py``, but that is no dependency of ``pkg.mod`` on
``pkg``). A package's ``__init__`` importing its own submodules is an edge like any other.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "dpwidgets"  # read, not imported
ROOT = "dpwidgets"


def module_files(package_dir: Path = PACKAGE_DIR, root: str = ROOT) -> dict[str, Path]:
    """Map each module's dotted name to its file; ``pkg/__init__.py`` is the module ``pkg``."""
    modules = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = list(path.relative_to(package_dir).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join([root, *parts])] = path
    return modules


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


_BODIES = ("body", "orelse", "finalbody")


def _is_import_module(node: ast.AST) -> bool:
    """``importlib.import_module("<literal>")`` (or a bare ``import_module`` imported from it)."""
    return (
        isinstance(node, ast.Call)
        and (
            (isinstance(node.func, ast.Attribute) and node.func.attr == "import_module")
            or (isinstance(node.func, ast.Name) and node.func.id == "import_module")
        )
        and bool(node.args)
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    )


def _imported_names(tree: ast.Module, module: str, is_package: bool, calls: bool) -> list[str]:
    """Every dotted name the module imports, absolute. Only statements are walked (imports are
    statements, at any depth); expressions only when ``calls`` (the source names
    ``import_module``), which keeps the walk cheap."""
    package = module if is_package else module.rpartition(".")[0]
    names: list[str] = []

    def absolute(level: int, name: str | None) -> str:
        if level == 0:
            return name or ""
        base = package.split(".")
        base = base[: len(base) - (level - 1)]
        return ".".join(base + ([name] if name else []))

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.If) and _is_type_checking(node.test):
                visit(node.orelse)
                continue
            if isinstance(node, ast.Import):
                names.extend(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom):
                source = absolute(node.level, node.module)
                names.extend(f"{source}.{alias.name}" for alias in node.names)
            elif calls:
                for field, value in ast.iter_fields(node):
                    if field in _BODIES or field in ("handlers", "cases"):
                        continue
                    for part in value if isinstance(value, list) else [value]:
                        if isinstance(part, ast.AST):
                            names.extend(call.args[0].value for call in ast.walk(part)
                                         if _is_import_module(call))
            for field in _BODIES:
                visit(getattr(node, field, []))
            for handler in getattr(node, "handlers", []) + getattr(node, "cases", []):
                visit(handler.body)

    visit(tree.body)
    return names


def import_graph(modules: dict[str, Path], root: str = ROOT) -> dict[str, set[str]]:
    """Edges ``importer -> imported`` between the modules of ``root`` (self-edges dropped).

    ``from pkg.mod import name`` is an edge to ``pkg.mod.name`` if that is a module, else to
    ``pkg.mod``; a name that is not a module is resolved to its longest prefix that is.
    """
    graph: dict[str, set[str]] = {name: set() for name in modules}
    for module, path in modules.items():
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source, filename=str(path))
        calls = "import_module" in source
        for name in _imported_names(tree, module, path.name == "__init__.py", calls):
            if name != root and not name.startswith(root + "."):
                continue
            target = name
            while target not in modules and "." in target:
                target = target.rpartition(".")[0]
            if target in modules and target != module:
                graph[module].add(target)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The cycles of ``graph``, as closed chains of modules (``[a, b, c, a]``).

    Tarjan's algorithm (iterative) finds the strongly connected components; each is then shown
    as shortest cycles (breadth-first) through its members until every member is in one.
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1 or node in graph.get(node, ()):
                        components.append(sorted(component))
    chains = []
    for component in sorted(components):
        shown: set[str] = set()
        for member in component:
            if member not in shown:
                chain = _chain(graph, component, member)
                shown.update(chain)
                chains.append(chain)
    return chains


def _chain(graph: dict[str, set[str]], component: list[str], start: str) -> list[str]:
    """A shortest closed path from ``start`` back to itself inside the component."""
    members = set(component)
    parents: dict[str, str] = {}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for child in sorted(graph[node] & members):
                if child == start:
                    path = [node]
                    while path[-1] != start:
                        path.append(parents[path[-1]])
                    return [*reversed(path), start]
                if child not in parents:
                    parents[child] = node
                    following.append(child)
        frontier = following
    raise AssertionError(f"{component} is not strongly connected")


def test_cycle_finder_finds_a_hand_made_cycle():
    graph = {
        "a": {"b"},
        "b": {"c", "d"},
        "c": {"a"},
        "d": {"e"},
        "e": {"d"},
        "f": {"a"},
        "g": {"g"},
    }
    assert cycles(graph) == [["a", "b", "c", "a"], ["d", "e", "d"], ["g", "g"]]
    # one component, two cycles: both are shown
    assert cycles({"a": {"b", "c"}, "b": {"a"}, "c": {"a"}}) == [["a", "b", "a"], ["c", "a", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_graph_reads_lazy_relative_and_import_module_edges(tmp_path):
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__init__.py").write_text("from .sub import leaf\n")
    (root / "sub" / "__init__.py").write_text("")
    (root / "sub" / "leaf.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    from pkg import top\n"
        "def f():\n    import importlib\n    return importlib.import_module('pkg.top')\n"
    )
    (root / "top.py").write_text("from .sub.leaf import f\nfrom . import other\n")
    (root / "other.py").write_text("def g():\n    from pkg.sub import leaf\n")
    graph = import_graph(module_files(root, "pkg"), "pkg")
    assert graph == {
        "pkg": {"pkg.sub.leaf"},
        "pkg.sub": set(),
        "pkg.sub.leaf": {"pkg.top"},
        "pkg.top": {"pkg.sub.leaf", "pkg.other"},
        "pkg.other": {"pkg.sub.leaf"},
    }
    assert cycles(graph) == [["pkg.other", "pkg.sub.leaf", "pkg.top", "pkg.other"]]


def test_dpwidgets_has_no_import_cycle():
    found = cycles(import_graph(module_files()))
    assert not found, "import cycles in dpwidgets:\n" + "\n".join(
        " -> ".join(chain) for chain in found
    )


def _owner(module: str, modules: dict[str, Path]) -> str:
    """The package a module belongs to, for the private-name rule: a family's folder
    (``dpwidgets.families.svt``), else a top-level sub-package (``dpwidgets.engine``, whose
    sub-packages share their internals), else the root (``dpwidgets`` for ``dpwidgets.session``).
    """
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "families":
        return ".".join(parts[:3])
    if len(parts) >= 2 and modules.get(".".join(parts[:2]), Path()).name == "__init__.py":
        return ".".join(parts[:2])
    return parts[0]


def private_imports(modules: dict[str, Path]) -> list[str]:
    """Each ``from X import _name`` (a private name, not a dunder, not a module) of a module in
    another package than ``X``'s (:func:`_owner`): ``importer: X._name``."""
    found = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level:
                base = package.split(".")
                source = ".".join(base[: len(base) - (node.level - 1)]
                                  + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            if source not in modules or _owner(source, modules) == _owner(module, modules):
                continue
            for alias in node.names:
                name = alias.name
                if (name.startswith("_") and not name.startswith("__")
                        and f"{source}.{name}" not in modules):
                    found.append(f"{module}: {source}.{name}")
    return found


def test_private_import_finder_finds_a_hand_made_one(tmp_path):
    root = tmp_path / "pkg"
    for folder in (root, root / "a", root / "b", root / "families", root / "families" / "x",
                   root / "families" / "y"):
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "__init__.py").write_text("")
    (root / "a" / "mod.py").write_text("def _helper(): pass\ndef helper(): pass\n")
    (root / "a" / "near.py").write_text("from .mod import _helper\n")  # same package: allowed
    (root / "b" / "far.py").write_text(
        "from ..a.mod import _helper\nfrom ..a.mod import helper as _helper2\n"
        "from pkg.a.mod import _helper as h\nfrom ..a import mod as _mod\n")
    (root / "families" / "x" / "fig.py").write_text("def _source(): pass\n")
    (root / "families" / "y" / "fig.py").write_text("from ..x.fig import _source\n")
    assert private_imports(module_files(root, "pkg")) == [
        "pkg.b.far: pkg.a.mod._helper", "pkg.b.far: pkg.a.mod._helper",
        "pkg.families.y.fig: pkg.families.x.fig._source"]


def test_dpwidgets_imports_no_private_name_across_packages():
    found = private_imports(module_files())
    assert not found, "private names imported from another package:\n" + "\n".join(found)
