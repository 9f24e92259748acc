"""Issue 36, silent wrong results (items 8-12): every method x probe strategy runs, the embedding
cache checks what it finds, model names are normalised, data digests per notebook, and the small
validations."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from sklearn.exceptions import ConvergenceWarning

from ecc_lib.ecc.baselines import GlobalBT
from ecc_lib.ecc.estimator import ECC
from ecc_lib.protocol.active_probes import probe_temperature, probes_from_scores
from ecc_lib.protocol.data import prepare_protocol
from ecc_lib.protocol.ecc_protocol import run_protocol
from ecc_lib.protocol.methods import METHOD_FACTORIES
from ecc_lib.protocol.probes import select_probes
from ecc_lib.protocol.settings import Protocol
from ecc_lib.synthetic.capability import make_capability_data

pytestmark = pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")


@pytest.fixture(scope="module")
def tiny():
    return make_capability_data(n_queries=120, n_models=5, n_pairs=6, random_state=3)


class _ChoseGlobal(GlobalBT):
    """Stands in for an ECC-CV whose chosen candidate is the global model: ``temperature`` is an
    attribute that is ``None`` (``hasattr`` is True)."""

    @property
    def temperature(self):
        return None


# -- item 8: --probe-strategy active with a model without temperature ----------------------------


def test_probe_temperature_reads_none_and_bad_values():
    assert probe_temperature(None) is None
    assert probe_temperature(GlobalBT()) is None
    assert probe_temperature(_ChoseGlobal()) is None
    assert probe_temperature(ECC(temperature=0.1)) == pytest.approx(0.1)
    assert probe_temperature(ECC(temperature=float("nan"))) is None


def test_active_probes_of_a_model_whose_temperature_is_none(tiny):
    protocol = prepare_protocol(tiny.queries, tiny.outcomes, tiny.embeddings, n_pairs=6)
    model = _ChoseGlobal().fit(None, protocol.train)
    scores = protocol.scores[protocol.test_mask]
    probe = probes_from_scores(
        model, scores, protocol.test, n_probes=2, strategy="active", embeddings=protocol.x_test
    )
    assert len(probe) > 0
    assert np.bincount(probe.query, minlength=protocol.test.n_queries).max() <= 2
    # the same probes as the global model itself (nothing to choose: the first candidates)
    probe_m, scored, _, _ = select_probes(protocol, model, n_probes=1, probe_strategy="active")
    probe_g, scored_g, _, _ = select_probes(
        protocol, GlobalBT().fit(None, protocol.train), n_probes=1, probe_strategy="active"
    )
    np.testing.assert_array_equal(probe_m.model_a, probe_g.model_a)
    np.testing.assert_array_equal(probe_m.model_b, probe_g.model_b)
    np.testing.assert_array_equal(probe_m.query, probe_g.query)


@pytest.mark.parametrize("strategy", ["first", "random", "active"])
def test_every_method_runs_under_every_probe_strategy(tiny, strategy):
    methods = tuple(METHOD_FACTORIES)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        result = run_protocol(
            tiny.queries,
            tiny.outcomes,
            tiny.embeddings,
            protocol=Protocol(n_pairs=6, n_boot=20, probe_strategy=strategy),
            estimator=ECC(n_clusters=3, max_iter=10),
            methods=methods,
        )
    assert set(result.nll) == set(methods)
    assert all(np.isfinite(v) for v in result.nll.values())
