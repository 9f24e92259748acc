"""Softmax ranking router: listwise training on the DARS soft labels ``softmax(U / tau)``."""

from __future__ import annotations

import numpy as np

from ecc_lib.dars import DEFAULT_BETA, DEFAULT_LAMBDA, DEFAULT_TAU, soft_labels
from ecc_lib.routers.base import Router, seed_from


class SoftmaxRankingRouter(Router):
    """Listwise softmax ranking: a scorer ``s(q, m)`` trained with cross-entropy against the soft
    labels ``softmax(U_q / tau)`` (DARS, Lai et al. 2026, section 3, the soft label).

    The scorer is a two-tower network (:class:`~ecc_lib.routers.networks.RankingNet`): a
    one-hidden-layer query tower ``f(x_q)`` and a learned vector ``v_m`` and bias ``b_m`` per model,
    ``s(q, m) = <f(x_q), v_m> + b_m``. The loss is
    ``-mean_q sum_m softmax(U_q / tau)_m log softmax(s_q)_m``, minimised by full-batch AdamW. The
    utility ``U`` comes from the targets at the router's ``cost_weight`` and ``beta``: DARS
    distributions give the distribution-aware label, single-shot distributions the label of one
    draw (``sigma_q = 0``), through the same code path.

    Since ``tau * log softmax(U / tau)`` equals ``U`` up to a per-query constant, the predicted
    utility is ``tau * (s_qm - mean_m s_qm) + mean(U_train)``: right up to a per-query shift,
    which the route (``argmax_m``) ignores. The router learns the utility at the fit's weights
    (``target`` must be ``"utility"``).

    Parameters
    ----------
    hidden : int, default 64
        Hidden units of the query tower.
    n_factors : int, default 16
        Dimension of the query and model vectors.
    tau : float, default 0.1
        Temperature of the soft labels (DARS default).
    n_iter : int, default 500
        Optimiser steps at most.
    learning_rate : float, default 0.01
    weight_decay : float, default 1e-3
        Decoupled weight decay.
    early_stopping : bool, default True
        Hold out ``validation_fraction`` of the training queries (with at least 20 queries) and
        keep the parameters of the step with the lowest held-out cross-entropy, stopping after
        ``patience`` steps without improvement.
    validation_fraction : float, default 0.1
    patience : int, default 50
    n_threads : int, default 1
        Torch threads during the fit.
    target : {"utility"}, default "utility"
        The only supported value.
    cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    network_ : ecc_lib.routers.networks.RankingNet
    utility_mean_ : float
        Mean training utility (the level of the predicted utility).
    loss_history_ : list of float
        Training cross-entropy before each step taken.
    """

    def __init__(
        self,
        hidden: int = 64,
        n_factors: int = 16,
        tau: float = DEFAULT_TAU,
        n_iter: int = 500,
        learning_rate: float = 0.01,
        weight_decay: float = 1e-3,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 50,
        n_threads: int = 1,
        target: str = "utility",
        cost_weight: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, cost_weight, beta, random_state)
        self.hidden = hidden
        self.n_factors = n_factors
        self.tau = tau
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.n_threads = n_threads

    def _fit(self, x, y, rng):
        import torch

        from ecc_lib.routers import networks as nw

        if self.fitted_target_ != "utility":
            raise ValueError(
                "SoftmaxRankingRouter learns from the utility; construct it with target='utility'"
            )
        labels = soft_labels(y, tau=float(self.tau))
        self.utility_mean_ = float(y.mean())
        split = (
            nw.validation_split(len(x), self.validation_fraction, rng)
            if self.early_stopping
            else None
        )
        fit_rows, val_rows = split if split is not None else (np.arange(len(x)), None)
        with nw.torch_threads(self.n_threads):
            generator = nw.torch_generator(seed_from(rng))
            net = nw.RankingNet(
                x.shape[1], y.shape[1], int(self.hidden), int(self.n_factors), generator
            )
            xt, pt = nw.as_tensor(x), nw.as_tensor(labels)

            def cross_entropy(rows: np.ndarray) -> torch.Tensor:
                return -(pt[rows] * torch.log_softmax(net(xt[rows]), dim=1)).sum(dim=1).mean()

            self.loss_history_ = nw.train_full_batch(
                net,
                lambda: cross_entropy(fit_rows),
                self.n_iter,
                self.learning_rate,
                self.weight_decay,
                validation_loss=None if val_rows is None else (lambda: cross_entropy(val_rows)),
                patience=self.patience,
            )
        self.network_ = net

    def _predict(self, x):
        from ecc_lib.routers.networks import predict_numpy

        scores = predict_numpy(self.network_, x)
        return self.tau * (scores - scores.mean(axis=1, keepdims=True)) + self.utility_mean_
