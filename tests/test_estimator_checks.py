"""scikit-learn's own estimator checks (parameters, clone, repr, unfitted use) on every router and
every public ECC estimator.

Skipped by design (documented in :class:`ecc_lib.routers.Router` and :class:`ecc_lib.ecc.estimator.ECC`):
the checks that fit on ``(X, y)`` arrays with a 1-D ``y`` (``check_fit2d_*``,
``check_estimators_overwrite_params``, ``check_fit_idempotent`` ...), because routers fit on
capability targets (distributions or a queries x models utility matrix) and ECC fits on a
``Comparisons`` object.
"""

from __future__ import annotations

import warnings

import pytest
from sklearn.utils import estimator_checks as checks

from ecc_lib import routers
from ecc_lib.ecc import baselines as ecc_baselines
from ecc_lib.ecc import estimator as ecc
from ecc_lib.routers.base import BestFixedRouter, RandomRouter

CHECKS = (
    checks.check_parameters_default_constructible,
    checks.check_no_attributes_set_in_init,
    checks.check_get_params_invariance,
    checks.check_set_params,
    checks.check_estimator_cloneable,
    checks.check_estimator_repr,
    checks.check_do_not_raise_errors_in_init_or_set_params,
    checks.check_estimators_unfitted,
)
ESTIMATORS = [
    *routers.router_families().values(),
    BestFixedRouter,
    RandomRouter,
    ecc.ECC,
    ecc_baselines.ComparisonOnlyECC,
    ecc_baselines.EmbeddingClusters,
    ecc_baselines.GlobalBT,
    ecc_baselines.HumanLabelClusters,
]


@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_sklearn_estimator_check(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a check that only warns would pass silently
        check(estimator.__name__, estimator())


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=lambda e: e.__name__)
def test_unfitted_attribute_lookup_is_false_not_an_error(estimator):
    model = estimator()
    assert not hasattr(model, "n_models_" if issubclass(estimator, routers.Router) else "theta_")
    if not issubclass(estimator, routers.Router):
        assert not hasattr(model, "n_clusters_")
