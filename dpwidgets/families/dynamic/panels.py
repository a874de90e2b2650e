"""The drawing of the dynamic-histogram widget: a release's output (and, where there is one,
the measures against a public reference) onto the figure of :func:`~dpwidgets.families.dynamic.display.dynamic_figure`,
and the histogram at the selected time.

Everything drawn is a DP output (the released histograms, the release points and budgets, the
public threshold trajectory), post-processed, or a measure against a reference the widget may
draw (:mod:`~dpwidgets.families.dynamic.preview`). The time slider only redraws the snapshot panel: it never runs or spends.

:class:`DynamicPanels` is a part of
:class:`~dpwidgets.families.dynamic.widget.DynamicHistogramWidget` (a mixin).

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.dynamic.panels import release_marginal
>>> output = {"histograms": np.ones((2, 6)), "n_bins": 6,
...           "release_points": np.array([True, False, True, False])}
>>> series, positions, width = release_marginal(output, (3, 2))
>>> series.shape, series[1].tolist(), width
((4, 3), [2.0, 2.0, 2.0], 1.0)
"""

from __future__ import annotations

import numpy as np

from . import display
from .spec import expand_releases
from .text import METHODS, THRESHOLD_METHODS

__all__ = ["DynamicPanels", "release_marginal"]


def release_marginal(output: dict, shape: tuple[int, ...]):
    """The released series' first-attribute marginal over time, ``(N, L)``, with the level
    positions and width of :func:`~dpwidgets.families.dynamic.display.marginal` (post-processing of the DP output: the
    k new histograms, repeated between the release points)."""
    rows = np.asarray(output["histograms"], float).reshape(-1, int(output["n_bins"]))
    values, positions, width = display.marginal(rows, shape)
    series = expand_releases({"histograms": values, "n_bins": values.shape[1],
                              "release_points": output["release_points"]})
    return series, positions, width


class DynamicPanels:
    """The drawing of :class:`~dpwidgets.families.dynamic.widget.DynamicHistogramWidget` (a
    mixin).

    It reads the host's ``figure``, ``shape``, ``attributes``, ``n_times``, controls ``method``
    and ``time``, ``comparisons`` and ``_measure`` (:class:`~dpwidgets.families.dynamic.preview.DynamicRuns`), and keeps
    ``shown_output``, ``_view`` (what the time slider redraws) and ``_truth_drawn``. The
    widget's example moves the time slider: the snapshot panel is redrawn, nothing runs.
    """

    def _release_marginal(self, output: dict):
        return release_marginal(output, self.shape)

    def draw(self, output: dict, comparisons: list[dict], reference: np.ndarray | None,
             where: str) -> None:
        """The drawing part of a redraw (ColumnDataSource updates only)."""
        method = self.method.value
        self.shown_output = output
        measures = self._measure(output, comparisons, reference)
        self._view = display.DynamicDisplay.from_output(
            output, self._release_marginal(output), measures, n_times=self.n_times,
            n_levels=int(self.shape[0]), attribute=self.attributes[0],
            error_labels=[METHODS[m][1] for m in [method, *self.comparisons()]],
            titles=self._titles(output, where), truth_on_screen=self._truth_drawn)
        self._truth_drawn = self._view.truth
        self._view.draw(self.figure)
        self._draw_time()
        self._set_quality(measures.values, where)
        self._stats(output, where)

    def _titles(self, output: dict, where: str) -> dict[str, str]:
        """The panels' titles for ``output``, shown as ``where`` says."""
        method = self.method.value
        short = METHODS[method][1]
        return dict(
            truth_heat={"teaching": f"Data (public, teaching): {self.attributes[0]} over time",
                        "preview": f"Public stand-in (preview): {self.attributes[0]} over time",
                        "release": "Data: not shown (analyst mode)"}[where],
            release_heat=f"Release ({short}{', preview' if where == 'preview' else ''}): "
                         f"{output['n_releases']} new histogram(s), ▼ release points",
            threshold=("Threshold T_i and release points" if method in THRESHOLD_METHODS
                       else "Release points (no threshold)"),
            error={"teaching": "Mean |error| per bin over time, against the data",
                   "preview": "Mean |error| per bin over time, on the public stand-in",
                   "release": "Error: not shown (it needs the confidential data)"}[where],
        )

    def _draw_time(self) -> None:
        if self._view is not None:
            self._view.draw_time(self.figure, int(self.time.value))
