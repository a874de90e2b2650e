"""What a widget says in words: the guarantee banner, the Release button's exact parameters
and price, the status and stats lines, the code to copy, refusals and errors.

A mixin of :class:`~dpwidgets.ui.base.ReleaseWidget` (it reads the widget's ``session``,
``dataset``, ``mechanism``, ``params`` and its HTML parts). Every number it prints is public: a
parameter, a charge, the budget the ledger reports, or a DP output.
"""

from __future__ import annotations

import html

from ..declarations import python_literal
from ..engine.errors import DPWidgetsError
from ..mechanism import Release
from ..persistence import BudgetExceededError
from ..persistence.store import canonical
from .text import _CITATION, _SHOWN, _param_text, fmt, fold, round_decimals

__all__ = ["ReleaseStatus"]

#: What a widget catches around a session call: every refusal or failure of the door, plus the
#: ``ValueError`` / ``TypeError`` of its own control validation. The widget shows the message
#: and stays alive.
CAUGHT = (DPWidgetsError, BudgetExceededError, ValueError, TypeError)


class ReleaseStatus:
    """The text half of :class:`~dpwidgets.ui.base.ReleaseWidget` (a mixin): its hooks
    ``update_banner``, ``live_status`` and ``preview_status``, and the lines it writes."""

    def _guarantee_of(self, release: Release) -> str:
        guarantee = getattr(release, "guarantee", None) or release.output.get("guarantee")
        if guarantee:
            text = round_decimals(str(guarantee))
            return text if " per " in text else f"{text}, {self.per_unit}"
        return f"ε = {fmt(release.epsilon)}-DP {self.per_unit}"

    def update_banner(self) -> None:
        """Set the guarantee banner (a widget's own; it must say :attr:`per_unit`)."""

    def _update_button(self) -> None:
        """Write the exact parameters and cost on the Release button."""
        verb = "Rerun" if self.session.teaching else "Release"
        if self.problem():
            self.release_button.description = f"{verb}: fix the parameters first"
            return
        try:
            cost = self.cost()
        except CAUGHT:
            self.release_button.description = f"{verb}: fix the parameters first"
            return
        title = self.title or self.mechanism
        params = self.params
        # The release on screen describes the controls as they are (a control moved clears
        # it): clicking again replays it, free -- also for a widget whose release adds
        # parameters of its own (a DP fit's coefficients), which is_cached cannot see here.
        try:
            free = not self.session.teaching and (
                (self._release is not None and self._released_as == canonical(params))
                or self.session.is_cached(self.dataset, self.mechanism, **params))
        except CAUGHT:  # a widget whose release adds parameters of its own (a model)
            free = False
        price = "free: already released" if free else f"costs ε={fmt(cost)}"
        short = _CITATION.sub("", title)
        self.release_button.description = f"{verb}: {short}, {_param_text(params, short)} ({price})"
        # The whole of it, exact, on hover.
        self.release_button.tooltip = (
            f"{verb}: {title}, {_param_text(params)}; charges ε = {cost!r}"
            + (" (already released: a replay is free)" if free else ""))
        self.code_box.value = self.code()

    def code(self) -> str:
        """The few lines of Session API that make the release the button would make (what to
        copy into a script): the same dataset, mechanism, parameters and ``run``, so that in
        the same session (or on the same ledger) they replay it for free."""
        opening = self.session.opening_code(self.dataset)
        args = "".join(f", {k}={python_literal(v)}" for k, v in self.params.items())
        run = f", run={self._run}" if self._run else ""
        return "\n".join([
            "from dpwidgets import Session", opening,
            f"release = session.release({self.dataset!r}, {self.mechanism!r}{run}{args})",
            "print(release.guarantee)",
            'release.save("release.csv")  # the numbers, and their provenance in release.csv.json',
        ])

    def _refuse(self, problem: str) -> None:
        self.message.value = (f"<div class='dpw-error'><b>Refused.</b> {html.escape(problem)} "
                              "Nothing was previewed, released or charged.</div>")
        self._update_button()

    def _show_error(self, exc: Exception) -> None:
        kind = "Over budget" if isinstance(exc, BudgetExceededError) else "Refused"
        self.message.value = (f"<div class='dpw-error'><b>{kind}.</b> "
                              f"{html.escape(str(exc))}</div>")

    def _set_stats(self, where: str, what: str, guarantee: str, budget: str = "") -> None:
        """The stats line: where the numbers come from (``"teaching"``, ``"preview"`` or
        ``"release"``), what is shown, what was spent (``budget``) and the guarantee."""
        text = f"{_SHOWN[where]}: {what}." + (f" Budget: {budget}." if budget else "")
        # The guarantee in full is folded: the banner above states it in one line.
        self.stats.value = fold(html.escape(text),
                                f"Guarantee: {html.escape(round_decimals(guarantee))}.")

    def live_status(self, releases: list[Release]) -> None:
        """Teaching: say which run is shown and what it charged."""
        over = any(r.overdraft for r in releases)
        self.message.value = ("<div class='dpw-warn'>Past the cap: on confidential data this run "
                              "would have been refused.</div>" if over else "")
        charged = sum(r.epsilon for r in releases if r.charged)
        cached = charged < sum(r.epsilon for r in releases)
        self.status.value = (
            f"<span>live run #{self._run}: {len(releases)} release(s), ε = {fmt(charged)} "
            f"charged{' (the rest cached, free)' if cached else ''}</span>")

    def preview_status(self, what: str = "") -> None:
        """Analyst: say that a preview is shown and what a release would charge."""
        self.message.value = ""
        cached = self.session.is_cached(self.dataset, self.mechanism, **self.params)
        self.status.value = (
            "<span class='dpw-preview'>PREVIEW on the public stand-in"
            f"{' (' + what + ')' if what else ''} — nothing spent. Release would charge "
            f"ε = {fmt(self.cost())}{' (already released: a free replay)' if cached else ''}."
            "</span>")
