"""The evaluation protocols: typed settings, the ECC protocol (data, probes, methods, scoring, seeds), the typed results and the experiments."""

__all__: list[str] = []
