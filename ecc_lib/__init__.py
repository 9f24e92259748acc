"""ecc_lib: capability-aware LLM evaluation and routing (ECC clustering, DARS supervision)."""

from ecc_lib.comparisons import Comparisons, make_comparisons, split_probe, split_queries
from ecc_lib.schema import DataValidationError, validate_outcomes, validate_queries

__version__ = "0.1.0"

__all__ = [
    "Comparisons",
    "DataValidationError",
    "__version__",
    "make_comparisons",
    "split_probe",
    "split_queries",
    "validate_outcomes",
    "validate_queries",
]
