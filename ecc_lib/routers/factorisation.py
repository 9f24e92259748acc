"""Factorisation routers: EmbedLLM-style matrix factorisation and multidimensional IRT.

Both fit one core, :class:`~ecc_lib.routers.networks.FactorisationNet` trained by
:class:`~ecc_lib.routers.training.TorchRouter` (torch autograd, AdamW, a generator seeded from
``random_state``); they differ in the target scaling, the loss and the MIRT difficulty term.
"""

from __future__ import annotations

from functools import partial

import numpy as np
from scipy.special import expit
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from ecc_lib.routers.base import router_parameters
from ecc_lib.routers.training import TorchRouter


@router_parameters
class FactorisationRouter(TorchRouter):
    """Base of the two factorisation routers: one
    :class:`~ecc_lib.routers.networks.FactorisationNet` fit.

    Parameters
    ----------
    learning_rate : float, default 0.03
    early_stopping : bool, default False
        Off by default: the factorisation fits every training query for ``n_iter`` steps.
    n_iter, weight_decay, validation_fraction, patience, n_threads
        As in :class:`~ecc_lib.routers.training.TorchRouter`.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.
    """

    learning_rate: float = 0.03
    early_stopping: bool = False

    def _fit_factorisation(
        self,
        x: np.ndarray,
        z: np.ndarray,
        rng: np.random.Generator,
        n_factors: int,
        loss: str,
        groups: np.ndarray | None = None,
        bias: np.ndarray | None = None,
    ) -> None:
        """Fit ``network_`` to the scaled targets ``z`` by the named loss (see
        :data:`~ecc_lib.routers.networks.FACTORISATION_LOSSES`)."""
        from ecc_lib.routers import networks as nw

        if int(n_factors) < 1:
            raise ValueError(f"n_factors must be >= 1, got {n_factors}")
        xt, zt = nw.as_tensor(x), nw.as_tensor(z)
        criterion = nw.FACTORISATION_LOSSES[loss]
        self._train(
            len(x),
            rng,
            lambda generator: nw.FactorisationNet(
                x.shape[1], z.shape[1], int(n_factors), generator, groups=groups, bias=bias
            ),
            lambda net, generator, rows: criterion(net(xt[rows]), zt[rows]),
        )


@router_parameters
class MatrixFactorizationRouter(FactorisationRouter):
    """EmbedLLM-style matrix factorisation: ``y_qt = <W^T x_q, v_t> + b_t``.

    A linear encoder ``W`` maps a query embedding to ``n_factors`` dimensions; each (model, target)
    column ``t`` has a learned embedding ``v_t`` and bias ``b_t`` (EmbedLLM, Zhuang et al. 2025).
    Fit by full-batch AdamW on the mean squared error of standardised targets (``scaler_``, a
    :class:`~sklearn.preprocessing.StandardScaler`). The training settings and utility weights
    are the parameters of :class:`FactorisationRouter`.

    Parameters
    ----------
    n_factors : int, default 16
        Width of the query encoding ``W^T x_q`` and of each column embedding ``v_t``.

    Attributes
    ----------
    network_ : ecc_lib.routers.networks.FactorisationNet
        The trained factorisation.
    loss_history_ : list of float
        As in :class:`~ecc_lib.routers.training.TorchRouter`.
    """

    n_factors: int = 16

    _target_scaler = StandardScaler

    def _fit(self, x, y, rng):
        self._fit_factorisation(x, y, rng, self.n_factors, "squared")

    def _predict(self, x):
        return self._forward(x)


@router_parameters
class MIRTRouter(FactorisationRouter):
    """Multidimensional IRT router: ``P = sigmoid(<A^T x_q, theta_t> + w_g^T x_q + b_t)``.

    ``A^T x_q`` is the query's discrimination vector in an ``n_dims``-dimensional latent space,
    ``theta_t`` the latent ability of column ``t`` (a model for one target), ``-w_g^T x_q`` the
    query's difficulty for target group ``g`` (``mu_q``, ``mu_c`` or ``sigma_q``) and ``b_t`` the
    model's overall level. Targets are min-max scaled to [0, 1] (``scaler_``, a
    :class:`~sklearn.preprocessing.MinMaxScaler`) and fit by Bernoulli cross-entropy (fractional
    targets) with full-batch AdamW; the other parameters are those of
    :class:`FactorisationRouter`.

    Parameters
    ----------
    n_dims : int, default 16
        Dimensions of the ability and discrimination space.

    Attributes
    ----------
    group_ : ndarray of int
        Target group of each column.
    network_, loss_history_
        The trained :class:`~ecc_lib.routers.networks.FactorisationNet` and its losses.
    """

    n_dims: int = 16

    _target_scaler = partial(MinMaxScaler, clip=True)

    def _fit(self, x, z, rng):
        self.group_ = np.repeat(np.arange(z.shape[1] // self.n_models_), self.n_models_)
        mean = np.clip(z.mean(axis=0), 1e-3, 1 - 1e-3)
        bias = np.log(mean / (1 - mean))
        self._fit_factorisation(x, z, rng, self.n_dims, "bernoulli", self.group_, bias)

    def _predict(self, x):
        return expit(self._forward(x))


__all__: list[str] = []
