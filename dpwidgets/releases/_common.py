"""What several families' specs share."""

from __future__ import annotations


def publisher_is_private(p: dict) -> bool:
    """Whether the histogram publisher a release names (if any) is differentially private.

    A spec's ``private(p)`` is false as soon as one of its parts is not DP: the published
    calibration of DAWA (Li, Hay, Miklau & Wang 2014), registered for teaching under a name that
    says so, makes any release that uses it a refusal in analyst mode (nothing charged).
    """
    from ..engine.histograms import PUBLISHERS

    name = p.get("publisher")
    publisher = PUBLISHERS.get(name) if isinstance(name, str) else None
    return publisher is None or bool(getattr(publisher, "private", True))
