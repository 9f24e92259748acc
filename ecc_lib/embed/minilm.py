"""MiniLM run fast: texts tokenized once and batched by length (:func:`encode_minilm`), the
transformer in ONNX Runtime when it is installed (:func:`onnx_session`, exported once into the
cache) or in PyTorch, on the idle cores (:func:`minilm_threads`); an estimate before long work."""

from __future__ import annotations

import hashlib
import logging
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ecc_lib import paths
from ecc_lib._optional import require
from ecc_lib.embed.models import DEFAULT_MODEL, canonical_model_name, load_model

logger = logging.getLogger(__name__)

DEFAULT_BATCH_TOKENS = 4096
"""Padded word pieces per forward pass."""
_ETA_MIN_SECONDS = 20.0


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


def minilm_batches(lengths: np.ndarray, batch_tokens: int, max_batch: int) -> list[np.ndarray]:
    """Indices of the texts in each batch: longest first, about ``batch_tokens`` padded tokens.

    Parameters
    ----------
    lengths : ndarray of int
        Word pieces of each text.
    batch_tokens : int
        Padded word pieces per batch (a text longer than that gets a batch of its own).
    max_batch : int
        Texts per batch at most.

    Returns
    -------
    list of ndarray of int
        Indices into ``lengths``, every text once.
    """
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
    batches = minilm_batches(lengths, batch_tokens, max_batch)
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


__all__ = [
    "encode_minilm",
    "minilm_threads",
]
