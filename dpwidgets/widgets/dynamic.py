"""DynamicHistogramWidget: releasing a series of histograms over time (003 Ch. 4, SPEC §3.6).

A series of N histogram snapshots of one evolving dataset is released through the session by
one of the mechanisms of :mod:`dpwidgets.releases.dynamic`: DSAT (adaptive threshold, 003 Alg.
8), DSFT (fixed threshold, Alg. 7), fixed sampling every N/C points, the ε/N-per-snapshot
baseline, and under w-event privacy DSAT (Alg. 9), BD and BA (Kellaris et al.). The widget
shows

- the series as heatmaps (time × the first attribute's marginal): the data and the release,
  with the release points DSAT chose marked on top;
- the threshold trajectory ``T_i`` (public: steered by the release count) with the release
  points, and in teaching mode the distance of each snapshot to the last release;
- the error over time of the method against fixed sampling and against ε/N (or, for the
  w-event methods, against BD and BA);
- the histogram at a selected time (the time slider; a view control that never spends).

Teaching mode (public data): every control change is a live release of the method *and* of
its comparisons (each charged to the teaching ledger -- the meter shows what exploring costs),
and the errors are measured against the data. Analyst mode (confidential data): control
changes drive a free preview on the dataset's public stand-in (same shape), errors measured
against the stand-in; only the Release button spends, on the method alone; a release draws the
DP output only (the released histograms, the release points, the public threshold trajectory)
-- no snapshot, marginal, distance or error of the confidential series.
"""

from __future__ import annotations

import html
import math
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import ipywidgets as ipw
import numpy as np

from ..engine.budget import BudgetExceededError
from ..releases.dynamic import W_EVENT, dynamic_stand_in, expand_releases, user_level_factor
from ..session import MECHANISMS, PrivacyPolicyError, Release, Session
from . import figures, figures_dynamic
from ._bokeh import OfflineBokehMixin, bokeh_widget, ensure_bokehjs
from .controls import Debouncer, EpsilonSlider, FloatSlider, epsilon_guardrail
from .svt_explorer import _is_echo

__all__ = ["DATASETS", "METHODS", "DynamicHistogramWidget", "SeriesSource"]


@dataclass(frozen=True)
class SeriesSource:
    """A public series a teaching widget can add to its session, with its public facts."""

    title: str
    make: Callable[[np.random.Generator], object]  # -> dpwidgets.datasets.DynamicSeries
    shape: tuple[int, ...]
    attributes: tuple[str, ...]
    cardinality: int


def _census(rng: np.random.Generator):
    from ..datasets.dynamic import census_like_series

    # drift 0.5 (the data module's addition): the people arriving in each of the ten periods
    # come from a slightly different population, so the periods are real change points. The
    # text's own setup (drift 0) only ever differs by sampling noise.
    return census_like_series(500, 100_000, drift=0.5, rng=rng)


def _moving(rng: np.random.Generator):
    from ..datasets.dynamic import moving_object_series

    return moving_object_series(400, 20_000, grid=(16, 16), rng=rng)


#: The public series of the teaching widget (003 §4.5.1's two kinds of data, scaled down).
DATASETS: dict[str, SeriesSource] = {
    "census": SeriesSource(
        "Census-like (003 §4.5.1, with drift between periods): N = 500 snapshots of "
        "n = 100,000 people, age × education × income (3,456 bins)",
        _census, (96, 12, 3), ("age", "education", "income"), 100_000,
    ),
    "moving": SeriesSource(
        "Moving objects (stand-in for 003's Oldenburg data): N = 400 snapshots of 20,000 "
        "objects on a 16 × 16 grid",
        _moving, (16, 16), ("y", "x"), 20_000,
    ),
}

#: Methods: (dropdown label, short name for legends).
METHODS: dict[str, tuple[str, str]] = {
    "dsat": ("DSAT: adaptive threshold (003 Alg. 8)", "DSAT"),
    "dsft": ("DSFT: fixed threshold T (003 Alg. 7)", "DSFT"),
    "dynamic_fixed": ("fixed sampling every N/C points", "fixed sampling"),
    "dynamic_uniform": ("ε/N at every snapshot (baseline)", "ε/N"),
    "dsat_w_event": ("w-event DSAT (003 Alg. 9)", "w-event DSAT"),
    "dynamic_bd": ("w-event BD, budget distribution (Kellaris et al.)", "BD"),
    "dynamic_ba": ("w-event BA, budget absorption (Kellaris et al.)", "BA"),
}
_THRESHOLD = ("dsat", "dsft", "dsat_w_event")
_ADAPTIVE = ("dsat", "dsat_w_event")
_CUTOFF = ("dsat", "dsft", "dsat_w_event", "dynamic_fixed")

_VARIANTS = {
    "paced": "The engine's paced controller: T_i = T_s·2^(releases ahead of the schedule C·t/N), "
             "distance to the true snapshot at the last release (not the text's).",
    "text": "003 Alg. 8 as printed: the P term of a PID controller on the release ratio "
            "(eqs. 4.2.2-4.2.5, set point δ, gain θ), distance to the last private release.",
}

_BANNERS = {
    "dsat": "Releases a new private histogram only when the snapshot has moved far enough from "
            "the last release; the threshold T_i is steered towards C releases in N by a "
            "controller fed only with the public release count. SVT decisions with ε1 = kε, "
            "at most C releases with ε2/C each.",
    "dsft": "Releases a new private histogram when the noisy distance to the last release "
            "reaches a fixed threshold T; at most C releases (ε2/C each), SVT decisions with "
            "ε1 = kε. A T too low spends C early, a T too high hardly releases.",
    "dynamic_fixed": "Releases C evenly spaced snapshots with ε/C each and repeats them in "
                     "between, whatever the data do.",
    "dynamic_uniform": "Releases every one of the N snapshots with ε/N: the noise grows with N.",
    "dsat_w_event": "DSAT with at most C releases in every window of w snapshots.",
    "dynamic_bd": "Kellaris et al.'s budget distribution: half of each window's budget decides "
                  "(noisy change vs. expected noise), the other half publishes, each "
                  "publication with half of what the window has left.",
    "dynamic_ba": "Kellaris et al.'s budget absorption: every snapshot owns ε/(2w) for "
                  "publishing; a publication absorbs the shares of the skipped snapshots.",
}


def _fmt(x: float) -> str:
    return f"{x:.3g}"


def _slider(cls, value, lo, hi, step, description, css, fmt=None, **kw):
    extra = {"readout_format": fmt} if fmt else {}
    s = cls(value=min(max(value, lo), hi), min=lo, max=hi, step=step, description=description,
            continuous_update=True, style={"description_width": "initial"}, **extra, **kw)
    s.add_class(css)
    return s


class DynamicHistogramWidget(OfflineBokehMixin, ipw.VBox):
    """Dynamic histogram release (DSAT, DSFT, fixed sampling, ε/N; w-event DSAT, BD, BA).

    Parameters
    ----------
    session : Session
        Holds the series and its budget.
    dataset : str, optional
        An ``(N, U)`` series in the session (whole counts, one snapshot per row). Required in
        analyst mode (its public stand-in is what previews use). In teaching mode without one,
        a public series is added (``data``).
    data : {"census", "moving"}
        Teaching mode: the public series to start with (:data:`DATASETS`).
    shape : tuple of int, optional
        The public domain of one snapshot (product U), e.g. ``(96, 12, 3)``; the heatmaps show
        the marginal of its first attribute. Default ``(U,)``.
    attributes : tuple of str, optional
        Names of the dimensions of ``shape`` (axis labels).
    cardinality : int, optional
        The public lower bound ``n`` on the snapshot sizes (DSAT/DSFT's distance has
        sensitivity 2/(n-1)). Required in analyst mode; in teaching mode the series' own
        smallest snapshot (the data are public).
    method : str
        A key of :data:`METHODS` (a session mechanism of :mod:`dpwidgets.releases.dynamic`).
    epsilon : float
        The budget (user level; per window for the w-event methods, which are charged
        ``ε·⌈N/w⌉``).
    cutoff : int, optional
        ``C``, the most releases (per window for w-event DSAT); default 0.01 N (003 Table 4.2).
    variant : {"paced", "text"}
        DSAT's controller: the engine's paced one (default) or the text's P term (δ, θ).
    threshold : float
        DSFT's ``T``, the paced DSAT's on-schedule ``T_s``, the text's initial ``T_1`` (in
        [0, 2]).
    k : float, optional
        Decision share ``ε1 = kε``; ``None``: the engine's rule (``auto_k`` checked; 003 Thm
        4.3.4 for DSFT and the text's DSAT).
    delta, theta : float
        The text's DSAT controller: set point and proportional gain (0.05 and 0.5, Table 4.2).
    burn_in : int, optional
        DSAT's burn-in ``M``; default ``max(1, round(0.02 N))`` (of w for w-event DSAT).
    w : int, optional
        The window of the w-event methods; default N/4.
    compare : bool
        Also run the comparisons (fixed sampling and ε/N, or BD and BA) and plot their errors.
        Teaching: each is a charged release; analyst: previewed only, never released.
    time : int, optional
        The snapshot shown first (1-based); default N/2.
    debounce : float
        Seconds of quiet before recomputing in a kernel (0: at once).

    Attributes
    ----------
    figure : figures_dynamic.DynamicFigure
        Sources ``truth_image``, ``release_image``, ``points``, ``threshold``, ``distance``,
        ``error_main``, ``error_cmp1``, ``error_cmp2``, ``snapshot_truth``,
        ``snapshot_release``.
    quality_values : dict
        Teaching / preview: the mean absolute error per bin over the whole series of the
        method and of each comparison (by short name).
    release_output : dict or None
        The DP output drawn last (analyst release, teaching live run or preview).
    """

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        data: str = "census",
        shape: tuple[int, ...] | None = None,
        attributes: tuple[str, ...] | None = None,
        cardinality: int | None = None,
        method: str = "dsat",
        variant: str = "paced",
        epsilon: float = 1.0,
        cutoff: int | None = None,
        threshold: float = 0.5,
        k: float | None = None,
        delta: float = 0.05,
        theta: float = 0.5,
        burn_in: int | None = None,
        w: int | None = None,
        compare: bool = True,
        time: int | None = None,
        debounce: float = 0.15,
    ):
        if method not in METHODS:
            raise ValueError(f"method must be one of {sorted(METHODS)}, got {method!r}")
        if variant not in _VARIANTS:
            raise ValueError(f"variant must be one of {sorted(_VARIANTS)}, got {variant!r}")
        self.session = session
        self._rng = np.random.default_rng(session.rng.integers(2**63))
        self._run = 0
        self._release: Release | None = None
        self._syncing = False
        self._view: dict | None = None
        self._marginals: dict = {}
        self._errors: dict = {}
        self._truth_drawn: np.ndarray | None = None
        self._facts: dict[str, dict] = {}
        self.quality_values: dict[str, float] = {}
        self.release_output: dict | None = None

        options: list[tuple[str, str]] = []
        if dataset is not None:
            n_times, n_bins = self._series_shape(dataset)
            shape = tuple(int(s) for s in (shape or (n_bins,)))
            if math.prod(shape) != n_bins:
                raise ValueError(f"shape {shape} has {math.prod(shape)} cells, but the series "
                                 f"has {n_bins} bins per snapshot")
            if cardinality is None:
                if not session.teaching:
                    raise ValueError(
                        "an analyst widget needs cardinality= : the public lower bound n on the "
                        "snapshot sizes (it is not read off the confidential data)")
                cardinality = int(session.public_view(dataset).sum(axis=1).min())
            default = ("bin",) if len(shape) == 1 else tuple(f"dim {i}" for i in range(len(shape)))
            names = tuple(attributes) if attributes else default
            self._facts[f"dataset:{dataset}"] = {
                "name": dataset, "shape": shape, "attributes": names,
                "cardinality": int(cardinality)}
            options.append((f"dataset {dataset!r}", f"dataset:{dataset}"))
        elif session.teaching:
            if data not in DATASETS:
                raise ValueError(f"data must be one of {sorted(DATASETS)}, got {data!r}")
        else:
            raise ValueError("an analyst session needs dataset= (an (N, U) series added with "
                             "session.add_dataset and a public stand_in)")
        if session.teaching:
            options += [(src.title, key) for key, src in DATASETS.items()]
        self.data = ipw.Dropdown(
            options=options, value=options[0][1] if dataset is not None else data,
            description="data", disabled=not session.teaching,
            style={"description_width": "initial"}, layout=ipw.Layout(width="700px"))
        self.data.add_class("dpw-scenario")
        self.method = ipw.Dropdown(options=[(label, key) for key, (label, _) in METHODS.items()],
                                 value=method, description="method",
                                 style={"description_width": "initial"},
                                 layout=ipw.Layout(width="420px"))
        self.method.add_class("dpw-method")
        self.variant = ipw.Dropdown(
            options=[("paced (engine default)", "paced"), ("as printed (003 Alg. 8)", "text")],
            value=variant, description="DSAT controller", style={"description_width": "initial"},
            layout=ipw.Layout(width="330px"))
        self.variant.add_class("dpw-variant")
        self.epsilon = EpsilonSlider(epsilon, description="ε")
        self.epsilon_note = ipw.HTML()
        self.epsilon_note.add_class("dpw-guardrail")
        self.cutoff = _slider(ipw.IntSlider, cutoff or 1, 1, 2, 1, "C (most releases)", "dpw-cutoff")
        self.cutoff_note = ipw.HTML()
        self.threshold = _slider(FloatSlider, threshold, 0.0, 2.0, 0.005, "T", "dpw-threshold",
                                 ".3f")
        self.auto_k = ipw.Checkbox(value=k is None, description="k by the engine's rule",
                                 style={"description_width": "initial"})
        self.auto_k.add_class("dpw-auto-k")
        self.k = _slider(FloatSlider, k if k is not None else 0.2, 0.01, 0.99, 0.01,
                         "k = ε1/ε", "dpw-k", ".2f")
        self.delta = _slider(FloatSlider, delta, 0.005, 0.5, 0.005, "δ", "dpw-delta", ".3f")
        self.theta = _slider(FloatSlider, theta, 0.01, 2.0, 0.01, "θ", "dpw-theta", ".2f")
        self.burn_in = _slider(ipw.IntSlider, burn_in or 1, 1, 2, 1, "burn-in M", "dpw-burn-in")
        self.w = _slider(ipw.IntSlider, w or 2, 2, 3, 1, "w (window)", "dpw-w")
        self.compare = ipw.Checkbox(value=bool(compare), description="compare",
                                  style={"description_width": "initial"})
        self.compare.add_class("dpw-compare")
        self.show_truth = ipw.Checkbox(
            value=True, description="show the data", disabled=not session.teaching,
            layout=ipw.Layout(display=None if session.teaching else "none"))
        self.time = _slider(ipw.IntSlider, time or 1, 1, 2, 1, "time t", "dpw-time")
        self.time.layout = ipw.Layout(width="560px")
        self.release_button = ipw.Button(
            description="Release (spends ε)" if not session.teaching else "Rerun (fresh noise)",
            button_style="warning" if not session.teaching else "",
            icon="lock-open" if not session.teaching else "refresh")
        self.release_button.add_class("dpw-release")
        self.banner, self.message, self.status, self.stats, self.quality = (
            ipw.HTML() for _ in range(5))
        for widget, css in ((self.banner, "dpw-banner"), (self.message, "dpw-message"),
                            (self.status, "dpw-status"), (self.stats, "dpw-stats"),
                            (self.quality, "dpw-quality")):
            widget.add_class(css)

        self._init = {"cutoff": cutoff, "burn_in": burn_in, "w": w, "time": time}
        self.figure = figures_dynamic.dynamic_figure()
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        self._select_data(initial=True)

        self._rows = {
            "threshold": ipw.HBox([self.threshold, self.burn_in]),
            "variant": ipw.HBox([self.variant]),
            "k": ipw.HBox([self.auto_k, self.k]),
            "pid": ipw.HBox([self.delta, self.theta]),
            "w": ipw.HBox([self.w]),
        }
        controls = ipw.VBox([
            self.data,
            ipw.HBox([self.method, self.compare, self.show_truth]),
            ipw.HBox([self.epsilon, self.epsilon_note]),
            ipw.HBox([self.cutoff, self.cutoff_note]),
            *self._rows.values(),
            ipw.HBox([self.release_button, self.status]),
        ])
        controls.add_class("dpw-controls")
        super().__init__([self.banner, controls, self.message, self.plot, self.time,
                          self.quality, self.stats])
        self.add_class("dpw-dynamic")
        self.add_class(f"dpw-mode-{session.mode}")

        self._debouncer = Debouncer(self._recompute, debounce)
        for control in (self.method, self.variant, self.epsilon, self.cutoff, self.threshold,
                        self.auto_k,
                        self.k, self.delta, self.theta, self.burn_in, self.compare,
                        self.show_truth):
            control.observe(self._on_change, names="value")
        self.w.observe(self._on_window, names="value")
        self.data.observe(self._on_data, names="value")
        self.time.observe(self._on_time, names="value")
        self.release_button.on_click(self._on_release_clicked)
        self._update_controls()
        self._recompute()

    # -- data ------------------------------------------------------------------------------
    def _series_shape(self, dataset: str) -> tuple[int, int]:
        shape = self.session.shape(dataset)
        if len(shape) != 2:
            raise ValueError(f"dataset {dataset!r} is not an (N, U) series: shape {shape}")
        return int(shape[0]), int(shape[1])

    def _select_data(self, initial: bool = False) -> None:
        value = self.data.value
        if value not in self._facts:
            src = DATASETS[value]
            name = {"census": "census_like", "moving": "moving_objects"}.get(value, value)
            if name not in self.session.datasets:
                series = src.make(np.random.default_rng(zlib.crc32(name.encode())))
                hist = series.histograms
                self.session.add_dataset(
                    name, hist, total_epsilon=10.0, description=src.title,
                    stand_in=dynamic_stand_in(hist.shape[0], hist.shape[1], src.cardinality))
            self._facts[value] = {"name": name, "shape": src.shape,
                                  "attributes": src.attributes, "cardinality": src.cardinality}
        facts = self._facts[value]
        self.dataset = facts["name"]
        self.shape = tuple(facts["shape"])
        self.attributes = tuple(facts["attributes"])
        self.cardinality = int(facts["cardinality"])
        self.n_times, self.n_bins = self._series_shape(self.dataset)
        self._fit_ranges(initial)

    def _fit_ranges(self, initial: bool) -> None:
        """Slider ranges for the series' N (keeping the values, clamped)."""
        n = self.n_times
        init = self._init if initial else {}
        self._syncing = True
        try:
            for slider, hi in ((self.time, n), (self.w, n), (self.cutoff, n)):
                slider.max = max(hi, slider.min + 1)
            self.w.value = init.get("w") or (self.w.value if not initial else max(2, n // 4))
            self.cutoff.value = init.get("cutoff") or (
                self.cutoff.value if not initial else max(1, round(0.01 * n)))
            self.time.value = init.get("time") or max(1, n // 2)
            self._fit_burn_in(init.get("burn_in") or (
                self.burn_in.value if not initial else None))
        finally:
            self._syncing = False

    def _window_limit(self) -> int:
        return self.w.value if self.method.value in W_EVENT else self.n_times

    def _fit_burn_in(self, value: int | None) -> None:
        limit = self._window_limit()
        self.burn_in.max = max(limit - 1, 2)
        self.burn_in.value = min(value or max(1, round(0.02 * limit)), max(limit - 1, 1))

    # -- parameters ------------------------------------------------------------------------
    def params_for(self, method: str) -> dict:
        """The session parameters of ``method`` from the controls (all public)."""
        p: dict = {"epsilon": float(self.epsilon.value)}
        if method in _CUTOFF:
            p["cutoff"] = int(self.cutoff.value)
        if method in W_EVENT:
            p["w"] = int(self.w.value)
        if method in _THRESHOLD:
            p["threshold"] = float(self.threshold.value)
            p["cardinality"] = self.cardinality
            p["k"] = None if self.auto_k.value else float(self.k.value)
        if method in _ADAPTIVE:
            p["burn_in"] = int(self.burn_in.value)
        if method == "dsat":
            p["variant"] = self.variant.value
        if self._text_controller(method):
            p.update(delta=float(self.delta.value), theta=float(self.theta.value))
        return p

    @property
    def params(self) -> dict:
        """Parameters of the method's release (all public)."""
        return self.params_for(self.method.value)

    def comparisons(self) -> list[str]:
        """The mechanisms run beside the method (none if ``compare`` is unchecked)."""
        if not self.compare.value:
            return []
        method = self.method.value
        pair = ("dynamic_bd", "dynamic_ba") if method in W_EVENT else (
            "dynamic_fixed", "dynamic_uniform")
        return [m for m in pair if m != method]

    # -- events ----------------------------------------------------------------------------
    def _text_controller(self, method: str) -> bool:
        """Whether ``method`` steers its threshold with the text's P term (δ, θ)."""
        return method == "dsat_w_event" or (method == "dsat" and self.variant.value == "text")

    def _update_controls(self) -> None:
        method = self.method.value
        show = {"threshold": method in _THRESHOLD, "k": method in _THRESHOLD,
                "variant": method == "dsat", "pid": self._text_controller(method),
                "w": method in W_EVENT}
        for name, row in self._rows.items():
            row.layout.display = None if show[name] else "none"
        self.cutoff.layout.visibility = "visible" if method in _CUTOFF else "hidden"
        self.cutoff_note.layout.visibility = self.cutoff.layout.visibility
        self.threshold.description = (
            "T" if method == "dsft" else
            "T_s (on schedule)" if method == "dsat" and self.variant.value == "paced"
            else "T1 (initial)")
        self.burn_in.layout.display = None if method in _ADAPTIVE else "none"
        self.k.disabled = bool(self.auto_k.value)
        limit = self._window_limit()
        self._syncing = True
        try:
            self.cutoff.max = max(limit, 2)
            self._fit_burn_in(self.burn_in.value)
        finally:
            self._syncing = False
        self.cutoff_note.value = (
            f"<span>C/{'w' if method in W_EVENT else 'N'} = "
            f"{self.cutoff.value / limit:.3g}</span>")
        cmp = self.comparisons()
        self.compare.description = ("compare with " + " and ".join(
            METHODS[m][1] for m in (("dynamic_bd", "dynamic_ba") if method in W_EVENT
                                    else ("dynamic_fixed", "dynamic_uniform")))
            if cmp or not self.compare.value else "compare")

    def _on_change(self, change=None) -> None:
        if self._syncing or _is_echo(change):
            return
        self._release = None
        self._update_controls()
        self._debouncer.trigger()

    def _on_window(self, change=None) -> None:
        if self._syncing or _is_echo(change):
            return
        self._on_change()

    def _on_data(self, change=None) -> None:
        self._select_data()
        self._on_change()

    def _on_time(self, change=None) -> None:
        if self._syncing:
            return
        self._draw_time()

    def _on_release_clicked(self, _button=None) -> None:
        if self.session.teaching:
            self._run += 1
            self._recompute()
        else:
            self.release()

    # -- actions ---------------------------------------------------------------------------
    def release(self) -> Release | None:
        """Analyst mode: release the method's output (the comparisons are never released).

        Charged once (``ε``, or ``ε·⌈N/w⌉`` for a w-event method) and replayed for free.
        Errors are shown in ``message`` and nothing is charged; ``None`` is returned then.
        """
        try:
            release = self.session.release(self.dataset, self.method.value, **self.params)
        except (BudgetExceededError, PrivacyPolicyError, ValueError) as exc:
            self._show_error(exc)
            return None
        self._release = release
        what = (f"charged ε = {release.epsilon:.3g}" if release.charged
                else "replayed a cached release, nothing spent")
        self.message.value = (f"<div class='dpw-ok'>Released. {html.escape(release.label)}: "
                              f"{what}.</div>")
        self._show(release.output, [], None, where="release")
        self.status.value = "<span class='dpw-released'>Showing the released DP output.</span>"
        return release

    def _show_error(self, exc: Exception) -> None:
        kind = "Over budget" if isinstance(exc, BudgetExceededError) else "Refused"
        self.message.value = f"<div class='dpw-error'><b>{kind}.</b> {html.escape(str(exc))}</div>"

    def _recompute(self) -> None:
        """Redraw from the controls: live releases (teaching) or a free preview (analyst)."""
        self._update_banner()
        method = self.method.value
        try:
            cost = self.session.cost(method, self.dataset, **self.params)
            remaining = None if self.session.teaching else self.session.remaining(self.dataset)
            note = epsilon_guardrail(cost, remaining)
            self.epsilon_note.value = f"<span class='dpw-note'>{html.escape(note)}</span>"
            if self.session.teaching:
                self._live()
            else:
                self._preview(cost)
        except (BudgetExceededError, PrivacyPolicyError, ValueError) as exc:
            self._show_error(exc)

    def compute(self) -> tuple[dict, list[dict], np.ndarray | None, str]:
        """The engine part of a redraw: the method's output, the comparisons' outputs, the
        reference allowed on screen (data in teaching, stand-in in a preview) and where.

        Teaching: live releases through the session (charged). Analyst: previews on the
        stand-in (free).
        """
        method, ds = self.method.value, self.dataset
        if self.session.teaching:
            main = self.session.release(ds, method, run=self._run, **self.params)
            others = [self.session.release(ds, m, run=self._run, **self.params_for(m))
                      for m in self.comparisons()]
            self._last_releases = [main, *others]
            reference = self.session.public_view(ds) if self.show_truth.value else None
            return main.output, [r.output for r in others], reference, "teaching"
        outputs = []
        for m in [method, *self.comparisons()]:
            result = self.session.preview(ds, m, rng=self._rng, **self.params_for(m))
            outputs.append(MECHANISMS[m].outputs(result, {}))
        return outputs[0], outputs[1:], self.session.stand_in(ds), "preview"

    def _live(self) -> None:
        main, others, reference, where = self.compute()
        self._show(main, others, reference, where=where)
        releases = self._last_releases
        over = any(r.overdraft for r in releases)
        self.message.value = ("<div class='dpw-warn'>Past the cap: on confidential data this run "
                              "would have been refused.</div>" if over else "")
        charged = sum(r.epsilon for r in releases if r.charged)
        self.status.value = (
            f"<span>live run #{self._run}: {len(releases)} release(s), ε = {_fmt(charged)} "
            f"charged{' (the rest cached, free)' if charged < sum(r.epsilon for r in releases) else ''}"
            "</span>")

    def _preview(self, cost: float) -> None:
        main, others, reference, where = self.compute()
        self._show(main, others, reference, where=where)
        self.message.value = ""
        cached = self.session.is_cached(self.dataset, self.method.value, **self.params)
        self.status.value = (
            "<span class='dpw-preview'>PREVIEW on the public stand-in (same shape) — nothing "
            f"spent. Release would charge ε = {_fmt(cost)}"
            f"{' (already released: a free replay)' if cached else ''}.</span>")

    # -- drawing ---------------------------------------------------------------------------
    def _reference(self, series: np.ndarray) -> dict:
        """What the widget derives from a reference it may draw (the data in teaching mode, the
        stand-in in a preview), once per array: float32 copies for the error measures and the
        first attribute's marginal."""
        hit = self._marginals.get(id(series))
        if hit is None or hit[0] is not series:
            if len(self._marginals) > 4:
                self._marginals.clear()
            f32 = np.asarray(series, dtype=np.float32)
            hit = (series, {"f32": f32, "dist": figures_dynamic.normalise_rows(f32),
                            "marginal": figures_dynamic.marginal(series, self.shape)[0]})
            self._marginals[id(series)] = hit
        return hit[1]

    def _error_of(self, output: dict, ref: dict) -> np.ndarray:
        """:func:`.figures_dynamic.error_per_time` of a release, cached per output and reference
        (a replayed release -- e.g. the ε/N comparison when only C or T moved -- is the same
        output object, so its error is not measured again)."""
        key = (id(output), id(ref["f32"]))
        hit = self._errors.get(key)
        if hit is None or hit[0] is not output or hit[1] is not ref["f32"]:
            if len(self._errors) > 16:
                self._errors.clear()
            err = figures_dynamic.error_per_time(output["histograms"], output["release_points"],
                                                 ref["f32"])
            hit = (output, ref["f32"], err)
            self._errors[key] = hit
        return hit[2]

    def _release_marginal(self, output: dict):
        rows = np.asarray(output["histograms"], float).reshape(-1, int(output["n_bins"]))
        values, positions, width = figures_dynamic.marginal(rows, self.shape)
        series = expand_releases({"histograms": values, "n_bins": values.shape[1],
                                  "release_points": output["release_points"]})
        return series, positions, width

    def draw(self, output: dict, comparisons: list[dict], reference: np.ndarray | None,
             where: str) -> None:
        """The drawing part of a redraw (ColumnDataSource updates only)."""
        self._show(output, comparisons, reference, where=where)

    def _show(self, output: dict, comparisons: list[dict], reference: np.ndarray | None, *,
              where: str) -> None:
        method = self.method.value
        self.release_output = output
        release_marg, positions, width = self._release_marginal(output)
        truth_marg = distance = None
        errors: list[np.ndarray] = []
        values: dict[str, float] = {}
        if reference is not None:
            ref = self._reference(reference)
            truth_marg = ref["marginal"]
            names = [method, *self.comparisons()][: 1 + len(comparisons)]
            for name, out in zip(names, [output, *comparisons], strict=True):
                err = self._error_of(out, ref)
                errors.append(err)
                values[METHODS[name][1]] = float(err.mean())
            if method in _THRESHOLD:
                points = np.asarray(output["release_points"], dtype=bool)
                # The distance the decisions looked at: to the last private release (the
                # text's) or to the true snapshot at the last release time (the paced DSAT).
                to_snapshot = output.get("details", {}).get("reference") == "snapshot"
                rows = ref["dist"][points] if to_snapshot else output["histograms"]
                distance = figures_dynamic.distance_to_last_release(rows, points, ref["dist"])
        n_levels = int(self.shape[0])
        columns = figures_dynamic.series_plot_data(
            release_marginal=release_marg, release_points=output["release_points"],
            release_epsilons=output["release_epsilons"], thresholds=output["thresholds"],
            n_levels=n_levels, truth_marginal=truth_marg, distance=distance, errors=errors)
        if truth_marg is not None and truth_marg is self._truth_drawn:
            del columns["truth_image"]  # the same data as on screen: no need to resend it
        self._truth_drawn = truth_marg
        figures.update(self.figure, columns)
        self.figure.set_axes(n_times=self.n_times, n_levels=n_levels,
                             attribute=self.attributes[0])
        scale = truth_marg if truth_marg is not None else release_marg
        self.figure.set_colour_range(float(np.percentile(scale, 99.5)))
        self.figure.set_error_labels([METHODS[m][1] for m in [method, *self.comparisons()]])
        short = METHODS[method][1]
        self.figure.set_titles(
            truth_heat={"teaching": f"Data (public, teaching): {self.attributes[0]} over time",
                        "preview": f"Public stand-in (preview): {self.attributes[0]} over time",
                        "release": "Data: not shown (analyst mode)"}[where],
            release_heat=f"Release ({short}{', preview' if where == 'preview' else ''}): "
                         f"{output['n_releases']} new histogram(s), ▼ release points",
            threshold=("Threshold T_i and release points" if method in _THRESHOLD
                       else "Release points (no threshold)"),
            error={"teaching": "Mean |error| per bin over time, against the data",
                   "preview": "Mean |error| per bin over time, on the public stand-in",
                   "release": "Error: not shown (it needs the confidential data)"}[where],
        )
        self._view = {"release": release_marg, "truth": truth_marg, "positions": positions,
                      "width": width}
        self._draw_time()
        self._set_quality(values, where)
        self._stats(output, where)

    def _draw_time(self) -> None:
        if self._view is None:
            return
        t = min(max(int(self.time.value), 1), self.n_times)
        figures.update(self.figure, figures_dynamic.snapshot_plot_data(
            t, positions=self._view["positions"], release_marginal=self._view["release"],
            truth_marginal=self._view["truth"], width=self._view["width"]))
        self.figure.set_time(t)
        self.figure.set_titles(snapshot=f"Histogram at t = {t}: {self.attributes[0]}")

    # -- text ------------------------------------------------------------------------------
    def _update_banner(self) -> None:
        method = self.method.value
        eps = float(self.epsilon.value)
        if method in W_EVENT:
            factor = user_level_factor(self.n_times, int(self.w.value))
            guarantee = (f"ε = {_fmt(eps)}-DP for every window of w = {self.w.value} snapshots "
                         f"(w-event privacy, 003 Def. 4.1.3); at user level (a person's records "
                         f"in all N = {self.n_times} snapshots) that is ⌈N/w⌉·ε = "
                         f"{_fmt(factor * eps)}, which is what the ledger is charged")
        else:
            guarantee = (f"ε = {_fmt(eps)}-DP at user level: a person's records in all "
                         f"N = {self.n_times} snapshots are protected together (003 Def. 4.1.1)")
        about = _BANNERS[method] + (f" {_VARIANTS[self.variant.value]}" if method == "dsat" else "")
        self.banner.value = (
            f"<div class='dpw-banner-ok'><b>{html.escape(METHODS[method][0])}</b>. "
            f"{html.escape(about)} Guarantee: {html.escape(guarantee)}.</div>")

    def _set_quality(self, values: dict[str, float], where: str) -> None:
        self.quality_values = values
        if not values:
            self.quality.value = (
                "<div>No error measure on confidential data: it would need the data.</div>"
                if where == "release" else "")
            return
        on = "on the public stand-in" if where == "preview" else "against the data"
        items = " · ".join(f"{html.escape(k)} = {v:.3g}" for k, v in values.items())
        self.quality.value = (f"<div class='dpw-quality-values'>Mean |error| per bin over the "
                              f"series, {on}: {items}</div>")

    def _stats(self, output: dict, where: str) -> None:
        points = np.flatnonzero(output["release_points"]) + 1
        shown = ", ".join(str(int(t)) for t in points[:12]) + (" …" if points.size > 12 else "")
        parts = " + ".join(f"{k} {_fmt(v)}" for k, v in output["epsilon_parts"].items())
        details = output.get("details", {})
        extra = f", k = {_fmt(details['k'])}" if details.get("k") is not None else ""
        head = {"teaching": "Live run", "preview": "Preview on the public stand-in",
                "release": "Released (DP output only)"}[where]
        self.stats.value = (
            f"<div>{head}: {output['n_releases']} new histogram(s) at t = {html.escape(shown)}. "
            f"Budget: {html.escape(parts)}{html.escape(extra)}. "
            f"Guarantee: {html.escape(output['guarantee'])}.</div>")
