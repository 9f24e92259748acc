"""The torch router families' common base: their training settings and their one training path.

:class:`TorchRouter` declares the optimiser, early-stopping and thread settings once, and
:meth:`TorchRouter._train` is the only place where a torch family is trained: draw the
early-stopping split, seed a local :class:`torch.Generator`, build the network, and minimise the
family's loss with :func:`ecc_lib.routers.networks.train_full_batch` under a bounded number of
torch threads. A family supplies only its network and its loss. Torch is imported on first fit.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from ecc_lib.routers.base import Router, router_parameters, seed_from

if TYPE_CHECKING:
    import torch

Loss = Callable[["torch.nn.Module", "torch.Generator", np.ndarray], "torch.Tensor"]
"""``loss(net, generator, rows)``: the scalar training loss of ``net`` on the training ``rows``."""
ValidationLoss = Callable[["torch.nn.Module", np.ndarray, np.ndarray], "torch.Tensor"]
"""``validation_loss(net, rows, held_out)``: the loss on the ``held_out`` rows."""


@router_parameters
class TorchRouter(Router):
    """Base of the routers with a torch network (factorisation, MIRT, softmax ranking, graph).

    Training is full-batch :class:`torch.optim.AdamW`
    (:func:`~ecc_lib.routers.networks.train_full_batch`) from weights drawn by a generator seeded
    from ``random_state``; with ``early_stopping`` a random ``validation_fraction`` of the
    training queries (with at least 20 queries) is held out and the parameters of the step with
    the lowest held-out loss are kept. Each family sets its own defaults.

    Parameters
    ----------
    n_iter : int, default 300
        Optimiser steps at most.
    learning_rate : float, default 0.01
        AdamW step size.
    weight_decay : float, default 1e-3
        Decoupled weight decay.
    early_stopping : bool, default True
        Hold out ``validation_fraction`` of the training queries, keep the parameters with the
        lowest held-out loss and stop after ``patience`` steps without improvement.
    validation_fraction : float, default 0.1
        Share of the training queries held out for early stopping.
    patience : int, default 50
        Steps without improvement of the held-out loss before stopping.
    n_threads : int, default 1
        Torch threads during fit and predict.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    network_ : torch.nn.Module
        The trained network (in eval mode).
    loss_history_ : list of float
        Training loss before each step taken.
    """

    n_iter: int = 300
    learning_rate: float = 0.01
    weight_decay: float = 1e-3
    early_stopping: bool = True
    validation_fraction: float = 0.1
    patience: int = 50
    n_threads: int = 1

    def _train(
        self,
        n_rows: int,
        rng: np.random.Generator,
        build: Callable[[torch.Generator], torch.nn.Module],
        loss: Loss,
        validation_loss: ValidationLoss | None = None,
    ) -> None:
        """Build and train the network; sets ``network_`` and ``loss_history_``.

        ``rng`` first draws the early-stopping split (when there is one), then the seed of the
        torch generator that ``build`` and ``loss`` draw from. Without ``validation_loss`` the
        held-out loss is ``loss`` on the held-out rows.
        """
        from ecc_lib.routers import networks as nw

        split = (
            nw.validation_split(n_rows, self.validation_fraction, rng)
            if self.early_stopping
            else None
        )
        rows, held_out = split if split is not None else (np.arange(n_rows), None)
        with nw.torch_threads(self.n_threads):
            generator = nw.torch_generator(seed_from(rng))
            net = build(generator)

            def held_out_loss() -> torch.Tensor:
                if validation_loss is None:
                    return loss(net, generator, held_out)
                return validation_loss(net, rows, held_out)

            self.loss_history_ = nw.train_full_batch(
                net,
                lambda: loss(net, generator, rows),
                n_iter=self.n_iter,
                learning_rate=self.learning_rate,
                weight_decay=self.weight_decay,
                validation_loss=None if held_out is None else held_out_loss,
                patience=self.patience,
            )
        self.network_ = net

    def _forward(self, *inputs: np.ndarray) -> np.ndarray:
        """The trained network on ``inputs`` (no gradients, ``n_threads`` threads), as floats."""
        from ecc_lib.routers import networks as nw

        with nw.torch_threads(self.n_threads):
            return nw.predict_numpy(self.network_, *inputs)


__all__: list[str] = []
