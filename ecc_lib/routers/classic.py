"""Router families built on scikit-learn: kNN, MLP and Avengers-Pro-style cluster profiles."""

from __future__ import annotations

import warnings
from functools import partial

import numpy as np
from sklearn.cluster import KMeans
from sklearn.metrics.pairwise import euclidean_distances
from sklearn.neighbors import KNeighborsRegressor
from sklearn.neural_network import MLPRegressor
from sklearn.preprocessing import StandardScaler

from ecc_lib.routers.base import Router, router_parameters, seed_from


def inverse_distance_weights(distances: np.ndarray, *, eps: float = 1e-6) -> np.ndarray:
    """Neighbour weights ``1 / (d + eps)`` (unnormalised; the regressor normalises them).

    Parameters
    ----------
    distances : ndarray
        Distances to the neighbours.
    eps : float, default 1e-6
        Added before inverting, so an exact duplicate gets a large, finite weight.

    Returns
    -------
    ndarray
        Same shape as ``distances``.
    """
    return 1.0 / (np.asarray(distances, float) + eps)


@router_parameters
class KNNRouter(Router):
    """k nearest training queries (Euclidean distance), inverse-distance weighted mean targets.

    A thin layer over :class:`sklearn.neighbors.KNeighborsRegressor` with weights
    ``1 / (d + eps)``.

    Parameters
    ----------
    n_neighbors : int, default 16
        As in the DARS experiments; capped at the number of training queries.
    eps : float, default 1e-6
        Added to distances before inverting (an exact duplicate gets a large, finite weight).
    algorithm : str, default "auto"
        Neighbour search of :class:`~sklearn.neighbors.KNeighborsRegressor`.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    regressor_ : KNeighborsRegressor
        The fitted neighbour regressor.
    """

    n_neighbors: int = 16
    eps: float = 1e-6
    algorithm: str = "auto"

    def _fit(self, x, y, rng):
        if int(self.n_neighbors) < 1:
            raise ValueError(f"n_neighbors must be >= 1, got {self.n_neighbors}")
        self.regressor_ = KNeighborsRegressor(
            n_neighbors=min(int(self.n_neighbors), len(x)),
            weights=partial(inverse_distance_weights, eps=float(self.eps)),
            algorithm=self.algorithm,
        ).fit(x, y)

    def _predict(self, x):
        return self.regressor_.predict(x).reshape(len(x), -1)


@router_parameters
class MLPRouter(Router):
    """Multi-output MLP regressor (scikit-learn ``MLPRegressor``) on standardised targets
    (``scaler_``, a :class:`~sklearn.preprocessing.StandardScaler`).

    With ``early_stopping`` (default) 10 % of the training queries are held out and training stops
    when their loss has not improved for 10 epochs. Non-convergence within ``max_iter`` warns
    (scikit-learn's ``ConvergenceWarning``).

    Parameters
    ----------
    hidden_layer_sizes : tuple of int, default (64,)
    alpha : float, default 1e-3
        L2 penalty.
    learning_rate_init : float, default 1e-3
    max_iter : int, default 200
        Epochs at most.
    batch_size : int, default 128
        Capped at the number of training queries.
    early_stopping : bool, default True
        Only used with at least 20 training queries.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    mlp_ : MLPRegressor
    n_iter_ : int
        Epochs run.
    """

    hidden_layer_sizes: tuple[int, ...] = (64,)
    alpha: float = 1e-3
    learning_rate_init: float = 1e-3
    max_iter: int = 200
    batch_size: int = 128
    early_stopping: bool = True

    _target_scaler = StandardScaler

    def _fit(self, x, y, rng):
        self.mlp_ = MLPRegressor(
            hidden_layer_sizes=self.hidden_layer_sizes,
            alpha=self.alpha,
            learning_rate_init=self.learning_rate_init,
            max_iter=self.max_iter,
            batch_size=min(self.batch_size, len(x)),
            early_stopping=self.early_stopping and len(x) >= 20,
            random_state=seed_from(rng),
        )
        self.mlp_.fit(x, y)
        self.n_iter_ = int(self.mlp_.n_iter_)

    def _predict(self, x):
        return self.mlp_.predict(x).reshape(len(x), -1)


@router_parameters
class ClusterRouter(Router):
    """Avengers-Pro-style cluster profiles: k-means on embeddings, mean targets per cluster; a new
    query averages the profiles of its ``n_nearest`` nearest centroids.

    Parameters
    ----------
    n_clusters : int, default 32
        Capped at the number of training queries (warns).
    n_nearest : int, default 3
        Profiles averaged per new query.
    n_init : int, default 3
        k-means restarts.
    target, cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.

    Attributes
    ----------
    profiles_ : ndarray, shape (n_clusters, n_targets)
        Mean targets per cluster.
    centroids_ : ndarray, shape (n_clusters, n_features)
    cluster_sizes_ : ndarray of int
    """

    n_clusters: int = 32
    n_nearest: int = 3
    n_init: int = 3

    def _fit(self, x, y, rng):
        k = int(self.n_clusters)
        if k > len(x):
            warnings.warn(
                f"n_clusters={k} exceeds the {len(x)} training queries; using {len(x)}",
                stacklevel=3,
            )
            k = len(x)
        km = KMeans(n_clusters=k, n_init=self.n_init, random_state=seed_from(rng)).fit(x)
        labels = km.labels_
        counts = np.bincount(labels, minlength=k).astype(float)
        sums = np.zeros((k, y.shape[1]))
        np.add.at(sums, labels, y)
        global_mean = y.mean(axis=0)
        self.profiles_ = np.where(
            counts[:, None] > 0, sums / np.maximum(counts, 1.0)[:, None], global_mean
        )
        self.centroids_ = km.cluster_centers_
        self.cluster_sizes_ = counts.astype(np.int64)

    def _predict(self, x):
        d2 = euclidean_distances(x, self.centroids_, squared=True)
        p = min(self.n_nearest, len(self.centroids_))
        nearest = np.argsort(d2, axis=1, kind="stable")[:, :p]
        return self.profiles_[nearest].mean(axis=1)


__all__: list[str] = []
