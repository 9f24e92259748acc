"""Torch networks of the learned routers and their one training loop.

Imported on first use by the routers that need torch (importing torch takes seconds). Every fit
(:class:`ecc_lib.routers.training.TorchRouter`) seeds its own :class:`torch.Generator` (initial
weights, random masks), never torch's global generator, and runs with a bounded number of torch
threads that is restored afterwards.

- :class:`FactorisationNet`: the query-column scorer shared by the EmbedLLM-style matrix
  factorisation router and the MIRT router (with :data:`FACTORISATION_LOSSES`) and, with an MLP
  query tower, the softmax ranking router;
- :class:`BipartiteGraphNet`: message passing on the query-model graph (GraphRouter-style).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

import numpy as np

from ecc_lib._optional import require

torch = require("torch", extra="routers", purpose="a learned router")
nn = torch.nn


@contextmanager
def torch_threads(n_threads: int) -> Iterator[None]:
    """Run the body with ``n_threads`` intra-op torch threads, then restore the old number.

    Parameters
    ----------
    n_threads : int
        Threads for torch inside the ``with`` block (at least 1).

    Yields
    ------
    None
    """
    old = torch.get_num_threads()
    torch.set_num_threads(max(1, int(n_threads)))
    try:
        yield
    finally:
        torch.set_num_threads(old)


def torch_generator(seed: int) -> torch.Generator:
    """A CPU generator seeded with ``seed`` (local to one fit).

    Parameters
    ----------
    seed : int
        The seed.

    Returns
    -------
    torch.Generator
    """
    return torch.Generator().manual_seed(int(seed))


def as_tensor(a: np.ndarray) -> torch.Tensor:
    """A float32 CPU tensor of ``a``.

    Parameters
    ----------
    a : array-like
        Values.

    Returns
    -------
    torch.Tensor
    """
    return torch.as_tensor(np.asarray(a, dtype=np.float32))


def train_full_batch(
    module: nn.Module,
    loss: Callable[[], torch.Tensor],
    *,
    n_iter: int,
    learning_rate: float,
    weight_decay: float,
    validation_loss: Callable[[], torch.Tensor] | None = None,
    patience: int = 20,
) -> list[float]:
    """Minimise ``loss()`` over ``module``'s parameters with :class:`torch.optim.AdamW`.

    Parameters
    ----------
    module : torch.nn.Module
        The network (trained in place).
    loss : callable
        Returns the scalar training loss (full batch) of the current parameters.
    n_iter : int
        Optimiser steps at most.
    learning_rate : float
        Adam step size.
    weight_decay : float
        Decoupled weight decay (AdamW).
    validation_loss : callable, optional
        Returns the loss on held-out data. When given, training stops once it has not improved
        for ``patience`` steps and the parameters of its best step are restored (early stopping).
    patience : int, default 20
        Steps without improvement of the validation loss before stopping.

    Returns
    -------
    list of float
        The training loss before each step taken.
    """
    if int(n_iter) < 1:
        raise ValueError(f"n_iter must be >= 1, got {n_iter}")
    optimiser = torch.optim.AdamW(
        module.parameters(), lr=float(learning_rate), weight_decay=float(weight_decay)
    )
    history: list[float] = []
    best, best_state, since_best = np.inf, None, 0
    for _ in range(int(n_iter)):
        module.train()
        optimiser.zero_grad()
        value = loss()
        value.backward()
        optimiser.step()
        history.append(float(value.detach()))
        if validation_loss is None:
            continue
        module.eval()
        with torch.no_grad():
            held_out = float(validation_loss())
        if held_out < best:
            best, since_best = held_out, 0
            best_state = {k: v.detach().clone() for k, v in module.state_dict().items()}
        else:
            since_best += 1
            if since_best >= int(patience):
                break
    if best_state is not None:
        module.load_state_dict(best_state)
    module.eval()
    return history


def validation_split(
    n: int, fraction: float, rng: np.random.Generator, *, min_size: int = 20
) -> tuple[np.ndarray, np.ndarray] | None:
    """Random train/validation row indices for early stopping.

    Parameters
    ----------
    n : int
        Rows.
    fraction : float
        Share of rows held out, in (0, 1).
    rng : numpy.random.Generator
        Source of the permutation.
    min_size : int, default 20
        Below this many rows there is no split.

    Returns
    -------
    (train, validation) : tuple of ndarray of int, or None
        None when ``n < min_size``.
    """
    if not 0.0 < float(fraction) < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1), got {fraction}")
    if n < min_size:
        return None
    order = rng.permutation(n)
    n_val = min(max(1, int(round(fraction * n))), n - 2)
    return np.sort(order[n_val:]), np.sort(order[:n_val])


def predict_numpy(module: nn.Module, *inputs: np.ndarray) -> np.ndarray:
    """``module(*inputs)`` without gradients, as a float64 array.

    Parameters
    ----------
    module : torch.nn.Module
        A trained network.
    *inputs : ndarray
        Its inputs.

    Returns
    -------
    ndarray
    """
    with torch.no_grad():
        return module(*(as_tensor(a) for a in inputs)).numpy().astype(float)


class FactorisationNet(nn.Module):
    """``out_qt = <f(x_q), v_t> + b_t (+ (x_q^T w)_{g(t)})``: scores of every query and column.

    A query tower ``f`` encodes a query in ``n_factors`` dimensions: linear, ``f(x) = W^T x``
    (the EmbedLLM-style factorisation and MIRT), or with ``hidden`` units a one-hidden-layer MLP
    (the softmax ranking router's two-tower scorer). Each target column ``t`` (a model for one
    target) has a learned vector ``v_t`` and bias ``b_t``. With ``groups``, each column group
    ``g`` (one of ``mu_q``, ``mu_c``, ``sigma_q``) adds a linear query term ``w_g^T x_q`` (the
    MIRT difficulty).

    Parameters
    ----------
    n_features : int
        Embedding dimension.
    n_columns : int
        Target columns.
    n_factors : int
        Latent dimension.
    generator : torch.Generator
        Source of the initial weights (the query tower's first, then the column vectors).
    groups : ndarray of int, shape (n_columns,), optional
        Group of each column; no group term when None.
    bias : ndarray, shape (n_columns,), optional
        Initial biases (default zeros).
    hidden : int, optional
        Hidden units of an MLP query tower; a linear tower when None.
    """

    def __init__(
        self,
        n_features: int,
        n_columns: int,
        n_factors: int,
        generator: torch.Generator,
        groups: np.ndarray | None = None,
        *,
        bias: np.ndarray | None = None,
        hidden: int | None = None,
    ) -> None:
        super().__init__()
        if hidden is None:
            scale = 1.0 / np.sqrt(n_features)
            self.encoder = nn.Parameter(
                scale * torch.randn(n_features, n_factors, generator=generator)
            )
        else:
            self.encoder = nn.Sequential(
                _linear(n_features, hidden, generator),
                nn.ReLU(),
                _linear(hidden, n_factors, generator),
            )
        self.columns = nn.Parameter(0.1 * torch.randn(n_columns, n_factors, generator=generator))
        self.bias = nn.Parameter(
            torch.zeros(n_columns) if bias is None else as_tensor(bias).reshape(n_columns)
        )
        self.offset = None
        if groups is not None:
            groups = np.asarray(groups, dtype=np.int64)
            n_groups = int(groups.max()) + 1
            self.offset = nn.Parameter(torch.zeros(n_features, n_groups))
            self.register_buffer("onehot", torch.eye(n_groups)[torch.as_tensor(groups)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """Scores (or logits) of every query and column.

        Parameters
        ----------
        x : torch.Tensor, shape (n, n_features)
            Query embeddings.

        Returns
        -------
        torch.Tensor, shape (n, n_columns)
        """
        h = x @ self.encoder if isinstance(self.encoder, nn.Parameter) else self.encoder(x)
        out = h @ self.columns.T + self.bias
        if self.offset is not None:
            out = out + (x @ self.offset) @ self.onehot.T
        return out


def _linear(n_in: int, n_out: int, generator: torch.Generator) -> nn.Linear:
    """A linear layer initialised from ``generator`` (uniform, as torch's default bound)."""
    layer = torch.nn.utils.skip_init(nn.Linear, n_in, n_out)  # no draw from the global RNG
    bound = 1.0 / np.sqrt(n_in)
    with torch.no_grad():
        layer.weight.uniform_(-bound, bound, generator=generator)
        layer.bias.uniform_(-bound, bound, generator=generator)
    return layer


class BipartiteGraphNet(nn.Module):
    """Message passing on the bipartite query-model graph (after GraphRouter, Feng et al. 2025).

    Nodes: one per query (initial state from its embedding) and one per model (a learned
    vector). Edges: every (query, model) pair; the edge of a *context* query carries its observed
    targets ``y_qm`` (and a flag 1), the edge of a *target* query (to be predicted) carries zeros
    and flag 0. Each round

    - model m: ``h_m += relu(U_m [h_m, mean_{context q} relu(A h_q + B e_qm)])``;
    - query q: ``h_q += relu(U_q [h_q, mean_m relu(C h_m + D e_qm)])``;

    and an edge decoder ``MLP([h_q, h_m, h_q * h_m])`` predicts the targets of each target query.
    Everything is dense over (queries x models) tensors: no loop over edges.

    Parameters
    ----------
    n_features : int
        Embedding dimension.
    n_models : int
        Number of models.
    n_edge_targets : int
        Targets per (query, model) edge (3 components or 1 utility).
    hidden : int
        Node state dimension.
    n_rounds : int
        Message passing rounds.
    generator : torch.Generator
        Source of the initial weights.
    """

    def __init__(
        self,
        n_features: int,
        n_models: int,
        n_edge_targets: int,
        hidden: int,
        n_rounds: int,
        generator: torch.Generator,
    ) -> None:
        super().__init__()
        self.n_edge_targets = n_edge_targets
        edge_dim = n_edge_targets + 1
        self.query_in = _linear(n_features, hidden, generator)
        self.model_state = nn.Parameter(0.1 * torch.randn(n_models, hidden, generator=generator))

        def per_round(n_in: int) -> nn.ModuleList:
            """One ``n_in -> hidden`` layer per round."""
            return nn.ModuleList(_linear(n_in, hidden, generator) for _ in range(n_rounds))

        self.to_model_node = per_round(hidden)
        self.to_model_edge = per_round(edge_dim)
        self.model_update = per_round(2 * hidden)
        self.to_query_node = per_round(hidden)
        self.to_query_edge = per_round(edge_dim)
        self.query_update = per_round(2 * hidden)
        self.decode_hidden = _linear(3 * hidden, hidden, generator)
        self.decode_out = _linear(hidden, n_edge_targets, generator)

    def forward(
        self, x_context: torch.Tensor, y_context: torch.Tensor, x_target: torch.Tensor
    ) -> torch.Tensor:
        """Predicted edge targets of the target queries given the context graph.

        Parameters
        ----------
        x_context : torch.Tensor, shape (n_context, n_features)
            Embeddings of the queries whose edges are observed.
        y_context : torch.Tensor, shape (n_context, n_models, n_edge_targets)
            Their observed (scaled) targets.
        x_target : torch.Tensor, shape (n_target, n_features)
            Embeddings of the queries to predict.

        Returns
        -------
        torch.Tensor, shape (n_target, n_models * n_edge_targets)
            Grouped by target: all models of the first target, then the second, ...
        """
        n_ctx, n_tgt = len(x_context), len(x_target)
        m = self.model_state.shape[0]
        x = torch.cat([x_context, x_target])
        observed = torch.cat([torch.ones(n_ctx, m, 1), torch.zeros(n_tgt, m, 1)])
        values = torch.cat([y_context, torch.zeros(n_tgt, m, self.n_edge_targets)])
        edges = torch.cat([values, observed], dim=2)  # (n, m, edge_dim)
        hq = torch.relu(self.query_in(x))
        hm = self.model_state
        for r in range(len(self.model_update)):
            to_model = torch.relu(
                self.to_model_node[r](hq[:n_ctx])[:, None, :] + self.to_model_edge[r](edges[:n_ctx])
            )
            hm = hm + torch.relu(self.model_update[r](torch.cat([hm, to_model.mean(dim=0)], dim=1)))
            to_query = torch.relu(
                self.to_query_node[r](hm)[None, :, :] + self.to_query_edge[r](edges)
            )
            hq = hq + torch.relu(self.query_update[r](torch.cat([hq, to_query.mean(dim=1)], dim=1)))
        ht = hq[n_ctx:, None, :].expand(n_tgt, m, hm.shape[1])
        hmt = hm[None, :, :].expand(n_tgt, m, hm.shape[1])
        pair = torch.cat([ht, hmt, ht * hmt], dim=2)
        out = self.decode_out(torch.relu(self.decode_hidden(pair)))  # (n_tgt, m, n_edge_targets)
        return out.permute(0, 2, 1).reshape(n_tgt, -1)


FACTORISATION_LOSSES: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "squared": nn.functional.mse_loss,
    "bernoulli": nn.functional.binary_cross_entropy_with_logits,
}
"""Losses of a :class:`FactorisationNet` fit: mean squared error of the scores, or mean Bernoulli
cross-entropy of the logits against fractional targets in [0, 1] (IRT)."""


__all__: list[str] = []
