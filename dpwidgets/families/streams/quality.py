"""What the stream widgets measure, through the engine: a release's quality against a public
truth, and the event monitors' decisions.

The truth is public whenever one is measured against: the data in teaching mode, the dataset's
stand-in in an analyst's free preview. On confidential data a widget shows no measure (it would
need the true stream), only the detections on the release's own statistic, which are
post-processing of the release (Chen 2018, §5.4). The widgets import these functions, never
the engine.

Examples
--------
>>> import numpy as np
>>> from dpwidgets.families.streams.quality import detected
>>> detected(np.array([np.nan, 1.0, 5.0]), "jump_drop", 2.0).tolist()
[False, False, True]
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ...engine import streams as st
from ...engine.evaluation import detect_events, detection_rates
from .spec import event_statistic

__all__ = ["detected", "rates_at", "roc_curves", "window_quality"]


def window_quality(truth: np.ndarray, noisy, estimates: np.ndarray, wss: np.ndarray,
                   plain: np.ndarray, lm: np.ndarray, w: int) -> tuple[np.ndarray, dict]:
    """The true window sums of width ``w``, and the quality measures of a release's stream and
    window sums against them.

    Parameters
    ----------
    truth : ndarray
        The public true counts.
    noisy, estimates : array_like
        The Perturber's noisy counts (LM at ε_p) and the estimates drawn.
    wss, plain, lm : ndarray
        Window sums of the release: WSS (Chen 2018, Alg. 17), the sum of the estimates, and
        the sum of the noisy counts.
    w : int
        The window width.

    Returns
    -------
    (ndarray, dict)
        The true window sums, and ``{"LM scaled L1", "PeGaSus scaled L1", "WSS average L1",
        "sum of ĉ average L1", "LM window average L1"}``.

    Examples
    --------
    >>> import numpy as np
    >>> truth = np.full(8, 4.0)
    >>> sums, q = window_quality(truth, truth, truth, *(np.full(8, 8.0),) * 3, 2)
    >>> q["PeGaSus scaled L1"], float(sums[-1])
    (0.0, 8.0)
    """
    true_sums = st.sliding_window_sums(truth, w)
    return true_sums, {
        "LM scaled L1": st.scaled_total_l1(truth, noisy),
        "PeGaSus scaled L1": st.scaled_total_l1(truth, estimates),
        "WSS average L1": st.average_l1(true_sums, wss),
        "sum of ĉ average L1": st.average_l1(true_sums, plain),
        "LM window average L1": st.average_l1(true_sums, lm),
    }


def detected(statistic: np.ndarray, kind: str, delta: float) -> np.ndarray:
    """The monitor's decision per step on a statistic
    (:func:`~dpwidgets.families.streams.spec.event_statistic`): a jump/drop where it is
    ``>= delta``, a low signal where it is ``< delta``; never where the
    window is incomplete (NaN). Post-processing when the statistic is a release's.

    Examples
    --------
    >>> import numpy as np
    >>> detected(np.array([np.nan, 1.0, 5.0]), "low_signal", 2.0).tolist()
    [False, True, False]
    """
    return detect_events(statistic, kind, delta)


def rates_at(statistic: np.ndarray, kind: str, delta: float, true_events: np.ndarray,
             w: int) -> tuple[float, float]:
    """``(TPR, FPR)`` of the detections at ``delta`` against the true events (public truth),
    over the steps with a complete window of width ``w``.

    Examples
    --------
    >>> import numpy as np
    >>> rates_at(np.array([np.nan, 3.0, 0.0]), "jump_drop", 1.0,
    ...          np.array([False, True, False]), 2)
    (1.0, 0.0)
    """
    return detection_rates(detect_events(statistic, kind, delta), true_events, w)


def roc_curves(output: dict, truth: np.ndarray, estimates: np.ndarray,
               sums: Callable[[str], np.ndarray], w: int, kind: str, event_delta: float
               ) -> tuple[dict, np.ndarray, np.ndarray]:
    """The detection ROC curves of PeGaSus and LM against the true events at ``event_delta``.

    Parameters
    ----------
    output : dict
        The ``"pegasus"`` release's output (its noisy counts and budget parts).
    truth : ndarray
        The public true counts.
    estimates : ndarray
        The release's estimates drawn (the chosen smoother's).
    sums : callable
        ``sums(method)``: the release's window sums of width ``w`` by ``"wss"`` or ``"noisy"``
        (the caller's, computed once per release and width); read for ``"low_signal"`` only.
    w : int
        The window width.
    kind : {"jump_drop", "low_signal"}
        The event monitor.
    event_delta : float
        The threshold that defines the true events (Chen 2018, §5.6.3).

    Returns
    -------
    (dict, ndarray, ndarray)
        ``{"PeGaSus": roc, "LM": roc}`` (:func:`dpwidgets.engine.streams.event_roc`), the true
        statistic and the true events.

    Examples
    --------
    >>> import numpy as np
    >>> truth = np.r_[np.zeros(20), np.full(20, 50.0)]  # one jump, at step 20
    >>> output = {"noisy": truth + 1.0, "epsilon_parts": {"perturber": 0.5, "grouper": 0.5}}
    >>> rocs, _, events = roc_curves(output, truth, truth, None, 4, "jump_drop", 25.0)
    >>> sorted(rocs), int(events.sum()), rocs["PeGaSus"].auc
    (['LM', 'PeGaSus'], 3, 1.0)
    """
    truth_stat = event_statistic(truth, kind, w)
    true_events = detect_events(truth_stat, kind, event_delta)
    noisy = np.asarray(output["noisy"], float)
    pgs, lm = estimates, noisy
    if kind == "low_signal":  # the window sums already computed, as released sums
        spent = math.fsum(output["epsilon_parts"].values())
        pgs, lm = (st.WindowSums(sums(method), w, method, spent, output["epsilon_parts"])
                   for method in ("wss", "noisy"))
    rocs = {"PeGaSus": st.event_roc(truth, pgs, w, event_delta, kind),
            "LM": st.event_roc(truth, lm, w, event_delta, kind)}
    return rocs, truth_stat, true_events
