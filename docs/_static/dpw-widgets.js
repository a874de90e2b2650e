// Loaded on the lesson pages after RequireJS and before the widget manager (embed-amd.js), all
// three from this site's _static/ (docs/offline_assets.py). It tells RequireJS where the
// widgets' own modules are (the AMD builds shipped by the Python packages of those widgets),
// and points the widget manager's CDN fallback at this site: a module missing here then fails
// here, with the widget's error shown, rather than asking another host.
(function () {
  var script = document.currentScript;
  var root = new URL("dpw-offline/", script.src).href;
  window.requirejs.config({
    paths: {
      "anywidget": root + "widgets/anywidget/index",
      "@bokeh/jupyter_bokeh": root + "widgets/jupyter_bokeh/index",
    },
  });
  // embed-amd.js reads data-jupyter-widgets-cdn from every <script> of the page when it loads.
  script.setAttribute("data-jupyter-widgets-cdn", root + "no-cdn/");

  // The widgets' typeset() (@jupyter-widgets/base) calls MathJax 2's MathJax.Hub.Queue; the
  // pages load MathJax 3 (Sphinx's), which has no Hub, so every label with math raised
  // "Cannot read properties of undefined (reading 'Queue')". Give MathJax 3 a Hub whose Queue
  // typesets the element with MathJax 3. Installed on "load": after MathJax's deferred script
  // has run, before the widget manager renders (it waits for "load" too, and listens later).
  function typeset(element) {
    var mj = window.MathJax;
    if (!mj || !mj.typesetPromise) return; // MathJax did not load: the text stays as it is
    var ready = (mj.startup && mj.startup.promise) || Promise.resolve();
    ready.then(function () { return mj.typesetPromise(element ? [element] : undefined); })
      .catch(function (err) { console.warn("MathJax could not typeset a widget:", err); });
  }
  window.addEventListener("load", function () {
    var mj = window.MathJax;
    if (mj && !mj.Hub) {
      mj.Hub = { Queue: function (job) { typeset(job && job[2]); } };
    }
  });
})();
