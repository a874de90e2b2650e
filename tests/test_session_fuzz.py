"""A fuzz of every built-in mechanism through the door, in analyst mode.

For every parameter a mechanism knows (the keys of its canonical parameters: every default is
spelt out there) and a set of hostile values, a release either succeeds or is refused with a
:class:`ReleaseRefused` -- before anything is charged, quickly, naming no value of the data.
A :class:`ReleaseFailed` here would mean a parameter reached the data unchecked (the cost is
then charged and the analyst learns one bit), so it fails the test; so would a hang or any
other exception.
"""

from __future__ import annotations

import signal
from contextlib import contextmanager

import numpy as np
import pandas as pd
import pytest

from dpwidgets import Session
from dpwidgets.engine.errors import ReleaseFailed, ReleaseRefused
from dpwidgets.families.dynamic.standins import dynamic_stand_in
from dpwidgets.families.synth.standins import synth_stand_in
from dpwidgets.mechanism import MECHANISMS, is_builtin

N = 300
RNG = np.random.default_rng(977)
COUNTS = RNG.poisson(20.0, N).astype(float)
TABLE = np.column_stack((RNG.uniform(1, 50, N), RNG.uniform(1, 50, N) + RNG.normal(0, 1, N)))
X = RNG.uniform(-1, 1, N)
LOGIT = np.column_stack((X, (RNG.random(N) < 1 / (1 + np.exp(-2 * X))).astype(float)))
SERIES = RNG.poisson(50.0, (40, 16)).astype(float)
STATES = RNG.poisson(2.0, (8, 200)).astype(float)
DOMAINS = {"a": (0, 9), "b": (0, 4), "c": (0, 1)}
FRAME = pd.DataFrame({"a": RNG.integers(0, 10, N), "b": RNG.integers(0, 5, N),
                      "c": RNG.integers(0, 2, N)})
BUDGETS = np.round(RNG.uniform(0.1, 1.0, N), 2)
PERSONAL = np.column_stack((RNG.uniform(0, 100, N), BUDGETS))

# mechanism -> (dataset, valid base parameters)
BASE = {
    "svt": ("counts", dict(epsilon=0.5, c=2, threshold=30.0)),
    "top_c": ("counts", dict(epsilon=0.5, c=3)),
    "pegasus": ("counts", dict(epsilon=0.5)),
    "laplace_stream": ("counts", dict(epsilon=0.5)),
    "fit_model": ("table", dict(epsilon=0.5, bounds_X=(1, 50), bounds_y=(-10, 60))),
    "residual_plot": ("table", dict(epsilon=0.5)),
    "roc_curve": ("logit", dict(epsilon=0.5)),
    "binned_residuals": ("logit", dict(epsilon=0.5)),
    "hierarchical_pegasus": ("states", dict(epsilon=0.5)),
    "dsat": ("series", dict(epsilon=0.5)),
    "dsft": ("series", dict(epsilon=0.5, threshold=0.05)),
    "dsat_w_event": ("series", dict(epsilon=0.5, w=10)),
    "dynamic_fixed": ("series", dict(epsilon=0.5)),
    "dynamic_uniform": ("series", dict(epsilon=0.5)),
    "dynamic_bd": ("series", dict(epsilon=0.5, w=10)),
    "dynamic_ba": ("series", dict(epsilon=0.5, w=10)),
    "dpcopula": ("frame", dict(epsilon=0.5, domains=DOMAINS)),
    "independent_synth": ("frame", dict(epsilon=0.5, domains=DOMAINS)),
    "laplace_histogram_synth": ("frame", dict(epsilon=0.5, domains=DOMAINS)),
    "personalized_histogram": ("personal", dict(epsilon=1.0, budgets=BUDGETS,
                                                bins=np.linspace(0, 100, 11))),
}
# Not private (refused in analyst mode whatever the parameters) or needing an optional extra.
SKIP = {"reconstruction", "peer_synth"}

HOSTILE = [0, -1, 2.5, 1e12, 10**9, float("nan"), float("inf"), "x", None, True, [1, 2],
           (0.0, 1e300), {"a": 1}]


def session(path) -> Session:
    s = Session(mode="analyst", ledger=path)
    s.add_dataset("counts", COUNTS, total_epsilon=1e6)
    s.add_dataset("table", TABLE, total_epsilon=1e6, stand_in="continuous")
    s.add_dataset("logit", LOGIT, total_epsilon=1e6, stand_in="binary")
    s.add_dataset("series", SERIES, total_epsilon=1e6,
                  stand_in=dynamic_stand_in(*SERIES.shape, 700), facts={"cardinality": 700})
    s.add_dataset("states", STATES, total_epsilon=1e6, stand_in=np.ones_like(STATES))
    s.add_dataset("frame", FRAME, total_epsilon=1e6,
                  stand_in=synth_stand_in(N, DOMAINS, dtypes={c: "int64" for c in DOMAINS}))
    s.add_dataset("personal", PERSONAL, total_epsilon=1e6,
                  stand_in=np.column_stack((np.full(N, 50.0), BUDGETS)))
    return s


@contextmanager
def deadline(seconds: int):
    def fail(*_):
        raise TimeoutError(f"took more than {seconds} s")

    old = signal.signal(signal.SIGALRM, fail)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def test_every_builtin_mechanism_has_a_fuzz_entry():
    builtin = {m for m in MECHANISMS if is_builtin(m)}
    assert builtin - SKIP == set(BASE)


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", sorted(BASE))
def test_hostile_parameters_are_refused_before_the_data_or_succeed(mechanism, tmp_path):
    s = session(tmp_path / "l.sqlite")
    dataset, base = BASE[mechanism]
    with deadline(60):
        names = sorted(s.preview(dataset, mechanism, **base).params)
    assert "epsilon" in names
    for name in names:
        for value in HOSTILE:
            params = {**base, name: value}
            before = s.spent(dataset)
            try:
                with deadline(20):
                    s.release(dataset, mechanism, **params)
            except ReleaseRefused as exc:
                assert s.spent(dataset) == before, (name, value)
                assert "977" not in str(exc)
            except ReleaseFailed:
                pytest.fail(f"{mechanism}: {name}={value!r} reached the data unchecked")
