"""The widgets' controller contract: families override public hooks only; a 0.x widget that
overrides a private step (or an accuracy hook) still works, and is told what to override."""

from __future__ import annotations

import inspect
import warnings

import numpy as np
import pytest

import dpwidgets.widgets as widgets_module
from dpwidgets import Session
from dpwidgets.ui import base
from dpwidgets.ui.accuracy import _LEGACY_ACCURACY, Accuracy, AccuracyMixin
from dpwidgets.ui.base import _LEGACY_HOOKS, ReleaseWidget

pytestmark = pytest.mark.usefixtures("close_new_widgets")


def _family_widget_classes() -> list[type]:
    """Every ReleaseWidget subclass the package defines (the exported widgets and their
    bases), not the tests' own."""
    found: set[type] = set()
    for name in dir(widgets_module):
        obj = getattr(widgets_module, name)
        if inspect.isclass(obj) and issubclass(obj, ReleaseWidget):
            found.update(c for c in obj.__mro__ if c.__module__.startswith("dpwidgets.families"))
    return sorted(found, key=lambda c: c.__qualname__)


def test_there_are_family_widgets_to_check():
    names = {c.__name__ for c in _family_widget_classes()}
    assert {"SVTExplorer", "AttackDemo", "StreamWidget", "HierarchyWidget", "RocWidget",
            "SyntheticDataWidget", "PersonalizedWidget", "DynamicHistogramWidget"} <= names


@pytest.mark.parametrize("cls", _family_widget_classes(), ids=lambda c: c.__qualname__)
def test_no_family_widget_overrides_a_private_step(cls):
    private = set(_LEGACY_HOOKS) | set(_LEGACY_ACCURACY)
    overridden = sorted(private & set(vars(cls)))
    assert not overridden, f"{cls.__qualname__} overrides private steps {overridden}"


def test_each_private_step_calls_its_public_hook():
    """The steps the base calls are one line each: what a family overrides is the hook."""
    for private, public in _LEGACY_HOOKS.items():
        assert hasattr(ReleaseWidget, public), public
        source = inspect.getsource(getattr(ReleaseWidget, private))
        assert f"self.{public}(" in source, (private, public)


# -- a 0.x widget ---------------------------------------------------------------------------
def _old_style_widget():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class OldCount(ReleaseWidget):
            mechanism = "svt"
            accuracy_what = "the selected counts"

            def __init__(self, session, dataset):
                self._setup(session, debounce=0)
                self.dataset = dataset
                self.drawn: list[str] = []
                self._assemble([self.banner, self.release_button, self.message, self.status])
                self._recompute()

            @property
            def params(self) -> dict:
                return {"epsilon": 1.0, "c": 2, "threshold": 5.0}

            def _live(self) -> None:
                self.drawn.append("live")

            def _preview(self) -> None:
                self.drawn.append("preview")

            def _draw_release(self, release) -> None:
                self.drawn.append("release")

            def _accuracy_values(self, release) -> np.ndarray:
                return np.asarray(release.output["above"], dtype=float)[:2]

    return OldCount, caught


def test_a_0x_widget_is_warned_at_each_override_it_makes():
    _cls, caught = _old_style_widget()
    messages = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    for private, public in [("_live", "draw_live"), ("_preview", "draw_preview"),
                            ("_draw_release", "draw_release")]:
        assert any(f"OldCount.{private} overrides" in m and repr(public) in m
                   for m in messages), (private, messages)
    assert any("OldCount._accuracy_values" in m and "Accuracy" in m for m in messages)
    assert all(w.filename == __file__ for w in caught if "OldCount" in str(w.message))


def test_a_0x_widget_still_runs_in_both_modes(tmp_path):
    old, _ = _old_style_widget()
    teaching = Session(mode="teaching", seed=0)
    teaching.add_dataset("d", np.arange(20.0), total_epsilon=5.0)
    assert old(teaching, "d").drawn == ["live"]

    analyst = Session(mode="analyst", ledger=tmp_path / "l.sqlite", seed=0)
    analyst.add_dataset("d", np.arange(20.0), total_epsilon=5.0, stand_in=np.arange(20.0),
                        allow_mechanisms=["svt"])
    widget = old(analyst, "d")
    assert widget.drawn == ["preview"] and analyst.spent("d") == 0.0
    # Its accuracy override still builds the panel, through an Accuracy made of it.
    model = widget._accuracy()
    assert isinstance(model, Accuracy) and model.what == "the selected counts"
    estimate = widget.estimate_accuracy()
    assert estimate is not None and estimate.now.low.size == 2
    assert analyst.spent("d") == 0.0
    assert widget.release() is not None and widget.drawn == ["preview", "release"]
    assert analyst.spent("d") == pytest.approx(1.0)
    analyst.close()


def test_the_default_hooks_are_what_a_new_widget_leaves_alone():
    assert ReleaseWidget.refusal(None) is None and ReleaseWidget.release_refusal(None) is None
    assert AccuracyMixin.accuracy_model is None
    assert base.ReleaseWidget.draw_live.__doc__ and base.ReleaseWidget.draw_release.__doc__


# -- the diagnostics' own hooks ---------------------------------------------------------------
def test_no_diagnostic_overrides_a_private_hook_of_its_base():
    from dpwidgets.families.diagnostics import base as diagnostics

    for cls in _family_widget_classes():
        if issubclass(cls, diagnostics.DiagnosticWidget) and cls is not diagnostics.DiagnosticWidget:
            overridden = sorted(set(diagnostics._LEGACY_HOOKS) & set(vars(cls)))
            assert not overridden, f"{cls.__qualname__} overrides {overridden}"


def test_a_0x_diagnostic_override_still_runs_and_is_warned():
    from dpwidgets.families.diagnostics.widget import ResidualPlotWidget

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")

        class Described(ResidualPlotWidget):
            def _describe(self, output: dict) -> str:
                return "0.x: " + super()._describe(output)

    assert any("Described._describe overrides a private step of DiagnosticWidget" in
               str(w.message) and "'describe_output'" in str(w.message) for w in caught)
    teaching = Session(mode="teaching", seed=0)
    widget = Described(teaching, scenario=next(iter(ResidualPlotWidget.scenario_table(None))),
                       n=500)
    assert widget.describe_output({"bounds": (0, 1, 0, 1), "grid": 4, "points": []}).startswith(
        "0.x: 4×4 grid")
    assert "0.x: " in widget.stats.value


# -- the whole package ------------------------------------------------------------------------
#: What traitlets and abc put in every class's namespace: not hooks.
_MACHINERY = {"_trait_default_generators", "_all_trait_default_generators", "_traits",
              "_static_immutable_initial_values", "_descriptors", "_instance_inits", "_abc_impl"}


def private_overrides(classes) -> dict[str, list[str]]:
    """``{class: ["_name<Base", ...]}``: the private methods each class overrides of a
    dpwidgets base class (the 0.x aliases a base keeps for old subclasses are its own)."""
    found: dict[str, list[str]] = {}
    for cls in classes:
        for name in vars(cls):
            if not name.startswith("_") or name.startswith("__") or name in _MACHINERY:
                continue
            owner = next((b for b in cls.__mro__[1:]
                          if b.__module__.startswith("dpwidgets") and name in vars(b)), None)
            if owner is not None:
                found.setdefault(cls.__qualname__, []).append(f"{name}<{owner.__qualname__}")
    return found


def _package_classes() -> list[type]:
    import importlib
    import pkgutil

    import dpwidgets

    classes = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # the old import paths
        for info in pkgutil.walk_packages(dpwidgets.__path__, "dpwidgets."):
            module = importlib.import_module(info.name)
            classes.update(obj for obj in vars(module).values() if inspect.isclass(obj)
                           and obj.__module__ == info.name)
    return sorted(classes, key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_the_override_finder_finds_a_hand_made_one():
    class Mine(ReleaseWidget):
        pass

    Mine._live = lambda self: None  # set after the class statement: no warning, still found
    assert private_overrides([Mine]) == {
        "test_the_override_finder_finds_a_hand_made_one.<locals>.Mine": ["_live<TemplateSteps"]}


def test_no_class_in_dpwidgets_overrides_a_private_method_of_another():
    classes = _package_classes()
    assert len(classes) > 100
    assert private_overrides(classes) == {}
