"""ECC estimators: ECC and its EM engine, the paper's baselines, label-informed ECC, ECC-CV and soft evidence."""
