"""The one error root of dpwidgets.

A widget catches :class:`DPWidgetsError` and shows its message; every refusal of the door
(budget, policy, parameters) is a :class:`ReleaseRefused` under it, raised *before* anything
is read from the data, drawn or charged. :class:`ReleaseFailed` is the one error raised after a
mechanism ran on confidential data: its message is fixed and carries no data-derived value.

=========================  ========================================  ========================
class                      raised when                               also an instance of
=========================  ========================================  ========================
``DPWidgetsError``         (root)                                    ``Exception``
``ReleaseRefused``         a request is refused, nothing charged     ``DPWidgetsError``
``BudgetExceededError``    it would exceed a budget                  ``RuntimeError``
``PrivacyPolicyError``     the mode or the data owner forbids it     ``ValueError``
``ParameterError``         a parameter is invalid                    ``ValueError``,
                                                                     ``TypeError``
``ReleaseFailed``          the mechanism failed on the data          ``RuntimeError``
=========================  ========================================  ========================
"""

from __future__ import annotations

__all__ = [
    "DPWidgetsError",
    "ParameterError",
    "PrivacyPolicyError",
    "ReleaseFailed",
    "ReleaseRefused",
]


class DPWidgetsError(Exception):
    """Root of every error dpwidgets raises on purpose (a widget catches this one class)."""


class ReleaseRefused(DPWidgetsError):
    """A request refused before it read the data, drew noise or charged the budget."""


class PrivacyPolicyError(ReleaseRefused, ValueError):
    """A release the session's mode or the data owner's declarations forbid (e.g. a broken SVT
    variant, or a parameter that would lower a declared sensitivity, in analyst mode)."""


class ParameterError(ReleaseRefused, ValueError, TypeError):
    """A parameter of a release is invalid; the message names it and what is accepted."""


class ReleaseFailed(DPWidgetsError, RuntimeError):
    """The mechanism failed while running on confidential data.

    The message is fixed: whatever the engine said (a warning, an exception) may depend on the
    data and never reaches the caller. The release's cost stays charged: the failure itself is
    an event that depends on the data.
    """
