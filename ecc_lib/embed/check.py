"""The embedding check: how many texts were too long for the model and how many distinct texts
share a vector with another (:class:`EmbeddingCheck`, :func:`embedding_check`,
:func:`count_duplicate_vectors`); positive counts are logged as warnings."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

from ecc_lib.embed.models import canonical_model_name

logger = logging.getLogger(__name__)

_DUPLICATE_DECIMALS = 4


@dataclass(frozen=True)
class EmbeddingCheck:
    """What :func:`embed_texts` found about its texts (recorded as ``embeddings.<dataset>``).

    Attributes
    ----------
    n_texts : int
        Texts embedded (with repeats).
    n_distinct_texts : int
    n_truncated : int
        Distinct texts longer than the model's maximum sequence length (word pieces).
    n_duplicate_vectors : int
        Distinct texts whose vector equals (to 4 decimals) the vector of another distinct text.
    text_view : str
        The view used (``"auto"``, ``"full"``, ``"tail"`` or ``"last_question"``).
    max_seq_length : int
        The model's limit in word pieces (special tokens included).
    model : str
    """

    n_texts: int
    n_distinct_texts: int
    n_truncated: int
    n_duplicate_vectors: int
    text_view: str
    max_seq_length: int
    model: str

    def to_dict(self) -> dict:
        """Plain dictionary (JSON-ready).

        Returns
        -------
        dict
            The fields.
        """
        return asdict(self)


def count_duplicate_vectors(vectors: np.ndarray, texts: Sequence[str]) -> int:
    """Distinct texts whose vector equals (to 4 decimals) that of another distinct text.

    Parameters
    ----------
    vectors : ndarray, shape (n_texts, dim)
        One embedding per text.
    texts : sequence of str
        The texts (repeats of a text count once).

    Returns
    -------
    int
        How many distinct texts share their rounded vector with another distinct text.
    """
    texts = np.asarray([str(t) for t in texts], dtype=object)
    _, first = np.unique(texts, return_index=True)
    distinct = np.round(np.asarray(vectors)[np.sort(first)], _DUPLICATE_DECIMALS) + 0.0
    if len(distinct) < 2:
        return 0
    _, inverse, counts = np.unique(distinct, axis=0, return_inverse=True, return_counts=True)
    return int((counts[np.asarray(inverse).reshape(-1)] > 1).sum())


def embedding_check(
    vectors: np.ndarray,
    texts: Sequence[str],
    too_long: np.ndarray,
    *,
    text_view: str,
    max_seq_length: int,
    model_name: str | None = None,
) -> EmbeddingCheck:
    """Count truncated texts and vectors shared by distinct texts; log a warning when either is
    positive (see :class:`EmbeddingCheck`).

    Parameters
    ----------
    vectors : ndarray, shape (n_texts, dim)
        One embedding per text.
    texts : sequence of str
        The embedded texts.
    too_long : ndarray of bool, shape (n_texts,)
        Which texts exceed the model's ``max_seq_length``.
    text_view : str
        The text view that was embedded (named in the warnings).
    max_seq_length : int
        The model's limit in word pieces.
    model_name : str, optional
        The embedding model, recorded under its canonical name (None: the offline default).

    Returns
    -------
    EmbeddingCheck
    """
    texts = [str(t) for t in texts]
    _, first = np.unique(np.asarray(texts, dtype=object), return_index=True)
    check = EmbeddingCheck(
        n_texts=len(texts),
        n_distinct_texts=int(len(first)),
        n_truncated=int(np.asarray(too_long, dtype=bool)[first].sum()),
        n_duplicate_vectors=count_duplicate_vectors(vectors, texts),
        text_view=text_view,
        max_seq_length=int(max_seq_length),
        model=canonical_model_name(model_name),
    )
    if check.n_truncated:
        handled = (
            "embedded as given, so the model reads only their beginning"
            if text_view == "full"
            else f"embedded through the {text_view!r} view"
        )
        logger.warning(
            "%d of %d distinct texts are longer than %s's %d word pieces; %s",
            check.n_truncated,
            check.n_distinct_texts,
            check.model,
            check.max_seq_length,
            handled,
        )
    if check.n_duplicate_vectors:
        logger.warning(
            "%d of %d distinct texts share their embedding vector with another text (text_view=%r)"
            "; embedding-based methods cannot tell them apart",
            check.n_duplicate_vectors,
            check.n_distinct_texts,
            text_view,
        )
    return check


__all__ = [
    "count_duplicate_vectors",
]
