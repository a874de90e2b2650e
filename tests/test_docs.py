"""The documentation site builds with warnings as errors, and cites the literature as people do.

``make docs`` runs the same build into ``docs/_build/html``. Here it runs into a temporary
directory with a cold lesson cache, so every lesson is executed (about 1.5 minutes of the 2.5
this test takes on 2 cores; ``DPWIDGETS_DOCS_EXECUTE=off`` in the environment skips that). The
build needs the ``docs`` extra, which the ``test`` extra pulls in: without it the test fails
rather than skips, so a CI that lost the extra does not go green on an unbuilt site.

The site builds exactly the lessons ``docs/conf.py`` lists (``LESSONS``: the committed notebooks
of ``notebooks/``); the build here runs with a notebook that raises left in ``docs/lessons/``, as a
user's own scratch notebook would be, and must neither execute nor build it. Whether the built
pages render offline is ``tests/ui/test_docs_offline.py``'s question.
"""

from __future__ import annotations

import ast
import html
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
FAMILIES = ("svt", "diagnostics", "streams", "dynamic", "synth", "personalized")
BUILD_TIMEOUT = 540  # seconds; under pytest-timeout's 600

# A source text cited by its internal file number ("(003", "000 Alg. 4", "002 §5.2") instead of
# by author and year. The look-behind keeps "10,000 Alg..." and "1.000 §" out.
FILE_NUMBER_CITATION = re.compile(
    r"\(00[0-3]\b|(?<![\d,.])00[0-3],? (?:Alg|§|Thm|Fig|Def|Table|Eq|Ch\.|Sec)"
)
_SCRIPT_OR_STYLE = re.compile(r"<(script|style)\b.*?</\1\s*>", re.S | re.I)
_TAG = re.compile(r"<[^>]+>")


def _conf_lessons() -> list[str]:
    """``LESSONS`` of docs/conf.py, read without running the configuration."""
    tree = ast.parse((DOCS / "conf.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "LESSONS" for t in node.targets):
            return list(ast.literal_eval(node.value))
    raise AssertionError("docs/conf.py has no LESSONS")


# A notebook the build must leave alone: executed, it would fail the build.
SCRATCH = {"cells": [{"cell_type": "code", "execution_count": None, "id": "scratch",
                      "metadata": {}, "outputs": [],
                      "source": "raise RuntimeError('a scratch notebook was executed')"}],
           "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}},
           "nbformat": 4, "nbformat_minor": 5}


def _text(page: Path) -> str:
    """What a reader sees on a page: no scripts (BokehJS, widget state), no styles, no tags,
    whitespace collapsed."""
    raw = _SCRIPT_OR_STYLE.sub(" ", page.read_text(encoding="utf-8"))
    return " ".join(html.unescape(_TAG.sub(" ", raw)).split())


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    missing = [m for m in ("sphinx", "myst_nb", "numpydoc", "pydata_sphinx_theme")
               if importlib.util.find_spec(m) is None]
    if missing:
        pytest.fail(f"the docs extra is not installed (missing {', '.join(missing)}): "
                    f"pip install -e '.[docs]' (`make test` and `make docs` install it)")
    out = tmp_path_factory.mktemp("docs")
    cmd = [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-b", "html",
           "-d", str(out / "doctrees"), str(DOCS), str(out / "html")]
    scratch = DOCS / "lessons" / f"zz_scratch_{os.getpid()}.ipynb"  # git-ignored folder
    scratch.write_text(json.dumps(SCRATCH), encoding="utf-8")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=BUILD_TIMEOUT,
                              cwd=ROOT)
    finally:
        scratch.unlink()
    log = (proc.stdout + proc.stderr).splitlines()
    problems = [line for line in log if "WARNING" in line or "ERROR" in line]
    assert proc.returncode == 0, (
        f"sphinx-build -W failed ({proc.returncode}); warnings and errors:\n"
        + "\n".join(problems[-40:] or log[-40:]))
    return out / "html"


@pytest.mark.slow
def test_the_site_builds_with_warnings_as_errors(site):
    assert (site / "index.html").is_file()
    for page in ("getting-started", "modes", "curator", "contributing", "references", "api"):
        assert (site / f"{page}.html").is_file(), page
    for family in FAMILIES:
        assert (site / "families" / f"{family}.html").is_file(), family
    lessons = sorted(Path(name).stem for name in _conf_lessons())
    built = sorted(p.stem for p in (site / "lessons").glob("*.html") if p.stem != "index")
    assert built == lessons  # no scratch notebook among them
    # The pages load their scripts from the site: no CDN (tests/ui/test_docs_offline.py
    # opens them with every other host blocked).
    page = (site / "lessons" / "01_sparse_vector.html").read_text(encoding="utf-8")
    srcs = re.findall(r'<script[^>]*\bsrc="([^"]+)"', page)
    assert srcs and not [s for s in srcs if s.startswith(("http:", "https:", "//"))], srcs
    for shipped in ("require.js", "embed-amd.js", "tex-mml-chtml.js", "dpw-widgets.js"):
        assert any(s.split("?")[0].endswith(shipped) for s in srcs), (shipped, srcs)
        (hit,) = [s.split("?")[0] for s in srcs if s.split("?")[0].endswith(shipped)]
        assert (site / "lessons" / hit).resolve().is_file(), hit


def test_the_lessons_are_the_committed_notebooks():
    """docs/conf.py names every lesson; the list is what git has in notebooks/ (checked where
    this is a git checkout; a fresh clone without git builds the same list)."""
    lessons = _conf_lessons()
    assert lessons == sorted(lessons) and len(set(lessons)) == len(lessons), lessons
    for name in lessons:
        assert (ROOT / "notebooks" / name).is_file(), name
    git = shutil.which("git")
    if git is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the list cannot be compared with the committed files")
    proc = subprocess.run([git, "ls-files", "--", "notebooks/*.ipynb"], capture_output=True,
                          text=True, cwd=ROOT, check=True)
    committed = sorted(Path(line).name for line in proc.stdout.split())
    assert lessons == committed, (
        "docs/conf.py LESSONS and the notebooks committed in notebooks/ differ: add a new "
        f"lesson to LESSONS when committing it (LESSONS {lessons}, committed {committed})")


@pytest.mark.slow
def test_a_family_page_shows_its_benchmark_and_links_the_api(site):
    page = site / "families" / "svt.html"
    text = _text(page)
    # The measured accuracy is included from the benchmark's own Markdown, not copied by hand.
    title = (ROOT / "benchmarks" / "results" / "svt_selection.md").read_text(
        encoding="utf-8").splitlines()[0].lstrip("# ").strip()
    assert " ".join(title.split()) in text
    raw = page.read_text(encoding="utf-8")
    assert "api/generated/dpwidgets.families.svt.spec.html" in raw
    assert "api/generated/dpwidgets.engine.svt.html#dpwidgets.engine.svt.sparse_vector" in raw


@pytest.mark.slow
def test_lessons_say_their_widgets_are_live_in_jupyterlab(site):
    for page in (site / "lessons").glob("0*.html"):
        assert "make demo" in _text(page), page.name


@pytest.mark.slow
def test_no_page_cites_a_source_text_by_file_number(site):
    offenders = []
    for page in sorted(site.rglob("*.html")):
        for m in FILE_NUMBER_CITATION.finditer(_text(page)):
            context = m.string[max(0, m.start() - 60):m.end() + 20]
            offenders.append(f"{page.relative_to(site)}: ...{context}...")
    assert not offenders, ("cite the literature by author and year (\"Chen 2018, Alg. 9\"), "
                           "not by file number:\n" + "\n".join(offenders))


def test_the_citation_pattern():
    for bad in ("(003 Alg. 4)", "see 000 Alg. 11", "000 §4.3", "(002, Thm 3)", "001, Fig. 2"):
        assert FILE_NUMBER_CITATION.search(bad), bad
    for fine in ("10,000 Algorithms", "1,000,003 § rows", "Chen 2018, Alg. 9", "0.002 Thm",
                 "theta 0.001", "Lyu, Su & Li 2017, §6"):
        assert not FILE_NUMBER_CITATION.search(fine), fine
