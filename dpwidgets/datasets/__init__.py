"""Generators for the source texts' experimental setups (seeded through an explicit Generator).

Everything is made from public recipes: no download at run time, and where a text's data are
not public, a stand-in with the published shape.

- a family's own stand-ins live in its folder (``dpwidgets/families/<family>/standins.py``) and
  are exported here by name, found without a list: the SVT family's Zipf item scores for SVT /
  top-c selection (Lyu, Su & Li 2017, §6) and Zipf-like 4096-cell histograms shaped like
  Chen 2018, Table 3.1, for the GPTT reconstruction.
- :mod:`.regression` -- regression-diagnostics scenarios (Chen 2018, Ch. 4; Chen et al. 2016)
  and the models under diagnosis.
- :mod:`.streams` -- counting streams shaped like Chen 2018, Ch. 5's WiFi traces (Table 5.1)
  and a public series turned into counts.
- :mod:`.dynamic` -- dynamic histogram series (Li 2017, Ch. 4): census-like tuple replacement,
  moving objects.
- :mod:`.synth` -- DPCopula tables (Li 2017, Ch. 3): Gaussian dependence, census-shaped, the
  fair survey.
- :mod:`.personalized` -- personalized DP (Li 2017, Ch. 5): privacy vectors, census-like count
  and logistic tasks, fair data.
"""

import importlib

from .._moved import moved
from ..families import exports as _exports
from . import dynamic, personalized, regression, streams, synth
from .dynamic import *  # noqa: F403
from .personalized import *  # noqa: F403
from .regression import *  # noqa: F403
from .streams import *  # noqa: F403
from .synth import *  # noqa: F403

_FAMILY_STANDINS = _exports("standins")

__all__ = sorted(
    {*regression.__all__, *streams.__all__, *dynamic.__all__, *synth.__all__,
     *personalized.__all__, *_FAMILY_STANDINS}
)

_old_module = moved(__name__, {"svt": ("dpwidgets.families.svt.standins", None)})


def __getattr__(name: str):
    if name in _FAMILY_STANDINS:
        module, attr = _FAMILY_STANDINS[name]
        return getattr(importlib.import_module(module), attr)
    return _old_module(name)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
