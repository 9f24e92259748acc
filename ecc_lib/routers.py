"""Routers: learn per-model capability targets from query embeddings and route by utility.

Every router shares one interface (:class:`Router`):

- ``fit(query_embeddings, targets)``, where ``targets`` is a
  :class:`ecc_lib.dars.CapabilityDistributions` (DARS targets from
  :func:`~ecc_lib.dars.capability_distributions`, or single-shot targets from
  :func:`~ecc_lib.dars.single_shot_distributions`; the same code path for both), a mapping with
  ``mu_q``, ``mu_c``, ``sigma_q``, or a plain utility matrix;
- ``predict(X)``: per-model ``mu_q``, ``mu_c``, ``sigma_q`` (``target="components"``, default) or
  ``utility`` (``target="utility"``);
- ``route(X, lambda_, beta)``: ``argmax_m U`` with ``U = mu_q - lambda mu_c - beta sigma_q``
  (DARS, Lai et al. 2026, arXiv 2606.06924, section 3).

Router families (as listed in the DARS paper's experiments; our own implementations):

- :class:`KNNRouter`: k nearest training queries (k = 16), inverse-distance weights;
- :class:`MLPRouter`: a multi-output MLP regressor (scikit-learn);
- :class:`MatrixFactorizationRouter`: EmbedLLM-style factorisation, a linear query encoder and a
  learned embedding per model and target, score = dot product + bias;
- :class:`MIRTRouter`: multidimensional item response theory, ``sigmoid(a(x) . theta_m - d(x))``
  with a low-dimensional (16-d) latent ability per model;
- :class:`ClusterRouter`: Avengers-Pro-style k-means profiles (32 clusters), averaging the 3
  nearest clusters;
- :class:`ECCRouter`: ECC capability clusters (``ecc_lib.ecc``), embedding-only responsibilities;
- references :class:`BestFixedRouter` and :class:`RandomRouter`; the per-query oracle needs the
  held-out truth and lives in :mod:`ecc_lib.routing_evaluation`.

Conventions follow scikit-learn: ``__init__`` stores arguments, ``fit`` returns ``self``, learned
state ends in ``_``, randomness only through ``random_state``.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import numpy as np
import pandas as pd

from ecc_lib.dars import DEFAULT_BETA, DEFAULT_LAMBDA, CapabilityDistributions

COMPONENTS = ("mu_q", "mu_c", "sigma_q")
TARGET_KINDS = ("components", "utility")


def _seed_from(random_state: int | np.random.Generator | None) -> int:
    """A 31-bit integer seed drawn from ``random_state`` (for libraries that need an int)."""
    return int(np.random.default_rng(random_state).integers(0, 2**31 - 1))


def _as_features(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"query embeddings must be 2-D (queries x dims), got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("query embeddings hold NaN or infinite values")
    return x


def target_matrix(
    targets: CapabilityDistributions | Mapping[str, np.ndarray] | np.ndarray,
    target: str = "components",
    lambda_: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
) -> tuple[np.ndarray, str, tuple[str, ...] | None]:
    """Flatten routing targets into a matrix.

    Returns
    -------
    Y : ndarray, shape (n_queries, n_models) or (n_queries, 3 * n_models)
        The utility, or ``[mu_q | mu_c | sigma_q]`` side by side.
    kind : {"components", "utility"}
    models : tuple of str or None
    """
    if target not in TARGET_KINDS:
        raise ValueError(f"target must be one of {TARGET_KINDS}, got {target!r}")
    models = None
    if isinstance(targets, CapabilityDistributions):
        models = targets.models
        parts = {c: getattr(targets, c) for c in COMPONENTS}
    elif isinstance(targets, Mapping):
        missing = [c for c in COMPONENTS if c not in targets]
        if missing:
            raise ValueError(f"targets mapping lacks {missing}; it needs {list(COMPONENTS)}")
        parts = {c: np.asarray(targets[c], float) for c in COMPONENTS}
        models = tuple(targets["models"]) if "models" in targets else None
    else:
        u = np.asarray(targets, float)
        if u.ndim != 2:
            raise ValueError(f"a utility target must be 2-D (queries x models), got {u.shape}")
        return u, "utility", None
    shapes = {c: np.shape(v) for c, v in parts.items()}
    if len(set(shapes.values())) != 1:
        raise ValueError(f"target components have different shapes {shapes}")
    if target == "utility":
        u = parts["mu_q"] - lambda_ * parts["mu_c"] - beta * parts["sigma_q"]
        return np.asarray(u, float), "utility", models
    return np.hstack([np.asarray(parts[c], float) for c in COMPONENTS]), "components", models


class Router:
    """Base class: fit on query embeddings and capability targets, route by ``argmax U``.

    Parameters
    ----------
    target : {"components", "utility"}
        Learn ``mu_q``, ``mu_c`` and ``sigma_q`` (route at any lambda, beta) or the utility at the
        fit's ``lambda_``, ``beta`` directly.
    lambda_, beta : float
        Default utility weights for ``route`` (and the fit weights when ``target="utility"``).
    random_state : int, Generator or None
    """

    def __init__(
        self,
        target: str = "components",
        lambda_: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        self.target = target
        self.lambda_ = lambda_
        self.beta = beta
        self.random_state = random_state

    # -- subclasses implement these two ------------------------------------------------------
    def _fit(self, x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> None:
        raise NotImplementedError

    def _predict(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- shared interface --------------------------------------------------------------------
    def fit(
        self,
        query_embeddings: np.ndarray,
        targets: CapabilityDistributions | Mapping[str, np.ndarray] | np.ndarray,
    ) -> Router:
        """Learn to predict ``targets`` (aligned row by row with ``query_embeddings``)."""
        x = _as_features(query_embeddings)
        y, kind, models = target_matrix(targets, self.target, self.lambda_, self.beta)
        if len(x) != len(y):
            raise ValueError(f"{len(x)} embeddings but {len(y)} target rows")
        if len(x) < 1:
            raise ValueError("cannot fit a router on zero queries")
        if not np.isfinite(y).all():
            raise ValueError("targets hold NaN or infinite values")
        n_models = y.shape[1] // (len(COMPONENTS) if kind == "components" else 1)
        self.n_models_ = n_models
        self.models_ = models if models is not None else tuple(str(m) for m in range(n_models))
        self.fitted_target_ = kind
        self.fit_lambda_ = self.lambda_
        self.fit_beta_ = self.beta
        self.n_features_in_ = x.shape[1]
        self._fit(x, y, np.random.default_rng(self.random_state))
        return self

    def _check_fitted(self, x: np.ndarray) -> np.ndarray:
        if not hasattr(self, "fitted_target_"):
            raise RuntimeError(f"{type(self).__name__} is not fitted; call fit first")
        x = _as_features(x)
        if x.shape[1] != self.n_features_in_:
            raise ValueError(f"expected {self.n_features_in_} features, got {x.shape[1]}")
        return x

    def predict(self, query_embeddings: np.ndarray) -> dict[str, np.ndarray]:
        """Predicted targets: ``{"mu_q", "mu_c", "sigma_q"}`` or ``{"utility"}``, each
        of shape (n_queries, n_models)."""
        x = self._check_fitted(query_embeddings)
        y = self._predict(x)
        if self.fitted_target_ == "utility":
            return {"utility": y}
        m = self.n_models_
        return {c: y[:, i * m : (i + 1) * m] for i, c in enumerate(COMPONENTS)}

    def predict_utility(
        self, query_embeddings: np.ndarray, lambda_: float | None = None, beta: float | None = None
    ) -> np.ndarray:
        """Predicted utility ``mu_q - lambda mu_c - beta sigma_q`` (n_queries, n_models)."""
        lambda_ = self.lambda_ if lambda_ is None else lambda_
        beta = self.beta if beta is None else beta
        pred = self.predict(query_embeddings)
        if self.fitted_target_ == "utility":
            if not (np.isclose(lambda_, self.fit_lambda_) and np.isclose(beta, self.fit_beta_)):
                raise ValueError(
                    f"{type(self).__name__} learned the utility at lambda={self.fit_lambda_}, "
                    f"beta={self.fit_beta_}; refit, or use target='components' to route at "
                    f"lambda={lambda_}, beta={beta}"
                )
            return pred["utility"]
        return pred["mu_q"] - lambda_ * pred["mu_c"] - beta * pred["sigma_q"]

    def route(
        self, query_embeddings: np.ndarray, lambda_: float | None = None, beta: float | None = None
    ) -> np.ndarray:
        """Index of the chosen model per query: ``argmax_m`` predicted utility."""
        return np.argmax(self.predict_utility(query_embeddings, lambda_, beta), axis=1)

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.endswith("_"))
        return f"{type(self).__name__}({params})"


class _Standardiser:
    """Column-wise affine scaling of targets (mean/std or min/max), with its inverse."""

    def __init__(self, y: np.ndarray, mode: str = "standard") -> None:
        if mode == "standard":
            self.shift = y.mean(axis=0)
            scale = y.std(axis=0)
        else:
            self.shift = y.min(axis=0)
            scale = y.max(axis=0) - self.shift
        self.scale = np.where(scale > 1e-12, scale, 1.0)

    def forward(self, y: np.ndarray) -> np.ndarray:
        return (y - self.shift) / self.scale

    def inverse(self, z: np.ndarray) -> np.ndarray:
        return z * self.scale + self.shift


def _adam(
    params: dict[str, np.ndarray],
    loss_and_grad,
    n_iter: int,
    learning_rate: float,
    weight_decay: float,
) -> list[float]:
    """Full-batch Adam with decoupled weight decay; updates ``params`` in place."""
    b1, b2, eps = 0.9, 0.999, 1e-8
    first = {k: np.zeros_like(v) for k, v in params.items()}
    second = {k: np.zeros_like(v) for k, v in params.items()}
    history = []
    for step in range(1, n_iter + 1):
        loss, grads = loss_and_grad(params)
        history.append(float(loss))
        for k, g in grads.items():
            first[k] = b1 * first[k] + (1 - b1) * g
            second[k] = b2 * second[k] + (1 - b2) * g * g
            m_hat = first[k] / (1 - b1**step)
            v_hat = second[k] / (1 - b2**step)
            params[k] -= learning_rate * (m_hat / (np.sqrt(v_hat) + eps) + weight_decay * params[k])
    return history


def mf_loss_and_grad(
    params: dict[str, np.ndarray], x: np.ndarray, z: np.ndarray
) -> tuple[float, dict[str, np.ndarray]]:
    """Mean squared error of ``(x W) V^T + b`` against ``z`` and its gradient (matrix
    factorisation router)."""
    h = x @ params["W"]
    err = h @ params["V"].T + params["b"] - z
    g = 2.0 * err / err.size
    grads = {"W": x.T @ (g @ params["V"]), "V": g.T @ h, "b": g.sum(axis=0)}
    return float((err * err).mean()), grads


def mirt_loss_and_grad(
    params: dict[str, np.ndarray], x: np.ndarray, z: np.ndarray, onehot: np.ndarray
) -> tuple[float, dict[str, np.ndarray]]:
    """Mean Bernoulli cross-entropy of the MIRT logits against fractional targets ``z`` in [0, 1]
    and its gradient. ``onehot`` (columns x groups) maps each column to its target group."""
    h = x @ params["A"]
    logit = h @ params["theta"].T + (x @ params["w"]) @ onehot.T + params["b"]
    prob = 1.0 / (1.0 + np.exp(-logit))
    loss = np.mean(np.logaddexp(0.0, logit) - z * logit)
    g = (prob - z) / z.size
    grads = {
        "A": x.T @ (g @ params["theta"]),
        "theta": g.T @ h,
        "w": x.T @ (g @ onehot),
        "b": g.sum(axis=0),
    }
    return float(loss), grads


# --------------------------------------------------------------------------------------------
# Router families
# --------------------------------------------------------------------------------------------


class KNNRouter(Router):
    """k nearest training queries (Euclidean distance), inverse-distance weighted mean targets.

    Parameters
    ----------
    n_neighbors : int, default 16
        As in the DARS experiments; capped at the number of training queries.
    eps : float, default 1e-6
        Added to distances before inverting (an exact duplicate gets a large, finite weight).
    """

    def __init__(
        self,
        n_neighbors: int = 16,
        eps: float = 1e-6,
        batch_size: int = 2048,
        target: str = "components",
        lambda_: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, lambda_, beta, random_state)
        self.n_neighbors = n_neighbors
        self.eps = eps
        self.batch_size = batch_size

    def _fit(self, x, y, rng):
        if self.n_neighbors < 1:
            raise ValueError(f"n_neighbors must be >= 1, got {self.n_neighbors}")
        self.x_train_ = x
        self.y_train_ = y
        self.sq_norm_ = (x * x).sum(axis=1)

    def _predict(self, x):
        k = min(self.n_neighbors, len(self.x_train_))
        out = np.empty((len(x), self.y_train_.shape[1]))
        for lo in range(0, len(x), self.batch_size):
            xb = x[lo : lo + self.batch_size]
            d2 = (
                (xb * xb).sum(axis=1)[:, None] + self.sq_norm_[None, :] - 2.0 * xb @ self.x_train_.T
            )
            dist = np.sqrt(np.clip(d2, 0.0, None))
            idx = np.argpartition(dist, k - 1, axis=1)[:, :k] if k < dist.shape[1] else None
            if idx is None:
                idx = np.broadcast_to(np.arange(dist.shape[1]), dist.shape)
            w = 1.0 / (np.take_along_axis(dist, idx, axis=1) + self.eps)
            w /= w.sum(axis=1, keepdims=True)
            out[lo : lo + len(xb)] = np.einsum("nk,nkt->nt", w, self.y_train_[idx])
        return out


class MLPRouter(Router):
    """Multi-output MLP regressor (scikit-learn ``MLPRegressor``) on standardised targets.

    With ``early_stopping`` (default) 10 % of the training queries are held out and training stops
    when their loss has not improved for 10 epochs. Non-convergence within ``max_iter`` warns (scikit-learn's ``ConvergenceWarning``).
    """

    def __init__(
        self,
        hidden_layer_sizes: tuple[int, ...] = (64,),
        alpha: float = 1e-3,
        learning_rate_init: float = 1e-3,
        max_iter: int = 200,
        batch_size: int = 128,
        early_stopping: bool = True,
        target: str = "components",
        lambda_: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, lambda_, beta, random_state)
        self.hidden_layer_sizes = hidden_layer_sizes
        self.alpha = alpha
        self.learning_rate_init = learning_rate_init
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.early_stopping = early_stopping

    def _fit(self, x, y, rng):
        from sklearn.neural_network import MLPRegressor

        self.scaler_ = _Standardiser(y)
        self.mlp_ = MLPRegressor(
            hidden_layer_sizes=self.hidden_layer_sizes,
            alpha=self.alpha,
            learning_rate_init=self.learning_rate_init,
            max_iter=self.max_iter,
            batch_size=min(self.batch_size, len(x)),
            early_stopping=self.early_stopping and len(x) >= 20,
            random_state=_seed_from(rng),
        )
        self.mlp_.fit(x, self.scaler_.forward(y))
        self.n_iter_ = int(self.mlp_.n_iter_)

    def _predict(self, x):
        z = self.mlp_.predict(x)
        return self.scaler_.inverse(z.reshape(len(x), -1))


class MatrixFactorizationRouter(Router):
    """EmbedLLM-style matrix factorisation: ``y_qt = <W^T x_q, v_t> + b_t``.

    A linear encoder ``W`` maps a query embedding to ``n_factors`` dimensions; each (model, target)
    column ``t`` has a learned embedding ``v_t`` and bias ``b_t``. Fit by full-batch Adam on the
    mean squared error of standardised targets, with weight decay.
    """

    def __init__(
        self,
        n_factors: int = 16,
        n_iter: int = 300,
        learning_rate: float = 0.03,
        weight_decay: float = 1e-3,
        target: str = "components",
        lambda_: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, lambda_, beta, random_state)
        self.n_factors = n_factors
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay

    def _fit(self, x, y, rng):
        self.scaler_ = _Standardiser(y)
        z = self.scaler_.forward(y)
        n, d = x.shape
        t = y.shape[1]
        params = {
            "W": rng.standard_normal((d, self.n_factors)) / np.sqrt(d),
            "V": 0.1 * rng.standard_normal((t, self.n_factors)),
            "b": np.zeros(t),
        }

        def loss_and_grad(p):
            return mf_loss_and_grad(p, x, z)

        self.loss_history_ = _adam(
            params, loss_and_grad, self.n_iter, self.learning_rate, self.weight_decay
        )
        self.params_ = params

    def _predict(self, x):
        p = self.params_
        return self.scaler_.inverse((x @ p["W"]) @ p["V"].T + p["b"])


class MIRTRouter(Router):
    """Multidimensional IRT router: ``P = sigmoid(<A^T x_q, theta_t> + w_g^T x_q + b_t)``.

    ``A^T x_q`` is the query's discrimination vector in an ``n_dims``-dimensional latent space,
    ``theta_t`` the latent ability of column ``t`` (a model for one target), ``-w_g^T x_q`` the
    query's difficulty for target group ``g`` (``mu_q``, ``mu_c`` or ``sigma_q``) and ``b_t`` the
    model's overall level. Targets are min-max scaled to [0, 1] and fit by Bernoulli cross-entropy
    (fractional targets) with full-batch Adam.
    """

    def __init__(
        self,
        n_dims: int = 16,
        n_iter: int = 300,
        learning_rate: float = 0.03,
        weight_decay: float = 1e-3,
        target: str = "components",
        lambda_: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, lambda_, beta, random_state)
        self.n_dims = n_dims
        self.n_iter = n_iter
        self.learning_rate = learning_rate
        self.weight_decay = weight_decay

    def _fit(self, x, y, rng):
        self.scaler_ = _Standardiser(y, mode="minmax")
        z = np.clip(self.scaler_.forward(y), 0.0, 1.0)
        n, d = x.shape
        t = y.shape[1]
        n_groups = t // self.n_models_
        group = np.repeat(np.arange(n_groups), self.n_models_)
        self.group_ = group
        onehot = np.eye(n_groups)[group]  # (t, g)
        mean = np.clip(z.mean(axis=0), 1e-3, 1 - 1e-3)
        params = {
            "A": rng.standard_normal((d, self.n_dims)) / np.sqrt(d),
            "theta": 0.1 * rng.standard_normal((t, self.n_dims)),
            "w": np.zeros((d, n_groups)),
            "b": np.log(mean / (1 - mean)),
        }

        def loss_and_grad(p):
            return mirt_loss_and_grad(p, x, z, onehot)

        self.loss_history_ = _adam(
            params, loss_and_grad, self.n_iter, self.learning_rate, self.weight_decay
        )
        self.params_ = params
        self.onehot_ = onehot

    def _predict(self, x):
        p = self.params_
        logit = (x @ p["A"]) @ p["theta"].T + (x @ p["w"]) @ self.onehot_.T + p["b"]
        return self.scaler_.inverse(1.0 / (1.0 + np.exp(-logit)))


class ClusterRouter(Router):
    """Avengers-Pro-style cluster profiles: k-means on embeddings, mean targets per cluster; a new
    query averages the profiles of its ``n_nearest`` nearest centroids.

    Parameters
    ----------
    n_clusters : int, default 32
        Capped at the number of training queries (warns).
    n_nearest : int, default 3
    n_init : int, default 3
        k-means restarts.
    """

    def __init__(
        self,
        n_clusters: int = 32,
        n_nearest: int = 3,
        n_init: int = 3,
        target: str = "components",
        lambda_: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
    ) -> None:
        super().__init__(target, lambda_, beta, random_state)
        self.n_clusters = n_clusters
        self.n_nearest = n_nearest
        self.n_init = n_init

    def _fit(self, x, y, rng):
        from sklearn.cluster import KMeans

        k = self.n_clusters
        if k > len(x):
            warnings.warn(
                f"n_clusters={k} exceeds the {len(x)} training queries; using {len(x)}",
                stacklevel=3,
            )
            k = len(x)
        km = KMeans(n_clusters=k, n_init=self.n_init, random_state=_seed_from(rng)).fit(x)
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
        d2 = (
            (x * x).sum(axis=1)[:, None]
            + (self.centroids_**2).sum(axis=1)[None, :]
            - 2.0 * x @ self.centroids_.T
        )
        p = min(self.n_nearest, len(self.centroids_))
        nearest = np.argsort(d2, axis=1)[:, :p]
        return self.profiles_[nearest].mean(axis=1)


# --------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------


class BestFixedRouter(Router):
    """Predicts the training mean of every target: routes every query to one model."""

    def _fit(self, x, y, rng):
        self.profile_ = y.mean(axis=0)

    def _predict(self, x):
        return np.broadcast_to(self.profile_, (len(x), len(self.profile_))).copy()


class RandomRouter(Router):
    """Routes each query to a uniformly random model (seeded at ``fit``)."""

    def _fit(self, x, y, rng):
        self.rng_ = rng

    def _predict(self, x):
        width = self.n_models_ * (len(COMPONENTS) if self.fitted_target_ == "components" else 1)
        return self.rng_.random((len(x), width))

    def predict_utility(self, query_embeddings, lambda_=None, beta=None):
        """Independent uniform values: their argmax is a uniformly random model."""
        x = self._check_fitted(query_embeddings)
        return self.rng_.random((len(x), self.n_models_))


# --------------------------------------------------------------------------------------------
# ECC router (ecc_lib.ecc)
# --------------------------------------------------------------------------------------------


class ECCRouter(Router):
    """Route with ECC capability clusters (Wu, Silwal & Zhang 2026; ``ecc_lib.ecc.ECC``).

    ``fit`` turns the targets into pairwise comparisons per training query (the model with the
    higher target utility ``U = mu_q - lambda mu_c - beta sigma_q`` at the router's ``lambda_``,
    ``beta`` wins; exact ties are dropped; queries left without a comparison are not used by ECC),
    and fits ECC on them with the training embeddings. A new query gets embedding-only
    responsibilities ``r_qk`` and the predicted strength
    ``s_qm = sum_k r_qk (theta_km - mean_m theta_km)``, mapped to the utility scale by one affine
    map ``U ~ a + b s`` fitted by least squares on the training queries (``b`` kept positive, so
    the route is ``argmax_m s_qm``). It learns the utility at the fit's ``lambda_``, ``beta``, so
    routing at other weights needs a refit (``target`` is always ``"utility"``).

    Parameters
    ----------
    n_clusters : int, default 30
    ecc_params : dict, optional
        Further arguments of :class:`ecc_lib.ecc.ECC` (``lam``, ``temperature``, ``max_iter`` ...).
    """

    def __init__(
        self,
        n_clusters: int = 30,
        ecc_params: dict | None = None,
        lambda_: float = DEFAULT_LAMBDA,
        beta: float = DEFAULT_BETA,
        random_state: int | np.random.Generator | None = None,
        target: str = "utility",
    ) -> None:
        super().__init__(target, lambda_, beta, random_state)
        self.n_clusters = n_clusters
        self.ecc_params = ecc_params

    def _fit(self, x, y, rng):
        from ecc_lib.comparisons import make_comparisons
        from ecc_lib.ecc import ECC

        if self.fitted_target_ != "utility":
            raise ValueError("ECCRouter learns the utility; construct it with target='utility'")
        n, m = y.shape
        ids = np.array([str(i) for i in range(n)], dtype=object)
        frame = pd.DataFrame(
            {
                "query_id": np.repeat(ids, m),
                "model": np.tile(np.array([str(j) for j in range(m)], dtype=object), n),
                "score": y.reshape(-1),
            }
        )
        models = tuple(str(j) for j in range(m))
        comparisons = make_comparisons(
            frame, ties="drop", min_pairs=1, query_ids=ids, models=models, random_state=rng
        )
        if comparisons.n_queries < 2:
            raise ValueError(
                "ECCRouter needs at least 2 training queries with a non-tied pair of models"
            )
        rows = np.asarray(comparisons.query_ids, dtype=np.int64)
        k = min(int(self.n_clusters), comparisons.n_queries)
        ecc = ECC(n_clusters=k, random_state=_seed_from(rng), **(self.ecc_params or {}))
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*did not converge.*")
            ecc.fit(x[rows], comparisons)
        self.ecc_ = ecc
        self.n_comparisons_ = len(comparisons)
        self.n_queries_used_ = comparisons.n_queries
        strength = self._strength(x)
        s, u = strength.reshape(-1), y.reshape(-1)
        s_c = s - s.mean()
        slope = float(s_c @ (u - u.mean()) / max(float(s_c @ s_c), 1e-12))
        self.slope_ = max(slope, 1e-6)
        self.intercept_ = float(u.mean() - self.slope_ * s.mean())

    def _strength(self, x):
        r = self.ecc_.predict_responsibilities(x.astype(np.float32), mode="embedding")
        theta = self.ecc_.theta_
        return r @ (theta - theta.mean(axis=1, keepdims=True))

    def _predict(self, x):
        return self.intercept_ + self.slope_ * self._strength(x)


ROUTER_FAMILIES: dict[str, type[Router]] = {
    "kNN": KNNRouter,
    "MLP": MLPRouter,
    "EmbedLLM-MF": MatrixFactorizationRouter,
    "MIRT": MIRTRouter,
    "Avengers-Pro": ClusterRouter,
}
"""Learned router families by display name (the ECC router is added when ``ecc_lib.ecc`` is
importable, see :func:`router_families`)."""


def router_families() -> dict[str, type[Router]]:
    """The learned router families available in this installation (name to class)."""
    families = dict(ROUTER_FAMILIES)
    try:
        import ecc_lib.ecc  # noqa: F401
    except ImportError:
        return families
    families["ECC"] = ECCRouter
    return families


def make_router(
    name: str, random_state: int | np.random.Generator | None = None, **kwargs
) -> Router:
    """Instantiate a router family by display name (see :func:`router_families`)."""
    families = router_families()
    if name not in families:
        raise ValueError(f"unknown router {name!r}; choose from {sorted(families)}")
    return families[name](random_state=random_state, **kwargs)


def targets_frame(router: Router, query_embeddings: np.ndarray, query_ids=None) -> pd.DataFrame:
    """Predicted targets of a fitted router as a long table ``query_id, model, <targets>``."""
    pred = router.predict(query_embeddings)
    n = len(next(iter(pred.values())))
    query_ids = np.arange(n) if query_ids is None else np.asarray(query_ids)
    frame = pd.DataFrame(
        {
            "query_id": np.repeat(query_ids, router.n_models_),
            "model": np.tile(np.asarray(router.models_, dtype=object), n),
        }
    )
    for key, value in pred.items():
        frame[key] = value.reshape(-1)
    return frame
