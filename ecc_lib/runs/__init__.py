"""Run folders: the folder and its records, what a run records about its inputs, provenance, the parameter config, notebook execution and the pipeline.

The names below are imported from their modules on first use.
"""

from ecc_lib._optional import lazy_exports

_EXPORTS = {
    "RunContext": "ecc_lib.runs.folder",
    "run_context": "ecc_lib.runs.folder",
    "run_pipeline": "ecc_lib.runs.pipeline",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "RunContext",
    "run_context",
    "run_pipeline",
]
