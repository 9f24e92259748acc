"""The inference every clustering of the ECC family shares: given BT profiles ``theta_`` (one per
cluster) and centroids, the responsibilities of new queries from their embeddings and probe
comparisons, win probabilities, per-query win matrices, routing scores and rankings.

:class:`ProfileMixture` is the base of :class:`ecc_lib.ecc.estimator.ECC` and of the baselines
(:mod:`ecc_lib.ecc.baselines`); a new clustering method subclasses it and only fits ``theta_``,
``centroids_``, ``responsibilities_`` and ``models_`` (see ``docs/guide/extending.md``).
:func:`comparison_nll` and :func:`evidence` are the per-comparison log-loss and the probe
evidence ``l_qk`` of ``docs/design.md`` section 3.
"""

from __future__ import annotations

import numpy as np
from scipy.special import expit, log_softmax
from sklearn.base import BaseEstimator
from sklearn.utils.validation import check_is_fitted

from ecc_lib.bradley_terry import log_sigmoid, pair_counts, pair_log_probs, win_probability
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.ecc.validation import check_embeddings, check_mode

_PROB_CLIP = 1e-12


def log_prob_table(theta: np.ndarray) -> np.ndarray:
    """``log P_k(w beats l)`` as a ``(M*M, K)`` table, row ``w * M + l`` (diagonal rows are
    ``log(1/2)`` and never used).

    Parameters
    ----------
    theta : ndarray, shape (K, M)
        Bradley-Terry strengths of the ``M`` models in each of the ``K`` profiles.

    Returns
    -------
    ndarray, shape (M*M, K)
        ``log sigmoid(theta[k, w] - theta[k, l])`` in row ``w * M + l``, column ``k``.
    """
    k, m = theta.shape
    return log_sigmoid(theta[:, :, None] - theta[:, None, :]).reshape(k, m * m).T


def comparison_nll(p_b_wins: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Negative log-likelihood of each outcome ``y`` (1 = b won, 0 = a won, 0.5 = tie) given the
    predicted probability that ``b`` wins (clipped to ``[1e-12, 1 - 1e-12]``).

    Parameters
    ----------
    p_b_wins : array-like of float
        Predicted probability that ``b`` wins, per comparison.
    y : array-like of float
        Observed outcome per comparison (same shape).

    Returns
    -------
    ndarray of float
        ``-(y log p + (1 - y) log(1 - p))`` elementwise.
    """
    p = np.clip(np.asarray(p_b_wins, dtype=float), _PROB_CLIP, 1.0 - _PROB_CLIP)
    y = np.asarray(y, dtype=float)
    return -(y * np.log(p) + (1.0 - y) * np.log1p(-p))


def evidence(theta: np.ndarray, comparisons: Comparisons) -> np.ndarray:
    """ECC evidence ``l_qk``: per-comparison average log-likelihood of each query's comparisons
    under each profile; zero for queries without comparisons. Shape ``(n_queries, K)``.

    Parameters
    ----------
    theta : ndarray, shape (K, M)
        Bradley-Terry strengths of the ``M`` models in each of the ``K`` profiles.
    comparisons : Comparisons
        The queries' pairwise comparisons.

    Returns
    -------
    ndarray, shape (n_queries, K)
        The evidence ``l_qk``.
    """
    c = pair_counts(comparisons, normalize=True)
    return np.asarray(c.matrix @ pair_log_probs(theta, c.winner, c.loser))


class ProfileMixture(BaseEstimator):
    """Inference shared by every clustering: responsibilities, win probabilities, rankings.

    The base class of :class:`ECC`, the baselines of :mod:`ecc_lib.ecc.baselines` and
    :class:`ecc_lib.ecc.cv.ECCCV`; a subclass's ``fit`` sets ``theta_`` (K, M) and ``models_``.
    """

    def _check_fitted(self) -> None:
        """Raise :class:`~sklearn.exceptions.NotFittedError` before ``fit`` (an
        ``AttributeError``, so ``hasattr(ECC(), "n_clusters_")`` is False)."""
        check_is_fitted(self, "theta_")

    def _n_rows(self, embeddings, probe, labels) -> int:
        if embeddings is not None:
            return int(np.shape(embeddings)[0])
        if probe is not None:
            return probe.n_queries
        if labels is not None:
            return len(labels)
        raise ValueError("pass embeddings, a probe or labels to say which queries to predict")

    def _check_probe(self, probe: Comparisons, n: int) -> None:
        if not isinstance(probe, Comparisons):
            raise TypeError(f"probe must be a Comparisons object, got {type(probe).__name__}")
        if tuple(probe.models) != tuple(self.models_):
            raise ValueError(
                f"probe models {list(probe.models)} differ from the fitted models "
                f"{list(self.models_)}"
            )
        if probe.n_queries != n:
            raise ValueError(
                f"probe refers to {probe.n_queries} queries but embeddings have {n} rows"
            )

    def _mixture_responsibilities(self, embeddings, probe, mode, log_prior=None) -> np.ndarray:
        """``softmax((l^probe + lam cos) / T)``, each term used when the mode and inputs allow."""
        check_mode(mode)
        use_emb = mode in ("both", "embedding") and embeddings is not None
        use_probe = mode in ("both", "probe") and probe is not None
        if mode == "embedding" and embeddings is None:
            raise ValueError("mode='embedding' needs embeddings")
        if mode == "probe" and probe is None:
            raise ValueError("mode='probe' needs a probe (Comparisons of the new queries)")
        if mode == "both" and not (use_emb or use_probe):
            raise ValueError("mode='both' needs embeddings and/or a probe")
        n = self._n_rows(embeddings, probe, None)
        k = self.theta_.shape[0]
        score = np.zeros((n, k))
        if use_emb and self.centroids_ is not None:
            x = check_embeddings(embeddings, None, np.float32)
            if x.shape[1] != self.centroids_.shape[1]:
                raise ValueError(
                    f"embeddings have dimension {x.shape[1]}, the model was fitted on "
                    f"{self.centroids_.shape[1]}"
                )
            score += self.lam * (x @ self.centroids_.T.astype(np.float32)).astype(float)
        if use_probe:
            self._check_probe(probe, n)
            score += evidence(self.theta_, probe)
        score /= self.temperature
        if log_prior is not None:
            score += log_prior
        return np.exp(log_softmax(score, axis=1))

    def predict_responsibilities(
        self,
        embeddings: np.ndarray | None = None,
        probe: Comparisons | None = None,
        mode: str = "both",
        labels=None,
    ) -> np.ndarray:
        """Soft cluster memberships of new queries.

        Parameters
        ----------
        embeddings : ndarray, shape (n, d), optional
            Unit embeddings of the new queries.
        probe : Comparisons, optional
            A few comparisons per new query (the probe), with ``probe.query`` indexing the rows of
            ``embeddings`` and the fitted model order.
        mode : {"both", "embedding", "probe"}
            ``r_q = softmax((l_q^probe + lam cos(e_q, c_k)) / T)``; ``"embedding"`` drops the
            evidence, ``"probe"`` drops the cosine term.
        labels : array-like, optional
            Human categories (used by :class:`~ecc_lib.ecc.baselines.HumanLabelClusters` only).

        Returns
        -------
        ndarray, shape (n, n_clusters)
            Rows sum to one.
        """
        self._check_fitted()
        return self._mixture_responsibilities(embeddings, probe, mode)

    def _resolve(self, responsibilities, embeddings, probe, mode, labels) -> np.ndarray:
        if responsibilities is not None:
            r = np.asarray(responsibilities, dtype=float)
            if r.ndim != 2 or r.shape[1] != self.theta_.shape[0]:
                raise ValueError(
                    f"responsibilities must have shape (n, {self.theta_.shape[0]}), got {r.shape}"
                )
            return r
        return self.predict_responsibilities(embeddings, probe, mode, labels)

    def predict_proba(
        self,
        comparisons: Comparisons,
        embeddings: np.ndarray | None = None,
        probe: Comparisons | None = None,
        mode: str = "both",
        labels=None,
        responsibilities: np.ndarray | None = None,
    ) -> np.ndarray:
        """Probability that ``model_b`` beats ``model_a`` for each row of ``comparisons``:
        ``sum_k r_qk sigmoid(theta_kb - theta_ka)``.

        ``comparisons.query`` indexes the new queries (rows of ``embeddings`` / ``responsibilities``).

        Parameters
        ----------
        comparisons : Comparisons
            The comparisons to predict, over the fitted models.
        embeddings : ndarray (n, d), optional
            The queries' embeddings.
        probe : Comparisons, optional
            The queries' probe comparisons.
        mode : {"both", "embedding", "probe"}, default "both"
            Which evidence assigns the queries (see :data:`ecc_lib.ecc.validation.MODES`).
        labels : array-like of str, optional
            Human labels (for estimators that assign by label).
        responsibilities : ndarray (n, K), optional
            Given responsibilities (then the other inputs are not used).

        Returns
        -------
        ndarray of float, shape (len(comparisons),)
        """
        self._check_fitted()
        r = self._resolve(responsibilities, embeddings, probe, mode, labels)
        if comparisons.n_queries != r.shape[0]:
            raise ValueError(
                f"comparisons refer to {comparisons.n_queries} queries, responsibilities have "
                f"{r.shape[0]} rows"
            )
        if tuple(comparisons.models) != tuple(self.models_):
            raise ValueError("comparisons use a different model list than the fitted one")
        a, b = comparisons.model_a, comparisons.model_b
        m = self.theta_.shape[1]
        if m * m < len(a):  # fewer model pairs than comparisons: each sigmoid once, then read
            win = expit(self.theta_[:, :, None] - self.theta_[:, None, :]).reshape(-1, m * m)
            win = win[:, b * m + a]
        else:
            win = expit(self.theta_[:, b] - self.theta_[:, a])
        return np.einsum("nk,kn->n", r[comparisons.query], win)

    def nll(self, comparisons: Comparisons, **kwargs) -> float:
        """Mean negative log-likelihood of ``comparisons`` (keyword arguments as
        :meth:`predict_proba`).

        Parameters
        ----------
        comparisons : Comparisons
            The comparisons to score.
        **kwargs
            How the queries are assigned, as in :meth:`predict_proba`.

        Returns
        -------
        float
        """
        p = self.predict_proba(comparisons, **kwargs)
        return float(comparison_nll(p, comparisons.y).mean())

    def win_matrix(self, responsibilities: np.ndarray) -> np.ndarray:
        """``P[q, i, j] = sum_k r_qk sigmoid(theta_ki - theta_kj)``: probability that model ``i``
        beats model ``j`` on query ``q``.

        Parameters
        ----------
        responsibilities : ndarray (n, K)
            The queries' responsibilities.

        Returns
        -------
        ndarray, shape (n, M, M)
        """
        self._check_fitted()
        r = self._resolve(responsibilities, None, None, "both", None)
        return np.einsum("qk,kij->qij", r, win_probability(self.theta_))

    def routing_scores(
        self,
        embeddings: np.ndarray | None = None,
        probe: Comparisons | None = None,
        mode: str = "both",
        labels=None,
        responsibilities: np.ndarray | None = None,
    ) -> np.ndarray:
        """``sum_k r_qk (theta_km - mean_m' theta_km')``: each model's centred strength per query.

        Parameters
        ----------
        embeddings : ndarray (n, d), optional
            The queries' embeddings.
        probe : Comparisons, optional
            The queries' probe comparisons.
        mode : {"both", "embedding", "probe"}, default "both"
            Which evidence assigns the queries (see :data:`ecc_lib.ecc.validation.MODES`).
        labels : array-like of str, optional
            Human labels (for estimators that assign by label).
        responsibilities : ndarray (n, K), optional
            Given responsibilities (then the other inputs are not used).

        Returns
        -------
        ndarray, shape (n, M)
        """
        self._check_fitted()
        r = self._resolve(responsibilities, embeddings, probe, mode, labels)
        centred = self.theta_ - self.theta_.mean(axis=1, keepdims=True)
        return r @ centred

    def rank_models(self, *args, **kwargs) -> np.ndarray:
        """Model indices per query, best first (by :meth:`routing_scores`).

        Parameters
        ----------
        *args, **kwargs
            As :meth:`routing_scores`.

        Returns
        -------
        ndarray of int, shape (n, M)
        """
        scores = self.routing_scores(*args, **kwargs)
        return np.argsort(-scores, axis=1, kind="stable")

    def route(self, *args, **kwargs) -> np.ndarray:
        """Name of the chosen model per query: ``argmax_m`` of :meth:`routing_scores`.

        Parameters
        ----------
        *args, **kwargs
            As :meth:`routing_scores`.

        Returns
        -------
        ndarray of object, shape (n,)
        """
        scores = self.routing_scores(*args, **kwargs)
        return np.asarray(self.models_, dtype=object)[np.argmax(scores, axis=1)]

    @property
    def n_clusters_(self) -> int:
        """Number of profiles."""
        self._check_fitted()
        return int(self.theta_.shape[0])


__all__ = [
    "ProfileMixture",
    "comparison_nll",
]
