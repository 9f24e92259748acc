"""Issue 36, the embedding cache (items 9 and 15): local models are keyed by a digest of their
files, and a shard of another shape, dtype, dimension or norm is set aside with a warning naming
it and its vectors computed again (no broadcast error, no blame on the embeddings)."""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from ecc_lib.embed import encode, minilm, models
from ecc_lib.embed import views as embed_views
from ecc_lib.embed.cache import EmbeddingCache, text_digests
from ecc_lib.embed.encode import embed_texts

TEXTS = ["alpha question", "beta question", "gamma question", "delta question"]


class _Toy:
    """A 3-dimensional embedder: ``offset`` tells two models apart."""

    def __init__(self, offset: float = 0.0, calls: list | None = None):
        self.offset = offset
        self.calls = [] if calls is None else calls

    def encode(self, texts, **kwargs):
        self.calls.append(list(texts))
        rows = [[1.0 + self.offset, len(t) % 5 + 1.0, self.offset] for t in texts]
        vectors = np.asarray(rows, dtype=np.float32)
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


def _use(monkeypatch, factory):
    for module in (encode, embed_views, minilm):  # the modules that load a model
        monkeypatch.setattr(module, "load_model", factory)


def _expected(model: _Toy, texts) -> np.ndarray:
    return _Toy(model.offset).encode(texts)


def test_two_local_models_given_as_the_same_path_do_not_share_vectors(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    for project, offset in (("one", 0.0), ("two", 5.0)):
        folder = tmp_path / project / "my-model"
        folder.mkdir(parents=True)
        (folder / "config.json").write_text(f'{{"offset": {offset}}}')
        (folder / "model.safetensors").write_bytes(bytes([int(offset)]) * 1000)
    seen = {}
    for project, offset in (("one", 0.0), ("two", 5.0)):
        monkeypatch.chdir(tmp_path / project)
        toy = _Toy(offset)
        _use(monkeypatch, lambda *a, toy=toy, **k: toy)
        seen[project] = embed_texts(
            TEXTS, model_name="./my-model", cache_dir=cache, read_dirs=[], show_progress=False
        )
        assert toy.calls, f"project {project} got another model's cached vectors"
        np.testing.assert_allclose(seen[project], _expected(toy, TEXTS), atol=1e-6)
    assert not np.allclose(seen["one"], seen["two"])
    folders = sorted(p.name for p in cache.iterdir())
    assert len(folders) == 2 and all(f.startswith("local-my-model-") for f in folders)
    # the key follows the files: editing the weights gives a new key, the same files the same key
    monkeypatch.chdir(tmp_path / "one")
    before = models.cache_key("./my-model")
    assert models.cache_key(str(tmp_path / "one" / "my-model")) == before
    (tmp_path / "one" / "my-model" / "model.safetensors").write_bytes(b"\x07" * 1000)
    assert models.cache_key("./my-model") != before
    assert models.cache_key("sentence-transformers/all-mpnet-base-v2") == models.model_slug(
        "sentence-transformers/all-mpnet-base-v2"
    )


def _planted_shard(root, model_name, texts, vectors) -> EmbeddingCache:
    """A shard written as is (bypassing :meth:`EmbeddingCache.add`, as a foreign tool would)."""
    cache = EmbeddingCache(model_name, root, read_dirs=[])
    cache.write_dir.mkdir(parents=True, exist_ok=True)
    np.savez(cache.write_dir / "shard-foreign.npz", digests=text_digests(texts), vectors=vectors)
    return cache


@pytest.mark.parametrize(
    ("kind", "message"),
    [
        ("float64", "dtype float64, not float32"),
        ("nan", "NaN or infinite"),
        ("zero", "are zero"),
        ("unnormalised", "not unit-norm"),
        ("other_dimension", "dimension 5, not the embedder's 3"),
    ],
)
def test_a_bad_shard_is_named_set_aside_and_recomputed(
    tmp_path, monkeypatch, caplog, kind, message
):
    toy = _Toy(1.0)
    _use(monkeypatch, lambda *a, **k: toy)
    good = _expected(toy, TEXTS[:2])
    if kind == "float64":
        planted = good.astype(np.float64)
    elif kind == "nan":
        planted = good.copy()
        planted[1] = np.nan
    elif kind == "zero":
        planted = np.zeros_like(good)
    elif kind == "unnormalised":
        planted = good * 3.0
    else:  # a half-covering shard of another dimension (issue 36: a broadcast error)
        planted = np.eye(2, 5, dtype=np.float32)
    cache = _planted_shard(tmp_path, "toy-model", TEXTS[:2], planted)
    caplog.set_level(logging.WARNING, logger="ecc_lib.embed.cache")
    vectors = embed_texts(
        TEXTS, model_name="toy-model", cache_dir=tmp_path, read_dirs=[], show_progress=False
    )
    np.testing.assert_allclose(vectors, _expected(toy, TEXTS), atol=1e-6)
    assert np.isfinite(vectors).all()
    assert "shard-foreign.npz" in caplog.text and message in caplog.text
    assert not (cache.write_dir / "shard-foreign.npz").exists()  # moved aside, not read again
    assert (cache.write_dir / "shard-foreign.npz.damaged").exists()
    caplog.clear()
    n_calls = len(toy.calls)
    again = embed_texts(
        TEXTS, model_name="toy-model", cache_dir=tmp_path, read_dirs=[], show_progress=False
    )
    np.testing.assert_array_equal(again, vectors)
    assert len(toy.calls) == n_calls and "damaged" not in caplog.text  # the next run is clean


def test_a_bad_read_only_shard_is_skipped_every_time_without_crashing(
    tmp_path, monkeypatch, caplog
):
    toy = _Toy(2.0)
    _use(monkeypatch, lambda *a, **k: toy)
    shipped = tmp_path / "shipped"
    _planted_shard(shipped, "toy-model", TEXTS, np.full((len(TEXTS), 3), np.nan, np.float32))
    caplog.set_level(logging.WARNING, logger="ecc_lib.embed.cache")
    vectors = embed_texts(
        TEXTS, model_name="toy-model", cache_dir=tmp_path / "w", read_dirs=[shipped],
        show_progress=False,
    )  # fmt: skip
    np.testing.assert_allclose(vectors, _expected(toy, TEXTS), atol=1e-6)
    assert "shard-foreign.npz" in caplog.text and "skipped" in caplog.text


def test_the_cache_never_stores_zero_or_nan_vectors(tmp_path, caplog):
    cache = EmbeddingCache("toy-model", tmp_path, read_dirs=[])
    vectors = np.array([[0.0, 2.0], [0.0, 0.0], [np.nan, 1.0]], dtype=np.float32)
    cache.add(text_digests(["a", "b", "c"]), vectors)
    assert "2 zero or non-finite vector(s)" in caplog.text
    found_vectors, found = EmbeddingCache("toy-model", tmp_path, read_dirs=[]).lookup(
        text_digests(["a", "b", "c"])
    )
    assert found.tolist() == [True, False, False]
    np.testing.assert_allclose(found_vectors[0], [0.0, 1.0])


def test_load_model_remembers_a_local_model_by_its_files(tmp_path, monkeypatch):
    import types

    loaded = []

    class FakeST:
        def __init__(self, name, device=None):
            loaded.append(Path(name).resolve())

    monkeypatch.setattr(
        models, "require", lambda *a, **k: types.SimpleNamespace(SentenceTransformer=FakeST)
    )
    monkeypatch.setattr(models, "_loaded_models", {})
    for project, weights in (("one", b"\x01"), ("two", b"\x02")):
        folder = tmp_path / project / "my-model"
        folder.mkdir(parents=True)
        (folder / "model.safetensors").write_bytes(weights * 100)
    firsts = []
    for project in ("one", "two", "one"):
        monkeypatch.chdir(tmp_path / project)
        firsts.append(models.load_model("./my-model"))
    assert loaded == [tmp_path / "one" / "my-model", tmp_path / "two" / "my-model"]
    assert firsts[0] is firsts[2] and firsts[0] is not firsts[1]
