"""The router interface: targets as a matrix, the :class:`Router` base estimator, references.

Every router is a scikit-learn estimator (:class:`sklearn.base.BaseEstimator`): ``__init__`` only
stores its arguments, ``fit`` returns ``self``, learned state ends in ``_``, randomness comes only
from ``random_state``, and using an unfitted router raises
:class:`sklearn.exceptions.NotFittedError`. Routers therefore work with ``clone``,
``get_params``/``set_params`` and parameter searches.

A router declares its constructor parameters once, as annotated class attributes with defaults,
and :func:`router_parameters` writes the keyword-only ``__init__`` that stores them; a subclass
adds its own parameters (or new defaults) to those of its base, so the shared ones
(``target``, ``cost_weight``, ``beta``, ``random_state`` here, the training settings in
:class:`ecc_lib.routers.training.TorchRouter`) are declared in one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ecc_lib.dars.distributions import DEFAULT_BETA, DEFAULT_LAMBDA, CapabilityDistributions

COMPONENTS = ("mu_q", "mu_c", "sigma_q")
"""The three regression targets of DARS, in the column order of :func:`target_matrix`."""
TARGET_KINDS = ("components", "utility")
"""What a router learns: the three components (route at any weights) or the utility itself."""

Targets = CapabilityDistributions | Mapping[str, np.ndarray] | np.ndarray
Weight = float | None
"""A utility weight; None: the router's own."""


def router_parameters(cls: type) -> type:
    """Class decorator: the annotated class attributes become keyword-only ``__init__`` parameters.

    The generated ``__init__`` only stores its arguments (scikit-learn's rule), and lists the
    parameters of the base classes first; ``get_params``, ``clone`` and the repr come from
    :class:`sklearn.base.BaseEstimator` (no dataclass ``__eq__`` or ``__repr__`` is added).

    Parameters
    ----------
    cls : type
        A :class:`Router` subclass whose parameters are annotated class attributes with defaults.

    Returns
    -------
    type
        ``cls`` with its ``__init__``.
    """
    return dataclass(kw_only=True, eq=False, repr=False)(cls)


def seed_from(random_state: int | np.random.Generator | None) -> int:
    """A 31-bit integer seed drawn from ``random_state`` (for libraries that need an int).

    Parameters
    ----------
    random_state : int, Generator or None
        Passed to :func:`numpy.random.default_rng`.

    Returns
    -------
    int
        A seed in ``[0, 2**31 - 1)``.
    """
    return int(np.random.default_rng(random_state).integers(0, 2**31 - 1))


def as_features(x: np.ndarray) -> np.ndarray:
    """Query features as a finite 2-D float array.

    Parameters
    ----------
    x : array-like, shape (n_queries, n_features)
        Query embeddings.

    Returns
    -------
    ndarray of float, shape (n_queries, n_features)

    Raises
    ------
    ValueError
        If ``x`` is not 2-D or holds NaN or infinite values.
    """
    x = np.asarray(x, dtype=float)
    if x.ndim != 2:
        raise ValueError(f"query embeddings must be 2-D (queries x dims), got shape {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("query embeddings hold NaN or infinite values")
    return x


def target_matrix(
    targets: Targets,
    *,
    target: str = "components",
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
) -> tuple[np.ndarray, str, tuple[str, ...] | None]:
    """Flatten routing targets into a matrix.

    Parameters
    ----------
    targets : CapabilityDistributions, mapping or ndarray
        DARS or single-shot distributions, a mapping with ``mu_q``, ``mu_c``, ``sigma_q`` (and
        optionally ``models``), or a plain utility matrix (n_queries, n_models).
    target : {"components", "utility"}
        Return the three components side by side or the utility
        ``mu_q - cost_weight * mu_c - beta * sigma_q``. Ignored for a plain utility matrix.
    cost_weight, beta : float
        Utility weights (DARS, Lai et al. 2026, section 3).

    Returns
    -------
    Y : ndarray, shape (n_queries, n_models) or (n_queries, 3 * n_models)
        The utility, or ``[mu_q | mu_c | sigma_q]`` side by side.
    kind : {"components", "utility"}
        What ``Y`` holds.
    models : tuple of str or None
        Model names when the targets carry them.
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
        u = parts["mu_q"] - cost_weight * parts["mu_c"] - beta * parts["sigma_q"]
        return np.asarray(u, float), "utility", models
    return np.hstack([np.asarray(parts[c], float) for c in COMPONENTS]), "components", models


@router_parameters
class Router(BaseEstimator):
    """Base class: fit on query embeddings and capability targets, route by ``argmax U``.

    Subclasses implement ``_fit(x, y, rng)`` and ``_predict(x)`` on the flattened target matrix
    (see :func:`target_matrix`), scaled by their ``_target_scaler`` when they name one (a
    scikit-learn scaler class: ``fit`` scales the targets, ``predict`` maps back), and declare
    their own parameters as annotated class attributes under :func:`router_parameters`.

    scikit-learn's parameter, clone, repr and unfitted checks pass for every family
    (``tests/test_estimator_checks.py``). Skipped by design: the checks that fit on ``(X, y)``
    with a 1-D ``y`` (``check_fit2d_*``, ``check_estimators_overwrite_params``,
    ``check_fit_idempotent`` and the other fitting checks of ``check_estimator``), because a
    router fits on capability targets (distributions, or a queries x models utility matrix) and
    ``predict`` returns a dict of target matrices rather than one array.

    Parameters
    ----------
    target : {"components", "utility"}, default "components"
        Learn ``mu_q``, ``mu_c`` and ``sigma_q`` (route at any cost weight and beta) or the
        utility at the fit's ``cost_weight`` and ``beta`` directly.
    cost_weight : float, default 0.05
        Weight ``lambda`` of the normalised cost in ``U = mu_q - lambda mu_c - beta sigma_q``;
        the default of :meth:`route` (and the fit weight when ``target="utility"``).
    beta : float, default 0.2
        Weight of the score spread ``sigma_q`` in the utility.
    random_state : int, Generator or None, default None
        Seed of every random choice of the fit.

    Attributes
    ----------
    n_models_ : int
        Number of models.
    models_ : tuple of str
        Model names (``"0"``, ``"1"``, ... when the targets carry none).
    fitted_target_ : {"components", "utility"}
        What the router learned.
    fit_cost_weight_, fit_beta_ : float
        Utility weights at fit time.
    n_features_in_ : int
        Embedding dimension.
    scaler_ : sklearn transformer
        The fitted target scaling, in the families that scale their targets.
    """

    target: str = "components"
    cost_weight: float = DEFAULT_LAMBDA
    beta: float = DEFAULT_BETA
    random_state: int | np.random.Generator | None = None

    _learns_utility_only = False  # True: a family that cannot learn the three components
    _target_scaler = None  # a scaler class: the family learns and predicts scaled targets

    # -- subclasses implement these two ------------------------------------------------------
    def _fit(self, x: np.ndarray, y: np.ndarray, rng: np.random.Generator) -> None:
        raise NotImplementedError

    def _predict(self, x: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    # -- shared interface --------------------------------------------------------------------
    def fit(self, query_embeddings: np.ndarray, targets: Targets) -> Router:
        """Learn to predict ``targets`` (aligned row by row with ``query_embeddings``).

        Parameters
        ----------
        query_embeddings : ndarray, shape (n_queries, n_features)
            Features of the training queries.
        targets : CapabilityDistributions, mapping or ndarray
            DARS targets (:func:`ecc_lib.dars.distributions.capability_distributions`), single-shot targets
            (:func:`ecc_lib.dars.distributions.single_shot_distributions`), a mapping with ``mu_q``, ``mu_c``,
            ``sigma_q`` or a plain utility matrix; see :func:`target_matrix`.

        Returns
        -------
        self
        """
        x = as_features(query_embeddings)
        y, kind, models = target_matrix(
            targets, target=self.target, cost_weight=self.cost_weight, beta=self.beta
        )
        if len(x) != len(y):
            raise ValueError(f"{len(x)} embeddings but {len(y)} target rows")
        if len(x) < 1:
            raise ValueError("cannot fit a router on zero queries")
        if not np.isfinite(y).all():
            raise ValueError("targets hold NaN or infinite values")
        if self._learns_utility_only and kind != "utility":
            raise ValueError(
                f"{type(self).__name__} learns the utility; construct it with target='utility'"
            )
        n_models = y.shape[1] // (len(COMPONENTS) if kind == "components" else 1)
        self.n_models_ = n_models
        self.models_ = models if models is not None else tuple(str(m) for m in range(n_models))
        self.fitted_target_ = kind
        self.fit_cost_weight_ = self.cost_weight
        self.fit_beta_ = self.beta
        self.n_features_in_ = x.shape[1]
        if self._target_scaler is not None:
            self.scaler_ = self._target_scaler().fit(y)
            y = self.scaler_.transform(y)
        self._fit(x, y, np.random.default_rng(self.random_state))
        return self

    def _check_fitted(self, x: np.ndarray) -> np.ndarray:
        check_is_fitted(self, "fitted_target_")
        x = as_features(x)
        if x.shape[1] != self.n_features_in_:
            raise ValueError(f"expected {self.n_features_in_} features, got {x.shape[1]}")
        return x

    def predict(self, query_embeddings: np.ndarray) -> dict[str, np.ndarray]:
        """Predicted targets of new queries.

        Parameters
        ----------
        query_embeddings : ndarray, shape (n_queries, n_features)
            Features of the new queries.

        Returns
        -------
        dict of str to ndarray
            ``{"mu_q", "mu_c", "sigma_q"}`` or ``{"utility"}``, each of shape
            (n_queries, n_models).
        """
        x = self._check_fitted(query_embeddings)
        y = self._predict(x)
        if self._target_scaler is not None:
            y = self.scaler_.inverse_transform(y)
        if self.fitted_target_ == "utility":
            return {"utility": y}
        m = self.n_models_
        return {c: y[:, i * m : (i + 1) * m] for i, c in enumerate(COMPONENTS)}

    def predict_utility(
        self, query_embeddings: np.ndarray, *, cost_weight: Weight = None, beta: Weight = None
    ) -> np.ndarray:
        """Predicted utility ``mu_q - cost_weight * mu_c - beta * sigma_q``.

        Parameters
        ----------
        query_embeddings : ndarray, shape (n_queries, n_features)
            Features of the new queries.
        cost_weight, beta : float, optional
            Utility weights; default the router's own. A router fitted with
            ``target="utility"`` only accepts its fit weights.

        Returns
        -------
        ndarray, shape (n_queries, n_models)
        """
        cost_weight = self.cost_weight if cost_weight is None else cost_weight
        beta = self.beta if beta is None else beta
        pred = self.predict(query_embeddings)
        if self.fitted_target_ == "utility":
            if not (
                np.isclose(cost_weight, self.fit_cost_weight_) and np.isclose(beta, self.fit_beta_)
            ):
                raise ValueError(
                    f"{type(self).__name__} learned the utility at "
                    f"cost_weight={self.fit_cost_weight_}, beta={self.fit_beta_}; refit, or use "
                    f"target='components' to route at cost_weight={cost_weight}, beta={beta}"
                )
            return pred["utility"]
        return pred["mu_q"] - cost_weight * pred["mu_c"] - beta * pred["sigma_q"]

    def route(
        self, query_embeddings: np.ndarray, *, cost_weight: Weight = None, beta: Weight = None
    ) -> np.ndarray:
        """Index of the chosen model per query: ``argmax_m`` of the predicted utility.

        Parameters
        ----------
        query_embeddings, cost_weight, beta
            As in :meth:`predict_utility`.

        Returns
        -------
        ndarray of int, shape (n_queries,)
        """
        return np.argmax(
            self.predict_utility(query_embeddings, cost_weight=cost_weight, beta=beta), axis=1
        )


# --------------------------------------------------------------------------------------------
# References
# --------------------------------------------------------------------------------------------


class BestFixedRouter(Router):
    """Predicts the training mean of every target: routes every query to one model.

    A reference with the parameters of :class:`Router` and none of its own.

    Attributes
    ----------
    profile_ : ndarray
        Training mean of each target column.
    """

    def _fit(self, x, y, rng):
        self.profile_ = y.mean(axis=0)

    def _predict(self, x):
        return np.broadcast_to(self.profile_, (len(x), len(self.profile_))).copy()


class RandomRouter(Router):
    """Routes each query to a uniformly random model (seeded at ``fit``).

    A reference with the parameters of :class:`Router` (``random_state`` seeds the choices).

    Attributes
    ----------
    rng_ : numpy.random.Generator
        The generator the random choices come from.
    """

    def _fit(self, x, y, rng):
        self.rng_ = rng

    def _predict(self, x):
        width = self.n_models_ * (len(COMPONENTS) if self.fitted_target_ == "components" else 1)
        return self.rng_.random((len(x), width))

    def predict_utility(self, query_embeddings, *, cost_weight=None, beta=None):
        """Independent uniform values: their argmax is a uniformly random model.

        Parameters
        ----------
        query_embeddings
            As in :meth:`Router.predict_utility`.
        cost_weight, beta
            Ignored.

        Returns
        -------
        ndarray, shape (n_queries, n_models)
        """
        x = self._check_fitted(query_embeddings)
        return self.rng_.random((len(x), self.n_models_))


__all__ = [
    "Router",
    "router_parameters",
]
