"""ECC estimators: ECC and its EM engine over a data backend, the paper's baselines, label-informed ECC, ECC-CV and soft evidence.

The names below are imported from their modules on first use.
"""

from ecc_lib._optional import lazy_exports

_EXPORTS = {
    "ECC": "ecc_lib.ecc.estimator",
    "register_data_backend": "ecc_lib.ecc.estimator",
    "GlobalBT": "ecc_lib.ecc.baselines",
    "EmbeddingClusters": "ecc_lib.ecc.baselines",
    "ComparisonOnlyECC": "ecc_lib.ecc.baselines",
    "HumanLabelClusters": "ecc_lib.ecc.baselines",
    "LabelInformedECC": "ecc_lib.ecc.label_informed",
    "ECCCV": "ecc_lib.ecc.cv",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "ComparisonOnlyECC",
    "ECC",
    "ECCCV",
    "EmbeddingClusters",
    "GlobalBT",
    "HumanLabelClusters",
    "LabelInformedECC",
    "register_data_backend",
]
