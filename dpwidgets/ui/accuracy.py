"""Accuracy before spending: what a release at the chosen ε is expected to look like.

An analyst tuning a release sees a preview on the public stand-in: one draw of the noise. One
draw says little about the next one. Following ViP (Nanayakkara, Bater, He, Hullman & Rogers
2022, "Visualizing Privacy-Utility Trade-Offs in Differentially Private Data Releases", PoPETs
2022(2)), :class:`AccuracyPreview` runs the mechanism ``runs`` times on the stand-in at
the chosen ε and reports the spread of the values a widget plots -- how far a release is
expected to land from the stand-in's own noiseless answer -- and the same at the ε the rest of
the budget would buy. Everything is computed from public things only: the stand-in, the
parameters and the budget left (the ledger's own number, shown by the meter already); previews
charge nothing, and the noise of these runs comes from the widget's preview generator (the
stand-in is public, so a seed reveals nothing).

The band is the 5th to 95th percentile of each plotted value over the runs (``Spread.low``,
``Spread.high``: what a figure can shade); the summary is the median over plotted values of
the half-width of that band, and the median absolute error against the noiseless answer when
the widget gives one.
"""

from __future__ import annotations

import html
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .._moved import warn_renamed_hooks

__all__ = ["Accuracy", "AccuracyPreview", "Spread", "accuracy_preview", "spread"]

#: Runs per ε: enough for a 90% band of each plotted value (about two draws lie outside it).
RUNS = 20


@dataclass(frozen=True)
class Spread:
    """The spread of ``runs`` previews at one ε.

    Attributes
    ----------
    epsilon : float
        The ε of the runs (the mechanism's parameter, not the charge).
    low, high : numpy.ndarray
        Per plotted value, the 5th and 95th percentile over the runs: the band.
    half_width : float
        The median over plotted values of ``(high - low) / 2``.
    error : float or None
        The median over runs and values of ``|value - noiseless|`` (None without a noiseless
        answer).
    runs : int
    """

    epsilon: float
    low: np.ndarray
    high: np.ndarray
    half_width: float
    error: float | None
    runs: int


def spread(run: Callable[[float, np.random.Generator], np.ndarray], epsilon: float,
           rng: np.random.Generator, *, runs: int = RUNS,
           noiseless: np.ndarray | None = None) -> Spread:
    """Run ``run(epsilon, rng)`` (one preview on the stand-in, returning the plotted values)
    ``runs`` times and summarise the spread (see :class:`Spread`)."""
    draws = np.array([np.asarray(run(epsilon, rng), dtype=float).ravel() for _ in range(runs)])
    finite = np.isfinite(draws)
    draws = np.where(finite, draws, np.nan)
    # A value no run gave (NaN: e.g. a grid point outside every private curve) has no band;
    # numpy's "All-NaN slice" warning about it is not the user's business.
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        low, high = np.nanquantile(draws, [0.05, 0.95], axis=0) if finite.any() else (
            np.full(draws.shape[1], np.nan),) * 2
    widths = (high - low) / 2.0
    half = float(np.nanmedian(widths)) if np.isfinite(widths).any() else float("nan")
    error = None
    if noiseless is not None:
        truth = np.asarray(noiseless, dtype=float).ravel()
        if truth.size == draws.shape[1]:
            gaps = np.abs(draws - truth)
            error = float(np.nanmedian(gaps)) if np.isfinite(gaps).any() else None
    return Spread(float(epsilon), low, high, half, error, runs)


def _g3(x: float) -> str:
    if x is None or not np.isfinite(x):
        return "–"
    return f"{x:,.3g}" if abs(x) >= 1000 else f"{x:.3g}"


@dataclass(frozen=True)
class AccuracyPreview:
    """What a release at the chosen ε, and at the ε the rest of the budget buys, is expected
    to look like (:func:`spread` of each). ``rest`` is None when the budget left buys no more
    than the chosen ε (or nothing at all)."""

    now: Spread
    rest: Spread | None
    what: str  # what the plotted values are ("the estimates per step")
    remaining: float  # the budget left, as the ledger charges it
    #: Why ``rest`` stops short of what the budget left buys (or is None although budget is
    #: left): the mechanism cannot use more ε ("no record asks for more"); "" when only the
    #: budget limits it.
    limit: str = ""

    def html(self) -> str:
        """One line and a folded table, for the widget."""
        now = self.now
        line = (f"<b>Accuracy before spending</b> (ViP): at ε = {_g3(now.epsilon)}, 90% of "
                f"releases put {html.escape(self.what)} within ±{_g3(now.half_width)} of each "
                f"other")
        if now.error is not None:
            line += f"; typical error against the stand-in's noiseless answer {_g3(now.error)}"
        line += "."
        if self.rest is not None and self.limit:
            line += (f" The most ε this release can use (ε = {_g3(self.rest.epsilon)}; "
                     f"{html.escape(self.limit)}) would narrow it to "
                     f"±{_g3(self.rest.half_width)}.")
        elif self.rest is not None:
            line += (f" The rest of the budget (ε = {_g3(self.rest.epsilon)} in one release) "
                     f"would narrow it to ±{_g3(self.rest.half_width)}.")
        elif self.limit:
            line += f" More ε would change nothing: {html.escape(self.limit)}."
        elif self.remaining > 0:
            line += " This release would use all that is left of the budget."
        second = "the most it can use" if self.limit else "all that is left"
        rows = [(now, "this release")] + ([(self.rest, second)] if self.rest else [])
        table = "".join(
            f"<tr><td>{label}</td><td>{_g3(s.epsilon)}</td><td>±{_g3(s.half_width)}</td>"
            f"<td>{_g3(s.error) if s.error is not None else '–'}</td></tr>" for s, label in rows)
        details = (
            f"<table class='dpw-accuracy-table'><tr><th></th><th>ε</th><th>90% band</th>"
            f"<th>median |error|</th></tr>{table}</table>"
            f"<div>{now.runs} previews per ε on the public stand-in (free; nothing here is "
            f"computed from the data). The band is each plotted value's 5th-95th percentile "
            f"over the runs; its half-width is the median over the plotted values.</div>")
        return (f"<div class='dpw-accuracy'>{line}<details><summary>how this is computed"
                f"</summary>{details}</details></div>")


def accuracy_preview(run: Callable[[float, np.random.Generator], np.ndarray], epsilon: float,
                     cost: float, remaining: float, rng: np.random.Generator, *, what: str,
                     noiseless: np.ndarray | None = None, runs: int = RUNS,
                     most: tuple[float, str] | None = None) -> AccuracyPreview:
    """:class:`AccuracyPreview` of a mechanism whose charge is proportional to its ε
    (``cost`` at ``epsilon``; a user-level view charges k ε): the rest of the budget buys
    ``epsilon * remaining / cost``.

    ``most``: ``(ε, why)`` when the mechanism cannot use more than that ε whatever the budget
    (a cap no record's own budget exceeds): the second row is at the smaller of the two, and
    is left out, with ``why`` said, when that is no more than ``epsilon``.
    """
    now = spread(run, epsilon, rng, runs=runs, noiseless=noiseless)
    rest, limit = None, ""
    if cost > 0 and remaining > cost * (1 + 1e-9):
        target = epsilon * remaining / cost
        if most is not None and most[0] < target:
            target, limit = float(most[0]), str(most[1])
        if target > epsilon * (1 + 1e-9):
            rest = spread(run, target, rng, runs=runs, noiseless=noiseless)
    elif most is not None and most[0] <= epsilon * (1 + 1e-9):
        limit = str(most[1])  # nothing left either way: say what limits it first
    return AccuracyPreview(now, rest, what, float(remaining), limit)


def _nothing(*_args) -> None:
    return None


@dataclass(frozen=True)
class Accuracy:
    """What a widget gives its "accuracy before spending" panel: a strategy, not overrides.

    Parameters
    ----------
    what : str
        What the plotted values are, for the panel's sentence ("the estimates per step").
    values : callable
        ``values(release) -> ndarray``: the values the widget plots for a preview
        :class:`~dpwidgets.mechanism.Release`, in a fixed order across runs.
    noiseless : callable, optional
        ``noiseless() -> ndarray or None``: the stand-in's own answer, aligned with
        ``values`` (public).
    run : callable, optional
        ``run(params, epsilon, rng) -> Release``: one free preview at ``epsilon``, for a
        widget whose preview is more than one door call (a DP fit and the diagnostic on it).
        Default: ``session.preview`` of the widget's mechanism.
    limit : callable, optional
        ``limit() -> (epsilon, why) or None``: the most ε the mechanism can use, whatever the
        budget.
    band : callable, optional
        ``band(preview)``: shade ``preview.now``'s band in the figure; called with None
        whenever the panel is cleared.

    Examples
    --------
    >>> import numpy as np
    >>> model = Accuracy("the counts", values=lambda release: np.asarray(release.output["c"]))
    >>> model.noiseless() is None and model.limit() is None
    True
    """

    what: str
    values: Callable[..., np.ndarray | None]
    noiseless: Callable[[], np.ndarray | None] = _nothing
    run: Callable[..., object] | None = None
    limit: Callable[[], tuple[float, str] | None] = _nothing
    band: Callable[[AccuracyPreview | None], None] = _nothing


#: The hooks a 0.x widget overrode instead of giving an :class:`Accuracy`.
_LEGACY_ACCURACY = ("_accuracy_values", "_accuracy_noiseless", "_accuracy_run",
                    "_accuracy_limit", "_accuracy_band")


class AccuracyMixin:
    """The "accuracy before spending" panel of an analyst widget.

    A widget opts in by setting :attr:`accuracy_model` to an :class:`Accuracy` (the values it
    plots for a preview, optionally the stand-in's noiseless answer, a limit on ε, its own
    preview run and a band to shade) before the panel is built. The button runs :data:`RUNS`
    free previews at the chosen ε and as many at the ε the rest of the budget buys; the panel
    is cleared when a control changes (its figures were for the old parameters).

    Widgets written for 0.x overrode ``_accuracy_values`` and its siblings instead; that still
    works, with a :class:`DeprecationWarning`.
    """

    #: What the widget gives the panel (None: no panel).
    accuracy_model: Accuracy | None = None
    #: What the plotted values are, in the widget's words (what its Accuracy passes on).
    accuracy_what: str = "the plotted values"

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        warn_renamed_hooks(cls, "AccuracyMixin", dict.fromkeys(
            _LEGACY_ACCURACY, "give the widget an Accuracy (accuracy_model) instead"))

    # 0.x hooks, read only for a widget that overrides them (see _accuracy).
    def _accuracy_values(self, release) -> np.ndarray | None:
        return None

    def _accuracy_noiseless(self) -> np.ndarray | None:
        return None

    def _accuracy_run(self, params: dict, epsilon: float, rng: np.random.Generator):
        return self._preview_at(params, epsilon, rng)

    def _accuracy_limit(self) -> tuple[float, str] | None:
        return None

    def _accuracy_band(self, preview: AccuracyPreview | None) -> None:
        pass

    def _accuracy(self) -> Accuracy | None:
        """The widget's :class:`Accuracy`: :attr:`accuracy_model`, or one made of a 0.x
        widget's overrides."""
        if self.accuracy_model is not None:
            return self.accuracy_model
        if type(self)._accuracy_values is AccuracyMixin._accuracy_values:
            return None
        return Accuracy(self.accuracy_what, self._accuracy_values, self._accuracy_noiseless,
                        self._accuracy_run, self._accuracy_limit, self._accuracy_band)

    def _accuracy_panel(self):
        """The button and the panel (analyst mode), or None."""
        import ipywidgets as w

        if self.session.teaching or self._accuracy() is None:
            return None
        self.accuracy = w.HTML()
        self.accuracy.add_class("dpw-accuracy-panel")
        self.accuracy_button = w.Button(
            description=f"Expected accuracy ({2 * RUNS} free previews)", icon="bar-chart",
            layout=w.Layout(width="auto"))
        self.accuracy_button.add_class("dpw-accuracy-button")
        self.accuracy_button.on_click(lambda _b: self.estimate_accuracy())
        self.accuracy_preview: AccuracyPreview | None = None
        return w.VBox([self.accuracy_button, self.accuracy])

    def _accuracy_stale(self, why: str = "The parameters changed") -> None:
        """A control changed (or ``why``: a release spent budget): the panel described other
        parameters, or another budget left."""
        if getattr(self, "accuracy_preview", None) is not None:
            self.accuracy_preview = None
            self._accuracy().band(None)
            self.accuracy.value = (f"<div class='dpw-accuracy'>{html.escape(why)}: estimate "
                                   "the accuracy again.</div>")

    def _preview_at(self, params: dict, epsilon: float, rng: np.random.Generator):
        """One free preview of the widget's mechanism with ``params`` at ``epsilon``."""
        return self.session.preview(self.dataset, self.mechanism, rng=rng,
                                    **{**params, "epsilon": epsilon})

    def estimate_accuracy(self) -> AccuracyPreview | None:
        """Run the previews and show what a release is expected to look like (free)."""
        if self.session.teaching or self.problem():
            return None
        params = dict(self.params)
        if "epsilon" not in params:
            return None
        model = self._accuracy()
        one = model.run or self._preview_at

        def run(epsilon: float, rng: np.random.Generator) -> np.ndarray:
            return model.values(one(params, epsilon, rng))

        self.accuracy_preview = accuracy_preview(
            run, float(params["epsilon"]), float(self.cost()),
            float(self.session.remaining(self.dataset)), self._rng, what=model.what,
            noiseless=model.noiseless(), most=model.limit())
        self.accuracy.value = self.accuracy_preview.html()
        model.band(self.accuracy_preview)
        return self.accuracy_preview
