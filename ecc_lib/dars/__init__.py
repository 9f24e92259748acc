"""DARS: capability distributions over repeated observations and the label-instability diagnostics.

The names below are imported from their modules on first use.
"""

from ecc_lib._optional import lazy_exports

_EXPORTS = {
    "CapabilityDistributions": "ecc_lib.dars.distributions",
    "capability_distributions": "ecc_lib.dars.distributions",
    "label_shares": "ecc_lib.dars.distributions",
    "label_instability": "ecc_lib.dars.label_instability",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "CapabilityDistributions",
    "capability_distributions",
    "label_instability",
    "label_shares",
]
