"""Experiments on top of the ECC protocol: sweeps and diagnostics, probe strategies, the new-model experiment, soft against sampled evidence and the synthetic tour.

The names below are imported from their modules on first use.
"""

from ecc_lib._optional import lazy_exports

_EXPORTS = {
    "sweep_probes": "ecc_lib.protocol.experiments.sweeps",
    "sweep_clusters": "ecc_lib.protocol.experiments.sweeps",
    "probe_strategy_comparison": "ecc_lib.protocol.experiments.probe_strategies",
    "new_model_experiment": "ecc_lib.protocol.experiments.new_model",
    "soft_evidence_comparison": "ecc_lib.protocol.experiments.soft_evidence",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "new_model_experiment",
    "probe_strategy_comparison",
    "sweep_clusters",
    "sweep_probes",
]
