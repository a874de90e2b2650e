"""The parameters of the synthetic-data mechanisms (dpwidgets/families/synth/params.py): one
object per mechanism, the spec's validate, defaults that are the engine's, the request-level
refusals before any field."""

from __future__ import annotations

import pytest

from dpwidgets.engine import synth as sy
from dpwidgets.families.synth import params as sp
from dpwidgets.families.synth.spec import SYNTH_MECHANISMS
from dpwidgets.mechanism import PublicShape

SHAPE = PublicShape((500, 3), columns=("a", "b", "c"))


def test_every_mechanism_validates_with_its_params_object():
    for name, cls in (("dpcopula", sp.DPCopulaParams),
                      ("independent_synth", sp.IndependentSynthParams),
                      ("laplace_histogram_synth", sp.LaplaceHistogramSynthParams),
                      ("peer_synth", sp.PeerSynthParams)):
        mechanism = SYNTH_MECHANISMS[name]
        assert mechanism.params is cls and cls.mechanism == name
        assert mechanism.validate == cls.validate


def test_the_defaults_are_the_engines():
    assert sp.DPCopulaParams.default("hybrid_min_support") == sy.HYBRID_MIN_SUPPORT
    assert sp.DPCopulaParams.default("method") in sy.METHODS
    assert sp.DPCopulaParams.default("margin_fit") in sy.MARGIN_FITS
    assert sp.DPCopulaParams.default("max_partitions") <= sy.MAX_PARTITIONS
    assert sp.LaplaceHistogramSynthParams.default("max_cells") <= sy.MAX_CELLS
    methods = {value for value, _ in sp.DPCopulaParams.info("method").control.pairs()}
    assert methods == set(sy.METHODS)


def test_the_table_and_a_none_budget_are_refused_before_any_field():
    # The shape first, whatever else is wrong; epsilon=None is a bad value, not a missing one.
    with pytest.raises(ValueError, match="needs at least 2 attributes"):
        sp.DPCopulaParams.validate({"epsilon": None, "k": -1}, (10, 1))
    with pytest.raises(ValueError, match="epsilon must be a number"):
        sp.IndependentSynthParams.validate({"epsilon": None, "k": -1}, SHAPE)
    with pytest.raises(KeyError):
        sp.PeerSynthParams.validate({"method": "aim"}, SHAPE)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) for 'independent_synth'"):
        sp.IndependentSynthParams.validate({"epsilon": 1.0, "k": 2.0}, SHAPE)


def test_the_publisher_choice_lists_the_1d_publishers():
    choice = sp.DPCopulaParams.info("publisher").control
    assert [(label, name) for name, label in choice.pairs()] == sp.publisher_options(1)
    assert "ag" not in {name for _, name in sp.publisher_options(1)}  # 2-D only
    assert sp.publisher_name("dawa") == sp.DPCopulaParams.validate(
        {"epsilon": 1.0}, SHAPE)["publisher"]
