"""Generators for the source texts' experimental setups (seeded through an explicit Generator).

- :mod:`.svt` — 001 §6's Zipf item scores for SVT / top-c selection, and Zipf-like 4096-cell
  histograms shaped like 000 Table 3.1 for the GPTT reconstruction attack.
"""

from .svt import (
    RECONSTRUCTION_SHAPES,
    HistogramProfile,
    HistogramShape,
    histogram_profile,
    reconstruction_histogram,
    zipf_histogram,
    zipf_item_scores,
)

__all__ = [
    "RECONSTRUCTION_SHAPES",
    "HistogramProfile",
    "HistogramShape",
    "histogram_profile",
    "reconstruction_histogram",
    "zipf_histogram",
    "zipf_item_scores",
]

# Regression-diagnostics scenarios (000 Ch. 4; 002) and the models under diagnosis.
from .regression import (  # noqa: E402
    RESIDUAL_SCENARIOS,
    FittedModel,
    RegressionData,
    binormal_scores,
    discriminatory_scenario,
    fit_model,
    load_breast_cancer_data,
    load_diabetes_data,
    logistic_scenario,
    residual_scenario,
)

__all__ += [
    "RESIDUAL_SCENARIOS",
    "FittedModel",
    "RegressionData",
    "binormal_scores",
    "discriminatory_scenario",
    "fit_model",
    "load_breast_cancer_data",
    "load_diabetes_data",
    "logistic_scenario",
    "residual_scenario",
]

# Counting streams shaped like 000 Ch. 5's WiFi traces (Table 5.1) and a public series.
from .streams import (  # noqa: E402
    DAY,
    STREAM_SHAPES,
    WEEK,
    StreamShape,
    load_sunspot_counts,
    multi_state_streams,
    wifi_stream,
)

__all__ += [
    "DAY",
    "STREAM_SHAPES",
    "WEEK",
    "StreamShape",
    "load_sunspot_counts",
    "multi_state_streams",
    "wifi_stream",
]

# Dynamic histogram series (003 Ch. 4): census-like tuple replacement, moving objects.
from .dynamic import (  # noqa: E402
    CENSUS_ATTRIBUTES,
    CENSUS_DOMAINS,
    DynamicSeries,
    census_distribution,
    census_like_series,
    moving_object_series,
)

__all__ += [
    "CENSUS_ATTRIBUTES",
    "CENSUS_DOMAINS",
    "DynamicSeries",
    "census_distribution",
    "census_like_series",
    "moving_object_series",
]

# DPCopula tables (003 Ch. 3): Gaussian dependence, census-shaped, the fair survey.
from .synth import (  # noqa: E402
    BRAZIL_CENSUS_DOMAINS,
    GAUSSIAN_MARGINS,
    US_CENSUS_DOMAINS,
    CodedTable,
    brazil_census_like,
    gaussian_dependence_table,
    load_fair_table,
    us_census_like,
)

__all__ += [
    "BRAZIL_CENSUS_DOMAINS",
    "GAUSSIAN_MARGINS",
    "US_CENSUS_DOMAINS",
    "CodedTable",
    "brazil_census_like",
    "gaussian_dependence_table",
    "load_fair_table",
    "us_census_like",
]

# Personalized DP (003 Ch. 5): privacy vectors, census-like count / logistic tasks, fair data.
from .personalized import (  # noqa: E402
    BUDGET_SETUPS,
    ClassificationTask,
    CountTask,
    budgets_mixed,
    budgets_normal,
    budgets_uniform,
    census_like_records,
    count_task,
    figure_5_1,
    load_fair_logistic,
    logistic_task,
    make_budgets,
)

__all__ += [
    "BUDGET_SETUPS",
    "ClassificationTask",
    "CountTask",
    "budgets_mixed",
    "budgets_normal",
    "budgets_uniform",
    "census_like_records",
    "count_task",
    "figure_5_1",
    "load_fair_logistic",
    "logistic_task",
    "make_budgets",
]
