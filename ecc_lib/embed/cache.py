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
from ecc_lib.embed.models import cache_key, canonical_model_name

NORM_TOLERANCE = 1e-3
"""How far from 1 a cached vector's norm may be: every embedder's vectors are unit-normalised and
the cache stores them so; a zero, NaN or unnormalised row marks a foreign or damaged shard."""

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
    float32 of unit norm. ``read_dirs`` are searched as well as ``write_dir``; new vectors go to a
    new shard in ``write_dir`` (written to a temporary file, then renamed, so a crash never leaves a
    half shard). The folder of a model is :func:`ecc_lib.embed.models.cache_key` (a local model's
    folder name plus a digest of its files). A shard whose digests or vectors have the wrong shape,
    whose vectors are not float32, of another dimension than the embedder's (``dimension``) or not
    finite unit vectors is not read: a warning names it, it is moved aside in the writable layer and
    its vectors are computed again (issue 36).

    Parameters
    ----------
    model_name : str, optional
        Model whose vectors are cached (default model when None).
    write_dir : path, optional
        Writable cache root; default :func:`ecc_lib.paths.cache_dir`.
    read_dirs : sequence of paths, optional
        Extra read-only cache roots; default the shipped one,
        :func:`ecc_lib.paths.bundled_embeddings_dir`.
    dimension : int, optional
        The embedder's vector dimension when known (default: the first readable shard's; once the
        embedder has run, :meth:`require_dimension` sets its own).
    """

    def __init__(
        self,
        model_name: str | None = None,
        write_dir: str | Path | None = None,
        read_dirs: Sequence[str | Path] | None = None,
        *,
        dimension: int | None = None,
    ) -> None:
        self.model_name = canonical_model_name(model_name)
        self.dimension = None if dimension is None else int(dimension)
        slug = cache_key(model_name)
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

    def _shard_problem(self, block: np.ndarray, values: np.ndarray, width: int | None) -> str:
        """Why a shard's arrays cannot be this cache's ("" when they can)."""
        if block.dtype != np.uint8 or block.ndim != 2 or block.shape[1] != 32:
            return f"digests of shape {block.shape} and dtype {block.dtype}, not (n, 32) uint8"
        if values.ndim != 2 or len(values) != len(block):
            return f"vectors of shape {values.shape} do not match {len(block)} digests"
        if values.dtype != np.float32:
            return f"vectors of dtype {values.dtype}, not float32"
        if width is not None and values.shape[1] != width:
            whose = "the embedder's" if self.dimension is not None else "other shards'"
            return f"vectors of dimension {values.shape[1]}, not {whose} {width}"
        norms = np.linalg.norm(values.astype(np.float64), axis=1)
        bad = ~(np.abs(norms - 1.0) <= NORM_TOLERANCE)  # NaN norms are bad too
        if bad.any():
            kind = (
                "NaN or infinite"
                if not np.isfinite(values[bad]).all()
                else "zero"
                if (norms[bad] == 0).all()
                else "not unit-norm"
            )
            first = int(np.flatnonzero(bad)[0])
            return f"{int(bad.sum())} of {len(values)} vectors are {kind} (first: row {first})"
        return ""

    def _load(self) -> None:
        if self._index is None:
            digests, vectors = [], []
            width = self.dimension
            for file in self._shard_files():
                try:
                    with np.load(file, allow_pickle=False) as shard:
                        block = shard["digests"]
                        values = shard["vectors"]
                    problem = self._shard_problem(block, values, width)
                    if problem:
                        raise ValueError(problem)
                except Exception as error:  # a torn or foreign file: skip it, recompute
                    self._set_aside(file, error)
                    continue
                width = values.shape[1]
                digests.append(block)
                vectors.append(values)
            keys = pd.Index([d.tobytes() for block in digests for d in block])
            first = ~keys.duplicated(keep="first")
            self._index = keys[first]
            self._vectors = (
                np.concatenate(vectors)[first] if vectors else np.zeros((0, 0), np.float32)
            )

    def require_dimension(self, dimension: int) -> None:
        """Read only shards of ``dimension`` from now on (the embedder's, once it has run); the
        others are set aside with a warning naming each when the cache is next read.

        Parameters
        ----------
        dimension : int
        """
        if self.dimension != int(dimension):
            self.dimension = int(dimension)
            self._index = None

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
        vectors = np.array(vectors, dtype=np.float32)
        norms = np.linalg.norm(vectors.astype(np.float64), axis=1)
        keep = np.isfinite(vectors).all(axis=1) & (norms > 0)
        if not keep.all():
            logger.warning(
                "the embedder %s returned %d zero or non-finite vector(s) of %d; they are not "
                "cached",
                self.model_name,
                int((~keep).sum()),
                len(keep),
            )
            digests, vectors, norms = digests[keep], vectors[keep], norms[keep]
            if len(digests) == 0:
                return None
        off = np.abs(norms - 1.0) > NORM_TOLERANCE  # unit vectors are stored exactly as given
        vectors[off] = vectors[off] / norms[off, None].astype(np.float32)
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


__all__ = [
    "text_digests",
]
