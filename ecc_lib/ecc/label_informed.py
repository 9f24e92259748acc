"""Label-informed ECC: human categories as a learned prior over capability clusters.

Beyond the ECC paper (``docs/design.md`` section 5). Where queries carry a human category ``c(q)``
(benchmark, subject), the category enters ECC's responsibilities through a per-category
distribution over clusters ``pi_c``, learned in the M-step:

    r_qk = softmax_k((l_qk + lam * cos_qk) / T + w * log rho_{c(q), k})              (E-step)
    pi_ck = (sum_{q in c} r_qk + a) / (n_c + K a),  pi_k = (sum_q r_qk + a) / (n + K a)  (M-step)

with ``rho_ck = pi_ck`` (``prior="absolute"``, the default: the Bayesian prior ``P(k | c)``
replacing ECC's implicit uniform prior over clusters) or ``rho_ck = pi_ck / pi_k``
(``prior="relative"``: the category's likelihood ratio, a pointwise mutual information between
category and cluster, which keeps ECC's uniform prior, so a category that says nothing about the
clusters adds exactly nothing). With labels that carry no information, the absolute form still
adds the overall cluster proportions ``pi_k`` (mixing weights that ECC lacks); the relative form
adds nothing. With ``prior="absolute"`` and ``a -> 0`` the M-step maximises the EM objective of
:mod:`ecc_lib.ecc.estimator`; the relative form does not maximise its ``- log pi_k`` part, so its recorded
objective need not be monotone. ``w = 0`` is plain ECC. ``w`` is chosen by K-fold cross-validation on
the *training* queries only: each fold is fitted on the other folds and scored the way the
protocol scores test queries (the first ``n_probes`` comparisons of a held-out query are its
probe, the others are scored by their NLL). With labels that carry no information, ``pi_c`` is
close to the overall cluster proportions for every category, and cross-validation picks a small
weight, so the method stays close to ECC.

At prediction time a query whose category was seen in training gets the prior of its category;
any other query (unknown or absent label, or ``mode="probe"``) gets no prior (plain ECC).
"""

from __future__ import annotations

import logging

import numpy as np
import scipy.sparse as sp

from ecc_lib import defaults
from ecc_lib.bradley_terry import DEFAULT_ALPHA
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.data.splits import disjoint_from_probe, split_probe
from ecc_lib.ecc.backends import data_backend, in_memory_fits, is_backend_array
from ecc_lib.ecc.estimator import CENTROID_TOL, ECC, KL_TOL, OBJECTIVE_PATIENCE, OBJECTIVE_TOL
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.ecc.validation import labels_to_str, log_missing_labels

logger = logging.getLogger(__name__)

DEFAULT_LABEL_WEIGHTS: tuple[float, ...] = (0.0, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
DEFAULT_CV_FOLDS = 3
CV_PAIRS = ("all", "disjoint")
PRIOR_FORMS = ("absolute", "relative")


def category_log_prior(
    responsibilities: np.ndarray,
    codes: np.ndarray,
    n_categories: int,
    *,
    smoothing: float = 1.0,
    prior: str = "absolute",
) -> np.ndarray:
    """Per-category log prior over clusters from soft memberships.

    Parameters
    ----------
    responsibilities : ndarray, shape (n, K)
    codes : ndarray of int, shape (n,)
        Category code of each row in ``[0, n_categories)``.
    n_categories : int
    smoothing : float, default 1.0
        Pseudo-count ``a`` added to every (category, cluster) cell.
    prior : {"absolute", "relative"}, default "absolute"

    Returns
    -------
    ndarray, shape (n_categories, K)
        ``log pi_ck`` (absolute) or ``log pi_ck - log pi_k`` (relative), with
        ``pi_ck = (sum_{q in c} r_qk + a) / (n_c + K a)`` and
        ``pi_k = (sum_q r_qk + a) / (n + K a)``.
    """
    if prior not in PRIOR_FORMS:
        raise ValueError(f"prior must be one of {PRIOR_FORMS}, got {prior!r}")
    r = np.asarray(responsibilities, dtype=float)
    sums = np.asarray(_category_indicator(np.asarray(codes), n_categories) @ r)
    return _log_prior(r, sums, smoothing, prior)


def _category_indicator(codes: np.ndarray, n_categories: int) -> sp.csr_matrix:
    """``(n_categories, n)`` 0/1 matrix of the rows of each category, columns in row order: its
    product with the responsibilities adds them up in row order, once per fit instead of once per EM
    step."""
    n = len(codes)
    return sp.csr_matrix((np.ones(n), (codes, np.arange(n))), shape=(n_categories, n))


def _log_prior(r: np.ndarray, sums: np.ndarray, smoothing: float, prior: str) -> np.ndarray:
    """:func:`category_log_prior` from the per-category sums ``sums`` of ``r`` (updated in place)."""
    overall = r.sum(axis=0) + smoothing
    sums += smoothing
    log_pi = np.log(sums) - np.log(sums.sum(axis=1, keepdims=True))
    if prior == "absolute":
        return log_pi
    return log_pi - (np.log(overall) - np.log(overall.sum()))


class LabelInformedECC(ECC):
    """ECC with a learned per-category prior over clusters (method ``ecc_labels``).

    Parameters
    ----------
    label_weight : float or "cv", default "cv"
        Weight ``w`` of the category log prior; ``"cv"`` chooses it among ``label_weights`` by
        cross-validation on the training queries.
    label_weights : tuple of float
        Candidate weights for ``label_weight="cv"``.
    cv_folds : int, default 3
    cv_probes : int, default 1
        Probe comparisons of a held-out query in the cross-validation score.
    cv_pairs : {"disjoint", "all"}, default "disjoint"
        Held-out pairs of the cross-validation score: only those disjoint from the probe's
        models (the leak-free reading, the default since issue 23: on pairs the probe decides,
        the weight is chosen for what the probe reveals), or all pairs after the probe. Both
        readings' choices are kept in ``label_weight_by_reading_``.
    smoothing : float, default 1.0
        Dirichlet pseudo-count of the prior (see :func:`category_log_prior`).
    prior : {"absolute", "relative"}, default "absolute"
        ``log pi_ck`` or ``log pi_ck - log pi_k`` (see the module docstring).
    n_clusters, lam, temperature, max_iter, tol, n_init, alpha, centroid_tol, objective_tol,
    patience, dtype, n_jobs, random_state
        As :class:`ecc_lib.ecc.estimator.ECC`.

    Attributes
    ----------
    label_weight_ : float
        The weight used.
    cv_scores_ : dict
        Mean held-out NLL per candidate weight on the ``cv_pairs`` reading (empty when the
        weight was given).
    cv_table_ : dict
        The same for both readings, ``{"all": {...}, "disjoint": {...}}``.
    cv_pairs_used_ : str or None
        The reading the weight was chosen on: ``cv_pairs``, or ``"all"`` where no held-out pair
        is disjoint from the probe (three models); None when the weight was given.
    label_weight_by_reading_ : dict
        The weight each reading would choose, ``{"all": w, "disjoint": w}`` (empty when the
        weight was given).
    categories_ : ndarray of str
        Categories seen in training, sorted.
    log_prior_ : ndarray (n_categories, K)
        Learned ``log rho`` (see ``prior``).
    Other attributes as :class:`ecc_lib.ecc.estimator.ECC`.
    """

    def __init__(
        self,
        n_clusters: int = defaults.N_CLUSTERS,
        lam: float = defaults.LAM,
        temperature: float = defaults.TEMPERATURE,
        label_weight: float | str = "cv",
        label_weights: tuple[float, ...] = DEFAULT_LABEL_WEIGHTS,
        cv_folds: int = DEFAULT_CV_FOLDS,
        cv_probes: int = 1,
        cv_pairs: str = "disjoint",
        smoothing: float = 1.0,
        prior: str = "absolute",
        max_iter: int = 100,
        tol: float = KL_TOL,
        n_init: int = 1,
        alpha: float = DEFAULT_ALPHA,
        centroid_tol: float = CENTROID_TOL,
        objective_tol: float = OBJECTIVE_TOL,
        patience: int = OBJECTIVE_PATIENCE,
        dtype: str = "float32",
        n_jobs: int | None = None,
        random_state=None,
    ):
        params = locals()
        super().__init__(**{name: params[name] for name in ECC._get_param_names()})
        self.label_weight = label_weight
        self.label_weights = label_weights
        self.cv_folds = cv_folds
        self.cv_probes = cv_probes
        self.cv_pairs = cv_pairs
        self.smoothing = smoothing
        self.prior = prior

    # -- hooks into the EM of ECC -------------------------------------------------------------

    def _prior_update(self, labels, n_rows: int, dtype):
        weight = float(self._weight)
        if weight == 0.0:
            return None
        codes, n_categories = self._codes_fit
        smoothing = float(self.smoothing)
        form = self.prior
        indicator = _category_indicator(codes, n_categories)

        def update(resp: np.ndarray) -> np.ndarray:
            r = np.asarray(resp, dtype=float)
            log_pi = _log_prior(r, np.asarray(indicator @ r), smoothing, form)
            return (weight * log_pi[codes]).astype(dtype)

        return update

    # -- fitting --------------------------------------------------------------------------------

    def _validate_params(self) -> None:
        super()._validate_params()
        if isinstance(self.label_weight, str):
            if self.label_weight != "cv":
                raise ValueError(
                    f"label_weight must be a number >= 0 or 'cv', got {self.label_weight!r}"
                )
            if len(self.label_weights) == 0 or min(self.label_weights) < 0:
                raise ValueError("label_weights must be a non-empty tuple of numbers >= 0")
            if int(self.cv_folds) < 2:
                raise ValueError(f"cv_folds must be >= 2, got {self.cv_folds}")
        elif not float(self.label_weight) >= 0:
            raise ValueError(f"label_weight must be >= 0, got {self.label_weight}")
        if self.cv_pairs not in CV_PAIRS:
            raise ValueError(f"cv_pairs must be one of {CV_PAIRS}, got {self.cv_pairs!r}")
        if self.prior not in PRIOR_FORMS:
            raise ValueError(f"prior must be one of {PRIOR_FORMS}, got {self.prior!r}")
        if not float(self.smoothing) > 0:
            raise ValueError(f"smoothing must be > 0, got {self.smoothing}")

    def _fit_labels(
        self, x, comparisons, cats: np.ndarray, codes: np.ndarray, weight: float
    ) -> LabelInformedECC:
        """ECC's fit with the category prior of weight ``weight`` (``cats, codes``: the queries'
        categories as :func:`numpy.unique` with ``return_inverse`` gives them), then the learned
        prior (what :meth:`fit` does once the weight is known)."""
        self._weight = weight
        self._codes_fit = (codes, len(cats))
        super().fit(x, comparisons)
        self.label_weight_ = float(weight)
        self.categories_ = cats
        self.log_prior_ = category_log_prior(
            self.responsibilities_,
            codes,
            len(cats),
            smoothing=float(self.smoothing),
            prior=self.prior,
        )
        return self

    def _cross_validate(self, x, comparisons: Comparisons, lab: np.ndarray) -> dict:
        """Mean held-out NLL per reading (``"all"``, ``"disjoint"``) and candidate weight
        (folds over training queries, seeded)."""
        rng = np.random.default_rng(self.random_state)
        n = comparisons.n_queries
        fold = rng.permutation(n) % int(self.cv_folds)
        losses = {c: {float(w): 0.0 for w in self.label_weights} for c in CV_PAIRS}
        n_scored = dict.fromkeys(CV_PAIRS, 0)
        # a held-out query gets its probe as a test query would; with one pair per query (two
        # models) there is no probe, as in the protocol (single_pair_settings)
        max_pairs = int(comparisons.pairs_per_query().max()) if len(comparisons) else 0
        n_probes = min(int(self.cv_probes), max(max_pairs - 1, 0))
        for f in range(int(self.cv_folds)):
            held = fold == f
            train, test = comparisons.select_queries(~held), comparisons.select_queries(held)
            probe, scored = split_probe(test, n_probes=n_probes)
            if n_probes == 0:
                probe = None
            if len(scored) == 0:
                continue
            keep = (
                np.ones(len(scored), dtype=bool)
                if probe is None
                else disjoint_from_probe(scored, probe)
            )
            n_scored["all"] += len(scored)
            n_scored["disjoint"] += int(keep.sum())
            cats, codes = np.unique(lab[~held], return_inverse=True)
            for w in losses["all"]:
                model = LabelInformedECC(**{**self.get_params(), "label_weight": w})
                model._fit_labels(x[~held], train, cats, codes, w)
                p = model.predict_proba(scored, embeddings=x[held], probe=probe, labels=lab[held])
                nll = comparison_nll(p, scored.y)
                losses["all"][w] += float(nll.sum())
                losses["disjoint"][w] += float(nll[keep].sum())
        if n_scored["all"] == 0:
            raise ValueError("cross-validation of label_weight found no scored comparisons")
        return {
            c: {w: (v / n_scored[c] if n_scored[c] else float("nan")) for w, v in losses[c].items()}
            for c in CV_PAIRS
        }

    def fit(self, embeddings: np.ndarray, comparisons: Comparisons, labels=None):
        """Fit clusters, profiles and the category prior (choosing its weight when ``"cv"``).

        Parameters
        ----------
        embeddings : ndarray, shape (n_queries, d)
        comparisons : Comparisons
        labels : array-like of str, shape (n_queries,)
            Category of each training query (missing values form the category ``"<missing>"``).

        Returns
        -------
        self
        """
        self._validate_params()
        if labels is None:
            raise ValueError("LabelInformedECC.fit needs labels (one category per query)")
        if data_backend(embeddings) is not None:
            if is_backend_array(embeddings):
                raise ValueError(
                    "LabelInformedECC fits in memory only (its prior is not partitioned); "
                    "pass the embeddings as a numpy array"
                )
            logger.info("ecc_labels fits in memory: its category prior is not partitioned")
            with in_memory_fits():
                return self.fit(embeddings, comparisons, labels)
        lab = labels_to_str(labels, comparisons.n_queries).astype(str)
        x = np.asarray(embeddings)
        if self.label_weight == "cv":
            self.cv_table_ = self._cross_validate(x, comparisons, lab)
            reading = self.cv_pairs
            if not all(np.isfinite(list(self.cv_table_[reading].values()))):
                # e.g. three models: every held-out pair touches the probe's two models
                logger.warning(
                    "ecc_labels: no held-out pair is disjoint from the probe; label weight "
                    "chosen on all held-out pairs"
                )
                reading = "all"
            self.cv_pairs_used_ = reading
            self.cv_scores_ = self.cv_table_[reading]
            self.label_weight_by_reading_ = {
                reading: float(min(table, key=lambda w, t=table: (t[w], w)))
                for reading, table in self.cv_table_.items()
                if all(np.isfinite(list(table.values())))
            }
            weight = min(self.cv_scores_, key=lambda w: (self.cv_scores_[w], w))
            logger.info("ecc_labels: label weight %.3g chosen by %d-fold CV", weight, self.cv_folds)
        else:
            self.cv_table_ = {}
            self.cv_scores_ = {}
            self.label_weight_by_reading_ = {}
            self.cv_pairs_used_ = None
            weight = float(self.label_weight)
        cats, codes = np.unique(lab, return_inverse=True)
        self._fit_labels(x, comparisons, cats, codes, weight)
        log_missing_labels(lab, "ecc_labels")
        return self

    # -- inference ------------------------------------------------------------------------------

    def query_log_prior(self, labels, n: int) -> np.ndarray:
        """``w * log rho_{c(q)}`` per query, zero rows for categories not seen in training.

        Parameters
        ----------
        labels : array-like of str or None, shape (n,)
        n : int

        Returns
        -------
        ndarray, shape (n, K)
        """
        self._check_fitted()
        out = np.zeros((n, self.theta_.shape[0]))
        if labels is None or self.label_weight_ == 0.0:
            return out
        lab = labels_to_str(labels, n).astype(str)
        pos = np.clip(np.searchsorted(self.categories_, lab), 0, len(self.categories_) - 1)
        known = self.categories_[pos] == lab
        out[known] = self.label_weight_ * self.log_prior_[pos[known]]
        return out

    def predict_responsibilities(self, embeddings=None, probe=None, mode="both", labels=None):
        """``softmax((l^probe + lam cos) / T + w log rho_{c(q)})`` for new queries.

        Parameters
        ----------
        embeddings : ndarray, shape (n, d), optional
        probe : Comparisons, optional
        mode : {"both", "embedding", "probe"}
            The category prior is used in modes ``"both"`` and ``"embedding"``.
        labels : array-like of str, optional
            Categories of the new queries.

        Returns
        -------
        ndarray, shape (n, n_clusters)
        """
        self._check_fitted()
        n = self._n_rows(embeddings, probe, labels)
        prior = self.query_log_prior(labels if mode != "probe" else None, n)
        return self._mixture_responsibilities(embeddings, probe, mode, log_prior=prior)


__all__ = [
    "LabelInformedECC",
]
