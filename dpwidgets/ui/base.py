"""ReleaseWidget: what every widget shares -- the Release button, the error line, the preview
generator, the teaching / preview / release branch, the guarantee banner and ``release()``.

A widget subclasses :class:`ReleaseWidget`, builds its controls and figure, and supplies, as
public hooks (see "The controller contract" in the class's docstring)

- ``mechanism`` (the session mechanism the Release button runs; a property when a control
  chooses it) and ``params`` (the public parameters the controls describe);
- ``draw_live()`` (teaching: rerun on the data, charged to the teaching ledger),
  ``draw_preview()`` (analyst: a free run on the public stand-in) and
  ``draw_release(release)`` (analyst: draw a paid release's DP output) -- or ``compute()`` and
  ``draw(*drawn, where=)``, which the default ``draw_live`` and ``draw_preview`` combine.

The base keeps the two things apart that must never mix: ``last_release`` is the last *paid*
release (a :class:`~dpwidgets.session.Release` with ``preview == False``, or ``None``); a
preview is only ever drawn, labelled "PREVIEW", and never stored there.
"""

from __future__ import annotations

import contextlib
import html
import math
from collections.abc import Callable
from dataclasses import dataclass, field

import ipywidgets as w
import numpy as np

from .._moved import warn_renamed_hooks
from .._progress import reporting
from ..persistence.store import canonical
from ..session import Release, Session
from .accuracy import AccuracyMixin
from .bokeh_widget import OfflineBokehMixin, one_patch
from .controls import (
    Debouncer,
    SliderText,
    _PassThrough,
    control_problem,
    epsilon_guardrail,
)
from .layout import STYLE, legible_layout
from .progress import ReleaseProgress
from .status import CAUGHT, ReleaseStatus
from .steps import LEGACY_HOOKS as _LEGACY_HOOKS
from .steps import TemplateSteps
from .text import (  # noqa: F401  (the names widgets and tests import from here)
    _param_text,
    budget_parts,
    fmt,
    fold,
    g3,
    round_decimals,
    shown,
    undust,
    visible_text,
)


def _in_one_patch(fn: Callable) -> Callable:
    """``fn`` with the figure changes it makes sent to the browser as one patch per figure."""

    def run(*args, **kwargs):
        with one_patch():
            return fn(*args, **kwargs)

    run.__wrapped__ = fn
    return run


__all__ = ["PublicSource", "ReleaseWidget", "budget_parts", "fmt", "fold", "g3", "is_echo",
           "one_of", "round_decimals", "visible_text"]


def is_echo(change) -> bool:
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


def one_of(name: str, value, options) -> None:
    """Refuse a constructor choice that is not one of ``options``, naming the argument."""
    if value not in options:
        raise ValueError(f"{name} must be one of {list(options)}, got {value!r}")


@dataclass(frozen=True)
class PublicSource:
    """A public data set a teaching widget can add to its session; each family's subclass adds
    the public facts it needs.

    Attributes
    ----------
    title : str
        Shown in the data dropdown.
    make : callable ``(n, rng) -> data``
        Builds the data (public: a teaching example).
    fixed_n : bool
        The data have their own size (a real data set), ignoring the widget's ``n``.
    """

    title: str
    make: Callable[[int, np.random.Generator], object]
    fixed_n: bool = field(default=False, kw_only=True)


class ReleaseWidget(TemplateSteps, ReleaseStatus, AccuracyMixin, OfflineBokehMixin, w.VBox):
    """Base of every dpwidgets widget: a session, controls, a figure and one Release button.

    The controller contract
    -----------------------
    A family's widget is a thin controller between its controls, the door (``session``) and
    its display. It overrides public hooks only; the base's private methods are the steps
    that call them (overriding one of those is deprecated and warns).

    ``params`` (required)
        The mechanism parameters the controls describe (all public).
    ``compute()`` and ``draw(*drawn, where=)``
        The engine part of a redraw and its drawing: what the default :meth:`draw_live` and
        :meth:`draw_preview` combine.
    ``draw_live()``, ``draw_preview()``, ``draw_release(release)``
        Teaching: rerun on the public data and draw; analyst: a free preview on the stand-in;
        analyst: draw a paid release's DP output (nothing computed from the data).
    ``refusal()``, ``release_refusal()``, ``number_controls()``
        Checks beyond each control's range, for every redraw or for a release only, and the
        controls :meth:`problem` checks.
    ``redraw()``, ``controls_changed(change)``, ``data_changed(change)``, ``select_data()``,
    ``rerun()``
        Redraw from the controls now; a control moved (default: recompute after the
        debounce); the data chooser moved; switch to the data chosen; the teaching Rerun.
    ``update_banner()``, ``live_status(releases)``, ``preview_status(what)``
        The guarantee banner and the status line of a live run or a preview.
    ``make_release()``
        The door call the Release button makes.

    The accuracy panel is given, not overridden: :attr:`accuracy_model` (a property, or an
    attribute set before ``_assemble``) is an :class:`~dpwidgets.ui.accuracy.Accuracy`.

    Attributes
    ----------
    session : Session
        The only door to the data.
    last_release : Release or None
        The last paid release (analyst) or live run (teaching) made by this widget; never a
        preview.
    banner, message, status, stats, quality, epsilon_note : ipywidgets.HTML
        The guarantee banner, the last error or confirmation, what is on screen (live run,
        PREVIEW on the stand-in, released output), summary numbers, quality measures, and the
        guardrail beside ε.
    release_button : ipywidgets.Button
        States the exact parameters and cost of the release it would make.
    """

    #: The session mechanism the Release button runs (a property where a control chooses it).
    mechanism: str = ""
    #: What the button calls it ("SVT standard").
    title: str = ""
    session: Session
    dataset: str | None = None

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        warn_renamed_hooks(cls, "ReleaseWidget", {
            private: f"override the public hook {public!r} instead"
            for private, public in _LEGACY_HOOKS.items()})

    # -- construction ----------------------------------------------------------------------
    def _setup(self, session: Session, *, debounce: float = 0.15, callback=None) -> None:
        """Create the shared parts; call first in a subclass's ``__init__``."""
        self.session = session
        self._rng = np.random.default_rng(session.rng.integers(2**63))
        self._run = 0
        self._release: Release | None = None  # the release drawn now (analyst)
        self._released_as = ""  # its widget parameters (canonical), for the button
        self.last_release: Release | None = None
        self.quality_values: dict[str, float] = {}
        self.banner, self.message, self.status, self.stats, self.quality, self.epsilon_note = (
            w.HTML() for _ in range(6))
        for widget, css in ((self.banner, "dpw-banner"), (self.message, "dpw-message"),
                            (self.status, "dpw-status"), (self.stats, "dpw-stats"),
                            (self.quality, "dpw-quality"), (self.epsilon_note, "dpw-guardrail")):
            widget.add_class(css)
        self.release_button = w.Button(
            description="Release (spends ε)" if not session.teaching else "Rerun (fresh noise)",
            button_style="warning" if not session.teaching else "",
            icon="lock-open" if not session.teaching else "refresh",
            layout=w.Layout(width="auto"),  # the default 148 px cut the label
        )
        self.release_button.add_class("dpw-release")
        # Beside the button, the status takes the rest of the row (its own line if too narrow).
        self.status.layout.flex = "1 1 260px"
        self.release_button.on_click(self._on_release_clicked)
        # "Copy the code": the Session API lines of the release the button would make.
        self.code_box = w.Textarea(layout=w.Layout(width="100%", height="8em"))
        self.code_box.add_class("dpw-code")
        self._code_panel = w.Accordion(children=[self.code_box], selected_index=None,
                                       titles=("Code: this release from the Session API",))
        self._debouncer = Debouncer(_in_one_patch(callback or self._recompute), debounce)

    def _data_dropdown(self, dataset: str | None, choice: str | None, sources: dict, *,
                       needs: str, what: str = "data", width: str = "700px") -> w.Dropdown:
        """The data chooser: the analyst's dataset, or (teaching) the public examples.

        ``sources`` maps a key to an object with a ``title``; ``needs`` says what an analyst
        session must pass as ``dataset=``.
        """
        options: list[tuple[str, str]] = []
        if dataset is not None:
            options.append((f"dataset {dataset!r}", f"dataset:{dataset}"))
        elif not self.session.teaching:
            raise ValueError(f"an analyst session needs dataset= ({needs})")
        elif choice not in sources:
            raise ValueError(f"{what} must be one of {sorted(sources)}, got {choice!r}")
        if self.session.teaching:
            options += [(src.title, key) for key, src in sources.items()]
        dropdown = w.Dropdown(
            options=options, value=options[0][1] if dataset is not None else choice,
            description="stream" if what == "stream" else "data",
            disabled=not self.session.teaching, style={"description_width": "initial"},
            layout=w.Layout(width=width))
        dropdown.add_class("dpw-scenario")
        return dropdown

    def _assemble(self, children: list, *css: str) -> None:
        """Lay the widget out (``VBox`` children, then the code panel) and tag it with its CSS
        classes and mode."""
        try:
            coded = bool(self.mechanism)
        except Exception:  # noqa: BLE001 -- a mechanism chosen by a control not set yet
            coded = False
        style = w.HTML(STYLE, layout=w.Layout(display="none"))
        accuracy = self._accuracy_panel()  # analyst mode, where the widget gives its values
        children = [*children, accuracy] if accuracy is not None else list(children)
        super().__init__([*children, self._code_panel, style] if coded else [*children, style])
        legible_layout(self)
        self.add_class("dpw-widget")
        for name in css:
            self.add_class(name)
        self.add_class(f"dpw-mode-{self.session.mode}")

    # -- to be specialised -----------------------------------------------------------------
    @property
    def params(self) -> dict:
        """The mechanism parameters the controls describe (all public)."""
        raise NotImplementedError

    #: What the preview's status says the stand-in shares with the data ("same shape").
    stand_in_note: str = ""

    def compute(self) -> tuple:
        """The engine part of a redraw, for the default :meth:`draw_live` /
        :meth:`draw_preview`: ``(*drawn, where)``, drawn by ``self.draw(*drawn, where=where)``.
        Teaching: live releases (kept in ``self._last_releases``); analyst: previews on the
        stand-in."""
        raise NotImplementedError

    def draw(self, *drawn, where: str) -> None:
        """Draw what :meth:`compute` returned (``where``: ``"teaching"``, ``"preview"`` or
        ``"release"``)."""
        raise NotImplementedError

    def draw_live(self) -> None:
        """Teaching: rerun on the (public) data through ``session.release`` and draw.
        Default: draw :meth:`compute` and say what its releases charged."""
        *drawn, where = self.compute()
        self._show(*drawn, where=where)
        self._live_status(self._last_releases)

    def draw_preview(self) -> None:
        """Analyst: run on the public stand-in (free) and draw it, labelled as a preview.
        Default: draw :meth:`compute` and say that it is a preview."""
        *drawn, where = self.compute()
        self._show(*drawn, where=where)
        self._preview_status(self.stand_in_note)

    def draw_release(self, release: Release) -> None:
        """Analyst: draw a paid release's DP output (nothing computed from the data)."""
        raise NotImplementedError

    def refusal(self) -> str | None:
        """A reason to refuse the current controls beyond their ranges (``None``: none)."""
        return None

    def release_refusal(self) -> str | None:
        """A reason to refuse a release (not a preview) of the current controls."""
        return None

    def number_controls(self) -> list:
        """The number controls checked before anything runs (default: all attributes that
        are sliders or number boxes)."""
        found = [value for value in vars(self).values()
                 if isinstance(value, SliderText | _PassThrough)]
        split = getattr(self, "split", None)
        if isinstance(getattr(split, "share", None), _PassThrough):
            found.append(split.share)
        return found

    def select_data(self, *args, **kwargs) -> None:
        """Switch to the data the chooser names (a widget with a data chooser)."""
        raise NotImplementedError

    # -- checks ----------------------------------------------------------------------------
    def problem(self) -> str | None:
        """What is wrong with the controls now, naming the control and what it accepts."""
        for control in self._controls():
            if control.layout.display == "none" or getattr(control, "disabled", False):
                continue
            text = control_problem(control)
            if text:
                return text
        return self._refusal()

    def cost(self) -> float:
        """The exact ε a release with the current parameters would charge."""
        return self.session.cost(self.dataset, self.mechanism, **self.params)

    @property
    def unit(self) -> str:
        """The privacy unit the data owner declared: ``"row"`` (default) or ``"person"``."""
        unit = getattr(self.session, "unit", None)
        return unit(self.dataset) if unit is not None and self.dataset is not None else "row"

    @property
    def per_unit(self) -> str:
        """"per row" or "per person": how every guarantee sentence ends."""
        return f"per {self.unit}"

    def facts(self) -> dict:
        """The public facts the data owner declared with the dataset (read-only here)."""
        facts = getattr(self.session, "facts", None)
        return dict(facts(self.dataset)) if facts is not None and self.dataset else {}

    # -- events ----------------------------------------------------------------------------
    #: True while code (not the user) sets controls: their notifications are ignored.
    _syncing = False

    @contextlib.contextmanager
    def _setting(self):
        """Set controls from code: their notifications are ignored meanwhile (:meth:`_quiet`)."""
        self._syncing = True
        try:
            yield
        finally:
            self._syncing = False

    def _watch(self, handler, *controls) -> None:
        """Call ``handler(change)`` whenever one of ``controls`` changes value (its figure
        changes reach the browser as one patch: :func:`~._bokeh.one_patch`)."""
        handler = _in_one_patch(handler)
        for control in controls:
            control.observe(handler, names="value")

    def _quiet(self, change) -> bool:
        """Whether to ignore a notification: code syncing the controls, or the browser's echo."""
        return self._syncing or is_echo(change)

    def controls_changed(self, change=None) -> None:
        """A control moved: the release on screen no longer describes the controls; recompute
        after the debounce."""
        if self._quiet(change):
            return
        self._release = None
        self._debouncer.trigger()

    def data_changed(self, change=None) -> None:
        """The data chooser moved: switch the data (:meth:`select_data`), then recompute."""
        self._select_data()
        self._on_change()

    def _on_release_clicked(self, _button=None) -> None:
        with one_patch():
            if self.session.teaching:
                self._run += 1
                self._rerun()
            else:
                self.release()

    def rerun(self) -> None:
        """Teaching: the Rerun button (fresh noise): redraw now."""
        self._recompute()

    # -- the branch ------------------------------------------------------------------------
    def redraw(self) -> None:
        """Redraw from the controls: a live release (teaching) or a free preview (analyst).
        A bad control value is refused with a message; nothing runs then."""
        self._update_banner()
        self._accuracy_stale()
        problem = self.problem()
        if problem:
            self._refuse(problem)
            return
        try:
            remaining = None if self.session.teaching else self.session.remaining(self.dataset)
            note = epsilon_guardrail(self.cost(), remaining)
            self.epsilon_note.value = f"<span class='dpw-note'>{html.escape(note)}</span>"
            if self.session.teaching:
                self._live()
            else:
                self._preview()
        except CAUGHT as exc:
            self._show_error(exc)
        self._update_button()

    def release(self) -> Release | None:
        """Analyst mode: release the current parameters (charged once; replays are free).

        Errors (a bad control value, over budget, refused, failed) are shown in ``message``;
        nothing is charged then and ``None`` is returned.
        """
        problem = self.problem() or self._release_refusal()
        if problem:
            self._refuse(problem)
            return None
        # A release can take seconds (it runs on the whole table): say so while it runs, and
        # let nobody click again meanwhile.
        self.release_button.disabled = True
        before = self.status.value
        try:
            with ReleaseProgress(self.status) as shown, reporting(shown.step):
                release = self._make_release()
        except CAUGHT as exc:
            self._show_error(exc)
            self.status.value = before  # still what is on screen
            return None
        finally:
            self.release_button.disabled = False
        self._release = self.last_release = release
        self._released_as = canonical(self.params)  # what the button compares with
        what = (f"charged ε = {fmt(release.epsilon)}" if release.charged
                else "replayed a cached release: free, nothing spent")
        self.message.value = (f"<div class='dpw-ok'>Released. {html.escape(release.label)}: "
                              f"{what}.</div>")
        self._draw_release(release)
        self._accuracy_stale("A release was made (the budget left changed)")
        self.status.value = fold(
            "<span class='dpw-released'>Showing the released DP output "
            f"(ε = {fmt(release.epsilon)}-DP {html.escape(self.per_unit)}).</span>",
            f"Guarantee: {html.escape(self._guarantee_of(release))}.")
        self._update_button()
        return release

    def make_release(self) -> Release:
        """The door call the Release button makes (the current mechanism and parameters)."""
        return self.session.release(self.dataset, self.mechanism, **self.params)

    def _live_release(self, mechanism: str | None = None, **params) -> Release:
        """Teaching: one live run (charged to the teaching ledger); kept as ``last_release``."""
        release = self.session.release(self.dataset, mechanism or self.mechanism,
                                       run=self._run, **(params or self.params))
        if mechanism is None or mechanism == self.mechanism:
            self.last_release = release
        return release

    def _preview_run(self, mechanism: str | None = None, **params) -> Release:
        """Analyst: one preview on the public stand-in (free): a ``Release`` with
        ``preview == True``, ``.output`` (what a release would publish) and ``.result`` (the
        engine's full result on the stand-in). Never stored as ``last_release``."""
        return self.session.preview(self.dataset, mechanism or self.mechanism, rng=self._rng,
                                    **(params or self.params))
