"""ECC estimators: ECC and its EM engine over a data backend, the paper's baselines, label-informed ECC, ECC-CV and soft evidence."""

__all__: list[str] = []
