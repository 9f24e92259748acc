"""The defaults, each in one place: the papers' settings of ECC, its protocol and DARS.

Every other home of a default reads it from here: the estimators' and :class:`Protocol`'s
signatures, the command line's flags and their help, the README's generated defaults block and the
constants older modules export (``PAPER_N_PAIRS``, ``DEFAULT_N_BOOT`` ...). The notebooks'
``parameters`` cells must hold literals (papermill injects values over them), so they repeat these
values, and ``tests/test_issue33_defaults.py`` holds them to the values here
(``docs/design.md`` section 9).

ECC (Section 3 of ``docs/design.md``): K = 30 clusters, cosine weight lam = 3, temperature
T = 0.1, 7 non-tie pairs per query, an 80/20 split by query with seed 42, one probe comparison per
test query; DARS (section 4): the utility U = mu_q - 0.05 mu_c - 0.2 sigma_q.
"""

from __future__ import annotations

N_CLUSTERS = 30
"""ECC's number of clusters K (the paper's)."""
LAM = 3.0
"""ECC's weight of the embedding cosine against the comparison evidence (the paper's)."""
TEMPERATURE = 0.1
"""ECC's softmax temperature T of the responsibilities (the paper's)."""
N_PAIRS = 7
"""Non-tie comparisons drawn per query (the paper's)."""
TEST_SIZE = 0.2
"""Share of test queries of the split by query (the paper's)."""
SEED = 42
"""Seed of the pair draw, the split and the EM start (the paper's)."""
N_PROBES = 1
"""Comparisons of a test query revealed as its probe (the paper's)."""
PROBE_EVIDENCE = "mean"
"""How several probes count: the mean of their log-likelihoods (the authors' code) or ``"sum"``."""
PROBE_STRATEGY = "first"
"""Which candidate comparison of a test query is its probe (the paper's: the first)."""
EVIDENCE = "sampled"
"""Pair outcomes: the mean-score winner (the paper's) or ``"soft"`` win probabilities."""
N_BOOT = 1000
"""Bootstrap resamples of every interval."""
TIE_TOLERANCE = 1e-4
"""Scores of one query closer than this count as tied (absolute, on the [0, 1] score scale)."""
COST_WEIGHT = 0.05
"""DARS utility's cost weight lambda (the authors')."""
BETA = 0.2
"""DARS utility's risk (sigma) weight beta (the authors')."""
N_DRAWS = 1000
"""Monte Carlo draw pairs per query of the label-instability readings when scores are not binary."""

__all__: list[str] = []
