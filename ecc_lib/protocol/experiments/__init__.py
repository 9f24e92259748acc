"""Experiments on top of the ECC protocol: sweeps and diagnostics, the new-model experiment, the synthetic tour."""
