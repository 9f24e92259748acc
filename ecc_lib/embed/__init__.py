"""Query embeddings: sentence-transformers (PyTorch or ONNX Runtime), the static embedder and the on-disk cache.

The names below are imported from their modules on first use.
"""

from ecc_lib._optional import lazy_exports

_EXPORTS = {
    "embed_texts": "ecc_lib.embed.encode",
    "embedding_check": "ecc_lib.embed.encode",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "embed_texts",
    "embedding_check",
]
