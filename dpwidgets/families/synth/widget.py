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
declarations (``params``), the free previews (``preview``), what it measures (``measures``),
what it says (``text``) and the figures (``display``).

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

import asyncio
import html
import math
from collections.abc import Callable, Mapping, Sequence

import ipywidgets as ipw
import numpy as np

from ...session import Release, Session
from ...ui import figures
from ...ui.accuracy import Accuracy
from ...ui.base import CAUGHT, ReleaseWidget, one_of
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import control_for
from . import display, measures, text
from . import params as synth_params
from .params import (
    DPCopulaParams,
    LaplaceHistogramSynthParams,
    PeerSynthParams,
    publisher_name,
    publisher_options,
)
from .preview import Previews
from .sources import DATASETS, TableFacts, TableSource, declared_table, teaching_table
from .spec import synthetic_frame

__all__ = ["DATASETS", "SyntheticDataWidget", "TableSource"]

#: The old private name (``dpwidgets.widgets.synth._publisher_options``), now public in
#: dpwidgets.families.synth.params.
_publisher_options = publisher_options

#: The session mechanism of each method key.
_METHOD_NAMES = {"dpcopula": "dpcopula", "independent": "independent_synth",
                 "laplace": "laplace_histogram_synth", "peer": "peer_synth"}
#: Synthetic rows of a live run while the controls move (a public choice).
LIVE_ROWS = 10_000


class _Soon:
    """Run ``callback`` shortly after the first :meth:`trigger`; triggers before it runs join
    that run (a throttle: while a slider moves, one live redraw at a time, which reads the
    controls when it runs). Needs a running event loop (a kernel)."""

    def __init__(self, callback: Callable[[], None], delay: float = 0.02):
        self.callback = callback
        self.delay = float(delay)
        self._handle: asyncio.TimerHandle | None = None

    def trigger(self) -> None:
        if self._handle is None:
            self._handle = asyncio.get_running_loop().call_later(self.delay, self._fire)

    def cancel(self) -> None:
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None

    def _fire(self) -> None:
        self._handle = None
        self.callback()


def _check_arguments(method, live_rows, n_queries, sanity_bound) -> None:
    """Refuse a constructor argument the widget cannot use, naming it."""
    one_of("method", method, ("kendall", "mle"))
    if live_rows is not None and not (isinstance(live_rows, int) and live_rows >= 100):
        raise ValueError(f"live_rows must be an integer >= 100 or None, got {live_rows!r}")
    if not (isinstance(n_queries, int) and n_queries >= 1):
        raise ValueError(f"n_queries must be an integer >= 1, got {n_queries!r}")
    if sanity_bound is not None and not (
            isinstance(sanity_bound, int | float) and sanity_bound > 0):
        raise ValueError(f"sanity_bound must be a number > 0, got {sanity_bound!r}")


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
        _check_arguments(method, live_rows, n_queries, sanity_bound)
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
        self._live_timer = _Soon(self._live_step)
        self.outputs: dict[str, dict] = {}

        if dataset is not None:
            self._facts[f"dataset:{dataset}"] = declared_table(
                session, dataset, domains, sanity_bound=sanity_bound, hybrid=hybrid)
        self.data = self._data_dropdown(
            dataset, data, DATASETS, needs="a DataFrame added with session.add_dataset and a "
            "public stand_in, and domains=")
        self._build_controls(epsilon=epsilon, k=k, method=method, publisher=publisher,
                             compare=compare)
        self._init = {"attributes": attributes, "margin": margin, "hybrid": hybrid}
        self.figure = display.synth_figure()
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        self.select_data(initial=True)
        self._lay_out()
        self._watch(self.controls_changed, self.method, self.publisher, self.epsilon, self.k,
                    self.hybrid, self.attributes, self.compare, self.show_truth)
        self._watch(self.data_changed, self.data)
        self._watch(self._on_margin, self.margin)
        self.peer_button.on_click(lambda _b: self.run_peer())
        self.redraw()

    def _build_controls(self, *, epsilon: float, k: float, method: str, publisher: str,
                        compare: bool) -> None:
        """The controls: the mechanism parameters' from their declarations (the ``Params`` of
        :mod:`dpwidgets.families.synth.params`), and the widget's own (the attributes, the
        hybrid, what to compare and to show, the peers)."""
        style = {"description_width": "initial"}
        self.method = control_for(DPCopulaParams, "method", method,
                                  layout=ipw.Layout(width="440px"))
        self.epsilon = control_for(DPCopulaParams, "epsilon", epsilon)
        # 0.08-80: the text's k = 8 lies on the log slider's grid (shown as "8", not "7.9").
        self.k = control_for(DPCopulaParams, "k", k, min_epsilon=0.08, max_epsilon=80.0)
        self.k.remove_class("dpw-epsilon")  # a ratio on the budget's slider, not a budget
        self.k_note = ipw.HTML()
        self.k_note.add_class("dpw-split-note")
        pubs = publisher_options(1)
        publisher = publisher_name(publisher)
        if publisher not in {v for _, v in pubs}:
            raise ValueError(f"publisher must be one of {sorted(v for _, v in pubs)}, got "
                             f"{publisher!r}")
        self.publisher = control_for(DPCopulaParams, "publisher", publisher,
                                     layout=ipw.Layout(width="300px"))
        # The hybrid is a threshold (10, or None: off) shown as a switch.
        self.hybrid = ipw.Checkbox(value=True, description="hybrid: partition by attributes "
                                   "with < 10 values (Li 2017, Alg. 6)",
                                   tooltip="Partition by the attributes with fewer than 10 "
                                   "values where the released partition sizes support it "
                                   "(Li 2017, Alg. 6)",
                                   style=style,
                                   layout=ipw.Layout(width="auto"))
        self.hybrid.add_class("dpw-hybrid")
        self.attributes = ipw.SelectMultiple(options=[], description="attributes", rows=4,
                                             style=style, layout=ipw.Layout(width="300px"))
        self.attributes.add_class("dpw-attributes")
        self.margin = ipw.Dropdown(options=[], description="margin of", style=style,
                                   layout=ipw.Layout(width="260px"))
        self.margin.add_class("dpw-margin")
        self.compare = ipw.Checkbox(value=bool(compare), description="compare with the "
                                    "baselines", style=style, layout=ipw.Layout(width="auto"))
        self.compare.add_class("dpw-compare")
        teaching = self.session.teaching
        self.show_truth = ipw.Checkbox(
            value=True, description="show the real table", disabled=not teaching,
            style=style, layout=ipw.Layout(display=None if teaching else "none",
                                           width="auto"))
        self._build_peer_controls()

    def _build_peer_controls(self) -> None:
        """The peers' row: AIM or MST (OpenDP's mbi extra), disabled with the reason without
        it."""
        available = synth_params.peers_available()
        self.peer_method = control_for(PeerSynthParams, "method", "mst", disabled=not available,
                                       layout=ipw.Layout(width="160px"))
        self.peer_method.remove_class("dpw-method")  # that is DPCopula's method
        self.peer_method.add_class("dpw-peer-method")
        self.peer_button = ipw.Button(
            description="Run AIM / MST" if available else "AIM / MST: not installed",
            disabled=not available, icon="play" if available else "ban",
            tooltip=("Run today's peers (OpenDP mbi) at the same ε" if available
                     else f"needs {synth_params.PEER_INSTALL}"),
            layout=ipw.Layout(width="auto"))
        self.peer_button.add_class("dpw-peer")
        self.peer_note = ipw.HTML(text.peer_text(available))
        self.peer_note.add_class("dpw-peer-note")

    def _lay_out(self) -> None:
        controls = ipw.VBox([
            self.data,
            ipw.HBox([self.method, self.publisher]),
            ipw.HBox([self.compare, self.show_truth]),
            ipw.HBox([self.epsilon, self.epsilon_note]),
            ipw.HBox([self.k, self.k_note]),
            ipw.HBox([self.attributes, ipw.VBox([self.hybrid, self.margin])]),
            ipw.HBox([self.release_button, self.status]),
            ipw.HBox([self.peer_method, self.peer_button, self.peer_note]),
        ])
        controls.add_class("dpw-controls")
        self._assemble([self.banner, controls, self.message, self.plot, self.quality,
                        self.stats], "dpw-synth")

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
        chosen = list(init.get("attributes") or self.columns)
        unknown = [a for a in chosen if a not in self.columns]
        if unknown:
            raise ValueError(f"attributes {unknown} are not columns of {self.dataset!r}: "
                             f"{self.columns}")
        with self._setting():
            self.attributes.options = self.columns
            self.attributes.rows = min(max(len(self.columns), 2), 9)
            self.attributes.value = tuple(c for c in self.columns if c in chosen)
            hybrid = init.get("hybrid")
            self.hybrid.value = bool(facts.hybrid if hybrid is None else hybrid)
            self._fit_margin(init.get("margin"))

    def _fit_margin(self, wanted: str | None = None) -> None:
        attrs = list(self.attributes.value)
        current = wanted or self.margin.value
        self.margin.options = attrs
        if attrs:
            self.margin.value = current if current in attrs else attrs[0]

    # -- parameters ------------------------------------------------------------------------
    @property
    def selected(self) -> list[str]:
        """The chosen attributes, in the dataset's order."""
        return [c for c in self.columns if c in self.attributes.value]

    def _base_params(self) -> dict:
        attrs = self.selected
        p: dict = {"epsilon": float(self.epsilon.value), "attributes": attrs}
        if self.domains is not None:
            p["domains"] = {a: self.domains[a] for a in attrs}
        return p

    @property
    def params(self) -> dict:
        """Parameters of the DPCopula release (all public)."""
        return {**self._base_params(), "method": self.method.value, "k": float(self.k.value),
                "publisher": self.publisher.value,
                "hybrid_threshold": 10 if self.hybrid.value else None}

    def params_for(self, key: str, *, live: bool = False) -> dict:
        """Session parameters of method ``key`` (``"dpcopula"``, ``"independent"``,
        ``"laplace"``, ``"peer"``); ``live``: with ``n_rows = live_rows`` (a live run)."""
        if key == "dpcopula":
            p = self.params
        else:
            p = self._base_params()
            if key == "peer":
                p["method"] = self.peer_method.value
            elif key == "independent":
                p["publisher"] = self.publisher.value
        if live:
            p["n_rows"] = int(self.live_rows)
        return p

    def comparisons(self) -> tuple[list[str], dict[str, str]]:
        """The baselines run beside DPCopula, and a note for each one that is not."""
        if not self.compare.value:
            return [], {}
        keys, notes = ["independent"], {}
        cells = (None if self.domains is None
                 else math.prod(int(self.domains[a].size) for a in self.selected))
        limit = LaplaceHistogramSynthParams.default("max_cells")  # what the baseline allows
        if cells is None:
            notes["laplace"] = ("Laplace on the full-domain histogram: not run — it needs "
                                "declared domains to check that the histogram fits")
        elif cells > limit:
            notes["laplace"] = (f"Laplace on the full-domain histogram: not run — "
                                f"{cells:.3g} cells do not fit in memory (limit {limit:.0e}); "
                                f"that is why DPCopula models margins and dependence instead")
        else:
            keys.append("laplace")
        return keys, notes

    # -- events ----------------------------------------------------------------------------
    def _phased(self) -> bool:
        """Whether a change draws a live run first: in a kernel (a running event loop), with a
        debounce, and ``live_rows`` fewer than the table's rows."""
        if self.live_rows is None or self._debouncer.delay <= 0:
            return False
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self.live_rows < self.session.size(self.dataset)

    def controls_changed(self, change=None) -> None:
        if self._quiet(change):
            return
        self.message.value = ""
        if change is not None and change.get("owner") is self.attributes:
            with self._setting():
                self._fit_margin()
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
        self._draw_margin()
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
        if not synth_params.peers_available():
            self.message.value = (f"<div class='dpw-error'><b>Not installed.</b> "
                                  f"{html.escape(text.peer_text(False))}</div>")
            return None
        if self._view is None or self._view.where == "release":
            self.message.value = ("<div class='dpw-error'><b>Refused.</b> AIM/MST are compared "
                                  "on a live run or a preview, never released beside "
                                  "DPCopula.</div>")
            return None
        params = self.params_for("peer")
        try:
            if self.session.teaching:
                output = self.session.release(self.dataset, "peer_synth", run=self._run,
                                              **params).output
            else:
                output = self._preview_run("peer_synth", **params).output
        except CAUGHT as exc:
            self._show_error(exc)
            return None
        view = self._view
        self.draw({**view.outputs, "peer": output}, view.notes, view.reference_table,
                   where=view.where, live=view.live)
        return output

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
        keys = ["dpcopula", *keys]
        live = self._live_run
        if self.session.teaching:
            releases = {key: self.session.release(ds, _METHOD_NAMES[key], run=self._run,
                                                  **self.params_for(key, live=live))
                        for key in keys}
            self._last_releases = list(releases.values())
            reference = self.session.public_view(ds) if self.show_truth.value else None
            return ({k: r.output for k, r in releases.items()}, notes, reference, "teaching")
        outputs = {key: self._previews.output(ds, _METHOD_NAMES[key],
                                              self.params_for(key, live=live))
                   for key in keys}
        return outputs, notes, self.session.stand_in(ds), "preview"

    # -- accuracy before spending (analyst) -------------------------------------------------
    @property
    def accuracy_model(self) -> Accuracy:
        """The accuracy panel's strategy (an :class:`~dpwidgets.ui.accuracy.Accuracy`)."""
        what = ("the synthetic table's margins (the share of the records in each bar of "
                "the margin panel, every chosen attribute)")
        return Accuracy(what, self._margins, self._stand_in_margins,
                        band=self._margin_band)

    def _margins(self, release: Release) -> np.ndarray:
        """The margins of a preview's synthetic table, bar by bar, attribute after attribute.

        Why the margins: they are what the first row draws, fixed in number by the public
        domains, and every later use of a synthetic table (its range counts, its τ) builds on
        them. The range-count errors are already a distribution over queries, and τ is on
        another scale than a share (one median half-width over both would mean nothing). The
        slice of the attribute drawn is shaded on the synthetic margin.
        """
        data = release.output["data"]
        return measures.bar_margins(lambda a: data[a], self.selected, self.domains)

    def _stand_in_margins(self) -> np.ndarray:
        """The stand-in's own margins, bar by bar."""
        table = self.session.stand_in(self.dataset)
        return measures.bar_margins(lambda a: table[:, self.columns.index(a)], self.selected,
                                    self.domains)

    def _margin_band(self, preview) -> None:
        """Shade the drawn attribute's slice of the band on the synthetic margin (None:
        remove it)."""
        if preview is None:
            figures.update(self.figure, display.margin_band_data())
            return
        attr = self.margin.value
        offset = 0
        for a in self.selected:
            size = display.display_bins(self.domains[a])[0].size
            if a == attr:
                cut = slice(offset, offset + size)
                figures.update(self.figure, display.margin_band_data(
                    self.domains[a], preview.now.low[cut], preview.now.high[cut]))
                return
            offset += size

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
        main = outputs["dpcopula"]
        attrs = tuple(main["columns"])
        domains = {a: np.asarray(main["domains"][a]) for a in attrs}
        queries = self._queries(attrs, domains)
        ref = (self._measures.reference(reference, self.columns, attrs, domains, queries)
               if reference is not None else None)
        evals = {key: self._measures.synthetic(out, attrs, domains, queries, key in live)
                 for key, out in outputs.items()}
        errors = measures.range_errors(evals, ref, self.sanity_bound)
        self.outputs = dict(outputs)
        self._view = display.SyntheticDisplay.from_measures(
            outputs, notes, evals=evals, errors=errors, n_queries=len(queries[0]),
            sanity_bound=self.sanity_bound, where=where, reference=ref,
            reference_table=reference, live=live)
        self._view.draw(self.figure, margin=self.margin.value)
        self.quality_values, later = measures.quality_values(ref, evals, errors, attrs, live)
        self.quality.value = text.quality_html(
            self.quality_values, notes, where, live=live, later=later,
            n_queries=len(queries[0]), sanity_bound=self.sanity_bound)
        what, budget = text.stats(main, live=self._live_run)
        self._set_stats(where, what, main["guarantee"], budget)

    def _draw_margin(self) -> None:
        if self._view is not None:
            self._view.draw_margin(self.figure, self.margin.value)

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
