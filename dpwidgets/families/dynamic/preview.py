"""The runs of a redraw of the dynamic-histogram widget, and what is measured on them.

Teaching mode (public data): the method and its comparisons are live releases through the
session, each charged to the teaching ledger. Analyst mode: they are free previews on the
dataset's public stand-in, never releases. Either way the errors over time and the distance the
decisions tested are measured against a reference the widget may draw: the data in teaching
mode, the stand-in in a preview -- never a confidential series (after a paid release there is
no reference, and nothing is measured).

:class:`DynamicRuns` is a part of
:class:`~dpwidgets.families.dynamic.widget.DynamicHistogramWidget` (a mixin).

Examples
--------
>>> from dpwidgets.families.dynamic.preview import Measures
>>> Measures(None, None, [], {}).values
{}
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...session import Release
from ...ui.accuracy import Accuracy
from . import display
from .text import METHODS, THRESHOLD_METHODS

__all__ = ["DynamicRuns", "Measures"]


@dataclass(frozen=True)
class Measures:
    """What a redraw measures against a public reference (all ``None`` / empty without one).

    Attributes
    ----------
    truth_marginal : array (N, L) or None
        The reference's first-attribute marginal over time.
    distance : array (N,) or None
        The distance the method's decisions tested (threshold methods only).
    errors : list of arrays (N,)
        The error over time of the method, then of each comparison.
    values : dict
        The mean of each error, by the method's short name (:data:`~dpwidgets.families.dynamic.text.METHODS`).
    """

    truth_marginal: np.ndarray | None
    distance: np.ndarray | None
    errors: list
    values: dict


class DynamicRuns:
    """The runs of a redraw and the measures on them (a mixin of
    :class:`~dpwidgets.families.dynamic.widget.DynamicHistogramWidget`).

    It reads the host's ``session``, ``dataset``, ``shape``, controls ``method`` and
    ``show_truth``, ``params_for`` and ``comparisons``, and keeps ``_marginals`` and ``_errors``
    (the derived arrays of the last few references and outputs) and ``_last_releases``.

    Examples
    --------
    >>> from dpwidgets import Session
    >>> from dpwidgets.families.dynamic.widget import DynamicHistogramWidget
    >>> s = Session(mode="teaching", seed=0)
    >>> wd = DynamicHistogramWidget(s, data="moving", debounce=0)
    >>> [r.mechanism for r in wd._last_releases]  # the method, then its comparisons
    ['dsat', 'dynamic_fixed', 'dynamic_uniform']
    >>> wd.close(); s.close()
    """

    def compute(self) -> tuple[dict, list[dict], np.ndarray | None, str]:
        """The engine part of a redraw: the method's output, the comparisons' outputs, the
        reference allowed on screen (data in teaching, stand-in in a preview) and where.

        Teaching: live releases through the session (charged). Analyst: previews on the
        stand-in (free).
        """
        method, ds = self.method.value, self.dataset
        if self.session.teaching:
            main = self._live_release()
            others = [self.session.release(ds, m, run=self._run, **self.params_for(m))
                      for m in self.comparisons()]
            self._last_releases = [main, *others]
            reference = self.session.public_view(ds) if self.show_truth.value else None
            return main.output, [r.output for r in others], reference, "teaching"
        outputs = []
        for m in [method, *self.comparisons()]:
            outputs.append(self._preview_run(m, **self.params_for(m)).output)
        return outputs[0], outputs[1:], self.session.stand_in(ds), "preview"

    # -- accuracy before spending (analyst) -------------------------------------------------
    @property
    def accuracy_model(self) -> Accuracy:
        """The accuracy panel's strategy (an :class:`~dpwidgets.ui.accuracy.Accuracy`)."""
        what = "the error per time step (against the stand-in, as the error panel plots it)"
        return Accuracy(what, self._error_per_time)

    def _error_per_time(self, release: Release) -> np.ndarray:
        """The error per time step of a preview against the stand-in it ran on (public)."""
        ref = self._reference(self.session.stand_in(self.dataset))
        return display.error_per_time(release.output["histograms"],
                                      release.output["release_points"], ref["f32"])

    # -- measures against the reference ---------------------------------------------------
    def _reference(self, series: np.ndarray) -> dict:
        """What the widget derives from a reference it may draw (the data in teaching mode, the
        stand-in in a preview), once per array: float32 copies for the error measures and the
        first attribute's marginal."""
        hit = self._marginals.get(id(series))
        if hit is None or hit[0] is not series:
            if len(self._marginals) > 4:
                self._marginals.clear()
            f32 = np.asarray(series, dtype=np.float32)
            hit = (series, {"f32": f32, "dist": display.normalise_rows(f32),
                            "marginal": display.marginal(series, self.shape)[0]})
            self._marginals[id(series)] = hit
        return hit[1]

    def _error_of(self, output: dict, ref: dict) -> np.ndarray:
        """:func:`~dpwidgets.families.dynamic.display.error_per_time` of a release, cached per output and reference
        (a replayed release -- e.g. the ε/N comparison when only C or T moved -- is the same
        output object, so its error is not measured again)."""
        key = (id(output), id(ref["f32"]))
        hit = self._errors.get(key)
        if hit is None or hit[0] is not output or hit[1] is not ref["f32"]:
            if len(self._errors) > 16:
                self._errors.clear()
            err = display.error_per_time(output["histograms"], output["release_points"],
                                         ref["f32"])
            hit = (output, ref["f32"], err)
            self._errors[key] = hit
        return hit[2]

    def _measure(self, output: dict, comparisons: list[dict],
                 reference: np.ndarray | None) -> Measures:
        """The errors of the method and its comparisons, and the distance the method's
        decisions tested, against ``reference`` (nothing without one)."""
        if reference is None:
            return Measures(None, None, [], {})
        method = self.method.value
        ref = self._reference(reference)
        errors: list[np.ndarray] = []
        values: dict[str, float] = {}
        names = [method, *self.comparisons()][: 1 + len(comparisons)]
        for name, out in zip(names, [output, *comparisons], strict=True):
            err = self._error_of(out, ref)
            errors.append(err)
            values[METHODS[name][1]] = float(err.mean())
        distance = None
        if method in THRESHOLD_METHODS:
            points = np.asarray(output["release_points"], dtype=bool)
            # The distance the decisions looked at: to the last private release (the
            # text's) or to the true snapshot at the last release time (the paced DSAT).
            to_snapshot = output.get("details", {}).get("reference") == "snapshot"
            rows = ref["dist"][points] if to_snapshot else output["histograms"]
            distance = display.distance_to_last_release(rows, points, ref["dist"])
        return Measures(ref["marginal"], distance, errors, values)
