"""Graph router: message passing on the bipartite query-model graph (GraphRouter-style)."""

from __future__ import annotations

import numpy as np
from sklearn.preprocessing import StandardScaler

from ecc_lib.routers.base import router_parameters
from ecc_lib.routers.training import TorchRouter


@router_parameters
class GraphRouter(TorchRouter):
    """Route by edge prediction on a query-model bipartite graph (after GraphRouter, Feng et al.,
    ICLR 2025).

    Query nodes start from the query embeddings, model nodes are learned vectors, and the edges of
    the training queries carry their observed targets, standardised (``scaler_``, a
    :class:`~sklearn.preprocessing.StandardScaler`). A few rounds of message passing
    (:class:`~ecc_lib.routers.networks.BipartiteGraphNet`) update both sides, and an edge decoder
    predicts the targets of a query's edges. Training masks edges: every step a random
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
    weight_decay : float, default 1e-4
        Decoupled weight decay.
    n_iter, learning_rate, early_stopping, validation_fraction, patience, n_threads
        As in :class:`~ecc_lib.routers.training.TorchRouter`; the held-out queries are
        predicted from the rest of the graph.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    x_train_ : ndarray
        Training embeddings (the observed graph at prediction).
    edges_train_ : ndarray, shape (n_train, n_models, n_edge_targets)
        Standardised training targets on the edges.
    network_, loss_history_
        The trained :class:`~ecc_lib.routers.networks.BipartiteGraphNet` and its masked-edge
        loss before each step taken.
    """

    hidden: int = 32
    n_rounds: int = 2
    mask_fraction: float = 0.5
    weight_decay: float = 1e-4

    _target_scaler = StandardScaler

    def _edges(self, z: np.ndarray) -> np.ndarray:
        """``[g1 models | g2 models | ...]`` columns as (n, n_models, n_groups) edge features."""
        n_groups = z.shape[1] // self.n_models_
        return z.reshape(len(z), n_groups, self.n_models_).transpose(0, 2, 1)

    def _fit(self, x, z, rng):
        from ecc_lib.routers import networks as nw

        torch = nw.torch

        if not 0.0 < float(self.mask_fraction) < 1.0:
            raise ValueError(f"mask_fraction must be in (0, 1), got {self.mask_fraction}")
        if len(x) < 2:
            raise ValueError("GraphRouter needs at least 2 training queries")
        edges = self._edges(z)
        xt, et, zt = nw.as_tensor(x), nw.as_tensor(edges), nw.as_tensor(z)

        def held_out_loss(net, rows: np.ndarray, held_out: np.ndarray) -> torch.Tensor:
            """Predict the edges of the ``held_out`` queries from the graph of ``rows``."""
            prediction = net(xt[rows], et[rows], xt[held_out])
            return torch.nn.functional.mse_loss(prediction, zt[held_out])

        def masked_edge_loss(net, generator, rows: np.ndarray) -> torch.Tensor:
            """Predict the edges of a random ``mask_fraction`` of ``rows`` from the others."""
            n = len(rows)
            n_masked = min(max(1, int(round(float(self.mask_fraction) * n))), n - 1)
            order = torch.as_tensor(rows)[torch.randperm(n, generator=generator)]
            return held_out_loss(net, order[n_masked:], order[:n_masked])

        self._train(
            len(x),
            rng,
            lambda generator: nw.BipartiteGraphNet(
                x.shape[1],
                self.n_models_,
                edges.shape[2],
                int(self.hidden),
                int(self.n_rounds),
                generator,
            ),
            masked_edge_loss,
            held_out_loss,
        )
        self.x_train_ = x
        self.edges_train_ = edges

    def _predict(self, x):
        return self._forward(self.x_train_, self.edges_train_, x)


__all__: list[str] = []
