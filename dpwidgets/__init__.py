"""dpwidgets: JupyterLab widgets that make differential privacy visible and tunable.

The DP engine lives in :mod:`dpwidgets.engine` (pure numpy/scipy); the widgets in
:mod:`dpwidgets.widgets`; experimental setups in :mod:`dpwidgets.datasets`.
"""

__version__ = "0.1.0"

from .session import Session  # noqa: E402

__all__ = ["Session", "__version__"]
