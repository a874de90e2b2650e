"""The sliding-window and event-monitor panels of the stream widget (Chen 2018, §5.4,
Fig. 5.5-5.7).

Both panels are post-processing of the one ``"pegasus"`` release the widget shows: window sums
(WSS, the sum of the estimates, the sum of the noisy counts), the monitored statistic with the
detections at δ, and -- where a public truth is shown (teaching data, or the stand-in of a
preview) -- the true window sums, the true events and the detection ROC. Moving w, the event
kind or δ spends nothing.

:class:`WindowEventPanels` is a part of
:class:`~dpwidgets.families.streams.widget.StreamWidget` (a mixin): from the widget's controls
(``w``, ``kind``, ``delta``, ``event_delta``, ``smoother``) and state it computes what the two
panels draw (the widget's :class:`~dpwidgets.families.streams.display.StreamDisplay` draws
it), and keeps the window sums and ROC curves of the release shown, so that moving δ only
moves the operating point.
"""

from __future__ import annotations

import math

import numpy as np

from .quality import detected, rates_at, roc_curves, window_quality
from .spec import event_statistic, window_sums

__all__ = ["WindowEventPanels", "nice"]


def nice(x: float, up: bool = True) -> float:
    """A 1-2-5 × 10^k number at or beyond ``x`` (``up``: >= x, else <= x, for x > 0); 0 for
    x <= 0.

    Examples
    --------
    >>> nice(3.2), nice(3.2, up=False), nice(0.0)
    (5.0, 2.0, 0.0)
    """
    if x <= 0:
        return 0.0
    k = math.floor(math.log10(x))
    for m in ((1, 2, 5, 10) if up else (10, 5, 2, 1)):
        v = m * 10.0**k
        if (up and v >= x) or (not up and v <= x):
            return float(v)
    return float(x)


class WindowEventPanels:
    """The windows and events panels of :class:`~dpwidgets.families.streams.widget.StreamWidget`
    (a mixin).

    It reads the host's controls ``w``, ``kind``, ``delta``, ``event_delta`` and
    ``smoother``, the output's version ``_version`` and origin ``_where``, the estimates
    drawn ``_estimates``, and keeps ``_sums_cache``, ``_roc_cache``; it writes
    ``quality_values`` (the measures against the public truth) and ``detections``.

    Examples
    --------
    >>> from dpwidgets.families.streams.panels import WindowEventPanels
    >>> from dpwidgets.families.streams.widget import StreamWidget
    >>> issubclass(StreamWidget, WindowEventPanels)
    True
    """

    def _sums(self, out: dict, wsize: int, method: str) -> np.ndarray:
        """Window sums of the shown output (``"wss"`` or ``"noisy"``), once per output and w:
        the windows panel, the low-signal monitor and its ROC all use them."""
        key = (self._version, self._where, wsize, method)
        if key not in self._sums_cache:
            if len(self._sums_cache) >= 8:
                self._sums_cache.clear()
            self._sums_cache[key] = window_sums(out, wsize, method)
        return self._sums_cache[key]

    def _statistic(self, out: dict, kind: str, wsize: int, smoother: str,
                   method: str = "wss") -> np.ndarray:
        """:func:`~dpwidgets.families.streams.spec.event_statistic` of the output's estimates
        (``method="wss"``) or noisy counts (``"noisy"``), the low-signal window sums taken
        from :meth:`_sums`."""
        if kind != "low_signal":
            return event_statistic(
                out if method == "wss" else np.asarray(out["noisy"], float), kind, wsize,
                smoother)
        stat = np.full(len(out["noisy"]), np.nan)
        stat[wsize - 1 :] = self._sums(out, wsize, method)[wsize - 1 :]
        return stat

    def _windows(self, out: dict, truth, wsize: int, smoother: str) -> dict:
        """The window sums of the output shown (and of the truth, measured against it when
        one is drawn): the arguments of :func:`~.display.windows_data`."""
        wss = self._sums(out, wsize, "wss")
        plain = window_sums(out, wsize, "estimates", smoother)
        lm = self._sums(out, wsize, "noisy")
        true_sums = None
        if truth is not None:
            true_sums, measures = window_quality(truth, out["noisy"], self._estimates, wss,
                                                 plain, lm, wsize)
            self.quality_values.update(measures)
        return {"wss": wss, "plain": plain, "lm": lm, "truth": true_sums}

    def _delta_range(self, stat: np.ndarray, kind: str) -> None:
        """Fit both threshold sliders to the private statistic's range (post-processing of
        the release); on a new stream, kind or w, reset them to the default."""
        finite = stat[np.isfinite(stat)]
        if finite.size == 0:
            finite = np.zeros(1)
        hi = nice(float(np.quantile(finite, 0.999)) or 1.0)
        lo_q = float(np.quantile(finite, 0.001))
        lo = 0.0 if kind == "jump_drop" or lo_q >= 0 else -nice(-lo_q)
        hi = max(hi, lo + 1.0)
        values = [float(self.delta.value), float(self.event_delta.value)]
        if self._reset_delta:
            given, self._delta_given = self._delta_given, (None, None)
            # Jumps: the largest 5% of the private statistic. Low signal: a quarter of a busy
            # window's private sum (its 95th percentile), so the true events are the quiet
            # stretches. Both are post-processing of the release.
            busy = float(np.quantile(finite, 0.95))
            default = busy if kind == "jump_drop" else 0.25 * busy
            detect = given[0] if given[0] is not None else default
            event = given[1] if given[1] is not None else detect
            values = [detect, event]
            self._reset_delta = False
        with self._setting():
            for slider, value in zip((self.delta, self.event_delta), values, strict=True):
                slider.min, slider.max = min(slider.min, lo), max(slider.max, hi)
                slider.step = nice((hi - lo) / 400.0, up=False) or 0.01
                slider.value = min(max(value, lo), hi)
                slider.min, slider.max = lo, hi

    def _roc_curves(self, out: dict, truth: np.ndarray, wsize: int, kind: str,
                    event_delta: float) -> tuple[dict, np.ndarray, np.ndarray]:
        """ROC curves (PeGaSus, LM) against the true events at ``event_delta``, cached: moving
        the detection threshold δ only moves the operating point along them."""
        key = (self._version, self._where, wsize, kind, event_delta, self.smoother.value)
        if self._roc_cache is None or self._roc_cache[0] != key:
            found = roc_curves(out, truth, self._estimates,
                               lambda method: self._sums(out, wsize, method), wsize, kind,
                               event_delta)
            self._roc_cache = (key, *found)
        return self._roc_cache[1:]

    def _events(self, out: dict, truth, wsize: int, kind: str, smoother: str) -> dict:
        """The monitored statistic and its detections at δ (the sliders fitted to it) and,
        when a truth is drawn, the true events and the ROC with its operating points: the
        arguments of :func:`~.display.events_data` with the ROC's ``curves`` and ``points``."""
        stat = self._statistic(out, kind, wsize, smoother)
        self._delta_range(stat, kind)
        delta, event_delta = float(self.delta.value), float(self.event_delta.value)
        found = detected(stat, kind, delta)
        truth_stat = true_events = None
        curves = points = None
        if truth is not None:
            rocs, truth_stat, true_events = self._roc_curves(out, truth, wsize, kind, event_delta)
            lm_stat = self._statistic(out, kind, wsize, smoother, "noisy")
            curves = {"pgs": (rocs["PeGaSus"].fpr, rocs["PeGaSus"].tpr),
                      "lm": (rocs["LM"].fpr, rocs["LM"].tpr)}
            points = {}
            for label, stat_k in (("PeGaSus", stat), ("LM", lm_stat)):
                tpr, fpr = rates_at(stat_k, kind, delta, true_events, wsize)
                points[label] = (fpr, tpr)
                self.quality_values[f"{label} AUC"] = rocs[label].auc
                self.quality_values[f"{label} TPR at δ"] = tpr
                self.quality_values[f"{label} FPR at δ"] = fpr
        self.event_delta.layout.display = None if truth is not None else "none"
        self.detections = found
        return {"statistic": stat, "detected": found, "truth_statistic": truth_stat,
                "true_events": true_events, "curves": curves, "points": points}
