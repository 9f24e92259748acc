"""ECC on Dask partitions (LocalCluster, 2 worker processes) equals the in-memory fit."""

from __future__ import annotations

import os
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("distributed")

import cloudpickle  # noqa: E402
import dask  # noqa: E402
import dask.array as da  # noqa: E402
from dask import delayed  # noqa: E402
from distributed import Client, LocalCluster  # noqa: E402

from ecc_lib.data.comparisons import make_comparisons  # noqa: E402
from ecc_lib.data.sources import load_bundled  # noqa: E402
from ecc_lib.distributed import fit_partitioned
from ecc_lib.distributed.scheduler import use_dask
from ecc_lib.ecc.baselines import EmbeddingClusters  # noqa: E402
from ecc_lib.ecc.estimator import ECC  # noqa: E402
from ecc_lib.embed.encode import embed_texts  # noqa: E402

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # workers cannot import tests/


@pytest.fixture(scope="module")
def client():
    with (
        dask.config.set({"distributed.scheduler.allowed-failures": 1}),
        LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, dashboard_address=":0"
        ) as cluster,
        Client(cluster) as c,
    ):
        yield c


@pytest.fixture(scope="module")
def bundled():
    """1,200 dcrouter queries with the shipped embeddings (float64 for exact comparisons)."""
    queries, outcomes = load_bundled("dcrouter")
    keep = set(queries["query_id"].iloc[:1200])
    outcomes = outcomes[outcomes["query_id"].isin(keep)]
    c = make_comparisons(outcomes, n_pairs=7, min_pairs=2, random_state=42)
    text = queries.set_index("query_id").loc[c.query_ids, "text"].astype(str).tolist()
    return np.asarray(embed_texts(text), dtype=np.float64), c


PARAMS = dict(n_clusters=6, max_iter=12, dtype="float64", random_state=3)


def _fit(est, x, c):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(x, c)


@pytest.mark.parametrize("cls", [ECC, EmbeddingClusters])
def test_partitioned_fit_equals_in_memory(client, bundled, cls):
    x, c = bundled
    ref = _fit(cls(**PARAMS), x, c)
    with use_dask(client, partition_rows=300):
        est = _fit(cls(**PARAMS), x, c)
    assert isinstance(est.responsibilities_, np.ndarray)
    assert est.n_iter_ == ref.n_iter_
    np.testing.assert_allclose(est.theta_, ref.theta_, atol=1e-6)
    np.testing.assert_allclose(est.centroids_, ref.centroids_, atol=1e-6)
    np.testing.assert_allclose(est.responsibilities_, ref.responsibilities_, atol=1e-6)
    np.testing.assert_allclose(est.objective_history_, ref.objective_history_, rtol=1e-9)


def test_unequal_partitions_and_dask_array_input(client, bundled):
    x, c = bundled
    ref = _fit(ECC(**PARAMS), x, c)
    sizes = [100, 300, 37, c.n_queries - 437]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = fit_partitioned(ECC(**PARAMS), x, c, client=client, partition_rows=sizes)
        lazy = fit_partitioned(
            ECC(**PARAMS), da.from_array(x, chunks=(tuple(sizes), -1)), c, client=client
        )
    np.testing.assert_allclose(est.theta_, ref.theta_, atol=1e-6)
    np.testing.assert_allclose(lazy.theta_, ref.theta_, atol=1e-6)
    assert isinstance(lazy.responsibilities_, da.Array)
    np.testing.assert_allclose(
        lazy.responsibilities_.compute(scheduler=client.get), ref.responsibilities_, atol=1e-6
    )
    with pytest.raises(ValueError, match="add up to"):
        fit_partitioned(ECC(**PARAMS), x, c, client=client, partition_rows=[5, 5])


def test_dars_group_bys_equal_in_memory(client):
    import dask.dataframe as dd

    from ecc_lib.dars.distributions import capability_distributions
    from ecc_lib.dars.label_instability import label_instability
    from ecc_lib.distributed import dars_statistics

    _, outcomes = load_bundled("re2")
    stats = dars_statistics(dd.from_pandas(outcomes, npartitions=5), client=client)
    got = stats.distributions.to_frame().set_index(["query_id", "model"]).sort_index()
    want = capability_distributions(outcomes).to_frame().set_index(["query_id", "model"])
    want = want.sort_index()
    for column in ("n_obs", "mu_q", "sigma_q", "mu_c"):
        np.testing.assert_allclose(got[column], want[column], atol=1e-12)
    both = label_instability(outcomes)["both"].summary
    assert stats.flip_rates["pairwise"]["mean"] == pytest.approx(both["winner_flip_rate"])
    assert stats.flip_rates["strict"]["mean"] == pytest.approx(both["winner_flip_rate_strict"])
    assert stats.flip_rates["change"]["mean"] == pytest.approx(both["winner_change_rate"])
    assert stats.flip_rates["change_draws"] == both["winner_change_rate_r"]
    assert sum(stats.labels.values()) == pytest.approx(1.0)


def _load_or_die(block: np.ndarray, marker: str, always: bool) -> np.ndarray:
    """Partition loader that kills its worker process (once, or every time)."""
    if os.path.exists(marker):
        if not always:
            os.remove(marker)
        os._exit(1)
    return block


def _dying_embeddings(x: np.ndarray, marker: str, always: bool):
    half = x.shape[0] // 2
    parts = [
        da.from_array(x[:half], chunks=(half, -1)),
        da.from_delayed(
            delayed(_load_or_die)(x[half:], marker, always),
            shape=(x.shape[0] - half, x.shape[1]),
            dtype=x.dtype,
        ),
    ]
    return da.concatenate(parts, axis=0)


@pytest.mark.slow
def test_worker_killed_mid_fit_is_survived_or_reported(client, bundled, tmp_path):
    x, c = bundled
    ref = _fit(ECC(**PARAMS), x, c)
    marker = tmp_path / "kill-once"
    marker.touch()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = fit_partitioned(
            ECC(**PARAMS), _dying_embeddings(x, str(marker), False), c, client=client
        )
    assert not marker.exists()  # a worker did die
    np.testing.assert_allclose(est.theta_, ref.theta_, atol=1e-6)

    marker.touch()
    with pytest.raises(RuntimeError, match="lost its workers"):
        fit_partitioned(ECC(**PARAMS), _dying_embeddings(x, str(marker), True), c, client=client)
    marker.unlink()


def test_label_informed_ecc_fits_in_memory_inside_a_dask_block(client, bundled):
    """``--scheduler`` runs every method; the one whose prior is not partitioned fits in memory
    with the same result, and still refuses embeddings that live on Dask."""
    from ecc_lib.ecc.label_informed import LabelInformedECC

    x, c = bundled
    labels = np.array(["a", "b", "c"])[np.arange(c.n_queries) % 3]
    params = dict(PARAMS, label_weight=1.0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # 12 EM steps, as in the other fits here
        ref = LabelInformedECC(**params).fit(x, c, labels)
    with use_dask(client, partition_rows=300), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = LabelInformedECC(**params).fit(x, c, labels)
        with pytest.raises(ValueError, match="in memory only"):
            LabelInformedECC(**params).fit(da.from_array(x, chunks=(300, -1)), c, labels)
    np.testing.assert_array_equal(est.theta_, ref.theta_)
    np.testing.assert_array_equal(est.responsibilities_, ref.responsibilities_)
