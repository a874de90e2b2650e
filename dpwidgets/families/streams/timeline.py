"""The play control of the stream widgets: one release, revealed step by step.

Each estimate of a stream release at step t uses only c_1..c_t (Chen 2018, §5.2.2), so a widget
releases the whole stream once and reveals it with an ``ipywidgets.Play`` ticking in the
browser, linked there to a scrubber. Nothing plays in a kernel without a front end (nbclient),
so a notebook never blocks.
"""

from __future__ import annotations

import ipywidgets as ipw

from ...ui.controls import IntSlider

__all__ = ["SPEEDS", "STYLE", "TICK_MS", "play_controls"]

#: Milliseconds between two ticks of the play control (20 ticks per second).
TICK_MS = 50
#: Steps per second offered by the speed control.
SPEEDS = {
    "1 day/s (288 steps/s)": 288,
    "1,000 steps/s": 1000,
    "1 week/s (2,016 steps/s)": 2016,
    "5,000 steps/s": 5000,
}
#: The style of the stream widgets' labelled controls (the label at its own width).
STYLE = {"description_width": "initial"}


def play_controls(value: int, maximum: int, *, step: int, interval: int, label: str
                  ) -> tuple[ipw.Play, IntSlider, ipw.jslink]:
    """The play control (its value: the step shown), its scrubber and their browser link.

    Parameters
    ----------
    value, maximum : int
        The step shown at first, and the last one (both controls start at 0).
    step : int
        Steps per tick of the play control.
    interval : int
        Milliseconds between two ticks.
    label : str
        The scrubber's label.

    Returns
    -------
    (ipywidgets.Play, IntSlider, ipywidgets.jslink)
        The play control (CSS class ``dpw-play``), the scrubber (``dpw-time``) and the link
        that keeps them together in the browser.

    Examples
    --------
    >>> from dpwidgets.families.streams.timeline import TICK_MS, play_controls
    >>> play, time, _ = play_controls(0, 100, step=5, interval=TICK_MS, label="steps shown")
    >>> play.max, time.description
    (100, 'steps shown')
    """
    play = ipw.Play(value=value, min=0, max=maximum, step=step, interval=interval,
                    description="play", repeat=False)
    play.add_class("dpw-play")
    time = IntSlider(value=value, min=0, max=maximum, description=label, style=STYLE,
                     layout=ipw.Layout(width="420px"))
    time.add_class("dpw-time")
    return play, time, ipw.jslink((play, "value"), (time, "value"))
