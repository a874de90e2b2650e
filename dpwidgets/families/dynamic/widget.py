"""DynamicHistogramWidget: releasing a series of histograms over time (Li 2017, Ch. 4).

A series of N histogram snapshots of one evolving dataset is released through the session by
one of the mechanisms of :mod:`dpwidgets.releases.dynamic`: DSAT (adaptive threshold, Li 2017, Alg.
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

from ...session import Release, Session
from ...ui import figures
from ...ui.base import ReleaseWidget, budget_parts, fold, one_of
from ...ui.base import g3 as _fmt
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import EpsilonSlider, FloatSlider, IntSlider, slider
from . import display
from .spec import W_EVENT, expand_releases, user_level_factor
from .standins import dynamic_stand_in

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
    from .standins import census_like_series

    # drift 0.5 (the data module's addition): the people arriving in each of the ten periods
    # come from a slightly different population, so the periods are real change points. The
    # text's own setup (drift 0) only ever differs by sampling noise.
    return census_like_series(500, 100_000, drift=0.5, rng=rng)


def _moving(rng: np.random.Generator):
    from .standins import moving_object_series

    return moving_object_series(400, 20_000, grid=(16, 16), rng=rng)


#: The public series of the teaching widget (Li 2017, §4.5.1's two kinds of data, scaled down).
DATASETS: dict[str, SeriesSource] = {
    "census": SeriesSource(
        "Census-like, drifting (Li 2017, §4.5.1): N = 500 snapshots of 100,000 people, "
        "age × education × income",
        _census, (96, 12, 3), ("age", "education", "income"), 100_000,
    ),
    "moving": SeriesSource(
        "Moving objects (Li 2017's Oldenburg data, a stand-in): N = 400 snapshots of 20,000 "
        "on a 16 × 16 grid",
        _moving, (16, 16), ("y", "x"), 20_000,
    ),
}

#: Methods: (dropdown label, short name for legends).
METHODS: dict[str, tuple[str, str]] = {
    "dsat": ("DSAT: adaptive threshold (Li 2017, Alg. 8)", "DSAT"),
    "dsft": ("DSFT: fixed threshold T (Li 2017, Alg. 7)", "DSFT"),
    "dynamic_fixed": ("fixed sampling every N/C points", "fixed sampling"),
    "dynamic_uniform": ("ε/N at every snapshot (baseline)", "ε/N"),
    "dsat_w_event": ("w-event DSAT (Li 2017, Alg. 9)", "w-event DSAT"),
    "dynamic_bd": ("w-event BD, budget distribution (Kellaris et al.)", "BD"),
    "dynamic_ba": ("w-event BA, budget absorption (Kellaris et al.)", "BA"),
}
_THRESHOLD = ("dsat", "dsft", "dsat_w_event")
_ADAPTIVE = ("dsat", "dsat_w_event")
_CUTOFF = ("dsat", "dsft", "dsat_w_event", "dynamic_fixed")

_VARIANTS = {
    "paced": "The engine's paced controller: T_i = T_s·2^(releases ahead of the schedule C·t/N), "
             "distance to the true snapshot at the last release (not the text's).",
    "text": "Li 2017, Alg. 8 as printed: the P term of a PID controller on the release ratio "
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


class DynamicHistogramWidget(ReleaseWidget):
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
        sensitivity 2/(n-1)). Default: the fact its data owner declared
        (``facts={"cardinality": n}``); without one, required in teaching mode (e.g. the
        public generator's ``n``) and refused in analyst mode. Never read off the data.
    method : str
        A key of :data:`METHODS` (a session mechanism of :mod:`dpwidgets.releases.dynamic`).
    epsilon : float
        The budget (user level; per window for the w-event methods, which are charged
        ``ε·⌈N/w⌉``).
    cutoff : int, optional
        ``C``, the most releases (per window for w-event DSAT); default 0.01 N (Li 2017, Table 4.2).
    variant : {"paced", "text"}
        DSAT's controller: the engine's paced one (default) or the text's P term (δ, θ).
    threshold : float
        DSFT's ``T``, the paced DSAT's on-schedule ``T_s``, the text's initial ``T_1`` (in
        [0, 2]).
    k : float, optional
        Decision share ``ε1 = kε``; ``None``: the engine's rule (``auto_k`` checked; Li 2017, Thm
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
    figure : display.DynamicFigure
        Sources ``truth_image``, ``release_image``, ``points``, ``threshold``, ``distance``,
        ``error_main``, ``error_cmp1``, ``error_cmp2``, ``snapshot_truth``,
        ``snapshot_release``.
    quality_values : dict
        Teaching / preview: the mean absolute error per bin over the whole series of the
        method and of each comparison (by short name).
    release_output : dict or None
        The DP output to export: analyst mode, the last paid release's only (never a preview);
        teaching mode, the live run drawn. ``shown_output`` is what is drawn (possibly a
        PREVIEW on the stand-in).
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
        one_of("method", method, sorted(METHODS))
        one_of("variant", variant, sorted(_VARIANTS))
        self._setup(session, debounce=debounce)
        self._syncing = False
        self._view: dict | None = None
        self._marginals: dict = {}
        self._errors: dict = {}
        self._truth_drawn: np.ndarray | None = None
        self._facts: dict[str, dict] = {}
        self.shown_output: dict | None = None

        if dataset is not None:
            n_times, n_bins = self._series_shape(dataset)
            shape = tuple(int(s) for s in (shape or (n_bins,)))
            if math.prod(shape) != n_bins:
                raise ValueError(f"shape {shape} has {math.prod(shape)} cells, but the series "
                                 f"has {n_bins} bins per snapshot")
            # A fact about the data: the data owner declares it with the dataset; the widget
            # shows it and never sends its own in analyst mode (the session applies the
            # declared). In teaching mode too it is never read off the data: the declared
            # fact, or the caller's (a public generator's parameter).
            declared = getattr(session, "facts", lambda d: {})(dataset).get("cardinality")
            if declared is None and cardinality is None:
                raise ValueError(
                    "the data owner must declare cardinality (the public lower bound n on "
                    "the snapshot sizes) with the dataset: add_dataset(..., "
                    "facts={'cardinality': n}), or pass cardinality= from the public "
                    "generator's parameters; it is never read off the data")
            if not session.teaching or cardinality is None:
                cardinality = declared if declared is not None else cardinality
            default = ("bin",) if len(shape) == 1 else tuple(f"dim {i}" for i in range(len(shape)))
            names = tuple(attributes) if attributes else default
            self._facts[f"dataset:{dataset}"] = {
                "name": dataset, "shape": shape, "attributes": names,
                "cardinality": int(cardinality)}
        self.data = self._data_dropdown(
            dataset, data, DATASETS,
            needs="an (N, U) series added with session.add_dataset and a public stand_in")
        self.method = ipw.Dropdown(options=[(label, key) for key, (label, _) in METHODS.items()],
                                 value=method, description="method",
                                 style={"description_width": "initial"},
                                 layout=ipw.Layout(width="420px"))
        self.method.add_class("dpw-method")
        self.variant = ipw.Dropdown(
            options=[("paced (engine default)", "paced"), ("as printed (Li 2017, Alg. 8)", "text")],
            value=variant, description="DSAT controller", style={"description_width": "initial"},
            layout=ipw.Layout(width="330px"))
        self.variant.add_class("dpw-variant")
        self.epsilon = EpsilonSlider(epsilon, description="ε")
        self.cutoff = slider(IntSlider, cutoff or 1, 1, 2, 1, "C (most releases)", "dpw-cutoff")
        self.cutoff_note = ipw.HTML()
        self.threshold = slider(FloatSlider, threshold, 0.0, 2.0, 0.005, "T", "dpw-threshold",
                                 ".3f")
        self.auto_k = ipw.Checkbox(value=k is None, description="k by the engine's rule",
                                 style={"description_width": "initial"})
        self.auto_k.add_class("dpw-auto-k")
        self.k = slider(FloatSlider, k if k is not None else 0.2, 0.01, 0.99, 0.01,
                         "k = ε1/ε", "dpw-k", ".2f")
        self.delta = slider(FloatSlider, delta, 0.005, 0.5, 0.005, "δ", "dpw-delta", ".3f")
        self.theta = slider(FloatSlider, theta, 0.01, 2.0, 0.01, "θ", "dpw-theta", ".2f")
        self.burn_in = slider(IntSlider, burn_in or 1, 1, 2, 1, "burn-in M", "dpw-burn-in")
        self.w = slider(IntSlider, w or 2, 2, 3, 1, "w (window)", "dpw-w")
        self.compare = ipw.Checkbox(value=bool(compare), description="compare",
                                  style={"description_width": "initial"})
        self.compare.add_class("dpw-compare")
        self.show_truth = ipw.Checkbox(
            value=True, description="show the data", disabled=not session.teaching,
            layout=ipw.Layout(display=None if session.teaching else "none"))
        self.time = slider(IntSlider, time or 1, 1, 2, 1, "time t", "dpw-time")
        self.time.layout = ipw.Layout(width="560px")
        self._init = {"cutoff": cutoff, "burn_in": burn_in, "w": w, "time": time}
        self.figure = display.dynamic_figure()
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
        self._assemble([self.banner, controls, self.message, self.plot, self.time,
                        self.quality, self.stats], "dpw-dynamic")
        self._watch(self._on_change, self.method, self.variant, self.epsilon, self.cutoff,
                    self.threshold, self.auto_k, self.k, self.delta, self.theta, self.burn_in,
                    self.compare, self.show_truth, self.w)
        self._watch(self._on_data, self.data)
        self._watch(self._on_time, self.time)
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
                    stand_in=dynamic_stand_in(hist.shape[0], hist.shape[1], src.cardinality),
                    facts={"cardinality": src.cardinality})  # the generator's parameter
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
        """Slider ranges for the series' N (the values are kept: one beyond the new range is
        refused with a message, not clamped)."""
        n = self.n_times
        init = self._init if initial else {}
        with self._setting():
            for slider, hi in ((self.time, n), (self.w, n), (self.cutoff, n)):
                slider.max = max(hi, slider.min + 1)
            self.w.value = init.get("w") or (self.w.value if not initial else max(2, n // 4))
            self.cutoff.value = init.get("cutoff") or (
                self.cutoff.value if not initial else max(1, round(0.01 * n)))
            self.time.value = init.get("time") or max(1, n // 2)
            self._fit_burn_in(init.get("burn_in") or (
                self.burn_in.value if not initial else None))

    def _window_limit(self) -> int:
        return self.w.value if self.method.value in W_EVENT else self.n_times

    def _fit_burn_in(self, value: int | None) -> None:
        """Fit burn-in M's range to the window (M < w, or < N); the value is kept as it is:
        an M the window no longer holds is refused with a message, never lowered silently.
        ``None``: the default M = max(1, round(0.02 w))."""
        limit = self._window_limit()
        self.burn_in.max = max(limit - 1, 2)
        self.burn_in.accepted = (1, max(limit - 1, 1))
        if value is None:
            value = min(max(1, round(0.02 * limit)), max(limit - 1, 1))
        self.burn_in.value = value

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
            if self.session.teaching:  # analyst: the owner's declared fact applies
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
        # Irrelevant under the engine's rule: hidden, not shown with a k the run does not use.
        self.k.layout.visibility = "hidden" if self.auto_k.value else "visible"
        limit = self._window_limit()
        with self._setting():
            self.cutoff.max = max(limit, 2)
            self._fit_burn_in(self.burn_in.value)
        self.cutoff_note.value = (
            f"<span>C/{'w' if method in W_EVENT else 'N'} = "
            f"{self.cutoff.value / limit:.3g}</span>")
        cmp = self.comparisons()
        self.compare.description = ("compare with " + " and ".join(
            METHODS[m][1] for m in (("dynamic_bd", "dynamic_ba") if method in W_EVENT
                                    else ("dynamic_fixed", "dynamic_uniform")))
            if cmp or not self.compare.value else "compare")

    def _on_change(self, change=None) -> None:
        if not self._quiet(change):
            self._update_controls()
        super()._on_change(change)

    def _on_time(self, change=None) -> None:
        if self._syncing:
            return
        self._draw_time()

    # -- the branch ------------------------------------------------------------------------
    @property
    def release_output(self) -> dict | None:
        """What to export: the last paid release's output (analyst), the live run (teaching)."""
        if not self.session.teaching:
            return None if self.last_release is None else self.last_release.output
        return self.shown_output

    stand_in_note = "same shape"

    @property
    def mechanism(self) -> str:
        return self.method.value

    @property
    def title(self) -> str:
        return METHODS[self.method.value][0]

    def _draw_release(self, release: Release) -> None:
        """Analyst: the method's released output (the comparisons are never released)."""
        self._show(release.output, [], None, where="release")

    def compute(self) -> tuple[dict, list[dict], np.ndarray | None, str]:
        """The engine part of a redraw: the method's output, the comparisons' outputs, the
        reference allowed on screen (data in teaching, stand-in in a preview) and where.

        Teaching: live releases through the session (charged). Analyst: previews on the
        stand-in (free).
        """
        method, ds = self.method.value, self.dataset
        if self.session.teaching:
            main = self._live_release()
            others = [self.session.release(ds, m, run=self._run, **self.params_for(m))
                      for m in self.comparisons()]
            self._last_releases = [main, *others]
            reference = self.session.public_view(ds) if self.show_truth.value else None
            return main.output, [r.output for r in others], reference, "teaching"
        outputs = []
        for m in [method, *self.comparisons()]:
            outputs.append(self._preview_run(m, **self.params_for(m)).output)
        return outputs[0], outputs[1:], self.session.stand_in(ds), "preview"

    # -- accuracy before spending (analyst) -------------------------------------------------
    accuracy_what = "the error per time step (against the stand-in, as the error panel plots it)"

    def _accuracy_values(self, release: Release) -> np.ndarray:
        """The error per time step of a preview against the stand-in it ran on (public)."""
        ref = self._reference(self.session.stand_in(self.dataset))
        return display.error_per_time(release.output["histograms"],
                                              release.output["release_points"], ref["f32"])

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
            hit = (series, {"f32": f32, "dist": display.normalise_rows(f32),
                            "marginal": display.marginal(series, self.shape)[0]})
            self._marginals[id(series)] = hit
        return hit[1]

    def _error_of(self, output: dict, ref: dict) -> np.ndarray:
        """:func:`.display.error_per_time` of a release, cached per output and reference
        (a replayed release -- e.g. the ε/N comparison when only C or T moved -- is the same
        output object, so its error is not measured again)."""
        key = (id(output), id(ref["f32"]))
        hit = self._errors.get(key)
        if hit is None or hit[0] is not output or hit[1] is not ref["f32"]:
            if len(self._errors) > 16:
                self._errors.clear()
            err = display.error_per_time(output["histograms"], output["release_points"],
                                                 ref["f32"])
            hit = (output, ref["f32"], err)
            self._errors[key] = hit
        return hit[2]

    def _release_marginal(self, output: dict):
        rows = np.asarray(output["histograms"], float).reshape(-1, int(output["n_bins"]))
        values, positions, width = display.marginal(rows, self.shape)
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
        self.shown_output = output
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
                distance = display.distance_to_last_release(rows, points, ref["dist"])
        n_levels = int(self.shape[0])
        columns = display.series_plot_data(
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
        # After a release the data and the error (which needs the data) have nothing to show:
        # their panels go rather than stand empty.
        figures.show_panels(self.figure.panels, truth_heat=truth_marg is not None,
                            error=bool(errors))
        self._view = {"release": release_marg, "truth": truth_marg, "positions": positions,
                      "width": width}
        self._draw_time()
        self._set_quality(values, where)
        self._stats(output, where)

    def _draw_time(self) -> None:
        if self._view is None:
            return
        t = min(max(int(self.time.value), 1), self.n_times)
        figures.update(self.figure, display.snapshot_plot_data(
            t, positions=self._view["positions"], release_marginal=self._view["release"],
            truth_marginal=self._view["truth"], width=self._view["width"]))
        self.figure.set_time(t)
        self.figure.set_titles(snapshot=f"Histogram at t = {t}: {self.attributes[0]}")

    # -- text ------------------------------------------------------------------------------
    def _update_banner(self) -> None:
        if self.problem():
            return
        method = self.method.value
        eps = float(self.epsilon.value)
        if method in W_EVENT:
            factor = user_level_factor(self.n_times, int(self.w.value))
            summary = (f"ε = {_fmt(eps)}-DP {self.per_unit} per window of w = {self.w.value} "
                       f"snapshots; charged {_fmt(factor * eps)}")
            guarantee = (f"ε = {_fmt(eps)}-DP {self.per_unit} for every window of w = {self.w.value} snapshots "
                         f"(w-event privacy, Li 2017, Def. 4.1.3); at user level (a person's records "
                         f"in all N = {self.n_times} snapshots) that is ⌈N/w⌉·ε = "
                         f"{_fmt(factor * eps)}, which is what the ledger is charged")
        else:
            summary = f"ε = {_fmt(eps)}-DP {self.per_unit} over all {self.n_times} snapshots"
            guarantee = (f"ε = {_fmt(eps)}-DP {self.per_unit} at user level: a person's records in all "
                         f"N = {self.n_times} snapshots are protected together (Li 2017, Def. 4.1.1)")
        about = _BANNERS[method] + (f" {_VARIANTS[self.variant.value]}" if method == "dsat" else "")
        self.banner.value = (
            "<div class='dpw-banner-ok'>"
            + fold(f"<b>{html.escape(METHODS[method][0])}</b>: {html.escape(summary)}",
                   f"{html.escape(about)} Guarantee: {html.escape(guarantee)}.")
            + "</div>")

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
        details = output.get("details", {})
        extra = f", k = {_fmt(details['k'])}" if details.get("k") is not None else ""
        self._set_stats(where, f"{output['n_releases']} new histogram(s) at t = {shown}",
                        output["guarantee"], budget_parts(output["epsilon_parts"]) + extra)
