"""SVTExplorer: the Sparse Vector Technique, its variants, its budget split, and top-c selection.

Controls (public attributes): ``variant``, ``epsilon``, ``c``, ``split`` (ε1:ε2),
``threshold`` (+ ``auto_threshold``), ``monotonic``, ``show_truth`` (teaching),
``release_button``. Outputs: ``figure`` (a :class:`~.figures.FigureHandle` whose ``sources``
are the ColumnDataSources drawn), ``banner``, ``audit_progress`` (how far the audit the banner
waits for is), ``message``, ``stats``.

Teaching mode reruns the chosen variant on every control change through
``session.release`` (charged to the teaching ledger so the meter shows what live use costs),
draws the true answers, the noisy threshold and the true top-c, and offers the broken variants
under a "not private" banner with their audited privacy loss. The audits (each a short wait) run
in one background thread, started when the widget is built for every broken variant at the
current ε grid point, so switching variants never runs one on the redraw path: the banner shows
the audit's result once it is in (and says "running" until then, with a progress bar over the
audit's batches). Analyst mode draws a free
preview on the dataset's public stand-in; only the Release button spends budget, and then only
the DP output (which queries were ⊤, where the run stopped) is drawn.
"""

from __future__ import annotations

import html
import math
import threading
import warnings
from concurrent.futures import Future

import ipywidgets as w
import numpy as np
from bokeh.layouts import column, row

from ...session import PrivacyPolicyError, Release, Session
from ...ui import figures
from ...ui.accuracy import Accuracy
from ...ui.base import ReleaseWidget, fmt, fold, is_echo, shown, undust
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import (
    FloatSlider,
    SliderText,
    SplitControl,
    control_for,
    control_problem,
)
from . import display
from .attack import AttackDemo
from .audits import AuditJob, Audits, audit_epsilon, audited_loss, default_audits
from .params import SVTParams
from .preview import check_runs, simulate_top_c, topc_rates, variant_info, variant_names

#: The most simulations the top-c panel averages per redraw (each reruns EM and SVT-ReTr).
MAX_TOPC_RUNS = 100
#: Appended to the top-c panel's title while its SVT bars carry the accuracy whiskers.
_WHISKERS = "; whiskers: 90% of releases"

__all__ = ["MAX_TOPC_RUNS", "AttackDemo", "AuditJob", "SVTExplorer", "audit_epsilon", "audit_future",
           "audited_loss", "default_threshold"]

DEFAULT_DATASET = "zipf_items"


def default_threshold(scores: np.ndarray, c: int, step: float | None = None) -> float:
    """Lyu, Su & Li 2017, §6's threshold: the mean of the c-th and (c+1)-th highest scores,
    to the 3 significant digits every label shows (:func:`~._base.shown`: 4008.5 is 4010
    in the box, the note, the button and the run alike).

    ``step``: the threshold slider's step (1, 2 or 5 times a power of ten). When it is coarser
    than the third significant digit the value is rounded to the step instead (604.4 -> 605
    at a step of 5), so the slider's readout shows the value too. Either way the result has
    at most 3 significant digits: a multiple of a step of ``{1, 2, 5}·10^m`` above the third
    digit's ``10^k`` is a multiple of ``10^m``, ``m >= k``.

    Only ever applied to public values (the data in teaching mode, the stand-in otherwise).
    """
    scores = np.asarray(scores, dtype=float)
    c = min(max(1, c), scores.size - 1)
    top = np.sort(np.partition(scores, scores.size - c - 1)[scores.size - c - 1 :])[::-1]
    value = shown((top[c - 1] + top[c]) / 2.0)
    if step and value and step > 10.0 ** (math.floor(math.log10(abs(value))) - 2):
        value = undust(round(value / step) * step)
    return value


def audit_future(variant: str, epsilon: float, *, urgent: bool = False) -> AuditJob:
    """The audit of ``(variant, epsilon)`` on the process's default audits
    (:func:`~dpwidgets.families.svt.audits.default_audits`): what an explorer given no ``audits=`` shows."""
    return default_audits().future(variant, epsilon, urgent=urgent)


def _default_teaching_dataset(session: Session) -> str:
    """Add the Lyu, Su & Li 2017, §6 Zipf setup (10,000 items, 1,000,000 records) to a teaching session."""
    from . import standins

    rng = np.random.default_rng(0)
    # The scores come in rank order; SVT examines queries in a (public) shuffled order (Lyu, Su & Li 2017, §6).
    scores = rng.permutation(np.asarray(standins.zipf_item_scores(rng=rng), dtype=float))
    session.add_dataset(
        DEFAULT_DATASET, scores, total_epsilon=10.0,
        description="Zipf item frequencies (Lyu, Su & Li 2017, §6 setup)",
    )
    return DEFAULT_DATASET


def _nice_step(span: float, n: int = 2000) -> float:
    """The largest 1-2-5 × 10^k step at most ``span / n`` (so typed round numbers stay round)."""
    if not span > 0:
        return 1e-6
    target = span / n
    decade = 10.0 ** math.floor(math.log10(target))
    return max(m * decade for m in (1, 2, 5) if m * decade <= target * (1 + 1e-12))


def _step_format(step: float) -> str:
    """A readout format that shows every value on the step grid exactly, without exponents."""
    return f".{max(0, -math.floor(math.log10(step) + 1e-9))}f"


class SVTExplorer(ReleaseWidget):
    """Interactive Sparse Vector Technique on a session's dataset of query answers.

    Parameters
    ----------
    session : Session
        The session holding the dataset and its budget.
    dataset : str, optional
        A dataset of query answers (e.g. item counts). Default: the session's first dataset;
        in a teaching session without datasets, the Lyu, Su & Li 2017 §6 Zipf setup is added.
    epsilon, c, variant :
        Initial control values.
    threshold : float, optional
        Initial threshold. Teaching: default the rule of Lyu, Su & Li 2017 §6 applied to the
        (public) data. Analyst: the threshold is the analyst's to type; until it is typed, the
        box shows the rule applied to the public stand-in, labelled as such, and Release is
        refused (a release never uses a number computed on the stand-in silently).
    monotonic : bool
        Whether the queries are monotonic (counts under add/remove-one). Teaching only; in
        analyst mode it is the data owner's declaration (``session.facts``), shown read-only.
    topc_runs : int
        Runs averaged for the EM and SVT-ReTr bars of the top-c panel (at most
        :data:`MAX_TOPC_RUNS`).
    debounce : float
        Seconds of quiet before recomputing in a kernel (0: recompute on every change).
    audits : Audits, optional
        Where the broken variants' privacy-loss audits run (:class:`~dpwidgets.families.svt.audits.Audits` on an
        executor); default the process's one worker (:func:`~dpwidgets.families.svt.audits.default_audits`).

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import SVTExplorer
    >>> explorer = SVTExplorer(Session("teaching", seed=0), epsilon=0.5, c=5)
    >>> explorer.c.value
    5
    """

    mechanism = "svt"

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        epsilon: float = 0.5,
        c: int = 25,
        variant: str = "standard",
        threshold: float | None = None,
        monotonic: bool = True,
        topc_runs: int = 5,
        debounce: float = 0.15,
        audits: Audits | None = None,
    ):
        self._setup(session, debounce=debounce)
        self.audits = audits if audits is not None else default_audits()
        # Serialises the banner's "running" / result text between a redraw and an audit's
        # done-callback (which runs on the audits' executor).
        self._banner_lock = threading.RLock()
        if dataset is None:
            if session.datasets:
                dataset = session.datasets[0]
            elif session.teaching:
                dataset = _default_teaching_dataset(session)
            else:
                raise ValueError("add a dataset to the analyst session first (add_dataset)")
        self.dataset = dataset
        self.n_queries = session.size(dataset)
        # Each run is a full EM and SVT-ReTr simulation on every slider move: a few suffice.
        self.topc_runs = check_runs(topc_runs, "topc_runs", MAX_TOPC_RUNS)
        public = session.public_view(dataset)

        allowed = [v for v in variant_names() if session.teaching or variant_info(v).private]
        if variant not in allowed:
            raise PrivacyPolicyError(
                f"variant {variant!r} is not available in {session.mode} mode; choose from {allowed}"
            )
        # The controls of the parameters, built from their declaration (SVTParams); what the
        # declaration cannot know is the mode's variants and the public number of queries.
        self.variant = control_for(SVTParams, "variant", variant,
                                   options=[(variant_info(v).title, v) for v in allowed])
        self.epsilon = control_for(SVTParams, "epsilon", epsilon)
        c_max = max(1, min(300, self.n_queries - 1))
        self.c = control_for(SVTParams, "c", c, max=c_max)
        self.c.accepted = (1, self.n_queries)
        if not session.teaching:
            # A fact about the data: the data owner's to declare, not the analyst's to claim.
            monotonic = bool(self.facts().get("monotonic", False))
        self.monotonic = control_for(SVTParams, "monotonic", monotonic,
                                     disabled=not session.teaching)
        if not session.teaching:
            self.monotonic.description = "monotonic queries (declared by the data owner)"
        self.split = SplitControl(int(c), monotonic)
        self.split.share.accepted = (0.0, 1.0)
        self.split.share.open_lo = True
        self.threshold = self._threshold_control(public, threshold, int(c))
        self.threshold_note = w.HTML()
        self.threshold_note.add_class("dpw-threshold-note")
        self.auto_threshold = w.Checkbox(
            value=threshold is None and session.teaching,
            description="threshold from c (Lyu, Su & Li 2017, §6)",
            layout=w.Layout(display=None if session.teaching else "none"),
        )
        self.show_truth = w.Checkbox(
            value=True, description="show ground truth", disabled=not session.teaching,
            layout=w.Layout(display=None if session.teaching else "none"),
        )

        self._build_figure()

        controls = w.VBox(
            [
                self.variant,
                w.HBox([self.epsilon, self.epsilon_note]),
                self.c,
                self.split,
                w.HBox([self.threshold, self.auto_threshold]),
                self.threshold_note,
                w.HBox([self.monotonic, self.show_truth]),
                w.HBox([self.release_button, self.status]),
            ]
        )
        controls.add_class("dpw-controls")
        # How far the audit the banner waits for is (teaching, broken variants only): its
        # batches of simulated runs on the public counterexample, nothing about the data.
        self.audit_progress = w.FloatProgress(
            value=0.0, min=0.0, max=1.0, description="audit", bar_style="info",
            layout=w.Layout(display="none", width="420px"))
        self.audit_progress.add_class("dpw-audit-progress")
        self._assemble([self.banner, self.audit_progress, controls, self.message, self.plot,
                        self.stats], "dpw-svt-explorer")

        self._batching = False
        # The broken variants (teaching only) and their audits at the starting ε grid point,
        # queued now so that a visit of one finds its number ready (the current one first).
        self._broken = sorted((v for v in allowed if not variant_info(v).private),
                              key=lambda v: v != variant)
        self._audit_waits: set[tuple[str, float]] = set()
        self._audit_watched: set[tuple[str, float]] = set()
        self._banner_key: tuple[str, float] | None = None  # the audit the banner shows
        if self._broken and control_problem(self.epsilon) is None:
            self._queue_audits(audit_epsilon(float(self.epsilon.value)))
        self._watch(self.controls_changed, self.variant, self.epsilon, self.split.share,
                    self.threshold, self.show_truth)
        self._watch(self._on_c, self.c)
        self._watch(self._on_c, self.monotonic)
        self._watch(self._on_threshold_moved, self.threshold)
        self._watch(self._on_c, self.auto_threshold)
        self.redraw()

    def _threshold_control(self, public: np.ndarray, threshold: float | None,
                           c: int) -> SliderText:
        """The threshold's slider and box, ranged over the public values (the data in
        teaching, the stand-in otherwise); ``threshold`` ``None``: the rule of Lyu, Su & Li
        2017, §6 on them."""
        hi = float(np.max(public)) if public.size else 1.0
        lo = min(0.0, float(np.min(public)) if public.size else 0.0)
        t_max = hi * 1.05 if hi > 0 else 1.0
        # A round step on a grid through 0: a typed 5000 stays 5000 (a step of hi/2000 snapped
        # it to 5010), and the readout shows plain digits (not 2.451e+4). The range is only
        # where dragging goes: a typed value outside it widens it, never is clamped to it.
        t_step = _nice_step(t_max - lo)
        t_min = math.floor(lo / t_step) * t_step
        self._typed_threshold = threshold is not None
        start = threshold if threshold is not None else default_threshold(public, c, t_step)
        return SliderText(
            FloatSlider(value=min(max(start, t_min), t_max), min=t_min, max=t_max, step=t_step,
                        description="threshold", continuous_update=True,
                        style={"description_width": "initial"},
                        readout_format=_step_format(t_step)),
            start, accepted=(-math.inf, math.inf), widen=True, css="dpw-threshold",
        )

    def _build_figure(self) -> None:
        """The figure, the top-c panel and the plot widget."""
        # One BokehModel for the whole layout: the main plot above, split and top-c side by side.
        svt_handle = display.svt_figure()
        split_handle = display.split_figure()
        topc_handle = display.topc_figure()
        layout = column(svt_handle.layout, row(split_handle.layout, topc_handle.layout))
        self.figure = figures.FigureHandle(
            layout, {**svt_handle.sources, **split_handle.sources, **topc_handle.sources}
        )
        self._topc_plot = topc_handle.layout
        self._topc_title = self._topc_plot.title.text
        ensure_bokehjs()
        self.plot = bokeh_widget(layout)

    # -- parameters ------------------------------------------------------------------------
    @property
    def title(self) -> str:
        return f"SVT {self.variant.value}"

    @property
    def params(self) -> dict:
        """The mechanism parameters the controls describe (all public). In analyst mode the
        data facts (``monotonic``) are not sent: the session applies the declared ones."""
        spec = variant_info(self.variant.value)
        p = {
            "variant": self.variant.value,
            "epsilon": float(self.epsilon.value),
            "c": int(self.c.value),
            "threshold": float(self.threshold.value),
            "ratio": self.split.ratio if spec.accepts_ratio and spec.name == "standard" else None,
        }
        if self.session.teaching:
            p["monotonic"] = bool(self.monotonic.value)
        return p

    def release_refusal(self) -> str | None:
        if self.session.teaching or self._typed_threshold:
            return None
        return ("threshold: type the threshold you mean. The value in the box is the "
                "suggestion computed on the public stand-in, not on your data; a release never "
                "uses it unless you type it.")

    # -- events ----------------------------------------------------------------------------
    def controls_changed(self, change=None) -> None:
        if self._batching or is_echo(change):
            return
        self._release = None
        self._debouncer.trigger()

    def _on_c(self, change=None) -> None:
        if is_echo(change):
            return
        # c moves the split presets and (auto) the threshold: one recompute for all three.
        self._batching = True
        try:
            c = int(self.c.value) if control_problem(self.c) is None else 1
            self.split.set_c(c, bool(self.monotonic.value))
            if self.auto_threshold.value and self.session.teaching:
                self._setting_threshold = True
                try:
                    self.threshold.value = default_threshold(
                        self.session.public_view(self.dataset), c, self.threshold.step
                    )
                finally:
                    self._setting_threshold = False
        finally:
            self._batching = False
        self.controls_changed()

    def _on_threshold_moved(self, change) -> None:
        if not getattr(self, "_setting_threshold", False) and not is_echo(change):
            self.auto_threshold.value = False
            self._typed_threshold = True

    # -- the branch ------------------------------------------------------------------------
    def redraw(self) -> None:
        spec = variant_info(self.variant.value)
        self.split.preset.disabled = self.split.share.disabled = not (
            spec.accepts_ratio and spec.name == "standard"
        )
        # A variant with its own split: hidden, not shown with a split the run does not use.
        self.split.layout.visibility = "hidden" if self.split.share.disabled else "visible"
        self._threshold_text()
        super().redraw()

    def _threshold_text(self) -> None:
        if self.session.teaching:
            self.threshold_note.value = ""
            return
        suggestion = default_threshold(self.session.stand_in(self.dataset),
                                       max(1, int(self.c.value)) if control_problem(self.c)
                                       is None else 1, self.threshold.step)
        typed = ("You typed the threshold: a release uses exactly it." if self._typed_threshold
                 else "<b>Type the threshold</b>: Release is refused until you do.")
        self.threshold_note.value = (
            f"<span class='dpw-note'>{typed} Suggestion on the public stand-in (the rule of "
            f"Lyu, Su & Li 2017, §6; stand-in, not your data): {fmt(suggestion)}.</span>")

    # -- the audits of the broken variants (background) ------------------------------------
    def _queue_audits(self, eps_audit: float) -> list[Future]:
        return [self.audits.future(v, eps_audit) for v in self._broken]

    def audits_ready(self, timeout: float | None = None) -> bool:
        """Wait until the audits of every broken variant at the current ε grid point are in
        (at most ``timeout`` seconds); True if they are. The widget never waits for them."""
        if not self._broken or control_problem(self.epsilon) is not None:
            return True
        futures = self._queue_audits(audit_epsilon(float(self.epsilon.value)))
        try:
            for future in futures:
                future.exception(timeout=timeout)
        except TimeoutError:
            return False
        return True

    def _audit_step(self, key: tuple[str, float], done: int, total: int | None) -> None:
        """Progress callback of an audit (worker thread): move the bar if the banner waits
        for this audit."""
        if key != self._banner_key or not total:
            return
        bar = self.audit_progress
        with bar.hold_sync():
            bar.max = float(total)
            bar.value = float(min(done, total))

    def _audit_arrived(self, key: tuple[str, float]) -> None:
        """Done-callback of an audit the banner was waiting for (runs in the worker thread)."""
        self._audit_waits.discard(key)
        if control_problem(self.epsilon) is None and key == (
                self.variant.value, audit_epsilon(float(self.epsilon.value))):
            self.update_banner()

    # -- drawing ---------------------------------------------------------------------------
    def update_banner(self) -> None:
        spec = variant_info(self.variant.value)
        eps, c = self.epsilon.value, self.c.value
        if spec.private or control_problem(self.epsilon) or control_problem(self.c):
            self._banner_key = None
            self.audit_progress.layout.display = "none"
        if spec.private:
            claim = (f": ε = {fmt(float(eps))}-DP {self.per_unit}"
                     if control_problem(self.epsilon) is None else "")
            self.banner.value = (
                "<div class='dpw-banner-ok'>"
                + fold(f"<b>{html.escape(spec.title)}</b>{claim}",
                       f"{html.escape(spec.guarantee)} {self.per_unit} — "
                       f"{html.escape(spec.source)}")
                + "</div>")
            return
        if control_problem(self.epsilon) or control_problem(self.c):
            self.banner.value = (
                "<div class='dpw-banner-broken'>"
                + fold(f"<b>NOT PRIVATE — {html.escape(spec.title)}</b>",
                       f"({html.escape(spec.source)}). {html.escape(spec.note)}")
                + "</div>")
            return
        eps, c = float(eps), int(c)
        eps_audit = audit_epsilon(eps)
        # Never run the audit here: take it from the background worker if it is in, else
        # ask for it first in line and redraw the banner when it arrives.
        future = self.audits.future(spec.name, eps_audit, urgent=True)
        self._queue_audits(eps_audit)  # the other broken variants at this ε, behind it
        key = (spec.name, eps_audit)
        self._banner_key = key
        if not future.done() and key not in self._audit_waits:
            self._audit_waits.add(key)
            future.add_done_callback(lambda _f, key=key: self._audit_arrived(key))
        if key not in self._audit_watched:
            self._audit_watched.add(key)
            future.on_progress(lambda done, total, key=key: self._audit_step(key, done, total))
        # Decided and written under the lock the done-callback's redraw also takes, so a
        # "running" text can never overwrite the result that arrived meanwhile.
        with self._banner_lock:
            self._write_broken_banner(spec, eps, c, eps_audit, future)

    def _write_broken_banner(self, spec, eps: float, c: int, eps_audit: float,
                             future: Future) -> None:
        loss = spec.privacy_loss(eps, c, bool(self.monotonic.value))
        pending = not future.done()
        # The bar shows while the audit runs; its last step (value == max) stays set.
        self.audit_progress.layout.display = None if pending else "none"
        audited = None if pending or future.exception() is not None else future.result()
        if pending:
            audit_txt = (f"privacy-loss audit at ε = {eps_audit:g} on the source's "
                         f"counterexample running…")
            audit_short = "audit running…"
        elif audited is None:
            audit_txt = audit_short = "audit unavailable"
        elif audited > eps_audit:
            audit_txt = (
                f"audited privacy loss ≥ {fmt(audited)} at ε = {eps_audit:g} on the source's "
                f"counterexample (public inputs, not your data)"
            )
            audit_short = f"audited ≥ {fmt(audited)}"
        else:  # the audit found nothing at this size; the variant is still not private
            audit_txt = (
                f"the audit on the source's counterexample found no violation at ε = "
                f"{eps_audit:g} with its feasible size (an audit can refute a claim, never "
                f"establish it; the proof above still applies)"
            )
            audit_short = "no violation found by the audit at its size"
        self.banner.value = (
            "<div class='dpw-banner-broken' style='background:#b03a2e;color:white;"
            "padding:6px;border-radius:3px'>"
            + fold(f"<b>NOT PRIVATE — {html.escape(spec.title)}</b>: claimed ε = {fmt(eps)}, "
                   f"actual bound {fmt(loss)}, {audit_short}",
                   f"({html.escape(spec.source)}). Claimed ε = {fmt(eps)} {self.per_unit}; "
                   f"actual bound: {fmt(loss)}; {audit_txt}. {html.escape(spec.note)}")
            + "</div>"
        )

    def _topc_rates(self, scores: np.ndarray, selected_svt: np.ndarray, *,
                    on_data: bool) -> dict:
        """FNR/SER of this run's SVT selection and of EM and SVT-ReTr at the same ε and c,
        averaged over ``topc_runs`` simulations (not releases) run on ``scores`` and scored
        against the same ``scores``: the data itself in teaching mode (it is public), the
        stand-in in an analyst preview."""
        p = self.params
        c = p["c"]
        monotonic = bool(self.monotonic.value)
        rates = {"SVT (this run)": topc_rates([selected_svt], scores, c)}
        for label, method, extra in (
            ("EM", "em", {}),
            # A capped number of passes keeps the panel interactive with a high threshold; a
            # short selection then simply scores worse (its shortfall counts as misses).
            ("SVT-ReTr", "svt_retr", {"threshold": p["threshold"], "max_passes": 25}),
        ):
            chosen = []
            for _ in range(self.topc_runs):
                if on_data:
                    chosen.append(simulate_top_c(scores, rng=self._rng, method=method, c=c,
                                                 epsilon=p["epsilon"], monotonic=monotonic,
                                                 **extra))
                else:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", RuntimeWarning)
                        chosen.append(self._preview_run(
                            "top_c", method=method, c=c, epsilon=p["epsilon"], **extra).result)
            rates[label] = topc_rates(chosen, scores, c)
        return rates

    def _draw_split(self, result=None) -> None:
        share = self.split.share.value
        if result is not None and not (variant_info(result.variant).accepts_ratio
                                       and result.variant == "standard"):
            share = result.epsilon1 / (result.epsilon1 + result.epsilon2)
        figures.update(
            self.figure,
            display.split_plot_data(int(self.c.value), bool(self.monotonic.value), share),
        )

    def _summary(self, result, scores: np.ndarray | None) -> str:
        c = int(self.c.value)
        parts = [
            f"examined {result.n_examined:,} of {self.n_queries:,} queries",
            f"{result.positives.size} ⊤",
            f"ε1 = {result.epsilon1:.3g}, ε2 = {result.epsilon2:.3g}",
        ]
        if scores is not None:
            fnr, ser = topc_rates([result.positives], scores, c)
            parts += [f"FNR = {fnr:.3f}", f"SER = {ser:.3f}"]
        return " · ".join(parts)

    def _draw_run(self, release: Release, answers: np.ndarray, true_top, *,
                  on_data: bool) -> None:
        result = release.result
        display.SVTRunDisplay.from_release(
            release, n_queries=self.n_queries, threshold=self.threshold.value,
            answers=answers, true_top=true_top).draw(self.figure)
        self._draw_split(result)
        figures.update(self.figure, display.topc_plot_data(
            self._topc_rates(answers, result.positives, on_data=on_data)))
        self._topc_plot.title.text = (
            self._topc_title if on_data else f"{self._topc_title} (PREVIEW)")
        figures.show_panels({"topc": self._topc_plot}, topc=True)

    def draw_live(self) -> None:
        release = self._live_release()
        result = release.result
        scores = self.session.public_view(self.dataset)
        c = int(self.c.value)
        true_top = np.argpartition(-scores, c - 1)[:c] if self.show_truth.value else None
        self._draw_run(release, scores, true_top, on_data=True)
        self.stats.value = f"<div>{self._summary(result, scores)}</div>"
        self.live_status([release])

    def draw_preview(self) -> None:
        preview = self._preview_run()
        result = preview.result
        stand_in = self.session.stand_in(self.dataset)
        self._draw_run(preview, stand_in, None, on_data=False)
        self.stats.value = (
            f"<div>PREVIEW on the public stand-in: {self._summary(result, stand_in)}</div>"
        )
        self.preview_status("the top-c panel is scored against the stand-in too")

    # -- accuracy before spending (analyst) -------------------------------------------------
    @property
    def accuracy_model(self) -> Accuracy:
        """The accuracy panel's strategy (an :class:`~dpwidgets.ui.accuracy.Accuracy`)."""
        what = ("the false negative rate and the score error rate of the ⊤ queries (the "
                "top-c panel's SVT bars, scored against the stand-in)")
        return Accuracy(what, self._preview_rates, self._noiseless_rates,
                        band=self._whiskers)

    def _preview_rates(self, release: Release) -> np.ndarray:
        """``(FNR, SER)`` of a preview's ⊤ queries against the stand-in's own top c.

        Why these two numbers: a reader of this widget asks "which of my top c will a release
        find, and how much of their score will it miss?" -- the top-c panel's SVT bars. The
        ⊤ positions themselves are not aligned across runs (a run stops after its c-th ⊤),
        and a per-query 0/1 "selected" vector has a 5-95% band that is either 0 or the whole
        of [0, 1], its median half-width 0 (most queries are never selected): it says nothing.
        The two rates are in [0, 1], fixed in number, and their band is what the whiskers on
        the SVT bars draw.
        """
        stand_in = self.session.stand_in(self.dataset)
        c = int(release.params["c"])
        return np.array(topc_rates([release.result.positives[:c]], stand_in, c))

    def _noiseless_rates(self) -> np.ndarray:
        """The rates of SVT without noise on the stand-in: the first c queries (in the order
        examined) whose answer reaches the public threshold."""
        stand_in = self.session.stand_in(self.dataset)
        p = self.params
        chosen = np.flatnonzero(stand_in >= np.asarray(p["threshold"], dtype=float))[:p["c"]]
        return np.array(topc_rates([chosen], stand_in, p["c"]))

    def _whiskers(self, preview) -> None:
        """Whiskers on the top-c panel's SVT bars (removed with None)."""
        if preview is None:
            figures.update(self.figure, display.topc_band_data())
            self._topc_plot.title.text = self._topc_plot.title.text.replace(_WHISKERS, "")
            return
        figures.update(self.figure, display.topc_band_data(preview.now.low,
                                                               preview.now.high))
        if _WHISKERS not in self._topc_plot.title.text:
            self._topc_plot.title.text += _WHISKERS

    def draw_release(self, release: Release) -> None:
        out = release.output
        display.SVTRunDisplay.from_release(release, n_queries=self.n_queries).draw(self.figure)
        figures.update(self.figure, display.topc_plot_data({}))
        self._topc_plot.title.text = "Top-c selection: not shown after a release"
        # It compares methods on the scores: nothing to show after a release, so it goes.
        figures.show_panels({"topc": self._topc_plot}, topc=False)
        self.stats.value = (
            f"<div>Released (DP output only): examined {out['n_examined']:,} of "
            f"{self.n_queries:,} queries, {len(out['above'])} ⊤ at positions "
            f"{', '.join(str(int(i)) for i in out['above'][:20])}"
            f"{' …' if len(out['above']) > 20 else ''}</div>"
        )
