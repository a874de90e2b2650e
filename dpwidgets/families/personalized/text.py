"""The words of the personalized-DP widget: its methods' dropdown labels and banners (Li 2017,
Ch. 5; Jorgensen, Yu & Cormode 2015), and the lines that state a run's guarantee, cost and
error. Plain functions from public numbers to text (HTML where a widget shows it).

Examples
--------
>>> from dpwidgets.families.personalized.text import METHODS, banner_html
>>> METHODS["utility"]
'Utility-based partitioning (Li 2017, Alg. 11)'
>>> "largest</b> per-record loss" in banner_html("minimum", "per row")
True
"""

from __future__ import annotations

import html

import numpy as np

from ...ui.text import fold
from ...ui.text import g3 as _fmt
from .display import budget_used
from .params import METHOD_LABELS

__all__ = ["ABOVE_PUBLIC_VECTOR", "BANNERS", "METHODS", "NO_SHARE", "banner_html",
           "most_epsilon_text", "quality_html", "stats_text"]

#: Methods: dropdown label.
METHODS = {
    "utility": "Utility-based partitioning (Li 2017, Alg. 11)",
    "privacy_aware": "Privacy-aware partitioning (Li 2017, Alg. 10)",
    "sampling": "Sampling (Jorgensen et al.; Li 2017, Def. 5.1.1)",
    "minimum": "Minimum: everyone at the smallest budget (Li 2017, §5.1)",
    "threshold": "Threshold: only the records with ε_j ≥ ε_T (Li 2017, §5.1)",
}

#: What each method does, in a sentence or two (the banner's fold).
BANNERS = {
    "minimum": "Runs one release at the smallest budget of all: every record enjoys "
               "min ε, the generous records' willingness is wasted.",
    "threshold": "Runs one release at ε_T on the records that allow at least ε_T; the "
                 "others are not used at all.",
    "sampling": "Keeps record j with probability (e^ε_j − 1)/(e^ε_T − 1) (1 above ε_T), "
                "then one ε_T release on the sample: amplification by sampling gives record j "
                "min(ε_j, ε_T). The threshold ε_T is yours to choose.",
    "privacy_aware": "Groups records of similar budgets (dynamic programming over the sorted "
                     "budgets, minimising the wasted budget Σ(ε_ij − min ε_i)²; the number of "
                     "groups by eq. 5.2.3) and runs one release per group at its smallest "
                     "budget; the releases are combined by inverse-variance weights.",
    "utility": "Groups records to maximise the summed utility Σ U(n_i, min ε_i) of the "
               "releases (for counts: their precision; eq. 5.2.6 picks the number of groups), "
               "one release per group at its smallest budget, combined by inverse-variance "
               "weights.",
}

#: The custom privacy vector's refusal when no group has a share.
NO_SHARE = ("group shares: all three are 0; accepted: shares in [0, 1], at least one above 0 "
            "(they are normalised to sum to 1).")

#: The refusal of a release whose privacy vector asks more than the public one.
ABOVE_PUBLIC_VECTOR = (
    "budgets exceed the public privacy vector (the budget column of the dataset's public "
    "stand-in): a release may protect a record more than it asked, never less. Nothing was "
    "charged.")


def banner_html(method: str, per_unit: str) -> str:
    """The banner of ``method``: what it guarantees, per ``per_unit`` ("per row", "per
    person"), and why the ledger is charged its largest per-record loss.

    Examples
    --------
    >>> "Sampling" in banner_html("sampling", "per row")
    True
    """
    return (
        "<div class='dpw-banner-ok'>"
        + fold(f"<b>{html.escape(METHODS[method])}</b>: personalized DP {per_unit}, "
               "charged its largest per-record loss",
               f"{html.escape(BANNERS[method])} Guarantee: personalized DP {per_unit} "
               "— record j's privacy loss is at most the budget it enjoys, never more than "
               "it asked for (replace-one neighbours; the privacy vector is public). The "
               "session's ledger keeps one ε for everybody, so a release is charged its "
               "<b>largest</b> per-record loss.")
        + "</div>")


def quality_html(values: dict[str, float], plans: dict, asked: np.ndarray, where: str,
                 n_queries: int) -> str:
    """The quality line: per shown method (``plans``, by method), its relative frequency error
    (``values``, by label; none after a release: it needs the data), the share of the budget
    ``asked`` it uses and its ledger cost.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> plan = SimpleNamespace(enjoyed=np.array([0.1, 0.1]))
    >>> quality_html({}, {"minimum": plan}, np.array([0.1, 0.3]), "release", 1000)
    '<div>No error measure on confidential data: it would need the data. Minimum: uses 50.0% of the budget asked, ledger cost ε = 0.1</div>'
    """
    used = {METHOD_LABELS[m]: budget_used(p.enjoyed, asked) for m, p in plans.items()}
    charge = {METHOD_LABELS[m]: float(np.max(p.enjoyed)) for m, p in plans.items()}
    parts = []
    for name in used:
        error = f"RFE {values[name]:.2e}, " if name in values else ""
        parts.append(f"{html.escape(name)}: {error}uses {used[name]:.1%} of the budget "
                     f"asked, ledger cost ε = {charge[name]:.3g}")
    if not values:
        head = ("No error measure on confidential data: it would need the data. "
                if where == "release" else "")
        return f"<div>{head}{' · '.join(parts)}</div>"
    on = "on the public stand-in" if where == "preview" else "against the data"
    return (f"<div class='dpw-quality-values'>Relative frequency error of "
            f"{n_queries:,} random range counts (Li 2017, §5.3.1), {on}: "
            + " · ".join(parts) + "</div>")


def stats_text(plan) -> str:
    """A plan's releases and budgets (the first eight) and its largest per-record loss.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> stats_text(SimpleNamespace(partitions=[0], epsilons=[0.1], enjoyed=np.array([0.1])))
    "1 release(s) at ε = 0.1; largest per-record loss (the ledger's charge) 0.1"
    """
    k = len(plan.partitions)
    eps = ", ".join(_fmt(e) for e in plan.epsilons[:8]) + (" …" if k > 8 else "")
    return (f"{k} release(s) at ε = {eps}; largest per-record loss (the ledger's charge) "
            f"{_fmt(float(np.max(plan.enjoyed)))}")


def most_epsilon_text(top: float) -> str:
    """Why the accuracy panel stops at ``top``, the largest budget any record asks for (a
    public number: the privacy vector is public).

    Examples
    --------
    >>> most_epsilon_text(1.0)
    'no record asks for more than ε = 1'
    """
    return f"no record asks for more than ε = {_fmt(top)}"
