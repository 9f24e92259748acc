"""Experiments on top of the ECC protocol: sweeps and diagnostics, probe strategies, the new-model experiment, soft against sampled evidence and the synthetic tour."""

__all__: list[str] = []
