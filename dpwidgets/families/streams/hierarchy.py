"""HierarchyWidget: PeGaSus over a public hierarchy of aggregated states, with pruning
(Chen 2018, §5.5, Alg. 18, Fig. 5.8).

A ``"hierarchical_pegasus"`` release (PHS-PGS) on a (states × time) array with a public
hierarchy: the tree, coloured pruned / kept at the current step as time advances, the selected
node's stream, and (teaching, or on the stand-in of a preview) the error per level against
HS-PGS and HS-LM. As for :class:`~dpwidgets.families.streams.widget.StreamWidget`, the release
is made once per parameter set and revealed step by step
(:mod:`~dpwidgets.families.streams.timeline`).
"""

from __future__ import annotations

import html
import zlib

import ipywidgets as ipw
import numpy as np

from ...session import Release, Session
from ...ui.base import CAUGHT, ReleaseWidget, budget_parts, fold, one_of
from ...ui.base import fmt as _fmt
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import FloatSlider, control_for, epsilon_guardrail
from . import display
from .params import SMOOTHERS, HierarchicalPegasusParams, hierarchy_of
from .timeline import STYLE, TICK_MS, play_controls

__all__ = ["COMPARE_MAX_CELLS", "HierarchyWidget"]

#: The largest hierarchy (states × steps) on which :class:`HierarchyWidget` compares HS-PGS and
#: HS-LM by default.
COMPARE_MAX_CELLS = 200_000


def _multi_total(n_states: int, length: int) -> int:
    """Multi_5's total (646,254 over 128 states × 20,000 steps), scaled to a smaller array."""
    return max(int(round(646_254 * n_states / 128 * length / 20_000)), n_states)


class HierarchyWidget(ReleaseWidget):
    """PeGaSus over a hierarchy of aggregated states, with pruning (Chen 2018, §5.5, Alg. 18, Fig. 5.8).

    Parameters
    ----------
    session : Session
        Holds the (states × time) counts and their budget.
    dataset : str, optional
        A 2-D dataset of the session: one row per state (leaf), one column per step. Required
        in analyst mode (previews run on its public stand-in of the same shape). In teaching
        mode without one, a Multi_5-shaped array (``datasets.multi_state_streams``) of
        ``n_states`` × ``length`` is added.
    n_states, length : int
        Teaching: the size of the Multi_5-like array (Chen 2018: 128 × 20,000, h = 8; default
        16 × 2,000, h = 5, for speed).
    parents : sequence of int, optional
        The public hierarchy as a parent array; default the binary tree over the states.
    epsilon : float
    pruning_share : float
        ε_pr/ε, the pruning budget (the text gives no value; 0.1 by default).
    beta : float, optional
        Pruning threshold β; ``None``: 2h/ε_pr (``auto_beta`` checked).
    smoother : {"adaptive", "median", "average", "james_stein"}
        Default "adaptive" (the engine's new default; the text's is "median").
    compare : bool, optional
        Also run HS-PGS and HS-LM with the same ε and draw the error per level: in teaching
        mode each is a release of its own (charged); in an analyst preview they run on the
        stand-in (free); an analyst release is PHS-PGS only. Default: on up to
        :data:`COMPARE_MAX_CELLS` states × steps (the lesson's 16 × 2,000), off beyond, where
        the two extra runs over every node take seconds per ε move; the checkbox turns it
        on.
    node : int
        The node whose streams are drawn (0: the root in the default tree).
    debounce : float

    Attributes
    ----------
    figure : HierarchyFigure
        Sources ``edges``, ``nodes`` (status at the current step), ``spark_*``, ``levels``.
    play, time : ipywidgets
        The current step t (the play control's value; nodes are coloured pruned / kept at t).
    quality_values : dict
        Teaching / preview: scaled total L1 of every method over all nodes and steps, and the
        ratios HS-LM / PHS-PGS and HS-PGS / PHS-PGS (Chen 2018, Fig. 5.8).

    Notes
    -----
    One release per parameter set, revealed step by step as for
    :class:`~dpwidgets.families.streams.widget.StreamWidget`: the pruning at step t uses only
    c_t (PRUNE runs per step), and each node's PeGaSus only its unpruned steps up to t.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import HierarchyWidget
    >>> widget = HierarchyWidget(Session("teaching", seed=0), n_states=4, length=50,
    ...                          compare=False, debounce=0)
    >>> widget.session.datasets, widget.node.value, widget.session.spent("multi_4x50")
    (['multi_4x50'], 0, 0.1)
    """

    mechanism = "hierarchical_pegasus"

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        n_states: int = 16,
        length: int = 2000,
        parents=None,
        epsilon: float = 0.1,
        pruning_share: float = 0.1,
        beta: float | None = None,
        smoother: str = "adaptive",
        compare: bool | None = None,
        node: int = 0,
        start: int | None = None,
        debounce: float = 0.15,
    ):
        one_of("smoother", smoother, sorted(SMOOTHERS))
        if not 0.0 < pruning_share < 1.0:
            raise ValueError(f"pruning_share must be in (0, 1), got {pruning_share!r}")
        self._setup(session, debounce=debounce, callback=self._update)
        self._outputs: dict[str, dict] = {}
        self._shown: display.HierarchyDisplay | None = None
        self._public: np.ndarray | None = None
        self._where = "teaching"
        self._syncing = False
        self._dirty = True

        if dataset is None:
            if not session.teaching:
                raise ValueError("an analyst session needs dataset= (a (states × time) array "
                                 "added with a public stand_in of the same shape)")
            dataset = self._teaching_dataset(int(n_states), int(length))
        shape = session.shape(dataset)
        if len(shape) != 2:
            raise ValueError(f"dataset {dataset!r} must be 2-D (states × time), has {shape}")
        self.dataset = dataset
        self.hierarchy = hierarchy_of(parents, shape[0])
        self.n_steps = shape[1]
        self._agg_public: np.ndarray | None = None

        self.epsilon = control_for(HierarchicalPegasusParams, "epsilon", epsilon)
        self.pruning = FloatSlider(value=pruning_share, min=0.01, max=0.5, step=0.01,
                                   description="ε_pr / ε", readout_format=".2f", style=STYLE)
        self.pruning.add_class("dpw-pruning")
        self.auto_beta = ipw.Checkbox(value=beta is None, description="β = 2h/ε_pr (auto)")
        self.beta = ipw.BoundedFloatText(value=beta if beta is not None else 0.0, min=-1e12,
                                         max=1e12, description="β", style=STYLE,
                                         layout=ipw.Layout(width="200px"))
        self.beta.add_class("dpw-beta")
        self.smoother = control_for(HierarchicalPegasusParams, "smoother", smoother)
        if compare is None:
            compare = shape[0] * shape[1] <= COMPARE_MAX_CELLS
        self.compare = ipw.Checkbox(
            value=bool(compare), style=STYLE,
            description=("compare HS-PGS and HS-LM (each its own release)" if session.teaching
                         else "compare HS-PGS and HS-LM on the stand-in (free)"))
        self.compare.add_class("dpw-compare")
        first = self.n_steps - 1 if start is None else int(min(max(start, 0), self.n_steps - 1))
        self.play, self.time, self._link = play_controls(
            first, self.n_steps - 1, step=1, interval=TICK_MS * 2, label="step t")
        m = self.hierarchy.n_nodes
        self.node = ipw.Dropdown(
            options=[(f"node {i} (level {int(lev)})", i)
                     for i, lev in enumerate(self.hierarchy.levels)],
            value=int(node) if 0 <= int(node) < m else 0, description="node", style=STYLE)
        self.node.add_class("dpw-node")
        self.figure = display.hierarchy_figure(self.hierarchy.parents)
        ensure_bokehjs()
        self.plot = bokeh_widget(self.figure.layout)
        controls = ipw.VBox([
            ipw.HBox([self.epsilon, self.epsilon_note]),
            ipw.HBox([self.pruning, self.auto_beta, self.beta, self.smoother]),
            ipw.HBox([self.play, self.time, self.node]),
            ipw.HBox([self.compare, self.release_button, self.status]),
        ])
        controls.add_class("dpw-controls")
        self._assemble([self.banner, controls, self.message, self.plot, self.quality,
                        self.stats], "dpw-hierarchy-widget")
        self._watch(self._on_release_param, self.epsilon, self.pruning, self.auto_beta,
                    self.beta, self.smoother, self.compare)
        self._watch(self._on_time, self.play)
        self._watch(self._on_node, self.node)
        self.figure.sources["nodes"].selected.on_change("indices", self._on_tap)
        self._update()

    def _teaching_dataset(self, n_states: int, length: int) -> str:
        from .standins import multi_state_streams

        name = f"multi_{n_states}x{length}"
        if name not in self.session.datasets:
            total = _multi_total(n_states, length)
            data = multi_state_streams(np.random.default_rng(zlib.crc32(name.encode())),
                                       n_states=n_states, length=length, total=total)
            stand_in = multi_state_streams(np.random.default_rng(0), n_states=n_states,
                                           length=length, total=total)
            self.session.add_dataset(name, data, total_epsilon=10.0, stand_in=stand_in,
                                     description=f"Multi_5-shaped: {n_states} states × "
                                     f"{length} steps")
        return name

    # -- parameters ------------------------------------------------------------------------
    @property
    def params(self) -> dict:
        """The PHS-PGS release parameters (all public)."""
        eps = float(self.epsilon.value)
        eps_pr = float(self.pruning.value) * eps
        beta = (2.0 * self.hierarchy.height / eps_pr if self.auto_beta.value
                else float(self.beta.value))
        return {"epsilon": eps, "method": "phs_pegasus",
                "parents": self.hierarchy.parents.tolist(), "smoother": self.smoother.value,
                "epsilon_pr": eps_pr, "beta": beta}

    def _baseline_params(self, method: str) -> dict:
        p = self.params
        out = {"epsilon": p["epsilon"], "method": method, "parents": p["parents"]}
        if method == "hs_pegasus":
            out["smoother"] = p["smoother"]
        return out

    @property
    def t(self) -> int:
        return int(self.play.value)

    @property
    def output(self) -> dict | None:
        """The PHS-PGS DP output a user may export: analyst mode, the last paid release's only
        (never a preview); teaching mode, the live run drawn."""
        if not self.session.teaching:
            return None if self.last_release is None else self.last_release.output
        return self._outputs.get("phs")

    # -- events ----------------------------------------------------------------------------
    def _on_release_param(self, change=None) -> None:
        if self._syncing:
            return
        self._release = None
        self._dirty = True
        self._debouncer.trigger()

    def rerun(self) -> None:
        self._dirty = True
        self._update()

    def _on_time(self, change) -> None:
        """A tick of the play control (or a scrub): the tree at the new step, from the
        display drawn."""
        if not self._syncing and self._shown is not None:
            self._shown.draw_time(self.figure, self.t)

    def _on_node(self, change) -> None:
        if self._syncing:
            return
        with self._setting():
            self.figure.sources["nodes"].selected.indices = [int(change["new"])]
        if self._shown is not None:
            self._shown.draw_node(self.figure, int(self.node.value))

    def _on_tap(self, attr, old, new) -> None:
        """A node clicked in the browser selects it (jupyter_bokeh syncs the selection)."""
        if self._syncing or not new:
            return
        self.node.value = int(new[0])

    # -- actions ---------------------------------------------------------------------------
    def draw_release(self, release: Release) -> None:
        self._dirty = True
        self._update()

    def _update(self) -> None:
        problem = self.problem()
        if problem:
            self._refuse(problem)
            return
        try:
            if self._dirty:
                self._compute()
                self._dirty = False
            self._draw()
        except CAUGHT as exc:
            self._show_error(exc)
        self._update_button()

    def _compute(self) -> None:
        p = self.params
        if self.auto_beta.value:
            with self._setting():
                self.beta.value = float(f"{p['beta']:.6g}")
        self.beta.disabled = bool(self.auto_beta.value)
        remaining = None
        if not self.session.teaching and not self.session.is_cached(
                self.dataset, self.mechanism, **p):
            remaining = self.session.remaining(self.dataset)  # a replay would be free
        spend = self.cost() * (3 if self.session.teaching and self.compare.value else 1)
        self.epsilon_note.value = ("<span class='dpw-note'>"
                                   f"{html.escape(epsilon_guardrail(spend, remaining))}</span>")
        methods = {"phs": p}
        if self.compare.value:
            methods["hs"] = self._baseline_params("hs_pegasus")
            methods["lm"] = self._baseline_params("hs_laplace")
        self._outputs = {}
        if self.session.teaching:
            charged = []
            for key, params in methods.items():
                rel = self._live_release(self.mechanism, **params)
                self._outputs[key] = rel.output
                charged.append(rel.charged)
            self._public = self.session.public_view(self.dataset)
            self._where = "teaching"
            self.status.value = (f"<span>live run #{self._run}: {len(methods)} release(s) of "
                                 f"ε = {p['epsilon']:.3g} each, "
                                 f"{'charged' if any(charged) else 'cached, free'}</span>")
        elif self._release is not None:
            self._outputs = {"phs": self._release.output}
            self._public = None
            self._where = "release"
            self.status.value = ("<span class='dpw-released'>Showing the released DP output "
                                 "(PHS-PGS only, no true counts).</span>")
        else:
            for key, params in methods.items():
                self._outputs[key] = self._preview_run(self.mechanism, **params).output
            self._public = self.session.stand_in(self.dataset)
            self._where = "preview"
            self.status.value = (
                "<span class='dpw-preview'>PREVIEW on the public stand-in (same shape) — "
                f"nothing spent. Release would charge ε = {_fmt(self.cost())} (PHS-PGS).</span>")
        self._agg_public = self._aggregate_public()
        self._banner()

    def _aggregate_public(self) -> np.ndarray | None:
        """The hierarchy's aggregates of what may be shown (the data in teaching mode, the
        stand-in in a preview): computed once per array, not at every ε move."""
        if self._public is None:
            return None
        cached = getattr(self, "_agg_cache", None)
        if cached is None or cached[0] is not self._public:
            self._agg_cache = (self._public, self.hierarchy.aggregate(self._public))
        return self._agg_cache[1]

    # -- drawing ---------------------------------------------------------------------------
    def _draw(self) -> None:
        """A new display of the outputs, drawn at the step and node selected."""
        self._shown = display.HierarchyDisplay.from_outputs(
            self._outputs, self.hierarchy, where=self._where, truth=self._agg_public)
        self._shown.draw(self.figure, t=self.t, node=int(self.node.value))
        self.quality_values = dict(self._shown.quality)
        self._quality_text()
        self._stats()

    def _quality_text(self) -> None:
        q = self.quality_values
        if self._agg_public is None:
            self.quality.value = ("<div>No error measure on confidential data: it needs the "
                                  "true aggregates.</div>" if self._where == "release" else "")
            return
        parts = [f"{k.split(' ')[0]} {v:.3g}" for k, v in q.items() if k.endswith("scaled L1")]
        if "HS-LM / PHS-PGS" in q:
            parts.append(f"PHS-PGS is {q['HS-LM / PHS-PGS']:.3g}× below HS-LM and "
                         f"{q['HS-PGS / PHS-PGS']:.3g}× below HS-PGS (Chen 2018, Fig. 5.8: 78× and 4× "
                         "at ε = 0.1 on Multi_5)")
        on = "on the public stand-in" if self._where == "preview" else "against the truth"
        self.quality.value = (f"<div class='dpw-quality-values'>Scaled total L1 {on}: "
                              f"{html.escape('; '.join(parts))}.</div>")

    def _banner(self) -> None:
        p = self.params
        h = self.hierarchy
        rest = p["epsilon"] - p["epsilon_pr"]
        self.banner.value = "<div class='dpw-banner-ok'>" + fold(
            "<b>PHS-PGS — hierarchical PeGaSus with pruning (Chen 2018, Alg. 18)</b>: "
            f"{_fmt(p['epsilon'])}-DP {self.per_unit}, event-level",
            f"{h.n_nodes} aggregated streams, height h = {h.height}. Every step, PRUNE compares each "
            f"unpruned node's count + Lap(h/ε_pr) with β = {_fmt(p['beta'])} (ε_pr = "
            f"{_fmt(p['epsilon_pr'])}, Laplace per level — the text's SVT reading does not go "
            "through, see dpwidgets.engine.streams); the children of a small node are pruned "
            f"(released as 0) and their budget goes to it. PeGaSus gets {_fmt(rest)} split "
            "over the levels.") + "</div>"

    def _stats(self) -> None:
        out = self._outputs["phs"]
        pruned = out.get("pruned")
        share = 0.0 if pruned is None else float(np.asarray(pruned).mean())
        self._set_stats(self._where, f"{self.hierarchy.n_nodes} nodes × {self.n_steps:,} steps, "
                        f"{share:.1%} of node-steps pruned", out["guarantee"],
                        budget_parts(out["epsilon_parts"]))
