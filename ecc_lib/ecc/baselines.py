"""The baselines of ECC, behind the same interface as :class:`ecc_lib.ecc.estimator.ECC`.

The ECC paper (Wu, Silwal & Zhang 2026, arXiv 2605.17110; ``docs/design.md`` section 3) compares ECC
with one global BT model (:class:`GlobalBT`, the reference of the ranking quality gain),
embedding-only clusters (:class:`EmbeddingClusters`: soft spherical k-means on embeddings, then one
weighted BT per cluster), comparison-only clusters (:class:`ComparisonOnlyECC`: ECC without the
cosine term) and human labels (:class:`HumanLabelClusters`: one BT per human category, hard
assignment). All share the inference of :mod:`ecc_lib.ecc.estimator` (responsibilities, win probabilities,
routing scores).
"""

from __future__ import annotations

import numpy as np

from ecc_lib import defaults
from ecc_lib.bradley_terry import DEFAULT_ALPHA
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.ecc.engine import blas_controller, fit_profiles, normalise_rows
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import ProfileMixture
from ecc_lib.ecc.validation import (
    check_comparisons,
    check_embeddings,
    check_mode,
    labels_to_str,
    log_missing_labels,
    with_defaults,
)


class ComparisonOnlyECC(ECC):
    """ECC without the cosine term (``lam = 0`` in fit and inference): clusters from comparison
    evidence alone. Centroids are still computed (weighted mean embeddings) but unused; with
    ``mode="embedding"`` responsibilities are uniform.

    Parameters
    ----------
    n_clusters, temperature, max_iter, tol, n_init, alpha, centroid_tol, objective_tol, patience, dtype, n_jobs, random_state
        As in :class:`~ecc_lib.ecc.estimator.ECC`.
    lam : float, default 0.0
        Must stay 0 (a :class:`~ecc_lib.ecc.estimator.ECC` with a cosine term is the other method).
    """

    # ECC's parameters with ``lam = 0`` by default (scikit-learn reads them from the signature)
    __init__ = with_defaults(ECC.__init__, lam=0.0)

    def _validate_params(self) -> None:
        super()._validate_params()
        if self.lam != 0:
            raise ValueError("ComparisonOnlyECC has no cosine term: lam must be 0 (use ECC)")


class EmbeddingClusters(ECC):
    """Embedding-only baseline: soft spherical k-means (``r ~ exp(lam cos / T)``), then one
    weighted BT profile per cluster (weights ``r_qk / N_q``, same prior as ECC).

    The clustering ignores comparisons; inference uses the same formula as ECC (cosine term and,
    in ``"probe"``/``"both"`` modes, the probe evidence under these profiles). The recorded
    objective is ``sum_q T logsumexp_k(lam cos_qk / T)``, non-decreasing.
    """

    _use_evidence = False

    def fit(self, embeddings: np.ndarray, comparisons: Comparisons, labels=None):
        super().fit(embeddings, comparisons, labels)
        return self.fit_final_profiles(comparisons)

    def fit_final_profiles(self, comparisons: Comparisons) -> EmbeddingClusters:
        """Fit the BT profiles of the fitted responsibilities (the clustering loop fits none:
        they do not feed its E-step), starting from ``theta_``.

        Parameters
        ----------
        comparisons : Comparisons
            The comparisons the clustering was fitted on.

        Returns
        -------
        self
        """
        dtype = np.dtype(self.dtype)
        self.theta_ = fit_profiles(
            comparisons,
            self.responsibilities_.astype(dtype),
            self.alpha,
            theta0=self.theta_,
            dtype=dtype,
        )
        return self


class GlobalBT(ProfileMixture):
    """One BT profile for all queries (the reference of the ranking quality gain).

    Parameters
    ----------
    alpha : float, default 1.0
        BT prior precision. Comparisons are weighted ``1 / N_q`` like in ECC, so every query
        counts once.
    """

    def __init__(self, alpha: float = DEFAULT_ALPHA):
        self.alpha = alpha

    def fit(self, embeddings, comparisons: Comparisons, labels=None) -> GlobalBT:
        """Fit the profile; ``embeddings`` and ``labels`` are ignored (may be None).

        Parameters
        ----------
        embeddings : ndarray, shape (n_queries, d) or None
            Query embeddings aligned to ``comparisons.query_ids`` (ignored; may be None).
        comparisons : Comparisons
            Training comparisons.
        labels : array-like, optional
            Ignored.

        Returns
        -------
        self
        """
        check_comparisons(comparisons, "comparisons")
        if embeddings is not None and np.shape(embeddings)[0] != comparisons.n_queries:
            check_embeddings(embeddings, comparisons.n_queries, np.float32)
        self.theta_ = fit_profiles(comparisons, np.ones((comparisons.n_queries, 1)), self.alpha)
        self.centroids_ = None
        self.responsibilities_ = np.ones((comparisons.n_queries, 1))
        self.models_ = tuple(comparisons.models)
        self.converged_ = True
        self.n_iter_ = 1
        return self

    def predict_responsibilities(self, embeddings=None, probe=None, mode="both", labels=None):
        """All ones, shape ``(n, 1)``.

        Parameters
        ----------
        embeddings, probe, labels : optional
            Of the new queries; they only say how many there are.
        mode : {"both", "embedding", "probe"}
            Checked, otherwise ignored.

        Returns
        -------
        ndarray, shape (n, 1)
        """
        self._check_fitted()
        check_mode(mode)
        return np.ones((self._n_rows(embeddings, probe, labels), 1))


class HumanLabelClusters(ProfileMixture):
    """One BT profile per human category (hard assignment), e.g. benchmark or subject labels.

    Parameters
    ----------
    alpha : float, default 1.0
        BT prior precision.
    lam, temperature : float
        Used only for queries whose label is unknown or absent at prediction time: they get
        ``softmax((l^probe + lam cos(e_q, c_k)) / T)`` with ``c_k`` the mean embedding of category
        ``k``.

    Attributes
    ----------
    categories_ : ndarray of str
        Category of each profile (missing labels form their own category ``"<missing>"``).
    theta_, centroids_, responsibilities_, models_
    """

    def __init__(
        self,
        alpha: float = DEFAULT_ALPHA,
        lam: float = defaults.LAM,
        temperature: float = defaults.TEMPERATURE,
    ):
        self.alpha = alpha
        self.lam = lam
        self.temperature = temperature

    def fit(self, embeddings, comparisons: Comparisons, labels=None) -> HumanLabelClusters:
        """Fit one profile per category of ``labels`` (aligned to ``comparisons.query_ids``).

        Parameters
        ----------
        embeddings : ndarray, shape (n_queries, d) or None
            Query embeddings aligned to ``comparisons.query_ids`` (optional; they give the
            category centroids).
        comparisons : Comparisons
            Training comparisons.
        labels : array-like, optional
            Category per query (required).

        Returns
        -------
        self
        """
        check_comparisons(comparisons, "comparisons")
        if labels is None:
            raise ValueError("HumanLabelClusters.fit needs labels (one category per query)")
        n = comparisons.n_queries
        lab = labels_to_str(labels, n)
        categories, index = np.unique(lab.astype(str), return_inverse=True)
        resp = np.zeros((n, len(categories)))
        resp[np.arange(n), index] = 1.0
        if embeddings is not None:
            x = check_embeddings(embeddings, n, np.float32)
            # one BLAS thread: a small product, which a shared machine's BLAS threads slow down
            with blas_controller().limit(limits=1, user_api="blas"):
                self.centroids_ = normalise_rows(resp.T @ x.astype(float))
        else:
            self.centroids_ = None
        self.categories_ = categories
        self.responsibilities_ = resp
        self.models_ = tuple(comparisons.models)
        self.converged_ = True
        self.n_iter_ = 1
        log_missing_labels(lab, "HumanLabelClusters")
        return self.fit_final_profiles(comparisons)

    def fit_final_profiles(self, comparisons: Comparisons) -> HumanLabelClusters:
        """Fit one BT profile per category of the fitted hard assignment (the last step of
        :meth:`fit`, the only one that reads ``alpha``).

        Parameters
        ----------
        comparisons : Comparisons
            The comparisons the categories were read for.

        Returns
        -------
        self
        """
        self.theta_ = fit_profiles(comparisons, self.responsibilities_, self.alpha)
        return self

    def predict_responsibilities(self, embeddings=None, probe=None, mode="both", labels=None):
        """One-hot rows for queries with a known label (modes ``"both"`` and ``"embedding"``);
        the ECC formula over category profiles otherwise (always in mode ``"probe"``).

        Parameters
        ----------
        embeddings : ndarray, optional
            Embeddings of the new queries.
        probe : Comparisons, optional
            Probe comparisons of the new queries.
        mode : {"both", "embedding", "probe"}
            Which evidence to use.
        labels : array-like, optional
            Categories of the new queries.

        Returns
        -------
        ndarray, shape (n, n_categories)
            Rows sum to one.
        """
        self._check_fitted()
        check_mode(mode)
        n = self._n_rows(embeddings, probe, labels)
        known = np.zeros(n, dtype=bool)
        out = np.zeros((n, len(self.categories_)))
        if labels is not None and mode != "probe":
            lab = labels_to_str(labels, n).astype(str)
            pos = np.searchsorted(self.categories_, lab)
            pos = np.clip(pos, 0, len(self.categories_) - 1)
            known = self.categories_[pos] == lab
            out[np.flatnonzero(known), pos[known]] = 1.0
        if not known.all():
            have_emb = embeddings is not None and self.centroids_ is not None
            if mode == "probe" or have_emb or probe is not None:
                fallback = self._mixture_responsibilities(
                    embeddings if self.centroids_ is not None else None, probe, mode
                )
            else:
                weights = self.responsibilities_.sum(axis=0)
                fallback = np.broadcast_to(weights / weights.sum(), out.shape)
            out[~known] = fallback[~known]
        return out


__all__: list[str] = []
