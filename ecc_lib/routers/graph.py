"""Graph router: message passing on the bipartite query-model graph (GraphRouter-style)."""

from __future__ import annotations

import numpy as np
from sklearn.preprocessing import StandardScaler

from ecc_lib.dars import DEFAULT_BETA, DEFAULT_LAMBDA
from ecc_lib.routers.base import Router, seed_from


class GraphRouter(Router):
    """Route by edge prediction on a query-model bipartite graph (after GraphRouter, Feng et al.,
    ICLR 2025).

    Query nodes start from the query embeddings, model nodes are learned vectors, and the edges of
    the training queries carry their observed (standardised) targets. A few rounds of message
    passing (:class:`~ecc_lib.routers.networks.BipartiteGraphNet`) update both sides, and an edge
    decoder predicts the targets of a query's edges. Training masks edges: every step a random
    ``mask_fraction`` of the training queries lose their edge features and their targets are the
    loss (mean squared error), the other queries form the observed graph. At prediction the whole
    training graph is observed and new queries join it with masked edges.

    Parameters
    ----------
    hidden : int, default 32
        Node state dimension.
    n_rounds : int, default 2
        Message passing rounds.
    mask_fraction : float, default 0.5
        Share of training queries whose edges are masked (predicted) at each step.
    n_iter : int, default 300
        Optimiser steps at most.
    learning_rate : float, default 0.01
    weight_decay : float, default 1e-4
        Decoupled weight decay.
    early_stopping : bool, default True
        Hold out ``validation_fraction`` of the training queries (with at least 20 queries),
        predict them from the rest of the graph after each step and keep the parameters with the
        lowest held-out error, stopping after ``patience`` steps without improvement.
    validation_fraction : float, default 0.1
    patience : int, default 50
    n_threads : int, default 1
        Torch threads during fit and predict.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    scaler_ : StandardScaler
        Target standardisation.
    network_ : ecc_lib.routers.networks.BipartiteGraphNet
    x_train_ : ndarray
        Training embeddings (the observed graph at prediction).
    edges_train_ : ndarray, shape (n_train, n_models, n_edge_targets)
        Standardised training targets on the edges.
    loss_history_ : list of float
        Training loss before each step.
    """

    def __init__(
        self,
        hidden: int = 32,
        n_rounds: int = 2,
        mask_fraction: float = 0.5,
        n_iter: int = 300,
        learning_rate: float = 0.01,
        weight_decay: float = 1e-4,
        early_stopping: bool = True,
        validation_fraction: float = 0.1,
        patience: int = 50,
        n_threads: int = 1,
        target: str = "components",
        cost_weight: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, cost_weight, beta, random_state)
        self.hidden = hidden
        self.n_rounds = n_rounds
        self.mask_fraction = mask_fraction
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.early_stopping = early_stopping
        self.validation_fraction = validation_fraction
        self.patience = patience
        self.n_threads = n_threads

    def _edges(self, z: np.ndarray) -> np.ndarray:
        """``[g1 models | g2 models | ...]`` columns as (n, n_models, n_groups) edge features."""
        n_groups = z.shape[1] // self.n_models_
        return z.reshape(len(z), n_groups, self.n_models_).transpose(0, 2, 1)

    def _fit(self, x, y, rng):
        import torch

        from ecc_lib.routers import networks as nw

        if not 0.0 < float(self.mask_fraction) < 1.0:
            raise ValueError(f"mask_fraction must be in (0, 1), got {self.mask_fraction}")
        if len(x) < 2:
            raise ValueError("GraphRouter needs at least 2 training queries")
        self.scaler_ = StandardScaler().fit(y)
        z = self.scaler_.transform(y)
        edges = self._edges(z)
        split = (
            nw.validation_split(len(x), self.validation_fraction, rng)
            if self.early_stopping
            else None
        )
        fit_rows, val_rows = split if split is not None else (np.arange(len(x)), None)
        with nw.torch_threads(self.n_threads):
            generator = nw.torch_generator(seed_from(rng))
            net = nw.BipartiteGraphNet(
                x.shape[1],
                self.n_models_,
                edges.shape[2],
                int(self.hidden),
                int(self.n_rounds),
                generator,
            )
            xt, et, zt = nw.as_tensor(x), nw.as_tensor(edges), nw.as_tensor(z)
            rows = torch.as_tensor(fit_rows)
            n = len(rows)
            n_masked = min(max(1, int(round(float(self.mask_fraction) * n))), n - 1)

            def masked_edge_loss() -> torch.Tensor:
                order = rows[torch.randperm(n, generator=generator)]
                context, masked = order[n_masked:], order[:n_masked]
                prediction = net(xt[context], et[context], xt[masked])
                return torch.nn.functional.mse_loss(prediction, zt[masked])

            def validation_loss() -> torch.Tensor:
                held_out = torch.as_tensor(val_rows)
                prediction = net(xt[rows], et[rows], xt[held_out])
                return torch.nn.functional.mse_loss(prediction, zt[held_out])

            self.loss_history_ = nw.train_full_batch(
                net,
                masked_edge_loss,
                self.n_iter,
                self.learning_rate,
                self.weight_decay,
                validation_loss=None if val_rows is None else validation_loss,
                patience=self.patience,
            )
        self.network_ = net
        self.x_train_ = x
        self.edges_train_ = edges

    def _predict(self, x):
        from ecc_lib.routers import networks as nw

        with nw.torch_threads(self.n_threads):
            z = nw.predict_numpy(self.network_, self.x_train_, self.edges_train_, x)
        return self.scaler_.inverse_transform(z)
