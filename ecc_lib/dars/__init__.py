"""DARS: capability distributions over repeated observations and the label-instability diagnostics.

The names below are imported from their modules on first use.
"""

from ecc_lib._optional import lazy_exports

_EXPORTS = {
    "label_instability": "ecc_lib.dars.label_instability",
}

__getattr__ = lazy_exports(__name__, _EXPORTS)

__all__ = [
    "label_instability",
]
