"""The on-disk embedding cache: vectors keyed by the sha256 of the embedded text
(:func:`text_digests`), in ``.npz`` shards per model (:class:`EmbeddingCache`), with a read-only
layer shipped with the bundled datasets and a writable one."""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib import paths
from ecc_lib.embed.models import canonical_model_name, model_slug

logger = logging.getLogger(__name__)


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
                try:
                    with np.load(file) as shard:
                        block = shard["digests"]
                        values = shard["vectors"].astype(np.float32)
                    if block.ndim != 2 or block.shape[1] != 32 or len(block) != len(values):
                        raise ValueError(
                            f"digests {block.shape} do not match vectors {values.shape}"
                        )
                    if vectors and values.shape[1] != vectors[0].shape[1]:
                        raise ValueError(
                            f"vectors of dimension {values.shape[1]}, other shards hold "
                            f"{vectors[0].shape[1]}"
                        )
                except Exception as error:  # a torn or foreign file: skip it, recompute
                    self._set_aside(file, error)
                    continue
                digests.append(block)
                vectors.append(values)
            keys = pd.Index([d.tobytes() for block in digests for d in block])
            first = ~keys.duplicated(keep="first")
            self._index = keys[first]
            self._vectors = (
                np.concatenate(vectors)[first] if vectors else np.zeros((0, 0), np.float32)
            )

    def _set_aside(self, file: Path, error: Exception) -> None:
        """Warn about a damaged shard, naming it; move it aside when it is in the writable layer."""
        where = "skipped"
        if file.parent == self.write_dir:
            damaged = file.with_name(file.name + ".damaged")
            try:
                os.replace(file, damaged)
                where = f"moved to {damaged.name}"
            except OSError:
                where = "skipped (could not move it aside)"
        logger.warning(
            "embedding cache shard %s is damaged (%s: %s); %s, its vectors are computed again",
            file,
            type(error).__name__,
            error,
            where,
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
        temporary = None
        try:
            self.write_dir.mkdir(parents=True, exist_ok=True)
            handle, temporary = tempfile.mkstemp(dir=self.write_dir, suffix=".tmp")
            os.close(handle)
            with open(temporary, "wb") as stream:
                np.savez(stream, digests=digests, vectors=vectors.astype(np.float32))
            target = self.write_dir / f"shard-{time.time_ns()}-{digests[0].tobytes().hex()[:8]}.npz"
            os.replace(temporary, target)
        except OSError as error:  # read-only or full: the vectors are used, just not kept
            if temporary is not None:
                Path(temporary).unlink(missing_ok=True)
            logger.warning(
                "embedding cache %s cannot be written (%s); %d new vector(s) are used but not "
                "cached (set ECC_LIB_CACHE_DIR to a writable folder to keep them)",
                self.write_dir,
                error.strerror or type(error).__name__,
                len(digests),
            )
            return None
        self._index = None
        return target


__all__ = ["EmbeddingCache", "text_digests"]
