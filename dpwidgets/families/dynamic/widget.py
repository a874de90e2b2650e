"""DynamicHistogramWidget: releasing a series of histograms over time (Li 2017, Ch. 4).

A series of N histogram snapshots of one evolving dataset is released through the session by
one of the mechanisms of :mod:`~dpwidgets.families.dynamic.spec`: DSAT (adaptive threshold, Li 2017, Alg.
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

The controller is this module; its parts are mixins by concern: :mod:`~dpwidgets.families.dynamic.preview` (the runs of a
redraw and the measures against a public reference), :mod:`~dpwidgets.families.dynamic.panels` (the drawing) and
:mod:`~dpwidgets.families.dynamic.text` (the methods, the banner, the quality and stats lines). The controls of the
mechanisms' parameters are built from their declarations (:mod:`~dpwidgets.families.dynamic.params`).
"""

from __future__ import annotations

import math

import ipywidgets as ipw
import numpy as np

from ...session import Release, Session
from ...ui.base import ReleaseWidget, one_of
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import IntSlider, control_for, slider
from . import display
from .panels import DynamicPanels
from .params import DSATParams, WEventDSATParams
from .preview import DynamicRuns
from .sources import DATASETS, SeriesSource, add_teaching_series
from .spec import W_EVENT
from .text import (
    ADAPTIVE_METHODS,
    CUTOFF_METHODS,
    METHODS,
    THRESHOLD_METHODS,
    VARIANTS,
    DynamicText,
)

__all__ = ["DATASETS", "METHODS", "DynamicHistogramWidget", "SeriesSource"]


class DynamicHistogramWidget(DynamicRuns, DynamicPanels, DynamicText, ReleaseWidget):
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
        A key of :data:`METHODS` (a session mechanism of :mod:`~dpwidgets.families.dynamic.spec`).
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

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.families.dynamic.widget import DynamicHistogramWidget
    >>> s = Session(mode="teaching", seed=0)
    >>> wd = DynamicHistogramWidget(s, data="moving", compare=False, debounce=0)
    >>> wd.params["cutoff"], wd.params["cardinality"], s.spent("moving_objects")
    (4, 20000, 1.0)
    >>> wd.time.value = 37  # a view control: the snapshot panel is redrawn, nothing runs
    >>> wd.figure.panels["snapshot"].title.text, s.spent("moving_objects")
    ('Histogram at t = 37: y', 1.0)
    >>> wd.close(); s.close()
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
        one_of("variant", variant, sorted(VARIANTS))
        self._setup(session, debounce=debounce)
        self._syncing = False
        self._view: display.DynamicDisplay | None = None
        self._marginals: dict = {}
        self._errors: dict = {}
        self._truth_drawn: np.ndarray | None = None
        self._facts: dict[str, dict] = {}
        self.shown_output: dict | None = None
        if dataset is not None:
            self._facts[f"dataset:{dataset}"] = self._dataset_facts(
                dataset, shape, attributes, cardinality)
        self.data = self._data_dropdown(
            dataset, data, DATASETS,
            needs="an (N, U) series added with session.add_dataset and a public stand_in")
        self._build_controls(method, variant, epsilon, cutoff, threshold, k, delta, theta,
                             burn_in, w, compare, time)
        self._init = {"cutoff": cutoff, "burn_in": burn_in, "w": w, "time": time}
        self.figure = display.dynamic_figure()
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        self.select_data(initial=True)
        self._assemble([self.banner, self._controls_box(), self.message, self.plot, self.time,
                        self.quality, self.stats], "dpw-dynamic")
        self._watch(self.controls_changed, self.method, self.variant, self.epsilon, self.cutoff,
                    self.threshold, self.auto_k, self.k, self.delta, self.theta, self.burn_in,
                    self.compare, self.show_truth, self.w)
        self._watch(self.data_changed, self.data)
        self._watch(self._on_time, self.time)
        self._update_controls()
        self.redraw()

    def _dataset_facts(self, dataset: str, shape, attributes, cardinality) -> dict:
        """The public facts of the caller's ``dataset``: its snapshot domain, the names of its
        dimensions and the public snapshot size (the owner's declaration)."""
        n_times, n_bins = self._series_shape(dataset)
        shape = tuple(int(s) for s in (shape or (n_bins,)))
        if math.prod(shape) != n_bins:
            raise ValueError(f"shape {shape} has {math.prod(shape)} cells, but the series "
                             f"has {n_bins} bins per snapshot")
        # A fact about the data: the data owner declares it with the dataset; the widget
        # shows it and never sends its own in analyst mode (the session applies the
        # declared). In teaching mode too it is never read off the data: the declared
        # fact, or the caller's (a public generator's parameter).
        declared = getattr(self.session, "facts", lambda d: {})(dataset).get("cardinality")
        if declared is None and cardinality is None:
            raise ValueError(
                "the data owner must declare cardinality (the public lower bound n on "
                "the snapshot sizes) with the dataset: add_dataset(..., "
                "facts={'cardinality': n}), or pass cardinality= from the public "
                "generator's parameters; it is never read off the data")
        if not self.session.teaching or cardinality is None:
            cardinality = declared if declared is not None else cardinality
        default = ("bin",) if len(shape) == 1 else tuple(f"dim {i}" for i in range(len(shape)))
        names = tuple(attributes) if attributes else default
        return {"name": dataset, "shape": shape, "attributes": names,
                "cardinality": int(cardinality)}

    def _build_controls(self, method, variant, epsilon, cutoff, threshold, k, delta, theta,
                        burn_in, w, compare, time) -> None:
        """The controls; those of the mechanisms' parameters from their declarations
        (:mod:`~dpwidgets.families.dynamic.params`), their ranges fitted to the series later (:meth:`_fit_ranges`)."""
        self.method = ipw.Dropdown(options=[(label, key) for key, (label, _) in METHODS.items()],
                                   value=method, description="method",
                                   style={"description_width": "initial"},
                                   layout=ipw.Layout(width="420px"))
        self.method.add_class("dpw-method")
        self.variant = control_for(DSATParams, "variant", variant,
                                   layout=ipw.Layout(width="330px"))
        self.epsilon = control_for(DSATParams, "epsilon", epsilon)
        self.cutoff = control_for(DSATParams, "cutoff", cutoff or 1, min=1, max=2)
        self.cutoff_note = ipw.HTML()
        self.threshold = control_for(DSATParams, "threshold", threshold, readout_format=".3f")
        self.auto_k = ipw.Checkbox(value=k is None, description="k by the engine's rule",
                                   style={"description_width": "initial"})
        self.auto_k.add_class("dpw-auto-k")
        self.k = control_for(DSATParams, "k", k if k is not None else 0.2, readout_format=".2f")
        self.delta = control_for(DSATParams, "delta", delta, readout_format=".3f")
        self.theta = control_for(DSATParams, "theta", theta, readout_format=".2f")
        self.burn_in = control_for(DSATParams, "burn_in", burn_in or 1, min=1, max=2)
        self.w = control_for(WEventDSATParams, "w", w or 2, min=2, max=3)
        self.compare = ipw.Checkbox(value=bool(compare), description="compare",
                                    style={"description_width": "initial"})
        self.compare.add_class("dpw-compare")
        self.show_truth = ipw.Checkbox(
            value=True, description="show the data", disabled=not self.session.teaching,
            layout=ipw.Layout(display=None if self.session.teaching else "none"))
        self.time = slider(IntSlider, time or 1, 1, 2, 1, "time t", "dpw-time")
        self.time.layout = ipw.Layout(width="560px")

    def _controls_box(self) -> ipw.VBox:
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
        return controls

    # -- data ------------------------------------------------------------------------------
    def _series_shape(self, dataset: str) -> tuple[int, int]:
        shape = self.session.shape(dataset)
        if len(shape) != 2:
            raise ValueError(f"dataset {dataset!r} is not an (N, U) series: shape {shape}")
        return int(shape[0]), int(shape[1])

    def select_data(self, initial: bool = False) -> None:
        value = self.data.value
        if value not in self._facts:
            self._facts[value] = add_teaching_series(self.session, value)
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
        if method in CUTOFF_METHODS:
            p["cutoff"] = int(self.cutoff.value)
        if method in W_EVENT:
            p["w"] = int(self.w.value)
        if method in THRESHOLD_METHODS:
            p["threshold"] = float(self.threshold.value)
            if self.session.teaching:  # analyst: the owner's declared fact applies
                p["cardinality"] = self.cardinality
            p["k"] = None if self.auto_k.value else float(self.k.value)
        if method in ADAPTIVE_METHODS:
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
        show = {"threshold": method in THRESHOLD_METHODS, "k": method in THRESHOLD_METHODS,
                "variant": method == "dsat", "pid": self._text_controller(method),
                "w": method in W_EVENT}
        for name, row in self._rows.items():
            row.layout.display = None if show[name] else "none"
        self.cutoff.layout.visibility = "visible" if method in CUTOFF_METHODS else "hidden"
        self.cutoff_note.layout.visibility = self.cutoff.layout.visibility
        self.threshold.description = (
            "T" if method == "dsft" else
            "T_s (on schedule)" if method == "dsat" and self.variant.value == "paced"
            else "T1 (initial)")
        self.burn_in.layout.display = None if method in ADAPTIVE_METHODS else "none"
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

    def controls_changed(self, change=None) -> None:
        if not self._quiet(change):
            self._update_controls()
        super().controls_changed(change)

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

    def draw_release(self, release: Release) -> None:
        """Analyst: the method's released output (the comparisons are never released)."""
        self.draw(release.output, [], None, where="release")
