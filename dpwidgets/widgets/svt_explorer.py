"""SVTExplorer: the Sparse Vector Technique, its variants, its budget split, and top-c selection.

Controls (public attributes): ``variant``, ``epsilon``, ``c``, ``split`` (ε1:ε2),
``threshold`` (+ ``auto_threshold``), ``monotonic``, ``show_truth`` (teaching),
``release_button``. Outputs: ``figure`` (a :class:`~.figures.FigureHandle` whose ``sources``
are the ColumnDataSources drawn), ``banner``, ``message``, ``stats``.

Teaching mode reruns the chosen variant on every control change through
``session.release`` (charged to the teaching ledger so the meter shows what live use costs),
draws the true answers, the noisy threshold and the true top-c, and offers the broken variants
under a "not private" banner with their audited privacy loss. Analyst mode draws a free
preview on the dataset's public stand-in; only the Release button spends budget, and then only
the DP output (which queries were ⊤, where the run stopped) is drawn.
"""

from __future__ import annotations

import functools
import html
import math
import warnings

import ipywidgets as w
import numpy as np
from bokeh.layouts import column, row

from ..engine.budget import BudgetExceededError
from ..engine.svt import VARIANTS, false_negative_rate, score_error_rate
from ..session import PrivacyPolicyError, Release, Session
from . import figures
from ._bokeh import OfflineBokehMixin, bokeh_widget, ensure_bokehjs
from .controls import Debouncer, EpsilonSlider, FloatSlider, SplitControl, epsilon_guardrail

__all__ = ["SVTExplorer", "audit_epsilon", "audited_loss", "default_threshold"]

DEFAULT_DATASET = "zipf_items"


def default_threshold(scores: np.ndarray, c: int) -> float:
    """001 §6's threshold: the mean of the c-th and (c+1)-th highest scores.

    Only ever applied to public values (the data in teaching mode, the stand-in otherwise).
    """
    scores = np.asarray(scores, dtype=float)
    c = min(max(1, c), scores.size - 1)
    top = np.sort(np.partition(scores, scores.size - c - 1)[scores.size - c - 1 :])[::-1]
    return float((top[c - 1] + top[c]) / 2.0)


@functools.lru_cache(maxsize=512)
def audited_loss(variant: str, epsilon: float) -> float | None:
    """Empirical lower bound on the privacy loss of a variant, cached per (variant, ε).

    The audit (:func:`dpwidgets.engine.audit.audit_svt`) runs on the variant's public
    counterexample from 001 / 000 (never on the user's data), sized for this ε (more queries
    and runs at small ε), with a fixed seed, so the banner is reproducible. Callers round ε
    to one significant digit (:func:`audit_epsilon`), so dragging the slider costs one audit
    (0.01-2 s) per new grid value, not per pixel. A value <= ε means no violation was found
    at that size, not that the variant is private. ``None`` if the variant has no
    counterexample of its own or the audit module is missing.
    """
    try:
        from ..engine.audit import audit_svt
    except ImportError:
        return None
    try:
        result = audit_svt(variant, epsilon=epsilon, rng=np.random.default_rng(20170801))
    except ValueError:  # no counterexample for this variant
        return None
    return float(result.epsilon_lower)


def audit_epsilon(epsilon: float) -> float:
    """ε rounded to one significant digit: the grid the banner's audit is computed on."""
    return float(f"{epsilon:.0e}")


def _default_teaching_dataset(session: Session) -> str:
    """Add the 001 §6 Zipf setup (10,000 items, 1,000,000 records) to a teaching session."""
    from .. import datasets

    rng = np.random.default_rng(0)
    # The scores come in rank order; SVT examines queries in a (public) shuffled order (001 §6).
    scores = rng.permutation(np.asarray(datasets.zipf_item_scores(rng=rng), dtype=float))
    session.add_dataset(
        DEFAULT_DATASET, scores, total_epsilon=10.0,
        description="Zipf item frequencies (001 §6 setup)",
    )
    return DEFAULT_DATASET


def _fmt(x: float) -> str:
    return "∞" if math.isinf(x) else f"{x:.3g}"


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


def _is_echo(change) -> bool:
    """A notification that changed nothing but a slider's view sending back its snapped value.

    Either the control's validator restored the old value (the observers still get old == new),
    or the snapped value is the old one up to rounding (10^(-2 + 200·0.01) = 0.9999999999999994
    for ε = 1), which the validator lets through.
    """
    if change is None:
        return False
    old, new = change.get("old"), change.get("new")
    if isinstance(old, float) and isinstance(new, float):
        return math.isclose(old, new, rel_tol=1e-9, abs_tol=0.0)
    return old == new


class SVTExplorer(OfflineBokehMixin, w.VBox):
    """Interactive Sparse Vector Technique on a session's dataset of query answers.

    Parameters
    ----------
    session : Session
        The session holding the dataset and its budget.
    dataset : str, optional
        A dataset of query answers (e.g. item counts). Default: the session's first dataset;
        in a teaching session without datasets, the 001 §6 Zipf setup is added.
    epsilon, c, variant :
        Initial control values.
    threshold : float, optional
        Initial threshold (default: 001 §6's rule applied to the public view).
    monotonic : bool
        Whether the queries are monotonic (counts under add/remove-one).
    topc_runs : int
        Runs averaged for the EM and SVT-ReTr bars of the top-c panel.
    debounce : float
        Seconds of quiet before recomputing in a kernel (0: recompute on every change).
    """

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
    ):
        self.session = session
        if dataset is None:
            if session.datasets:
                dataset = session.datasets[0]
            elif session.teaching:
                dataset = _default_teaching_dataset(session)
            else:
                raise ValueError("add a dataset to the analyst session first (add_dataset)")
        self.dataset = dataset
        self.n_queries = session.size(dataset)
        self.topc_runs = int(topc_runs)
        self._rng = np.random.default_rng(session.rng.integers(2**63))
        self._run = 0
        self._release: Release | None = None
        public = session.public_view(dataset)

        allowed = [v for v in VARIANTS if session.teaching or VARIANTS[v].private]
        if variant not in allowed:
            raise PrivacyPolicyError(
                f"variant {variant!r} is not available in {session.mode} mode; choose from {allowed}"
            )
        self.variant = w.Dropdown(
            options=[(VARIANTS[v].title, v) for v in allowed], value=variant,
            description="variant", style={"description_width": "initial"},
        )
        self.variant.add_class("dpw-variant")
        self.epsilon = EpsilonSlider(epsilon)
        self.epsilon_note = w.HTML()
        self.epsilon_note.add_class("dpw-guardrail")
        c_max = max(1, min(300, self.n_queries - 1))
        self.c = w.IntSlider(
            value=min(c, c_max), min=1, max=c_max, description="c (cutoff)",
            continuous_update=True, style={"description_width": "initial"},
        )
        self.c.add_class("dpw-c")
        self.monotonic = w.Checkbox(value=monotonic, description="monotonic queries (counts)")
        self.split = SplitControl(self.c.value, monotonic)
        hi = float(np.max(public)) if public.size else 1.0
        t_max = hi * 1.05 if hi > 0 else 1.0
        # A round step on a grid through 0: a typed 5000 stays 5000 (a step of hi/2000 snapped
        # it to 5010), and the readout shows plain digits (not 2.451e+4).
        t_step = _nice_step(t_max - min(0.0, float(np.min(public)) if public.size else 0.0))
        t_min = math.floor(min(0.0, float(np.min(public)) if public.size else 0.0) / t_step) * t_step
        self.threshold = FloatSlider(
            value=threshold if threshold is not None else default_threshold(public, self.c.value),
            min=t_min, max=t_max, step=t_step, description="threshold",
            continuous_update=True, style={"description_width": "initial"},
            readout_format=_step_format(t_step),
        )
        self.threshold.add_class("dpw-threshold")
        self.auto_threshold = w.Checkbox(
            value=threshold is None, description="threshold from c (001 §6)",
        )
        self.show_truth = w.Checkbox(
            value=True, description="show ground truth", disabled=not session.teaching,
            layout=w.Layout(display=None if session.teaching else "none"),
        )
        self.release_button = w.Button(
            description="Release (spends ε)" if not session.teaching else "Rerun (fresh noise)",
            button_style="warning" if not session.teaching else "",
            icon="lock-open" if not session.teaching else "refresh",
            layout=w.Layout(width="auto"),  # the default 148 px cut the label ("Release (spen…")
        )
        self.release_button.add_class("dpw-release")
        self.banner = w.HTML()
        self.banner.add_class("dpw-banner")
        self.message = w.HTML()
        self.message.add_class("dpw-message")
        self.stats = w.HTML()
        self.stats.add_class("dpw-stats")
        self.status = w.HTML()
        self.status.add_class("dpw-status")

        # One BokehModel for the whole layout: the main plot above, split and top-c side by side.
        svt_handle = figures.svt_figure()
        split_handle = figures.split_figure()
        topc_handle = figures.topc_figure()
        layout = column(svt_handle.layout, row(split_handle.layout, topc_handle.layout))
        self.figure = figures.FigureHandle(
            layout, {**svt_handle.sources, **split_handle.sources, **topc_handle.sources}
        )
        self._topc_plot = topc_handle.layout
        self._topc_title = self._topc_plot.title.text
        ensure_bokehjs()
        self.plot = bokeh_widget(layout)

        controls = w.VBox(
            [
                self.variant,
                w.HBox([self.epsilon, self.epsilon_note]),
                self.c,
                self.split,
                w.HBox([self.threshold, self.auto_threshold]),
                w.HBox([self.monotonic, self.show_truth]),
                w.HBox([self.release_button, self.status]),
            ]
        )
        controls.add_class("dpw-controls")
        super().__init__([self.banner, controls, self.message, self.plot, self.stats])
        self.add_class("dpw-svt-explorer")
        self.add_class(f"dpw-mode-{session.mode}")

        self._batching = False
        self._debouncer = Debouncer(self._recompute, debounce)
        for control in (self.variant, self.epsilon, self.split.share, self.threshold,
                        self.show_truth):
            control.observe(self._on_change, names="value")
        self.c.observe(self._on_c, names="value")
        self.monotonic.observe(self._on_c, names="value")
        self.threshold.observe(self._on_threshold_moved, names="value")
        self.auto_threshold.observe(self._on_c, names="value")
        self.release_button.on_click(self._on_release_clicked)
        self._recompute()

    # -- parameters ------------------------------------------------------------------------
    @property
    def params(self) -> dict:
        """The mechanism parameters the controls describe (all public)."""
        spec = VARIANTS[self.variant.value]
        return {
            "variant": self.variant.value,
            "epsilon": float(self.epsilon.value),
            "c": int(self.c.value),
            "threshold": float(self.threshold.value),
            "monotonic": bool(self.monotonic.value),
            "ratio": self.split.ratio if spec.accepts_ratio and spec.name == "standard" else None,
        }

    # -- events ----------------------------------------------------------------------------
    def _on_change(self, change=None) -> None:
        if self._batching or _is_echo(change):
            return
        self._release = None
        self._debouncer.trigger()

    def _on_c(self, change=None) -> None:
        if _is_echo(change):
            return
        # c moves the split presets and (auto) the threshold: one recompute for all three.
        self._batching = True
        try:
            self.split.set_c(self.c.value, self.monotonic.value)
            if self.auto_threshold.value:
                self._setting_threshold = True
                try:
                    self.threshold.value = default_threshold(
                        self.session.public_view(self.dataset), self.c.value
                    )
                finally:
                    self._setting_threshold = False
        finally:
            self._batching = False
        self._on_change()

    def _on_threshold_moved(self, change) -> None:
        if not getattr(self, "_setting_threshold", False):
            self.auto_threshold.value = False

    def _on_release_clicked(self, _button=None) -> None:
        if self.session.teaching:
            self._run += 1
            self._recompute()
        else:
            self.release()

    # -- actions ---------------------------------------------------------------------------
    def release(self) -> Release | None:
        """Analyst mode: release the current parameters (charged once; replays are free).

        Errors (over budget, not private, invalid) are shown in ``message``; nothing is
        charged then and ``None`` is returned.
        """
        try:
            release = self.session.release(self.dataset, "svt", **self.params)
        except (BudgetExceededError, PrivacyPolicyError, ValueError) as exc:
            self._show_error(exc)
            return None
        self._release = release
        self.message.value = (
            f"<div class='dpw-ok'>Released <b>{html.escape(release.label)}</b>: "
            + (f"charged ε = {release.epsilon:.3g}." if release.charged
               else "replayed a cached release, nothing spent.")
            + "</div>"
        )
        self._draw_release(release)
        return release

    def _show_error(self, exc: Exception) -> None:
        kind = "Over budget" if isinstance(exc, BudgetExceededError) else "Refused"
        self.message.value = (
            f"<div class='dpw-error'><b>{kind}.</b> {html.escape(str(exc))}</div>"
        )

    def _recompute(self) -> None:
        """Redraw from the controls: a live release (teaching) or a free preview (analyst)."""
        self._update_banner()
        remaining = None if self.session.teaching else self.session.remaining(self.dataset)
        note = epsilon_guardrail(self.epsilon.value, remaining)
        self.epsilon_note.value = f"<span class='dpw-note'>{html.escape(note)}</span>"
        spec = VARIANTS[self.variant.value]
        self.split.preset.disabled = self.split.share.disabled = not (
            spec.accepts_ratio and spec.name == "standard"
        )
        try:
            if self.session.teaching:
                release = self.session.release(
                    self.dataset, "svt", run=self._run, **self.params
                )
                self._draw_teaching(release)
                self.message.value = (
                    "<div class='dpw-warn'>Past the cap: on confidential data this run would "
                    "have been refused.</div>" if release.overdraft else ""
                )
            else:
                self._draw_preview()
        except (BudgetExceededError, PrivacyPolicyError, ValueError) as exc:
            self._show_error(exc)

    # -- drawing ---------------------------------------------------------------------------
    def _update_banner(self) -> None:
        spec = VARIANTS[self.variant.value]
        eps, c = float(self.epsilon.value), int(self.c.value)
        if spec.private:
            self.banner.value = (
                f"<div class='dpw-banner-ok'><b>{html.escape(spec.title)}</b>: "
                f"{html.escape(spec.guarantee)} — {html.escape(spec.source)}</div>"
            )
            return
        loss = spec.privacy_loss(eps, c, bool(self.monotonic.value))
        eps_audit = audit_epsilon(eps)
        audited = audited_loss(spec.name, eps_audit)
        if audited is None:
            audit_txt = "audit unavailable"
        elif audited > eps_audit:
            audit_txt = (
                f"audited privacy loss ≥ {_fmt(audited)} at ε = {eps_audit:g} on the source's "
                f"counterexample (public inputs, not your data)"
            )
        else:  # the audit found nothing at this size; the variant is still not private
            audit_txt = (
                f"the audit on the source's counterexample found no violation at ε = "
                f"{eps_audit:g} with its feasible size (an audit can refute a claim, never "
                f"establish it; the proof above still applies)"
            )
        self.banner.value = (
            "<div class='dpw-banner-broken' style='background:#b03a2e;color:white;"
            "padding:6px;border-radius:3px'>"
            f"<b>NOT PRIVATE — {html.escape(spec.title)}</b> ({html.escape(spec.source)}). "
            f"Claimed ε = {eps:.3g}; actual bound: {_fmt(loss)}; {audit_txt}. "
            f"{html.escape(spec.note)}</div>"
        )

    def _topc_rates(self, scores: np.ndarray, selected_svt: np.ndarray) -> dict:
        """FNR/SER of this run's SVT selection and of EM and SVT-ReTr at the same ε and c,
        on public values (averaged over ``topc_runs`` runs; simulations, not releases)."""
        p = self.params
        c = p["c"]
        sel = np.asarray(selected_svt, dtype=int)[:c]
        rates = {"SVT (this run)": (false_negative_rate(sel, scores, c),
                                    score_error_rate(sel, scores, c))}
        for label, method, extra in (
            ("EM", "em", {}),
            # A capped number of passes keeps the panel interactive with a high threshold; a
            # short selection then simply scores worse (its shortfall counts as misses).
            ("SVT-ReTr", "svt_retr", {"threshold": p["threshold"], "max_passes": 25}),
        ):
            fnr, ser = [], []
            for _ in range(self.topc_runs):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", RuntimeWarning)
                    chosen = self.session.preview(
                        self.dataset, "top_c", rng=self._rng, method=method, c=c,
                        epsilon=p["epsilon"], monotonic=p["monotonic"], **extra,
                    )
                fnr.append(false_negative_rate(chosen, scores, c))
                ser.append(score_error_rate(chosen, scores, c))
            rates[label] = (float(np.mean(fnr)), float(np.mean(ser)))
        return rates

    def _draw_split(self, result=None) -> None:
        share = self.split.share.value
        if result is not None and not (VARIANTS[result.variant].accepts_ratio
                                       and result.variant == "standard"):
            share = result.epsilon1 / (result.epsilon1 + result.epsilon2)
        figures.update(
            self.figure,
            figures.split_plot_data(int(self.c.value), bool(self.monotonic.value), share),
        )

    def _summary(self, result, scores: np.ndarray | None) -> str:
        c = int(self.c.value)
        parts = [
            f"examined {result.n_examined:,} of {self.n_queries:,} queries",
            f"{result.positives.size} ⊤",
            f"ε1 = {result.epsilon1:.3g}, ε2 = {result.epsilon2:.3g}",
        ]
        if scores is not None:
            sel = result.positives[:c]
            parts.append(f"FNR = {false_negative_rate(sel, scores, c):.3f}")
            parts.append(f"SER = {score_error_rate(sel, scores, c):.3f}")
        return " · ".join(parts)

    def _draw_teaching(self, release: Release) -> None:
        result = release.result
        scores = self.session.public_view(self.dataset)
        c = int(self.c.value)
        true_top = (
            np.argpartition(-scores, c - 1)[:c] if self.show_truth.value else None
        )
        data = figures.svt_plot_data(
            n_queries=self.n_queries,
            outcomes=result.outcomes,
            threshold=self.threshold.value,
            answers=scores,
            noisy_threshold=result.noisy_threshold,
            true_top=true_top,
        )
        figures.update(self.figure, data)
        self._draw_split(result)
        figures.update(self.figure, figures.topc_plot_data(
            self._topc_rates(scores, result.positives)))
        self._topc_plot.title.text = self._topc_title
        self.stats.value = f"<div>{self._summary(result, scores)}</div>"
        self.status.value = (
            f"<span>live run #{self._run}, ε = {release.epsilon:.3g} "
            f"{'charged' if release.charged else '(cached, free)'}</span>"
        )

    def _draw_preview(self) -> None:
        result = self.session.preview(self.dataset, "svt", rng=self._rng, **self.params)
        stand_in = self.session.stand_in(self.dataset)
        data = figures.svt_plot_data(
            n_queries=self.n_queries,
            outcomes=result.outcomes,
            threshold=self.threshold.value,
            answers=stand_in,
            noisy_threshold=result.noisy_threshold,
        )
        figures.update(self.figure, data)
        self._draw_split(result)
        figures.update(self.figure, figures.topc_plot_data(
            self._topc_rates(stand_in, result.positives)))
        self._topc_plot.title.text = self._topc_title
        self.stats.value = (
            f"<div>Preview on the public stand-in: {self._summary(result, stand_in)}</div>"
        )
        cached = self.session.is_cached(self.dataset, "svt", **self.params)
        self.status.value = (
            "<span class='dpw-preview'>PREVIEW on the public stand-in — nothing spent. "
            + ("These parameters were already released: Release replays them for free."
               if cached else f"Release would charge ε = {self.epsilon.value:.3g}.")
            + "</span>"
        )

    def _draw_release(self, release: Release) -> None:
        out = release.output
        data = figures.svt_plot_data(
            n_queries=self.n_queries,
            outcomes=out["outcomes"],
            threshold=release.params["threshold"],
            above_values=out.get("above_values"),
        )
        figures.update(self.figure, data)
        figures.update(self.figure, figures.topc_plot_data({}))
        self._topc_plot.title.text = "Top-c selection: not shown after a release"
        self.stats.value = (
            f"<div>Released (DP output only): examined {out['n_examined']:,} of "
            f"{self.n_queries:,} queries, {len(out['above'])} ⊤ at positions "
            f"{', '.join(str(int(i)) for i in out['above'][:20])}"
            f"{' …' if len(out['above']) > 20 else ''}</div>"
        )
        self.status.value = "<span class='dpw-released'>Showing the released DP output.</span>"
