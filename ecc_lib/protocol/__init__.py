"""The evaluation protocols: typed settings, the ECC protocol (data, probes, methods, scoring, seeds), the DARS result and experiments."""
