"""ECC router: route with ECC capability clusters (:mod:`ecc_lib.ecc.estimator`)."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.routers.base import Router, router_parameters, seed_from


@router_parameters
class ECCRouter(Router):
    """Route with ECC capability clusters (Wu, Silwal & Zhang 2026; ``ecc_lib.ecc.estimator.ECC``).

    ``fit`` turns the targets into pairwise comparisons per training query (the model with the
    higher target utility ``U = mu_q - cost_weight mu_c - beta sigma_q`` wins; exact ties are
    dropped; queries left without a comparison are not used by ECC), and fits ECC on them with the
    training embeddings. A new query gets embedding-only responsibilities ``r_qk`` and the
    predicted strength ``s_qm = sum_k r_qk (theta_km - mean_m theta_km)``, mapped to the utility
    scale by one affine map ``U ~ a + b s`` fitted by least squares on the training queries (``b``
    kept positive, so the route is ``argmax_m s_qm``). It learns the utility at the fit's
    ``cost_weight``, ``beta``, so routing at other weights needs a refit (``target`` must be
    ``"utility"``).

    Parameters
    ----------
    n_clusters : int, default 30
        ECC clusters (capped at the number of usable training queries).
    ecc_params : dict, optional
        Further arguments of :class:`ecc_lib.ecc.estimator.ECC` (``lam``, ``temperature``, ``max_iter`` ...).
    cost_weight, beta, random_state
        As in :class:`~ecc_lib.routers.Router`.
    target : {"utility"}, default "utility"
        The only supported value.

    Attributes
    ----------
    ecc_ : ecc_lib.ecc.estimator.ECC
        The fitted clustering.
    n_comparisons_, n_queries_used_ : int
        Comparisons and training queries ECC saw.
    slope_, intercept_ : float
        The affine map from strength to utility.
    """

    target: str = "utility"
    n_clusters: int = defaults.N_CLUSTERS
    ecc_params: dict | None = None

    _learns_utility_only = True

    def _fit(self, x, y, rng):
        from ecc_lib.data.comparisons import make_comparisons
        from ecc_lib.ecc.estimator import ECC

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
        ecc = ECC(n_clusters=k, random_state=seed_from(rng), **(self.ecc_params or {}))
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
        # the ECC routing score sum_k r_qk (theta_km - mean_m' theta_km'), embedding only
        return self.ecc_.routing_scores(x.astype(np.float32), mode="embedding")

    def _predict(self, x):
        return self.intercept_ + self.slope_ * self._strength(x)


__all__: list[str] = []
