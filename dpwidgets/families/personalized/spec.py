"""Session mechanism for personalized differential privacy (Li 2017, Ch. 5).

A dataset here is a table of two columns, one row per record: ``[value, budget]``. The value
is confidential; the budget is the privacy budget the record's owner asked for, and it is
**public** -- the privacy vector ``phi = (eps_1, ..., eps_n)`` of Li 2017, §5.1, which "should not be
correlated with any sensitive information". Add it with a public stand-in of the same shape
whose second column is the same privacy vector (:func:`personalized_stand_in`).

Mechanism (``session.release(dataset, "personalized_histogram", ...)``)
-----------------------------------------------------------------------
:func:`dpwidgets.engine.personalized.personalized_histogram`: the histogram of the values under
personalized DP, by Minimum, Threshold, Sampling (Jorgensen et al.), privacy-aware partitioning
(Li 2017, Alg. 10) or utility-based partitioning (Alg. 11), with T-round repartitioning (§5.2.3)
and the inverse-variance ensemble (§5.2.4), or by Alaggan, Gambs & Kermarrec 2016's one-release
weighting (``method="weighted"``, :func:`~dpwidgets.engine.personalized.weighted_histogram`).
Parameters (declared once, with their checks, in
:class:`~dpwidgets.families.personalized.params.PersonalizedHistogramParams`, whose ``validate``
is this mechanism's):

``epsilon`` (required)
    A **cap**: the most any one record may spend in this release. Budgets above it are lowered
    to it before planning (a record may always be given more protection than it asked for).
    Pass ``max(budgets)`` or more for no cap.
``budgets`` (required)
    The privacy vector this release honours, one budget per record, in the table's row order.
    Normally the table's budget column itself. It travels in the parameters because the cost
    must be known before the data are touched, and ``validate``/``cost`` see the parameters
    and the public shape only. Its cache key is a digest (:class:`PrivacyVector`), not the
    100,000 numbers. The door never compares it with the table before the charge (that
    comparison would read the data: a refusal, or its text, would say how many records are
    above a budget -- a free count of any column). Instead the run handles every record the
    same, data-independent way: a record whose own budget column is below the budget the
    release gives it (``enjoyed[j]``, a public function of ``budgets`` and the parameters) is
    **left out of the counts** (it spends nothing; the engine's ``include``, :func:`covered`).
    So every record gets at least the protection its column asks for, and the plan, the
    charge and every output but the noisy counts stay functions of the parameters alone.
    A table whose length is not the vector's is aligned by position (rows past the vector are
    not counted), so no failure depends on its true length either. Widgets check
    ``budgets`` against the public stand-in's budget column before a release (the stand-in
    is public).
``bins`` (required), ``value_range``
    Public bin edges, or a number of equal bins over the public ``value_range``. Values outside
    the edges are clipped into the first / last bin (a public rule applied record by record,
    so no refusal depends on the confidential values).
``method``
    ``"utility"`` (default), ``"privacy_aware"``, ``"sampling"``, ``"minimum"``, ``"threshold"``,
    ``"weighted"`` (every record in one release, weighted ``eps_j / eps_max``; no threshold,
    one round).
``threshold``
    ``eps_T`` of Sampling / Threshold, in ``[min, max]`` of the (capped) budgets; default the
    mean budget (Li 2017, §5.3.2.1's rule for counts).
``rounds``
    T-round partitioning (partitioning methods and Minimum).
``ensemble``, ``min_size``, ``max_partitions``, ``max_groups``
    As in the engine (``utility="count"`` with its plug-in cell variance).

What a release costs on the session's ledger
--------------------------------------------
The ledger keeps one uniform ε per dataset: "every record's privacy loss is at most the ε
spent". A personalized release gives record ``j`` the guarantee ``enjoyed[j] <= budgets[j]``
(the engine's :class:`~dpwidgets.engine.personalized.ReleasePlan`), so the uniform bound it
implies -- and what it is charged -- is the **largest per-record loss**
``max_j enjoyed[j]``. That is exactly what the proof spends: for two tables differing in record
``j`` the output distributions are within ``e^{enjoyed[j]} <= e^{max enjoyed}``. It is never more
than ``max(budgets)`` (nor than the cap ``epsilon``), and can be much less: Minimum is charged
``min(budgets)``, Sampling ``eps_T`` (record ``j`` enjoys ``min(eps_j, eps_T)``), Weighted the
largest (capped) budget (record ``j`` enjoys ``eps_j`` rounded down by at most
``WEIGHT_UNIT * eps_max``), a partitioning
method the largest budget any of its releases (summed over rounds) runs at -- e.g. about 0.76 of
a ``max(budgets) = 1`` under Li 2017's ``N(0.1, 1)`` vector for utility-based partitioning. The
charge is a function of the public privacy vector and the parameters only (the plan is computed
before anything is run). An earlier design suggested charging ``max(budgets)``; that is an upper
bound of the charge here, reached when some record enjoys its whole (capped) budget.

Neighbours: replace-one (the engine's :data:`~dpwidgets.engine.personalized.NEIGHBOURS`): the
privacy vector is public, so the number of records and who is in the data are public too.
The uniform bound the ledger is charged holds whatever the table's budget column holds (even
if that column were confidential): replacing record ``j`` -- its value and its column --
either changes a counted value (loss ``<= enjoyed[j]``) or moves it in or out of the counts
(a removal: ``<= enjoyed[j] / 2`` under the replace-one calibration), so every loss is at most
``max_j enjoyed[j]``, the charge.

Outputs (:func:`histogram_outputs`)
-----------------------------------
The DP histogram (``counts``) and the per-release noisy histograms before the ensemble, the
public bin edges, and functions of the public privacy vector and parameters only: each record's
round-1 partition (``labels``), each record's ``enjoyed`` budget, each release's budget, size and
round, the threshold, the charge. Never a value, a true count, or Sampling's secret coins.

References
----------
Li 2017, Ch. 5 (§5.1 Def. 5.1.1; §5.2 Alg. 10-11, eq. 5.2.3, 5.2.6; §5.2.3 T-round; §5.2.4 ensemble);
Jorgensen, Yu, Cormode, "Conservative or liberal? Personalized differential privacy", ICDE 2015;
Alaggan, Gambs & Kermarrec, "Heterogeneous differential privacy", J. Privacy and Confidentiality
7(2), 2016.
"""

from __future__ import annotations

import numpy as np

from ...engine import personalized as pdp
from ...mechanism import Mechanism, register_mechanism
from .params import (
    METHOD_LABELS,
    PersonalizedHistogramParams,
    PrivacyVector,
    release_plan,
)
from .standins import personalized_stand_in

__all__ = ["METHOD_LABELS", "PERSONALIZED_MECHANISMS", "PrivacyVector", "covered",
           "histogram_outputs", "personalized_stand_in", "release_plan"]

_ROUNDS = ("minimum", "privacy_aware", "utility")


#: Relative slack when comparing a record's stated budget with what the plan gives it (the
#: plan's budgets are sums and minima of the vector's doubles).
_SLACK = 1e-12


def covered(asked: np.ndarray, enjoyed: np.ndarray) -> np.ndarray:
    """Which records a release counts: those whose stated budget (the table's budget column,
    ``asked``) covers the budget the release gives them (``enjoyed``, from the public plan).
    A record whose column says less -- or nothing readable (NaN) -- is left out: a rule
    applied record by record, so it costs no other record anything."""
    asked = np.asarray(asked, dtype=float)
    return np.asarray(enjoyed, dtype=float) <= asked * (1.0 + _SLACK)


def _aligned(table: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """The table's value and budget columns at the vector's ``n`` positions: a table of
    another length (a rows view whose true row count is not the declared one) is aligned by
    position -- rows past ``n`` are not counted, positions past the table hold no record
    (NaN: left out) -- so no failure, and no message, depends on the true length."""
    table = np.asarray(table, dtype=float)
    values, asked = np.full(n, np.nan), np.full(n, np.nan)
    if table.ndim == 2 and table.shape[1] >= 2:
        m = min(n, table.shape[0])
        values[:m], asked[:m] = table[:m, 0], table[:m, 1]
    return values, asked


def _histogram_run(table: np.ndarray, p: dict, rng: np.random.Generator):
    budgets = np.minimum(p["budgets"].array, p["epsilon"])
    values, asked = _aligned(table, budgets.size)
    plan = release_plan(p)
    edges = p["bins"]
    # A value outside the public edges goes to the nearest end bin (record by record); a
    # value that is not a number (or no record) is left out like a record whose budget is
    # not covered.
    finite = np.isfinite(values)
    values = np.clip(np.where(finite, values, edges[0]), edges[0], edges[-1])
    include = covered(asked, plan.enjoyed) & finite
    return pdp.personalized_histogram(values, budgets, edges, p["method"], rng=rng,
                                      ensemble=p["ensemble"], plan=plan, include=include)


def histogram_outputs(result: pdp.PersonalizedResult, p: dict | None = None) -> dict:
    """The DP output of a personalized histogram, and public functions of the privacy vector.

    Returns the dict (``p``, the validated parameters, is unused: the spec's ``outputs``
    signature):

        ``counts`` (B,): the DP histogram; ``release_counts`` (k, B): each release's noisy
        histogram before the ensemble (for Sampling: the noisy histogram of the secret sample);
        ``edges`` (B+1,); ``labels`` (n,): each record's round-1 release (``-1``: none);
        ``enjoyed`` (n,): the budget each record spends; ``release_epsilons``,
        ``release_sizes``, ``release_rounds`` (k,); ``threshold`` (or None); ``charge`` (the
        largest enjoyed budget, what the ledger is charged); ``n``, ``method``, ``ensemble``,
        ``epsilon_parts``, ``guarantee``, ``neighbours``.

    Notes
    -----
    ``counts`` and ``release_counts`` are the Laplace outputs and their post-processing with
    public sizes and budgets. Everything else depends on the public privacy vector and the
    parameters only (the plan is computed before the data are read). Sampling's coins (which
    records were kept) are secret -- amplification needs them to be -- and are not in the
    engine's result.
    """
    plan = result.details["plan"]
    enjoyed = np.asarray(plan.enjoyed, dtype=float)
    return {
        "counts": np.asarray(result.counts, dtype=float).copy(),
        "release_counts": np.asarray(result.release_counts, dtype=float).copy(),
        "edges": np.asarray(result.edges, dtype=float).copy(),
        "labels": np.asarray(plan.labels, dtype=np.int64).copy(),
        "enjoyed": enjoyed.copy(),
        "release_epsilons": np.asarray(plan.epsilons, dtype=float).copy(),
        "release_sizes": np.asarray(plan.sizes, dtype=np.int64),
        "release_rounds": np.asarray(plan.rounds, dtype=np.int64).copy(),
        "threshold": None if plan.threshold is None else float(plan.threshold),
        "charge": float(enjoyed.max()),
        "n": int(enjoyed.size),
        "method": str(result.method),
        "ensemble": str(result.ensemble),
        "epsilon_parts": {str(k): float(v) for k, v in result.epsilon_parts.items()},
        "guarantee": str(result.guarantee),
        "neighbours": str(result.neighbours),
    }


def _histogram_label(p: dict) -> str:
    method = p["method"]
    source = ("Alaggan, Gambs & Kermarrec 2016" if method == "weighted" else "Li 2017, Ch. 5")
    parts = [f"personalized histogram, {METHOD_LABELS[method]} ({source})",
             f"{p['bins'].size - 1} bins"]
    if p["threshold"] is not None:
        parts.append(f"ε_T = {p['threshold']:.3g}")
    if method in _ROUNDS and p["rounds"] > 1:
        parts.append(f"T = {p['rounds']} rounds")
    if p["epsilon"] < float(np.max(p["budgets"].array)):
        parts.append(f"cap ε = {p['epsilon']:.3g}")
    parts.append(f"largest per-record loss {p['charge']:.3g}")
    return ", ".join(parts)


PERSONALIZED_MECHANISMS: dict[str, Mechanism] = {
    "personalized_histogram": Mechanism(
        "personalized_histogram", PersonalizedHistogramParams.validate, cost=lambda p: p["charge"],
        run=_histogram_run, outputs=histogram_outputs,
        label=_histogram_label, table=True,
        # Nothing here reads the table before the charge: a record whose budget column is
        # below what the plan gives it is left out inside the run (``covered``).
        neighbours=(f"{pdp.NEIGHBOURS}; a record whose own budget column is below what this "
                    f"release gives it is left out of the counts (it spends nothing)"),
        params=PersonalizedHistogramParams,
    ),
}
"""The personalized-DP mechanisms, by session name (registered on import)."""

for _mechanism in PERSONALIZED_MECHANISMS.values():
    register_mechanism(_mechanism)
