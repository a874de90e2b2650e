"""The widgets: ipywidgets controls + Bokeh figures (through jupyter_bokeh) + the budget meter.

Every widget reaches data only through a :class:`dpwidgets.Session`. See ``README.md`` in this
folder for the usage summary.
"""

from .attack_demo import AttackDemo
from .diagnostics import BinnedResidualWidget, ResidualPlotWidget, RocWidget
from .dynamic import DynamicHistogramWidget
from .meter import BudgetMeter
from .personalized import PersonalizedWidget
from .streams import HierarchyWidget, StreamWidget
from .svt_explorer import SVTExplorer
from .synth import SyntheticDataWidget

__all__ = [
    "AttackDemo",
    "BinnedResidualWidget",
    "BudgetMeter",
    "DynamicHistogramWidget",
    "HierarchyWidget",
    "PersonalizedWidget",
    "ResidualPlotWidget",
    "RocWidget",
    "SVTExplorer",
    "StreamWidget",
    "SyntheticDataWidget",
]
