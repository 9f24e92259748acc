"""ECC with its settings chosen by cross-validation on leak-free pairs (method ``ecc_cv``).

Measured on the scored pairs that the probe does not decide, the paper's ECC (K = 30, T = 0.1,
lam = 3) is not a safe default (issue 26): where one quality axis dominates or training queries are
few, thirty clusters at a low temperature overfit and the probe dominates the posterior; where
capability structure exists ECC wins by a wide margin. :class:`ECCCV` (after scikit-learn's
``LassoCV``; ``docs/design.md`` section 8) chooses among the ECC family by K-fold cross-validation on
the *training* queries only:

- the grid holds one global BT model (``K = 1``, so the choice can fall back to it), ECC over the
  cluster counts ``cluster_counts`` x ``temperatures`` x ``lams``, the embedding-only clusters of
  the same ``K`` and temperatures, and, where queries carry categories, one BT per human category
  (``human``) and label-informed ECC (:class:`~ecc_lib.ecc.label_informed.LabelInformedECC`) over
  ``label_weights`` (weight 0 is plain ECC);
- each fold is fitted on the other folds; each held-out training query gets its probe exactly as a
  test query does (its first ``n_probes`` comparisons, read with the same inference), and is scored
  on its other comparisons that share no model with the probe (mean NLL per scored pair, pooled
  over folds);
- the best mean wins; the winner is refitted on all training queries (one ordinary fit).

Warm starts: within a fold, the fits of one family and one ``K`` run along a path over the
temperatures, lams and label weights, each EM starting from the responsibilities of the previous
point (the first from a seeded Dirichlet draw, as :class:`~ecc_lib.ecc.estimator.ECC` does); pair counts,
blocks and the thread pool are built once per fold. Test queries are never seen: ``fit`` only
receives the training queries.
"""

from __future__ import annotations

import logging
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ecc_lib.bradley_terry import pair_counts
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.data.splits import disjoint_from_probe, split_probe, touching_probe
from ecc_lib.ecc.baselines import EmbeddingClusters, GlobalBT, HumanLabelClusters
from ecc_lib.ecc.cv_grid import (
    DEFAULT_PARAM_GRID,
    describe_params,
    expand_grid,
    results_table,
    warm_path,
)
from ecc_lib.ecc.engine import (
    LocalData,
    blas_controller,
    block_rows,
    fit_profiles,
    resolve_n_jobs,
    row_blocks,
    run_em,
)
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.label_informed import LabelInformedECC, category_log_prior
from ecc_lib.ecc.mixture import ProfileMixture, comparison_nll
from ecc_lib.ecc.validation import check_comparisons, check_embeddings, labels_to_str

logger = logging.getLogger(__name__)

DEFAULT_CV = 3
CV_PROBES: tuple[str, ...] = ("first", "leak_free")
DEFAULT_CV_MAX_ITER = 10


class ECCCV(ProfileMixture):
    """The ECC family with its settings chosen by K-fold cross-validation on the training queries.

    A scikit-learn-style estimator (after ``LassoCV``) with the interface of
    :class:`~ecc_lib.ecc.estimator.ECC`: ``fit(embeddings, comparisons, labels=None)``, then
    ``predict_responsibilities``, ``predict_proba``, ``routing_scores`` ... of the refitted best
    candidate. See the module docstring for the grid, the folds and the score.

    Parameters
    ----------
    param_grid : dict or sequence of dict, optional
        Candidate settings (see :func:`expand_grid`); default :data:`DEFAULT_PARAM_GRID`.
    extra_candidates : sequence of dict, default ()
        Further candidates added to the grid (the protocol adds the configured ECC point, so the
        paper's settings are always a candidate).
    cv : int, default 3
        Folds over the training queries (seeded by ``random_state``).
    n_probes : int, default 1
        Probe comparisons of a held-out query (the protocol sets its own number; 0: no probe,
        every held-out pair is scored).
    cv_probe : {"first", "leak_free"}, default "first"
        How a held-out query gets its probe: its first ``n_probes`` comparisons (the paper's
        protocol; its other comparisons are scored where they share no model with the probe), or
        as in the leak-free protocol (:func:`~ecc_lib.protocol.leak_free.make_leak_free`, set by the
        protocol with ``leak_free=True``): its first comparisons are scored-pair-free probes only
        where they name no model of its other comparisons, otherwise the query has no probe; all
        its other comparisons are scored.
    max_iter : int, default 100
        EM steps at most of the refit.
    cv_max_iter : int, default 10
        EM steps at most of each cross-validation fit (they are warm-started along the path and
        usually stop earlier).
    tol : float, default 1e-3
        As :class:`~ecc_lib.ecc.estimator.ECC`.
    n_init : int, default 1
        Restarts of the final refit (the cross-validation fits use one warm-started run).
    dtype : {"float32", "float64"}
    n_jobs : int, optional
    random_state : int, Generator or None
        Seeds the folds, the cold EM starts and the refit.

    Attributes
    ----------
    best_params_ : dict
        The chosen candidate (keys :data:`PARAM_KEYS`).
    best_index_ : int
        Its row in ``cv_results_``.
    best_score_ : float
        Its mean held-out NLL per scored pair.
    cv_results_ : DataFrame
        One row per candidate: ``param_*`` columns, ``split{i}_test_nll``, ``mean_test_nll``,
        ``std_test_nll`` (over folds), ``mean_test_gain`` (percent over the global BT model, same
        pairs), ``rank_test_nll``, ``mean_fit_time``, ``mean_n_iter``.
    best_estimator_ : estimator
        The best candidate refitted on all training queries.
    n_scored_cv_ : int
        Held-out pairs scored per candidate (summed over folds).
    cv_pairs_ : {"disjoint", "all"}
        Which held-out pairs were scored: those disjoint from the probe's models, or all of them
        (with a logged warning) where no pair is disjoint (three models or fewer).
    search_seconds_, refit_seconds_ : float
        Wall time of the cross-validation and of the refit.
    theta_, centroids_, responsibilities_, models_, n_iter_, converged_
        Those of ``best_estimator_``.
    """

    def __init__(
        self,
        param_grid=None,
        extra_candidates=(),
        cv: int = DEFAULT_CV,
        n_probes: int = 1,
        cv_probe: str = "first",
        max_iter: int = 100,
        cv_max_iter: int = DEFAULT_CV_MAX_ITER,
        tol: float = 1e-3,
        n_init: int = 1,
        dtype: str = "float32",
        n_jobs: int | None = None,
        random_state=None,
    ):
        self.param_grid = param_grid
        self.extra_candidates = extra_candidates
        self.cv = cv
        self.n_probes = n_probes
        self.cv_probe = cv_probe
        self.max_iter = max_iter
        self.cv_max_iter = cv_max_iter
        self.tol = tol
        self.n_init = n_init
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.random_state = random_state

    # -- candidates -----------------------------------------------------------------------------

    def _estimator(self, params: dict, random_state=None, n_init: int = 1, max_iter=None):
        """An unfitted estimator of one candidate."""
        family = params["family"]
        alpha = float(params["alpha"])
        if family == "global":
            return GlobalBT(alpha=alpha)
        if family == "human":
            return HumanLabelClusters(alpha=alpha)
        kwargs = dict(
            n_clusters=int(params["n_clusters"]),
            temperature=float(params["temperature"]),
            lam=float(params["lam"]),
            max_iter=int(self.max_iter if max_iter is None else max_iter),
            tol=float(self.tol),
            n_init=int(n_init),
            alpha=alpha,
            dtype=self.dtype,
            n_jobs=self.n_jobs,
            random_state=random_state,
        )
        if family == "ecc":
            return ECC(**kwargs)
        if family == "emb_only":
            return EmbeddingClusters(**kwargs)
        return LabelInformedECC(label_weight=float(params["label_weight"]), **kwargs)

    def _grid(self, has_labels: bool, n_train: int) -> list[dict]:
        grid = DEFAULT_PARAM_GRID if self.param_grid is None else self.param_grid
        grids = [grid] if isinstance(grid, dict) else list(grid)
        extra = [{k: [v] for k, v in c.items()} for c in self.extra_candidates]
        return expand_grid(grids + extra, has_labels=has_labels, max_clusters=n_train)

    # -- fitting --------------------------------------------------------------------------------

    def _validate_params(self) -> None:
        if int(self.cv) < 2:
            raise ValueError(f"cv must be >= 2, got {self.cv}")
        if int(self.n_probes) < 0:
            raise ValueError(f"n_probes must be >= 0, got {self.n_probes}")
        if self.cv_probe not in CV_PROBES:
            raise ValueError(f"cv_probe must be one of {CV_PROBES}, got {self.cv_probe!r}")
        if min(int(self.max_iter), int(self.cv_max_iter), int(self.n_init)) < 1:
            raise ValueError("max_iter, cv_max_iter and n_init must be >= 1")

    def fit(self, embeddings: np.ndarray, comparisons: Comparisons, labels=None) -> ECCCV:
        """Cross-validate the grid on these (training) queries and refit the best candidate.

        Parameters
        ----------
        embeddings : ndarray, shape (n_queries, d)
            Unit embeddings aligned to ``comparisons.query_ids``.
        comparisons : Comparisons
            Training comparisons.
        labels : array-like of str, optional
            Category per query; without them the label families are not candidates.

        Returns
        -------
        self
        """
        self._validate_params()
        check_comparisons(comparisons, "comparisons")
        dtype = np.dtype(self.dtype)
        x = check_embeddings(embeddings, comparisons.n_queries, dtype)
        lab = None if labels is None else labels_to_str(labels, comparisons.n_queries).astype(str)
        n = comparisons.n_queries
        n_folds = int(self.cv)
        if n < 2 * n_folds:
            raise ValueError(f"ECCCV needs at least {2 * n_folds} training queries, got {n}")
        rng = np.random.default_rng(self.random_state)
        fold = rng.permutation(n) % n_folds
        grid = self._grid(lab is not None, int(n - np.bincount(fold).max()))
        path = warm_path(grid)
        # reading 0: pairs disjoint from the probe's models; reading 1: all held-out pairs
        losses = np.zeros((2, len(grid), n_folds))
        scored = np.zeros((2, n_folds), dtype=np.int64)
        seconds = np.zeros((len(grid), n_folds))
        iters = np.zeros((len(grid), n_folds))
        start = time.perf_counter()
        for f in range(n_folds):
            held = fold == f
            self._cv_fold(
                x, comparisons, lab, held, grid, path, rng, f, losses, scored, seconds, iters
            )
        self.search_seconds_ = time.perf_counter() - start
        reading = 0 if scored[0].sum() > 0 else 1
        if scored[1].sum() == 0:
            raise ValueError(
                "cross-validation found no held-out pair to score (each training query needs "
                f"more than {int(self.n_probes)} comparison(s))"
            )
        if reading == 1:
            logger.warning(
                "ecc_cv: no held-out pair is disjoint from its query's probe (%d models); the "
                "settings are chosen on all held-out pairs, which the probe may decide",
                comparisons.n_models,
            )
        self.cv_pairs_ = ("disjoint", "all")[reading]
        self.cv_results_ = results_table(grid, losses[reading], scored[reading], seconds, iters)
        self.best_index_ = int(self.cv_results_["rank_test_nll"].to_numpy().argmin())
        self.best_params_ = dict(grid[self.best_index_])
        self.best_score_ = float(self.cv_results_["mean_test_nll"].iloc[self.best_index_])
        self.n_scored_cv_ = int(scored[reading].sum())
        start = time.perf_counter()
        best = self._estimator(self.best_params_, self.random_state, int(self.n_init))
        best.fit(x, comparisons, labels=lab)
        self.refit_seconds_ = time.perf_counter() - start
        self.best_estimator_ = best
        self.theta_ = best.theta_
        self.centroids_ = best.centroids_
        self.responsibilities_ = best.responsibilities_
        self.models_ = tuple(best.models_)
        self.n_iter_ = int(getattr(best, "n_iter_", 1))
        self.converged_ = bool(getattr(best, "converged_", True))
        self.n_features_in_ = int(x.shape[1])
        logger.info(
            "ecc_cv: %s chosen among %d candidates by %d-fold CV (%.2f s search, %.2f s refit)",
            describe_params(self.best_params_),
            len(grid),
            n_folds,
            self.search_seconds_,
            self.refit_seconds_,
        )
        return self

    def _cv_fold(
        self, x, comparisons, lab, held, grid, path, rng, f, losses, scored, seconds, iters
    ):
        """Fit every candidate on the other folds (warm-started along ``path``), score fold ``f``."""
        train = comparisons.select_queries(~held)
        test = comparisons.select_queries(held)
        probe, rest = split_probe(test, n_probes=int(self.n_probes))
        if int(self.n_probes) == 0:
            probe = None  # embedding (and label) only, as the protocol without a probe
        elif self.cv_probe == "leak_free":
            # as make_leak_free: a probe only where it names no model of the query's scored
            # pairs; the other queries are predicted without one
            clash = np.unique(rest.query[touching_probe(probe, rest)])
            probe = probe.take(~np.isin(probe.query, clash))
        keep = disjoint_from_probe(rest, probe) if probe is not None else np.ones(len(rest), bool)
        scored[:, f] = int(keep.sum()), len(rest)
        x_tr, x_te = x[~held], x[held]
        lab_tr = None if lab is None else lab[~held]
        lab_te = None if lab is None else lab[held]
        dtype = np.dtype(self.dtype)
        counts = pair_counts(train, normalize=True, dtype=dtype)
        n_jobs = resolve_n_jobs(self.n_jobs, x_tr.shape[0])
        blocks = row_blocks(counts.matrix, block_rows(x_tr.shape[0], n_jobs))
        n_jobs = min(n_jobs, len(blocks))
        codes = None
        if lab_tr is not None:
            cats, codes = np.unique(lab_tr, return_inverse=True)
        limit = blas_controller().limit(limits=1, user_api="blas")
        previous: dict = {}
        with ThreadPoolExecutor(n_jobs) if n_jobs > 1 else _Serial() as pool, limit:
            for i in path:
                params = grid[i]
                t0 = time.perf_counter()
                est = self._estimator(params, max_iter=int(self.cv_max_iter))
                family = params["family"]
                if family in ("global", "human"):
                    est.fit(x_tr, train, labels=lab_tr)
                else:
                    key = (family == "emb_only", int(params["n_clusters"]))
                    resp0 = previous.get(key)
                    if resp0 is None:
                        k = int(params["n_clusters"])
                        resp0 = rng.dirichlet(np.ones(k), size=x_tr.shape[0]).astype(dtype)
                    est = _warm_fit(
                        est,
                        x_tr,
                        train,
                        counts,
                        blocks,
                        pool,
                        resp0,
                        codes,
                        dtype,
                        None if codes is None else len(cats),
                    )
                    if codes is not None and family == "ecc_labels":
                        est.categories_ = cats
                    previous[key] = est.responsibilities_
                seconds[i, f] = time.perf_counter() - t0
                iters[i, f] = getattr(est, "n_iter_", 1)
                if len(rest) == 0:
                    continue
                p = est.predict_proba(rest, embeddings=x_te, probe=probe, labels=lab_te)
                nll = comparison_nll(p, rest.y)
                losses[:, i, f] = float(nll[keep].sum()), float(nll.sum())

    # -- inference (the refitted best candidate's) ----------------------------------------------

    def _check_fitted(self) -> None:
        check_is_fitted(self, "best_estimator_")

    @property
    def temperature(self) -> float | None:
        """Temperature of the chosen candidate (None for the global and human-label models or
        before ``fit``)."""
        best = getattr(self, "best_estimator_", None)
        return getattr(best, "temperature", None) if isinstance(best, ECC) else None

    @property
    def lam(self) -> float | None:
        """Cosine weight of the chosen candidate (None where it has none or before ``fit``)."""
        best = getattr(self, "best_estimator_", None)
        return getattr(best, "lam", None) if isinstance(best, ECC) else None

    def predict_responsibilities(self, embeddings=None, probe=None, mode="both", labels=None):
        """Soft memberships of new queries under the chosen candidate.

        Parameters
        ----------
        embeddings, probe, mode, labels
            As :meth:`ecc_lib.ecc.estimator.ECC.predict_responsibilities` (labels are read by the label
            families).

        Returns
        -------
        ndarray, shape (n, n_clusters of the chosen candidate)
        """
        self._check_fitted()
        return self.best_estimator_.predict_responsibilities(embeddings, probe, mode, labels=labels)


class _Serial:
    """Stands in for a thread pool with one worker (no threads: small folds are faster so)."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    @staticmethod
    def map(fn, items):
        return map(fn, items)


def _warm_fit(est, x, comparisons, counts, blocks, pool, resp0, codes, dtype, n_categories):
    """Fit an ECC-family estimator by one EM run from ``resp0`` (the warm start), reusing the
    fold's pair counts, blocks and thread pool; the same maths as ``est.fit``."""
    if isinstance(est, LabelInformedECC):
        est._weight = float(est.label_weight)
        est._codes_fit = (codes, n_categories)
    run = run_em(
        LocalData(x, blocks, np.array(resp0, dtype=dtype, copy=True), pool),
        counts,
        n_queries=x.shape[0],
        **est._em_params(dtype),
        prior_update=est._prior_update(None, x.shape[0], dtype),
    )
    est._store(run, comparisons, x)
    if isinstance(est, EmbeddingClusters):
        est.theta_ = fit_profiles(
            comparisons,
            est.responsibilities_.astype(dtype),
            est.alpha,
            theta0=est.theta_,
            dtype=dtype,
        )
    if isinstance(est, LabelInformedECC):
        est.label_weight_ = float(est.label_weight)
        est.cv_table_, est.cv_scores_ = {}, {}
        est.log_prior_ = category_log_prior(
            est.responsibilities_,
            codes,
            n_categories,
            smoothing=float(est.smoothing),
            prior=est.prior,
        )
    return est


__all__ = [
    "ECCCV",
]
