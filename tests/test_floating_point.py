"""Floating-point-safe releases through the door (Mironov 2012; Canonne, Kamath & Steinke 2020).

An analyst-mode release runs inside ``floating_point_safe()``: integer-valued queries plus
the noise land on a power-of-two grid whatever the data. Each family below is released on a
stream (or series) of zero counts, and Mironov 2012's distinguisher asks, of every released
value, whether the neighbour with that count raised to 1 could have produced it. In
analyst mode no output is impossible under the neighbour; the same attack on teaching-mode
releases (numpy's continuous Laplace on doubles) rules the neighbour out for a large
fraction of them, which shows the test can fail.

Analyst releases draw fresh OS entropy (the door never seeds them), so the analyst tests are
not seeded; their assertions hold for every draw (grid membership is exact). The teaching
releases are seeded (stated per test). Sample sizes and tolerances are stated per test.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from dpwidgets import Session
from dpwidgets.engine.mechanisms import GRID_BITS

#: Runs per family and mode; each run is a separate release (``run=``), charged separately.
RUNS = 4
#: Length of the zero stream: RUNS x STEPS = 2,000 released values per family and mode.
STEPS = 500


def _gamma(scale: float) -> float:
    """The grid of the floating-point-safe sampler for a public noise scale: the largest
    power of two <= min(1, scale / 2**GRID_BITS) (floating_point_safe's docstring)."""
    return min(1.0, math.ldexp(1.0, math.frexp(scale)[1] - 1 - GRID_BITS))


def _on_grid(values: np.ndarray, gamma: float) -> np.ndarray:
    """Whether each value is an integer multiple of the power of two ``gamma`` (exact)."""
    steps = np.asarray(values, dtype=float) / gamma
    return steps == np.round(steps)


def _impossible_under(values: np.ndarray, count: float) -> np.ndarray:
    """Mironov 2012's test: ``values`` are doubles released as ``fl(c + noise)``; True where no
    double ``L`` gives ``fl(count + L) == value``, i.e. the value rules ``count`` out.

    ``L -> fl(count + L)`` is monotone, so if any double maps to ``value``, one of the few
    doubles next to ``fl(value - count)`` does: seven candidates are checked."""
    values = np.asarray(values, dtype=float)
    a = float(count)
    candidate = values - a
    for _ in range(3):
        candidate = np.nextafter(candidate, -np.inf)
    reachable = np.zeros(values.shape, dtype=bool)
    for _ in range(7):
        reachable |= (a + candidate) == values
        candidate = np.nextafter(candidate, np.inf)
    return ~reachable


def _session(mode: str, tmp_path, data, seed: int | None = None) -> Session:
    s = Session(mode=mode, ledger=tmp_path / "l.sqlite" if mode == "analyst" else None,
                seed=seed)
    # A 2-D series needs a public stand-in: any public array of its shape will do.
    stand_in = np.ones_like(data) if data.ndim == 2 else None
    s.add_dataset("d", data, total_epsilon=1000.0, stand_in=stand_in)
    return s


def _releases(s: Session, mechanism: str, field, **params) -> np.ndarray:
    out = [np.asarray(field(s.release("d", mechanism, run=r, **params).output), dtype=float)
           for r in range(RUNS)]
    return np.concatenate([o.ravel() for o in out])


# The three families: (mechanism, data, params, the released counts, their noise scale).
FAMILIES = {
    # LM: count + Lap(1/epsilon) per step; epsilon 1 -> scale 1, grid 2**-GRID_BITS.
    "laplace_stream": ("laplace_stream", np.zeros(STEPS, dtype=np.int64), {"epsilon": 1.0},
                       lambda o: o["estimates"], 1.0),
    # PeGaSus' Perturber: count + Lap(1/epsilon_p), epsilon_p = 0.8 * 1.5 = 1.2 -> scale
    # 0.833.., grid 2**-(GRID_BITS + 1) (the smoothed estimates are post-processing of these).
    "pegasus": ("pegasus", np.zeros(STEPS, dtype=np.int64), {"epsilon": 1.5},
                lambda o: o["noisy"], 1.0 / 1.2),
    # The identity histogram of every snapshot: N = 4 releases of epsilon / N = 1 -> scale 1.
    "dynamic_uniform": ("dynamic_uniform", np.zeros((4, STEPS // 4), dtype=np.int64),
                        {"epsilon": 4.0, "publisher": "identity"},
                        lambda o: o["histograms"], 1.0),
}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_analyst_releases_lie_on_a_power_of_two_grid(family, tmp_path):
    # RUNS x STEPS = 2,000 released values (unseeded: OS entropy). Every one must be an
    # exact multiple of the grid of its noise scale: no tolerance, membership is exact.
    mechanism, data, params, field, scale = FAMILIES[family]
    s = _session("analyst", tmp_path, data)
    values = _releases(s, mechanism, field, **params)
    assert values.size == RUNS * STEPS
    assert np.all(_on_grid(values, _gamma(scale)))
    assert not np.all(_on_grid(values, 2 * _gamma(scale)))  # not a coarser grid either
    # ... and the noise is not degenerate: values off the coarser integer grid are common
    # (P(noise is an integer) ~ 2**-GRID_BITS per value at these scales).
    assert np.mean(_on_grid(values, 1.0)) < 0.05


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_mironov_distinguisher_fails_in_analyst_mode(family, tmp_path):
    # Data: all counts 0; neighbour: one count raised to 1 (event-level / add-one). Every
    # released value at a count-0 position is tested against the neighbour's reachable set,
    # both as a grid value (reachable iff on the grid gamma Z) and as a double (Mironov's
    # test). 2,000 values (unseeded); tolerance 0: one impossible output would be a failure.
    mechanism, data, params, field, scale = FAMILIES[family]
    s = _session("analyst", tmp_path, data)
    values = _releases(s, mechanism, field, **params)
    assert not np.any(~_on_grid(values - 1.0, _gamma(scale)))
    assert np.mean(_impossible_under(values, 1.0)) == 0.0


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_mironov_distinguisher_succeeds_in_teaching_mode(family, tmp_path):
    # The same attack on teaching releases (continuous Laplace on doubles), seed 2012,
    # 2,000 values. A value v = 0 + L with |L| < 1/2 is reachable from 1 only if it is a
    # multiple of 2**-53 times its binade, so about a third of the values rule the
    # neighbour out (0.3-0.4 observed at scale 1 and 0.83); the bound 0.1 is > 20 standard
    # errors (sqrt(0.35 * 0.65 / 2000) ~ 0.011) below that, and far above the 0 of analyst mode.
    mechanism, data, params, field, _ = FAMILIES[family]
    s = _session("teaching", tmp_path, data, seed=2012)
    values = _releases(s, mechanism, field, **params)
    assert np.mean(_impossible_under(values, 1.0)) > 0.1
    # The values are not on the analyst grid either.
    assert np.mean(_on_grid(values, _gamma(1.0))) < 0.01


def test_previews_stay_continuous(tmp_path):
    # A preview runs on the public stand-in outside floating_point_safe(): numpy's Laplace.
    # seed 5, 500 values: P(a continuous draw of size ~1 lands on the 2**-GRID_BITS grid) is
    # ~2**-(52 - GRID_BITS).
    s = _session("analyst", tmp_path, np.zeros(STEPS, dtype=np.int64))
    preview = s.preview("d", "laplace_stream", rng=np.random.default_rng(5), epsilon=1.0)
    estimates = np.asarray(preview.output["estimates"], dtype=float)
    assert not np.any(_on_grid(estimates, _gamma(1.0)))


def test_teaching_releases_are_reproducible_bit_for_bit(tmp_path):
    # The teaching path is unchanged: the same seed gives the same doubles.
    data = np.zeros(STEPS, dtype=np.int64)
    a = _session("teaching", tmp_path, data, seed=9).release("d", "laplace_stream", epsilon=1.0)
    b = _session("teaching", tmp_path, data, seed=9).release("d", "laplace_stream", epsilon=1.0)
    assert np.array_equal(a.output["estimates"], b.output["estimates"])


# ---------------------------------------------------------------------------------------------
# Released real values: the engine sites routed through laplace_reals (grid_laplace)
# ---------------------------------------------------------------------------------------------


def test_svt_epsilon3_answers_lie_on_the_grid_inside_the_context():
    # Real answers (arbitrary scores): x + grid noise would reveal x mod gamma, so the ⊤
    # answers are rounded to the grid (c Delta / c) / 2**GRID_BITS = 2**-GRID_BITS first
    # (laplace_reals: sensitivity c * 1, max_changed c). seed 3; 40 queries far above the
    # threshold, c = 5 released values; exact membership. Outside the context the same call
    # releases continuous doubles (P(on the grid) ~ 2**-(43 - GRID_BITS) each at ~1000).
    from dpwidgets.engine.mechanisms import floating_point_safe
    from dpwidgets.engine.svt import sparse_vector

    answers = 1000.0 + np.arange(40) / 3.0
    kwargs = dict(epsilon=1.0, c=5, epsilon3=0.5)
    with floating_point_safe():
        inside = sparse_vector(answers, 0.0, rng=np.random.default_rng(3), **kwargs)
    outside = sparse_vector(answers, 0.0, rng=np.random.default_rng(3), **kwargs)
    for result in (inside, outside):
        assert result.positives.size == 5
    grid = 2.0**-GRID_BITS
    assert np.all(_on_grid(inside.values[inside.positives], grid))
    assert not np.any(_on_grid(outside.values[outside.positives], grid))


def test_dpcopula_kendall_tau_lies_on_the_grid_inside_the_context():
    # DPCopula's noisy Kendall tau (Li 2017 Alg. 5 step 1): real statistics of sensitivity
    # 4/t per pair, released on the grid 2**-GRID_BITS * 4/t rounded down to a power of two.
    # seed 11, 200 rows of 3 attributes (3 pairs), t = 200: 4/200 = 0.02 is in [2**-6, 2**-5),
    # so the grid is 2**-(6 + GRID_BITS).
    from dpwidgets.engine.mechanisms import floating_point_safe
    from dpwidgets.engine.synth import _dp_kendall

    codes = np.random.default_rng(11).integers(0, 5, size=(200, 3))
    with floating_point_safe():
        tau, details = _dp_kendall(codes, 200, 1.0, np.random.default_rng(11))
    off = tau[np.triu_indices(3, 1)]
    assert np.all(_on_grid(off, 2.0 ** -(6 + GRID_BITS)))
    assert details["kendall_noise_scale"] == pytest.approx(3 * (4.0 / 200) / 1.0)


def test_efpa_and_pribrp_run_inside_the_context():
    # EFPA's Fourier coefficients and PriBRP's real sums go through laplace_reals: the runs
    # complete with finite outputs of the stated shapes (seed 13), and PriBRP's released
    # noisy bin sizes (counts) lie on the grid of their scale 2/(eps3/2).
    from dpwidgets.engine.diagnostics import private_binned_residual_plot
    from dpwidgets.engine.histograms import publish
    from dpwidgets.engine.mechanisms import floating_point_safe

    rng = np.random.default_rng(13)
    counts = rng.poisson(20, size=64)
    p = rng.random(2000)
    y = (rng.random(2000) < p).astype(float)
    with floating_point_safe():
        efpa = publish(counts, 1.0, "efpa", rng=np.random.default_rng(13))
        brp = private_binned_residual_plot(y, p, 1.0, rng=np.random.default_rng(13))
    assert np.all(np.isfinite(efpa.counts)) and efpa.counts.shape == (64,)
    assert efpa.details["n_coefficients"] > 0  # the Fourier branch (no fallback) ran
    assert np.all(np.isfinite(brp.mean_predicted)) and np.all(np.isfinite(brp.mean_residual))
    eps3 = brp.epsilon_parts["averages"]
    assert np.all(_on_grid(brp.noisy_sizes, _gamma(2.0 / (eps3 / 2))))


class _NoContinuousNoise(np.random.Generator):
    """A generator whose continuous noise samplers raise (Laplace; Gumbel, which the textbook
    exponential mechanism uses). Uniforms, integers and the normal draws of synthetic-data
    sampling (post-processing) stay available."""

    def laplace(self, *args, **kwargs):
        raise AssertionError("rng.laplace called in an analyst release")

    def gumbel(self, *args, **kwargs):
        raise AssertionError("rng.gumbel called in an analyst release")


def test_every_analyst_release_draws_only_the_safe_samplers(tmp_path, monkeypatch):
    # Every built-in mechanism, released in analyst mode with its fuzz base parameters (the
    # fuzz test's datasets), on a generator whose continuous samplers raise: a mechanism that
    # drew continuous Laplace or Gumbel noise would fail (ReleaseFailed). The door's fresh
    # generator is replaced by that one (OS entropy, as the door's own).
    import dpwidgets.session as door
    from tests.test_session_fuzz import BASE, session

    monkeypatch.setattr(door.np.random, "default_rng",
                        lambda *a: _NoContinuousNoise(np.random.PCG64()))
    s = session(tmp_path / "l.sqlite")
    for mechanism, (dataset, params) in sorted(BASE.items()):
        release = s.release(dataset, mechanism, **params)
        assert release.guarantee, mechanism
