"""Softmax ranking router: listwise training on the DARS soft labels ``softmax(U / tau)``."""

from __future__ import annotations

import numpy as np

from ecc_lib.dars.distributions import DEFAULT_TAU, soft_labels
from ecc_lib.routers.base import router_parameters
from ecc_lib.routers.training import TorchRouter


@router_parameters
class SoftmaxRankingRouter(TorchRouter):
    """Listwise softmax ranking: a scorer ``s(q, m)`` trained with cross-entropy against the soft
    labels ``softmax(U_q / tau)`` (DARS, Lai et al. 2026, section 3, the soft label).

    The scorer is a two-tower network (:class:`~ecc_lib.routers.networks.FactorisationNet` with
    an MLP query tower): a one-hidden-layer query tower ``f(x_q)`` and a learned vector ``v_m``
    and bias ``b_m`` per model, ``s(q, m) = <f(x_q), v_m> + b_m``. The loss is
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
    learning_rate, weight_decay, early_stopping, validation_fraction, patience, n_threads
        As in :class:`~ecc_lib.routers.training.TorchRouter` (the held-out loss is the
        cross-entropy of the held-out queries).
    target : {"utility"}, default "utility"
        The only supported value.
    cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    utility_mean_ : float
        Mean training utility (the level of the predicted utility).
    network_, loss_history_
        The trained :class:`~ecc_lib.routers.networks.FactorisationNet` and its training
        cross-entropy before each step taken.
    """

    hidden: int = 64
    n_factors: int = 16
    tau: float = DEFAULT_TAU
    n_iter: int = 500
    target: str = "utility"

    _learns_utility_only = True

    def _fit(self, x, y, rng):
        from ecc_lib.routers import networks as nw

        torch = nw.torch

        labels = nw.as_tensor(soft_labels(y, tau=float(self.tau)))
        self.utility_mean_ = float(y.mean())
        xt = nw.as_tensor(x)

        def cross_entropy(net: torch.nn.Module, generator, rows: np.ndarray) -> torch.Tensor:
            return -(labels[rows] * torch.log_softmax(net(xt[rows]), dim=1)).sum(dim=1).mean()

        self._train(
            len(x),
            rng,
            lambda generator: nw.FactorisationNet(
                x.shape[1], y.shape[1], int(self.n_factors), generator, hidden=int(self.hidden)
            ),
            cross_entropy,
        )

    def _predict(self, x):
        scores = self._forward(x)
        return self.tau * (scores - scores.mean(axis=1, keepdims=True)) + self.utility_mean_


__all__: list[str] = []
