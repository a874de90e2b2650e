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

__all__ = ["BudgetExceededError", "DPWidgetsError", "ParameterError", "PrivacyPolicyError",
           "ReleaseFailed", "ReleaseRefused"]


class DPWidgetsError(Exception):
    """Root of every error dpwidgets raises on purpose (a widget catches this one class)."""


class ReleaseRefused(DPWidgetsError):
    """A request refused before it read the data, drew noise or charged the budget."""


class PrivacyPolicyError(ReleaseRefused, ValueError):
    """A release the session's mode or the data owner's declarations forbid (e.g. a broken SVT
    variant, or a parameter that would lower a declared sensitivity, in analyst mode)."""


class BudgetExceededError(ReleaseRefused, RuntimeError):
    """A spend would take a dataset past its total budget; nothing was recorded.

    Attributes
    ----------
    dataset : str
        The dataset whose budget would be exceeded.
    requested : float
        The epsilon asked for.
    remaining : float
        The epsilon still available.
    total : float
        The dataset's cap.
    label : str
        The label of the refused release.
    asked : str or None
        The dataset the request named (a view of a table, ``"visits/items"``), when it is not
        the ledger's own name: the message names it first, then the budget it shares.
    """

    def __init__(self, dataset: str, requested: float, remaining: float, total: float, label: str,
                 *, asked: str | None = None):
        self.dataset = dataset
        self.requested = requested
        self.remaining = remaining
        self.total = total
        self.label = label
        self.asked = asked
        where = (f"dataset {dataset!r}" if asked in (None, dataset) else
                 f"dataset {asked!r} (charged to the budget {dataset!r})")
        super().__init__(
            f"privacy budget of {where} exceeded: {label!r} asks for "
            f"epsilon={requested:.6g} but only {remaining:.6g} of {total:.6g} is left. "
            f"Nothing was charged. Lower epsilon to at most {remaining:.6g}, or replay a "
            f"release already paid for."
        )


class ParameterError(ReleaseRefused, ValueError, TypeError):
    """A parameter of a release is invalid; the message names it and what is accepted."""


class ReleaseFailed(DPWidgetsError, RuntimeError):
    """The mechanism failed while running on confidential data.

    The message is fixed: whatever the engine said (a warning, an exception) may depend on the
    data and never reaches the caller. The release's cost stays charged: the failure itself is
    an event that depends on the data.
    """
