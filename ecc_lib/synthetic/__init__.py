"""Synthetic data with known ground truth, for tests, benchmarks and teaching.

- :func:`make_capability_data`: queries whose embedding clusters (topics) and capability clusters
  (which models win) disagree, with planted Bradley-Terry profiles (ECC).
- :func:`make_repeated_outcomes`: per-query, per-model success probabilities with planted
  structure, observed over N rewrites x M decodes, with costs (DARS).
"""

from ecc_lib.synthetic.capability import make_capability_data
from ecc_lib.synthetic.repeated_outcomes import make_repeated_outcomes

__all__ = [
    "make_capability_data",
    "make_repeated_outcomes",
]
