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

import threading
from concurrent.futures import Future

import numpy as np

from ...session import PrivacyPolicyError, Release, Session
from ...ui import figures
from ...ui.accuracy import Accuracy
from ...ui.base import ReleaseWidget, is_echo
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import control_problem
from . import display, text
from .attack import AttackDemo
from .audits import AuditJob, Audits, audit_epsilon, audited_loss, default_audits
from .controls import SVTControls, audit_progress_bar
from .controls import _step_format as _step_format  # re-exported: the readout format
from .preview import (
    broken_variants,
    check_runs,
    comparison_rates,
    default_threshold,
    drawn_share,
    noiseless_rates,
    offered_variants,
    quietly,
    release_rates,
    simulate_top_c,
    topc_rates,
    true_top,
    variant_info,
)

#: The most simulations the top-c panel averages per redraw (each reruns EM and SVT-ReTr).
MAX_TOPC_RUNS = 100

__all__ = ["MAX_TOPC_RUNS", "AttackDemo", "AuditJob", "SVTExplorer", "audit_epsilon",
           "audit_future", "audited_loss", "default_threshold"]

DEFAULT_DATASET = "zipf_items"


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


def _first_dataset(session: Session) -> str:
    """The session's first dataset, or in a teaching session without any the §6 Zipf setup."""
    if session.datasets:
        return session.datasets[0]
    if session.teaching:
        return _default_teaching_dataset(session)
    raise ValueError("add a dataset to the analyst session first (add_dataset)")


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
        self.dataset = dataset if dataset is not None else _first_dataset(session)
        self.n_queries = session.size(self.dataset)
        # Each run is a full EM and SVT-ReTr simulation on every slider move: a few suffice.
        self.topc_runs = check_runs(topc_runs, "topc_runs", MAX_TOPC_RUNS)
        allowed = offered_variants(session.teaching)
        if variant not in allowed:
            raise PrivacyPolicyError(
                f"variant {variant!r} is not available in {session.mode} mode; choose from {allowed}"
            )
        if not session.teaching:
            # A fact about the data: the data owner's to declare, not the analyst's to claim.
            monotonic = bool(self.facts().get("monotonic", False))
        ctl = SVTControls.build(teaching=session.teaching, variants=allowed, variant=variant,
                                epsilon=epsilon, c=c, n_queries=self.n_queries,
                                monotonic=monotonic, public=session.public_view(self.dataset),
                                threshold=threshold)
        # Attached one by one, in the order the widget always had them.
        self.variant, self.epsilon, self.c, self.monotonic, self.split = (
            ctl.variant, ctl.epsilon, ctl.c, ctl.monotonic, ctl.split)
        self._typed_threshold = ctl.typed_threshold
        self.threshold, self.threshold_note, self.auto_threshold, self.show_truth = (
            ctl.threshold, ctl.threshold_note, ctl.auto_threshold, ctl.show_truth)

        self.figure, self._topc_plot = display.explorer_figure()
        self._topc_title = self._topc_plot.title.text
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        controls = ctl.layout(self.release_button, self.status, self.epsilon_note)
        self.audit_progress = audit_progress_bar()
        self._assemble([self.banner, self.audit_progress, controls, self.message, self.plot,
                        self.stats], "dpw-svt-explorer")

        self._batching = False
        self._start_audits(allowed, variant)
        self._watch(self.controls_changed, self.variant, self.epsilon, self.split.share,
                    self.threshold, self.show_truth)
        self._watch(self._on_c, self.c, self.monotonic, self.auto_threshold)
        self._watch(self._on_threshold_moved, self.threshold)
        self.redraw()

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
        return text.THRESHOLD_NOT_TYPED

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
        self.threshold_note.value = text.threshold_note(self._typed_threshold, suggestion)

    # -- the audits of the broken variants (background) ------------------------------------
    def _start_audits(self, allowed: list[str], variant: str) -> None:
        """The broken variants (teaching only) and their audits at the starting ε grid point,
        queued now so that a visit of one finds its number ready (the current one first)."""
        self._broken = broken_variants(allowed, first=variant)
        self._audit_waits: set[tuple[str, float]] = set()
        self._audit_watched: set[tuple[str, float]] = set()
        self._banner_key: tuple[str, float] | None = None  # the audit the banner shows
        if self._broken and control_problem(self.epsilon) is None:
            self._queue_audits(audit_epsilon(float(self.epsilon.value)))

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
        unchecked = control_problem(self.epsilon) or control_problem(self.c)
        if spec.private or unchecked:
            self._banner_key = None
            self.audit_progress.layout.display = "none"
        if spec.private:
            eps = float(self.epsilon.value) if control_problem(self.epsilon) is None else None
            self.banner.value = text.private_banner(spec, eps, self.per_unit)
            return
        if unchecked:
            self.banner.value = text.unchecked_banner(spec)
            return
        eps, c = float(self.epsilon.value), int(self.c.value)
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
        self.banner.value = text.broken_banner(
            spec, eps, loss, text.audit_text(eps_audit, audited, pending=pending),
            self.per_unit)

    def _topc_rates(self, scores: np.ndarray, selected_svt: np.ndarray, *,
                    on_data: bool) -> dict:
        """The top-c panel's rates (:func:`~.preview.comparison_rates`), ``topc_runs``
        simulations each, run on ``scores`` and scored against them: the data itself in
        teaching mode (it is public), the stand-in in an analyst preview."""
        p = self.params
        monotonic = bool(self.monotonic.value)

        def select(**params):
            if on_data:
                return simulate_top_c(scores, rng=self._rng, monotonic=monotonic, **params)
            return quietly(self._preview_run, "top_c", **params).result

        return comparison_rates(scores, selected_svt, c=p["c"], epsilon=p["epsilon"],
                                threshold=p["threshold"], runs=self.topc_runs, select=select)

    def _summary(self, result, scores: np.ndarray | None) -> str:
        rates = (topc_rates([result.positives], scores, int(self.c.value))
                 if scores is not None else None)
        return text.run_summary(result, self.n_queries, rates)

    def _draw_run(self, release: Release, answers: np.ndarray, top, *,
                  on_data: bool) -> None:
        result = release.result
        display.SVTRunDisplay.from_release(
            release, n_queries=self.n_queries, threshold=self.threshold.value,
            answers=answers, true_top=top).draw(self.figure)
        figures.update(self.figure, display.split_plot_data(
            int(self.c.value), bool(self.monotonic.value),
            drawn_share(result, self.split.share.value)))
        figures.update(self.figure, display.topc_plot_data(
            self._topc_rates(answers, result.positives, on_data=on_data)))
        self._topc_plot.title.text = (
            self._topc_title if on_data else f"{self._topc_title} (PREVIEW)")
        figures.show_panels({"topc": self._topc_plot}, topc=True)

    def draw_live(self) -> None:
        release = self._live_release()
        result = release.result
        scores = self.session.public_view(self.dataset)
        top = true_top(scores, int(self.c.value)) if self.show_truth.value else None
        self._draw_run(release, scores, top, on_data=True)
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
        return Accuracy(text.ACCURACY_WHAT, self._preview_rates, self._noiseless_rates,
                        band=self._whiskers)

    def _preview_rates(self, release: Release) -> np.ndarray:
        """``(FNR, SER)`` of a preview's ⊤ queries against the stand-in's own top c
        (:func:`~.preview.release_rates`: why these two numbers)."""
        return release_rates(release.result.positives, self.session.stand_in(self.dataset),
                             int(release.params["c"]))

    def _noiseless_rates(self) -> np.ndarray:
        """The rates of SVT without noise on the stand-in (:func:`~.preview.noiseless_rates`)."""
        p = self.params
        return noiseless_rates(self.session.stand_in(self.dataset), p["threshold"], p["c"])

    def _whiskers(self, preview) -> None:
        """Whiskers on the top-c panel's SVT bars (removed with None)."""
        title = self._topc_plot.title
        if preview is None:
            figures.update(self.figure, display.topc_band_data())
            title.text = title.text.replace(text.WHISKERS, "")
            return
        figures.update(self.figure, display.topc_band_data(preview.now.low, preview.now.high))
        if text.WHISKERS not in title.text:
            title.text += text.WHISKERS

    def draw_release(self, release: Release) -> None:
        display.SVTRunDisplay.from_release(release, n_queries=self.n_queries).draw(self.figure)
        figures.update(self.figure, display.topc_plot_data({}))
        self._topc_plot.title.text = text.AFTER_RELEASE_TITLE
        # It compares methods on the scores: nothing to show after a release, so it goes.
        figures.show_panels({"topc": self._topc_plot}, topc=False)
        self.stats.value = text.released_stats(release.output, self.n_queries)
