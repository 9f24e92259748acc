"""Evidence-calibrated clustering (ECC) as a scikit-learn-style estimator.

ECC (Wu, Silwal & Zhang 2026, "Capturing LLM Capabilities via Evidence-Calibrated Query Clustering",
arXiv 2605.17110; restated precisely in ``docs/design.md`` section 3) groups queries by the capability
they demand. Cluster ``k`` has a unit centroid ``c_k`` and Bradley-Terry scores ``theta_k`` over
the ``M`` models. With ``l_qk`` the per-comparison average log-likelihood of query ``q``'s
comparisons under profile ``k`` (the *evidence*) and ``cos_qk = e_q . c_k``:

    r_qk = softmax_k((l_qk + lam * cos_qk) / T)                                         (E-step)
    theta_k = argmin sum_q (r_qk / N_q) sum_{q's comparisons} -log P_k + 0.5 ||theta_k||^2
    c_k = normalise(sum_q r_qk e_q)                                                     (M-step)

The recorded objective is

    J = sum_q T * logsumexp_k((l_qk + lam * cos_qk) / T) - 0.5 * alpha * sum_k ||theta_k||^2,

(``alpha = 1`` is the BT prior of the M-step). It is provably non-decreasing: with
``G(r, Theta) = sum_q [sum_k r_qk (l_qk + lam cos_qk) + T H(r_q)] - 0.5 alpha sum_k ||theta_k||^2``,
the E-step maximises ``G`` over ``r`` (Gibbs variational principle, giving ``G = J``), the centroid
update maximises it over ``c`` exactly, and the Newton BT fit (warm-started, with a line search)
never increases the penalised BT loss, i.e. never decreases ``G``. The logsumexp term alone (without
the prior) is *not* monotone, because the M-step trades likelihood against the prior.

Speed: with binary outcomes a comparison's log-likelihood depends only on (winner, loser), so the
data enter through a sparse ``(n_queries, U)`` matrix ``C`` of win counts divided by ``N_q``, one
column per ordered (winner, loser) pair that occurs in the data (``U <= 2 x comparisons``, never
``M^2``; :func:`ecc_lib.bradley_terry.pair_counts`). The evidence is ``C @ log P`` (``U x K``), the
M-step statistics are ``C^T R`` and ``R^T X``, and the ``K`` BT fits are one batched solve on the
observed pairs (:func:`ecc_lib.bradley_terry.fit_bt_pairs`: dense Newton for up to 128 models,
Newton-CG with Hessian-vector products above).
The E-step runs over blocks of rows so that the dense float32 products ``X @ C^T`` and ``R^T X``,
the sparse products and the softmax of a block share the cache; nothing loops over pairs or
queries in Python.

The baselines (global BT, embedding-only, comparison-only, human labels) share ECC's inference
(:class:`ecc_lib.ecc.mixture.ProfileMixture`) and the EM engine of :mod:`ecc_lib.ecc.engine`; they
are in :mod:`ecc_lib.ecc.baselines`. Input checks are in :mod:`ecc_lib.ecc.validation`.
"""

from __future__ import annotations

import logging
import math
import warnings

import numpy as np
from sklearn.exceptions import ConvergenceWarning

from ecc_lib import defaults
from ecc_lib.bradley_terry import (
    DEFAULT_ALPHA,
    pair_counts,
)
from ecc_lib.data.comparisons import Comparisons
from ecc_lib.ecc.backends import data_backend
from ecc_lib.ecc.engine import (
    EMRun,
    LocalData,
    blas_controller,
    block_rows,
    executor,
    resolve_n_jobs,
    row_blocks,
    run_em,
)
from ecc_lib.ecc.mixture import ProfileMixture, evidence
from ecc_lib.ecc.validation import check_comparisons, check_embeddings

logger = logging.getLogger(__name__)

KL_TOL = 1e-3
CENTROID_TOL = 1e-4
OBJECTIVE_TOL = 1e-4
OBJECTIVE_PATIENCE = 5


# --------------------------------------------------------------------------------------------------
# shared inference interface


# --------------------------------------------------------------------------------------------------
# ECC


def check_cluster_settings(n_clusters: int, lam: float, temperature: float) -> None:
    """The one check of ECC's settings (the estimator's fit, the bench and the command line).

    Parameters
    ----------
    n_clusters : int
        Must be >= 1.
    lam : float
        Must be a finite number >= 0.
    temperature : float
        Must be a finite number > 0 (``inf`` gives uniform memberships, ``nan`` no fit).

    Raises
    ------
    ValueError
        Naming the first setting out of range.
    """
    if int(n_clusters) < 1:
        raise ValueError(f"n_clusters must be >= 1, got {n_clusters}")
    if not (math.isfinite(float(temperature)) and float(temperature) > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature}")
    if not (math.isfinite(float(lam)) and float(lam) >= 0):
        raise ValueError(f"lam must be a finite number >= 0, got {lam}")


class ECC(ProfileMixture):
    """Evidence-calibrated clustering of queries with Bradley-Terry capability profiles.

    A scikit-learn estimator (``get_params``/``set_params``, ``clone``) with one difference from
    the usual ``fit(X, y)``: :meth:`fit` takes the query embeddings and a
    :class:`~ecc_lib.data.comparisons.Comparisons` object (the pairwise outcomes of each query, built
    by :func:`~ecc_lib.data.comparisons.make_comparisons`), not a target vector, because the evidence
    is a variable number of comparisons per query. The scikit-learn checks that feed ``fit``
    arrays (``check_estimator``'s fitting checks) therefore do not apply; the parameter, clone
    and unfitted checks pass (``tests/test_estimator_checks.py``). Before ``fit`` every method
    raises :class:`~sklearn.exceptions.NotFittedError`.

    Parameters
    ----------
    n_clusters : int, default 30
    lam : float, default 3.0
        Weight of the cosine (embedding) term against the comparison evidence.
    temperature : float, default 0.1
    max_iter : int, default 100
        EM steps at most per initialisation.
    tol : float, default 1e-3
        Stop when the mean KL(r_old || r_new) is below ``tol`` and the largest centroid shift is
        below ``centroid_tol``; or when the relative objective change stays below
        ``objective_tol`` for ``patience`` consecutive steps.
    n_init : int, default 1
        Restarts from independent Dirichlet(1) responsibilities; the best objective wins.
    alpha : float, default 1.0
        BT prior precision (``0.5 * alpha * ||theta_k||^2``).
    centroid_tol, objective_tol : float
    patience : int
    dtype : {"float32", "float64"}
        Precision of embeddings, responsibilities and evidence (BT fits are always float64).
    n_jobs : int, optional
        Threads that process blocks of queries (default: the CPUs available). BLAS runs
        single-threaded inside each block. The blocks depend on the data only, so the fit is the
        same with any ``n_jobs`` and on any machine.
    random_state : int, Generator or None

    Attributes
    ----------
    theta_ : ndarray (K, M)
        BT scores per cluster.
    centroids_ : ndarray (K, d)
    responsibilities_ : ndarray (n_queries, K)
        In the precision of ``dtype``.
    objective_ : float
        Final objective (see module docstring; includes the BT prior term).
    objective_history_ : list of float
        Objective after every EM step of the chosen initialisation; non-decreasing up to float
        rounding.
    converged_ : bool
    n_iter_ : int
    step_seconds_, step_cpu_seconds_ : list of float
        Wall and process CPU time (all threads) of each EM step of the chosen initialisation.
    models_ : tuple of str
    n_features_in_ : int
    """

    _use_evidence = True

    def __init__(
        self,
        n_clusters: int = defaults.N_CLUSTERS,
        lam: float = defaults.LAM,
        temperature: float = defaults.TEMPERATURE,
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
        self.n_clusters = n_clusters
        self.lam = lam
        self.temperature = temperature
        self.max_iter = max_iter
        self.tol = tol
        self.n_init = n_init
        self.alpha = alpha
        self.centroid_tol = centroid_tol
        self.objective_tol = objective_tol
        self.patience = patience
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.random_state = random_state

    def _validate_params(self) -> None:
        check_cluster_settings(self.n_clusters, self.lam, self.temperature)
        if int(self.max_iter) < 1 or int(self.n_init) < 1:
            raise ValueError("max_iter and n_init must be >= 1")
        if np.dtype(self.dtype) not in (np.dtype(np.float32), np.dtype(np.float64)):
            raise ValueError(f"dtype must be float32 or float64, got {self.dtype}")

    def fit(self, embeddings: np.ndarray, comparisons: Comparisons, labels=None) -> ECC:
        """Fit clusters and profiles.

        Parameters
        ----------
        embeddings : ndarray, shape (n_queries, d)
            One unit embedding per query, aligned to ``comparisons.query_ids`` (rows are
            normalised if they are not unit length).
        comparisons : Comparisons
            Training comparisons; ties count half in each direction.
        labels : ignored
            Present for a common signature with :class:`~ecc_lib.ecc.baselines.HumanLabelClusters`.

        Returns
        -------
        self
        """
        backend = data_backend(embeddings)
        if backend is not None:
            return backend.fit(self, embeddings, comparisons)
        self._validate_params()
        check_comparisons(comparisons, "comparisons")
        dtype = np.dtype(self.dtype)
        x = check_embeddings(embeddings, comparisons.n_queries, dtype)
        counts = pair_counts(comparisons, normalize=True, dtype=dtype)
        n_jobs = resolve_n_jobs(self.n_jobs, x.shape[0])
        blocks = row_blocks(counts.matrix, block_rows(x.shape[0]))
        n_jobs = min(n_jobs, len(blocks))
        rng = np.random.default_rng(self.random_state)
        k = int(self.n_clusters)
        best = None
        limit = blas_controller().limit(limits=1, user_api="blas")
        with executor(n_jobs) as pool, limit:
            for _ in range(int(self.n_init)):
                resp = rng.dirichlet(np.ones(k), size=x.shape[0]).astype(dtype)
                run = run_em(
                    LocalData(x, blocks, resp, pool),
                    counts,
                    n_queries=x.shape[0],
                    **self._em_params(dtype),
                    prior_update=self._prior_update(labels, x.shape[0], dtype),
                )
                if best is None or run.objective > best.objective:
                    best = run
        self._store(best, comparisons, x)
        if not best.converged:
            warnings.warn(
                f"{type(self).__name__} did not converge in {self.max_iter} EM steps; increase "
                "max_iter or tol",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _em_params(self, dtype) -> dict:
        """Keyword arguments of :func:`run_em` taken from the estimator's parameters."""
        return dict(
            lam=float(self.lam),
            temperature=float(self.temperature),
            alpha=float(self.alpha),
            max_iter=int(self.max_iter),
            tol=float(self.tol),
            centroid_tol=float(self.centroid_tol),
            objective_tol=float(self.objective_tol),
            patience=int(self.patience),
            use_evidence=self._use_evidence,
            dtype=dtype,
        )

    def _prior_update(self, labels, n_rows: int, dtype):
        """Hook for subclasses: a callable ``resp -> (n, K) log prior`` re-estimated at every
        M-step, or None (plain ECC, no prior)."""
        return None

    def _store(self, run: EMRun, comparisons: Comparisons, x: np.ndarray) -> None:
        self.theta_ = run.theta
        self.centroids_ = run.centroids
        self.responsibilities_ = run.responsibilities
        self.objective_ = float(run.objective)
        self.objective_history_ = list(run.history)
        self.converged_ = bool(run.converged)
        self.n_iter_ = int(run.n_iter)
        self.step_seconds_ = list(run.step_seconds)
        self.step_cpu_seconds_ = list(run.step_cpu_seconds)
        self.models_ = tuple(comparisons.models)
        self.n_features_in_ = int(x.shape[1])

    def evidence(self, comparisons: Comparisons) -> np.ndarray:
        """Evidence ``l_qk`` of ``comparisons`` under the fitted profiles, ``(n_queries, K)``.

        Parameters
        ----------
        comparisons : Comparisons
            Comparisons of the queries, in the fitted model order.

        Returns
        -------
        ndarray, shape (n_queries, n_clusters)
        """
        self._check_fitted()
        return evidence(self.theta_, comparisons)


__all__ = [
    "CENTROID_TOL",
    "ECC",
    "KL_TOL",
    "OBJECTIVE_PATIENCE",
    "OBJECTIVE_TOL",
]
