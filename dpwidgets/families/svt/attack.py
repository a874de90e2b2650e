"""AttackDemo: the GPTT reconstruction attack (Chen 2018, Alg. 6-7) against a correct mechanism.

Teaching mode only: the attack runs a mechanism that is not private for any ε, so an analyst
session refuses it (the widget then only says so). Controls: ``epsilon``, ``delta``,
``window`` (cells drawn), ``small_max``, ``run_button`` (alias ``release_button``: a fresh
run). Outputs: ``figure`` (sources ``cells`` and ``rates``), ``stats``, ``message``.
"""

from __future__ import annotations

import html

import ipywidgets as w
import numpy as np

from ...session import Release, Session
from ...ui import figures
from ...ui.base import ReleaseWidget, fold
from ...ui.base import is_echo as _is_echo
from ...ui.bokeh_widget import bokeh_widget, ensure_bokehjs
from ...ui.controls import EpsilonSlider, IntRangeSlider, IntSlider
from . import display
from .preview import attack_rates, reconstruct_with_svt

__all__ = ["AttackDemo"]

DEFAULT_DATASET = "zipf_histogram"


def _default_histogram(session: Session) -> str:
    from . import standins

    counts = np.asarray(standins.zipf_histogram(domain=4096, rng=np.random.default_rng(0)), dtype=float)
    session.add_dataset(
        DEFAULT_DATASET, counts, total_epsilon=10.0,
        description="Zipf histogram, domain 4096 (Chen 2018, Table 3.2 setup)",
    )
    return DEFAULT_DATASET


class AttackDemo(ReleaseWidget):
    """Reconstruct a histogram with the GPTT attack and compare with standard SVT.

    Parameters
    ----------
    session : Session
        A teaching session (the attack is refused in analyst mode).
    dataset : str, optional
        A histogram (non-negative integer counts). Default: the Chen 2018, §3.2.4 setup (a Zipf
        histogram over 4096 cells), added to the session as ``"zipf_histogram"`` if missing.
    epsilon : float
        Initial ε of the attack (split ε1 = ε2 = ε/2 as in Chen 2018, Alg. 6-7).
    delta : float
        The attack's failure probability δ (Chen 2018: 0.05).
    small_max : int
        "Small counts" are those <= small_max (Chen 2018, Table 3.3: [0, 5]).
    debounce : float
        Seconds of quiet before recomputing in a kernel.

    Examples
    --------
    In a teaching session without a histogram, the Zipf setup is added and attacked once:

    >>> from dpwidgets import Session
    >>> from dpwidgets.widgets import AttackDemo
    >>> session = Session("teaching", seed=0)
    >>> demo = AttackDemo(session, epsilon=0.5, debounce=0)
    >>> session.datasets, demo.c.value, session.spent("zipf_histogram")
    (['zipf_histogram'], 10, 0.5)
    """

    mechanism = "reconstruction"
    title = "GPTT reconstruction attack"

    def __init__(
        self,
        session: Session,
        dataset: str | None = None,
        *,
        epsilon: float = 0.5,
        delta: float = 0.05,
        small_max: int = 5,
        debounce: float = 0.3,
    ):
        self._setup(session, debounce=debounce)
        self.epsilon = EpsilonSlider(epsilon, min_epsilon=0.01, max_epsilon=10.0)
        # A log slider that ignores the browser snapping δ = 0.05 to 10^-1.3 = 0.0501 and
        # sending it back (a plain FloatLogSlider took that echo for a move and reran the
        # attack, charging the teaching ledger for a change nobody made).
        self.delta = EpsilonSlider(delta, min_epsilon=1e-3, max_epsilon=10**-0.5,
                                   description="δ", accepted=(0.0, 1.0))
        self.delta.remove_class("dpw-epsilon")
        self.delta.add_class("dpw-delta")
        self.small_max = IntSlider(value=small_max, min=0, max=50, description="small ≤")
        self.c = IntSlider(
            value=10, min=1, max=100, description="SVT cutoff c",
            style={"description_width": "initial"},
        )
        self.run_button = self.release_button
        self.run_button.description = "Run again (fresh noise)"
        handle = display.attack_figure()
        self.figure = handle
        ensure_bokehjs()
        self.plot = bokeh_widget(handle.layout)

        if not session.teaching:
            self.dataset = dataset
            self.window = w.IntRangeSlider(value=(0, 128), min=0, max=1, description="cells")
            for control in (self.epsilon, self.delta, self.small_max, self.run_button,
                            self.window, self.c):
                control.disabled = True
            self.banner.value = (
                "<div class='dpw-banner-broken'><b>Refused in analyst mode.</b> The "
                "reconstruction attack runs GPTT, which is not differentially private for any "
                "ε; it runs only in a teaching session on public data.</div>"
            )
            self._assemble([self.banner], "dpw-attack-demo")
            return

        if dataset is None:
            dataset = (
                DEFAULT_DATASET if DEFAULT_DATASET in session.datasets
                else _default_histogram(session)
            )
        self.dataset = dataset
        n = session.size(dataset)
        self.window = IntRangeSlider(
            value=(0, min(n, 128)), min=0, max=n, description="cells shown",
            continuous_update=False, style={"description_width": "initial"},
        )
        controls = w.VBox(
            [w.HBox([self.epsilon, self.delta]), w.HBox([self.small_max, self.window]),
             w.HBox([self.c, self.run_button])]
        )
        controls.add_class("dpw-controls")
        self._assemble([self.banner, controls, self.message, self.plot, self.stats],
                       "dpw-attack-demo")
        self._last: tuple[Release, np.ndarray] | None = None
        self._watch(self.controls_changed, self.epsilon, self.delta, self.small_max, self.c)
        self._watch(self._on_window, self.window)
        self.redraw()

    @property
    def params(self) -> dict:
        return {"epsilon": float(self.epsilon.value), "delta": float(self.delta.value)}

    def update_banner(self) -> None:
        self.banner.value = (
            "<div class='dpw-banner-broken' style='background:#b03a2e;color:white;"
            "padding:6px;border-radius:3px'>"
            + fold("<b>NOT PRIVATE — GPTT</b>: the threshold tests reveal the order of the "
                   "counts",
                   "(Chen 2018, Alg. 5; Lyu, Su & Li 2017, §3.3, §9): no query noise on the "
                   "difference queries, so the threshold tests reveal the order of the counts. "
                   f"Compared with standard SVT at the same ε (ε-DP {self.per_unit}).")
            + "</div>"
        )

    def controls_changed(self, change=None) -> None:
        if not _is_echo(change):
            self._debouncer.trigger()

    def _on_window(self, change=None) -> None:
        """Show other cells (no rerun); a window beyond the cells is refused, not fitted."""
        if _is_echo(change):
            return
        problem = self.problem()
        if problem:
            self._refuse(problem)
            return
        if "dpw-error" in self.message.value:
            # A refusal held the controls back: run what they say now (unchanged ones replay
            # from the session's cache, free).
            self.message.value = ""
            self._debouncer.trigger()
        else:
            self._redraw()

    def _compare_svt(self, counts: np.ndarray, epsilon: float) -> np.ndarray | None:
        """What the same attacker reconstructs through standard SVT at the same ε."""
        return reconstruct_with_svt(
            counts, epsilon, float(self.delta.value), self._rng, c=int(self.c.value)
        )

    def draw_live(self) -> None:
        """Rerun the attack (a teaching release) and the standard-SVT comparison."""
        release = self._live_release()
        counts = self.session.public_view(self.dataset)
        svt = self._compare_svt(counts, float(self.epsilon.value))
        self._last = (release, svt)
        self.live_status([release])
        self._redraw()

    def _redraw(self) -> None:
        if self._last is None:
            return
        release, svt = self._last
        counts = self.session.public_view(self.dataset)
        estimate = release.output["estimate"]
        small = int(self.small_max.value)
        gptt = attack_rates(counts, estimate, small_max=small)
        rates = {"GPTT attack": (gptt.overall, gptt.small)}
        if svt is not None:
            standard = attack_rates(counts, svt, small_max=small)
            rates["standard SVT"] = (standard.overall, standard.small)
        figures.update(
            self.figure,
            display.attack_plot_data(
                true=counts, attack=estimate,
                svt=svt if svt is not None else np.full(counts.shape, np.nan),
                rates=rates, window=tuple(self.window.value),
            ),
        )
        lines = [
            f"{name}: {overall:.1%} of cells recovered exactly, {small_rate:.1%} of the cells "
            f"with counts ≤ {small}" for name, (overall, small_rate) in rates.items()
        ]
        self.stats.value = "<div>" + "<br>".join(html.escape(x) for x in lines) + "</div>"
