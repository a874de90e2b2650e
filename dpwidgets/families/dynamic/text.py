"""What the dynamic-histogram widget says: its methods (the dropdown's labels, the legends'
short names, which controls each uses), the banner (what a method does and its guarantee:
user level, Li 2017, Def. 4.1.1, or w-event, Def. 4.1.3), the quality line and the stats line.

:class:`DynamicText` is a part of
:class:`~dpwidgets.families.dynamic.widget.DynamicHistogramWidget` (a mixin).

Examples
--------
>>> from dpwidgets.families.dynamic.text import METHODS, THRESHOLD_METHODS
>>> METHODS["dsft"][1], [m for m in METHODS if m in THRESHOLD_METHODS]
('DSFT', ['dsat', 'dsft', 'dsat_w_event'])
"""

from __future__ import annotations

import html

import numpy as np

from ...ui.text import budget_parts, fold
from ...ui.text import g3 as _fmt
from .spec import W_EVENT, user_level_factor

__all__ = ["ADAPTIVE_METHODS", "BANNERS", "CUTOFF_METHODS", "DynamicText", "METHODS",
           "THRESHOLD_METHODS", "VARIANTS"]

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
#: The methods with a distance threshold (and ``k``, ``cardinality``).
THRESHOLD_METHODS = ("dsat", "dsft", "dsat_w_event")
#: The methods with an adaptive threshold (and a burn-in).
ADAPTIVE_METHODS = ("dsat", "dsat_w_event")
#: The methods with a cutoff C.
CUTOFF_METHODS = ("dsat", "dsft", "dsat_w_event", "dynamic_fixed")

#: DSAT's controllers, by ``variant``: what each does.
VARIANTS = {
    "paced": "The engine's paced controller: T_i = T_s·2^(releases ahead of the schedule C·t/N), "
             "distance to the true snapshot at the last release (not the text's).",
    "text": "Li 2017, Alg. 8 as printed: the P term of a PID controller on the release ratio "
            "(eqs. 4.2.2-4.2.5, set point δ, gain θ), distance to the last private release.",
}

#: What each method does, in the banner.
BANNERS = {
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


class DynamicText:
    """The banner, quality and stats lines of
    :class:`~dpwidgets.families.dynamic.widget.DynamicHistogramWidget` (a mixin).

    It reads the host's controls ``method``, ``variant``, ``epsilon``, ``w``, its ``n_times``
    and ``per_unit``, and writes its ``banner``, ``quality``, ``stats`` and
    ``quality_values``.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.families.dynamic.widget import DynamicHistogramWidget
    >>> s = Session(mode="teaching", seed=0)
    >>> wd = DynamicHistogramWidget(s, data="moving", method="dynamic_bd", w=100,
    ...                             compare=False, debounce=0)
    >>> "⌈N/w⌉·ε = 4" in wd.banner.value, sorted(wd.quality_values)
    (True, ['BD'])
    >>> wd.close(); s.close()
    """

    def update_banner(self) -> None:
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
        about = BANNERS[method] + (f" {VARIANTS[self.variant.value]}" if method == "dsat" else "")
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
