"""Issue 38: saving and loading fitted routers (arrays and JSON, no pickle), every family."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from ecc_lib.dars.distributions import capability_distributions
from ecc_lib.data.observations import repeated_observations
from ecc_lib.data.sources import load_bundled
from ecc_lib.routers import make_router, router_families
from ecc_lib.routers.base import BestFixedRouter, RandomRouter
from ecc_lib.routers.io import (
    ARRAYS_FILE,
    META_FILE,
    RouterFileError,
    load_router,
    save_router,
)

pytest.importorskip("torch")

FAST = {
    "kNN": {},
    "MLP": {"max_iter": 30},
    "EmbedLLM-MF": {"n_iter": 30},
    "MIRT": {"n_iter": 30},
    "Avengers-Pro": {"n_clusters": 8},
    "ECC": {"n_clusters": 5},
    "Softmax-ranking": {"n_iter": 30},
    "GraphRouter": {"n_iter": 20},
}
"""Small settings: the test checks the file format, not the routers' quality."""


@pytest.fixture(scope="module")
def bundled():
    """400 dcrouter queries (static embeddings): 300 to fit, 100 to route."""
    from ecc_lib.embed.encode import embed_texts

    queries, outcomes = load_bundled("dcrouter")
    keep = queries["query_id"].to_numpy()[:400]
    obs = repeated_observations(outcomes[outcomes["query_id"].isin(keep)])
    dist = capability_distributions(obs)
    texts = queries.set_index("query_id").loc[obs.query_ids, "text"].tolist()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        x = embed_texts(texts, model_name="static", use_cache=False, show_progress=False)
    fit = np.arange(len(x)) < 300
    return x[fit], dist._keep_queries(fit), x[~fit]


def _fit(name, x, targets):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name == "BestFixed":
            return BestFixedRouter().fit(x, targets)
        if name == "Random":
            return RandomRouter(random_state=3).fit(x, targets)
        return make_router(name, random_state=0, **FAST[name]).fit(x, targets)


def test_every_family_is_covered():
    assert set(FAST) == set(router_families())


@pytest.mark.parametrize("name", [*FAST, "BestFixed"])
def test_save_then_load_gives_identical_choices(tmp_path, bundled, name):
    x_fit, targets, x_new = bundled
    router = _fit(name, x_fit, targets)
    save_router(router, tmp_path, metadata={"embedder": "static"})
    loaded, meta = load_router(tmp_path, embedder="static")
    assert type(loaded) is type(router)
    assert loaded.models_ == router.models_ == targets.models
    np.testing.assert_array_equal(loaded.route(x_new), router.route(x_new))
    np.testing.assert_array_equal(loaded.predict_utility(x_new), router.predict_utility(x_new))
    assert meta["embedder"] == "static" and meta["ecc_lib_version"]


def test_random_router_continues_its_stream(tmp_path, bundled):
    x_fit, targets, x_new = bundled
    router = _fit("Random", x_fit, targets)
    save_router(router, tmp_path)
    loaded, _ = load_router(tmp_path)
    np.testing.assert_array_equal(loaded.route(x_new), router.route(x_new))


def test_files_hold_no_pickle(tmp_path, bundled):
    x_fit, targets, _ = bundled
    save_router(_fit("MLP", x_fit, targets), tmp_path)
    with np.load(tmp_path / ARRAYS_FILE, allow_pickle=False) as data:
        assert all(not data[k].dtype.hasobject for k in data.files)
    json.loads((tmp_path / META_FILE).read_text())  # plain JSON


def test_an_object_array_is_refused_on_load(tmp_path, bundled):
    x_fit, targets, x_new = bundled
    save_router(_fit("kNN", x_fit, targets), tmp_path)
    with np.load(tmp_path / ARRAYS_FILE, allow_pickle=False) as data:
        arrays = {k: data[k] for k in data.files}
    arrays["a0"] = np.array([{"payload": 1}], dtype=object)  # would need pickle to read
    np.savez(tmp_path / ARRAYS_FILE, **arrays)
    with pytest.raises(RouterFileError, match="object array"):
        load_router(tmp_path)


def test_an_object_array_cannot_be_written(tmp_path, bundled):
    x_fit, targets, _ = bundled
    router = _fit("kNN", x_fit, targets)
    router.extra_ = np.array([object()], dtype=object)
    with pytest.raises(RouterFileError, match="object array"):
        save_router(router, tmp_path)
    assert not (tmp_path / ARRAYS_FILE).exists()


def test_unknown_classes_in_the_json_are_refused(tmp_path, bundled):
    x_fit, targets, _ = bundled
    save_router(_fit("MLP", x_fit, targets), tmp_path)
    document = json.loads((tmp_path / META_FILE).read_text())
    document["router"]["state"]["__dict__"]["scaler_"]["__estimator__"] = "os.system"
    (tmp_path / META_FILE).write_text(json.dumps(document))
    with pytest.raises(RouterFileError, match="not allowed"):
        load_router(tmp_path)
    document["router"]["class"] = "builtins.eval"
    (tmp_path / META_FILE).write_text(json.dumps(document))
    with pytest.raises(RouterFileError, match="not a known family"):
        load_router(tmp_path)


def test_another_embedder_is_refused_and_another_version_warned(tmp_path, bundled):
    x_fit, targets, _ = bundled
    save_router(_fit("kNN", x_fit, targets), tmp_path, metadata={"embedder": "static"})
    with pytest.raises(RouterFileError, match="static-all-MiniLM-L6-v2 embeddings"):
        load_router(tmp_path, embedder="minilm")
    document = json.loads((tmp_path / META_FILE).read_text())
    document["ecc_lib_version"] = "0.0.1"
    (tmp_path / META_FILE).write_text(json.dumps(document))
    with pytest.warns(UserWarning, match="written by ecc_lib 0.0.1"):
        load_router(tmp_path, embedder="static")
    with pytest.raises(RouterFileError, match="written by ecc_lib 0.0.1"):
        load_router(tmp_path, strict_version=True)


def test_an_unfitted_router_cannot_be_saved(tmp_path):
    with pytest.raises(RouterFileError, match="not fitted"):
        save_router(make_router("kNN"), tmp_path)


def test_non_finite_numbers_and_numpy_scalars_round_trip(tmp_path, bundled):
    x_fit, targets, x_new = bundled
    router = _fit("kNN", x_fit, targets)
    router.notes_ = {"nan": float("nan"), "inf": np.float64(-np.inf), "count": np.int32(3)}
    save_router(router, tmp_path)

    def refuse(constant):
        raise AssertionError(f"router.json holds the non-JSON constant {constant}")

    json.loads((tmp_path / META_FILE).read_text(), parse_constant=refuse)
    loaded, _ = load_router(tmp_path)
    assert np.isnan(loaded.notes_["nan"]) and loaded.notes_["inf"] == -np.inf
    assert loaded.notes_["count"] == 3 and loaded.notes_["count"].dtype == np.int32
