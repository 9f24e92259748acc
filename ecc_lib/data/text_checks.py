"""The checks of the query texts and their embeddings (see :mod:`ecc_lib.data.checks`): empty and
duplicate texts (also across the protocol's split), texts longer than the embedder reads, and
embedding collapse."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from ecc_lib.data.check_result import CheckResult, timed

COLLAPSE_FAIL_SHARE = 0.5
"""Share of distinct texts sharing a vector above which ``embedding_collapse`` fails."""
COLLAPSE_FAIL_COSINE = 0.95
"""Mean pairwise cosine of the vectors above which ``embedding_collapse`` fails."""


# --------------------------------------------------------------------------------------------------
# texts and embeddings


@timed
def check_texts(
    queries: pd.DataFrame,
    *,
    train_ids: Sequence[str] | None = None,
    test_ids: Sequence[str] | None = None,
) -> CheckResult:
    """Empty texts and duplicate texts, also duplicates across the protocol's train/test split.

    Texts compare after stripping surrounding white space.

    Parameters
    ----------
    queries : DataFrame
        ``query_id, text``.
    train_ids, test_ids : sequence of str, optional
        The protocol's split: a text on both sides leaks the test answer into training.

    Returns
    -------
    CheckResult
        ``fail`` when more than half of the texts are empty; ``warn`` for any empty text, duplicate
        or text across the split.
    """
    name = "texts"
    text = queries["text"].fillna("").astype(str).str.strip()
    ids = queries["query_id"].astype(str)
    empty = (text == "").to_numpy()
    filled = text[~empty]
    repeated = filled.duplicated(keep=False).to_numpy()
    groups = int(filled[repeated].nunique())
    numbers = {
        "n_texts": int(len(text)),
        "n_empty": int(empty.sum()),
        "empty_examples": ids[empty].head(5).tolist(),
        "n_duplicate_texts": int(repeated.sum()),
        "n_duplicate_groups": groups,
        "duplicate_examples": ids[~empty][repeated].head(5).tolist(),
        "n_across_split": None,
    }
    if train_ids is not None and test_ids is not None:
        by_id = pd.Series(text.to_numpy(), index=ids.to_numpy())
        train = set(by_id.reindex(pd.Index(np.asarray(train_ids, dtype=str))).dropna())
        test = by_id.reindex(pd.Index(np.asarray(test_ids, dtype=str))).dropna()
        across = test[test.isin(train) & (test != "")]
        numbers["n_across_split"] = int(len(across))
        numbers["across_split_examples"] = across.index[:5].tolist()
    parts = []
    if numbers["n_empty"]:
        parts.append(f"{numbers['n_empty']} empty text(s)")
    if groups:
        parts.append(
            f"{numbers['n_duplicate_texts']} queries share their text with another ({groups} texts)"
        )
    if numbers["n_across_split"]:
        parts.append(
            f"{numbers['n_across_split']} test queries repeat a training text of the protocol's split"
        )
    if not parts:
        split = ", none across the protocol's split" if numbers["n_across_split"] == 0 else ""
        said = f"{len(text)} texts, none empty, none repeated{split}"
        return CheckResult(name, "ok", said, numbers)
    status = "fail" if numbers["n_empty"] > len(text) / 2 else "warn"
    said = "; ".join(parts) + ": embedding-based methods cannot tell such queries apart"
    return CheckResult(name, status, said, numbers)


@timed
def check_text_length(
    queries: pd.DataFrame, *, model_name: str | None = None, text_view: str = "auto"
) -> CheckResult:
    """Texts longer than the embedder's maximum sequence length (word pieces).

    Parameters
    ----------
    queries : DataFrame
        ``query_id, text``.
    model_name : str, optional
        The embedder (default all-MiniLM-L6-v2).
    text_view : str, default "auto"
        The view the protocol embeds (named in the sentence).

    Returns
    -------
    CheckResult
        ``warn`` when some text is too long (the model reads only part of it).
    """
    from ecc_lib.embed.models import canonical_model_name
    from ecc_lib.embed.views import text_views

    name = "text_length"
    texts = queries["text"].fillna("").astype(str)
    distinct = pd.Series(pd.unique(texts.to_numpy()), dtype=object).astype(str)
    # a text of at most 254 characters fits any model reading 256 word pieces (text_views); a
    # text with more white-space separated words than the model reads is too long for certain
    # (each word is at least one piece): only the texts in between are tokenised
    _, _, limit = text_views(
        distinct[distinct.str.len() > 254].head(1).tolist(), model_name=model_name
    )
    n_words = distinct.str.count(r"\S+").to_numpy()
    sure = n_words > limit - 2
    between = (distinct.str.len().to_numpy() > 254) & ~sure
    _, maybe, _ = text_views(distinct[between].tolist(), model_name=model_name, text_view="full")
    too_long = sure.copy()
    too_long[np.flatnonzero(between)] = maybe
    n_long = int(too_long.sum())
    numbers = {
        "model": canonical_model_name(model_name),
        "max_seq_length": int(limit),
        "n_distinct_texts": int(len(distinct)),
        "n_too_long": n_long,
        "too_long_share": float(n_long / max(len(distinct), 1)),
        "max_characters": int(texts.str.len().max()) if len(texts) else 0,
        "text_view": text_view,
    }
    if not n_long:
        said = f"every text fits {numbers['model']}'s {limit} word pieces"
        return CheckResult(name, "ok", said, numbers)
    handled = (
        "the model reads only their beginning"
        if text_view == "full"
        else f"the {text_view!r} text view embeds their last {limit - 2} word pieces"
    )
    said = (
        f"{n_long} of {len(distinct)} distinct texts ({100 * numbers['too_long_share']:.1f}%) are "
        f"longer than {numbers['model']}'s {limit} word pieces; {handled}"
    )
    return CheckResult(name, "warn", said, numbers)


@timed
def check_embedding_collapse(embeddings: np.ndarray, texts: Sequence[str]) -> CheckResult:
    """Distinct texts that share one vector, and how spread the vectors are.

    Uses :func:`ecc_lib.embed.check.count_duplicate_vectors` (the round-2 check) and the mean
    pairwise cosine of the unit vectors, ``(|sum v|^2 - n) / (n (n - 1))``.

    Parameters
    ----------
    embeddings : ndarray, shape (n_texts, dim)
    texts : sequence of str

    Returns
    -------
    CheckResult
        ``fail`` when more than half of the distinct texts share a vector or the mean cosine
        exceeds 0.95; ``warn`` for any shared vector.
    """
    from ecc_lib.embed.check import count_duplicate_vectors

    name = "embedding_collapse"
    vectors = np.asarray(embeddings, dtype=float)
    texts = [str(t) for t in texts]
    if vectors.ndim != 2 or len(vectors) != len(texts):
        raise ValueError(
            f"embeddings have shape {vectors.shape}; expected one row per text ({len(texts)})"
        )
    n_distinct = len(set(texts))
    shared = count_duplicate_vectors(vectors, texts)
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    n = len(unit)
    total = unit.sum(axis=0)
    mean_cos = float((total @ total - n) / (n * (n - 1))) if n > 1 else float("nan")
    numbers = {
        "n_distinct_texts": n_distinct,
        "n_sharing_a_vector": int(shared),
        "sharing_share": float(shared / max(n_distinct, 1)),
        "mean_pairwise_cosine": mean_cos,
        "dim": int(vectors.shape[1]),
    }
    text = (
        f"{shared} of {n_distinct} distinct texts share their vector with another text; mean "
        f"pairwise cosine {mean_cos:.2f}"
    )
    status = "ok"
    if numbers["sharing_share"] > COLLAPSE_FAIL_SHARE or mean_cos > COLLAPSE_FAIL_COSINE:
        status = "fail"
        text += ": the embeddings have collapsed, embedding-based clusters mean nothing"
    elif shared:
        status = "warn"
        text += ": embedding-based methods cannot tell those apart"
    return CheckResult(name, status, text, numbers)


__all__: list[str] = []
