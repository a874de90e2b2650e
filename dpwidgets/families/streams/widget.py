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
HierarchyWidget
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
"""

from __future__ import annotations

import html
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import ipywidgets as ipw
import numpy as np

from ...engine import streams as st
from ...engine.evaluation import detect_events, detection_rates
from ...session import Release, Session
from ...ui import figures
from ...ui.base import CAUGHT, ReleaseWidget, budget_parts, fold, one_of, undust
from ...ui.base import fmt as _fmt
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import EpsilonSlider, FloatSlider, IntSlider, epsilon_guardrail
from . import display
from . import spec as rs

__all__ = ["COMPARE_MAX_CELLS", "HierarchyWidget", "StreamSource", "STREAMS", "StreamWidget"]

#: The largest hierarchy (states × steps) on which :class:`HierarchyWidget` compares HS-PGS and
#: HS-LM by default.
COMPARE_MAX_CELLS = 200_000

#: Milliseconds between two ticks of the play control (20 ticks per second).
TICK_MS = 50
#: Steps per second offered by the speed control.
SPEEDS = {
    "1 day/s (288 steps/s)": 288,
    "1,000 steps/s": 1000,
    "1 week/s (2,016 steps/s)": 2016,
    "5,000 steps/s": 5000,
}
_STYLE = {"description_width": "initial"}
_ALL_PARTS = frozenset({"compute", "live", "windows", "events"})


@dataclass(frozen=True)
class StreamSource:
    """A public counting stream a teaching widget can add to its session."""

    title: str
    make: Callable[[], np.ndarray]


def _wifi(name: str) -> Callable[[], np.ndarray]:
    def make() -> np.ndarray:
        from .standins import wifi_stream

        return wifi_stream(name, np.random.default_rng(zlib.crc32(name.encode())))

    return make


def _sunspots() -> np.ndarray:
    from .standins import load_sunspot_counts

    return load_sunspot_counts()


#: The teaching streams: Chen 2018, Table 5.1's shapes (five-minute steps) and a public series.
STREAMS: dict[str, StreamSource] = {
    "High_5": StreamSource("High_5 shape (Chen 2018, Table 5.1): a busy hall, 2,141,963 in 57,901 "
                           "steps", _wifi("High_5")),
    "Med_5": StreamSource("Med_5 shape: an office AP, 101,843 in 57,901 steps", _wifi("Med_5")),
    "Low_5": StreamSource("Low_5 shape: a quiet room, 2,846 in 57,901 steps (sparse)",
                          _wifi("Low_5")),
    "sunspots": StreamSource("Yearly sunspot numbers 1700-2008 (statsmodels, 309 steps)",
                             _sunspots),
}


def _nice(x: float, up: bool = True) -> float:
    """A 1-2-5 × 10^k number at or beyond ``x`` (``up``: >= x, else <= x, for x > 0)."""
    if x <= 0:
        return 0.0
    k = math.floor(math.log10(x))
    for m in ((1, 2, 5, 10) if up else (10, 5, 2, 1)):
        v = m * 10.0**k
        if (up and v >= x) or (not up and v <= x):
            return float(v)
    return float(x)


def _widths(t_len: int) -> list[int]:
    """The window sizes offered: 2^0 .. 2^10 (Chen 2018, Fig. 5.5), not beyond the stream."""
    return [2**k for k in range(11) if 2**k <= t_len] or [1]


class StreamWidget(ReleaseWidget):
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
        Teaching: the public stream to start with (:data:`STREAMS`).
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
        Steps per second when playing (a key of :data:`SPEEDS`' values).
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
    """

    mechanism = "pegasus"

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        stream: str = "High_5",
        length: int | None = None,
        epsilon: float = 0.1,
        defaults: str = "new",
        perturber_share: float | None = None,
        theta_scale: float | None = None,
        smoother: str | None = None,
        w: int = 16,
        kind: str = "jump_drop",
        delta: float | None = None,
        event_delta: float | None = None,
        window: int = 2016,
        start: int | None = None,
        speed: int = 1000,
        debounce: float = 0.15,
    ):
        one_of("defaults", defaults, sorted(st.DEFAULTS))
        d = st.DEFAULTS[defaults]
        perturber_share = d["perturber_share"] if perturber_share is None else perturber_share
        theta_scale = d["theta_times_eps_g"] if theta_scale is None else theta_scale
        smoother = d["smoother"] if smoother is None else smoother
        one_of("smoother", smoother, sorted(st.SMOOTHERS))
        one_of("kind", kind, ("jump_drop", "low_signal"))
        one_of("speed", speed, sorted(SPEEDS.values()))
        if not (isinstance(window, int) and window >= 10):
            raise ValueError(f"window must be an integer >= 10, got {window!r}")
        if not 0.0 < perturber_share < 1.0:
            raise ValueError(f"perturber_share must be in (0, 1), got {perturber_share!r}")
        self._setup(session, debounce=debounce, callback=self._update)
        self.window = int(window)
        self._length = None if length is None else int(length)
        self._output: dict | None = None
        self._public: np.ndarray | None = None
        self._where = "teaching"
        self._shown_t = 0
        self._syncing = False
        self._roc_cache: tuple | None = None
        self._sums_cache: dict[tuple, np.ndarray] = {}
        self._version = 0  # bumped with every new output (the caches' key)
        self._pending: set[str] = set(_ALL_PARTS)

        if dataset is not None:
            shape = session.shape(dataset)  # unknown name -> ValueError now
            if len(shape) != 1:
                raise ValueError(f"dataset {dataset!r} must be a 1-D stream, has shape {shape}")
        self.data = self._data_dropdown(
            dataset, stream, STREAMS, what="stream", width="560px",
            needs="a stream added with session.add_dataset, with a public stand_in of the same "
            "length")
        self.epsilon = EpsilonSlider(epsilon, description="ε")
        self.defaults = ipw.Dropdown(options=[("new (engine)", "new"),
                                              ("Chen 2018, §5.6.1", "text")],
                                     value=defaults, description="defaults", style=_STYLE)
        self.defaults.add_class("dpw-defaults")
        self.split = FloatSlider(value=perturber_share, min=0.05, max=0.95, step=0.05,
                                 description="ε_p / ε", readout_format=".2f", style=_STYLE)
        self.split.add_class("dpw-split")
        self.theta = EpsilonSlider(theta_scale, min_epsilon=0.5, max_epsilon=1000.0,
                                   description="θ · ε_g")
        self.theta.remove_class("dpw-epsilon")
        self.theta.add_class("dpw-theta")
        self.smoother = ipw.Dropdown(options=[("adaptive window", "adaptive"),
                                              ("median (eq. 5.6)", "median"),
                                              ("average (eq. 5.5)", "average"),
                                              ("James-Stein (eq. 5.7)", "james_stein")],
                                     value=smoother, description="smoother", style=_STYLE)
        self.smoother.add_class("dpw-smoother")
        self.play = ipw.Play(value=0, min=0, max=1, step=max(1, speed * TICK_MS // 1000),
                             interval=TICK_MS, description="play", repeat=False)
        self.play.add_class("dpw-play")
        self.time = IntSlider(value=0, min=0, max=1, description="steps shown",
                                  style=_STYLE, layout=ipw.Layout(width="420px"))
        self.time.add_class("dpw-time")
        self._link = ipw.jslink((self.play, "value"), (self.time, "value"))
        self.speed = ipw.Dropdown(options=list(SPEEDS.items()), value=speed, description="speed",
                                  style=_STYLE, layout=ipw.Layout(width="260px"))
        self.speed.add_class("dpw-speed")
        self.w = ipw.SelectionSlider(options=[1], value=1, description="window w",
                                     style=_STYLE, continuous_update=True)
        self.w.add_class("dpw-window")
        self.kind = ipw.Dropdown(options=[("jump / drop |c_t − c_{t−w+1}| ≥ δ", "jump_drop"),
                                          ("low signal Σ_window < δ", "low_signal")],
                                 value=kind, description="event", style=_STYLE)
        self.kind.add_class("dpw-event-kind")
        self.delta = FloatSlider(value=0.0, min=0.0, max=1.0, step=0.01,
                                 description="detect at δ", readout_format=",.4g",
                                 style=_STYLE, continuous_update=True,
                                 layout=ipw.Layout(width="400px"))
        self.delta.add_class("dpw-delta")
        self.event_delta = FloatSlider(value=0.0, min=0.0, max=1.0, step=0.01,
                                       description="true events at", readout_format=",.4g",
                                       style=_STYLE, continuous_update=True,
                                       layout=ipw.Layout(width="400px"))
        self.event_delta.add_class("dpw-event-delta")
        self.show_truth = ipw.Checkbox(
            value=True, description="show the true stream", disabled=not session.teaching,
            layout=ipw.Layout(display=None if session.teaching else "none"))
        self.figure = display.stream_figure(window=self.window)
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        controls = ipw.VBox([
            self.data,
            ipw.HBox([self.epsilon, self.epsilon_note]),
            ipw.HBox([self.defaults, self.split, self.theta, self.smoother]),
            ipw.HBox([self.play, self.time, self.speed]),
            ipw.HBox([self.w, self.kind]),
            ipw.HBox([self.delta, self.event_delta]),
            ipw.HBox([self.show_truth, self.release_button, self.status]),
        ])
        controls.add_class("dpw-controls")
        self._assemble([self.banner, controls, self.message, self.plot, self.quality,
                        self.stats], "dpw-stream-widget")

        self._select_data(start=start, w=w, delta=delta, event_delta=event_delta)
        self._watch(self._on_release_param, self.epsilon, self.split, self.theta)
        self._watch(self._on_defaults, self.defaults)
        self._watch(self._on_post_param, self.smoother, self.w, self.kind, self.delta,
                    self.event_delta, self.show_truth)
        self._watch(self._on_data, self.data)
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

    def _select_data(self, *, start=None, w=None, delta=None, event_delta=None) -> None:
        value = self.data.value
        if value.startswith("dataset:"):
            self.dataset = value.split(":", 1)[1]
        else:
            name = value
            if self._length is not None:
                name = f"{value}_{self._length}"
            if name not in self.session.datasets:
                full = STREAMS[value].make()
                if self._length is not None and self._length < full.size:
                    full = full[: self._length]
                else:
                    name = value
                if name not in self.session.datasets:
                    self.session.add_dataset(name, full, total_epsilon=10.0,
                                             description=STREAMS[value].title)
            self.dataset = name
        n = self.session.size(self.dataset)
        self.n_steps = n
        widths = _widths(n)
        with self._setting():
            first = min(self.window, n) if start is None else int(min(max(start, 0), n))
            self.play.max = n
            self.time.max = n
            self.play.value = first
            self.time.value = first
            self._shown_t = first
            wanted = self.w.value if w is None else w
            if wanted not in widths:
                if w is not None:
                    raise ValueError(f"w must be one of {widths} for this stream, got {w!r}")
                wanted = min(widths, key=lambda v: abs(v - 16))
            self.w.options = widths
            self.w.value = wanted
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
        d = st.DEFAULTS[self.defaults.value]
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

    def _on_data(self, change=None) -> None:
        self._select_data()
        self._debouncer.trigger()

    def _on_speed(self, change) -> None:
        self.play.step = max(1, int(change["new"]) * TICK_MS // 1000)

    def _rerun(self) -> None:
        self._pending |= _ALL_PARTS
        self._update()

    def _on_time(self, change) -> None:
        """A tick of the play control (or a scrub): stream the new steps into the live panel."""
        if self._syncing or self._output is None:
            return
        new = int(change["new"])
        old = self._shown_t
        if old < new <= old + self.window:
            self._stream_live(old, new)
        else:
            self._reset_live(new)
        self._shown_t = new

    # -- actions ---------------------------------------------------------------------------
    def _draw_release(self, release: Release) -> None:
        self._pending |= _ALL_PARTS
        self._update()
        self.message.value += ("<div class='dpw-ok'>Moving the smoother, w or δ, or playing, "
                               "spends nothing more.</div>")

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
        self._version += 1
        self._accuracy_stale()
        params = self.params
        remaining = None
        if not self.session.teaching and not self.session.is_cached(
                self.dataset, self.mechanism, **params):
            remaining = self.session.remaining(self.dataset)  # a replay would be free
        note = epsilon_guardrail(self.cost(), remaining)  # what is charged: ε x a unit's rows
        self.epsilon_note.value = f"<span class='dpw-note'>{html.escape(note)}</span>"
        if self.session.teaching:
            release = self._live_release()
            self._output = release.output
            self._public = self.session.public_view(self.dataset)
            self._where = "teaching"
            self.message.value = (
                "<div class='dpw-warn'>Past the cap: on confidential data this run would have "
                "been refused.</div>" if release.overdraft else "")
            self.status.value = (
                f"<span>live run #{self._run}, ε = {release.epsilon:.3g} "
                f"{'charged' if release.charged else '(cached, free)'}</span>")
        elif self._release is not None:
            self._output = self._release.output
            self._public = None
            self._where = "release"
            self.status.value = ("<span class='dpw-released'>Showing the released DP output "
                                 "(no true counts).</span>")
        else:
            self._output = self._preview_run().output
            self._public = self.session.stand_in(self.dataset)
            self._where = "preview"
            cached = self.session.is_cached(self.dataset, self.mechanism, **params)
            cost = ("nothing: these parameters were released already" if cached
                    else f"ε = {_fmt(self.cost())}")
            self.message.value = ""
            self.status.value = (
                "<span class='dpw-preview'>PREVIEW on the public stand-in (same length) — "
                f"nothing spent. Release would charge {cost}.</span>")
        self._banner()

    # -- accuracy before spending (analyst) -------------------------------------------------
    accuracy_what = "the estimates per step"

    def _accuracy_values(self, release: Release) -> np.ndarray:
        """The plotted estimates of a preview (the chosen smoother's)."""
        return rs.estimates(release.output, self.smoother.value)

    def _accuracy_noiseless(self) -> np.ndarray:
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
        out = self._output
        if out is None:
            return
        smoother = self.smoother.value
        self._estimates = rs.estimates(out, smoother)
        self._bounds = np.asarray(out["boundaries"], dtype=np.int64)
        truth = self._truth_shown()
        if truth is None:
            self.quality_values = {}
        wsize, kind = int(self.w.value), self.kind.value
        if "live" in parts:
            self._reset_live(self.t)
        if "windows" in parts:
            self._draw_windows(out, truth, wsize, smoother)
        if "events" in parts:
            self._draw_events(out, truth, wsize, kind, smoother)
        self._titles(truth)
        self._stats(out)
        self._quality_text(truth is not None)

    def _reset_live(self, t: int) -> None:
        lo = max(0, t - self.window)
        truth = self._truth_shown()
        figures.update(self.figure, display.live_rows(
            lo, t, noisy=self._output["noisy"], estimates=self._estimates, truth=truth))
        self.figure.sources["groups"].data = display.group_quads(self._bounds, lo, t)
        self.figure.set_cursor(t - 1)

    def _stream_live(self, old: int, new: int) -> None:
        truth = self._truth_shown()
        rows = display.live_rows(old, new, noisy=self._output["noisy"],
                                         estimates=self._estimates, truth=truth)
        src = self.figure.sources
        src["private"].stream(rows["private"], rollover=self.window)
        if truth is not None:
            src["truth"].stream(rows["truth"], rollover=self.window)
        src["groups"].data = display.group_quads(
            self._bounds, max(0, new - self.window), new)
        self.figure.set_cursor(new - 1)

    def _sums(self, out: dict, wsize: int, method: str) -> np.ndarray:
        """Window sums of the shown output (``"wss"`` or ``"noisy"``), once per output and w:
        the windows panel, the low-signal monitor and its ROC all use them."""
        key = (self._version, self._where, wsize, method)
        if key not in self._sums_cache:
            if len(self._sums_cache) >= 8:
                self._sums_cache.clear()
            self._sums_cache[key] = rs.window_sums(out, wsize, method)
        return self._sums_cache[key]

    def _statistic(self, out: dict, kind: str, wsize: int, smoother: str,
                   method: str = "wss") -> np.ndarray:
        """``rs.event_statistic`` of the output's estimates (``method="wss"``) or noisy counts
        (``"noisy"``), the low-signal window sums taken from :meth:`_sums`."""
        if kind != "low_signal":
            return rs.event_statistic(
                out if method == "wss" else np.asarray(out["noisy"], float), kind, wsize,
                smoother)
        stat = np.full(len(out["noisy"]), np.nan)
        stat[wsize - 1 :] = self._sums(out, wsize, method)[wsize - 1 :]
        return stat

    def _draw_windows(self, out: dict, truth, wsize: int, smoother: str) -> None:
        wss = self._sums(out, wsize, "wss")
        plain = rs.window_sums(out, wsize, "estimates", smoother)
        lm = self._sums(out, wsize, "noisy")
        true_sums = None if truth is None else st.sliding_window_sums(truth, wsize)
        figures.update(self.figure, display.windows_data(
            wss=wss, plain=plain, lm=lm, truth=true_sums))
        if truth is not None:
            self.quality_values.update({
                "LM scaled L1": st.scaled_total_l1(truth, out["noisy"]),
                "PeGaSus scaled L1": st.scaled_total_l1(truth, self._estimates),
                "WSS average L1": st.average_l1(true_sums, wss),
                "sum of ĉ average L1": st.average_l1(true_sums, plain),
                "LM window average L1": st.average_l1(true_sums, lm),
            })

    def _delta_range(self, stat: np.ndarray, kind: str) -> None:
        """Fit both threshold sliders to the private statistic's range (post-processing of
        the release); on a new stream, kind or w, reset them to the default."""
        finite = stat[np.isfinite(stat)]
        if finite.size == 0:
            finite = np.zeros(1)
        hi = _nice(float(np.quantile(finite, 0.999)) or 1.0)
        lo_q = float(np.quantile(finite, 0.001))
        lo = 0.0 if kind == "jump_drop" or lo_q >= 0 else -_nice(-lo_q)
        hi = max(hi, lo + 1.0)
        values = [float(self.delta.value), float(self.event_delta.value)]
        if self._reset_delta:
            given, self._delta_given = self._delta_given, (None, None)
            # Jumps: the largest 5% of the private statistic. Low signal: a quarter of a busy
            # window's private sum (its 95th percentile), so the true events are the quiet
            # stretches. Both are post-processing of the release.
            busy = float(np.quantile(finite, 0.95))
            default = busy if kind == "jump_drop" else 0.25 * busy
            detect = given[0] if given[0] is not None else default
            event = given[1] if given[1] is not None else detect
            values = [detect, event]
            self._reset_delta = False
        with self._setting():
            for slider, value in zip((self.delta, self.event_delta), values, strict=True):
                slider.min, slider.max = min(slider.min, lo), max(slider.max, hi)
                slider.step = _nice((hi - lo) / 400.0, up=False) or 0.01
                slider.value = min(max(value, lo), hi)
                slider.min, slider.max = lo, hi

    def _roc_curves(self, out: dict, truth: np.ndarray, wsize: int, kind: str,
                    event_delta: float) -> tuple[dict, dict, np.ndarray, np.ndarray]:
        """ROC curves (PeGaSus, LM) against the true events at ``event_delta``, cached: moving
        the detection threshold δ only moves the operating point along them."""
        key = (self._version, self._where, wsize, kind, event_delta, self.smoother.value)
        if self._roc_cache is None or self._roc_cache[0] != key:
            truth_stat = rs.event_statistic(truth, kind, wsize)
            true_events = detect_events(truth_stat, kind, event_delta)
            noisy = np.asarray(out["noisy"], float)
            pgs, lm = self._estimates, noisy
            if kind == "low_signal":  # the window sums already computed, as released sums
                spent = math.fsum(out["epsilon_parts"].values())
                pgs, lm = (st.WindowSums(self._sums(out, wsize, method), wsize, method, spent,
                                         out["epsilon_parts"]) for method in ("wss", "noisy"))
            rocs = {"PeGaSus": st.event_roc(truth, pgs, wsize, event_delta, kind),
                    "LM": st.event_roc(truth, lm, wsize, event_delta, kind)}
            self._roc_cache = (key, rocs, truth_stat, true_events)
        return self._roc_cache[1:]

    def _draw_events(self, out: dict, truth, wsize: int, kind: str, smoother: str) -> None:
        stat = self._statistic(out, kind, wsize, smoother)
        self._delta_range(stat, kind)
        delta, event_delta = float(self.delta.value), float(self.event_delta.value)
        detected = detect_events(stat, kind, delta)
        self.figure.delta_line.location = delta
        truth_stat = true_events = None
        curves = points = None
        if truth is not None:
            rocs, truth_stat, true_events = self._roc_curves(out, truth, wsize, kind, event_delta)
            lm_stat = self._statistic(out, kind, wsize, smoother, "noisy")
            curves = {"pgs": (rocs["PeGaSus"].fpr, rocs["PeGaSus"].tpr),
                      "lm": (rocs["LM"].fpr, rocs["LM"].tpr)}
            points = {}
            for label, stat_k in (("PeGaSus", stat), ("LM", lm_stat)):
                tpr, fpr = detection_rates(detect_events(stat_k, kind, delta), true_events, wsize)
                points[label] = (fpr, tpr)
                self.quality_values[f"{label} AUC"] = rocs[label].auc
                self.quality_values[f"{label} TPR at δ"] = tpr
                self.quality_values[f"{label} FPR at δ"] = fpr
            self.figure.event_line.location = event_delta
        self.figure.event_line.visible = truth is not None
        self.event_delta.layout.display = None if truth is not None else "none"
        figures.update(self.figure, display.events_data(
            statistic=stat, detected=detected, truth_statistic=truth_stat,
            true_events=true_events))
        figures.update(self.figure, display.roc_data(curves, points))
        self.figure.panels["roc"].visible = truth is not None
        self.detections = detected

    # -- text ------------------------------------------------------------------------------
    def _banner(self) -> None:
        p = self.params
        eps, share = p["epsilon"], p["perturber_share"]
        self.banner.value = "<div class='dpw-banner-ok'>" + fold(
            "<b>PeGaSus — Perturb, Group, Smooth (Chen 2018, Alg. 15)</b>: "
            f"{_fmt(eps)}-DP {self.per_unit}, event-level",
            "Neighbours: one tuple (user, state, time) added or removed. Perturber: Laplace "
            f"with ε_p = {_fmt(share * eps)}; Grouper (Alg. 16, sparse vector): ε_g = "
            f"{_fmt((1 - share) * eps)}, θ = {_fmt(p['theta'])}. The smoother, the window sums "
            "and the event monitors are post-processing of this one release: moving them "
            "spends nothing. Each estimate at step t uses only c_1..c_t, so the stream is "
            "released once and revealed step by step.") + "</div>"

    def _titles(self, truth) -> None:
        where = self._where
        suffix = {"teaching": "", "preview": " — preview on the public stand-in",
                  "release": " — released (DP output only)"}[where]
        short = {"teaching": "", "preview": " (stand-in)", "release": " (released)"}[where]
        truth_name = "true" if where == "teaching" else "stand-in"
        self.figure.set_titles(
            live=f"Live stream: {truth_name if truth is not None else 'no truth'}, LM "
                 f"(Perturber output) and PeGaSus{suffix}",
            windows=f"Sliding-window sums, w = {int(self.w.value)}{short}",
            events=("Jump/drop" if self.kind.value == "jump_drop" else "Low signal")
            + f", w = {int(self.w.value)}, detect at δ = {float(self.delta.value):,.4g}{short}",
            roc="Detection ROC" + (" (stand-in)" if where == "preview" else ""))

    def _quality_text(self, has_truth: bool) -> None:
        if not has_truth:
            self.quality.value = (
                "<div>No quality measure and no ROC on confidential data: they need the true "
                f"stream. Detections at δ: {int(self.detections.sum()):,} steps.</div>"
                if self._where == "release" else "")
            return
        q = self.quality_values
        on = "on the public stand-in" if self._where == "preview" else "against the true stream"
        self.quality.value = (
            f"<div class='dpw-quality-values'>Quality {on}: scaled L1 — LM "
            f"{q['LM scaled L1']:.3f} · PeGaSus {q['PeGaSus scaled L1']:.3f}; "
            f"windows (w = {int(self.w.value)}) average L1 — WSS {q['WSS average L1']:,.4g} · "
            f"sum of ĉ {q['sum of ĉ average L1']:,.4g} · LM {q['LM window average L1']:,.4g}; "
            f"{_events_text(q)}.</div>")

    def _stats(self, out: dict) -> None:
        n_groups = int(np.asarray(out["boundaries"]).size)
        self._set_stats(self._where, f"{self.n_steps:,} steps in {n_groups:,} groups (mean size "
                        f"{self.n_steps / max(n_groups, 1):.2f})", out["guarantee"],
                        budget_parts(out["epsilon_parts"]))


# ------------------------------------------------------------------------------------------------
# HierarchyWidget
# ------------------------------------------------------------------------------------------------
def _multi_total(n_states: int, length: int) -> int:
    """Multi_5's total (646,254 over 128 states × 20,000 steps), scaled to a smaller array."""
    return max(int(round(646_254 * n_states / 128 * length / 20_000)), n_states)


class HierarchyWidget(ReleaseWidget):
    """PeGaSus over a hierarchy of aggregated states, with pruning (Chen 2018, §5.5, Alg. 18, Fig. 5.8).

    Parameters
    ----------
    session : Session
        Holds the (states × time) counts and their budget.
    dataset : str, optional
        A 2-D dataset of the session: one row per state (leaf), one column per step. Required
        in analyst mode (previews run on its public stand-in of the same shape). In teaching
        mode without one, a Multi_5-shaped array (``datasets.multi_state_streams``) of
        ``n_states`` × ``length`` is added.
    n_states, length : int
        Teaching: the size of the Multi_5-like array (Chen 2018: 128 × 20,000, h = 8; default
        16 × 2,000, h = 5, for speed).
    parents : sequence of int, optional
        The public hierarchy as a parent array; default the binary tree over the states.
    epsilon : float
    pruning_share : float
        ε_pr/ε, the pruning budget (the text gives no value; 0.1 by default).
    beta : float, optional
        Pruning threshold β; ``None``: 2h/ε_pr (``auto_beta`` checked).
    smoother : {"adaptive", "median", "average", "james_stein"}
        Default "adaptive" (the engine's new default; the text's is "median").
    compare : bool, optional
        Also run HS-PGS and HS-LM with the same ε and draw the error per level: in teaching
        mode each is a release of its own (charged); in an analyst preview they run on the
        stand-in (free); an analyst release is PHS-PGS only. Default: on up to
        :data:`COMPARE_MAX_CELLS` states × steps (the lesson's 16 × 2,000), off beyond, where
        the two extra runs over every node take seconds per ε move; the checkbox turns it
        on.
    node : int
        The node whose streams are drawn (0: the root in the default tree).
    debounce : float

    Attributes
    ----------
    figure : HierarchyFigure
        Sources ``edges``, ``nodes`` (status at the current step), ``spark_*``, ``levels``.
    play, time : ipywidgets
        The current step t (the play control's value; nodes are coloured pruned / kept at t).
    quality_values : dict
        Teaching / preview: scaled total L1 of every method over all nodes and steps, and the
        ratios HS-LM / PHS-PGS and HS-PGS / PHS-PGS (Chen 2018, Fig. 5.8).

    Notes
    -----
    One release per parameter set, revealed step by step as for :class:`StreamWidget`: the
    pruning at step t uses only c_t (PRUNE runs per step), and each node's PeGaSus only its
    unpruned steps up to t.
    """

    mechanism = "hierarchical_pegasus"

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        n_states: int = 16,
        length: int = 2000,
        parents=None,
        epsilon: float = 0.1,
        pruning_share: float = 0.1,
        beta: float | None = None,
        smoother: str = "adaptive",
        compare: bool | None = None,
        node: int = 0,
        start: int | None = None,
        debounce: float = 0.15,
    ):
        one_of("smoother", smoother, sorted(st.SMOOTHERS))
        if not 0.0 < pruning_share < 1.0:
            raise ValueError(f"pruning_share must be in (0, 1), got {pruning_share!r}")
        self._setup(session, debounce=debounce, callback=self._update)
        self._outputs: dict[str, dict] = {}
        self._public: np.ndarray | None = None
        self._where = "teaching"
        self._syncing = False
        self._dirty = True

        if dataset is None:
            if not session.teaching:
                raise ValueError("an analyst session needs dataset= (a (states × time) array "
                                 "added with a public stand_in of the same shape)")
            dataset = self._teaching_dataset(int(n_states), int(length))
        shape = session.shape(dataset)
        if len(shape) != 2:
            raise ValueError(f"dataset {dataset!r} must be 2-D (states × time), has {shape}")
        self.dataset = dataset
        self.hierarchy = rs.hierarchy_of(parents, shape[0])
        self.n_steps = shape[1]
        self._agg_public: np.ndarray | None = None

        self.epsilon = EpsilonSlider(epsilon, description="ε")
        self.pruning = FloatSlider(value=pruning_share, min=0.01, max=0.5, step=0.01,
                                   description="ε_pr / ε", readout_format=".2f", style=_STYLE)
        self.pruning.add_class("dpw-pruning")
        self.auto_beta = ipw.Checkbox(value=beta is None, description="β = 2h/ε_pr (auto)")
        self.beta = ipw.BoundedFloatText(value=beta if beta is not None else 0.0, min=-1e12,
                                         max=1e12, description="β", style=_STYLE,
                                         layout=ipw.Layout(width="200px"))
        self.beta.add_class("dpw-beta")
        self.smoother = ipw.Dropdown(options=[("adaptive window", "adaptive"), ("median", "median"),
                                              ("average", "average"),
                                              ("James-Stein", "james_stein")], value=smoother,
                                     description="smoother", style=_STYLE)
        self.smoother.add_class("dpw-smoother")
        if compare is None:
            compare = shape[0] * shape[1] <= COMPARE_MAX_CELLS
        self.compare = ipw.Checkbox(
            value=bool(compare), style=_STYLE,
            description=("compare HS-PGS and HS-LM (each its own release)" if session.teaching
                         else "compare HS-PGS and HS-LM on the stand-in (free)"))
        self.compare.add_class("dpw-compare")
        first = self.n_steps - 1 if start is None else int(min(max(start, 0), self.n_steps - 1))
        self.play = ipw.Play(value=first, min=0, max=self.n_steps - 1, step=1,
                             interval=TICK_MS * 2, description="play", repeat=False)
        self.play.add_class("dpw-play")
        self.time = IntSlider(value=first, min=0, max=self.n_steps - 1, description="step t",
                                  style=_STYLE, layout=ipw.Layout(width="420px"))
        self.time.add_class("dpw-time")
        self._link = ipw.jslink((self.play, "value"), (self.time, "value"))
        m = self.hierarchy.n_nodes
        self.node = ipw.Dropdown(
            options=[(f"node {i} (level {int(lev)})", i)
                     for i, lev in enumerate(self.hierarchy.levels)],
            value=int(node) if 0 <= int(node) < m else 0, description="node", style=_STYLE)
        self.node.add_class("dpw-node")
        self.figure = display.hierarchy_figure(self.hierarchy.parents)
        nodes = self.figure.sources["nodes"].data
        self._node_base = {k: np.asarray(nodes[k]) for k in ("x", "y", "node", "level")}
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        controls = ipw.VBox([
            ipw.HBox([self.epsilon, self.epsilon_note]),
            ipw.HBox([self.pruning, self.auto_beta, self.beta, self.smoother]),
            ipw.HBox([self.play, self.time, self.node]),
            ipw.HBox([self.compare, self.release_button, self.status]),
        ])
        controls.add_class("dpw-controls")
        self._assemble([self.banner, controls, self.message, self.plot, self.quality,
                        self.stats], "dpw-hierarchy-widget")
        self._watch(self._on_release_param, self.epsilon, self.pruning, self.auto_beta,
                    self.beta, self.smoother, self.compare)
        self._watch(self._on_time, self.play)
        self._watch(self._on_node, self.node)
        self.figure.sources["nodes"].selected.on_change("indices", self._on_tap)
        self._update()

    def _teaching_dataset(self, n_states: int, length: int) -> str:
        from .standins import multi_state_streams

        name = f"multi_{n_states}x{length}"
        if name not in self.session.datasets:
            total = _multi_total(n_states, length)
            data = multi_state_streams(np.random.default_rng(zlib.crc32(name.encode())),
                                       n_states=n_states, length=length, total=total)
            stand_in = multi_state_streams(np.random.default_rng(0), n_states=n_states,
                                           length=length, total=total)
            self.session.add_dataset(name, data, total_epsilon=10.0, stand_in=stand_in,
                                     description=f"Multi_5-shaped: {n_states} states × "
                                     f"{length} steps")
        return name

    # -- parameters ------------------------------------------------------------------------
    @property
    def params(self) -> dict:
        """The PHS-PGS release parameters (all public)."""
        eps = float(self.epsilon.value)
        eps_pr = float(self.pruning.value) * eps
        beta = (2.0 * self.hierarchy.height / eps_pr if self.auto_beta.value
                else float(self.beta.value))
        return {"epsilon": eps, "method": "phs_pegasus",
                "parents": self.hierarchy.parents.tolist(), "smoother": self.smoother.value,
                "epsilon_pr": eps_pr, "beta": beta}

    def _baseline_params(self, method: str) -> dict:
        p = self.params
        out = {"epsilon": p["epsilon"], "method": method, "parents": p["parents"]}
        if method == "hs_pegasus":
            out["smoother"] = p["smoother"]
        return out

    @property
    def t(self) -> int:
        return int(self.play.value)

    @property
    def output(self) -> dict | None:
        """The PHS-PGS DP output a user may export: analyst mode, the last paid release's only
        (never a preview); teaching mode, the live run drawn."""
        if not self.session.teaching:
            return None if self.last_release is None else self.last_release.output
        return self._outputs.get("phs")

    # -- events ----------------------------------------------------------------------------
    def _on_release_param(self, change=None) -> None:
        if self._syncing:
            return
        self._release = None
        self._dirty = True
        self._debouncer.trigger()

    def _rerun(self) -> None:
        self._dirty = True
        self._update()

    def _on_time(self, change) -> None:
        if not self._syncing and self._outputs:
            self._draw_nodes()

    def _on_node(self, change) -> None:
        if self._syncing:
            return
        with self._setting():
            self.figure.sources["nodes"].selected.indices = [int(change["new"])]
        if self._outputs:
            self._draw_sparkline()

    def _on_tap(self, attr, old, new) -> None:
        """A node clicked in the browser selects it (jupyter_bokeh syncs the selection)."""
        if self._syncing or not new:
            return
        self.node.value = int(new[0])

    # -- actions ---------------------------------------------------------------------------
    def _draw_release(self, release: Release) -> None:
        self._dirty = True
        self._update()

    def _update(self) -> None:
        problem = self.problem()
        if problem:
            self._refuse(problem)
            return
        try:
            if self._dirty:
                self._compute()
                self._dirty = False
            self._draw()
        except CAUGHT as exc:
            self._show_error(exc)
        self._update_button()

    def _compute(self) -> None:
        p = self.params
        if self.auto_beta.value:
            with self._setting():
                self.beta.value = float(f"{p['beta']:.6g}")
        self.beta.disabled = bool(self.auto_beta.value)
        remaining = None
        if not self.session.teaching and not self.session.is_cached(
                self.dataset, self.mechanism, **p):
            remaining = self.session.remaining(self.dataset)  # a replay would be free
        spend = self.cost() * (3 if self.session.teaching and self.compare.value else 1)
        self.epsilon_note.value = ("<span class='dpw-note'>"
                                   f"{html.escape(epsilon_guardrail(spend, remaining))}</span>")
        methods = {"phs": p}
        if self.compare.value:
            methods["hs"] = self._baseline_params("hs_pegasus")
            methods["lm"] = self._baseline_params("hs_laplace")
        self._outputs = {}
        if self.session.teaching:
            charged = []
            for key, params in methods.items():
                rel = self._live_release(self.mechanism, **params)
                self._outputs[key] = rel.output
                charged.append(rel.charged)
            self._public = self.session.public_view(self.dataset)
            self._where = "teaching"
            self.status.value = (f"<span>live run #{self._run}: {len(methods)} release(s) of "
                                 f"ε = {p['epsilon']:.3g} each, "
                                 f"{'charged' if any(charged) else 'cached, free'}</span>")
        elif self._release is not None:
            self._outputs = {"phs": self._release.output}
            self._public = None
            self._where = "release"
            self.status.value = ("<span class='dpw-released'>Showing the released DP output "
                                 "(PHS-PGS only, no true counts).</span>")
        else:
            for key, params in methods.items():
                self._outputs[key] = self._preview_run(self.mechanism, **params).output
            self._public = self.session.stand_in(self.dataset)
            self._where = "preview"
            self.status.value = (
                "<span class='dpw-preview'>PREVIEW on the public stand-in (same shape) — "
                f"nothing spent. Release would charge ε = {_fmt(self.cost())} (PHS-PGS).</span>")
        self._agg_public = self._aggregate_public()
        self._banner()

    def _aggregate_public(self) -> np.ndarray | None:
        """The hierarchy's aggregates of what may be shown (the data in teaching mode, the
        stand-in in a preview): computed once per array, not at every ε move."""
        if self._public is None:
            return None
        cached = getattr(self, "_agg_cache", None)
        if cached is None or cached[0] is not self._public:
            self._agg_cache = (self._public, self.hierarchy.aggregate(self._public))
        return self._agg_cache[1]

    # -- drawing ---------------------------------------------------------------------------
    def _draw(self) -> None:
        self._draw_nodes()
        self._draw_sparkline()
        self._draw_errors()
        self._stats()

    def _draw_nodes(self) -> None:
        t = min(self.t, self.n_steps - 1)
        out = self._outputs["phs"]
        pruned = out.get("pruned")
        truth = None if self._agg_public is None else self._agg_public[:, t]
        figures.update(self.figure, display.tree_nodes_data(
            estimates=np.asarray(out["estimates"])[:, t],
            pruned=None if pruned is None else np.asarray(pruned)[:, t],
            truth=truth, base=self._node_base))
        n_pruned = 0 if pruned is None else int(np.asarray(pruned)[:, t].sum())
        where = {"teaching": "", "preview": " — preview on the stand-in",
                 "release": " — released"}[self._where]
        self.figure.set_titles(tree=f"PHS-PGS at step t = {t:,}: {n_pruned} of "
                                    f"{self.hierarchy.n_nodes} nodes pruned (grey, released "
                                    f"as 0){where}")
        self.figure.cursor.location = t

    def _draw_sparkline(self) -> None:
        i = int(self.node.value)
        rows = {k: np.asarray(v["estimates"])[i] for k, v in self._outputs.items()}
        truth = None if self._agg_public is None else self._agg_public[i]
        figures.update(self.figure, display.sparkline_data(
            phs=rows.get("phs"), hs=rows.get("hs"), lm=rows.get("lm"), truth=truth))
        level = int(self.hierarchy.levels[i])
        self.figure.set_titles(spark=f"Node {i} (level {level}) over time")

    def _draw_errors(self) -> None:
        self.quality_values = {}
        if self._agg_public is None:
            figures.update(self.figure, display.level_error_data(None))
            self.quality.value = ("<div>No error measure on confidential data: it needs the "
                                  "true aggregates.</div>" if self._where == "release" else "")
            return
        truth = self._agg_public
        levels = self.hierarchy.levels
        errors = {}
        names = {"phs": "PHS-PGS", "hs": "HS-PGS", "lm": "HS-LM"}
        per_level = np.bincount(levels - 1, minlength=self.hierarchy.height)
        total = float(truth.sum())
        for key, out in self._outputs.items():
            gaps = np.abs(np.asarray(out["estimates"]) - truth)  # once: both measures use it
            node_error = gaps.mean(axis=1)
            errors[key] = (np.bincount(levels - 1, weights=node_error,
                                       minlength=self.hierarchy.height) / per_level)
            if total > 0:  # scaled total L1 (Chen 2018 §5.6.1), as st.scaled_total_l1
                self.quality_values[f"{names[key]} scaled L1"] = float(gaps.sum() / total)
        data = display.level_error_data(errors)
        figures.update(self.figure, data)
        self.figure.set_error_range(data["levels"])
        q = self.quality_values
        parts = [f"{k.split(' ')[0]} {v:.3g}" for k, v in q.items()]
        if "HS-LM scaled L1" in q and "PHS-PGS scaled L1" in q:
            q["HS-LM / PHS-PGS"] = q["HS-LM scaled L1"] / q["PHS-PGS scaled L1"]
            q["HS-PGS / PHS-PGS"] = q["HS-PGS scaled L1"] / q["PHS-PGS scaled L1"]
            parts.append(f"PHS-PGS is {q['HS-LM / PHS-PGS']:.3g}× below HS-LM and "
                         f"{q['HS-PGS / PHS-PGS']:.3g}× below HS-PGS (Chen 2018, Fig. 5.8: 78× and 4× "
                         "at ε = 0.1 on Multi_5)")
        on = "on the public stand-in" if self._where == "preview" else "against the truth"
        self.quality.value = (f"<div class='dpw-quality-values'>Scaled total L1 {on}: "
                              f"{html.escape('; '.join(parts))}.</div>")

    def _banner(self) -> None:
        p = self.params
        h = self.hierarchy
        rest = p["epsilon"] - p["epsilon_pr"]
        self.banner.value = "<div class='dpw-banner-ok'>" + fold(
            "<b>PHS-PGS — hierarchical PeGaSus with pruning (Chen 2018, Alg. 18)</b>: "
            f"{_fmt(p['epsilon'])}-DP {self.per_unit}, event-level",
            f"{h.n_nodes} aggregated streams, height h = {h.height}. Every step, PRUNE compares each "
            f"unpruned node's count + Lap(h/ε_pr) with β = {_fmt(p['beta'])} (ε_pr = "
            f"{_fmt(p['epsilon_pr'])}, Laplace per level — the text's SVT reading does not go "
            "through, see dpwidgets.engine.streams); the children of a small node are pruned "
            f"(released as 0) and their budget goes to it. PeGaSus gets {_fmt(rest)} split "
            "over the levels.") + "</div>"

    def _stats(self) -> None:
        out = self._outputs["phs"]
        pruned = out.get("pruned")
        share = 0.0 if pruned is None else float(np.asarray(pruned).mean())
        self._set_stats(self._where, f"{self.hierarchy.n_nodes} nodes × {self.n_steps:,} steps, "
                        f"{share:.1%} of node-steps pruned", out["guarantee"],
                        budget_parts(out["epsilon_parts"]))


def _events_text(q: dict) -> str:
    """The events' AUC of PeGaSus and LM with PeGaSus's TPR / FPR at δ, each one left out, with
    the reason, when it is undefined: an ROC needs windows that are events and windows that
    are not, a TPR true events, an FPR non-events (Chen 2018, §5.4)."""
    if np.isfinite(q["PeGaSus AUC"]) and np.isfinite(q["LM AUC"]):
        text = f"events AUC — PeGaSus {q['PeGaSus AUC']:.3f} · LM {q['LM AUC']:.3f}"
    else:
        text = ("events AUC not computed: at this event threshold the stream's windows are all "
                "events or none is")
    rates = [f"{name} {q[f'PeGaSus {name} at δ']:{spec}}" for name, spec in
             (("TPR", ".2f"), ("FPR", ".3f")) if np.isfinite(q[f"PeGaSus {name} at δ"])]
    return f"{text} (at δ: {' / '.join(rates)})" if rates else text
