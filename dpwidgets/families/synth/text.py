"""The words of the synthetic-data widget: its banner, panel titles, quality table and stats.

Plain functions from public numbers (the controls, a DP output's public details, the quality
measures of :mod:`~dpwidgets.families.synth.measures`) to text or HTML, so that what the widget
says can be read and tested without a kernel. ``where`` is what is drawn: ``"teaching"`` (a
live run on public data), ``"preview"`` (a free run on the public stand-in) or ``"release"``
(an analyst's paid release: no reference table, no error measure).

Examples
--------
>>> from dpwidgets.families.synth.text import split_note
>>> print(split_note(1.0, 8.0, 4))
<span>ε1 = 0.889 for the margins (0.222 each), ε2 = 0.111 for the dependence (0.0185 per pair)</span>
"""

from __future__ import annotations

import html
import math
from collections.abc import Collection

from ...ui.text import budget_parts, fold
from ...ui.text import g3 as _fmt
from .params import PEER_INSTALL

__all__ = ["ACCURACY_WHAT", "banner", "dependence_titles", "laplace_note", "live_note",
           "margin_titles", "peer_refusal", "peer_text", "quality_html", "split_note", "stats"]

#: What the accuracy panel's values are (the margins of
#: :func:`~dpwidgets.families.synth.measures.output_margins`).
ACCURACY_WHAT = ("the synthetic table's margins (the share of the records in each bar of the "
                 "margin panel, every chosen attribute)")


def peer_text(available: bool) -> str:
    """The note beside the peers' button: what AIM and MST are, or how to install them."""
    if available:
        return ("<span>Today's peers (McKenna et al.: MST 2021, AIM 2022) through OpenDP's "
                "mbi extra, at the same ε. Slow: minutes for AIM.</span>")
    return ("AIM and MST (McKenna et al.) come from OpenDP's mbi extra, which is not "
            f"installed here: {PEER_INSTALL}.")


def peer_refusal(installed: bool, drawn: str | None) -> str | None:
    """Why the peers' button does nothing (HTML), or ``None`` when it may run: the mbi extra is
    not ``installed``, or what is ``drawn`` (``"teaching"``, ``"preview"``, ``"release"``, or
    ``None``: nothing yet) is no live run or preview to compare with.

    Examples
    --------
    >>> peer_refusal(True, "preview") is None, "Refused" in peer_refusal(True, "release")
    (True, True)
    """
    if not installed:
        return (f"<div class='dpw-error'><b>Not installed.</b> "
                f"{html.escape(peer_text(False))}</div>")
    if drawn is None or drawn == "release":
        return ("<div class='dpw-error'><b>Refused.</b> AIM/MST are compared on a live run or "
                "a preview, never released beside DPCopula.</div>")
    return None


def laplace_note(cells: float | None, limit: float) -> str | None:
    """Why the Laplace baseline on the full-domain histogram is not run: no declared domains
    (``cells`` is ``None``) or more ``cells`` than its ``limit``; ``None``: it runs.

    Examples
    --------
    >>> laplace_note(1e4, 1e7) is None, laplace_note(None, 1e7).endswith("histogram fits")
    (True, True)
    """
    if cells is None:
        return ("Laplace on the full-domain histogram: not run — it needs declared domains "
                "to check that the histogram fits")
    if cells > limit:
        return (f"Laplace on the full-domain histogram: not run — {cells:.3g} cells do not fit "
                f"in memory (limit {limit:.0e}); that is why DPCopula models margins and "
                f"dependence instead")
    return None


def split_note(epsilon: float, k: float, m: int) -> str:
    """The budget split beside the ``k`` slider: ε1 for the margins (per attribute), ε2 for
    the dependence (per pair of the ``m`` attributes)."""
    eps2 = epsilon / (k + 1.0)
    eps1 = epsilon - eps2
    pairs = m * (m - 1) // 2
    return (f"<span>ε1 = {_fmt(eps1)} for the margins ({_fmt(eps1 / max(m, 1))} each), "
            f"ε2 = {_fmt(eps2)} for the dependence ({_fmt(eps2 / max(pairs, 1))} per pair)"
            f"</span>")


def banner(*, epsilon: float, method: str, publisher: str, small: list[str], declared: bool,
           per_unit: str) -> str:
    """The guarantee banner: DPCopula's steps for this ``method`` and ``publisher``, the
    hybrid's partition by the ``small`` attributes, and whether the domains are public."""
    how = ("Kendall's τ per pair (sensitivity 4/t on t sampled rows, Lemma 3.2.1), "
           "P = sin(πτ/2)" if method == "kendall" else
           "the average of per-block Gaussian-copula estimates over l disjoint blocks "
           "(sensitivity 2/l, Alg. 2)")
    hybrid = (f" Hybrid (Alg. 6): the data are partitioned by {', '.join(small)}; the noisy "
              f"partition sizes take the small attributes' share of ε1 and DPCopula runs in "
              f"every partition (parallel composition)." if small else "")
    domains = ("Attribute domains declared public." if declared else
               "Attribute domains read from the data: NOT differentially private (teaching "
               "only; declare domains= for a DP release).")
    summary = (f"ε = {_fmt(epsilon)}-DP {per_unit}" if declared else
               "domains read from the data: NOT differentially private")
    return (
        "<div class='dpw-banner-ok'>"
        + fold(f"<b>DPCopula (Li 2017, Ch. 3)</b>: {summary}",
               f"One DP histogram per attribute ({html.escape(publisher)}) gives "
               f"the margins, {how} gives the dependence; synthetic records are drawn "
               f"from the Gaussian copula and the inverse DP margins (Alg. 3).{hybrid} "
               f"Guarantee: ε = {_fmt(epsilon)}-DP {per_unit} (add/remove-one-record "
               f"neighbours, ε1 + ε2, Thm 3.2.2's proof). {domains}")
        + "</div>")


def dependence_titles(where: str, *, reference: bool, live: Collection[str], rows: int,
                      n_queries: int, sanity_bound: float, dp_title: str) -> dict[str, str]:
    """The titles of the τ heatmaps and of the range-query panel: what each shows, whether a
    reference is drawn (``reference``), the LIVE marks (``live``: the method keys drawn from
    live runs; ``rows``: DPCopula's synthetic rows) and, after a release, the DP matrix's
    title ``dp_title``."""
    ref_name = {"teaching": "real table", "preview": "public stand-in (preview)",
                "release": "real table"}[where]
    third = ("Difference: synthetic − " + ("real" if where == "teaching" else "stand-in")
             if reference else dp_title or "Difference: needs the real table")
    marks = [w for w in (f"LIVE, {rows:,} rows" if "dpcopula" in live else "",
                         "preview" if where == "preview" else "") if w]
    scaled = (f"; LIVE: counts of {rows:,} synthetic rows scaled to the DP record count"
              if live else "")
    errors = ({"teaching": f"Range-count queries ({n_queries}, all chosen attributes): "
                           f"relative error against the real table, "
                           f"s = {_fmt(sanity_bound)}{scaled}",
               "preview": f"Range-count queries ({n_queries}): relative error against the "
                          f"public stand-in, the preview's own input{scaled}",
               "release": "Range-query error: not available in analyst mode (it needs the "
                          "confidential table's true answers)"}[where]
              if reference or where == "release"
              else "Range-query error: needs the real table (show the real table)")
    return {
        "tau_reference": (f"Kendall's τ: {ref_name}" if reference else
                          "τ of the real table: not shown" if where == "release"
                          else "τ of the real table: hidden"),
        "tau_synthetic": "Kendall's τ: synthetic table" + (f" ({', '.join(marks)})" if marks
                                                           else ""),
        "tau_third": third,
        "errors": errors,
    }


def margin_titles(where: str, attr: str, *, reference: bool, live: bool,
                  rows: int) -> dict[str, str]:
    """The titles of the two margin panels for attribute ``attr``."""
    return {
        "margin_reference": {"teaching": f"Real table: {attr}",
                             "preview": f"Public stand-in (preview): {attr}",
                             "release": "Real table: not shown (analyst mode)"}[where]
        if reference or where == "release" else "Real table: hidden",
        "margin_synthetic": (f"Synthetic table ({'LIVE, ' if live else ''}{rows:,} rows"
                             f"{', preview' if where == 'preview' else ''}): {attr}"),
    }


def quality_html(values: dict[str, dict[str, float]], notes: dict[str, str], where: str, *,
                 live: Collection[str], later: bool, n_queries: int,
                 sanity_bound: float) -> str:
    """The quality table (:func:`~dpwidgets.families.synth.measures.quality_values`) with the notes on the baselines
    not run; after an analyst release, why there is none. A NaN (a τ left to the full
    tables) shows as "…"."""
    extra = "".join(f"<div class='dpw-note'>{html.escape(t)}</div>" for t in notes.values())
    if not values:
        text = ("No error measure in analyst mode: range-query errors, margin distances and "
                "τ differences would need the confidential table." if where == "release"
                else "")
        return f"<div>{text}</div>{extra}"
    on = "on the public stand-in" if where == "preview" else "against the real table"
    head = "".join(f"<th>{html.escape(h)}</th>" for h in
                   ("method", *next(iter(values.values()))))
    rows = "".join(
        "<tr><td>" + html.escape(name) + "</td>"
        + "".join("<td>…</td>" if math.isnan(v) else f"<td>{v:.3f}</td>"
                  for v in vals.values()) + "</tr>"
        for name, vals in values.items())
    if live:
        extra = ("<div class='dpw-note'>LIVE: measured on the live tables (range counts "
                 "scaled to the DP record count)"
                 + ("; the baselines' τ (…) follows with the full tables" if later else "")
                 + ".</div>" + extra)
    return (f"<div class='dpw-quality-values'>Quality {on} (relative error of {n_queries} "
            f"random range-count queries, s = {_fmt(sanity_bound)}; margin total variation "
            f"distance; Kendall's τ difference):<table>{head}{rows}</table></div>{extra}")


def stats(output: dict, *, live: bool) -> tuple[str, str]:
    """What the stats line says of DPCopula's output: ``(what is shown, the budget spent)``,
    with the public details (Kendall's sample, MLE blocks, hybrid partitions, repair); during
    a live step, that the full table follows."""
    details = output["details"]
    extra = []
    if details.get("sample_size") is not None:
        extra.append(f"Kendall's τ on t = {int(details['sample_size']):,} sampled rows")
    if details.get("mle_blocks") is not None:
        extra.append(f"MLE on l = {int(details['mle_blocks']):,} blocks")
    if details.get("n_partitions"):
        extra.append(f"{int(details['n_partitions'])} hybrid partitions")
    if details.get("repaired"):
        extra.append("P̃ repaired to positive definite (Alg. 5 step 3)")
    budget = budget_parts(output["epsilon_parts"])
    if extra:  # the details follow the budget, a sentence of their own
        budget += ". " + "; ".join(extra)
    what = f"{output['n_rows']:,} synthetic records ({output['method']})"
    if live:
        what = (f"LIVE while the controls move: {what}, of about "
                f"{max(round(float(details['noisy_n'])), 0):,} (the DP record count) in the "
                f"full table drawn when they settle")
    return what, budget


def live_note(live_rows: int) -> str:
    """The status line's note during a live step."""
    return (f" <span class='dpw-live'>LIVE: {live_rows:,} synthetic rows per table "
            f"while the controls move; the full tables follow when they settle.</span>")
