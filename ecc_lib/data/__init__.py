"""Data: the schema, the table readers and bundled sources, comparisons, repeated observations, the data policy and the checks before numbers.

The names below are imported from their modules on first use.
"""

from ecc_lib._optional import lazy_exports

_EXPORTS = {
    "DataValidationError": "ecc_lib.data.schema",
    "validate_queries": "ecc_lib.data.schema",
    "validate_outcomes": "ecc_lib.data.schema",
    "read_table": "ecc_lib.data.loaders",
    "read_queries": "ecc_lib.data.loaders",
    "read_outcomes": "ecc_lib.data.loaders",
    "load_bundled": "ecc_lib.data.loaders",
    "load_dataset": "ecc_lib.data.loaders",
    "BUNDLED_DATASETS": "ecc_lib.data.loaders",
    "Comparisons": "ecc_lib.data.comparisons",
    "make_comparisons": "ecc_lib.data.comparisons",
    "split_queries": "ecc_lib.data.comparisons",
    "split_probe": "ecc_lib.data.comparisons",
    "RepeatedObservations": "ecc_lib.data.observations",
    "repeated_observations": "ecc_lib.data.observations",
    "DataPolicyReport": "ecc_lib.data.policy",
    "apply_data_policy": "ecc_lib.data.policy",
    "CheckResult": "ecc_lib.data.checks",
    "run_checks": "ecc_lib.data.checks",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "BUNDLED_DATASETS",
    "CheckResult",
    "Comparisons",
    "DataPolicyReport",
    "DataValidationError",
    "RepeatedObservations",
    "apply_data_policy",
    "load_bundled",
    "load_dataset",
    "make_comparisons",
    "read_outcomes",
    "read_queries",
    "read_table",
    "repeated_observations",
    "run_checks",
    "split_probe",
    "split_queries",
    "validate_outcomes",
    "validate_queries",
]
