"""The controls of the stream widget: built once, laid out once.

The release's parameters come from their declaration
(:class:`~dpwidgets.families.streams.params.PegasusParams`: ε, the defaults, ε_p/ε) with θ in
units of 1/ε_g; the others spend nothing: the smoother, the play control and its speed
(:mod:`~dpwidgets.families.streams.timeline`), the window w, the event monitor and its two
thresholds, and (teaching) the truth on or off. :class:`StreamControls` holds them (the widget
takes each as an attribute of the same name), :func:`lay_out` puts them in rows beside the
parts every widget shares. Nothing here reads a stream: the controls start from the
constructor's arguments, and the widget fits the play range and the window sizes to the
stream's public length.

Examples
--------
>>> from dpwidgets.families.streams.controls import StreamControls, widths
>>> controls = StreamControls.build(teaching=False, epsilon=0.5, defaults="text",
...                                 perturber_share=0.8, theta_scale=5.0, smoother="median",
...                                 kind="jump_drop", speed=1000)
>>> controls.smoother.value, controls.play.step, controls.show_truth.layout.display
('median', 50, 'none')
>>> widths(100)
[1, 2, 4, 8, 16, 32, 64]
"""

from __future__ import annotations

from dataclasses import dataclass

import ipywidgets as ipw

from ...ui.base import one_of
from ...ui.controls import EpsilonSlider, FloatSlider, control_for
from .params import DEFAULTS, SMOOTHERS, PegasusParams
from .timeline import SPEEDS, STYLE, TICK_MS, play_controls

__all__ = ["StreamControls", "check_arguments", "fit_play", "fit_widths", "lay_out", "widths"]

#: The smoother's choices (Chen 2018, §5.3.3, and the adaptive window): label, value.
_SMOOTHERS = [("adaptive window", "adaptive"), ("median (eq. 5.6)", "median"),
              ("average (eq. 5.5)", "average"), ("James-Stein (eq. 5.7)", "james_stein")]
#: The event monitors (Chen 2018, §5.2.2): label, value.
_KINDS = [("jump / drop |c_t − c_{t−w+1}| ≥ δ", "jump_drop"),
          ("low signal Σ_window < δ", "low_signal")]


def check_arguments(*, defaults: str, perturber_share, theta_scale, smoother, kind: str,
                    speed: int, window) -> tuple[float, float, str]:
    """Refuse a constructor argument the widget cannot use, naming it; return the split, θ·ε_g
    and the smoother, each the chosen ``defaults``' where not given.

    Examples
    --------
    >>> check_arguments(defaults="text", perturber_share=None, theta_scale=None, smoother=None,
    ...                 kind="jump_drop", speed=1000, window=2016)
    (0.8, 5.0, 'median')
    >>> check_arguments(defaults="new", perturber_share=None, theta_scale=None, smoother=None,
    ...                 kind="jump_drop", speed=1000, window=5)
    Traceback (most recent call last):
    ...
    ValueError: window must be an integer >= 10, got 5
    """
    one_of("defaults", defaults, sorted(DEFAULTS))
    d = DEFAULTS[defaults]
    perturber_share = d["perturber_share"] if perturber_share is None else perturber_share
    theta_scale = d["theta_times_eps_g"] if theta_scale is None else theta_scale
    smoother = d["smoother"] if smoother is None else smoother
    one_of("smoother", smoother, sorted(SMOOTHERS))
    one_of("kind", kind, ("jump_drop", "low_signal"))
    one_of("speed", speed, sorted(SPEEDS.values()))
    if not (isinstance(window, int) and window >= 10):
        raise ValueError(f"window must be an integer >= 10, got {window!r}")
    if not 0.0 < perturber_share < 1.0:
        raise ValueError(f"perturber_share must be in (0, 1), got {perturber_share!r}")
    return perturber_share, theta_scale, smoother


def widths(t_len: int) -> list[int]:
    """The window sizes offered: 2^0 .. 2^10 (Chen 2018, Fig. 5.5), not beyond the stream.

    Examples
    --------
    >>> widths(5), widths(0)
    ([1, 2, 4], [1])
    """
    return [2**k for k in range(11) if 2**k <= t_len] or [1]


def _tagged(control, css: str):
    control.add_class(css)
    return control


def _threshold(description: str, css: str) -> FloatSlider:
    """A threshold slider (δ or the true events'); its range is fitted to the statistic."""
    return _tagged(FloatSlider(value=0.0, min=0.0, max=1.0, step=0.01, description=description,
                               readout_format=",.4g", style=STYLE, continuous_update=True,
                               layout=ipw.Layout(width="400px")), css)


@dataclass
class StreamControls:
    """The stream widget's own controls, in the order the widget takes them.

    Attributes
    ----------
    epsilon, defaults, split : ipywidgets.Widget
        The release's ε, the set of defaults and ε_p/ε (from
        :class:`~dpwidgets.families.streams.params.PegasusParams`).
    theta : EpsilonSlider
        The Grouper's threshold θ in units of 1/ε_g (public: a larger one costs nothing).
    smoother : ipywidgets.Dropdown
        The post-processing of the estimates.
    play, time, _link
        The play control (its value: the steps revealed), its scrubber and their browser link
        (:func:`~dpwidgets.families.streams.timeline.play_controls`).
    speed : ipywidgets.Dropdown
        Steps per second when playing.
    w : ipywidgets.SelectionSlider
        The window of the sums and event monitors (options fitted to the stream).
    kind : ipywidgets.Dropdown
        The event monitor.
    delta, event_delta : FloatSlider
        The detection threshold and the one that defines the true events.
    show_truth : ipywidgets.Checkbox
        Teaching: whether the true stream is drawn (hidden and disabled otherwise).

    Examples
    --------
    >>> controls = StreamControls.build(teaching=True, epsilon=0.1, defaults="new",
    ...                                 perturber_share=0.95, theta_scale=160.0,
    ...                                 smoother="adaptive", kind="low_signal", speed=288)
    >>> controls.kind.value, controls.speed.value, controls.show_truth.disabled
    ('low_signal', 288, False)
    """

    epsilon: ipw.Widget
    defaults: ipw.Widget
    split: ipw.Widget
    theta: EpsilonSlider
    smoother: ipw.Dropdown
    play: ipw.Play
    time: ipw.Widget
    _link: ipw.jslink
    speed: ipw.Dropdown
    w: ipw.SelectionSlider
    kind: ipw.Dropdown
    delta: FloatSlider
    event_delta: FloatSlider
    show_truth: ipw.Checkbox

    @classmethod
    def build(cls, *, teaching: bool, epsilon: float, defaults: str, perturber_share: float,
              theta_scale: float, smoother: str, kind: str, speed: int) -> StreamControls:
        """The controls at the constructor's values (``teaching``: the session's mode); the
        play range and the window sizes are fitted to the stream later (:func:`fit_play`,
        :func:`fit_widths`)."""
        epsilon_control = control_for(PegasusParams, "epsilon", epsilon)
        defaults_control = control_for(PegasusParams, "defaults", defaults)
        split = _tagged(control_for(PegasusParams, "perturber_share", perturber_share,
                                    readout_format=".2f"), "dpw-split")
        theta = EpsilonSlider(theta_scale, min_epsilon=0.5, max_epsilon=1000.0,
                              description="θ · ε_g")
        theta.remove_class("dpw-epsilon")  # a threshold on the budget's slider, not a budget
        theta.add_class("dpw-theta")
        smoother_control = _tagged(ipw.Dropdown(options=_SMOOTHERS, value=smoother,
                                                description="smoother", style=STYLE),
                                   "dpw-smoother")
        play, time, link = play_controls(
            0, 1, step=max(1, speed * TICK_MS // 1000), interval=TICK_MS, label="steps shown")
        speed_control = _tagged(ipw.Dropdown(options=list(SPEEDS.items()), value=speed,
                                             description="speed", style=STYLE,
                                             layout=ipw.Layout(width="260px")), "dpw-speed")
        w = _tagged(ipw.SelectionSlider(options=[1], value=1, description="window w",
                                        style=STYLE, continuous_update=True), "dpw-window")
        kind_control = _tagged(ipw.Dropdown(options=_KINDS, value=kind, description="event",
                                            style=STYLE), "dpw-event-kind")
        delta = _threshold("detect at δ", "dpw-delta")
        event_delta = _threshold("true events at", "dpw-event-delta")
        show_truth = ipw.Checkbox(
            value=True, description="show the true stream", disabled=not teaching,
            layout=ipw.Layout(display=None if teaching else "none"))
        return cls(epsilon_control, defaults_control, split, theta, smoother_control, play,
                   time, link, speed_control, w, kind_control, delta, event_delta, show_truth)

    def attach(self, widget) -> None:
        """Give ``widget`` every control as an attribute of the same name, in field order."""
        for name, control in vars(self).items():
            setattr(widget, name, control)


def lay_out(widget) -> ipw.VBox:
    """The controls' box: the data chooser, ε and its guardrail, the release's parameters and
    the smoother, playing, the window and event monitor, the thresholds, then the truth
    checkbox beside the Release button and the status."""
    controls = ipw.VBox([
        widget.data,
        ipw.HBox([widget.epsilon, widget.epsilon_note]),
        ipw.HBox([widget.defaults, widget.split, widget.theta, widget.smoother]),
        ipw.HBox([widget.play, widget.time, widget.speed]),
        ipw.HBox([widget.w, widget.kind]),
        ipw.HBox([widget.delta, widget.event_delta]),
        ipw.HBox([widget.show_truth, widget.release_button, widget.status]),
    ])
    controls.add_class("dpw-controls")
    return controls


def fit_play(play, time, n: int, start: int | None, window: int) -> int:
    """Set the play control and its scrubber to a stream of ``n`` steps, revealing ``start``
    (default ``min(window, n)``, clipped to the stream); return the steps revealed.

    Examples
    --------
    >>> from dpwidgets.families.streams.timeline import play_controls
    >>> play, time, _ = play_controls(0, 1, step=1, interval=50, label="steps")
    >>> fit_play(play, time, 300, None, 2016), fit_play(play, time, 300, 500, 2016), play.max
    (300, 300, 300)
    """
    first = min(window, n) if start is None else int(min(max(start, 0), n))
    play.max = n
    time.max = n
    play.value = first
    time.value = first
    return first


def fit_widths(control, n: int, w: int | None) -> None:
    """Offer the window sizes of a stream of ``n`` steps (:func:`widths`) on ``control``,
    choosing ``w`` (or, not given, the current one if offered, else the size nearest 16).

    Raises
    ------
    ValueError
        ``w`` is given and is not one of the sizes offered.

    Examples
    --------
    >>> import ipywidgets as ipw
    >>> control = ipw.SelectionSlider(options=[1, 2048], value=2048)
    >>> fit_widths(control, 100, None)  # 2048 is not offered: the nearest 16
    >>> control.value, control.options
    (16, (1, 2, 4, 8, 16, 32, 64))
    >>> fit_widths(control, 100, 32)
    >>> control.value
    32
    """
    offered = widths(n)
    wanted = control.value if w is None else w
    if wanted not in offered:
        if w is not None:
            raise ValueError(f"w must be one of {offered} for this stream, got {w!r}")
        wanted = min(offered, key=lambda v: abs(v - 16))
    control.options = offered
    control.value = wanted
