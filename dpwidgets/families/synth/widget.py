"""SyntheticDataWidget: DP synthetic tables with DPCopula (Li 2017, Ch. 3).

A table of integer-coded attributes is released as DP synthetic records through the session
(:mod:`dpwidgets.releases.synth`): DPCopula (DP margins with ε1, DP Kendall's τ or MLE
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
"""

from __future__ import annotations

import asyncio
import html
import itertools
import math
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import ipywidgets as ipw
import numpy as np

from ...engine.evaluation import encode, kendall_matrix, range_counts, shares, tau_rows
from ...engine.histograms import PUBLISHERS
from ...session import Release, Session
from ...ui import figures
from ...ui.base import CAUGHT, PublicSource, ReleaseWidget, budget_parts, fold, one_of
from ...ui.base import g3 as _fmt
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import EpsilonSlider
from ...widgets.diagnostics import _publisher_options
from . import display
from . import params as synth_params
from . import spec as rsynth

__all__ = ["DATASETS", "SyntheticDataWidget", "TableSource"]

# --------------------------------------------------------------------------------------------
# The public tables of the teaching widget
# --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TableSource(PublicSource):
    """A public coded table (:mod:`dpwidgets.datasets.synth`); see :class:`PublicSource`.

    Attributes
    ----------
    sanity_bound : callable ``n -> s``
        The sanity bound of the relative error (Li 2017, §3.3.1).
    hybrid : bool
        Whether the hybrid (Alg. 6) is on by default.
    """

    sanity_bound: Callable[[int], float]
    hybrid: bool = True


def _us(n, rng):
    from .standins import us_census_like

    return us_census_like(n, rng)


def _brazil(n, rng):
    from .standins import brazil_census_like

    return brazil_census_like(n, rng)


def _gaussian(n, rng):
    from .standins import gaussian_dependence_table

    return gaussian_dependence_table(n, 4, 1000, "gaussian", rng)


def _fair(n, rng):
    from .standins import load_fair_table

    return load_fair_table()


def _datasets() -> dict[str, TableSource]:
    out = {
        "us_census": TableSource(
            "US census-like (Li 2017, Fig. 3.3a): age 96 × income 1020 × occupation 511 × gender 2",
            _us, lambda n: max(1.0, 0.0005 * n)),
        "brazil_census": TableSource(
            "Brazil census-like (Li 2017, Fig. 3.3b): 8 attributes, 3 of them binary", _brazil,
            lambda n: 10.0),
        "gaussian": TableSource(
            "Gaussian dependence (Li 2017, §3.3.4): 4 attributes of domain 1000, correlation 0.5",
            _gaussian, lambda n: 1.0),
    }
    try:
        import statsmodels  # noqa: F401
    except ImportError:  # pragma: no cover - statsmodels comes with the demo and test extras
        return out
    out["fair"] = TableSource(
        "Fair (1978) affairs survey (statsmodels): 6,366 women, 9 ordinal attributes",
        _fair, lambda n: 1.0, hybrid=False, fixed_n=True)
    return out


#: The public tables of the teaching widget (Li 2017, §3.3.1's shapes, and one real survey).
DATASETS: dict[str, TableSource] = _datasets()

_METHOD_NAMES = {"dpcopula": "dpcopula", "independent": "independent_synth",
                 "laplace": "laplace_histogram_synth", "peer": "peer_synth"}
_SHORT = {"dpcopula": "DPCopula", "independent": "independent", "laplace": "Laplace",
          "peer": "AIM/MST"}
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


def _codes(columns: Sequence[np.ndarray], attrs: tuple[str, ...], domains: dict) -> np.ndarray:
    """The columns as codes ``0..A-1`` (n, m), in the smallest unsigned type that holds them
    (a table kept for lazy evaluation takes a quarter of the int64 memory)."""
    n = len(columns[0]) if columns else 0
    largest = max(int(np.asarray(domains[a]).size) for a in attrs)
    codes = np.empty((n, len(attrs)), dtype=np.min_scalar_type(largest))
    for j, (column, a) in enumerate(zip(columns, attrs, strict=True)):
        codes[:, j] = encode(column, domains[a])
    return codes


class _Evaluation:
    """What the widget measures of one table, computed when first asked for (lazy): the share
    of every code per attribute, Kendall's τ matrix, the range-count answers. ``scale``
    multiplies the answers (a live table of fewer rows stands for the full one)."""

    def __init__(self, codes: np.ndarray, attrs: tuple[str, ...], domains: dict, queries,
                 scale: float = 1.0):
        self.codes, self.attrs, self.domains, self.queries = codes, attrs, domains, queries
        self.scale = float(scale)
        self._shares: dict[str, np.ndarray] = {}
        self._tau: np.ndarray | None = None
        self._answers: np.ndarray | None = None

    def shares(self, attr: str) -> np.ndarray:
        if attr not in self._shares:
            j = self.attrs.index(attr)
            self._shares[attr] = shares(self.codes[:, j], int(np.asarray(self.domains[attr]).size))
        return self._shares[attr]

    @property
    def tau(self) -> np.ndarray:
        if self._tau is None:
            self._tau = kendall_matrix(self.codes, tau_rows(self.codes.shape[1]))
        return self._tau

    @property
    def answers(self) -> np.ndarray:
        if self._answers is None:
            counts = range_counts(self.codes, *self.queries)
            self._answers = counts * self.scale if self.scale != 1.0 else counts
        return self._answers


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
        :mod:`dpwidgets.releases.synth`). Required in analyst mode; in teaching mode the
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
        one_of("method", method, ("kendall", "mle"))
        if live_rows is not None and not (isinstance(live_rows, int) and live_rows >= 100):
            raise ValueError(f"live_rows must be an integer >= 100 or None, got {live_rows!r}")
        if not (isinstance(n_queries, int) and n_queries >= 1):
            raise ValueError(f"n_queries must be an integer >= 1, got {n_queries!r}")
        if sanity_bound is not None and not (
                isinstance(sanity_bound, int | float) and sanity_bound > 0):
            raise ValueError(f"sanity_bound must be a number > 0, got {sanity_bound!r}")
        self._setup(session, debounce=debounce)
        self.n = int(n)
        self.n_queries = int(n_queries)
        self._sanity_given = sanity_bound
        self._facts: dict[str, dict] = {}
        self._ref_cache: dict = {}
        self._query_cache: dict = {}
        self._eval_cache: dict = {}
        self._previews: dict = {}
        self._view: dict | None = None
        self._syncing = False
        self.live_rows = live_rows
        self._live_run = False  # True during a live step
        self._live_timer = _Soon(self._live_step)
        self.outputs: dict[str, dict] = {}

        if dataset is not None:
            columns = session.columns(dataset)
            if columns is None:
                raise ValueError(f"dataset {dataset!r} was not added as a DataFrame: the "
                                 f"synthetic-data widget needs named attributes")
            if domains is None:
                domains = session.domains(dataset)  # declared by the owner, if at all
            if domains is None and not session.teaching:
                raise ValueError(
                    "an analyst widget needs domains= : the public domain of every attribute "
                    "((min, max), a number of values or a list). Reading them off the "
                    "confidential data would not be differentially private.")
            declared = None
            if domains is not None:
                missing = [c for c in columns if c not in domains]
                if missing:
                    raise ValueError(f"domains must declare every column; missing {missing}")
                declared = {c: synth_params.domain_values(domains[c]) for c in columns}
            self._facts[f"dataset:{dataset}"] = {
                "name": dataset, "columns": list(columns), "domains": declared,
                "sanity": sanity_bound or 1.0, "hybrid": True if hybrid is None else hybrid,
            }
        self.data = self._data_dropdown(
            dataset, data, DATASETS, needs="a DataFrame added with session.add_dataset and a "
            "public stand_in, and domains=")
        style = {"description_width": "initial"}
        self.method = ipw.Dropdown(
            options=[("DPCopula-Kendall: noisy Kendall's τ (Li 2017, Alg. 4-5)", "kendall"),
                     ("DPCopula-MLE: noisy block MLE (Li 2017, Alg. 1-2)", "mle")],
            value=method, description="method", style=style, layout=ipw.Layout(width="440px"))
        self.method.add_class("dpw-method")
        self.epsilon = EpsilonSlider(epsilon, description="ε")
        # 0.08-80: the text's k = 8 lies on the log slider's grid (shown as "8", not "7.9").
        self.k = EpsilonSlider(k, min_epsilon=0.08, max_epsilon=80.0, description="k = ε1/ε2")
        self.k.remove_class("dpw-epsilon")
        self.k.add_class("dpw-k")
        self.k_note = ipw.HTML()
        self.k_note.add_class("dpw-split-note")
        pubs = _publisher_options(1)
        publisher = PUBLISHERS[publisher].name if publisher in PUBLISHERS else publisher
        if publisher not in {v for _, v in pubs}:
            raise ValueError(f"publisher must be one of {sorted(v for _, v in pubs)}, got "
                             f"{publisher!r}")
        self.publisher = ipw.Dropdown(options=pubs, value=publisher,
                                      description="margins publisher", style=style,
                                      layout=ipw.Layout(width="300px"))
        self.publisher.add_class("dpw-publisher")
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
        self.show_truth = ipw.Checkbox(
            value=True, description="show the real table", disabled=not session.teaching,
            style=style, layout=ipw.Layout(display=None if session.teaching else "none",
                                           width="auto"))
        available = synth_params.peers_available()
        self.peer_method = ipw.Dropdown(options=[("MST", "mst"), ("AIM", "aim")], value="mst",
                                        description="peer", style=style, disabled=not available,
                                        layout=ipw.Layout(width="160px"))
        self.peer_method.add_class("dpw-peer-method")
        self.peer_button = ipw.Button(
            description="Run AIM / MST" if available else "AIM / MST: not installed",
            disabled=not available, icon="play" if available else "ban",
            tooltip=("Run today's peers (OpenDP mbi) at the same ε" if available
                     else f"needs {synth_params.PEER_INSTALL}"),
            layout=ipw.Layout(width="auto"))
        self.peer_button.add_class("dpw-peer")
        self.peer_note = ipw.HTML(self._peer_text(available))
        self.peer_note.add_class("dpw-peer-note")

        self._init = {"attributes": attributes, "margin": margin, "hybrid": hybrid}
        self.figure = display.synth_figure()
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        self._select_data(initial=True)

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
        self._watch(self._on_change, self.method, self.publisher, self.epsilon, self.k,
                    self.hybrid, self.attributes, self.compare, self.show_truth)
        self._watch(self._on_data, self.data)
        self._watch(self._on_margin, self.margin)
        self.peer_button.on_click(lambda _b: self.run_peer())
        self._recompute()

    # -- data ------------------------------------------------------------------------------
    def _select_data(self, initial: bool = False) -> None:
        value = self.data.value
        if value not in self._facts:
            src = DATASETS[value]
            name = value if src.fixed_n else f"{value}_{self.n}"
            table = None
            if name not in self.session.datasets:
                table = src.make(self.n, np.random.default_rng(zlib.crc32(name.encode())))
                frame = table.frame
                from .standins import synth_stand_in

                stand_in = synth_stand_in(len(frame), table.domains,
                                                 dtypes=dict(frame.dtypes))
                self.session.add_dataset(name, frame, total_epsilon=10.0, stand_in=stand_in,
                                         description=src.title)
                domains = dict(table.domains)
            else:
                # Added by another widget of this session: the same generator, same public
                # domains (they depend on the table's kind only).
                domains = dict(src.make(64, np.random.default_rng(0)).domains)
            columns = self.session.columns(name)
            n_rows = self.session.size(name)
            self._facts[value] = {
                "name": name, "columns": list(columns),
                "domains": {c: synth_params.domain_values(domains[c]) for c in columns},
                "sanity": src.sanity_bound(n_rows), "hybrid": src.hybrid,
            }
        facts = self._facts[value]
        self.dataset = facts["name"]
        self.columns = list(facts["columns"])
        self.domains = facts["domains"]
        self.sanity_bound = float(self._sanity_given or facts["sanity"])
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
            self.hybrid.value = bool(facts["hybrid"] if hybrid is None else hybrid)
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

    def _laplace_cells(self) -> int | None:
        if self.domains is None:
            return None
        return math.prod(int(self.domains[a].size) for a in self.selected)

    def comparisons(self) -> tuple[list[str], dict[str, str]]:
        """The baselines run beside DPCopula, and a note for each one that is not."""
        if not self.compare.value:
            return [], {}
        keys, notes = ["independent"], {}
        cells = self._laplace_cells()
        limit = 10**7
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

    def _on_change(self, change=None) -> None:
        if self._quiet(change):
            return
        self.message.value = ""
        if change is not None and change.get("owner") is self.attributes:
            with self._setting():
                self._fit_margin()
        if self._phased():
            self._live_timer.trigger()  # at once, fewer rows ...
        super()._on_change(change)  # ... and the full tables after the debounce

    def _rerun(self) -> None:
        """Teaching Rerun (fresh noise): in a kernel like a control change -- the live run at
        once, the full tables after the debounce."""
        if self._phased():
            self._release = None
            self._live_timer.trigger()
            self._debouncer.trigger()
            return
        self._recompute()

    def _recompute(self) -> None:
        if not self._live_run:  # the full tables supersede a live run still to come
            self._live_timer.cancel()
        super()._recompute()

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
            self._accuracy_band(self.accuracy_preview)  # the drawn attribute's slice

    # -- actions ---------------------------------------------------------------------------
    mechanism = "dpcopula"
    stand_in_note = "same schema and size"
    title = "DPCopula"

    def _refusal(self) -> str | None:
        if len(self.selected) < 2:
            return "attributes: choose at least 2 attributes (hold Ctrl or Shift to select several)."
        return None

    def _draw_release(self, release: Release) -> None:
        """Analyst: DPCopula's synthetic table (the baselines are never released)."""
        self._show({"dpcopula": release.output}, {}, None, where="release")

    # -- accuracy before spending (analyst) -------------------------------------------------
    accuracy_what = ("the synthetic table's margins (the share of the records in each bar of "
                     "the margin panel, every chosen attribute)")

    def _accuracy_bars(self) -> list[tuple[str, np.ndarray]]:
        """The chosen attributes and the first value of each of their margin bars, in the
        order the values are concatenated (public: the declared domains)."""
        return [(a, display.display_bins(self.domains[a])[0]) for a in self.selected]

    def _accuracy_margins(self, column) -> np.ndarray:
        """Every chosen attribute's margin as the margin panel draws it (shares summed per bar),
        concatenated; ``column(a)`` gives attribute ``a``'s values."""
        return np.concatenate([
            display.binned(shares(encode(column(a), self.domains[a]),
                                        int(self.domains[a].size)), starts)
            for a, starts in self._accuracy_bars()])

    def _accuracy_values(self, release: Release) -> np.ndarray:
        """The margins of a preview's synthetic table, bar by bar, attribute after attribute.

        Why the margins: they are what the first row draws, fixed in number by the public
        domains, and every later use of a synthetic table (its range counts, its τ) builds on
        them. The range-count errors are already a distribution over queries, and τ is on
        another scale than a share (one median half-width over both would mean nothing). The
        slice of the attribute drawn is shaded on the synthetic margin.
        """
        data = release.output["data"]
        return self._accuracy_margins(lambda a: data[a])

    def _accuracy_noiseless(self) -> np.ndarray:
        """The stand-in's own margins, bar by bar."""
        table = self.session.stand_in(self.dataset)
        return self._accuracy_margins(lambda a: table[:, self.columns.index(a)])

    def _accuracy_band(self, preview) -> None:
        """Shade the drawn attribute's slice of the band on the synthetic margin (None:
        remove it)."""
        if preview is None:
            figures.update(self.figure, display.margin_band_data())
            return
        attr = self.margin.value
        offset = 0
        for a, starts in self._accuracy_bars():
            if a == attr:
                cut = slice(offset, offset + starts.size)
                figures.update(self.figure, display.margin_band_data(
                    self.domains[a], preview.now.low[cut], preview.now.high[cut]))
                return
            offset += starts.size

    @property
    def synthetic_data(self):
        """The synthetic table last released as a DataFrame with the dataset's dtypes. Analyst
        mode: the last paid release's only (``None`` before one; never a preview, whatever is on
        screen). Teaching mode: the live run drawn (while a control moves in a kernel, the
        ``live_rows`` one)."""
        if not self.session.teaching:
            return (None if self.last_release is None
                    else rsynth.synthetic_frame(self.last_release.output))
        if self._view is None:
            return None
        return rsynth.synthetic_frame(self._view["outputs"]["dpcopula"])

    def run_peer(self) -> dict | None:
        """Run the peer chosen in ``peer_method`` (AIM or MST, OpenDP's mbi extra) at the same
        ε and add it to the comparison. Teaching: a charged release; analyst: a free preview
        on the stand-in (beside the preview, never released). Needs ``opendp[mbi]``."""
        if not synth_params.peers_available():
            self.message.value = (f"<div class='dpw-error'><b>Not installed.</b> "
                                  f"{html.escape(self._peer_text(False))}</div>")
            return None
        if self._view is None or self._view["where"] == "release":
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
        self._show({**view["outputs"], "peer": output}, view["notes"], view["reference"],
                   where=view["where"], live=view["live"])
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
        outputs = {}
        for key in keys:
            name = _METHOD_NAMES[key]
            params = self.params_for(key, live=live)
            cache_key = self.session.preview_key(ds, name, **params)
            if cache_key not in self._previews:
                if len(self._previews) > 8:  # a few synthetic tables, not a history of them
                    self._previews.clear()
                self._previews[cache_key] = self._preview_run(name, **params).output
            outputs[key] = self._previews[cache_key]
        return outputs, notes, self.session.stand_in(ds), "preview"

    # -- evaluation --------------------------------------------------------------------------
    def _queries(self, attrs: tuple[str, ...], domains: dict) -> tuple[np.ndarray, np.ndarray]:
        """The random range queries over ``attrs`` (public: drawn from the domains alone, with
        a fixed seed per attribute set), as inclusive code bounds."""
        from ...engine.synth import random_range_queries

        key = (attrs, tuple(hash(np.asarray(domains[a]).tobytes()) for a in attrs),
               self.n_queries)
        hit = self._query_cache.get(key)
        if hit is None:
            seed = zlib.crc32(("|".join(attrs)).encode())
            q = random_range_queries({a: np.asarray(domains[a]) for a in attrs}, self.n_queries,
                                     np.random.default_rng(seed))
            lower = np.stack([encode(q.lower[:, j], domains[a]) for j, a in enumerate(attrs)], 1)
            upper = np.stack([encode(q.upper[:, j], domains[a]) for j, a in enumerate(attrs)], 1)
            hit = (lower, upper)
            if len(self._query_cache) > 8:
                self._query_cache.clear()
            self._query_cache[key] = hit
        return hit

    def _reference_eval(self, table: np.ndarray, attrs, domains, queries) -> _Evaluation:
        """What the widget derives from a reference it may draw (the data in teaching mode,
        the stand-in in a preview), once per array and attribute set."""
        key = (id(table), attrs, self.n_queries)
        hit = self._ref_cache.get(key)
        if hit is None or hit[0] is not table:
            if len(self._ref_cache) > 8:
                self._ref_cache.clear()
            idx = [self.columns.index(a) for a in attrs]
            codes = _codes([table[:, i] for i in idx], attrs, domains)
            hit = (table, _Evaluation(codes, attrs, domains, queries))
            self._ref_cache[key] = hit
        return hit[1]

    def _synthetic_eval(self, output: dict, attrs, domains, queries,
                        live: bool) -> _Evaluation:
        """The evaluation of a DP output, once per output (a replayed release and a kept
        preview are the same dict): redrawing for a view or a cached replay measures
        nothing again. A live output's range counts are scaled to its DP record count."""
        key = (id(output), attrs, self.n_queries)
        hit = self._eval_cache.get(key)
        if hit is None or hit[0] is not output:
            if len(self._eval_cache) > 8:
                self._eval_cache.clear()
            rows = int(output["n_rows"])
            codes = _codes([output["data"][a] for a in attrs], attrs, domains)
            scale = 1.0
            if live and rows:  # post-processing: the DP count of the release, public
                scale = max(round(float(output["details"]["noisy_n"])), 0) / rows
            hit = (output, _Evaluation(codes, attrs, domains, queries, scale))
            self._eval_cache[key] = hit
        return hit[1]

    # -- drawing ---------------------------------------------------------------------------
    def _show(self, outputs: dict, notes: dict, reference: np.ndarray | None, *,
              where: str, live: Sequence[str] | None = None) -> None:
        """Draw ``outputs`` (by method key) against ``reference`` (``None``: none may be
        shown). ``live``: the keys drawn from live runs (default: all of them during a live
        step, none otherwise)."""
        live = set(outputs if self._live_run else ()) if live is None else set(live)
        main = outputs["dpcopula"]
        attrs = tuple(main["columns"])
        domains = {a: np.asarray(main["domains"][a]) for a in attrs}
        queries = self._queries(attrs, domains)
        ref = (self._reference_eval(reference, attrs, domains, queries)
               if reference is not None else None)
        evals = {key: self._synthetic_eval(out, attrs, domains, queries, key in live)
                 for key, out in outputs.items()}
        self.outputs = dict(outputs)
        self._view = {"outputs": dict(outputs), "notes": dict(notes), "reference": reference,
                      "where": where, "attrs": attrs, "domains": domains, "ref": ref,
                      "evals": evals, "live": live}

        dp = None
        dp_title = ""
        if where == "release":
            dp, dp_title = self._dp_dependence(main, attrs)
        self.figure.set_attributes(attrs)
        figures.update(self.figure, display.dependence_plot_data(
            attrs, synthetic=evals["dpcopula"].tau,
            reference=None if ref is None else ref.tau, dp=dp))
        errors = {}
        if ref is not None:
            s = self.sanity_bound
            truth = ref.answers
            for key, ev in evals.items():
                errors[key] = np.abs(ev.answers - truth) / np.maximum(truth, s)
        figures.update(self.figure, display.range_error_plot_data(errors))
        ref_name = {"teaching": "real table", "preview": "public stand-in (preview)",
                    "release": "real table"}[where]
        third = ("Difference: synthetic − " + ("real" if where == "teaching" else "stand-in")
                 if ref is not None else dp_title or "Difference: needs the real table")
        marks = [w for w in (f"LIVE, {int(main['n_rows']):,} rows" if "dpcopula" in live else "",
                             "preview" if where == "preview" else "") if w]
        scaled = (f"; LIVE: counts of {int(main['n_rows']):,} synthetic rows scaled to the DP "
                  f"record count" if live else "")
        self.figure.set_titles(
            tau_reference=(f"Kendall's τ: {ref_name}" if ref is not None else
                           "τ of the real table: not shown" if where == "release"
                           else "τ of the real table: hidden"),
            tau_synthetic="Kendall's τ: synthetic table" + (f" ({', '.join(marks)})" if marks
                                                            else ""),
            tau_third=third,
            errors={"teaching": f"Range-count queries ({len(queries[0])}, all chosen "
                                f"attributes): relative error against the real table, "
                                f"s = {_fmt(self.sanity_bound)}{scaled}",
                    "preview": f"Range-count queries ({len(queries[0])}): relative error "
                               f"against the public stand-in, the preview's own input{scaled}",
                    "release": "Range-query error: not available in analyst mode (it needs "
                               "the confidential table's true answers)"}[where]
            if ref is not None or where == "release"
            else "Range-query error: needs the real table (show the real table)",
        )
        # Without a reference table (after a release, or unticked) its τ and the errors against
        # it have nothing to show: those panels go rather than stand empty.
        figures.show_panels(self.figure.panels, tau_reference=ref is not None,
                            errors=ref is not None)
        self._draw_margin()
        self._set_quality(ref, evals, errors, notes, where, n_queries=len(queries[0]))
        self._stats(main, where)

    def _dp_dependence(self, output: dict, attrs) -> tuple[np.ndarray | None, str]:
        """The released DP correlation matrix in τ units over ``attrs`` (post-processing)."""
        corr_cols = list(output["correlation_columns"])
        matrix = output["correlation"]
        title = "Released DP P̃ as τ = (2/π) asin P̃"
        if matrix is None and output["partition_correlations"]:
            parts = [p for p in output["partition_correlations"] if p["correlation"] is not None]
            if not parts:
                return None, "No DP correlation released (fewer than 2 large attributes)"
            # The partition with the largest noisy size (cells in C order over the small
            # attributes' domains, as the engine enumerates them).
            small = list(output["details"].get("small_attributes", []))
            sizes = np.asarray(output["details"].get("partition_noisy_sizes", []), dtype=float)
            cells = itertools.product(*(np.asarray(output["domains"][a]).tolist()
                                        for a in small))
            noisy = dict(zip(cells, sizes.tolist(), strict=False))
            chosen = max(parts, key=lambda p: noisy.get(tuple(p["key"]), -np.inf))
            matrix = chosen["correlation"]
            key = ", ".join(f"{a} = {v}" for a, v in zip(small, chosen["key"], strict=False))
            title = f"Released DP P̃ as τ ({key})"
        if matrix is None:
            return None, "No DP correlation in this release"
        full = np.full((len(attrs), len(attrs)), np.nan)
        np.fill_diagonal(full, 1.0)
        tau = display.tau_from_correlation(matrix)
        pos = [attrs.index(c) for c in corr_cols]
        full[np.ix_(pos, pos)] = tau
        return np.nan_to_num(full, nan=0.0), title

    def _draw_margin(self) -> None:
        view = self._view
        if view is None:
            return
        attr = self.margin.value
        if attr not in view["attrs"]:
            attr = view["attrs"][0]
        main = view["outputs"]["dpcopula"]
        ref = view["ref"]
        figures.update(self.figure, display.margin_plot_data(
            view["domains"][attr], synthetic=view["evals"]["dpcopula"].shares(attr),
            reference=None if ref is None else ref.shares(attr),
            dp_margin=main["margins"].get(attr)))
        self.figure.set_margin_axis(attr)
        where = view["where"]
        self.figure.set_titles(
            margin_reference={"teaching": f"Real table: {attr}",
                              "preview": f"Public stand-in (preview): {attr}",
                              "release": "Real table: not shown (analyst mode)"}[where]
            if ref is not None or where == "release" else "Real table: hidden",
            margin_synthetic=(f"Synthetic table ({'LIVE, ' if 'dpcopula' in view['live'] else ''}"
                              f"{main['n_rows']:,} rows"
                              f"{', preview' if where == 'preview' else ''}): {attr}"),
        )
        figures.show_panels(self.figure.panels, margin_reference=ref is not None)

    # -- text ------------------------------------------------------------------------------
    @staticmethod
    def _peer_text(available: bool) -> str:
        if available:
            return ("<span>Today's peers (McKenna et al.: MST 2021, AIM 2022) through OpenDP's "
                    "mbi extra, at the same ε. Slow: minutes for AIM.</span>")
        return ("AIM and MST (McKenna et al.) come from OpenDP's mbi extra, which is not "
                f"installed here: {synth_params.PEER_INSTALL}.")

    def _update_banner(self) -> None:
        if self.problem():
            return
        eps, k = float(self.epsilon.value), float(self.k.value)
        m = len(self.selected)
        eps2 = eps / (k + 1.0)
        eps1 = eps - eps2
        pairs = m * (m - 1) // 2
        small = [a for a in self.selected if self.domains is not None
                 and self.domains[a].size < 10] if self.hybrid.value else []
        self.k_note.value = (
            f"<span>ε1 = {_fmt(eps1)} for the margins ({_fmt(eps1 / max(m, 1))} each), "
            f"ε2 = {_fmt(eps2)} for the dependence ({_fmt(eps2 / max(pairs, 1))} per pair)"
            f"</span>")
        method = ("Kendall's τ per pair (sensitivity 4/t on t sampled rows, Lemma 3.2.1), "
                  "P = sin(πτ/2)" if self.method.value == "kendall" else
                  "the average of per-block Gaussian-copula estimates over l disjoint blocks "
                  "(sensitivity 2/l, Alg. 2)")
        hybrid = (f" Hybrid (Alg. 6): the data are partitioned by {', '.join(small)}; the noisy "
                  f"partition sizes take the small attributes' share of ε1 and DPCopula runs in "
                  f"every partition (parallel composition)." if small else "")
        domains = ("Attribute domains declared public." if self.domains is not None else
                   "Attribute domains read from the data: NOT differentially private (teaching "
                   "only; declare domains= for a DP release).")
        summary = (f"ε = {_fmt(eps)}-DP {self.per_unit}" if self.domains is not None else
                   "domains read from the data: NOT differentially private")
        self.banner.value = (
            "<div class='dpw-banner-ok'>"
            + fold(f"<b>DPCopula (Li 2017, Ch. 3)</b>: {summary}",
                   f"One DP histogram per attribute ({html.escape(self.publisher.value)}) gives "
                   f"the margins, {method} gives the dependence; synthetic records are drawn "
                   f"from the Gaussian copula and the inverse DP margins (Alg. 3).{hybrid} "
                   f"Guarantee: ε = {_fmt(eps)}-DP {self.per_unit} (add/remove-one-record "
                   f"neighbours, ε1 + ε2, Thm 3.2.2's proof). {domains}")
            + "</div>")

    def _set_quality(self, ref, evals, errors, notes, where: str, *, n_queries: int) -> None:
        values: dict[str, dict[str, float]] = {}
        live = self._view["live"]
        later = False  # a τ left to the full tables
        if ref is not None:
            attrs = self._view["attrs"]
            iu = np.triu_indices(len(attrs), k=1)
            for key, ev in evals.items():
                tvd = [0.5 * float(np.abs(ev.shares(a) - ref.shares(a)).sum())
                       for a in attrs]
                # Lazy while the controls move: a baseline's τ is measured with its full table
                # (DPCopula's is drawn, so it is at hand).
                skip = key in live and key != "dpcopula"
                later = later or skip
                values[_SHORT[key]] = {
                    "mean relative error": float(np.mean(errors[key])),
                    "median relative error": float(np.median(errors[key])),
                    "mean margin TVD": float(np.mean(tvd)),
                    "mean |Δτ|": (math.nan if skip
                                  else float(np.mean(np.abs(ev.tau - ref.tau)[iu]))),
                }
        self.quality_values = values
        extra = "".join(f"<div class='dpw-note'>{html.escape(t)}</div>" for t in notes.values())
        if not values:
            text = ("No error measure in analyst mode: range-query errors, margin distances and "
                    "τ differences would need the confidential table." if where == "release"
                    else "")
            self.quality.value = f"<div>{text}</div>{extra}"
            return
        on = "on the public stand-in" if where == "preview" else "against the real table"
        head = "".join(f"<th>{html.escape(h)}</th>" for h in
                       ("method", *next(iter(values.values()))))
        rows = "".join(
            "<tr><td>" + html.escape(name) + "</td>"
            + "".join("<td>…</td>" if math.isnan(v) else f"<td>{v:.3f}</td>"
                      for v in vals.values()) + "</tr>"
            for name, vals in values.items())
        if live:
            extra = ("<div class='dpw-note'>LIVE: measured on the live tables (range counts "
                     "scaled to the DP record count)"
                     + ("; the baselines' τ (…) follows with the full tables" if later else "")
                     + ".</div>" + extra)
        self.quality.value = (
            f"<div class='dpw-quality-values'>Quality {on} (relative error of {n_queries} "
            f"random range-count queries, s = {_fmt(self.sanity_bound)}; margin total variation "
            f"distance; Kendall's τ difference):<table>{head}{rows}</table></div>{extra}")

    def _stats(self, output: dict, where: str) -> None:
        details = output["details"]
        extra = []
        if details.get("sample_size") is not None:
            extra.append(f"Kendall's τ on t = {int(details['sample_size']):,} sampled rows")
        if details.get("mle_blocks") is not None:
            extra.append(f"MLE on l = {int(details['mle_blocks']):,} blocks")
        if details.get("n_partitions"):
            extra.append(f"{int(details['n_partitions'])} hybrid partitions")
        if details.get("repaired"):
            extra.append("P̃ repaired to positive definite (Alg. 5 step 3)")
        budget = budget_parts(output["epsilon_parts"])
        if extra:  # the details follow the budget, a sentence of their own
            budget += ". " + "; ".join(extra)
        what = f"{output['n_rows']:,} synthetic records ({output['method']})"
        if self._live_run:
            what = (f"LIVE while the controls move: {what}, of about "
                    f"{max(round(float(details['noisy_n'])), 0):,} (the DP record count) in the "
                    f"full table drawn when they settle")
        self._set_stats(where, what, output["guarantee"], budget)

    def _live_status(self, releases: list[Release]) -> None:
        super()._live_status(releases)
        if self._live_run:
            self.status.value += self._live_note()

    def _preview_status(self, what: str = "") -> None:
        super()._preview_status(what)
        if self._live_run:
            self.status.value += self._live_note()

    def _live_note(self) -> str:
        return (f" <span class='dpw-live'>LIVE: {self.live_rows:,} synthetic rows per table "
                f"while the controls move; the full tables follow when they settle.</span>")
