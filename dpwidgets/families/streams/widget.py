"""Stream widgets: StreamWidget (PeGaSus on one counting stream) and HierarchyWidget (PeGaSus
over a hierarchy of aggregated states, with pruning) -- Chen 2018, Ch. 5.

StreamWidget
    One ``"pegasus"`` release per parameter set (ε, the ε_p:ε_g split, θ), revealed step by
    step by a play/pause/speed control: a live Bokeh panel streams the true stream (teaching
    mode only), the LM output (the Perturber's per-step Laplace counts c̃, part of the
    release) and the PeGaSus estimates ĉ, shading the groups the Grouper formed. Below it,
    sliding-window sums (WSS vs the plain sum of the estimates) and event monitoring
    (jump/drop, low signal) with the detection ROC -- all post-processing of the same release:
    moving the smoother, w or δ spends nothing.
HierarchyWidget (:mod:`~dpwidgets.families.streams.hierarchy`)
    A ``"hierarchical_pegasus"`` release (PHS-PGS, Chen 2018, Alg. 18) on a (states × time) array with
    a public hierarchy: the tree, coloured pruned / kept at the current step as time advances,
    the selected node's stream, and (teaching) the error per level against HS-PGS and HS-LM.

Real time. Each estimate ĉ_t depends on c_1..c_t only (Chen 2018, §5.2.2; the engine guarantees it:
the Grouper decides step t from the partition of steps < t, and every smoother reads the
current group as of t). So releasing the whole stream at once and revealing it step by step
shows exactly what the online algorithm would have published at each step -- and the
release, charged once per parameter set, is not re-run by playing, pausing or scrubbing.

Modes. Teaching (public data): every change of a release parameter is a live release charged
to the teaching ledger; the truth is drawn and the quality measures (scaled L1, window L1,
ROC/AUC) are shown. Analyst (confidential data): controls drive a free preview on the
dataset's public stand-in (same length; its own "truth", labelled as the stand-in); only the
Release button spends, once; after a release only DP output is drawn: no true count, no true
event, no ROC (it would need the true events) -- the detections only.

Where the parts are: the teaching streams in :mod:`~dpwidgets.families.streams.sources`; the
controls and their layout in :mod:`~dpwidgets.families.streams.controls`
(the release parameters' built from their declaration,
:class:`~dpwidgets.families.streams.params.PegasusParams`, with
:func:`~dpwidgets.ui.controls.control_for`; the play control from
:mod:`~dpwidgets.families.streams.timeline`); the windows and events panels in
:mod:`~dpwidgets.families.streams.panels`, what is measured against a public truth in
:mod:`~dpwidgets.families.streams.quality` (which, with the spec, calls the engine: the widget
modules do not), the banner, status and quality lines in :mod:`~dpwidgets.families.streams.text`,
the figures and their display (the one drawn is kept: playing redraws the live panel from it) in
:mod:`~dpwidgets.families.streams.display`.
"""

from __future__ import annotations

import numpy as np

from ...session import Release, Session
from ...ui.accuracy import Accuracy
from ...ui.base import CAUGHT, ReleaseWidget, budget_parts, undust
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import epsilon_guardrail
from . import display, text
from .controls import StreamControls, check_arguments, fit_play, fit_widths, lay_out
from .hierarchy import COMPARE_MAX_CELLS, HierarchyWidget
from .panels import WindowEventPanels
from .params import DEFAULTS
from .sources import STREAMS, StreamSource, check_stream, teaching_stream
from .spec import estimates
from .text import events_text as _events_text  # noqa: F401  (the name tests import from here)
from .timeline import TICK_MS

__all__ = ["COMPARE_MAX_CELLS", "HierarchyWidget", "StreamSource", "STREAMS", "StreamWidget"]

_ALL_PARTS = frozenset({"compute"}) | display.PARTS


class StreamWidget(WindowEventPanels, ReleaseWidget):
    """PeGaSus on one counting stream, played step by step (Chen 2018, Alg. 15-17, §5.4, Fig. 5.2-5.7).

    Parameters
    ----------
    session : Session
        Holds the stream (a 1-D array of counts) and its budget.
    dataset : str, optional
        A stream in the session. Required in analyst mode (previews run on its stand-in, so
        give the dataset a public stand-in stream of the same length). In teaching mode
        without one, ``stream`` is added to the session.
    stream : {"High_5", "Med_5", "Low_5", "sunspots"}
        Teaching: the public stream to start with
        (:data:`~dpwidgets.families.streams.sources.STREAMS`).
    length : int, optional
        Teaching: use the first ``length`` steps only (e.g. 8000, Chen 2018, Fig. 5.2); default all.
    epsilon : float
        The release's budget ε = ε_p + ε_g.
    defaults : {"new", "text"}
        Which set of :data:`dpwidgets.engine.streams.DEFAULTS` fills the three below (and the
        Grouper's threshold/test split): ``"new"`` (ε_p/ε = 0.95, θ·ε_g = 160, adaptive
        smoother) or ``"text"`` (Chen 2018, §5.6.1: 0.8, 5, median). Its dropdown resets them.
    perturber_share : float, optional
        ε_p/ε (0.95; 0.8 in Chen 2018, §5.6.1).
    theta_scale : float, optional
        The Grouper's threshold θ in units of 1/ε_g: θ = theta_scale/ε_g (160; 5 in Chen 2018,
        §5.6.1). θ is public: a larger one costs nothing and gives longer groups.
    smoother : {"adaptive", "median", "average", "james_stein"}, optional
        Post-processing (Chen 2018, §5.3.3, and the adaptive window): switching costs nothing.
    w : int
        Window of the sliding-window sums and of the event monitors (a power of 2).
    kind : {"jump_drop", "low_signal"}
        The event monitor (Chen 2018, §5.2.2).
    delta : float, optional
        The detection threshold δ applied to the private statistic; default from the private
        statistic itself (its 95th percentile for jumps, a quarter of it for low signal) --
        post-processing of the release.
    event_delta : float, optional
        Teaching / preview: the threshold that defines the *true* events (Chen 2018, §5.6.3 fixes it
        and moves the detection threshold to trace the ROC); default the same as ``delta``.
    window : int
        Steps shown by the live panel (its ``rollover``); 2016 = one week of 5-minute steps.
    start : int, optional
        Steps revealed at first (default ``min(window, T)``); the widget does not play until
        its play button is pressed.
    speed : int
        Steps per second when playing (one of the values of
        :data:`~dpwidgets.families.streams.timeline.SPEEDS`).
    debounce : float
        Seconds of quiet before recomputing in a kernel (0: at once).

    Attributes
    ----------
    figure : StreamFigure
        Sources ``truth``, ``private``, ``groups`` (live); ``win_*``, ``ev_*``, ``roc_*``.
    play, time, speed : ipywidgets
        The play/pause control (``Play``; its value is the number of steps revealed), the
        scrubber linked to it in the browser, and the speed.
    quality_values : dict
        Teaching / preview: ``LM scaled L1``, ``PeGaSus scaled L1`` (Chen 2018, §5.6.1), window
        ``average L1`` of WSS / sum of ĉ / LM, ``AUC`` of PeGaSus and LM, ``TPR``/``FPR`` at δ.

    Notes
    -----
    The whole stream is released once per parameter set through the session and then
    revealed step by step: honest, because each ĉ_t uses only c_1..c_t (the engine's
    guarantee, Chen 2018, §5.2.2), and cheap, because playing re-runs nothing. The play control is
    an ``ipywidgets.Play`` ticking in the browser every 50 ms (``step`` = speed/20 steps per
    tick): it works in JupyterLab and Voila, and nothing plays in a kernel without a front
    end (nbclient), so a notebook never blocks. Each tick streams the new rows into the live
    panel with ``ColumnDataSource.stream(..., rollover=window)``.

    The LM line is the Perturber's output c̃_t = c_t + Lap(1/ε_p): per-step Laplace at ε_p,
    part of the PeGaSus release (Chen 2018, Thm 15) and therefore free; LM with the whole ε (the
    text's baseline in Fig. 5.3) is ``session.release(name, "laplace_stream", epsilon=ε)``,
    a release of its own.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import StreamWidget
    >>> widget = StreamWidget(Session("teaching", seed=0), length=512, debounce=0)
    >>> widget.smoother.value = "median"  # post-processing of the one release: free
    >>> widget.session.datasets, widget.play.value, widget.session.spent("High_5_512")
    (['High_5_512'], 512, 0.1)
    """

    mechanism = "pegasus"

    def __init__(self, session: Session, dataset: str | None = None, *, stream: str = "High_5",
                 length: int | None = None, epsilon: float = 0.1, defaults: str = "new",
                 perturber_share: float | None = None, theta_scale: float | None = None,
                 smoother: str | None = None, w: int = 16, kind: str = "jump_drop",
                 delta: float | None = None, event_delta: float | None = None,
                 window: int = 2016, start: int | None = None, speed: int = 1000,
                 debounce: float = 0.15):
        perturber_share, theta_scale, smoother = check_arguments(
            defaults=defaults, perturber_share=perturber_share, theta_scale=theta_scale,
            smoother=smoother, kind=kind, speed=speed, window=window)
        self._setup(session, debounce=debounce, callback=self._update)
        self.window = int(window)
        self._length = None if length is None else int(length)
        self._output: dict | None = None
        self._shown: display.StreamDisplay | None = None
        self._public: np.ndarray | None = None
        self._where = "teaching"
        self._shown_t = 0
        self._syncing = False
        self._roc_cache: tuple | None = None
        self._sums_cache: dict[tuple, np.ndarray] = {}
        self._version = 0  # bumped with every new output (the caches' key)
        self._pending: set[str] = set(_ALL_PARTS)

        if dataset is not None:
            check_stream(session, dataset)
        self.data = self._data_dropdown(
            dataset, stream, STREAMS, what="stream", width="560px",
            needs="a stream added with session.add_dataset, with a public stand_in of the same "
            "length")
        StreamControls.build(teaching=session.teaching, epsilon=epsilon, defaults=defaults,
                             perturber_share=perturber_share, theta_scale=theta_scale,
                             smoother=smoother, kind=kind, speed=speed).attach(self)
        self.figure = display.stream_figure(window=self.window)
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        self._assemble([self.banner, lay_out(self), self.message, self.plot, self.quality,
                        self.stats], "dpw-stream-widget")

        self.select_data(start=start, w=w, delta=delta, event_delta=event_delta)
        self._watch(self._on_release_param, self.epsilon, self.split, self.theta)
        self._watch(self._on_defaults, self.defaults)
        self._watch(self._on_post_param, self.smoother, self.w, self.kind, self.delta,
                    self.event_delta, self.show_truth)
        self._watch(self.data_changed, self.data)
        self._watch(self._on_time, self.play)
        self._watch(self._on_speed, self.speed)
        self._update()

    # -- parameters ------------------------------------------------------------------------
    @property
    def params(self) -> dict:
        """The ``"pegasus"`` release parameters (all public)."""
        eps = float(self.epsilon.value)
        share = float(self.split.value)
        return {"epsilon": eps, "defaults": self.defaults.value, "perturber_share": share,
                "theta": undust(float(self.theta.value) / (eps * (1.0 - share)))}

    @property
    def t(self) -> int:
        """Steps revealed (the play control's value)."""
        return int(self.play.value)

    @property
    def output(self) -> dict | None:
        """What a user may export as the DP stream. Analyst mode: the last paid release's
        output only (``None`` before a release; never a preview, whatever is on screen).
        Teaching mode: the live run drawn."""
        if not self.session.teaching:
            return None if self.last_release is None else self.last_release.output
        return self._output

    @property
    def shown_output(self) -> dict | None:
        """The output drawn now: a live run, a release, or a PREVIEW on the stand-in."""
        return self._output

    def select_data(self, *, start=None, w=None, delta=None, event_delta=None) -> None:
        value = self.data.value
        if value.startswith("dataset:"):
            self.dataset = value.split(":", 1)[1]
        else:
            self.dataset = teaching_stream(self.session, value, self._length)
        n = self.session.size(self.dataset)
        self.n_steps = n
        with self._setting():
            self._shown_t = fit_play(self.play, self.time, n, start, self.window)
            fit_widths(self.w, n, w)
        self._delta_given = (delta, event_delta)
        self._reset_delta = True
        self._release = None
        self._pending |= _ALL_PARTS

    # -- events ----------------------------------------------------------------------------
    def _on_release_param(self, change=None) -> None:
        if self._syncing:
            return
        self._release = None
        self._pending |= _ALL_PARTS
        self._debouncer.trigger()

    def _on_defaults(self, change=None) -> None:
        """Set the split, θ and smoother to the chosen defaults: one new release, not three."""
        d = DEFAULTS[self.defaults.value]
        with self._setting():
            self.split.value = d["perturber_share"]
            self.theta.value = d["theta_times_eps_g"]
            self.smoother.value = d["smoother"]
        self._on_release_param()

    def _on_post_param(self, change=None) -> None:
        """Smoother, w, event kind, δ, truth on/off: post-processing, no session call."""
        if self._syncing:
            return
        owner = None if change is None else change.get("owner")
        if owner in (self.w, self.kind):
            self._reset_delta = True
        self._pending |= {
            self.w: {"windows", "events"}, self.kind: {"events"}, self.delta: {"events"},
            self.event_delta: {"events"},
        }.get(owner, {"live", "windows", "events"})
        self._debouncer.trigger()

    def data_changed(self, change=None) -> None:
        self.select_data()
        self._debouncer.trigger()

    def _on_speed(self, change) -> None:
        self.play.step = max(1, int(change["new"]) * TICK_MS // 1000)

    def rerun(self) -> None:
        self._pending |= _ALL_PARTS
        self._update()

    def _on_time(self, change) -> None:
        """A tick of the play control (or a scrub): the live panel up to the new step, from
        the display drawn (the new steps streamed into it)."""
        if self._syncing or self._shown is None:
            return
        new = int(change["new"])
        self._shown.draw_time(self.figure, new, shown=self._shown_t)
        self._shown_t = new

    # -- actions ---------------------------------------------------------------------------
    def draw_release(self, release: Release) -> None:
        self._pending |= _ALL_PARTS
        self._update()
        self.message.value += text.POST_PROCESSING_FREE

    def _update(self) -> None:
        """Recompute (if a release parameter changed) and redraw what the changes touch."""
        problem = self.problem()
        if problem:
            self._refuse(problem)
            return
        parts, self._pending = self._pending, set()
        try:
            if "compute" in parts:
                self._compute()
                self.quality_values = {}
            self._draw(parts)
        except CAUGHT as exc:
            self._show_error(exc)
        self._update_button()

    def _compute(self) -> None:
        """The output to show: a live run (teaching), the release drawn, or a free preview
        on the stand-in (analyst), with the public truth it is measured against, if any."""
        self._version += 1
        self._accuracy_stale()
        params = self.params
        remaining = None
        if not self.session.teaching and not self.session.is_cached(
                self.dataset, self.mechanism, **params):
            remaining = self.session.remaining(self.dataset)  # a replay would be free
        note = epsilon_guardrail(self.cost(), remaining)  # what is charged: ε x a unit's rows
        self.epsilon_note.value = text.epsilon_note_html(note)
        if self.session.teaching:
            release = self._live_release()
            self._output, self._where = release.output, "teaching"
            self._public = self.session.public_view(self.dataset)
            self.message.value = text.OVERDRAFT if release.overdraft else ""
            self.status.value = text.live_status_html(self._run, release.epsilon,
                                                      release.charged)
        elif self._release is not None:
            self._output, self._public, self._where = self._release.output, None, "release"
            self.status.value = text.RELEASED
        else:
            self._output = self._preview_run().output
            self._public = self.session.stand_in(self.dataset)
            self._where = "preview"
            cached = self.session.is_cached(self.dataset, self.mechanism, **params)
            self.message.value = ""
            self.status.value = text.preview_status_html(cached, self.cost())
        self.banner.value = text.banner_html(params, self.per_unit)

    # -- accuracy before spending (analyst) -------------------------------------------------
    @property
    def accuracy_model(self) -> Accuracy:
        """The accuracy panel's strategy (an :class:`~dpwidgets.ui.accuracy.Accuracy`)."""
        what = "the estimates per step"
        return Accuracy(what, self._plotted_estimates, self._stand_in_counts)

    def _plotted_estimates(self, release: Release) -> np.ndarray:
        """The plotted estimates of a preview (the chosen smoother's)."""
        return estimates(release.output, self.smoother.value)

    def _stand_in_counts(self) -> np.ndarray:
        """The stand-in's own counts (public)."""
        return np.asarray(self.session.stand_in(self.dataset), dtype=float)

    # -- drawing ---------------------------------------------------------------------------
    def _truth_shown(self) -> np.ndarray | None:
        if self._public is None or self._where == "release":
            return None
        if self._where == "teaching" and not self.show_truth.value:
            return None
        return self._public

    def _draw(self, parts: set[str]) -> None:
        """A new display of the output shown (the ``parts`` a change touched computed, the
        others kept from the display drawn), drawn."""
        out = self._output
        if out is None:
            return
        smoother = self.smoother.value
        self._estimates = estimates(out, smoother)
        truth = self._truth_shown()
        if truth is None:
            self.quality_values = {}
        wsize, kind = int(self.w.value), self.kind.value
        windows = self._windows(out, truth, wsize, smoother) if "windows" in parts else None
        events = self._events(out, truth, wsize, kind, smoother) if "events" in parts else None
        self._shown = display.StreamDisplay.from_output(
            out, self._estimates, where=self._where, w=wsize, kind=kind,
            delta=float(self.delta.value), event_delta=float(self.event_delta.value),
            truth=truth, windows=windows, events=events, previous=self._shown)
        self._shown.draw(self.figure, self.t, parts)
        n_groups = int(np.asarray(out["boundaries"]).size)
        self._set_stats(self._where, text.stats_text(self.n_steps, n_groups), out["guarantee"],
                        budget_parts(out["epsilon_parts"]))
        self.quality.value = text.quality_html(
            self._where, None if truth is None else self.quality_values, wsize,
            self.detections)
