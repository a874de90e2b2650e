"""The JavaScript the lesson pages load, shipped inside the built site: no CDN is asked.

A lesson page needs three scripts that myst-nb and Sphinx would otherwise load from CDNs:
RequireJS (the widget manager's module loader), the Jupyter widget manager that renders the
embedded widget state (``@jupyter-widgets/html-manager``'s ``embed-amd.js``, with the Font
Awesome files it styles buttons with) and MathJax 3. They come from their npm packages, fetched
with the npm client (``npm pack``: the package's tarball alone, none of its dependencies) at
the exact versions below and checked against the pinned sha512 before a file is taken out of
them. The tarballs and the files taken out are kept in ``.cache/docs-assets/`` (git-ignored), so
only the first build on a machine reaches the registry; later builds, and the built site, work
offline.

The widgets' own front-end modules come from the Python packages that define those widgets
(installed with the package, so always the version the lessons ran with): anywidget's and
jupyter_bokeh's AMD builds (their ``nbextension/index.js``). ``docs/_static/dpw-widgets.js``
points RequireJS at them, and points the widget manager's CDN fallback at this site, so that a
module missing here fails here instead of asking another host.

Licences: RequireJS MIT, the widget manager BSD-3-Clause (its bundle carries Font Awesome, SIL
OFL 1.1 / MIT), MathJax Apache-2.0, anywidget MIT, jupyter_bokeh BSD-3-Clause; each package's
``package.json`` (and LICENSE where the package has one) is copied beside its files.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import importlib.util
import os
import shutil
import subprocess
import tarfile
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CACHE = ROOT / ".cache" / "docs-assets"
#: Copied into the site's ``_static/`` (``html_static_path``); everything lands under ``PREFIX``.
STATIC = CACHE / "static"
PREFIX = "dpw-offline"


@dataclass(frozen=True)
class NpmPackage:
    name: str
    version: str
    integrity: str  # the registry's sha512 of the tarball (``npm view NAME@VERSION dist.integrity``)
    dest: str  # folder under PREFIX
    strip: str  # leading folder of the members, removed
    keep: tuple[str, ...]  # glob patterns of the members kept (after ``strip``)
    drop: tuple[str, ...] = ()

    @property
    def tarball(self) -> Path:
        return CACHE / f"{self.name.replace('@', '').replace('/', '-')}-{self.version}.tgz"


NPM = (
    NpmPackage(
        "requirejs", "2.3.8",
        "sha512-7/cTSLOdYkNBNJcDMWf+luFvMriVm7eYxp4BcFCsAX0wF421Vyce5SXP17c+Jd5otXKGNehIonFlyQXSowL6Mw==",
        "requirejs", "package/", ("require.js", "package.json")),
    NpmPackage(
        "@jupyter-widgets/html-manager", "1.0.15",
        "sha512-5thBIV6ymNgmPVOHvzx+gGy8ZSKmSazhtGw4/c4xJDVzRhG9PTeQsRjF3FUTopvFi//SABeNz1yp47bCrJ3CQA==",
        "html-manager", "package/dist/",
        ("embed-amd.js", "embed.js.LICENSE.txt", "*.woff2", "*.woff", "*.ttf", "*.eot", "*.svg")),
    NpmPackage(
        "mathjax", "3.2.2",
        "sha512-Bt+SSVU8eBG27zChVewOicYs7Xsdt40qm4+UpHyX7k0/O9NliPc+x77k1/FEsPsjKPZGJvtRZM1vO+geW0OhGw==",
        "mathjax", "package/",
        # The combined component Sphinx loads by default, the TeX extensions it autoloads, the
        # CommonHTML fonts, the menu and the accessibility components (with the speech rule
        # engine the menu's explorer loads).
        ("LICENSE", "package.json", "es5/tex-mml-chtml.js", "es5/input/*", "es5/output/chtml*",
         "es5/ui/*", "es5/a11y/*", "es5/sre/*", "es5/adaptors/*"),
        drop=("es5/output/chtml/fonts/woff-v2/*.woff.map",)),
)

#: Python package -> files of it copied to ``PREFIX/widgets/<package>/`` (its AMD module).
PYTHON_MODULES = {
    "anywidget": ("nbextension/index.js",),
    "jupyter_bokeh": ("nbextension/index.js", "nbextension/index.js.LICENSE.txt"),
}

#: Paths under ``_static/`` for conf.py.
REQUIRE_JS = f"{PREFIX}/requirejs/require.js"
EMBED_JS = f"{PREFIX}/html-manager/embed-amd.js"
MATHJAX_JS = f"{PREFIX}/mathjax/es5/tex-mml-chtml.js"


class AssetError(RuntimeError):
    """A shipped asset could not be fetched or did not match its pinned hash."""


def _sri(path: Path) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(path.read_bytes()).digest()).decode()


def _fetch(pkg: NpmPackage) -> Path:
    """The package's tarball, from the cache or by ``npm pack``, checked against its hash."""
    if not pkg.tarball.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise AssetError(
                f"the docs ship {pkg.name}@{pkg.version} from npm, and npm is not installed "
                f"(Debian: apt-get install npm); or put its tarball at {pkg.tarball}")
        CACHE.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=CACHE) as tmp:
            proc = subprocess.run(
                [npm, "pack", f"{pkg.name}@{pkg.version}", "--pack-destination", tmp,
                 "--silent"], capture_output=True, text=True, timeout=300, cwd=tmp)
            got = [p for p in Path(tmp).glob("*.tgz")]
            if proc.returncode != 0 or len(got) != 1:
                raise AssetError(f"npm pack {pkg.name}@{pkg.version} failed "
                                 f"({proc.returncode}):\n{proc.stderr[-2000:]}")
            os.replace(got[0], pkg.tarball)
    if _sri(pkg.tarball) != pkg.integrity:
        bad = pkg.tarball.with_suffix(".mismatch")
        os.replace(pkg.tarball, bad)
        raise AssetError(f"{pkg.tarball.name} does not match its pinned sha512 (moved to {bad})")
    return pkg.tarball


def _extract(pkg: NpmPackage) -> None:
    final = STATIC / PREFIX / pkg.dest
    stamp = final / f".{pkg.version}"
    if stamp.exists():
        return
    tarball = _fetch(pkg)
    STATIC.joinpath(PREFIX).mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=STATIC / PREFIX, prefix=f".{pkg.dest}-"))
    try:
        with tarfile.open(tarball) as tar:
            for member in tar.getmembers():
                if not member.isfile() or not member.name.startswith(pkg.strip):
                    continue
                rel = member.name[len(pkg.strip):]
                if (not any(fnmatch.fnmatch(rel, k) for k in pkg.keep)
                        or any(fnmatch.fnmatch(rel, d) for d in pkg.drop)
                        or ".." in Path(rel).parts):
                    continue
                target = tmp / rel
                target.parent.mkdir(parents=True, exist_ok=True)
                with tar.extractfile(member) as src, target.open("wb") as dst:
                    shutil.copyfileobj(src, dst)
        (tmp / f".{pkg.version}").touch()
        if final.exists():  # another version, or a half-finished earlier build
            shutil.rmtree(final)
        try:
            os.rename(tmp, final)
        except OSError:  # a build running at the same time got there first
            if not stamp.exists():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _copy_python_modules() -> None:
    for package, files in PYTHON_MODULES.items():
        spec = importlib.util.find_spec(package)
        if spec is None or spec.origin is None:
            raise AssetError(f"{package} is not installed: its widgets cannot render on the site")
        home = Path(spec.origin).parent
        for rel in files:
            src = home / rel
            dst = STATIC / PREFIX / "widgets" / package / Path(rel).name
            if dst.exists() and dst.read_bytes() == src.read_bytes():
                continue
            dst.parent.mkdir(parents=True, exist_ok=True)
            tmp = dst.with_suffix(f".{os.getpid()}.tmp")
            shutil.copyfile(src, tmp)
            os.replace(tmp, dst)


def ensure() -> Path:
    """Fetch (once) and lay out every asset under ``STATIC``; return ``STATIC``."""
    for pkg in NPM:
        _extract(pkg)
    _copy_python_modules()
    return STATIC
