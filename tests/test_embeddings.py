"""Embeddings: the offline default model, the disk cache, the shipped cache."""

from __future__ import annotations

import numpy as np
import pytest

from ecc_lib.embed import encode, minilm, models
from ecc_lib.embed import views as embed_views
from ecc_lib.embed.cache import EmbeddingCache, text_digests
from ecc_lib.embed.encode import embed_texts


def test_default_model_offline_and_cache_makes_second_call_free(tmp_path, monkeypatch):
    texts = [
        "What is the derivative of x^2?",
        "Name the capital of Peru.",
        "What is the derivative of x^2?",
    ]
    first = embed_texts(texts, cache_dir=tmp_path, read_dirs=[], show_progress=False)
    assert first.shape == (3, 384) and first.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    np.testing.assert_array_equal(first[0], first[2])
    assert float(first[0] @ first[1]) < 0.9
    assert len(EmbeddingCache(None, tmp_path, read_dirs=[])) == 2  # duplicates stored once

    def no_model(*args, **kwargs):
        raise AssertionError("the second call must not load or run the model")

    for module in (encode, embed_views, minilm):  # the modules that load a model
        monkeypatch.setattr(module, "load_model", no_model)
    second = embed_texts(texts, cache_dir=tmp_path, read_dirs=[], show_progress=False)
    np.testing.assert_array_equal(first, second)


def test_cache_layers_and_partial_hits(tmp_path, monkeypatch):
    shipped = tmp_path / "shipped"
    cache = EmbeddingCache("toy-model", shipped / "unused", read_dirs=[])
    cache.write_dir = shipped / "toy-model"
    cache.add(text_digests(["a"]), np.array([[1.0, 0.0]], dtype=np.float32))

    calls = []

    class ToyModel:
        def encode(self, texts, **kwargs):
            calls.append(list(texts))
            return np.array([[0.0, 2.0]] * len(texts), dtype=np.float32)

    for module in (encode, embed_views, minilm):  # the modules that load a model
        monkeypatch.setattr(module, "load_model", lambda name: ToyModel())
    vectors = embed_texts(
        ["a", "b"],
        model_name="toy-model",
        cache_dir=tmp_path / "w",
        read_dirs=[shipped],
        show_progress=False,
    )
    assert calls == [["b"]]  # only the text missing from the shipped layer is computed
    np.testing.assert_allclose(vectors, [[1.0, 0.0], [0.0, 1.0]])


def test_bundled_cache_covers_bundled_texts(monkeypatch):
    from ecc_lib.data.sources import load_bundled

    for module in (encode, embed_views, minilm):  # the modules that load a model
        monkeypatch.setattr(module, "load_model", lambda name: pytest.fail("not cached"))
    queries, _ = load_bundled("re2")
    vectors = embed_texts(queries["text"].tolist()[:200], use_cache=True, show_progress=False)
    assert vectors.shape == (200, 384)


def test_unknown_model_offline_error(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(RuntimeError, match="no-such-owner/no-such-model"):
        models.load_model("no-such-owner/no-such-model")
