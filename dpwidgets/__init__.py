"""dpwidgets: JupyterLab widgets that make differential privacy visible and tunable.

The DP engine lives in :mod:`dpwidgets.engine` (pure numpy/scipy); the widgets in
:mod:`dpwidgets.widgets`; experimental setups in :mod:`dpwidgets.datasets`.
"""

__version__ = "0.1.0"

from . import session as _session  # noqa: E402
from .session import Session  # noqa: E402

__all__ = ["Session", "__version__"]


# The door hands out the budget meter and a curator's session but imports neither (they import
# it); they are loaded here, on first use, so importing the door loads no UI or HTTP code.
def _budget_meter(session: Session):
    from .ui.meter import BudgetMeter

    return BudgetMeter(session)


def _remote_session(url: str, token: str, **kwargs) -> Session:
    from .curator.client import RemoteSession

    return RemoteSession(url, token, **kwargs)


_session.FACTORIES.update(meter=_budget_meter, remote=_remote_session)
