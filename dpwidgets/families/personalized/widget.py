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

The widget is a controller between its controls, the door and the display: its public data
sets are in :mod:`~dpwidgets.families.personalized.sources`, its text in :mod:`~dpwidgets.families.personalized.text`, and the error measure (the one use of
the engine) in :mod:`~dpwidgets.families.personalized.preview`.

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

import math
import zlib

import ipywidgets as ipw
import numpy as np

from ...session import Release, Session
from ...ui import figures
from ...ui.accuracy import Accuracy
from ...ui.base import CAUGHT, ReleaseWidget, one_of
from ...ui.base import g3 as _fmt
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import FloatRangeSlider, FloatSlider, control_for, slider
from . import display, preview
from .display import _THRESHOLDED  # the methods with a sampling threshold ε_T
from .params import METHOD_LABELS, PersonalizedHistogramParams, PrivacyVector, release_plan
from .sources import (
    DATASETS,
    DEFAULT_GROUPS,
    GROUP_NAMES,
    PRIVACY,
    TEACHING_CEILING,
    ValueSource,
    what_if_budgets,
)
from .spec import covered
from .text import METHODS, banner_html, quality_html, stats_text

__all__ = ["COMPARED", "DATASETS", "METHODS", "PRIVACY", "PersonalizedWidget", "ValueSource"]

MECHANISM = "personalized_histogram"
#: Candidate cuts of the partitioning dynamic programme (the engine's default is 1,024): fewer
#: quantile cuts partition many continuous budgets much faster, at a barely measurable loss in
#: Alg. 10's wasted budget and Alg. 11's utility on Li 2017, §5.3.1's vectors
#: (benchmarks/personalized_widget_redraw.py measures both).
MAX_GROUPS = 256
#: The mechanisms compared side by side (the text's four).
COMPARED = ("minimum", "sampling", "privacy_aware", "utility")
_ORDER = ("minimum", "threshold", "sampling", "privacy_aware", "utility")
_ROUNDS = ("minimum", "privacy_aware", "utility")
_NO_SHARE = ("group shares: all three are 0; accepted: shares in [0, 1], at least one above 0 "
             "(they are normalised to sum to 1).")


def _same_column(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and bool(np.array_equal(a, b))
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_column(x, y) for x, y in zip(a, b, strict=True))
    return a == b


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
        self._syncing = False
        self._facts: dict[str, dict] = {}
        self._vectors: dict[tuple, PrivacyVector] = {}
        self._derived: dict[str, tuple] = {}
        self._references: dict[int, tuple] = {}
        self._queries: dict[tuple, tuple] = {}
        self._trail: dict[float, float] = {}
        self._trail_key: tuple | None = None
        self._drawn: dict[str, dict] = {}
        self._previews: dict[str, dict] = {}
        self.outputs: dict[str, dict] = {}
        self.plans: dict = {}
        self._last_releases: list[Release] = []

        if dataset is not None:
            self._facts[f"dataset:{dataset}"] = self._dataset_facts(
                dataset, budgets, bins, value_range, shape)
        self.n = int(n)
        self.data = self._data_dropdown(
            dataset, data, DATASETS, width="640px",
            needs="a table [value, budget] added with session.add_dataset and a public stand_in")
        self._build_controls(privacy, groups, method, compare, threshold, rounds, epsilon)
        self.figure = display.personalized_figure()
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        self.select_data()

        self._threshold_row = ipw.HBox([self.threshold, self.auto_threshold])
        controls = ipw.VBox([
            self.data,
            self.privacy,
            self.groups_box,
            ipw.HBox([self.method, self.compare, self.show_truth]),
            self._threshold_row,
            ipw.HBox([self.rounds]),
            ipw.HBox([self.epsilon, self.no_cap, self.epsilon_note]),
            ipw.HBox([self.release_button, self.status]),
        ])
        controls.add_class("dpw-controls")
        self._assemble([self.banner, controls, self.message, self.plot, self.quality,
                        self.stats], "dpw-personalized")
        self._watch(self.controls_changed, self.method, self.compare, self.rounds, self.epsilon,
                    self.show_truth, *self.group_share, *self.group_range, self.no_cap,
                    self.auto_threshold, self.privacy)
        self._watch(self._on_threshold, self.threshold)
        self._watch(self.data_changed, self.data)
        self.redraw()

    def _build_controls(self, privacy, groups, method, compare, threshold, rounds,
                        epsilon) -> None:
        """The controls: the privacy vector (and the custom vector's groups), the mechanism and
        its parameters (built from :class:`~dpwidgets.families.personalized.params.PersonalizedHistogramParams`), the cap."""
        style = {"description_width": "initial"}
        self.privacy = ipw.Dropdown(description="privacy vector", style=style,
                                    layout=ipw.Layout(width="520px"))
        self.privacy.add_class("dpw-privacy")
        self._privacy_choice = privacy
        groups = tuple(tuple(float(v) for v in g) for g in (groups or DEFAULT_GROUPS))
        if len(groups) != 3:
            raise ValueError("groups must be three (share, low, high) triples")
        self.group_share, self.group_range = [], []
        for name, (share, low, high) in zip(GROUP_NAMES, groups, strict=True):
            s = slider(FloatSlider, share, 0.0, 1.0, 0.01, f"{name}: share", "dpw-group-share",
                        ".2f")
            r = slider(FloatRangeSlider, (low, high), 0.01, TEACHING_CEILING, 0.01, "budgets",
                       "dpw-group-range", ".2f")
            r.label = f"{name}: budgets"
            self.group_share.append(s)
            self.group_range.append(r)
        self.groups_box = ipw.VBox([ipw.HBox([s, r]) for s, r in
                                    zip(self.group_share, self.group_range, strict=True)])
        self.groups_box.add_class("dpw-groups")
        self.method = control_for(PersonalizedHistogramParams, "method", method,
                                  options=[(label, key) for key, label in METHODS.items()],
                                  layout=ipw.Layout(width="460px"))
        self.compare = ipw.Checkbox(value=bool(compare), description="compare the text's four",
                                    style=style)
        self.compare.add_class("dpw-compare")
        self.threshold = control_for(PersonalizedHistogramParams, "threshold",
                                     threshold if threshold is not None else 0.5,
                                     readout_format=".4f")
        self.threshold.layout = ipw.Layout(width="420px")
        self.auto_threshold = ipw.Checkbox(value=threshold is None,
                                           description="ε_T = mean budget (Li 2017, §5.3.2.1)",
                                           style=style)
        self.auto_threshold.add_class("dpw-auto-threshold")
        self.rounds = control_for(PersonalizedHistogramParams, "rounds", int(rounds))
        self.epsilon = control_for(PersonalizedHistogramParams, "epsilon",
                                   epsilon if epsilon is not None else 1.0)
        self.epsilon.layout = ipw.Layout(width="460px")
        self.no_cap = ipw.Checkbox(value=epsilon is None, description="no cap", style=style)
        self.no_cap.add_class("dpw-no-cap")
        self.show_truth = ipw.Checkbox(
            value=True, description="show the data", disabled=not self.session.teaching,
            layout=ipw.Layout(display=None if self.session.teaching else "none"))


    # -- data ------------------------------------------------------------------------------
    def _dataset_facts(self, dataset, budgets, bins, value_range, shape) -> dict:
        table_shape = self.session.shape(dataset)
        if len(table_shape) != 2 or table_shape[1] != 2:
            raise ValueError(f"dataset {dataset!r} is not a table [value, budget]: shape "
                             f"{table_shape}")
        n = int(table_shape[0])
        if budgets is None:
            view = (self.session.public_view(dataset) if self.session.teaching
                    else self.session.stand_in(dataset))
            budgets = view[:, 1]
        vector = PrivacyVector(np.asarray(budgets, dtype=float))
        if vector.array.shape != (n,) or not np.all(np.isfinite(vector.array)) or np.any(
                vector.array <= 0):
            raise ValueError(f"budgets must hold one finite budget > 0 per record ({n})")
        if bins is None:
            if not self.session.teaching:
                raise ValueError("an analyst widget needs bins= (public bin edges, or a number "
                                 "with value_range=): they are not read off the data")
            values = self.session.public_view(dataset)[:, 0]
            lo, hi = float(values.min()), float(values.max())
            edges = np.linspace(lo, hi if hi > lo else lo + 1.0, 41)
        elif isinstance(bins, int | np.integer):
            if value_range is None:
                raise ValueError("bins given as a number needs value_range=(low, high)")
            edges = np.linspace(float(value_range[0]), float(value_range[1]), int(bins) + 1)
        else:
            edges = np.asarray(bins, dtype=float)
        if shape is not None and math.prod(shape) != edges.size - 1:
            raise ValueError(f"shape {shape} has {math.prod(shape)} cells, but there are "
                             f"{edges.size - 1} bins")
        return {"name": dataset, "edges": edges, "shape": tuple(shape) if shape else None,
                "axis": "value", "vector": vector, "builtin": False}

    def select_data(self) -> None:
        value = self.data.value
        if value not in self._facts:
            src = DATASETS[value]
            name = f"{value}_{self.n}"
            if name not in self.session.datasets:
                seed = zlib.crc32(name.encode())
                values = src.make(self.n, np.random.default_rng(seed))
                stand_in = src.stand_in(self.n, np.random.default_rng(seed + 1))
                ceiling = np.full(self.n, TEACHING_CEILING)
                self.session.add_dataset(
                    name, np.column_stack((values, ceiling)), total_epsilon=10.0,
                    stand_in=np.column_stack((stand_in, ceiling)), description=src.title)
            self._facts[value] = {"name": name, "edges": src.edges, "shape": src.shape,
                                  "axis": src.axis, "vector": None, "builtin": True}
        facts = self._facts[value]
        self.dataset = facts["name"]
        self.edges = np.asarray(facts["edges"], dtype=float)
        self.shape = facts["shape"]
        self.n_records = self.session.shape(self.dataset)[0]
        self._builtin = facts["builtin"]
        with self._setting():
            if self._builtin:
                self.privacy.options = [(label, key) for key, label in PRIVACY.items()]
                self.privacy.value = self._privacy_choice
                self.privacy.disabled = False
            else:
                self.privacy.options = [("the dataset's privacy vector (public)", "dataset")]
                self.privacy.value = "dataset"
                self.privacy.disabled = True
        self.figure.panels["histogram"].xaxis.axis_label = facts["axis"]

    # -- the privacy vector ----------------------------------------------------------------
    def _groups(self) -> tuple[tuple[float, float, float], ...]:
        shares = np.array([s.value for s in self.group_share], dtype=float)
        if shares.sum() <= 0:
            raise ValueError(_NO_SHARE)
        shares = shares / shares.sum()
        return tuple((float(f), float(r.value[0]), float(r.value[1]))
                     for f, r in zip(shares, self.group_range, strict=True) if f > 0)

    def number_controls(self) -> list:
        """The base's controls, and the per-group sliders while the custom vector is chosen."""
        found = super().number_controls()
        if self.privacy.value == "custom":
            found += [*self.group_share, *self.group_range]
        return found

    def refusal(self) -> str | None:
        if self.privacy.value == "custom" and sum(s.value for s in self.group_share) <= 0:
            return _NO_SHARE
        return None

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
            return ("budgets exceed the public privacy vector (the budget column of the "
                    "dataset's public stand-in): a release may protect a record more than it "
                    "asked, never less. Nothing was charged.")
        return None

    def _vector_key(self) -> tuple:
        choice = self.privacy.value
        if choice == "dataset":
            return (self.dataset, "dataset")
        if choice == "custom":
            return (self.dataset, "custom", self._groups())
        return (self.dataset, choice)

    @property
    def budgets(self) -> PrivacyVector:
        """The privacy vector in force (public): what every record asks of this release."""
        key = self._vector_key()
        vector = self._vectors.get(key)
        if vector is None:
            facts = self._facts[self.data.value]
            if key[1] == "dataset":
                vector = facts["vector"]
            else:
                rng = np.random.default_rng(zlib.crc32(f"{self.dataset}:{key[1]}".encode()))
                vector = PrivacyVector(what_if_budgets(
                    key[1], self.n_records, key[2] if key[1] == "custom" else (), rng))
            if len(self._vectors) > 8:
                self._vectors.clear()
            self._vectors[key] = vector
        return vector

    def _derive(self, vector: PrivacyVector) -> dict:
        """What the widget draws from a privacy vector, once per vector: the sort order."""
        hit = self._derived.get(str(vector))
        if hit is None:
            if len(self._derived) > 8:
                self._derived.clear()
            order = vector.order  # sorted once per vector, shared with the plans
            hit = {"order": order, "sorted": vector.array[order],
                   "plot": display.vector_plot_data(vector.array)}
            self._derived[str(vector)] = hit
        return hit

    @property
    def cap(self) -> float:
        """The cap ε on what any record may spend (the largest budget when there is none)."""
        top = float(self._derive(self.budgets)["sorted"][-1])
        return top if self.no_cap.value else min(float(self.epsilon.value), top)

    def _capped(self) -> np.ndarray:
        return np.minimum(self.budgets.array, self.cap)

    # -- parameters ------------------------------------------------------------------------
    def params_for(self, method: str) -> dict:
        """The session parameters of ``method`` from the controls (all public)."""
        p = {"epsilon": self.cap, "budgets": self.budgets, "bins": self.edges, "method": method,
             "max_groups": self.max_groups}
        if method in _THRESHOLDED:
            p["threshold"] = float(self.threshold.value)
        if method in _ROUNDS:
            p["rounds"] = int(self.rounds.value)
        return p

    @property
    def params(self) -> dict:
        """Parameters of the selected mechanism's release (all public)."""
        return self.params_for(self.method.value)

    def shown(self) -> list[str]:
        """The mechanisms drawn: the selected one, and the text's four when comparing."""
        chosen = {self.method.value, *(COMPARED if self.compare.value else ())}
        return [m for m in _ORDER if m in chosen]

    def plan_for(self, method: str):
        """The public release plan of ``method`` (validated parameters; costs nothing)."""
        p = PersonalizedHistogramParams.validate(self.params_for(method), (self.n_records, 2))
        return release_plan(p), p

    # -- events ----------------------------------------------------------------------------
    def _sync_threshold(self) -> None:
        """Fit ε_T's slider to the (capped) budgets; follow the mean while auto is checked."""
        capped = self._capped()
        lo, hi = float(capped.min()), float(capped.max())
        if hi <= lo:
            hi = lo * (1 + 1e-9) + 1e-12
        with self._setting():
            slider = self.threshold
            if lo > slider.max:
                slider.max, slider.min = hi, lo
            else:
                slider.min, slider.max = lo, hi
            slider.step = max((hi - lo) / 500.0, 1e-6)
            if self.auto_threshold.value:
                slider.value = min(max(float(capped.mean()), lo), hi)
            else:
                slider.value = min(max(float(slider.value), lo), hi)

    def _update_controls(self) -> None:
        custom = self.privacy.value == "custom"
        self.groups_box.layout.display = None if custom else "none"
        shown = self.shown()
        self._threshold_row.layout.display = (
            None if any(m in _THRESHOLDED for m in shown) else "none")
        self.rounds.layout.visibility = (
            "visible" if any(m in _ROUNDS for m in shown) else "hidden")
        self.epsilon.disabled = bool(self.no_cap.value)
        # No cap: the cap slider is hidden, not shown with a cap the run does not apply.
        self.epsilon.layout.visibility = "hidden" if self.no_cap.value else "visible"

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
        return Accuracy(what, self._bin_counts, self._stand_in_counts,
                        limit=self._most_epsilon, band=self._histogram_band)

    def _bin_counts(self, release: Release) -> np.ndarray:
        """The released counts per public bin: what the histogram panel draws, one value per
        bin whatever the run."""
        return np.asarray(release.output["counts"], dtype=float)

    def _stand_in_counts(self) -> np.ndarray:
        """The stand-in's own histogram on the same bins."""
        return self._reference(self.session.stand_in(self.dataset))

    def _most_epsilon(self) -> tuple[float, str]:
        """A cap above the largest budget asked for changes nothing: each record spends at
        most its own budget, so more of the dataset's budget cannot buy more accuracy."""
        top = float(self._derive(self.budgets)["sorted"][-1])
        return top, f"no record asks for more than ε = {_fmt(top)}"

    def _histogram_band(self, preview) -> None:
        """The band around the DP histogram (removed with None)."""
        band = () if preview is None else (self.edges, preview.now.low, preview.now.high)
        figures.update(self.figure, display.histogram_band_data(*band))

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
            return outputs, self._reference(self.session.public_view(ds)), "teaching"
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
        return outputs, self._reference(self.session.stand_in(ds)), "preview"

    def _reference(self, table: np.ndarray) -> np.ndarray:
        """The histogram of a table's values the widget may draw (data in teaching mode, the
        public stand-in in a preview), once per table and bins."""
        key = id(table)
        hit = self._references.get(key)
        if hit is None or hit[0] is not table or not np.array_equal(hit[1], self.edges):
            if len(self._references) > 4:
                self._references.clear()
            hit = (table, self.edges, preview.reference_histogram(table, self.edges))
            self._references[key] = hit
        return hit[2]

    def _query_set(self) -> tuple[np.ndarray, np.ndarray]:
        dims = tuple(self.shape) if self.shape else (self.edges.size - 1,)
        key = (dims, self.n_queries)
        if key not in self._queries:
            self._queries[key] = preview.range_queries(dims, self.n_queries)
        return self._queries[key]

    def redraw(self) -> None:
        if self.problem():  # refused before the privacy vector is built from the controls
            super().redraw()
            return
        try:
            self._sync_threshold()
            self._update_controls()
        except CAUGHT as exc:
            self._show_error(exc)
            return
        super().redraw()

    # -- drawing ---------------------------------------------------------------------------
    def draw(self, outputs: dict[str, dict], reference: np.ndarray | None, *,
              where: str) -> None:
        selected = self.method.value
        vector = self.budgets
        derived = self._derive(vector)
        n = vector.array.size
        methods = self.shown()
        plans = {m: self.plan_for(m)[0] for m in methods}
        self.plans = plans
        self.outputs = outputs
        values: dict[str, float] = {}
        levels, current = {}, {}
        if reference is not None:
            queries = self._query_set()
            for m, out in outputs.items():
                error = preview.frequency_error(reference, out["counts"], shape=self.shape,
                                                queries=queries, n=float(n))
                values[METHOD_LABELS[m]] = error
                if m in _THRESHOLDED:
                    current[m] = (METHOD_LABELS[m], float(out["threshold"]), error)
                else:
                    levels[m] = (METHOD_LABELS[m], error)
            trail_key = (self.dataset, str(vector), self.cap, where)
            if trail_key != self._trail_key:
                self._trail_key, self._trail = trail_key, {}
            if "sampling" in current:
                self._trail[current["sampling"][1]] = current["sampling"][2]
        else:
            self._trail_key, self._trail = None, {}
        show_ref = reference is not None and (where != "teaching" or self.show_truth.value)
        shown = display.PersonalizedDisplay.from_outputs(
            outputs, plans, selected=selected, budgets=vector.array,
            cap=self.cap, edges=self.edges, reference=reference if show_ref else None,
            levels=levels, current=current, trail=self._trail, where=where,
            order=derived["order"], vector_plot=derived["plot"], labels=METHOD_LABELS)
        shown.draw(self.figure, assign=self._update_sources)
        self._set_quality(values, plans, where)
        self._stats(outputs[selected], plans[selected], where)

    def _update_sources(self, data: dict) -> None:
        """:func:`.figures.update` of the sources whose data changed (each update is a document
        event; moving ε_T leaves the privacy vector, most strips and the reference alone)."""
        changed = {}
        for name, columns in data.items():
            last = self._drawn.get(name)
            if last is None or last.keys() != columns.keys() or not all(
                    _same_column(last[k], columns[k]) for k in columns):
                changed[name] = columns
                self._drawn[name] = columns
        if changed:
            figures.update(self.figure, changed)

    # -- text ------------------------------------------------------------------------------
    def update_banner(self) -> None:
        self.banner.value = banner_html(self.method.value, self.per_unit)

    def _set_quality(self, values: dict[str, float], plans: dict, where: str) -> None:
        self.quality_values = values
        self.quality.value = quality_html(values, plans, self.budgets.array, where,
                                          self.n_queries)

    def _stats(self, output: dict, plan, where: str) -> None:
        self._set_stats(where, stats_text(plan), output["guarantee"])
