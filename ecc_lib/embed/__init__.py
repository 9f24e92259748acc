"""Query embeddings: sentence-transformers (PyTorch or ONNX Runtime), the static embedder and the on-disk cache."""

__all__: list[str] = []
