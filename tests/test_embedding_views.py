"""Text views of long prompts, the embedding check and damaged cache shards (issue 9)."""

from __future__ import annotations

import logging

import numpy as np
import pytest

from ecc_lib.embed import encode as embeddings
from ecc_lib.embed import minilm
from ecc_lib.embed import views as embed_views
from ecc_lib.embed.cache import EmbeddingCache, text_digests
from ecc_lib.embed.check import count_duplicate_vectors
from ecc_lib.embed.encode import embed_texts
from ecc_lib.embed.views import text_views
from ecc_lib.synthetic.messy import few_shot_texts


@pytest.fixture(scope="module")
def few_shot():
    return few_shot_texts(60, random_state=3)


def test_few_shot_texts_are_long_with_distinct_endings(few_shot):
    assert len(set(few_shot)) == len(few_shot)
    assert min(len(t) for t in few_shot) > 1400
    views, too_long, max_length = text_views(few_shot, text_view="full")
    assert too_long.all() and max_length == 256
    assert views == few_shot


def test_views_keep_the_question_and_leave_short_texts_alone(few_shot):
    short = ["What is 2 + 2?", "Name the capital of France."]
    for view in ("auto", "tail", "last_question"):
        views, too_long, _ = text_views([*short, *few_shot[:5]], text_view=view)
        assert views[:2] == short and not too_long[:2].any()
        assert all(v != t and len(v) < len(t) for v, t in zip(views[2:], few_shot[:5]))
        # the final question survives every view
        assert all(
            t.rsplit("Question:", 1)[1].split("\n")[0] in v for v, t in zip(views[2:], few_shot)
        )
    with pytest.raises(ValueError, match="text_view"):
        text_views(short, text_view="middle")


@pytest.mark.slow
def test_default_view_avoids_collapse_and_full_view_reports_it(few_shot, tmp_path, caplog):
    """All-MiniLM-L6-v2 reads 256 word pieces: the full view collapses the few-shot prompts."""
    caplog.set_level(logging.WARNING, logger="ecc_lib.embed.check")
    full, check_full = embed_texts(
        few_shot,
        cache_dir=tmp_path,
        read_dirs=[],
        text_view="full",
        return_check=True,
        show_progress=False,
    )
    assert check_full.n_truncated == len(few_shot)
    assert check_full.n_duplicate_vectors > 0.5 * len(few_shot)  # reported when forced
    assert "share their embedding vector" in caplog.text
    vectors, check = embed_texts(
        few_shot, cache_dir=tmp_path, read_dirs=[], return_check=True, show_progress=False
    )
    assert check.text_view == "auto" and check.n_truncated == len(few_shot)
    assert check.n_duplicate_vectors <= 0.01 * check.n_distinct_texts
    assert check.to_dict()["n_texts"] == len(few_shot)


def test_short_texts_keep_their_shipped_cache_keys_and_vectors(monkeypatch):
    from ecc_lib.data.sources import load_bundled

    for module in (embeddings, embed_views, minilm):  # the modules that load a model
        monkeypatch.setattr(module, "load_model", lambda *a, **k: pytest.fail("not cached"))
    texts = load_bundled("re2")[0]["text"].tolist()
    short = [t for t in texts if len(t) < 200][:20]
    views, too_long, _ = text_views(short)
    assert views == short and not too_long.any()
    cache = EmbeddingCache(None, write_dir="/nonexistent-write-dir")
    shipped, found = cache.lookup(text_digests(short))
    assert found.all()
    vectors = embed_texts(short, show_progress=False)
    np.testing.assert_array_equal(vectors, shipped / np.linalg.norm(shipped, axis=1, keepdims=True))


def test_count_duplicate_vectors_counts_distinct_texts_only():
    vectors = np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    assert count_duplicate_vectors(vectors, ["a", "b", "a", "c"]) == 2  # a and b share
    assert count_duplicate_vectors(vectors, ["a", "a", "a", "c"]) == 0  # repeats of one text


def test_damaged_shard_is_named_skipped_and_rebuilt(tmp_path, monkeypatch, caplog):
    calls = []

    class Fake:
        def encode(self, texts, **kwargs):
            calls.append(list(texts))
            return np.array([[1.0, 0.0] if t == "a" else [0.0, 1.0] for t in texts])

    for module in (embeddings, embed_views, minilm):  # the modules that load a model
        monkeypatch.setattr(module, "load_model", lambda *a, **k: Fake())
    embed_texts(["a", "b"], cache_dir=tmp_path, read_dirs=[], show_progress=False)
    shard = next((tmp_path / "all-MiniLM-L6-v2").glob("*.npz"))
    shard.write_bytes(shard.read_bytes()[:40])  # a torn write
    caplog.set_level(logging.WARNING, logger="ecc_lib.embed.cache")
    vectors = embed_texts(["a", "b"], cache_dir=tmp_path, read_dirs=[], show_progress=False)
    np.testing.assert_allclose(vectors, [[1.0, 0.0], [0.0, 1.0]])
    assert shard.name in caplog.text and "damaged" in caplog.text
    assert len(calls) == 2  # recomputed
    caplog.clear()
    embed_texts(["a", "b"], cache_dir=tmp_path, read_dirs=[], show_progress=False)
    assert len(calls) == 2 and "damaged" not in caplog.text  # rebuilt: the next run is clean


@pytest.mark.parametrize("name", ["dcrouter", "mmlu2"])
def test_shipped_cache_covers_the_default_view_of_long_bundled_texts(monkeypatch, name):
    from ecc_lib.data.sources import load_bundled

    for module in (embeddings, embed_views, minilm):  # the modules that load a model
        monkeypatch.setattr(module, "load_model", lambda *a, **k: pytest.fail("not cached"))
    texts = sorted(set(load_bundled(name)[0]["text"]))
    views, too_long, _ = text_views(texts)
    assert too_long.sum() > 100  # long prompts exist and are embedded through their tails
    cache = EmbeddingCache(None, write_dir="/nonexistent-write-dir")
    _, found = cache.lookup(text_digests(views))
    assert found.all()
