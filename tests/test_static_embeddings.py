"""The static embedder distilled from MiniLM and the length-batched MiniLM path (issue 28)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ecc_lib.embed import encode, minilm, models
from ecc_lib.embed import static as static_embeddings
from ecc_lib.embed.cache import EmbeddingCache
from ecc_lib.embed.encode import embed_texts
from ecc_lib.embed.models import DEFAULT_MODEL, canonical_model_name, model_slug
from ecc_lib.embed.static import (
    STATIC_MODEL,
    StaticEmbedder,
    fit_static_weights,
    load_static_embedder,
    quantize_rows,
    refit_token_vectors,
    shipped_weights_path,
)

TEXTS = [
    "What is the derivative of x^2 with respect to x?",
    "Differentiate x squared.",
    "Name the capital city of Peru.",
    "Which city is the capital of Peru?",
    "",
    "Write a Python function that reverses a list. " * 40,
]


def test_static_is_a_named_embedder_with_its_own_cache_folder():
    assert canonical_model_name("static") == STATIC_MODEL
    assert canonical_model_name("minilm") == DEFAULT_MODEL
    assert canonical_model_name(None) == DEFAULT_MODEL
    assert model_slug("static") != model_slug("minilm")
    assert EmbeddingCache("static").write_dir.name == STATIC_MODEL


def test_shipped_static_embedder_is_offline_deterministic_and_unit(tmp_path, monkeypatch):
    assert shipped_weights_path().is_file()
    assert shipped_weights_path().stat().st_size < 8 * 2**20  # a few MB in the repository

    def no_transformer(*args, **kwargs):
        raise AssertionError("the static embedder must not load sentence-transformers")

    monkeypatch.setattr(encode, "encode_minilm", no_transformer)
    vectors = embed_texts(TEXTS, model_name="static", cache_dir=tmp_path, read_dirs=[])
    assert vectors.shape == (len(TEXTS), load_static_embedder().dim)
    assert vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    # a text's vector does not depend on the others in the call
    alone = load_static_embedder().encode([TEXTS[2]])
    np.testing.assert_allclose(alone[0], vectors[2], atol=1e-6)
    similarity = vectors @ vectors.T
    assert similarity[0, 1] > similarity[0, 2]  # paraphrases closer than unrelated questions
    assert similarity[2, 3] > similarity[2, 1]
    # the cache names the embedder: a second call reads the static folder only
    assert len(EmbeddingCache("static", tmp_path, read_dirs=[])) == len(set(TEXTS))
    assert not (tmp_path / DEFAULT_MODEL).exists()
    again = embed_texts(TEXTS, model_name="static", cache_dir=tmp_path, read_dirs=[])
    np.testing.assert_array_equal(vectors, again)


def test_static_embedder_sums_weighted_token_vectors():
    tokenizer = static_embeddings.minilm_tokenizer()
    size = tokenizer.get_vocab_size()
    rng = np.random.default_rng(0)
    table = rng.normal(size=(size, 3)).astype(np.float32)
    empty = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    embedder = StaticEmbedder(table, empty)
    ids = tokenizer.encode("capital of peru peru", add_special_tokens=False).ids
    expected = table[ids].sum(axis=0)
    got = embedder.encode(["capital of peru peru", ""])
    np.testing.assert_allclose(got[0], expected / np.linalg.norm(expected), atol=1e-5)
    np.testing.assert_allclose(got[1], empty)
    with pytest.raises(ValueError, match="vocabulary"):
        StaticEmbedder(table[:10], empty)


def test_refit_moves_seen_tokens_towards_the_targets_and_keeps_unseen_ones():
    tokenizer = static_embeddings.minilm_tokenizer()
    size = tokenizer.get_vocab_size()
    rng = np.random.default_rng(1)
    x0 = rng.normal(size=(size, 4))
    texts = ["the cat sat", "a dog ran", "the dog sat", "a cat ran", "cat", "dog dog"]
    counts = static_embeddings.token_counts(tokenizer, texts, size).toarray()
    means = counts / counts.sum(axis=1, keepdims=True)
    targets = means @ rng.normal(size=(size, 4))  # reachable by some table
    refit = refit_token_vectors(x0, texts, targets, alpha=1e-4, n_iter=60)
    before = np.linalg.norm(means @ x0 - targets)
    after = np.linalg.norm(means @ refit - targets)
    assert after < 0.05 * before
    unseen = counts.sum(axis=0) == 0
    np.testing.assert_allclose(refit[unseen], x0[unseen], atol=1e-8)
    with pytest.raises(ValueError, match="target"):
        refit_token_vectors(x0, texts, targets[:3])


def test_pca_table_and_int8_rows():
    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(200, 16)) @ rng.normal(size=(16, 16))
    table, empty = fit_static_weights(vectors, vectors[0], n_components=4)
    assert table.shape == (200, 4) and empty.shape == (4,)
    again, _ = fit_static_weights(vectors, vectors[0], n_components=4)
    np.testing.assert_array_equal(table, again)  # signs fixed: reproducible
    codes, scales = quantize_rows(table)
    assert codes.dtype == np.int8
    np.testing.assert_allclose(codes * scales[:, None], table, atol=float(scales.max()) / 2 + 1e-7)
    with pytest.raises(ValueError, match="n_components"):
        fit_static_weights(vectors, vectors[0], n_components=17)


def test_minilm_batches_cover_every_text_once_within_the_token_budget():
    lengths = np.array([5, 200, 17, 17, 3, 90, 256, 1])
    batches = minilm.minilm_batches(lengths, batch_tokens=300, max_batch=3)
    flat = np.concatenate(batches)
    assert sorted(flat.tolist()) == list(range(len(lengths)))
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * lengths[batch].max() <= 300
    assert lengths[flat].tolist() == sorted(lengths.tolist(), reverse=True)


def test_length_batched_minilm_equals_sentence_transformers_and_logs_an_estimate(
    monkeypatch, caplog
):
    model = models.load_model(None)
    texts = [*TEXTS, "Short one.", "A somewhat longer question about the boiling point of water?"]
    reference = model.encode(texts, batch_size=64, normalize_embeddings=True)
    monkeypatch.setattr(minilm, "_ETA_MIN_SECONDS", 0.0)
    with caplog.at_level(logging.INFO, logger="ecc_lib.embed.minilm"):
        fast = minilm.encode_minilm(texts, model, batch_tokens=64, show_progress=False)
    np.testing.assert_allclose(fast, reference, atol=1e-6)
    message = next(r.getMessage() for r in caplog.records if "texts to embed" in r.getMessage())
    assert message.startswith(f"{len(texts):,} texts to embed with all-MiniLM-L6-v2, about ")
    assert "--embedder static takes about" in message


def test_shipped_minilm_cache_stays_valid_under_the_new_path():
    from ecc_lib.data.sources import load_bundled

    queries, _ = load_bundled("dcrouter")
    texts = queries["text"].astype(str).sample(24, random_state=0).tolist()
    cached = embed_texts(texts, show_progress=False)  # from data/embeddings
    fresh = embed_texts(texts, use_cache=False, show_progress=False)  # recomputed
    np.testing.assert_allclose(fresh, cached, atol=1e-6)


def test_minilm_threads_follow_the_idle_cores_and_are_restored(monkeypatch):
    import torch

    monkeypatch.setattr(minilm.os, "sched_getaffinity", lambda pid: {0, 1}, raising=False)
    monkeypatch.setattr(minilm.os, "getloadavg", lambda: (0.2, 0.0, 0.0))
    assert minilm.minilm_threads() == 2
    monkeypatch.setattr(minilm.os, "getloadavg", lambda: (0.9, 0.0, 0.0))
    assert minilm.minilm_threads() == 2  # the load this process makes itself is not "busy"
    monkeypatch.setattr(minilm.os, "getloadavg", lambda: (5.0, 0.0, 0.0))
    assert minilm.minilm_threads() == 1  # a busy machine: one thread
    before = torch.get_num_threads()
    seen = []
    monkeypatch.setattr(
        minilm, "_encode_batch", lambda *a: seen.append(torch.get_num_threads()) or 0.0
    )
    minilm.encode_minilm(["a b", "c"], models.load_model(None), show_progress=False)
    assert seen and set(seen) == {1}
    assert torch.get_num_threads() == before


def test_minilm_runs_in_onnx_runtime_with_the_same_vectors_as_pytorch(tmp_path, monkeypatch):
    pytest.importorskip("onnxruntime")
    monkeypatch.setenv("ECC_LIB_CACHE_DIR", str(tmp_path))  # the export goes to a fresh cache
    monkeypatch.setattr(minilm, "_onnx_sessions", {})
    model = models.load_model(None)
    texts = [*TEXTS, "Short one.", "x " * 400]  # the last one is truncated at 256 word pieces
    in_torch = minilm.encode_minilm(texts, model, show_progress=False, backend="torch")
    in_onnx = minilm.encode_minilm(texts, model, show_progress=False, backend="onnx")
    assert list(tmp_path.glob("_onnx/*.onnx")), "the ONNX export is cached"
    np.testing.assert_allclose(in_onnx, in_torch, atol=1e-6)
    auto = minilm.encode_minilm(texts, model, show_progress=False)
    np.testing.assert_array_equal(auto, in_onnx)  # the default path is ONNX Runtime
    with pytest.raises(ValueError, match="backend"):
        minilm.encode_minilm(texts, model, show_progress=False, backend="gpu")
