"""Factorisation routers: EmbedLLM-style matrix factorisation and multidimensional IRT.

Both fit one core, :func:`ecc_lib.routers.networks.fit_factorisation` (torch autograd, AdamW,
a generator seeded from ``random_state``); they differ in the target scaling, the loss and the
MIRT difficulty term.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit
from sklearn.preprocessing import MinMaxScaler, StandardScaler

from ecc_lib.dars import DEFAULT_BETA, DEFAULT_LAMBDA
from ecc_lib.routers.base import Router, seed_from


class MatrixFactorizationRouter(Router):
    """EmbedLLM-style matrix factorisation: ``y_qt = <W^T x_q, v_t> + b_t``.

    A linear encoder ``W`` maps a query embedding to ``n_factors`` dimensions; each (model, target)
    column ``t`` has a learned embedding ``v_t`` and bias ``b_t`` (EmbedLLM, Zhuang et al. 2025).
    Fit by full-batch AdamW on the mean squared error of standardised targets.

    Parameters
    ----------
    n_factors : int, default 16
        Latent dimension.
    n_iter : int, default 300
        Optimiser steps.
    learning_rate : float, default 0.03
    weight_decay : float, default 1e-3
        Decoupled weight decay.
    n_threads : int, default 1
        Torch threads during the fit.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    scaler_ : StandardScaler
        Target standardisation.
    network_ : ecc_lib.routers.networks.FactorisationNet
    loss_history_ : list of float
        Training loss before each step.
    """

    def __init__(
        self,
        n_factors: int = 16,
        n_iter: int = 300,
        learning_rate: float = 0.03,
        weight_decay: float = 1e-3,
        n_threads: int = 1,
        target: str = "components",
        cost_weight: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, cost_weight, beta, random_state)
        self.n_factors = n_factors
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.n_threads = n_threads

    def _fit(self, x, y, rng):
        from ecc_lib.routers.networks import fit_factorisation

        self.scaler_ = StandardScaler().fit(y)
        self.network_, self.loss_history_ = fit_factorisation(
            x,
            self.scaler_.transform(y),
            self.n_factors,
            loss="squared",
            n_iter=self.n_iter,
            learning_rate=self.learning_rate,
            weight_decay=self.weight_decay,
            seed=seed_from(rng),
            n_threads=self.n_threads,
        )

    def _predict(self, x):
        from ecc_lib.routers.networks import predict_numpy

        return self.scaler_.inverse_transform(predict_numpy(self.network_, x))


class MIRTRouter(Router):
    """Multidimensional IRT router: ``P = sigmoid(<A^T x_q, theta_t> + w_g^T x_q + b_t)``.

    ``A^T x_q`` is the query's discrimination vector in an ``n_dims``-dimensional latent space,
    ``theta_t`` the latent ability of column ``t`` (a model for one target), ``-w_g^T x_q`` the
    query's difficulty for target group ``g`` (``mu_q``, ``mu_c`` or ``sigma_q``) and ``b_t`` the
    model's overall level. Targets are min-max scaled to [0, 1] and fit by Bernoulli cross-entropy
    (fractional targets) with full-batch AdamW.

    Parameters
    ----------
    n_dims : int, default 16
        Latent dimension.
    n_iter : int, default 300
        Optimiser steps.
    learning_rate : float, default 0.03
    weight_decay : float, default 1e-3
        Decoupled weight decay.
    n_threads : int, default 1
        Torch threads during the fit.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    scaler_ : MinMaxScaler
        Target scaling to [0, 1].
    network_ : ecc_lib.routers.networks.FactorisationNet
    group_ : ndarray of int
        Target group of each column.
    loss_history_ : list of float
        Training loss before each step.
    """

    def __init__(
        self,
        n_dims: int = 16,
        n_iter: int = 300,
        learning_rate: float = 0.03,
        weight_decay: float = 1e-3,
        n_threads: int = 1,
        target: str = "components",
        cost_weight: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, cost_weight, beta, random_state)
        self.n_dims = n_dims
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay
        self.n_threads = n_threads

    def _fit(self, x, y, rng):
        from ecc_lib.routers.networks import fit_factorisation

        self.scaler_ = MinMaxScaler(clip=True).fit(y)
        z = self.scaler_.transform(y)
        self.group_ = np.repeat(np.arange(y.shape[1] // self.n_models_), self.n_models_)
        mean = np.clip(z.mean(axis=0), 1e-3, 1 - 1e-3)
        self.network_, self.loss_history_ = fit_factorisation(
            x,
            z,
            self.n_dims,
            loss="bernoulli",
            groups=self.group_,
            bias=np.log(mean / (1 - mean)),
            n_iter=self.n_iter,
            learning_rate=self.learning_rate,
            weight_decay=self.weight_decay,
            seed=seed_from(rng),
            n_threads=self.n_threads,
        )

    def _predict(self, x):
        from ecc_lib.routers.networks import predict_numpy

        probability = expit(predict_numpy(self.network_, x))
        return self.scaler_.inverse_transform(probability)
