"""The words of the stream widget: its guarantee banner, status lines, quality line and stats
(Chen 2018, Ch. 5). Plain functions from public values to text (HTML where a widget shows it):
the release's parameters, the measures against a public truth, and the release's own output.

Examples
--------
>>> from dpwidgets.families.streams.text import stats_text
>>> stats_text(100, 8)
'100 steps in 8 groups (mean size 12.50)'
"""

from __future__ import annotations

import html

import numpy as np

from ...ui.text import fmt, fold

__all__ = ["OVERDRAFT", "POST_PROCESSING_FREE", "RELEASED", "banner_html", "epsilon_note_html",
           "events_text", "live_status_html", "preview_status_html", "quality_html",
           "stats_text"]

#: Teaching: a live run past the cap (the analyst's release would have been refused).
OVERDRAFT = ("<div class='dpw-warn'>Past the cap: on confidential data this run would have been "
             "refused.</div>")
#: Analyst: the status while a paid release is drawn.
RELEASED = ("<span class='dpw-released'>Showing the released DP output (no true counts)."
            "</span>")
#: Added to the message of a release: what spends nothing more.
POST_PROCESSING_FREE = ("<div class='dpw-ok'>Moving the smoother, w or δ, or playing, spends "
                        "nothing more.</div>")


def banner_html(params: dict, per_unit: str) -> str:
    """The guarantee banner of a ``"pegasus"`` release with ``params`` (the widget's
    :attr:`~dpwidgets.families.streams.widget.StreamWidget.params`), per ``per_unit``.

    Examples
    --------
    >>> p = {"epsilon": 0.5, "perturber_share": 0.8, "theta": 25.0}
    >>> "ε_p = 0.4" in banner_html(p, "per row")
    True
    """
    eps, share = params["epsilon"], params["perturber_share"]
    return "<div class='dpw-banner-ok'>" + fold(
        "<b>PeGaSus — Perturb, Group, Smooth (Chen 2018, Alg. 15)</b>: "
        f"{fmt(eps)}-DP {per_unit}, event-level",
        "Neighbours: one tuple (user, state, time) added or removed. Perturber: Laplace "
        f"with ε_p = {fmt(share * eps)}; Grouper (Alg. 16, sparse vector): ε_g = "
        f"{fmt((1 - share) * eps)}, θ = {fmt(params['theta'])}. The smoother, the window sums "
        "and the event monitors are post-processing of this one release: moving them "
        "spends nothing. Each estimate at step t uses only c_1..c_t, so the stream is "
        "released once and revealed step by step.") + "</div>"


def epsilon_note_html(note: str) -> str:
    """The guardrail's ``note`` beside ε, escaped.

    Examples
    --------
    >>> epsilon_note_html("ε < 1")
    "<span class='dpw-note'>ε &lt; 1</span>"
    """
    return f"<span class='dpw-note'>{html.escape(note)}</span>"


def live_status_html(run: int, epsilon: float, charged: bool) -> str:
    """Teaching: the status of live run number ``run`` at ``epsilon`` (charged, or a cached
    replay).

    Examples
    --------
    >>> live_status_html(2, 0.5, False)
    '<span>live run #2, ε = 0.5 (cached, free)</span>'
    """
    return (f"<span>live run #{run}, ε = {epsilon:.3g} "
            f"{'charged' if charged else '(cached, free)'}</span>")


def preview_status_html(cached: bool, cost: float) -> str:
    """Analyst: the status of a free preview, and what the release would charge (nothing if
    these parameters were released already, else ``cost``).

    Examples
    --------
    >>> "charge ε = 0.3" in preview_status_html(False, 0.3)
    True
    """
    what = "nothing: these parameters were released already" if cached else f"ε = {fmt(cost)}"
    return ("<span class='dpw-preview'>PREVIEW on the public stand-in (same length) — "
            f"nothing spent. Release would charge {what}.</span>")


def quality_html(where: str, q: dict | None, w: int, detections) -> str:
    """The quality line: the measures ``q`` against the public truth (``where`` is
    ``"teaching"`` or ``"preview"``, at window ``w``), or -- no truth drawn, ``q`` None -- on a
    release the number of steps with a detection at δ among ``detections`` (a boolean array,
    post-processing of the release), else nothing.

    Examples
    --------
    >>> import numpy as np
    >>> quality_html("release", None, 16, np.array([True, False, True]))[-31:]
    'Detections at δ: 2 steps.</div>'
    >>> quality_html("preview", None, 16, None)
    ''
    """
    if q is None:
        return ("<div>No quality measure and no ROC on confidential data: they need the true "
                f"stream. Detections at δ: {int(detections.sum()):,} steps.</div>"
                if where == "release" else "")
    on = "on the public stand-in" if where == "preview" else "against the true stream"
    return (
        f"<div class='dpw-quality-values'>Quality {on}: scaled L1 — LM "
        f"{q['LM scaled L1']:.3f} · PeGaSus {q['PeGaSus scaled L1']:.3f}; "
        f"windows (w = {int(w)}) average L1 — WSS {q['WSS average L1']:,.4g} · "
        f"sum of ĉ {q['sum of ĉ average L1']:,.4g} · LM {q['LM window average L1']:,.4g}; "
        f"{events_text(q)}.</div>")


def events_text(q: dict) -> str:
    """The events' AUC of PeGaSus and LM with PeGaSus's TPR / FPR at δ, each one left out, with
    the reason, when it is undefined: an ROC needs windows that are events and windows that
    are not, a TPR true events, an FPR non-events (Chen 2018, §5.4).

    Examples
    --------
    >>> nan = float("nan")
    >>> text = events_text({"PeGaSus AUC": nan, "LM AUC": nan, "PeGaSus TPR at δ": nan,
    ...                     "PeGaSus FPR at δ": 0.05})
    >>> text.startswith("events AUC not computed"), text[-17:]
    (True, '(at δ: FPR 0.050)')
    """
    if np.isfinite(q["PeGaSus AUC"]) and np.isfinite(q["LM AUC"]):
        text = f"events AUC — PeGaSus {q['PeGaSus AUC']:.3f} · LM {q['LM AUC']:.3f}"
    else:
        text = ("events AUC not computed: at this event threshold the stream's windows are all "
                "events or none is")
    rates = [f"{name} {q[f'PeGaSus {name} at δ']:{spec}}" for name, spec in
             (("TPR", ".2f"), ("FPR", ".3f")) if np.isfinite(q[f"PeGaSus {name} at δ"])]
    return f"{text} (at δ: {' / '.join(rates)})" if rates else text


def stats_text(n_steps: int, n_groups: int) -> str:
    """The stats line: the stream's length and the Grouper's groups (from the release's
    boundaries), with their mean size.

    Examples
    --------
    >>> stats_text(10, 0)
    '10 steps in 0 groups (mean size 10.00)'
    """
    return (f"{n_steps:,} steps in {n_groups:,} groups (mean size "
            f"{n_steps / max(n_groups, 1):.2f})")
