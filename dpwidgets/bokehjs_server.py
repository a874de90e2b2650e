"""BokehJS served by the Jupyter server: a notebook loads it by URL instead of carrying it.

Without this, the first widget of a kernel publishes BokehJS inline (``_bokeh.ensure_bokehjs``):
about 3 MB of JavaScript in the output, saved with every notebook. With this Jupyter server
extension enabled (``jupyter_server_config.d/dpwidgets.json``, installed with the package),
the server serves the installed ``bokeh`` package's bundles at
``<base_url>dpwidgets/bokehjs/<file>?v=<bokeh version>`` (the browser caches them: loaded once,
whatever the number of notebooks), and tells the kernels it starts so through two environment
variables. A kernel that the serving server started publishes a loader of about 1 KB instead
of the bundles; any other kernel (nbclient, Voila run on its own, a remote kernel) keeps the
inline loader, which works everywhere. Nothing reaches for a CDN either way.

The loader fetches the bundles synchronously, so that BokehJS is there before the widget
views below it are built (jupyter_bokeh's view needs ``window.Bokeh`` when it is created).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

__all__ = ["ENV_PID", "ENV_URL", "ROUTE", "served_loader"]

#: Where the server serves the bundles, under its base URL.
ROUTE = "dpwidgets/bokehjs"
#: The bundles' URL (an absolute path on the page's origin), set by the serving server.
ENV_URL = "DPWIDGETS_BOKEHJS_URL"
#: The process id of the serving server: only its own kernels (its children) use the URL.
ENV_PID = "DPWIDGETS_BOKEHJS_SERVER_PID"


def _bundle_dir() -> Path:
    import bokeh

    return Path(bokeh.__file__).resolve().parent / "server" / "static" / "js"


def _jupyter_server_extension_points() -> list[dict]:
    return [{"module": "dpwidgets.bokehjs_server"}]


def _load_jupyter_server_extension(serverapp) -> None:
    """Serve the bundles (``*.min.js`` of the installed bokeh only) and tell the kernels."""
    from jupyter_server.base.handlers import FileFindHandler
    from jupyter_server.utils import url_path_join

    base_url = serverapp.web_app.settings.get("base_url", "/")
    pattern = url_path_join(base_url, ROUTE, r"(bokeh(?:-[a-z]+)?\.min\.js)")
    serverapp.web_app.add_handlers(
        ".*$", [(pattern, FileFindHandler, {"path": str(_bundle_dir())})])
    # Kernels inherit the server's environment.
    os.environ[ENV_URL] = url_path_join(base_url, ROUTE) + "/"
    os.environ[ENV_PID] = str(os.getpid())
    serverapp.log.info("dpwidgets: BokehJS served at %s", os.environ[ENV_URL])


def served_url() -> str | None:
    """The bundles' URL if this process is a kernel of a server that serves them, else None."""
    url, pid = os.environ.get(ENV_URL), os.environ.get(ENV_PID)
    if not url or not pid or str(os.getppid()) != pid:
        return None  # not our server's kernel (e.g. a tool started from a server's terminal)
    return url


_LOADER = """\
(function () {
  var version = %(version)s, base = %(base)s, files = %(files)s;
  if (window.Bokeh && window.Bokeh.version === version) { return; }
  for (var i = 0; i < files.length; i++) {
    var url = base + files[i] + "?v=" + encodeURIComponent(version);
    var request = new XMLHttpRequest();
    request.open("GET", url, false);  // synchronous: the widget views below need Bokeh
    request.send(null);
    if (request.status !== 200) {
      throw new Error("dpwidgets: BokehJS not found at " + url + " (HTTP " + request.status +
        "); run dpwidgets.widgets.ensure_bokehjs(force=True, inline=True) and display the " +
        "widget again");
    }
    var script = document.createElement("script");
    script.text = request.responseText;
    document.head.appendChild(script);
  }
})();
"""


def served_loader(components: tuple[str, ...]) -> str | None:
    """The JavaScript that loads ``components`` (e.g. ``("bokeh", "bokeh-gl")``) from the
    serving server, or None when this kernel is not one of its kernels."""
    url = served_url()
    if url is None:
        return None
    import bokeh

    files = [f"{name}.min.js" for name in components]
    return _LOADER % {"version": json.dumps(bokeh.__version__), "base": json.dumps(url),
                      "files": json.dumps(files)}
