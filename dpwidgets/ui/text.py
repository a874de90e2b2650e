"""The words and numbers a widget shows: every ε to 3 significant digits, a long text folded
to one line, the parameters a Release button states.

Pure functions of public values (parameters, DP outputs, the budget), shared by
:class:`~dpwidgets.ui.base.ReleaseWidget` and the families' text.

Examples
--------
>>> from dpwidgets.ui.text import fmt, round_decimals
>>> fmt(0.4426), fmt(2334.0), round_decimals("ε = 0.4426-DP (Def. 4.1.1)")
('0.443', '2,330', 'ε = 0.443-DP (Def. 4.1.1)')
"""

from __future__ import annotations

import html
import math
import re

import numpy as np

__all__ = ["budget_parts", "fmt", "fold", "g3", "round_decimals", "shown", "undust",
           "visible_text"]

# Parameters never printed on the button: they can be fitted to the data (an ordinary fit's
# coefficients) or are too long to read.
_NOT_SHOWN = frozenset({"coef", "intercept", "queries", "groups", "budgets", "attributes"})

def fmt(x: float) -> str:
    """A number for a label: 3 significant digits, thousands separated, ∞ for infinity.

    Integers are printed whole; a float from 1,000 to 10^9 is rounded to 3 significant digits
    and printed in plain digits (2,330, not 2.33e+03).
    """
    if isinstance(x, float) and math.isinf(x):
        return "∞"
    if isinstance(x, int | np.integer) and not isinstance(x, bool):
        return f"{int(x):,}"
    rounded = float(f"{x:.3g}")
    if 1000 <= abs(rounded) < 1e9:
        return f"{rounded:,.0f}"
    return f"{x:.3g}"


_DECIMAL = re.compile(r"(?<![\w.§])\d+\.\d+(?:e[-+]?\d+)?(?![\w.])")


def round_decimals(text: str) -> str:
    """A text with its decimal numbers to 3 significant digits ("0.4426-DP" -> "0.443-DP"),
    as every ε a user sees; section numbers such as "§4.2.2" or "Def. 4.1.1" are left alone."""
    return _DECIMAL.sub(lambda m: f"{float(m.group()):.3g}", text)


def fold(summary: str, details: str = "") -> str:
    """A text shown as one line, the rest folded: ``summary`` (HTML) stays visible, ``details``
    (HTML) sit in a ``<details>`` element the reader opens. Without details, the summary alone.
    """
    if not details:
        return f"<div class='dpw-summary'>{summary}</div>"
    return (f"<details class='dpw-fold'><summary class='dpw-summary'>{summary}</summary>"
            f"<div class='dpw-fold-body'>{details}</div></details>")


def visible_text(value: str) -> str:
    """The text of an HTML value as it shows before any ``<details>`` is opened: tags dropped,
    a details element reduced to its summary (what :func:`fold` keeps visible)."""
    value = re.sub(r"(?s)<details[^>]*>.*?<summary[^>]*>(.*?)</summary>.*?</details>", r"\1",
                   value)
    return html.unescape(re.sub(r"<[^>]+>", "", value)).strip()


def g3(x: float) -> str:
    """A number to 3 significant digits, as the stats lines print it."""
    return f"{x:.3g}"


#: What the stats line says the numbers come from, by where they were drawn.
_SHOWN = {"teaching": "Live run", "preview": "Preview on the public stand-in",
          "release": "Released (DP output only)"}


def budget_parts(parts: dict) -> str:
    """A result's ``epsilon_parts`` as the stats line prints them: "ε1 0.25 + ε2 0.75"."""
    return " + ".join(f"{k} {v:.3g}" for k, v in parts.items())


def shown(x: float) -> float:
    """The number :func:`fmt` shows, as a float (4008.5 -> 4010.0): what a value the widget
    computes for a control (a suggested threshold) is set to, so that the control, its note,
    the button and the run all carry one value."""
    return float(fmt(float(x)).replace(",", ""))


def undust(x: float) -> float:
    """A computed parameter without float dust (160 / 0.005 = 31999.99999999997 -> 32000.0):
    12 significant digits, far below any noise, so the value a run uses reads as it is."""
    return float(f"{float(x):.12g}")


def _param_text(params: dict, title: str = "") -> str:
    """The parameters a button states: numbers to 3 significant digits; a choice the title
    already names (``variant=standard`` beside "SVT standard") is not repeated."""
    parts = []
    for key, value in params.items():
        if key in _NOT_SHOWN or value is None:
            continue
        if isinstance(value, bool):
            parts.append(f"{key}={'yes' if value else 'no'}")
        elif isinstance(value, int | float | np.integer | np.floating):
            parts.append(f"{key}={fmt(value)}")
        elif isinstance(value, str) and len(value) <= 24 and value not in title:
            parts.append(f"{key}={value}")
    return ", ".join(p.replace("epsilon=", "ε=") for p in parts)


# A citation in a title, "(Li 2017, Alg. 8)": the banner gives it; a button need not.
_CITATION = re.compile(r"\s*\([^()]*\b(?:19|20)\d\d\b[^()]*\)")
