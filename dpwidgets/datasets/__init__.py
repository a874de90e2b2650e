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
