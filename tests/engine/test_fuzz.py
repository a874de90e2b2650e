"""Bad input to every public engine function that takes an ``rng``.

The functions are found by introspection (each engine module's ``__all__``, every callable
with an ``rng`` parameter); each needs an entry in :data:`SPECS` with valid base arguments
and the kinds of its parameters, so a new public function without an entry fails
:func:`test_every_public_rng_function_has_a_spec`.

For every bad argument the call must
(a) raise ``ValueError`` or ``TypeError`` within :data:`TIME_LIMIT` seconds (no hang, no
    MemoryError, no ZeroDivisionError);
(b) name the argument in the message;
(c) leave the generator's state unchanged (nothing drawn before the refusal);
(d) carry no number that appears only in the data: the base data hold the distinctive value
    977.0 and no message may contain "977".
Deterministic: no randomness is drawn by the test itself (the generators are seeded, 0).
"""

from __future__ import annotations

import inspect
import math
import signal
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pytest

from dpwidgets.engine import (
    attacks,
    audit,
    diagnostics,
    dynamic,
    histograms,
    mechanisms,
    personalized,
    regression,
    streams,
    svt,
    synth,
)
from dpwidgets.engine.validation import EPSILON_MAX, EPSILON_MIN, check_epsilon

MODULES = (mechanisms, svt, attacks, audit, histograms, diagnostics, streams, dynamic, synth,
           personalized, regression)

#: Seconds a refusal may take (they are validations: microseconds to milliseconds).
TIME_LIMIT = 2.0
#: The distinctive data value that no message may echo.
MARK = 977.0

#: Bad budgets (epsilon and its parts): zero, negative, NaN, infinite, subnormal (5e-324 once
#: divided by zero downstream), a string and a bool.
BAD_EPSILONS = (0, -1, math.nan, math.inf, 5e-324, "1", True, 10 * EPSILON_MAX)
#: Budgets where 0 is a valid value (e.g. epsilon3 of SVT): the same without 0.
BAD_EPSILONS_OR_ZERO = tuple(e for e in BAD_EPSILONS if not (isinstance(e, int) and e == 0
                                                              and not isinstance(e, bool)))
#: Bad sizes (an amount of work or memory): huge as floats and ints, negative, fractional.
BAD_SIZES = (1e9, 1e12, -1, 2.5, 10**12, "3", True, math.nan)
#: Bad integers that are only limits (a huge one is harmless): type and sign errors only.
BAD_INTS = (1e9, -1, 2.5, "3", True, math.nan)
#: Bad positive reals (sensitivities, norms, scales).
BAD_POSITIVES = (0, -1, math.nan, math.inf, "1", True)


@dataclass(frozen=True)
class Spec:
    """Valid base arguments (by name) of one function and the kinds of its parameters."""

    base: Callable[[], dict]
    eps: tuple[str, ...] = ()
    eps0: tuple[str, ...] = ()
    sizes: tuple[str, ...] = ()
    ints: tuple[str, ...] = ()
    positives: tuple[str, ...] = ()
    data: tuple[str, ...] = ()  # arrays: NaN and wrong rank are refused
    bounded: tuple[str, ...] = ()  # data with a public domain that MARK lies outside of
    frames: tuple[str, ...] = ()  # DataFrames: a NaN cell is refused
    any_shape: tuple[str, ...] = ()  # arrays of any rank: only NaN is refused
    allowed: tuple[tuple[str, str], ...] = ()  # (name, repr(value)) documented as valid


def _counts(n=8):
    c = np.arange(n, dtype=float) % 4
    c[1] = MARK
    return c


def _values(n=40):
    v = np.linspace(0.05, 0.95, n)
    return v


def _labels(n=40):
    return np.arange(n) % 2


def _series(n_times=6, bins=3):
    h = np.full((n_times, bins), 300.0)
    h[:, 0] += np.arange(n_times) * 40
    h[2, 1] = MARK
    return h


def _frame(n=60):
    a = np.arange(n) % 5
    b = (np.arange(n) * 7) % 4
    return pd.DataFrame({"a": a, "b": b})


def _tree():
    return streams.Hierarchy.binary(4)


def _leaves():
    leaves = np.ones((4, 12))
    leaves[1, 3] = MARK
    return leaves


def _audit_mechanism(data, trials, rng):
    return data + rng.laplace(size=trials)


def _event(outputs):
    return outputs > 0.5


SPECS: dict[str, Spec] = {
    "mechanisms.laplace": Spec(lambda: {"scale": 1.0, "size": 3}, sizes=("size",),
                               positives=()),
    "mechanisms.laplace_mechanism": Spec(
        lambda: {"values": _counts(), "epsilon": 1.0, "sensitivity": 1.0},
        eps=("epsilon",), positives=("sensitivity",), any_shape=("values",)),
    "mechanisms.exponential_mechanism": Spec(
        lambda: {"qualities": _counts(), "epsilon": 1.0, "k": 1},
        eps=("epsilon",), positives=("sensitivity",), sizes=("k",), data=("qualities",)),
    "mechanisms.discrete_laplace": Spec(lambda: {"scale": 1.0, "size": 3}, sizes=("size",),
                                        positives=("scale",)),
    "mechanisms.count_laplace": Spec(
        lambda: {"counts": _counts(), "sensitivity": 1, "epsilon": 1.0},
        eps=("epsilon",), positives=("sensitivity",), any_shape=("counts",)),
    "mechanisms.grid_laplace": Spec(
        lambda: {"values": _counts(), "sensitivity": 1.0, "epsilon": 1.0},
        eps=("epsilon",), positives=("sensitivity",), ints=("max_changed",),
        any_shape=("values",)),
    "mechanisms.laplace_reals": Spec(
        lambda: {"values": _counts(), "sensitivity": 1.0, "epsilon": 1.0},
        eps=("epsilon",), positives=("sensitivity",), ints=("max_changed",),
        any_shape=("values",)),
    "mechanisms.bernoulli_coins": Spec(
        lambda: {"probabilities": np.linspace(0.0, 1.0, 5)}, any_shape=("probabilities",)),
    "mechanisms.smooth_sensitivity_median": Spec(
        lambda: {"values": _values(), "epsilon": 1.0, "lower": 0.0, "upper": 1.0},
        eps=("epsilon",), data=("values",), bounded=("values",)),
    "svt.SparseVector": Spec(lambda: {"threshold": 1.0, "epsilon": 1.0, "c": 2},
                             eps=("epsilon",), eps0=("epsilon3",), sizes=("c",),
                             positives=("sensitivity",)),
    "svt.sparse_vector": Spec(
        lambda: {"answers": _counts(), "threshold": 1.0, "epsilon": 1.0, "c": 2},
        eps=("epsilon",), eps0=("epsilon3",), sizes=("c",), positives=("sensitivity",),
        data=("answers",)),
    "svt.sparse_vector_trials": Spec(
        lambda: {"answers": _counts(), "threshold": 1.0, "epsilon": 1.0, "c": 2, "trials": 10},
        eps=("epsilon",), eps0=("epsilon3",), sizes=("c", "trials"),
        positives=("sensitivity",), data=("answers",)),
    "svt.top_c": Spec(lambda: {"scores": _counts(), "c": 2, "epsilon": 1.0},
                      eps=("epsilon",), sizes=("c", "max_passes"), positives=("sensitivity",),
                      data=("scores",)),
    "audit.audit_privacy_loss": Spec(
        lambda: {"mechanism": _audit_mechanism, "data": 0.0, "neighbour": 1.0,
                 "event": _event, "trials": 100},
        eps0=("claimed_epsilon",), sizes=("trials", "batch_size", "pilot_trials"),
        # any text is a label; data and neighbour are opaque inputs of the caller's mechanism
        allowed=(("label", "'no-such-option'"), ("data", "'no-such-option'"), ("data", "nan"),
                 ("neighbour", "'no-such-option'"), ("neighbour", "nan"))),
    "audit.audit_svt": Spec(lambda: {"variant": "stoddard", "epsilon": 1.0, "trials": 100},
                            eps=("epsilon",), sizes=("trials", "pilot_trials", "batch_size")),
    "attacks.reconstruct_histogram": Spec(
        lambda: {"counts": _counts(), "epsilon": 1.0}, eps=("epsilon",), data=("counts",)),
    "attacks.reconstruct_histogram_with_svt": Spec(
        lambda: {"counts": _counts(), "epsilon": 1.0, "c": 2, "max_queries": 100},
        eps=("epsilon",), sizes=("c", "max_queries"), data=("counts",)),
    "histograms.publish": Spec(
        lambda: {"counts": _counts(), "epsilon": 1.0, "method": "identity"},
        eps=("epsilon",), data=("counts",)),
    "histograms.workload_matrix": Spec(
        lambda: {"workload": "range", "shape": (8,), "max_queries": 10},
        sizes=("max_queries",)),
    "diagnostics.private_bounds": Spec(
        lambda: {"values": _counts(), "epsilon": 1.0}, eps=("epsilon",),
        sizes=("max_doublings",), positives=("mu",), data=("values",)),
    "diagnostics.private_residual_plot": Spec(
        lambda: {"predicted": _counts(40), "residuals": _values(), "epsilon": 1.0,
                 "publisher": "identity", "grid": 4},
        eps=("epsilon", "epsilon1"), sizes=("grid", "max_doublings"),
        positives=("mu_predicted", "mu_residual"), data=("predicted", "residuals")),
    "diagnostics.s_recursive_medians": Spec(
        lambda: {"values": _values(), "epsilon": 1.0, "s": 2}, eps=("epsilon",),
        sizes=("s",), data=("values",), bounded=("values",)),
    "diagnostics.private_roc_curve": Spec(
        lambda: {"labels": _labels(), "scores": _values(), "epsilon": 1.0, "s": 2,
                 "publisher": "identity"},
        eps=("epsilon",), sizes=("s",), data=("labels", "scores"),
        bounded=("labels", "scores")),
    "diagnostics.roc_fixed_laplace": Spec(
        lambda: {"labels": _labels(), "scores": _values(), "epsilon": 1.0, "n_thresholds": 8},
        eps=("epsilon",), sizes=("n_thresholds",), data=("labels", "scores"),
        bounded=("labels", "scores")),
    "diagnostics.private_binned_residual_plot": Spec(
        lambda: {"labels": _labels(), "probabilities": _values(), "epsilon": 1.0, "s": 2},
        eps=("epsilon",), sizes=("s",), data=("labels", "probabilities"),
        bounded=("labels", "probabilities")),
    "streams.PegasusStream": Spec(lambda: {"epsilon": 1.0},
                                  eps=("epsilon", "epsilon_p", "epsilon_g")),
    "streams.pegasus": Spec(lambda: {"counts": _counts(), "epsilon": 1.0},
                            eps=("epsilon", "epsilon_p", "epsilon_g"), data=("counts",)),
    "streams.deviation_grouper": Spec(
        lambda: {"counts": _counts(), "epsilon_g": 1.0, "theta": 5.0},
        eps=("epsilon_g",), data=("counts",),
        # documented: epsilon_g = inf runs the noiseless rule of Chen 2018 Example 7
        allowed=(("epsilon_g", "inf"),)),
    "streams.hs_pegasus": Spec(
        lambda: {"leaf_counts": _leaves(), "hierarchy": _tree(), "epsilon": 1.0},
        eps=("epsilon",), data=("leaf_counts",)),
    "streams.phs_pegasus": Spec(
        lambda: {"leaf_counts": _leaves(), "hierarchy": _tree(), "epsilon": 1.0},
        eps=("epsilon", "epsilon_pr"), data=("leaf_counts",)),
    "streams.hs_laplace": Spec(
        lambda: {"leaf_counts": _leaves(), "hierarchy": _tree(), "epsilon": 1.0},
        eps=("epsilon",), data=("leaf_counts",)),
    "streams.laplace_stream": Spec(lambda: {"counts": _counts(), "epsilon": 1.0},
                                   eps=("epsilon",), data=("counts",)),
    "streams.backward_smoothing": Spec(lambda: {"counts": _counts(), "epsilon": 1.0, "k": 2},
                                       eps=("epsilon",), sizes=("k",), data=("counts",)),
    "streams.binary_tree_window_sums": Spec(
        lambda: {"counts": _counts(), "epsilon": 1.0, "w": 2}, eps=("epsilon",),
        sizes=("w",), data=("counts",)),
    # cardinality: the public lower bound on the snapshot sizes (every snapshot of _series()
    # holds at least 900 records).
    "dynamic.dsft": Spec(
        lambda: {"histograms": _series(), "epsilon": 1.0, "cutoff": 2, "threshold": 0.5,
                 "cardinality": 900},
        eps=("epsilon",), sizes=("cutoff", "cardinality"), data=("histograms",)),
    "dynamic.dsat": Spec(
        lambda: {"histograms": _series(), "epsilon": 1.0, "cutoff": 2, "cardinality": 900},
        eps=("epsilon",), sizes=("cutoff", "burn_in", "cardinality"), data=("histograms",)),
    "dynamic.dsat_w_event": Spec(
        lambda: {"histograms": _series(), "epsilon": 1.0, "w": 3, "cutoff": 2,
                 "cardinality": 900},
        eps=("epsilon",), sizes=("w", "cutoff", "burn_in", "cardinality"),
        data=("histograms",)),
    "dynamic.uniform_budget_release": Spec(
        lambda: {"histograms": _series(), "epsilon": 1.0}, eps=("epsilon",),
        data=("histograms",)),
    "dynamic.fixed_sampling_release": Spec(
        lambda: {"histograms": _series(), "epsilon": 1.0, "cutoff": 2}, eps=("epsilon",),
        sizes=("cutoff",), data=("histograms",)),
    "dynamic.budget_distribution_release": Spec(
        lambda: {"histograms": _series(), "epsilon": 1.0, "w": 3}, eps=("epsilon",),
        sizes=("w",), data=("histograms",)),
    "dynamic.budget_absorption_release": Spec(
        lambda: {"histograms": _series(), "epsilon": 1.0, "w": 3}, eps=("epsilon",),
        sizes=("w",), data=("histograms",)),
    "dynamic.random_range_queries": Spec(lambda: {"shape": (4, 3), "n_queries": 10},
                                         sizes=("n_queries",)),
    "dynamic.range_query_error": Spec(
        lambda: {"true": _series(), "released": _series(), "n_queries": 10},
        sizes=("n_queries",), data=("true", "released")),
    "synth.dpcopula": Spec(lambda: {"frame": _frame(), "epsilon": 1.0}, eps=("epsilon",),
                           sizes=("n_rows", "max_partitions"), positives=("k",),
                           frames=("frame",)),
    "synth.independent_synth": Spec(lambda: {"frame": _frame(), "epsilon": 1.0},
                                    eps=("epsilon",), sizes=("n_rows",), frames=("frame",)),
    "synth.laplace_histogram_synth": Spec(
        lambda: {"frame": _frame(), "epsilon": 1.0}, eps=("epsilon",),
        sizes=("n_rows", "max_cells"), frames=("frame",)),
    "synth.peer_synth": Spec(lambda: {"frame": _frame(), "epsilon": 1.0}, eps=("epsilon",),
                             sizes=("n_rows",), frames=("frame",)),
    "synth.random_range_queries": Spec(
        lambda: {"domains": {"a": np.arange(5), "b": np.arange(4)}, "n_queries": 10},
        sizes=("n_queries",)),
    "synth.dependence_comparison": Spec(
        lambda: {"real": _frame(), "synthetic": _frame()}, ints=("max_rows",),
        frames=("real", "synthetic")),
    "regression.dp_linear_regression": Spec(
        lambda: {"X": _values(), "y": _values(), "epsilon": 1.0, "bounds_X": (0.0, 1.0),
                 "bounds_y": (0.0, 1.0)},
        eps=("epsilon",), data=("y",)),
    "regression.dp_logistic_regression": Spec(
        lambda: {"X": _values(), "y": (np.arange(40) % 2).astype(float), "epsilon": 1.0,
                 "data_norm": 1.0},
        eps=("epsilon",), positives=("data_norm", "regularization")),
    "personalized.sample_records": Spec(
        lambda: {"budgets": np.linspace(0.1, 1.0, 20), "threshold": 0.5},
        eps=("threshold",), data=("budgets",)),
    "personalized.personalized_histogram": Spec(
        lambda: {"values": _values(), "budgets": np.linspace(0.1, 1.0, 40), "bins": 4,
                 "method": "minimum", "value_range": (0.0, 1.0)},
        sizes=("bins", "rounds", "max_groups"), data=("values", "budgets")),
    "personalized.weighted_histogram": Spec(
        lambda: {"values": _values(), "budgets": np.linspace(0.1, 1.0, 40), "bins": 4,
                 "value_range": (0.0, 1.0)},
        sizes=("bins",), data=("values", "budgets")),
    "personalized.personalized_logistic_regression": Spec(
        lambda: {"X": np.column_stack((_values(), _values()[::-1])), "y": _labels(),
                 "budgets": np.linspace(0.1, 1.0, 40), "method": "minimum",
                 "data_norm": 1.0},
        sizes=("rounds", "max_groups"), ints=("max_iter",), positives=("C", "data_norm"),
        data=("X", "y", "budgets")),
    "personalized.relative_frequency_error": Spec(
        lambda: {"true_counts": _counts(), "counts": _counts(), "n_queries": 10},
        sizes=("n_queries",), data=("true_counts", "counts")),
}


def _points(n=30):
    pts = np.column_stack((np.linspace(0, 1, n), np.linspace(-1, 1, n)))
    pts[3, 1] = MARK
    return pts


def _pegasus_result():
    return streams.pegasus(np.ones(12), 1.0, rng=np.random.default_rng(0))


def _hierarchy_result():
    return streams.hs_laplace(np.ones((4, 12)), _tree(), 1.0, rng=np.random.default_rng(0))


def _queries():
    return synth.random_range_queries({"a": np.arange(5), "b": np.arange(4)}, 5,
                                      np.random.default_rng(0))


#: The public engine functions without an ``rng``: the same refusals (a, b, d), no state.
def _quadratic(theta):
    """A smooth, strongly convex objective with its gradient and Hessian (minimum at 1)."""
    return float(np.sum((theta - 1.0) ** 2)), 2.0 * (theta - 1.0), 2.0 * np.eye(theta.size)


PLAIN_SPECS: dict[str, Spec] = {
    # Newton's method on a caller's objective (the scored fit's solver): no argument to fuzz.
    "regression.damped_newton": Spec(lambda: {"evaluate": _quadratic, "size": 2,
                                              "tolerance": 1e-9}),
    "mechanisms.floating_point_safe": Spec(lambda: {}),
    # The black-box audit of sampled outputs: outputs are opaque (any form flattens).
    "audit.output_features": Spec(lambda: {"outputs": [{"a": 1.0}] * 4,
                                           "outputs_neighbour": [{"a": 2.0}] * 4}),
    "audit.audit_samples": Spec(
        lambda: {"outputs": [float(i % 2) for i in range(8)],
                 "outputs_neighbour": [float(i % 3 == 0) for i in range(8)]},
        eps0=("claimed_epsilon",), allowed=(("label", "'no-such-option'"),)),
    # Post-processing of a release: beta is any real threshold (<= 0 prunes nothing).
    "streams.prune_released": Spec(lambda: {"result": _hierarchy_result(), "beta": 2.0}),
    "mechanisms.is_floating_point_safe": Spec(lambda: {}),
    "mechanisms.median_grid": Spec(lambda: {"lower": 0.0, "upper": 1.0}),
    "diagnostics.median_budget": Spec(lambda: {"epsilon1": 1.0, "s": 4}, eps=("epsilon1",),
                                      ints=("s",)),
    "mechanisms.median_smooth_sensitivity": Spec(
        lambda: {"values": _values(), "beta": 0.1, "lower": 0.0, "upper": 1.0},
        positives=("beta",), data=("values",), bounded=("values",)),
    "svt.default_ratio": Spec(lambda: {"c": 2}, sizes=("c",)),
    "svt.false_negative_rate": Spec(
        lambda: {"selected": np.array([0, 1]), "scores": _counts(), "c": 2},
        sizes=("c",), data=("scores",)),
    "svt.score_error_rate": Spec(
        lambda: {"selected": np.array([0, 1]), "scores": _counts(), "c": 2},
        sizes=("c",), data=("scores",)),
    "attacks.svt_counterexample": Spec(lambda: {"variant": "stoddard"}),
    "attacks.gptt_threshold": Spec(lambda: {"epsilon_1": 1.0, "delta": 0.05},
                                   eps=("epsilon_1",)),
    "attacks.gptt_partition": Spec(lambda: {"counts": _counts(), "noisy_threshold": 2.0},
                                   data=("counts",)),
    "attacks.attack_success": Spec(lambda: {"true": _counts(), "estimate": _counts()},
                                   data=("true", "estimate")),
    "histograms.hilbert_d2xy": Spec(lambda: {"order": 2, "d": np.arange(4)}, sizes=("order",)),
    "histograms.hilbert_order": Spec(lambda: {"shape": (4, 4)}),
    "histograms.publisher_choices": Spec(lambda: {"ndim": 1}),
    "histograms.hilbert_xy2d": Spec(lambda: {"order": 2, "x": np.arange(4), "y": np.arange(4)},
                                    sizes=("order",)),
    "histograms.partition_singletons_log_ratio": Spec(
        lambda: {"counts": _counts(), "neighbour": _counts(), "epsilon1": 1.0},
        eps=("epsilon1",), positives=("bucket_penalty",), data=("counts", "neighbour")),
    "diagnostics.fixed_space_levels": Spec(lambda: {"n": 500, "epsilon": 1.0},
                                           eps=("epsilon",), ints=("n",)),
    "diagnostics.binned_residual_levels": Spec(lambda: {"n": 500, "epsilon": 1.0},
                                               eps=("epsilon",), ints=("n",)),
    "diagnostics.default_depth": Spec(lambda: {"n": 500}, ints=("n",)),
    "diagnostics.residual_plot_similarity": Spec(
        lambda: {"true_points": _points(), "private_points": _points()}, sizes=("bins",),
        data=("true_points", "private_points")),
    "diagnostics.similarity_reference": Spec(lambda: {"true_points": _points()},
                                             sizes=("bins",), data=("true_points",)),
    "diagnostics.roc_auc": Spec(lambda: {"fpr": np.linspace(0, 1, 5), "tpr": np.linspace(0, 1, 5)},
                                data=("fpr", "tpr"), bounded=("fpr", "tpr")),
    "diagnostics.auc_error": Spec(
        lambda: {"labels": _labels(), "scores": _values(), "private_auc": 0.5},
        data=("labels", "scores"), bounded=("labels",)),
    "diagnostics.symmetric_difference": Spec(
        lambda: {"fpr_a": np.linspace(0, 1, 5), "tpr_a": np.linspace(0, 1, 5),
                 "fpr_b": np.linspace(0, 1, 5), "tpr_b": np.linspace(0, 1, 5)},
        data=("fpr_a", "tpr_a"), bounded=("fpr_a", "tpr_a")),
    "diagnostics.binned_residuals": Spec(
        lambda: {"labels": _labels(), "probabilities": _values(), "n_bins": 4},
        ints=("n_bins",), data=("labels", "probabilities"), bounded=("labels", "probabilities")),
    "diagnostics.shape_distance": Spec(
        lambda: {"predicted": np.linspace(0, 1, 6), "residual": _counts(6)},
        data=("predicted", "residual")),
    "diagnostics.regret": Spec(lambda: {"errors": {"a": [1.0, 2.0], "b": [2.0, MARK]}}),
    "diagnostics.discriminatory_power": Spec(
        lambda: {"sample_a": _counts(), "sample_b": _counts()}, sizes=("bins",),
        data=("sample_a", "sample_b")),
    "streams.deviation": Spec(lambda: {"values": _counts()}, data=("values",)),
    "streams.window_sum_smoother": Spec(lambda: {"result": _pegasus_result(), "w": 2},
                                        sizes=("w",)),
    "streams.sliding_window_sums": Spec(lambda: {"released": _counts(), "w": 2},
                                        sizes=("w",), data=("released",)),
    "streams.jump_drop_statistic": Spec(lambda: {"released": _counts(), "w": 2},
                                        sizes=("w",), data=("released",)),
    "streams.jump_drop_events": Spec(lambda: {"released": _counts(), "w": 2, "delta": 1.0},
                                     sizes=("w",), data=("released",)),
    "streams.low_signal_events": Spec(lambda: {"released": _counts(), "w": 2, "delta": 1.0},
                                      sizes=("w",), data=("released",)),
    "streams.event_roc": Spec(
        lambda: {"true_counts": _counts(), "released": _counts(), "w": 2, "delta": 1.0},
        sizes=("w",), data=("true_counts", "released")),
    "streams.scaled_total_l1": Spec(lambda: {"true_counts": _counts(), "estimates": _counts()},
                                    data=("true_counts", "estimates")),
    "streams.average_l1": Spec(lambda: {"true_values": _counts(), "estimates": _counts()},
                               data=("true_values", "estimates")),
    "dynamic.dsft_k": Spec(
        lambda: {"cardinality": 1000, "n_bins": 10, "cutoff": 5, "n_times": 50},
        ints=("cardinality", "n_bins", "cutoff", "n_times")),
    "dynamic.paced_k": Spec(
        lambda: {"cardinality": 1000, "n_bins": 10, "cutoff": 5, "epsilon": 1.0},
        eps=("epsilon",), ints=("cardinality", "n_bins", "cutoff")),
    "dynamic.sampling_noise_floor": Spec(lambda: {"cardinality": 1000, "n_bins": 10},
                                         ints=("cardinality", "n_bins")),
    "dynamic.l1_sensitivity": Spec(lambda: {"cardinality": 1000}, ints=("cardinality",)),
    "dynamic.normalised_l1": Spec(lambda: {"counts": _counts(), "reference": _counts()},
                                  data=("counts", "reference")),
    "dynamic.update_ratio": Spec(lambda: {"release_points": np.array([True, False, True])}),
    "dynamic.empirical_update_rate": Spec(lambda: {"histograms": _series()},
                                          data=("histograms",)),
    "synth.repair_correlation": Spec(lambda: {"matrix": np.eye(3)}, positives=("floor",),
                                     data=("matrix",)),
    "synth.kendall_sample_size": Spec(lambda: {"m": 3, "epsilon2": 1.0}, eps=("epsilon2",),
                                      ints=("m",)),
    "synth.resolve_domains": Spec(lambda: {"frame": _frame()}, frames=("frame",)),
    "synth.range_count_error": Spec(
        lambda: {"real": _frame(), "synthetic": _frame(), "queries": _queries()},
        positives=("sanity_bound",), frames=("real", "synthetic")),
    "synth.marginal_comparison": Spec(lambda: {"real": _frame(), "synthetic": _frame()},
                                      frames=("real", "synthetic")),
    "personalized.sampling_probabilities": Spec(
        lambda: {"budgets": np.linspace(0.1, 1.0, 20), "threshold": 0.5},
        eps=("threshold",), data=("budgets",)),
    "personalized.wasted_budget": Spec(
        lambda: {"budgets": np.linspace(0.1, 1.0, 20), "labels": np.arange(20) % 2},
        data=("budgets",)),
    "personalized.privacy_aware_partition": Spec(
        lambda: {"budgets": np.linspace(0.1, 1.0, 40), "min_size": 5},
        sizes=("max_groups",), data=("budgets",)),
    "personalized.utility_partition": Spec(
        lambda: {"budgets": np.linspace(0.1, 1.0, 40), "min_size": 5},
        sizes=("max_groups",), data=("budgets",)),
    "personalized.plan_releases": Spec(
        lambda: {"budgets": np.linspace(0.1, 1.0, 40), "min_size": 5},
        sizes=("rounds", "max_groups"), data=("budgets",)),
    "personalized.misclassification_rate": Spec(
        lambda: {"y_true": _labels(), "y_pred": _labels()}, data=("y_true", "y_pred")),
    "personalized.count_utility": Spec(lambda: {"n": 100.0, "epsilon": 1.0}),
    "personalized.erm_utility": Spec(lambda: {"n": 100.0, "epsilon": 1.0, "dimension": 3},
                                     ints=("dimension",)),
}


def _public_rng_callables() -> dict[str, Callable]:
    found: dict[str, Callable] = {}
    seen: set[int] = set()
    for module in MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or id(obj) in seen:
                continue
            try:
                parameters = inspect.signature(obj).parameters
            except (TypeError, ValueError):
                continue
            if "rng" in parameters:
                seen.add(id(obj))
                found[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] = obj
    return found


FUNCTIONS = _public_rng_callables()


def _public_plain_functions() -> dict[str, Callable]:
    found: dict[str, Callable] = {}
    seen: set[int] = {id(fn) for fn in FUNCTIONS.values()}
    for module in MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if not callable(obj) or inspect.isclass(obj) or id(obj) in seen:
                continue
            seen.add(id(obj))
            found[f"{module.__name__.rsplit('.', 1)[-1]}.{name}"] = obj
    return found


PLAIN_FUNCTIONS = _public_plain_functions()


def _lookup(key: str) -> Callable:
    if key in FUNCTIONS:
        return FUNCTIONS[key]
    if key in PLAIN_FUNCTIONS:
        return PLAIN_FUNCTIONS[key]
    module, name = key.split(".")
    return getattr(globals()[module], name)


def test_every_public_rng_function_has_a_spec():
    # A function re-exported by two modules (attacks re-exports audit) counts once, under
    # either name.
    missing = []
    for key, fn in FUNCTIONS.items():
        if key in SPECS:
            continue
        if not any(_lookup(k) is fn for k in SPECS):
            missing.append(key)
    assert not missing, f"add a Spec to tests/engine/test_fuzz.py for {missing}"


def test_every_public_plain_function_has_a_spec():
    missing = [key for key, fn in PLAIN_FUNCTIONS.items()
               if key not in PLAIN_SPECS and not any(_lookup(k) is fn for k in PLAIN_SPECS)]
    assert not missing, f"add a Spec to PLAIN_SPECS in tests/engine/test_fuzz.py for {missing}"


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


def _cases(specs: dict[str, Spec], with_rng: bool):
    for key, spec in specs.items():
        for name in spec.eps:
            for bad in BAD_EPSILONS:
                yield key, name, bad
        for name in spec.eps0:
            for bad in BAD_EPSILONS_OR_ZERO:
                yield key, name, bad
        for name in spec.sizes:
            for bad in BAD_SIZES:
                yield key, name, bad
        for name in spec.ints:
            for bad in BAD_INTS:
                yield key, name, bad
        for name in spec.positives:
            for bad in BAD_POSITIVES:
                yield key, name, bad
        for name in spec.data:
            yield key, name, "<nan>"
            yield key, name, "<rank>"
        for name in spec.any_shape:
            yield key, name, "<nan>"
        for name in spec.bounded:
            yield key, name, "<outside>"
        for name in spec.frames:
            yield key, name, "<nan-frame>"
        if with_rng:
            yield key, "rng", 42
        # Every other parameter with a default, by the default's type: an unknown option, a
        # wrong type, a NaN where a number is expected, a malformed pair.
        named = {*spec.eps, *spec.eps0, *spec.sizes, *spec.ints, *spec.positives, *spec.data,
                 *spec.bounded, *spec.frames, *spec.any_shape, "rng"}
        for name, parameter in inspect.signature(_lookup(key)).parameters.items():
            default = parameter.default
            if name in named or parameter.kind is inspect.Parameter.VAR_KEYWORD:
                continue
            if default is inspect.Parameter.empty or default is None:
                # required, or optional of any type: never NaN nor an unknown word
                bads = ("no-such-option", math.nan)
            elif isinstance(default, bool):
                bads = ("yes",)
            elif isinstance(default, str):
                bads = ("no-such-option", 3)
            elif isinstance(default, float):
                bads = (math.nan, "1")
            elif isinstance(default, int):
                bads = (2.5, "1")
            elif isinstance(default, tuple):
                bads = ((math.nan,) * len(default), "ab")
            else:
                continue
            for bad in bads:
                yield key, name, bad


def _bad_value(base: dict, name: str, bad):
    if isinstance(bad, str) and bad.startswith("<"):
        value = base[name]
        if bad == "<nan-frame>":
            frame = value.astype(float)
            frame.iloc[0, 0] = np.nan
            frame.iloc[1, 0] = MARK
            return frame
        array = np.array(value, dtype=float)
        flat = array.reshape(-1)
        if bad == "<nan>":
            flat[0] = np.nan
            flat[-1] = MARK
        elif bad == "<outside>":
            flat[-1] = MARK
        else:  # a wrong rank: two more axes, the values (with MARK) repeated
            flat[-1] = MARK
            array = np.repeat(np.repeat(array[..., None], 2, axis=-1)[..., None], 2, axis=-1)
        return array
    return bad


def _id(case):
    key, name, bad = case
    return f"{key}-{name}-{bad!r}"


CASES = [case for case in _cases(SPECS, True)
         if (case[1], repr(case[2])) not in SPECS[case[0]].allowed]
PLAIN_CASES = [case for case in _cases(PLAIN_SPECS, False)
               if (case[1], repr(case[2])) not in PLAIN_SPECS[case[0]].allowed]


def _refuse(key: str, name: str, bad, specs: dict[str, Spec], rng) -> str:
    """Call ``key`` with ``name=bad``; return the message after checks (a) and (b)."""
    fn = _lookup(key)
    kwargs = specs[key].base()
    kwargs[name] = _bad_value(kwargs, name, bad)
    if rng is not None and name != "rng":
        kwargs["rng"] = rng
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, 5 * TIME_LIMIT)
    start = time.perf_counter()
    try:
        with pytest.raises((ValueError, TypeError)) as info:
            fn(**kwargs)
    except _Timeout:
        pytest.fail(f"{key}({name}={bad!r}) did not return within {5 * TIME_LIMIT} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    elapsed = time.perf_counter() - start
    message = str(info.value)
    assert elapsed < TIME_LIMIT, f"{key}({name}=...) took {elapsed:.2f} s to refuse"
    assert name in message, f"{key}: the message does not name {name!r}: {message!r}"
    assert "977" not in message, f"{key}: the message echoes a data value: {message!r}"
    return message


@pytest.mark.parametrize("case", CASES, ids=[_id(c) for c in CASES])
def test_bad_argument_is_refused_by_name_before_any_randomness(case):
    key, name, bad = case
    rng = np.random.default_rng(0)
    before = rng.bit_generator.state
    _refuse(key, name, bad, SPECS, rng)
    assert rng.bit_generator.state == before, f"{key}({name}=...) drew randomness first"


@pytest.mark.parametrize("case", PLAIN_CASES, ids=[_id(c) for c in PLAIN_CASES])
def test_bad_argument_to_a_plain_function_is_refused_by_name(case):
    key, name, bad = case
    _refuse(key, name, bad, PLAIN_SPECS, None)


@pytest.mark.parametrize("value", [EPSILON_MIN, 1.0, EPSILON_MAX])
def test_epsilon_range_is_inclusive(value):
    assert check_epsilon(value) == value


@pytest.mark.parametrize("value", [EPSILON_MIN / 2, 5e-324, 2 * EPSILON_MAX])
def test_epsilon_outside_the_range_is_refused(value):
    with pytest.raises(ValueError, match="epsilon"):
        check_epsilon(value)
