"""Sphinx configuration of the dpwidgets documentation site: ``make docs``.

The site is MyST markdown (``docs/*.md``), the lessons of ``LESSONS`` (the committed notebooks of
``notebooks/``, named one by one; nothing else there is built) rendered by myst-nb (copied to
``docs/lessons/`` at each build: ``_sync_lessons``) and an API reference generated
by autosummary + numpydoc from the docstrings. It is built with ``-W --keep-going``: every
warning is an error, so a broken cross-reference, a malformed docstring or a lesson that raises
fails the build.

Lesson execution (``DPWIDGETS_DOCS_EXECUTE``): ``cache`` (the default) runs each lesson once and
keeps its outputs in ``<outdir>/../.jupyter_cache`` until its code changes; ``force`` reruns every
lesson; ``off`` renders the lessons without outputs (a quick check of the prose and the API).

Offline: the pages load RequireJS, the Jupyter widget manager and MathJax from the site itself
(``offline_assets.py``: fetched once from their npm packages at pinned versions and hashes, kept
in ``.cache/docs-assets/``), never from a CDN, so the built site renders its math and widgets
from ``file://`` or any static server with no other host reachable.
"""

from __future__ import annotations

import atexit
import importlib
import inspect
import json
import os
import re
import shutil
import sys
import tempfile
from importlib.metadata import version as _installed_version
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

project = "dpwidgets"
author = "the dpwidgets authors"
copyright = "the dpwidgets authors, BSD-3-Clause"  # noqa: A001 (Sphinx's name)
release = version = _installed_version("dpwidgets")

extensions = [
    "myst_nb",  # MyST markdown pages and the lesson notebooks (brings myst_parser)
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
]

root_doc = "index"
exclude_patterns = ["_build", "jupyter_execute", "**.ipynb_checkpoints", "README.md"]
# The lessons: exactly the committed notebooks of notebooks/, by name. A notebook someone leaves
# there (a scratch copy, an analysis against their own curator) is neither copied nor executed
# nor built; a new lesson is added here when it is committed (tests/test_docs.py checks this
# list against `git ls-files notebooks/*.ipynb` where git is available). A list rather than a
# glob or git, so that a fresh clone, a tarball without .git and a checkout with untracked
# notebooks all build the same site.
LESSONS = (
    "00_quickstart.ipynb",
    "01_sparse_vector.ipynb",
    "02_regression_diagnostics.ipynb",
    "03_streams.ipynb",
    "04_dynamic_histograms.ipynb",
    "05_synthetic_data.ipynb",
    "06_personalized_dp.ipynb",
    "07_curator.ipynb",
    "08_own_data.ipynb",
)
# Only the prose pages, the generated API pages and the listed lessons are sources: any other
# notebook under docs/ (one saved into docs/lessons/ by hand) is not read.
include_patterns = ["**.md", "**.rst", *(f"lessons/{name}" for name in LESSONS)]
templates_path = ["_templates"]
nitpicky = False  # type hints name numpy/pandas/ibis objects that have no page here

# -- MyST --------------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "deflist", "dollarmath"]
myst_heading_anchors = 3

# -- The lessons (myst-nb) ---------------------------------------------------------------------
def _sync_lessons() -> None:
    """Copy the ``LESSONS`` from ``notebooks/`` to ``docs/lessons/`` (git-ignored), keeping their
    mtimes.

    Copies rather than symbolic links: the lessons link to each other by relative path
    (``[...](01_sparse_vector.ipynb)``), which must resolve inside the source tree. A copy is
    replaced only when the notebook changed, so an unchanged lesson is not re-read. Nothing else
    in ``docs/lessons/`` is touched (``include_patterns`` keeps it out of the build).
    """
    lessons = Path(__file__).parent / "lessons"
    wanted = {name: ROOT / "notebooks" / name for name in LESSONS}
    missing = [name for name, src in wanted.items() if not src.is_file()]
    if missing:
        raise FileNotFoundError(f"lessons listed in docs/conf.py LESSONS but not in notebooks/: "
                                f"{', '.join(missing)}")
    for name, src in wanted.items():
        dst = lessons / name
        if dst.exists() and dst.read_bytes() == src.read_bytes():
            continue
        tmp = dst.with_suffix(f".{os.getpid()}.tmp")
        shutil.copy2(src, tmp)
        os.replace(tmp, dst)  # atomic: a build running at the same time never reads half a file


_sync_lessons()
nb_execution_mode = os.environ.get("DPWIDGETS_DOCS_EXECUTE", "cache")
nb_execution_timeout = 300  # seconds per cell, as tests/notebooks; the slowest takes a few
nb_execution_in_temp = True  # the curator lesson writes files: never into the source tree
nb_execution_raise_on_error = True  # a lesson that raises fails the build
nb_execution_show_tb = True
nb_merge_streams = True

# A lesson writes nothing outside a scratch directory: analyst sessions keep their ledger in
# $DPWIDGETS_LEDGER (tests/notebooks/test_notebooks.py does the same), never in the user's data
# directory. Set here, before any kernel starts, so every kernel inherits it.
_SCRATCH = Path(tempfile.mkdtemp(prefix="dpwidgets-docs-"))
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)
os.environ["DPWIDGETS_LEDGER"] = str(_SCRATCH / "ledger.sqlite")

LESSON_NOTE = """\
```{{note}}
This page is the lesson `notebooks/{name}`, executed when this site was built. The widgets below
are a snapshot of their state at that moment (where the browser can load their JavaScript):
their sliders and buttons need a Python kernel. To use them live, open the notebook in JupyterLab
(`make demo`) or on Binder (see {{doc}}`/getting-started`).
```
"""


def _add_lesson_note(app, docname: str, source: list[str]) -> None:
    """Put the 'widgets are live in JupyterLab' note under the title of every lesson page."""
    if not docname.startswith("lessons/") or not str(app.env.doc2path(docname)).endswith(".ipynb"):
        return
    nb = json.loads(source[0])
    note = LESSON_NOTE.format(name=Path(app.env.doc2path(docname)).name)
    nb["cells"].insert(1, {"cell_type": "markdown", "id": "dpwidgets-docs-lesson-note",
                           "metadata": {}, "source": note})
    source[0] = json.dumps(nb)


# -- API reference (autosummary + numpydoc) ----------------------------------------------------
def _family_modules() -> list[str]:
    """Every module of every family folder (dpwidgets/families/<family>/), found as the
    package finds its families: a new family's pages need no list edited here."""
    import pkgutil

    from dpwidgets import families

    found = []
    for family in families.names():
        package = importlib.import_module(f"dpwidgets.families.{family}")
        found.append(package.__name__)
        found += sorted(f"{package.__name__}.{m.name}" for m in pkgutil.iter_modules(
            package.__path__) if not m.name.startswith("_"))
    return found


def _write_family_api_page(modules: list[str]) -> None:
    """docs/api/families.rst: the page of the family modules (in api.md's toctree), written
    from what the package finds, so that a new family's folder needs no docs edit."""
    title = "The families"
    lines = [title, "=" * len(title), "",
             "Every module of every family folder, found in the package "
             "(:func:`dpwidgets.families.names`).", "",
             ".. autosummary::", "   :toctree: generated", ""]
    lines += [f"   {m}" for m in modules]
    lines += [""]
    page = Path(__file__).resolve().parent / "api" / "families.rst"
    text = "\n".join(lines)
    if not page.is_file() or page.read_text(encoding="utf-8") != text:
        page.parent.mkdir(exist_ok=True)
        page.write_text(text, encoding="utf-8")


API_MODULES = [
    "dpwidgets.door",
    "dpwidgets.session",
    "dpwidgets.mechanism",
    "dpwidgets.tables",
    "dpwidgets.declarations",
    "dpwidgets.export",
    "dpwidgets.curator",
    "dpwidgets.curator.config",
    "dpwidgets.curator.door",
    "dpwidgets.curator.app",
    "dpwidgets.curator.guard",
    "dpwidgets.curator.routes",
    *(f"dpwidgets.curator.routes.{m}" for m in (
        "access", "checks", "errors", "health", "datasets", "budget", "releases", "audit")),
    "dpwidgets.curator.client",
    "dpwidgets.curator.cli",
    "dpwidgets.persistence",
    *(f"dpwidgets.persistence.{m}" for m in (
        "ledger", "totals", "journal", "datasets", "claims", "records", "backend", "sqlite",
        "postgres", "paths", "store")),
    *(f"dpwidgets.engine.{m}" for m in (
        "mechanisms", "svt", "diagnostics", "streams", "dynamic", "synth",
        "personalized", "histograms", "evaluation", "audit", "attacks", "errors", "validation")),
    *(f"dpwidgets.engine.mechanisms.{m}" for m in (
        "noise", "context", "checks", "discrete", "selection", "comparisons", "smooth_median",
        "coins")),
    *(f"dpwidgets.engine.svt.{m}" for m in (
        "variants", "run", "selection")),
    *(f"dpwidgets.engine.diagnostics.{m}" for m in (
        "checks", "records", "bounds", "residual_plot", "recursive_medians", "roc",
        "binned_residual_plot", "metrics")),
    *(f"dpwidgets.engine.dynamic.{m}" for m in (
        "constants", "result", "checks", "common", "sampling", "w_event", "baselines",
        "quality")),
    *(f"dpwidgets.engine.personalized.{m}" for m in (
        "constants", "utilities", "checks", "sampling", "partitioning", "plans", "histogram",
        "logistic", "quality")),
    *(f"dpwidgets.engine.audit.{m}" for m in (
        "result", "privacy_loss", "counterexamples", "svt_audit", "samples")),
    *(f"dpwidgets.engine.synth.{m}" for m in (
        "copula", "margins", "dependence", "ties", "domains", "result", "baselines",
        "evaluation")),
    *(f"dpwidgets.engine.histograms.{m}" for m in (
        "interface", "workloads", "hilbert", "trees", "baselines", "hb", "dawa",
        "dawa_published", "ahp", "ag", "mwem", "efpa")),
    *(f"dpwidgets.engine.streams.{m}" for m in (
        "constants", "checks", "scalar_core", "vector_core", "adaptive_smoother",
        "perturb_group_smooth", "queries", "quality", "baselines", "hierarchies")),
    "dpwidgets.params",
    "dpwidgets.families",
    *(_FAMILY_MODULES := _family_modules()),
    "dpwidgets.ui",
    *(f"dpwidgets.ui.{m}" for m in (
        "base", "controls", "figures", "bokeh_widget", "accuracy", "meter", "static")),
    "dpwidgets.widgets",
]


#: Packages split out of one module whose public names stay documented on the package's page,
#: where they were documented (and linked, e.g. from docs/families/) before the split; the
#: pages of their submodules link there.
API_HOME_PACKAGES = {"dpwidgets.engine.svt"}


_write_family_api_page(_FAMILY_MODULES)


def _home(obj, name: str) -> str | None:
    """The module whose page documents ``obj``: where it is defined, or the package of
    :data:`API_HOME_PACKAGES` that defines it and re-exports it under ``name``."""
    home = getattr(obj, "__module__", None)
    if not isinstance(home, str):
        return None
    package = home.rpartition(".")[0]
    if package in API_HOME_PACKAGES:
        exported = importlib.import_module(package)
        if name in exported.__all__ and getattr(exported, name) is obj:
            return package
    return home


def _reexports() -> dict[str, str]:
    """``"module.name" -> "documenting_module.name"`` for the public names a module shares with
    another documented module: its page links there instead of documenting the object twice."""
    out = {}
    for modname in API_MODULES:
        mod = importlib.import_module(modname)
        for name in getattr(mod, "__all__", ()):
            obj = getattr(mod, name)
            home = _home(obj, name)
            if (isinstance(home, str) and home != modname and home in API_MODULES
                    and getattr(obj, "__name__", None) == name):
                out[f"{modname}.{name}"] = f"{home}.{name}"
    return out


def _drop_stale_api_pages() -> None:
    """Remove generated API pages of modules no longer in ``API_MODULES`` (a module moved or
    split leaves its old page behind in a working copy: an orphan page, and its objects found
    twice). Pages of listed modules and of their members are kept, so a rebuild stays quick."""
    generated = Path(__file__).resolve().parent / "api" / "generated"
    if not generated.is_dir():
        return
    for page in generated.glob("*.rst"):
        name = page.stem
        parent, _, last = name.rpartition(".")
        if name in API_MODULES:
            continue
        member = getattr(importlib.import_module(parent), last, None) if parent in API_MODULES \
            else None
        if member is None or inspect.ismodule(member):
            page.unlink()  # a module no longer listed, or a member that is gone


_drop_stale_api_pages()
autosummary_generate = True
autosummary_ignore_module_all = False  # a module's page lists exactly its __all__
autosummary_imported_members = False
autosummary_context = {"reexports": _reexports()}
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "signature"
autodoc_inherit_docstrings = False  # a subclass without a docstring is not described twice
autoclass_content = "class"

numpydoc_show_class_members = False  # autodoc lists members; numpydoc's tables would repeat them
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# -- Docstring slips, mended when the API pages are built --------------------------------------
# The docstrings are read by people in the source first, and four habits that read well there
# are reST errors. Rather than silence docutils for the whole site (suppress_warnings has only the
# one type "docutils" for these), each is mended here, narrowly; docs/README.md lists where
# they occur today and the fix in the source:
#   1. |x| for an absolute value or a set size is a substitution reference in reST: outside
#      literals, literal blocks and roles, a |...| with no space inside its bars is escaped.
#   2. A section underline shorter than its title ("Errata and readings (...)\n-----") is
#      lengthened.
#   3. In the engine, :mod:`.svt` / :func:`.histograms.publish` mean the sibling module; Sphinx
#      reads a leading dot as "search everywhere", finds dpwidgets.releases.svt too and warns
#      (and may link the wrong one). Such targets are spelt out, keeping the text shown.
#   4. A simple table whose text runs past its column's ``====`` is re-aligned (_mend_tables).
_LITERAL = re.compile(r"(``.+?``|:[\w:]+:`[^`]*`|`[^`]*`_{0,2})", re.S)
_BARS = re.compile(r"(?<![\\|\w])\|(?=[^\s|])([^|\n]*?[^\s|\\])\|(?![|_\w])")
_UNDERLINE = re.compile(r"(-{3,}|={3,}|~{3,}|\^{3,})")
_SIBLING = re.compile(r":(mod|func|class|data|meth|attr|exc|obj):`(~?)\.((\w+)(\.[\w.]*)?)`")
_ENGINE = {p.stem for p in (ROOT / "dpwidgets" / "engine").glob("[!_]*.py")} | {
    p.parent.name for p in (ROOT / "dpwidgets" / "engine").glob("[!_]*/__init__.py")}


def _literal_lines(lines: list[str]) -> set[int]:
    """Indices of the lines inside literal blocks (after ``::``) and directive bodies."""
    inside, opener_indent, out = False, 0, set()
    for i, line in enumerate(lines):
        indent = len(line) - len(line.lstrip())
        if inside and line.strip() and indent <= opener_indent:
            inside = False
        if inside:
            out.add(i)
            continue
        if line.rstrip().endswith("::") or re.match(r"\s*\.\. [\w:-]+::", line):
            inside, opener_indent = True, indent
    return out


_BORDER = re.compile(r"(\s*)=+( +=+)+\s*")
_CHUNK = re.compile(r"\S+(?: \S+)*")  # cell text: runs of words separated by single spaces


def _columns(border: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"=+", border)]


def _cells(line: str, cols: list[tuple[int, int]]) -> dict[int, tuple[int, int]]:
    """Column index -> (start, end) of a table row's text, each run of words assigned to the
    column it starts in."""
    out: dict[int, tuple[int, int]] = {}
    for m in _CHUNK.finditer(line):
        k = max([0] + [j for j, (start, _) in enumerate(cols) if start <= m.start()])
        out[k] = (out[k][0], m.end()) if k in out else (m.start(), m.end())
    return out


def _mend_tables(lines: list[str]) -> None:
    """4. Re-align simple tables whose cells overflow into the next column (a "Malformed
    table" for docutils, though it reads fine in the source)."""
    borders = [i for i, line in enumerate(lines) if _BORDER.fullmatch(line)]
    while len(borders) >= 2:
        first = borders[0]
        cols = _columns(lines[first])
        group = [b for b in borders if _columns(lines[b]) == cols][:3]
        last = group[-1] if len(group) >= 2 else first
        borders = [b for b in borders if b > last]
        if last == first:
            continue
        rows = {i: _cells(lines[i], cols) for i in range(first + 1, last)
                if i not in group and lines[i].strip()}
        if all(end <= cols[k][1] for cells in rows.values() for k, (_, end) in cells.items()
               if k < len(cols) - 1):
            continue  # well formed
        width = [max([cols[k][1] - cols[k][0]] + [end - start for cells in rows.values()
                                                  for j, (start, end) in cells.items() if j == k])
                 for k in range(len(cols))]
        indent = " " * cols[0][0]
        for i in group:
            lines[i] = indent + "  ".join("=" * w for w in width)
        for i, cells in rows.items():
            text = [lines[i][slice(*cells[k])] if k in cells else "" for k in range(len(cols))]
            lines[i] = (indent + "  ".join(t.ljust(w) for t, w in zip(text, width, strict=True))
                        ).rstrip()


def _escape_bars(text: str) -> str:
    parts = _LITERAL.split(text)  # inline literals and roles may span lines: split the block
    for j in range(0, len(parts), 2):  # the text between them
        parts[j] = _BARS.sub(r"\\|\1\\|", parts[j])
    return "".join(parts)


def _mend_docstring(app, what, name, obj, options, lines: list[str]) -> None:
    _mend_tables(lines)
    literal = _literal_lines(lines)
    start = 0
    while start < len(lines):  # each run of lines outside literal blocks, as one text
        if start in literal:
            start += 1
            continue
        end = start
        while end < len(lines) and end not in literal:
            end += 1
        lines[start:end] = _escape_bars("\n".join(lines[start:end])).split("\n")
        start = end
    if name.startswith("dpwidgets.engine."):
        for i, line in enumerate(lines):
            lines[i] = _SIBLING.sub(
                lambda m: (f":{m[1]}:`{m[3] if not m[2] else m[3].rsplit('.', 1)[-1]} "
                           f"<dpwidgets.engine.{m[3]}>`") if m[4] in _ENGINE else m[0], line)
    for i in range(1, len(lines)):
        title, rule = lines[i - 1], lines[i]
        if (_UNDERLINE.fullmatch(rule.strip()) and title.strip() and i - 1 not in literal
                and len(rule.strip()) < len(title.strip())
                and len(rule) - len(rule.lstrip()) == len(title) - len(title.lstrip())):
            lines[i] = rule.rstrip() + rule.strip()[0] * (len(title.strip()) - len(rule.strip()))


# -- Warnings that cannot be fixed here --------------------------------------------------------
suppress_warnings = [
    # The BokehJS loader that dpwidgets.ui.bokeh_widget displays once per kernel is a bundle of
    # application/javascript (rendered: it loads BokehJS into the static page, so that the
    # embedded Bokeh widgets can draw) and Bokeh's own application/vnd.bokehjs_load.v0+json,
    # which myst-nb has no renderer for and warns about while rendering the bundle, before it
    # picks the JavaScript. Nothing in this repository emits that MIME type: it is Bokeh's.
    "mystnb.unknown_mime_type",
]

# -- HTML --------------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "dpwidgets"
# The scripts the pages would load from CDNs, shipped in _static/ instead (offline_assets.py):
# RequireJS and the widget manager on the pages with embedded widgets (myst-nb adds
# nb_ipywidgets_js, in this order, where a notebook saved widget state), MathJax on every page
# with math. dpw-widgets.js (docs/_static/) tells RequireJS where the widgets' modules are.
sys.path.insert(0, str(Path(__file__).parent))
import offline_assets  # noqa: E402  (docs/offline_assets.py, beside this file)

html_static_path = ["_static", str(offline_assets.ensure())]
nb_ipywidgets_js = {
    offline_assets.REQUIRE_JS: {},
    "dpw-widgets.js": {},
    offline_assets.EMBED_JS: {},
}
mathjax_path = offline_assets.MATHJAX_JS
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "header_links_before_dropdown": 5,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}
html_sidebars = {"index": [], "getting-started": [], "modes": [], "curator": [],
                 "contributing": [], "references": []}


def setup(app):
    app.connect("source-read", _add_lesson_note)
    app.connect("autodoc-process-docstring", _mend_docstring, priority=400)  # before numpydoc
