"""The evaluation protocols: typed settings, the ECC protocol (data, probes, methods, scoring, seeds), the typed results and the experiments.

The names below are imported from their modules on first use.
"""

from ecc_lib._optional import lazy_exports

_EXPORTS = {
    "Protocol": "ecc_lib.protocol.settings",
    "ECCResult": "ecc_lib.protocol.results",
    "run_ecc": "ecc_lib.protocol.results",
    "DARSResult": "ecc_lib.protocol.dars",
    "run_dars": "ecc_lib.protocol.dars",
    "run_protocol": "ecc_lib.protocol.ecc_protocol",
    "prepare_protocol": "ecc_lib.protocol.data",
    "ProtocolData": "ecc_lib.protocol.data",
    "CapabilityMap": "ecc_lib.protocol.capability_map",
    "show_group": "ecc_lib.protocol.capability_map",
    "PROBE_STRATEGIES": "ecc_lib.protocol.probes",
    "select_probes": "ecc_lib.protocol.probes",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "CapabilityMap",
    "DARSResult",
    "ECCResult",
    "PROBE_STRATEGIES",
    "Protocol",
    "ProtocolData",
    "prepare_protocol",
    "run_dars",
    "run_ecc",
    "run_protocol",
    "select_probes",
    "show_group",
]
