"""Run folders: the folder and its records, what a run records about its inputs, provenance, the parameter config, notebook execution and the pipeline."""

__all__: list[str] = []
