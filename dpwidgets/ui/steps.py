"""The steps :class:`~dpwidgets.ui.base.ReleaseWidget`'s template calls, each one line that calls
its public hook.

They keep the private names widgets overrode in 0.x, so that such a widget still works (the
step runs its override), warned at the override by ``ReleaseWidget.__init_subclass__``; a
widget today overrides the public hook (``draw_live`` for ``_live``, ...: :data:`LEGACY_HOOKS`).
"""

from __future__ import annotations

__all__ = ["LEGACY_HOOKS", "TemplateSteps"]


class TemplateSteps:
    """The 0.x-named steps of the widget template (a mixin of ``ReleaseWidget``)."""

    def _live(self) -> None:
        self.draw_live()

    def _preview(self) -> None:
        self.draw_preview()

    def _draw_release(self, release) -> None:
        self.draw_release(release)

    def _show(self, *drawn, where: str) -> None:
        self.draw(*drawn, where=where)

    def _refusal(self) -> str | None:
        return self.refusal()

    def _release_refusal(self) -> str | None:
        return self.release_refusal()

    def _controls(self) -> list:
        return self.number_controls()

    def _select_data(self, *args, **kwargs) -> None:
        self.select_data(*args, **kwargs)

    def _on_change(self, change=None) -> None:
        self.controls_changed(change)

    def _on_data(self, change=None) -> None:
        self.data_changed(change)

    def _rerun(self) -> None:
        self.rerun()

    def _recompute(self) -> None:
        self.redraw()

    def _make_release(self) -> object:
        return self.make_release()

    def _update_banner(self) -> None:
        self.update_banner()

    def _live_status(self, releases: list) -> None:
        self.live_status(releases)

    def _preview_status(self, what: str = "") -> None:
        self.preview_status(what)


#: The private steps a 0.x widget overrode, and the public hook that replaces each.
LEGACY_HOOKS = {
    "_live": "draw_live", "_preview": "draw_preview", "_draw_release": "draw_release",
    "_show": "draw", "_refusal": "refusal", "_release_refusal": "release_refusal",
    "_controls": "number_controls", "_select_data": "select_data",
    "_on_change": "controls_changed", "_on_data": "data_changed", "_rerun": "rerun",
    "_recompute": "redraw", "_make_release": "make_release", "_update_banner": "update_banner",
    "_live_status": "live_status", "_preview_status": "preview_status",
}
