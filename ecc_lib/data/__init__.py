"""Data: the schema, the table readers and bundled sources, comparisons, repeated observations, the data policy and the checks before numbers."""

__all__: list[str] = []
