"""The lessons as a new user sees them in ``make demo``: every lesson run top to bottom in
JupyterLab (Chromium), then measured in the page (DOM geometry, not pixel diffs).

Per lesson: no cut text (a dropdown's chosen option wider than its box, a label or readout
whose ``scrollWidth`` exceeds its box), no Bokeh legend outside its canvas (measured on
BokehJS's own layout, ``Bokeh.index``), no axis whose tick labels run into each other
(BokehJS's tick positions against the labels' size), no "nan" / "NaN" / "None" shown by a
widget, no budget meter under "Nothing has been spent yet" that shows a refusal, and no
JupyterLab news popup.
The server is started as ``make demo`` starts it: with the repository's
``jupyter-config/lab/settings`` as its application settings and without the harness's own
"no news" user setting, so that only the repository's configuration keeps the popup away.

A screenshot per lesson is saved (its path is in every assertion message). What the canvas
hides from the DOM (titles against toolbars, legends estimated against their plot as built,
controls hidden while irrelevant) is checked on the models in
tests/widgets/test_legibility.py.
"""

from __future__ import annotations

import json
import re
import shlex

import pytest

from .lab import (
    NOTEBOOK,
    assert_no_widget_errors,
    open_notebook,
    run_all_cells,
    screenshot,
)
from .lesson_timing import lesson_name, lessons
from .server import REPO, recorded_page, start_lab, stop_lab

pytestmark = pytest.mark.ui

LESSONS = lessons()
NEWS = "official Jupyter news"


def _demo_settings_dir() -> str:
    """The application settings folder ``make demo`` passes to JupyterLab (its recipe)."""
    recipe = re.search(r"^demo:.*?\n((?:\t.*\n)+)", (REPO / "Makefile").read_text(), re.M)
    assert recipe, "no demo target in the Makefile"
    flags = shlex.split(recipe.group(1).replace("\\\n", " "), posix=True)
    found = [f.split("=", 1)[1] for f in flags if f.startswith("--LabApp.app_settings_dir=")]
    assert found, f"make demo gives JupyterLab no application settings: {recipe.group(1)}"
    return found[0].replace("$(CURDIR)", str(REPO))


@pytest.fixture(scope="module")
def demo_server(tmp_path_factory):
    """One JupyterLab server for the module, configured like ``make demo``."""
    base = tmp_path_factory.mktemp("layout")
    config_path = base / "config-path"
    config_path.mkdir()
    (config_path / "jupyter_server_config.json").write_text(
        json.dumps({"LabApp": {"app_settings_dir": _demo_settings_dir()}}))
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("JUPYTER_CONFIG_PATH", str(config_path))
        server = start_lab(base / "lab")
    # The harness's user settings turn the news off; the demo has no such user setting.
    (base / "lab" / "settings" / "@jupyterlab" / "apputils-extension"
     / "notification.jupyterlab-settings").unlink()
    try:
        yield server
    finally:
        stop_lab(server)


@pytest.fixture
def lesson_page(playwright_driver, demo_server, tmp_path):
    with recorded_page(playwright_driver, tmp_path / "chromium-profile") as pg:
        yield pg
    for kernel in demo_server.api("kernels"):
        demo_server.api(f"kernels/{kernel['id']}", method="DELETE")


# Everything measured in one pass. BokehJS draws legends on its canvas: their boxes come from
# its views (``Bokeh.index``), in canvas pixels, against the canvas of their plot.
_FACTS_JS = r"""
(scope) => {
  const root = document.querySelector(scope);
  const shown = (el) => el.offsetParent !== null && getComputedStyle(el).visibility !== 'hidden';
  const cut = [];
  const probe = document.createElement('span');
  probe.style.cssText = 'position:absolute;visibility:hidden;white-space:pre';
  document.body.appendChild(probe);
  for (const sel of root.querySelectorAll('.jupyter-widgets select')) {
    if (!shown(sel) || sel.multiple || sel.size > 1) continue;
    const opt = sel.options[sel.selectedIndex];
    if (!opt) continue;
    const cs = getComputedStyle(sel);
    probe.style.font = cs.font;
    probe.textContent = opt.text;
    const room = sel.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    if (probe.getBoundingClientRect().width > room + 1) {
      cut.push(`dropdown "${opt.text}" (${Math.round(probe.getBoundingClientRect().width)}`
               + ` px in ${Math.round(room)} px)`);
    }
  }
  probe.remove();
  const boxes = root.querySelectorAll(
    '.jupyter-widgets .widget-label, .jupyter-widgets .widget-readout, '
    + 'button.jupyter-button, .widget-checkbox label span, .widget-toggle-button');
  for (const el of boxes) {
    if (shown(el) && el.scrollWidth > el.clientWidth + 1) {
      cut.push(`"${(el.textContent || el.value || '').trim()}" (${el.scrollWidth} > `
               + `${el.clientWidth})`);
    }
  }
  const words = [];
  for (const w of root.querySelectorAll('.jp-OutputArea-output .jupyter-widgets')) {
    if (!shown(w)) continue;
    const hit = (w.innerText || '').match(/(^|[^\w.])(nan|NaN|None)(?![\w(])/);
    if (hit) {
      const at = w.innerText.indexOf(hit[0]);
      words.push(w.innerText.slice(Math.max(0, at - 60), at + 20).replace(/\s+/g, ' '));
    }
  }
  const meters = [];
  for (const cell of root.querySelectorAll('.jp-CodeCell')) {
    const meter = cell.querySelector('.dpw-meter');
    if (!meter) continue;
    let prev = cell.previousElementSibling;
    while (prev && !prev.classList.contains('jp-MarkdownCell')) prev = prev.previousElementSibling;
    const said = prev ? prev.innerText : '';
    const refusal = meter.querySelector('.dpw-meter-message');
    if (/nothing has been spent/i.test(said) && refusal && refusal.innerText.trim()) {
      meters.push(refusal.innerText.trim().slice(0, 120));
    }
  }
  const legends = [];
  let views = 0;
  const index = window.Bokeh && window.Bokeh.index;
  if (index && index.all_views) {
    for (const v of index.all_views()) {
      views += 1;
      if (!v.model || v.model.type !== 'Legend' || !v.model.visible) continue;
      if (!v.model.items.some((it) => it.visible)) continue;
      const pv = v.parent;
      const canvas = pv && pv.canvas_view ? pv.canvas_view.bbox : null;
      const b = v.bbox;
      if (!canvas || !b || !pv.el.isConnected || !pv.el.offsetParent) continue;
      if (b.left < -1 || b.top < -1 || b.right > canvas.width + 1
          || b.bottom > canvas.height + 1) {
        const title = pv.model.title ? pv.model.title.text : '';
        legends.push(`"${title}": legend [${Math.round(b.left)}, ${Math.round(b.right)}] x `
                     + `[${Math.round(b.top)}, ${Math.round(b.bottom)}] in a canvas `
                     + `${Math.round(canvas.width)} x ${Math.round(canvas.height)}`);
      }
    }
  }
  // Tick labels that run into each other, from BokehJS's own tick positions (canvas px).
  const ticks = [];
  const ctx = document.createElement('canvas').getContext('2d');
  const px = (size) => parseFloat(size) * (String(size).endsWith('pt') ? 4 / 3 : 1);
  if (index && index.all_views) {
    for (const v of index.all_views()) {
      if (!v.model || !/Axis$/.test(v.model.type) || !v.model.visible || !v.panel) continue;
      const pv = v.parent;
      if (!pv || !pv.el || !pv.el.isConnected || !pv.el.offsetParent) continue;
      const vertical = v.panel.side === 'left' || v.panel.side === 'right';
      let at, labels;
      try {
        const coords = v.tick_coords.major[vertical ? 1 : 0];
        const scale = vertical ? v.coordinates.y_scale : v.coordinates.x_scale;
        at = Array.from(scale.v_compute(coords));
        labels = v.compute_labels(coords).items.map((l) => l.text);
      } catch (e) { continue; }
      const size = px(v.model.major_label_text_font_size || '11px');
      const turned = v.model.major_label_orientation !== 'horizontal';
      ctx.font = `${size}px helvetica, arial, sans-serif`;
      for (let i = 1; i < at.length; i++) {
        const gap = Math.abs(at[i] - at[i - 1]);
        const need = vertical || turned ? size
          : (ctx.measureText(labels[i]).width + ctx.measureText(labels[i - 1]).width) / 2 + 2;
        if (gap < need) {
          const title = pv.model.title ? pv.model.title.text : '';
          ticks.push(`"${title}" ${v.panel.side} axis: "${labels[i - 1]}" and "${labels[i]}" `
                     + `${Math.round(gap)} px apart (need ${Math.round(need)})`);
          break;
        }
      }
    }
  }
  return {cut, words, meters, legends, views, ticks,
          news: document.body.innerText.includes('official Jupyter news')};
}
"""


def test_the_demo_turns_jupyter_news_off():
    """The overrides ``make demo`` points JupyterLab at say: no news, no update check."""
    from pathlib import Path

    overrides = json.loads((Path(_demo_settings_dir()) / "overrides.json").read_text())
    notification = overrides["@jupyterlab/apputils-extension:notification"]
    assert notification["fetchNews"] == "false" and notification["checkForUpdates"] is False


@pytest.mark.parametrize("notebook", LESSONS, ids=[lesson_name(n) for n in LESSONS])
def test_a_lesson_reads_whole(lesson_page, demo_server, notebook):
    page = lesson_page
    nb = open_notebook(page, demo_server.lab(notebook))
    run_all_cells(page, timeout_ms=240_000)
    # Every figure drawn and laid out: BokehJS lays out after the widgets render.
    page.wait_for_function(
        "() => document.querySelectorAll('.jp-OutputArea-output .jupyter-widgets').length > 0",
        timeout=60_000)
    # The whole lesson on one screen (and in the screenshot): the window as tall as the notebook.
    height = page.evaluate("""(s) => Math.max(...[...document.querySelectorAll(
        `${s}, ${s} .jp-WindowedPanel-outer, ${s} .jp-WindowedPanel-inner`)]
        .map((e) => e.scrollHeight))""", NOTEBOOK)
    page.set_viewport_size({"width": 1400, "height": min(int(height) + 200, 16_000)})
    page.evaluate("""(s) => document.querySelectorAll(`${s}, ${s} .jp-WindowedPanel-outer`)
        .forEach((e) => { e.scrollTop = 0; })""", NOTEBOOK)  # from the first cell
    page.wait_for_timeout(1500)  # BokehJS's layout after the last redraw: let it settle once
    facts = page.evaluate(_FACTS_JS, NOTEBOOK)
    shot = screenshot(page, demo_server.screenshots, lesson_name(notebook))
    where = f"(screenshot: {shot})"
    assert not facts["news"], f"JupyterLab's news popup is on screen {where}"
    assert facts["cut"] == [], f"cut text: {facts['cut']} {where}"
    assert facts["legends"] == [], f"legends outside their canvas: {facts['legends']} {where}"
    assert facts["ticks"] == [], f"tick labels that overlap: {facts['ticks']} {where}"
    assert facts["words"] == [], f"a widget shows nan/None: {facts['words']} {where}"
    assert facts["meters"] == [], (
        f"a refusal on the meter under 'Nothing has been spent yet': {facts['meters']} {where}")
    assert_no_widget_errors(nb)
    if page.locator(".bk-Canvas").count():
        assert facts["views"] > 0, f"BokehJS's views are not reachable (Bokeh.index) {where}"
