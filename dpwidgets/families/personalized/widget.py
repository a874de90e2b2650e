"""PersonalizedWidget: one privacy budget per record (Li 2017, Ch. 5).

A table of records ``[value, budget]`` -- the value confidential, the budget the record's owner
asked for, public -- is released as a histogram of the values under personalized differential
privacy, through the session mechanism ``"personalized_histogram"``
(:mod:`dpwidgets.families.personalized.spec`). The widget shows

- the **privacy vector**: how many records ask for which budget (Li 2017, §5.3.1's uniform and
  normal vectors, or a custom mixture of conservative / moderate / liberal users);
- the **partitions** each mechanism forms, as strips on the axis of records sorted by budget:
  Minimum (one release at the smallest budget), Sampling (one release at ε_T on a sample;
  Li 2017, Def. 5.1.1), privacy-aware partitioning (Alg. 10) and utility-based partitioning
  (Alg. 11), Threshold (the records below ε_T unused);
- the budget each record **enjoys** against the one it **asked** for (the selected method),
  the gap shaded: the willingness a mechanism leaves unused;
- the histogram (DP estimate, and the data it estimates where that may be shown) and the
  **relative frequency error** of random range counts (Li 2017, §5.3.1) of every mechanism against
  the sampling threshold ε_T (Li 2017, Fig. 5.2-5.5: the partitioning methods are horizontal lines,
  Sampling's error traces a curve as ε_T moves).

Everything about partitions and enjoyed budgets is computed from the public privacy vector
(:func:`dpwidgets.families.personalized.params.release_plan`) and costs nothing.

Teaching mode (public data): every control change is a live release of every compared
mechanism, each charged to the teaching ledger (its largest per-record loss), and the errors are
measured against the data. On the built-in data the privacy-vector control chooses what the
records ask for; the table's own budget column there is 1 for everyone (Li 2017, §5.3.1's most
liberal budget), the most any what-if vector may ask. Analyst mode (confidential data): the
privacy vector is the dataset's own (public) one, control changes drive a free preview on the
public stand-in (same size, same privacy vector), errors measured on the stand-in; only Release
spends, on the selected mechanism, and draws its DP output only -- no value, no true count.

The widget is a controller between its controls, the door and the display: its controls are
built in :mod:`~dpwidgets.families.personalized.controls`, its public data sets and what it
knows of a table in :mod:`~dpwidgets.families.personalized.sources`, the privacy vector in force
in :mod:`~dpwidgets.families.personalized.vectors`, its text in
:mod:`~dpwidgets.families.personalized.text`, and the error measure (the one use of the engine)
in :mod:`~dpwidgets.families.personalized.preview`.

Examples
--------
>>> from dpwidgets import Session
>>> from dpwidgets.families.personalized.widget import PersonalizedWidget
>>> s = Session(mode="teaching", seed=1)
>>> w = PersonalizedWidget(s, data="age", n=2000, compare=False, debounce=0)
>>> w.params["method"], w.params["budgets"].array.size
('utility', 2000)
>>> w.close(); s.close()
"""

from __future__ import annotations

import numpy as np

from ...session import Release, Session
from ...ui import figures
from ...ui.accuracy import Accuracy
from ...ui.base import CAUGHT, ReleaseWidget, one_of
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from . import display
from .controls import COMPARED, ROUNDS, PersonalizedControls
from .display import _THRESHOLDED  # the methods with a sampling threshold ε_T
from .params import PersonalizedHistogramParams, PrivacyVector, release_plan
from .preview import ErrorMeasure, Trail, bin_counts
from .sources import DATASETS, PRIVACY, DataFacts, ValueSource, builtin_facts, dataset_facts
from .spec import covered
from .text import (
    ABOVE_PUBLIC_VECTOR,
    METHODS,
    NO_SHARE,
    banner_html,
    most_epsilon_text,
    quality_html,
    stats_text,
)
from .vectors import PrivacyVectors, vector_key

__all__ = ["COMPARED", "DATASETS", "METHODS", "PRIVACY", "PersonalizedWidget", "ValueSource"]

MECHANISM = "personalized_histogram"
#: Candidate cuts of the partitioning dynamic programme (the engine's default is 1,024): fewer
#: quantile cuts partition many continuous budgets much faster, at a barely measurable loss in
#: Alg. 10's wasted budget and Alg. 11's utility on Li 2017, §5.3.1's vectors
#: (benchmarks/personalized_widget_redraw.py measures both).
MAX_GROUPS = 256


class PersonalizedWidget(ReleaseWidget):
    """Personalized DP: privacy vector, partitions, enjoyed budgets and accuracy (Li 2017, Ch. 5).

    Parameters
    ----------
    session : Session
        Holds the table ``[value, budget]`` and its budget.
    dataset : str, optional
        A table in the session (two columns: value, then the public budget each record asked
        for). Required in analyst mode (its public stand-in -- whose second column must be the
        same privacy vector, see :func:`~dpwidgets.families.personalized.standins.personalized_stand_in` -- is what previews
        use). In teaching mode without one, a public table is added
        (``data``).
    data : {"census", "age"}
        Teaching mode: the public values to start with (:data:`DATASETS`).
    n : int
        Number of records of the built-in data (Li 2017, §5.3.1: 100,000).
    privacy : str
        Teaching mode, built-in data: the privacy vector (a key of :data:`PRIVACY`).
    groups : sequence of (share, low, high), optional
        The custom privacy vector's three groups (default :data:`DEFAULT_GROUPS`).
    budgets : array_like, optional
        The public privacy vector of ``dataset`` (default: the stand-in's budget column in
        analyst mode, the table's in teaching mode).
    bins : int or array_like, optional
        Public bin edges (or a number of bins over ``value_range``) for ``dataset``. Required
        in analyst mode; teaching mode default: 40 bins over the data's range.
    value_range : (float, float), optional
    shape : tuple of int, optional
        The grid the bins flatten (range queries become boxes on it); default 1-D.
    method : str
        The mechanism shown (a key of :data:`METHODS`) and, in analyst mode, released.
    threshold : float, optional
        ε_T; default the mean budget (``auto_threshold`` checked).
    rounds : int
        T of T-round partitioning (Li 2017, §5.2.3).
    epsilon : float, optional
        A cap on what any record may spend (the ledger charge is at most this); default none.
    compare : bool
        Run the text's four mechanisms side by side (teaching: each a charged release;
        analyst: previews, never released).
    n_queries : int
        Random range-count queries of the error measure (fixed per widget).
    max_groups : int
        Candidate cuts of the partitioning methods (:data:`MAX_GROUPS`; the engine's
        ``max_groups``).
    debounce : float
        Seconds of quiet before recomputing in a kernel (0: at once).

    Attributes
    ----------
    controls : ~.controls.PersonalizedControls
        The controls (each also an attribute of the widget: ``privacy``, ``group_share``,
        ``group_range``, ``groups_box``, ``method``, ``compare``, ``threshold``,
        ``auto_threshold``, ``rounds``, ``epsilon``, ``no_cap``, ``show_truth``).
    figure : ~.display.PersonalizedFigure
        Sources ``vector``, ``sorted``, ``shading``, ``strips``, ``truth``, ``private``,
        ``levels``, ``current``, ``trail``.
    quality_values : dict
        Teaching / preview: the relative frequency error of every shown method (by short name).
    outputs : dict
        The DP outputs drawn last, by method.
    plans : dict
        The public release plans drawn last, by method.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import PersonalizedWidget
    >>> session = Session("teaching", seed=0)
    >>> widget = PersonalizedWidget(session, n=2000, compare=False, debounce=0)
    >>> session.datasets, widget.method.value
    (['census_2000'], 'utility')
    """

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        data: str = "census",
        n: int = 100_000,
        privacy: str = "normal",
        groups=None,
        budgets=None,
        bins=None,
        value_range=None,
        shape: tuple[int, ...] | None = None,
        method: str = "utility",
        threshold: float | None = None,
        rounds: int = 1,
        epsilon: float | None = None,
        compare: bool = True,
        n_queries: int = 1000,
        max_groups: int = MAX_GROUPS,
        debounce: float = 0.15,
    ):
        one_of("method", method, METHODS)
        one_of("privacy", privacy, PRIVACY)
        self._setup(session, debounce=debounce)
        self.n_queries = int(n_queries)
        self.max_groups = int(max_groups)
        self._facts: dict[str, DataFacts] = {}
        self._vectors = PrivacyVectors()
        self._measure = ErrorMeasure(self.n_queries)
        self._trail = Trail()
        self._previews: dict[str, dict] = {}
        self.outputs: dict[str, dict] = {}
        self.plans: dict = {}
        self._last_releases: list[Release] = []

        if dataset is not None:
            self._facts[f"dataset:{dataset}"] = dataset_facts(
                session, dataset, budgets, bins, value_range, shape)
        self.n = int(n)
        self.data = self._data_dropdown(
            dataset, data, DATASETS, width="640px",
            needs="a table [value, budget] added with session.add_dataset and a public stand_in")
        c = self.controls = PersonalizedControls.build(
            teaching=session.teaching, groups=groups, method=method, compare=compare,
            threshold=threshold, rounds=rounds, epsilon=epsilon)
        self.privacy, self.group_share, self.group_range, self.groups_box = (
            c.privacy, c.group_share, c.group_range, c.groups_box)
        self.method, self.compare, self.threshold, self.auto_threshold = (
            c.method, c.compare, c.threshold, c.auto_threshold)
        self.rounds, self.epsilon, self.no_cap, self.show_truth = (
            c.rounds, c.epsilon, c.no_cap, c.show_truth)
        self._privacy_choice = privacy
        self.figure = display.personalized_figure()
        self._assign = display.ChangedSources(self.figure)
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        self.select_data()

        box = c.layout(self.data, self.release_button, self.status, self.epsilon_note)
        self._assemble([self.banner, box, self.message, self.plot, self.quality, self.stats],
                       "dpw-personalized")
        self._watch(self.controls_changed, *c.watched())
        self._watch(self._on_threshold, self.threshold)
        self._watch(self.data_changed, self.data)
        self.redraw()

    # -- data ------------------------------------------------------------------------------
    def select_data(self) -> None:
        value = self.data.value
        if value not in self._facts:
            self._facts[value] = builtin_facts(self.session, value, self.n)
        facts = self._facts[value]
        self.dataset = facts.name
        self.edges = np.asarray(facts.edges, dtype=float)
        self.shape = facts.shape
        self.n_records = self.session.shape(self.dataset)[0]
        self._builtin = facts.builtin
        with self._setting():
            self.controls.offer_privacy(self._builtin, self._privacy_choice)
        self.figure.panels["histogram"].xaxis.axis_label = facts.axis

    # -- the privacy vector ----------------------------------------------------------------
    def number_controls(self) -> list:
        """The base's controls, and the per-group sliders while the custom vector is chosen."""
        found = super().number_controls()
        if self.privacy.value == "custom":
            found += [*self.group_share, *self.group_range]
        return found

    def refusal(self) -> str | None:
        return NO_SHARE if self.controls.no_share() else None

    def release_refusal(self) -> str | None:
        """A privacy vector above the public one (the stand-in's budget column in analyst mode,
        the public table's in teaching mode) is refused before anything is sent: the door never
        compares it with the data (a record whose column is below what a release gives it is
        left out of the counts inside the run)."""
        table = (self.session.public_view(self.dataset) if self.session.teaching
                 else self.session.stand_in(self.dataset))
        if table is None or np.shape(table) != (self.budgets.array.size, 2):
            return None
        if np.any(~covered(table[:, 1], self.budgets.array)):
            return ABOVE_PUBLIC_VECTOR
        return None

    @property
    def budgets(self) -> PrivacyVector:
        """The privacy vector in force (public): what every record asks of this release."""
        choice = self.privacy.value
        key = vector_key(self.dataset, choice,
                         self.controls.groups() if choice == "custom" else ())
        return self._vectors.vector(key, self.n_records, self._facts[self.data.value].vector)

    @property
    def cap(self) -> float:
        """The cap ε on what any record may spend (the largest budget when there is none)."""
        top = self._vectors.largest(self.budgets)
        return top if self.no_cap.value else min(float(self.epsilon.value), top)

    # -- parameters ------------------------------------------------------------------------
    def params_for(self, method: str) -> dict:
        """The session parameters of ``method`` from the controls (all public)."""
        p = {"epsilon": self.cap, "budgets": self.budgets, "bins": self.edges, "method": method,
             "max_groups": self.max_groups}
        if method in _THRESHOLDED:
            p["threshold"] = float(self.threshold.value)
        if method in ROUNDS:
            p["rounds"] = int(self.rounds.value)
        return p

    @property
    def params(self) -> dict:
        """Parameters of the selected mechanism's release (all public)."""
        return self.params_for(self.method.value)

    def shown(self) -> list[str]:
        """The mechanisms drawn: the selected one, and the text's four when comparing."""
        return self.controls.shown()

    def plan_for(self, method: str):
        """The public release plan of ``method`` (validated parameters; costs nothing)."""
        p = PersonalizedHistogramParams.validate(self.params_for(method), (self.n_records, 2))
        return release_plan(p), p

    # -- events ----------------------------------------------------------------------------
    def controls_changed(self, change=None) -> None:
        if not self._quiet(change) and self.privacy.value != "dataset":
            self._privacy_choice = self.privacy.value
        super().controls_changed(change)

    def _on_threshold(self, change=None) -> None:
        if self._quiet(change):
            return
        if self.auto_threshold.value:
            with self._setting():
                self.auto_threshold.value = False
        self.controls_changed()

    def redraw(self) -> None:
        if self.problem():  # refused before the privacy vector is built from the controls
            super().redraw()
            return
        try:
            capped = np.minimum(self.budgets.array, self.cap)
            with self._setting():  # fit ε_T's slider to the (capped) budgets
                self.controls.fit_threshold(capped)
            self.controls.show_what_applies()
        except CAUGHT as exc:
            self._show_error(exc)
            return
        super().redraw()

    # -- actions ---------------------------------------------------------------------------
    mechanism = MECHANISM
    stand_in_note = "same size, same privacy vector"

    @property
    def title(self) -> str:
        return METHODS[self.method.value]

    def draw_release(self, release: Release) -> None:
        """Analyst: the selected mechanism's output (the comparisons are never released).
        Charged the largest budget any record enjoys."""
        self.draw({self.method.value: release.output}, None, where="release")

    # -- accuracy before spending (analyst) -------------------------------------------------
    @property
    def accuracy_model(self) -> Accuracy:
        """The accuracy panel's strategy (an :class:`~dpwidgets.ui.accuracy.Accuracy`)."""
        what = "the selected mechanism's count in each bin (the histogram's DP estimate)"
        return Accuracy(what, bin_counts, self._stand_in_counts,
                        limit=self._most_epsilon, band=self._histogram_band)

    def _stand_in_counts(self) -> np.ndarray:
        """The stand-in's own histogram on the same bins."""
        return self._measure.reference(self.session.stand_in(self.dataset), self.edges)

    def _most_epsilon(self) -> tuple[float, str]:
        """A cap above the largest budget asked for changes nothing: each record spends at
        most its own budget, so more of the dataset's budget cannot buy more accuracy."""
        top = self._vectors.largest(self.budgets)
        return top, most_epsilon_text(top)

    def _histogram_band(self, preview) -> None:
        """The band around the DP histogram (removed with None)."""
        band = () if preview is None else (self.edges, preview.now.low, preview.now.high)
        figures.update(self.figure, display.histogram_band_data(*band))

    # -- computing and drawing ---------------------------------------------------------------
    def compute(self) -> tuple[dict[str, dict], np.ndarray | None, str]:
        """The engine part of a redraw: the DP outputs by method, the reference histogram the
        errors are measured against (data in teaching, stand-in in a preview) and where.

        Teaching: live releases through the session (charged). Analyst: previews on the
        stand-in (free).
        """
        ds = self.dataset
        outputs: dict[str, dict] = {}
        if self.session.teaching:
            self._last_releases = []
            for m in self.shown():
                release = self._live_release(MECHANISM, **self.params_for(m))
                self._last_releases.append(release)
                outputs[m] = release.output
            return (outputs, self._measure.reference(self.session.public_view(ds), self.edges),
                    "teaching")
        for m in self.shown():
            params = self.params_for(m)
            # A mechanism whose parameters did not change keeps its preview (moving ε_T
            # re-runs Sampling only), as a teaching release would be replayed from the cache.
            key = self.session.preview_key(ds, MECHANISM, **params)
            if key not in self._previews:
                if len(self._previews) > 16:
                    self._previews.clear()
                self._previews[key] = self._preview_run(MECHANISM, **params).output
            outputs[m] = self._previews[key]
        return outputs, self._measure.reference(self.session.stand_in(ds), self.edges), "preview"

    def draw(self, outputs: dict[str, dict], reference: np.ndarray | None, *,
              where: str) -> None:
        selected = self.method.value
        vector = self.budgets
        derived = self._vectors.derive(vector)
        plans = {m: self.plan_for(m)[0] for m in self.shown()}
        self.plans = plans
        self.outputs = outputs
        values: dict[str, float] = {}
        levels, current, trail_key = {}, {}, None
        if reference is not None:
            values, levels, current = self._measure.errors(
                outputs, reference, edges=self.edges, shape=self.shape,
                n=float(vector.array.size))
            trail_key = (self.dataset, str(vector), self.cap, where)
        trail = self._trail.follow(trail_key, current)
        show_ref = reference is not None and (where != "teaching" or self.show_truth.value)
        shown = display.PersonalizedDisplay.from_outputs(
            outputs, plans, selected=selected, budgets=vector.array,
            cap=self.cap, edges=self.edges, reference=reference if show_ref else None,
            levels=levels, current=current, trail=trail, where=where,
            order=derived["order"], vector_plot=derived["plot"])
        shown.draw(self.figure, assign=self._assign)
        self.quality_values = values
        self.quality.value = quality_html(values, plans, vector.array, where, self.n_queries)
        self._set_stats(where, stats_text(plans[selected]), outputs[selected]["guarantee"])

    # -- text ------------------------------------------------------------------------------
    def update_banner(self) -> None:
        self.banner.value = banner_html(self.method.value, self.per_unit)
