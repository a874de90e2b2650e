"""The words of the SVT explorer: its banners (a private variant's guarantee; a broken one's
claim, true bound and audit), the threshold's note, the run summaries and the release refusal.
Plain functions from public values -- the parameters, a variant's public description, an
audit's result on the source's public counterexample -- to text (HTML where a widget shows it).

Examples
--------
>>> from dpwidgets.families.svt.preview import variant_info
>>> from dpwidgets.families.svt.text import audit_text, private_banner
>>> "ε = 0.5-DP per row" in private_banner(variant_info("standard"), 0.5, "per row")
True
>>> audit_text(0.5, None, pending=True)[1]
'audit running…'
"""

from __future__ import annotations

import html

from ...ui.text import fmt, fold

__all__ = ["ACCURACY_WHAT", "AFTER_RELEASE_TITLE", "THRESHOLD_NOT_TYPED", "WHISKERS", "audit_text",
           "broken_banner", "private_banner", "released_stats", "run_summary",
           "threshold_note", "unchecked_banner"]

#: Appended to the top-c panel's title while its SVT bars carry the accuracy whiskers.
WHISKERS = "; whiskers: 90% of releases"
#: The top-c panel's title after an analyst release (it compares methods on the scores).
AFTER_RELEASE_TITLE = "Top-c selection: not shown after a release"
#: What the accuracy panel estimates (the top-c panel's SVT bars).
ACCURACY_WHAT = ("the false negative rate and the score error rate of the ⊤ queries (the "
                 "top-c panel's SVT bars, scored against the stand-in)")
#: Why an analyst release is refused until the threshold is typed.
THRESHOLD_NOT_TYPED = (
    "threshold: type the threshold you mean. The value in the box is the suggestion computed "
    "on the public stand-in, not on your data; a release never uses it unless you type it.")


def private_banner(spec, epsilon: float | None, per_unit: str) -> str:
    """The banner of a private variant ``spec``: its claim at ``epsilon`` (None: ε is not
    valid, no claim), its guarantee and source.

    Examples
    --------
    >>> from dpwidgets.families.svt.preview import variant_info
    >>> private_banner(variant_info("standard"), None, "per row").startswith(
    ...     "<div class='dpw-banner-ok'>")
    True
    """
    claim = f": ε = {fmt(float(epsilon))}-DP {per_unit}" if epsilon is not None else ""
    return (
        "<div class='dpw-banner-ok'>"
        + fold(f"<b>{html.escape(spec.title)}</b>{claim}",
               f"{html.escape(spec.guarantee)} {per_unit} — {html.escape(spec.source)}")
        + "</div>")


def unchecked_banner(spec) -> str:
    """The banner of a broken variant ``spec`` while ε or c is not valid: not private, its
    source and why, no numbers.

    Examples
    --------
    >>> from dpwidgets.families.svt.preview import variant_info
    >>> "NOT PRIVATE" in unchecked_banner(variant_info("roth2011"))
    True
    """
    return (
        "<div class='dpw-banner-broken'>"
        + fold(f"<b>NOT PRIVATE — {html.escape(spec.title)}</b>",
               f"({html.escape(spec.source)}). {html.escape(spec.note)}")
        + "</div>")


def audit_text(eps_audit: float, audited: float | None, *, pending: bool) -> tuple[str, str]:
    """What the audit at ``eps_audit`` says (long, short): running (``pending``), unavailable
    (``audited`` None), a lower bound on the loss above the claim, or no violation found.

    Examples
    --------
    >>> audit_text(0.5, 1.25, pending=False)[1]
    'audited ≥ 1.25'
    >>> audit_text(0.5, None, pending=False)[0]
    'audit unavailable'
    """
    if pending:
        return (f"privacy-loss audit at ε = {eps_audit:g} on the source's counterexample "
                f"running…", "audit running…")
    if audited is None:
        return "audit unavailable", "audit unavailable"
    if audited > eps_audit:
        return (f"audited privacy loss ≥ {fmt(audited)} at ε = {eps_audit:g} on the source's "
                f"counterexample (public inputs, not your data)", f"audited ≥ {fmt(audited)}")
    # The audit found nothing at this size; the variant is still not private.
    return (f"the audit on the source's counterexample found no violation at ε = "
            f"{eps_audit:g} with its feasible size (an audit can refute a claim, never "
            f"establish it; the proof above still applies)",
            "no violation found by the audit at its size")


def broken_banner(spec, epsilon: float, loss: float, audit: tuple[str, str],
                  per_unit: str) -> str:
    """The banner of a broken variant ``spec``: the claimed ``epsilon``, its true bound
    ``loss`` and what the audit says (``audit``, as :func:`audit_text` gives it).

    Examples
    --------
    >>> from dpwidgets.families.svt.preview import variant_info
    >>> spec = variant_info("roth2011")
    >>> text = broken_banner(spec, 0.5, float("inf"), audit_text(0.5, 2.0, pending=False),
    ...                      "per row")
    >>> "claimed ε = 0.5, actual bound ∞, audited ≥ 2" in text
    True
    """
    audit_txt, audit_short = audit
    return (
        "<div class='dpw-banner-broken' style='background:#b03a2e;color:white;"
        "padding:6px;border-radius:3px'>"
        + fold(f"<b>NOT PRIVATE — {html.escape(spec.title)}</b>: claimed ε = {fmt(epsilon)}, "
               f"actual bound {fmt(loss)}, {audit_short}",
               f"({html.escape(spec.source)}). Claimed ε = {fmt(epsilon)} {per_unit}; "
               f"actual bound: {fmt(loss)}; {audit_txt}. {html.escape(spec.note)}")
        + "</div>"
    )


def threshold_note(typed: bool, suggestion: float) -> str:
    """The analyst's note under the threshold: whether it was typed, and the rule of Lyu, Su &
    Li 2017, §6 on the public stand-in (``suggestion``).

    Examples
    --------
    >>> "Release is refused" in threshold_note(False, 604.0)
    True
    """
    typed_text = ("You typed the threshold: a release uses exactly it." if typed
                  else "<b>Type the threshold</b>: Release is refused until you do.")
    return (f"<span class='dpw-note'>{typed_text} Suggestion on the public stand-in (the rule "
            f"of Lyu, Su & Li 2017, §6; stand-in, not your data): {fmt(suggestion)}.</span>")


def run_summary(result, n_queries: int, rates: tuple[float, float] | None = None) -> str:
    """One line on a teaching run or a preview ``result`` (on public values): how far it went,
    its ⊤ count, its split and (``rates``) its false negative and score error rates.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> import numpy as np
    >>> run = SimpleNamespace(n_examined=7, positives=np.array([2, 6]), epsilon1=0.1,
    ...                       epsilon2=0.4)
    >>> run_summary(run, 10)
    'examined 7 of 10 queries · 2 ⊤ · ε1 = 0.1, ε2 = 0.4'
    """
    parts = [
        f"examined {result.n_examined:,} of {n_queries:,} queries",
        f"{result.positives.size} ⊤",
        f"ε1 = {result.epsilon1:.3g}, ε2 = {result.epsilon2:.3g}",
    ]
    if rates is not None:
        fnr, ser = rates
        parts += [f"FNR = {fnr:.3f}", f"SER = {ser:.3f}"]
    return " · ".join(parts)


def released_stats(output: dict, n_queries: int) -> str:
    """The stats line of an analyst release: its DP output only (how far it went, the ⊤
    positions, the first 20).

    Examples
    --------
    >>> released_stats({"n_examined": 5, "above": [1, 4]}, 10)
    '<div>Released (DP output only): examined 5 of 10 queries, 2 ⊤ at positions 1, 4</div>'
    """
    above = output["above"]
    return (
        f"<div>Released (DP output only): examined {output['n_examined']:,} of "
        f"{n_queries:,} queries, {len(above)} ⊤ at positions "
        f"{', '.join(str(int(i)) for i in above[:20])}"
        f"{' …' if len(above) > 20 else ''}</div>"
    )
