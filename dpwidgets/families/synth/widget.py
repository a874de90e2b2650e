"""SyntheticDataWidget: DP synthetic tables with DPCopula (Li 2017, Ch. 3).

A table of integer-coded attributes is released as DP synthetic records through the session
(:mod:`dpwidgets.families.synth.spec`): DPCopula (DP margins with ε1, DP Kendall's τ or MLE
correlation with ε2, ``k = ε1/ε2``, a Gaussian copula to sample from; the hybrid for
small-domain attributes), beside the dependence-free baseline (DP margins only), the Laplace
mechanism on the full-domain histogram where it fits, and on demand today's peers AIM and MST
(OpenDP's optional ``mbi`` extra). The widget shows

- one attribute's margin, real and synthetic side by side (with the DP margin the synthetic
  values were drawn from);
- Kendall's τ of every pair as heatmaps: real, synthetic, and their difference;
- the distribution of the relative error of random range-count queries over the chosen
  attributes (Li 2017, §3.3.1), for every method run.

Teaching mode (public data): every control change is a live release of DPCopula and, with
``compare``, of the baselines (each charged to the teaching ledger: the meter shows what
exploring costs); the real table's margins, τ and true query answers are drawn and measured
against. Analyst mode (confidential data): the public domains must be declared; control changes
drive a free preview on the dataset's public stand-in (same schema and size), measured against
the stand-in (the preview's own input, labelled so); only the Release button spends, on
DPCopula alone, once (a replay is free); a release draws only the synthetic data and DP
summaries (its margins, the DP margins, its τ, the DP correlation matrix) -- no record, margin,
correlation or query answer of the confidential table, and no range-query error (it would need
the confidential table's true answers).

While a control moves (in a kernel) the widget first draws a *live* run whose synthetic tables
have ``live_rows`` rows (10,000 by default; labelled LIVE, range counts scaled to the DP record
count), then, once the controls have been still for the debounce, the full tables. Both are
releases (teaching) or previews (analyst) of the same mechanisms: the number of synthetic rows
is a public parameter that changes no DP step. The evaluation is lazy: a piece (a margin, a τ
matrix, the range counts) is computed when a panel or the quality table shows it, once per
output.

The controller is this module; what it is built from lives beside it in
:mod:`dpwidgets.families.synth`: the tables it runs on (``sources``), the controls'
declarations (``params``), the controls and their layout (``controls``), what a redraw runs and
the free previews (``preview``), what it measures (``measures``), what it says (``text``) and
the figures (``display``).

Examples
--------
>>> from dpwidgets import Session
>>> from dpwidgets.families.synth.widget import SyntheticDataWidget
>>> session = Session(mode="teaching", seed=1)
>>> w = SyntheticDataWidget(session, data="gaussian", n=1000, compare=False, debounce=0)
>>> w.dataset, w.selected, w.params["method"]
('gaussian_1000', ['x1', 'x2', 'x3', 'x4'], 'kendall')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

from ...session import Release, Session
from ...ui import figures
from ...ui.accuracy import Accuracy
from ...ui.base import CAUGHT, ReleaseWidget
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from . import display, measures, preview, text
from . import params as synth_params
from .controls import (
    SynthControls,
    Throttle,
    check_arguments,
    fit_margin,
    in_kernel,
    lay_out,
    offer_columns,
)
from .params import publisher_options
from .preview import MECHANISMS, Previews
from .sources import DATASETS, TableFacts, TableSource, declared_table, teaching_table
from .spec import synthetic_frame

__all__ = ["DATASETS", "SyntheticDataWidget", "TableSource"]

#: The old private name (``dpwidgets.widgets.synth._publisher_options``), now public in
#: dpwidgets.families.synth.params.
_publisher_options = publisher_options

#: Synthetic rows of a live run while the controls move (a public choice).
LIVE_ROWS = 10_000


class SyntheticDataWidget(ReleaseWidget):
    """DP synthetic data with DPCopula (Li 2017, Ch. 3): margins, dependence, range-query error.

    Parameters
    ----------
    session : Session
        Holds the table and its budget.
    dataset : str, optional
        A table added to the session as a DataFrame (numeric, integer-coded columns) with a
        public stand-in of the same schema. Required in analyst mode. In teaching mode without
        one, a public table is added (``data``).
    data : str
        Teaching mode: the public table to start with, a key of :data:`DATASETS`.
    n : int
        Records of the generated teaching tables (the text: 50,000-188,846; the lesson uses
        20,000 to run quickly).
    attributes : sequence of str, optional
        The attributes to synthesise (default: all columns).
    domains : mapping, optional
        The public domain of every column (``(min, max)``, ``A`` or a list of values; see
        :mod:`dpwidgets.families.synth.params`). Required in analyst mode; in teaching mode the
        generated tables bring theirs, and a teaching dataset without them is released with
        domains read from the data (marked NOT DP).
    epsilon : float
        The total budget of a release.
    k : float
        ``ε1/ε2``, the margins' budget over the dependence's (Li 2017, Table 3.2: 8).
    method : {"kendall", "mle"}
        DPCopula's dependence estimator (Li 2017, Alg. 4-5 or 1-2).
    publisher : str
        The 1-D histogram publisher of the margins (DPCopula's and the independent
        baseline's): DAWA by default (the engine's), EFPA as in the text, or any other
        (identity, HB, ...).
    hybrid : bool, optional
        Use the hybrid for attributes with fewer than 10 values (Li 2017, Alg. 6), which the
        engine applies only while the released partition sizes support the margins each
        partition pays for (ε·n̂/(P·m_c) ≥ 500 with m_c copula attributes, at most 8
        partitions); default: the table's preset (on, except for the survey whose
        attributes are nearly all small).
    compare : bool
        Also run the baselines: independent DP margins and, where the full-domain histogram
        fits in memory, the Laplace mechanism on it. Teaching: each is a charged release;
        analyst: previewed only, never released.
    n_queries : int
        Random range-count queries (Li 2017, §3.3.1 uses 1000; default 300 for speed).
    sanity_bound : float, optional
        ``s`` of the relative error; default the table's (US: 0.05% of n, Brazil: 10, else 1).
    margin : str, optional
        The attribute whose margin is drawn first.
    live_rows : int or None
        Synthetic rows of the live run drawn at once while a control moves in a kernel
        (:data:`LIVE_ROWS`); the full tables follow after ``debounce`` seconds of quiet.
        ``None``: always the full tables. Headless (no event loop) a change draws the full
        tables at once.
    debounce : float
        Seconds of quiet before the full redraw in a kernel (0: at once, no live run).

    Attributes
    ----------
    figure : display.SynthFigure
        Sources ``margin_reference``, ``margin_synthetic``, ``margin_dp``, ``tau_reference``,
        ``tau_synthetic``, ``tau_difference``, ``tau_dp`` and ``errors_<method>``.
    quality_values : dict
        Per method run (``"DPCopula"``, ``"independent"``, ...): ``mean relative error``,
        ``median relative error``, ``mean margin TVD``, ``mean |Δτ|`` -- against the real
        table (teaching) or the stand-in (preview); empty after an analyst release. During a
        live step a baseline's ``mean |Δτ|`` is NaN (measured with the full tables).
    outputs : dict
        The DP outputs drawn last, by method key.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import SyntheticDataWidget
    >>> session = Session("teaching", seed=0)
    >>> widget = SyntheticDataWidget(session, n=2000, compare=False, n_queries=50, debounce=0)
    >>> session.datasets, widget.method.value, session.spent("us_census_2000")
    (['us_census_2000'], 'kendall', 1.0)
    """

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        data: str = "us_census",
        n: int = 20_000,
        attributes: Sequence[str] | None = None,
        domains: Mapping[str, object] | None = None,
        epsilon: float = 1.0,
        k: float = 8.0,
        method: str = "kendall",
        publisher: str = "dawa",
        hybrid: bool | None = None,
        compare: bool = True,
        n_queries: int = 300,
        sanity_bound: float | None = None,
        margin: str | None = None,
        live_rows: int | None = LIVE_ROWS,
        debounce: float = 0.15,
    ):
        check_arguments(method, live_rows, n_queries, sanity_bound)
        self._setup(session, debounce=debounce)
        self.n = int(n)
        self.n_queries = int(n_queries)
        self._sanity_given = sanity_bound
        self._facts: dict[str, TableFacts] = {}
        self._measures = measures.Measures(self.n_queries)
        self._previews = Previews(session, self._preview_run)
        self._view: display.SyntheticDisplay | None = None
        self._syncing = False
        self.live_rows = live_rows
        self._live_run = False  # True during a live step
        self._live_timer = Throttle(self._live_step)
        self.outputs: dict[str, dict] = {}

        if dataset is not None:
            self._facts[f"dataset:{dataset}"] = declared_table(
                session, dataset, domains, sanity_bound=sanity_bound, hybrid=hybrid)
        self.data = self._data_dropdown(
            dataset, data, DATASETS, needs="a DataFrame added with session.add_dataset and a "
            "public stand_in, and domains=")
        SynthControls.build(teaching=session.teaching, epsilon=epsilon, k=k, method=method,
                            publisher=publisher, compare=compare).attach(self)
        self._init = {"attributes": attributes, "margin": margin, "hybrid": hybrid}
        self.figure = display.synth_figure()
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        self.select_data(initial=True)
        self._assemble([self.banner, lay_out(self), self.message, self.plot, self.quality,
                        self.stats], "dpw-synth")
        self._watch(self.controls_changed, self.method, self.publisher, self.epsilon, self.k,
                    self.hybrid, self.attributes, self.compare, self.show_truth)
        self._watch(self.data_changed, self.data)
        self._watch(self._on_margin, self.margin)
        self.peer_button.on_click(lambda _b: self.run_peer())
        self.redraw()

    # -- data ------------------------------------------------------------------------------
    def select_data(self, initial: bool = False) -> None:
        value = self.data.value
        if value not in self._facts:
            self._facts[value] = teaching_table(self.session, value, self.n)
        facts = self._facts[value]
        self.dataset = facts.name
        self.columns = list(facts.columns)
        self.domains = facts.domains
        self.sanity_bound = float(self._sanity_given or facts.sanity)
        init = self._init if initial else {}
        chosen = facts.chosen(init.get("attributes"))
        hybrid = init.get("hybrid")
        with self._setting():
            offer_columns(self, self.columns, chosen, margin=init.get("margin"),
                          hybrid=bool(facts.hybrid if hybrid is None else hybrid))

    # -- parameters ------------------------------------------------------------------------
    @property
    def selected(self) -> list[str]:
        """The chosen attributes, in the dataset's order."""
        return [c for c in self.columns if c in self.attributes.value]

    @property
    def params(self) -> dict:
        """Parameters of the DPCopula release (all public)."""
        return {**preview.base_params(self.epsilon.value, self.selected, self.domains),
                "method": self.method.value, "k": float(self.k.value),
                "publisher": self.publisher.value,
                "hybrid_threshold": 10 if self.hybrid.value else None}

    def params_for(self, key: str, *, live: bool = False) -> dict:
        """Session parameters of method ``key`` (``"dpcopula"``, ``"independent"``,
        ``"laplace"``, ``"peer"``); ``live``: with ``n_rows = live_rows`` (a live run)."""
        if key == "dpcopula":
            p = self.params
        else:
            p = preview.base_params(self.epsilon.value, self.selected, self.domains)
            if key == "peer":
                p["method"] = self.peer_method.value
            elif key == "independent":
                p["publisher"] = self.publisher.value
        if live:
            p["n_rows"] = int(self.live_rows)
        return p

    def comparisons(self) -> tuple[list[str], dict[str, str]]:
        """The baselines run beside DPCopula, and a note for each one that is not."""
        return preview.comparisons(self.compare.value, self.selected, self.domains)

    # -- events ----------------------------------------------------------------------------
    def _phased(self) -> bool:
        """Whether a change draws a live run first: in a kernel (a running event loop), with a
        debounce, and ``live_rows`` fewer than the table's rows."""
        return (self.live_rows is not None and self._debouncer.delay > 0 and in_kernel()
                and self.live_rows < self.session.size(self.dataset))

    def controls_changed(self, change=None) -> None:
        if self._quiet(change):
            return
        self.message.value = ""
        if change is not None and change.get("owner") is self.attributes:
            with self._setting():
                fit_margin(self.attributes, self.margin)
        if self._phased():
            self._live_timer.trigger()  # at once, fewer rows ...
        super().controls_changed(change)  # ... and the full tables after the debounce

    def rerun(self) -> None:
        """Teaching Rerun (fresh noise): in a kernel like a control change -- the live run at
        once, the full tables after the debounce."""
        if self._phased():
            self._release = None
            self._live_timer.trigger()
            self._debouncer.trigger()
            return
        self._recompute()

    def redraw(self) -> None:
        if not self._live_run:  # the full tables supersede a live run still to come
            self._live_timer.cancel()
        super().redraw()

    def _live_step(self) -> None:
        """The redraw while a control moves: every synthetic table with ``live_rows`` rows."""
        self._live_run = True
        try:
            self._recompute()
        finally:
            self._live_run = False

    def _on_margin(self, change=None) -> None:
        if self._syncing:
            return
        if self._view is not None:
            self._view.draw_margin(self.figure, self.margin.value)
        if getattr(self, "accuracy_preview", None) is not None:
            self._margin_band(self.accuracy_preview)  # the drawn attribute's slice

    # -- actions ---------------------------------------------------------------------------
    mechanism = "dpcopula"
    stand_in_note = "same schema and size"
    title = "DPCopula"

    def refusal(self) -> str | None:
        if len(self.selected) < 2:
            return "attributes: choose at least 2 attributes (hold Ctrl or Shift to select several)."
        return None

    def draw_release(self, release: Release) -> None:
        """Analyst: DPCopula's synthetic table (the baselines are never released)."""
        self.draw({"dpcopula": release.output}, {}, None, where="release")

    @property
    def synthetic_data(self):
        """The synthetic table last released as a DataFrame with the dataset's dtypes. Analyst
        mode: the last paid release's only (``None`` before one; never a preview, whatever is on
        screen). Teaching mode: the live run drawn (while a control moves in a kernel, the
        ``live_rows`` one)."""
        if not self.session.teaching:
            return (None if self.last_release is None
                    else synthetic_frame(self.last_release.output))
        if self._view is None:
            return None
        return synthetic_frame(self._view.outputs["dpcopula"])

    def run_peer(self) -> dict | None:
        """Run the peer chosen in ``peer_method`` (AIM or MST, OpenDP's mbi extra) at the same
        ε and add it to the comparison. Teaching: a charged release; analyst: a free preview
        on the stand-in (beside the preview, never released). Needs ``opendp[mbi]``."""
        refused = text.peer_refusal(synth_params.peers_available(),
                                    None if self._view is None else self._view.where)
        if refused:
            self.message.value = refused
            return None
        params = self.params_for("peer")
        try:
            if self.session.teaching:
                release = self.session.release(self.dataset, "peer_synth", run=self._run,
                                               **params)
            else:
                release = self._preview_run("peer_synth", **params)
        except CAUGHT as exc:
            self._show_error(exc)
            return None
        view = self._view
        self.draw({**view.outputs, "peer": release.output}, view.notes, view.reference_table,
                  where=view.where, live=view.live)
        return release.output

    def compute(self) -> tuple[dict, dict, np.ndarray | None, str]:
        """The engine part of a redraw: the DP outputs by method key, notes on the baselines not
        run, the reference allowed on screen (the data in teaching mode, the stand-in in a
        preview) and where.

        Teaching: live releases through the session (charged). Analyst: previews on the
        stand-in (free); a method whose parameters did not change keeps its preview, as a
        teaching release is replayed from the cache. During a live step every table has
        ``live_rows`` rows.
        """
        ds = self.dataset
        keys, notes = self.comparisons()
        params = {key: self.params_for(key, live=self._live_run) for key in ["dpcopula", *keys]}
        if self.session.teaching:
            releases = {key: self.session.release(ds, MECHANISMS[key], run=self._run, **p)
                        for key, p in params.items()}
            self._last_releases = list(releases.values())
            reference = self.session.public_view(ds) if self.show_truth.value else None
            return ({k: r.output for k, r in releases.items()}, notes, reference, "teaching")
        outputs = {key: self._previews.output(ds, MECHANISMS[key], p)
                   for key, p in params.items()}
        return outputs, notes, self.session.stand_in(ds), "preview"

    # -- accuracy before spending (analyst) -------------------------------------------------
    @property
    def accuracy_model(self) -> Accuracy:
        """The accuracy panel's strategy (an :class:`~dpwidgets.ui.accuracy.Accuracy`): a
        preview's synthetic margins (:func:`~dpwidgets.families.synth.measures.output_margins`)
        against the stand-in's, the drawn attribute's slice shaded on the synthetic margin."""
        return Accuracy(
            text.ACCURACY_WHAT,
            lambda release: measures.output_margins(release.output, self.selected,
                                                    self.domains),
            lambda: measures.table_margins(self.session.stand_in(self.dataset), self.columns,
                                           self.selected, self.domains),
            band=self._margin_band)

    def _margin_band(self, estimate) -> None:
        """Shade the drawn attribute's slice of the band on the synthetic margin (None:
        remove it)."""
        band = measures.margin_band(estimate, self.selected, self.domains, self.margin.value)
        if band is not None:
            figures.update(self.figure, band)

    # -- drawing ---------------------------------------------------------------------------
    def _queries(self, attrs: tuple[str, ...], domains: dict) -> tuple[np.ndarray, np.ndarray]:
        """The random range queries over ``attrs`` (:meth:`~dpwidgets.families.synth.measures.Measures.queries`)."""
        return self._measures.queries(attrs, domains)

    def draw(self, outputs: dict, notes: dict, reference: np.ndarray | None, *,
             where: str, live: Sequence[str] | None = None) -> None:
        """Draw ``outputs`` (by method key) against ``reference`` (``None``: none may be
        shown). ``live``: the keys drawn from live runs (default: all of them during a live
        step, none otherwise)."""
        live = set(outputs if self._live_run else ()) if live is None else set(live)
        m = self._measures.measure(outputs, reference, self.columns, live, self.sanity_bound)
        n_queries = len(m.queries[0])
        self.outputs = dict(outputs)
        self._view = display.SyntheticDisplay.from_measures(
            outputs, notes, evals=m.evals, errors=m.errors, n_queries=n_queries,
            sanity_bound=self.sanity_bound, where=where, reference=m.reference,
            reference_table=reference, live=live)
        self._view.draw(self.figure, margin=self.margin.value)
        self.quality_values, later = measures.quality_values(m.reference, m.evals, m.errors,
                                                             m.attrs, live)
        self.quality.value = text.quality_html(
            self.quality_values, notes, where, live=live, later=later, n_queries=n_queries,
            sanity_bound=self.sanity_bound)
        main = outputs["dpcopula"]
        what, budget = text.stats(main, live=self._live_run)
        self._set_stats(where, what, main["guarantee"], budget)

    # -- text ------------------------------------------------------------------------------
    def update_banner(self) -> None:
        if self.problem():
            return
        eps = float(self.epsilon.value)
        self.k_note.value = text.split_note(eps, float(self.k.value), len(self.selected))
        small = [a for a in self.selected if self.domains is not None
                 and self.domains[a].size < 10] if self.hybrid.value else []
        self.banner.value = text.banner(
            epsilon=eps, method=self.method.value, publisher=self.publisher.value, small=small,
            declared=self.domains is not None, per_unit=self.per_unit)

    def live_status(self, releases: list[Release]) -> None:
        super().live_status(releases)
        if self._live_run:
            self.status.value += text.live_note(self.live_rows)

    def preview_status(self, what: str = "") -> None:
        super().preview_status(what)
        if self._live_run:
            self.status.value += text.live_note(self.live_rows)
