"""ECC with its settings chosen by cross-validation on leak-free pairs (method ``ecc_cv``).

Measured on the scored pairs that the probe does not decide, the paper's ECC (K = 30, T = 0.1,
lam = 3) is not a safe default (issue 26): where one quality axis dominates or training queries are
few, thirty clusters at a low temperature overfit and the probe dominates the posterior; where
capability structure exists ECC wins by a wide margin. :class:`ECCCV` (after scikit-learn's
``LassoCV`` and ``HalvingGridSearchCV``; ``docs/design.md`` section 8) chooses among the ECC family by
K-fold cross-validation on the *training* queries only:

- the grid holds one global BT model (``K = 1``, so the choice can fall back to it), ECC over the
  cluster counts ``cluster_counts`` x ``temperatures`` x ``lams``, the embedding-only clusters of
  the same ``K`` and temperatures, and, where queries carry categories, one BT per human category
  (``human``) and label-informed ECC (:class:`~ecc_lib.ecc.label_informed.LabelInformedECC`) over
  ``label_weights`` (weight 0 is plain ECC); the global and human models at several BT prior
  precisions (``alpha``);
- each fold is fitted on the other folds; each held-out training query gets its probe exactly as a
  test query does (its first ``n_probes`` comparisons, read with the same inference), and is scored
  on its other comparisons that share no model with the probe (mean NLL per scored pair, pooled
  over folds);
- validated = deployed (issue 34): every candidate, in every fold and at the refit, is fitted by
  one procedure, :meth:`ECCCV.fit_candidate` (a cold fit from seeded Dirichlet draws, ``n_init``
  restarts keeping the best training objective, at most ``max_iter`` EM steps); the seed of a
  candidate depends only on ``random_state`` and the candidate, so ``best_estimator_`` refitted on
  a fold's training queries reproduces the fold's score in ``cv_results_`` exactly, and a method
  tuned alone over a sub-grid (``human_tuned`` ...) deploys the same model as ECC-CV choosing it;
- successive halving (``factor``): the EM candidates first see ``1 / factor^r`` of each fold's
  training queries (a nested random subset), the best ``1 / factor`` of them by mean held-out NLL
  (rounded to the nearest count, at least one: the default grid's 10 EM candidates at factor 3
  give 3, then 1) go on to the next round, the last round on all the fold's training queries;
  the global and human BT candidates (one closed-form fit each) are fitted once, on all of them;
- the rounds before the last only screen: their fits stop after ``screen_max_iter`` EM steps
  (default 7: a screen only ranks, the last round decides; on the seven sets of
  ``benchmarks/ecc_cv_fairness.py`` every criterion held with 7 steps as with 10, and the search
  on dcrouter took about 0.86 of its wall time with 10, while 5 or 6 steps screened out the
  planted K = 4 of the tour's data for K = 2: a short screen favours the clusterings that settle
  first) and run on the first ``screen_folds`` folds only (default 1), and their rows of
  ``cv_results_`` say so (column ``fit``: ``"screen (max_iter=7, 1 fold)"``; the other folds'
  ``split*_test_nll`` are NaN). Every score the choice reads (the last round: column ``fit`` is
  ``"full"``) comes from :meth:`fit_candidate`'s full procedure on every fold, so validated =
  deployed holds for the chosen candidate; a screened-out candidate was never a choice;
- the best mean of the last round wins, or (``rule="one_se"``, the default) the best candidate
  of the simplest family within one standard error of it (one global BT, then one BT per human
  category, then the clusterings); it is refitted on all training queries by the same procedure.
  Where the best candidate went through the screens, its score on the screened folds is
  optimistic (the screens chose it on those folds' held-out queries: a winner's curse), so the
  rule's paired difference reads the other folds only (all folds where every fold was screened).

Cost (issue 34): the fold scores and refits are memoised in :data:`FIT_MEMO` under a digest of
the training data, the folds, the subset, the candidate, its seed and the fit settings, so the
tuned baselines (``global_tuned``, ``human_tuned``, ``emb_only_tuned``), which search the same
training queries with the same ``random_state``, read ECC-CV's fold fits instead of repeating them
(one search, several readings; identical numbers). The embedding-only clustering and the human
categories do not depend on ``alpha`` (only the profiles fitted after them do), so the
embedding-only candidates share one seed per setting (:func:`candidate_seed`) and, within a fold
subset, each family shares one clustering (:class:`_SharedFits`); each candidate fits its own
profiles, the numbers of a cold fit. The fits of a halving round run on ``n_jobs`` threads, one
thread each (the same numbers: ECC's blocks do not depend on its threads). The search runs BLAS
on one thread: its products are small, and threaded BLAS on them is slower on a shared machine.

Test queries are never seen: ``fit`` only receives the training queries.
"""

from __future__ import annotations

import contextvars
import copy
import hashlib
import logging
import threading
import time
import warnings
import zlib
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils.validation import check_is_fitted

from ecc_lib import defaults
from ecc_lib.bradley_terry import reuse_pair_counts
from ecc_lib.data.comparisons import Comparisons, available_cpus
from ecc_lib.data.splits import disjoint_from_probe, split_probe, touching_probe
from ecc_lib.ecc.backends import data_backend
from ecc_lib.ecc.baselines import ComparisonOnlyECC, EmbeddingClusters, GlobalBT, HumanLabelClusters
from ecc_lib.ecc.cv_grid import (
    BT_FAMILIES,
    DEFAULT_PARAM_GRID,
    PARAM_DEFAULTS,
    choice_words,
    describe_params,
    expand_grid,
    halving_schedule,
    results_table,
)
from ecc_lib.ecc.engine import blas_controller, resolve_n_jobs
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.label_informed import LabelInformedECC
from ecc_lib.ecc.mixture import ProfileMixture, comparison_nll
from ecc_lib.ecc.validation import (
    check_comparisons,
    check_embeddings,
    checked_embeddings,
    labels_to_str,
)

logger = logging.getLogger(__name__)

DEFAULT_CV = 3
CV_PROBES: tuple[str, ...] = ("first", "leak_free")
DEFAULT_CV_MAX_ITER = 20
RULES: tuple[str, ...] = ("one_se", "best")
_SIMPLER: tuple[str, ...] = ("global", "human")  # families by complexity, simplest first
DEFAULT_FACTOR = 3
DEFAULT_SCREEN_MAX_ITER = 7
DEFAULT_SCREEN_FOLDS = 1
MIN_QUERIES_PER_CLUSTER = 5


class _FitMemo:
    """Fold scores and refits already computed, shared by the searches of one process.

    ECC-CV and the tuned baselines (``global_tuned``, ``human_tuned``, ``emb_only_tuned``) search
    the same training queries with the same ``random_state``, so they draw the same folds, the
    same nested subsets and the same candidate seeds, and a candidate fitted on a fold subset is
    the same computation in every search (issue 34: one search, several readings). The memo keys
    each fold score by a digest of the training data, the folds, the subset share, the candidate,
    its seed and the fit settings, so a reading is reused only where the computation is the same;
    results are identical to fitting again. Bounded (least recently used entries go first).
    """

    def __init__(self, max_scores: int = 512, max_refits: int = 16):
        # kind -> (entries, most entries kept)
        self._stores = {
            "score": (OrderedDict(), int(max_scores)),
            "refit": (OrderedDict(), int(max_refits)),
        }
        self._lock = threading.Lock()

    def get(self, kind: str, key):
        """The value of ``key`` in store ``kind`` (``"score"`` or ``"refit"``), or None."""
        with self._lock:
            store = self._stores[kind][0]
            value = store.get(key)
            if value is not None:
                store.move_to_end(key)
            return value

    def put(self, kind: str, key, value) -> None:
        """Keep ``value`` under ``key`` in store ``kind`` (the least recently used go first)."""
        with self._lock:
            store, limit = self._stores[kind]
            store[key] = value
            while len(store) > limit:
                store.popitem(last=False)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            for store, _ in self._stores.values():
                store.clear()


FIT_MEMO = _FitMemo()
"""The process's memo of ECC-CV fold scores and refits (see :class:`_FitMemo`)."""


def _data_digest(x: np.ndarray, comparisons: Comparisons, lab, *arrays) -> str:
    """A digest of the training data (and the fold arrays): the memo's data key."""
    h = hashlib.blake2b(digest_size=20)
    for a in (x, comparisons.query, comparisons.model_a, comparisons.model_b, comparisons.y):
        a = np.ascontiguousarray(a)
        h.update(f"{a.dtype.str}{a.shape}".encode())
        h.update(a.data)
    h.update("\x1f".join(map(str, comparisons.models)).encode())
    if lab is not None:
        h.update("\x1f".join(map(str, lab)).encode())
    for a in arrays:
        h.update(np.ascontiguousarray(a).data)
    return h.hexdigest()


def candidate_seed(seed: int, params: dict) -> int:
    """The EM seed of one candidate: a function of the search seed and the candidate only.

    Parameters
    ----------
    seed : int
        The search seed (drawn from ``random_state``).
    params : dict
        The candidate (:func:`~ecc_lib.ecc.cv_grid.expand_grid`).

    Returns
    -------
    int
    """
    if params["family"] == "emb_only":  # its clustering ignores alpha: one seed for every alpha
        params = {**params, "alpha": PARAM_DEFAULTS["alpha"]}
    key = zlib.crc32(describe_params(params).encode())
    return int(np.random.SeedSequence([int(seed), key]).generate_state(1)[0])


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
    max_iter : int, default 20
        EM steps at most of every candidate fit (cross-validation and refit alike).
    tol : float, default 1e-3
        As :class:`~ecc_lib.ecc.estimator.ECC`.
    n_init : int, default 1
        Cold restarts of every candidate fit (cross-validation and refit alike); the best
        training objective wins, as in scikit-learn's ``GaussianMixture``.
    factor : float or None, default 3
        Successive halving of the EM candidates (see the module docstring); None: every candidate
        on all of each fold's training queries.
    min_resources : int, optional
        Fewest training queries of a halving round (default 5 per cluster of the largest ``K``).
    screen_max_iter : int or None, default 7
        EM steps at most of the fits of a halving round before the last (None: ``max_iter``).
    screen_folds : int or None, default 1
        Folds a halving round before the last fits (None: every fold).
    rule : {"one_se", "best"}, default "one_se"
        ``"best"``: the lowest mean held-out NLL of the last round wins. ``"one_se"`` (the
        one-standard-error rule of Breiman et al. 1984, glmnet's ``lambda.1se``): the simplest
        family whose best candidate is within one standard error of the best candidate wins
        (one global BT, then one BT per human category, then the clustering families; the
        standard error of the paired difference over held-out queries; of the folds no screen read
        where the best candidate was screened). Within a family the
        lowest mean wins, so a method tuned alone (``human_tuned``) and ECC-CV choosing its
        family deploy the same candidate.
    dtype : {"float32", "float64"}
    n_jobs : int, optional
        Threads of the search (default: the CPUs available): the fits of a halving round run in
        parallel, one thread each; the refit uses them inside its one fit. Any value gives the
        same numbers (the fits do not depend on their threads).
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
        pairs), ``rank_test_nll``, ``mean_fit_time``, ``mean_n_iter``, ``iter`` (the last halving
        round of the candidate), ``n_resources`` (its training queries per fold fit) and ``fit``
        (``"full"``: :meth:`fit_candidate`'s procedure on every fold, the rows a choice reads;
        ``"screen (max_iter=7, 1 fold)"``: a screening round, NaN on the folds it did not fit).
    best_estimator_ : estimator
        The best candidate refitted on all training queries by :meth:`fit_candidate` (an
        unfitted ``clone`` of it refitted on a fold's training queries gives the fold's score).
    best_choice_ : str
        The choice in words (:func:`~ecc_lib.ecc.cv_grid.choice_words`).
    folds_ : ndarray of int, shape (n_queries,)
        Fold of each training query.
    resources_ : list of float
        Share of each fold's training queries per halving round.
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
        n_probes: int = defaults.N_PROBES,
        cv_probe: str = "first",
        max_iter: int = DEFAULT_CV_MAX_ITER,
        tol: float = 1e-3,
        n_init: int = 1,
        factor: float | None = DEFAULT_FACTOR,
        min_resources: int | None = None,
        screen_max_iter: int | None = DEFAULT_SCREEN_MAX_ITER,
        screen_folds: int | None = DEFAULT_SCREEN_FOLDS,
        rule: str = "one_se",
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
        self.tol = tol
        self.n_init = n_init
        self.factor = factor
        self.min_resources = min_resources
        self.screen_max_iter = screen_max_iter
        self.screen_folds = screen_folds
        self.rule = rule
        self.dtype = dtype
        self.n_jobs = n_jobs
        self.random_state = random_state

    # -- candidates -----------------------------------------------------------------------------

    def _estimator(self, params: dict, random_state=None, max_iter: int | None = None, n_jobs=None):
        """An unfitted estimator of one candidate (its fit is :meth:`fit_candidate`'s; ``max_iter``
        None: the deployed procedure's ``self.max_iter``; ``n_jobs`` None: ``self.n_jobs``)."""
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
            n_init=int(self.n_init),
            alpha=alpha,
            dtype=self.dtype,
            n_jobs=self.n_jobs if n_jobs is None else n_jobs,
            random_state=random_state,
        )
        if family == "ecc":
            return ECC(**kwargs)
        if family == "emb_only":
            return EmbeddingClusters(**kwargs)
        if family == "comp_only":
            return ComparisonOnlyECC(**{k: v for k, v in kwargs.items() if k != "lam"})
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
        if min(int(self.max_iter), int(self.n_init)) < 1:
            raise ValueError("max_iter and n_init must be >= 1")
        if self.rule not in RULES:
            raise ValueError(f"rule must be one of {RULES}, got {self.rule!r}")
        if self.factor is not None and not self.factor > 1:
            raise ValueError(f"factor must be > 1 or None, got {self.factor}")
        for name in ("screen_max_iter", "screen_folds"):
            value = getattr(self, name)
            if value is not None and int(value) < 1:
                raise ValueError(f"{name} must be >= 1 or None, got {value}")

    def fit_candidate(
        self,
        params: dict,
        embeddings,
        comparisons: Comparisons,
        labels=None,
        *,
        seed,
        max_iter: int | None = None,
    ):
        """Fit one candidate: the one procedure of the cross-validation fits and of the refit.

        A cold fit (:meth:`_estimator`'s ``fit``: ``n_init`` restarts from Dirichlet draws seeded
        by :func:`candidate_seed`, the best training objective kept, at most ``max_iter`` EM
        steps; the global and human models are one BT fit). Not converging within ``max_iter``
        steps is part of the procedure (no warning).

        Parameters
        ----------
        params : dict
            The candidate.
        embeddings, comparisons, labels
            Training queries (as :meth:`fit`).
        seed : int
            The search seed.
        max_iter : int, optional
            EM steps at most; None (the procedure of the last halving round and the refit):
            ``self.max_iter``. The screening rounds pass ``screen_max_iter``.

        Returns
        -------
        estimator
            Fitted.
        """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            return self._fit(params, embeddings, comparisons, labels, seed=seed, max_iter=max_iter)

    def _fit(
        self,
        params,
        embeddings,
        comparisons,
        labels,
        *,
        seed,
        max_iter=None,
        shared=None,
        n_jobs=None,
    ):
        """:meth:`fit_candidate` without its warnings filter (the search holds one for all its
        threads). ``shared`` (a :class:`_SharedFits`): the search's fits that do not depend on
        ``alpha``; ``n_jobs``: threads of the fit (None: ``self.n_jobs``). The same numbers
        either way: the shared part is what ``est.fit`` computes before its last step, and ECC's
        blocks do not depend on its threads."""
        est = self._estimator(
            params, random_state=candidate_seed(seed, params), max_iter=max_iter, n_jobs=n_jobs
        )
        if (
            shared is not None
            and params["family"] in ("emb_only", "human")
            and data_backend(embeddings) is None
        ):
            base = shared.base(est, embeddings, comparisons, labels)
            est.__dict__.update(
                copy.deepcopy({k: v for k, v in vars(base).items() if k != "alpha"})
            )
            return est.fit_final_profiles(comparisons)  # the last step of est.fit
        est.fit(embeddings, comparisons, labels=labels)
        return est

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
        seed = int(rng.integers(2**32))  # seeds every candidate fit (candidate_seed)
        entry = rng.permutation(n)  # order in which training queries enter the halving rounds
        n_train = int(n - np.bincount(fold).max())
        grid = self._grid(lab is not None, n_train)
        em = [i for i, g in enumerate(grid) if g["family"] not in BT_FAMILIES]
        k_max = max([int(grid[i]["n_clusters"]) for i in em], default=1)
        min_res = (
            MIN_QUERIES_PER_CLUSTER * k_max if self.min_resources is None else self.min_resources
        )
        shares = halving_schedule(len(em), n_train, factor=self.factor, min_resources=min_res)
        folds = [
            _Fold(comparisons, x, lab, fold == f, entry, int(self.n_probes), self.cv_probe)
            for f in range(n_folds)
        ]
        data_key = (_data_digest(x, comparisons, lab, fold, entry), self._procedure_key(), seed)
        # reading 0: pairs disjoint from the probe's models; reading 1: all held-out pairs
        scored = np.array([[f.keep.sum(), len(f.rest)] for f in folds], dtype=np.int64).T
        if scored[1].sum() == 0:
            raise ValueError(
                "cross-validation found no held-out pair to score (each training query needs "
                f"more than {int(self.n_probes)} comparison(s))"
            )
        reading = 0 if scored[0].sum() > 0 else 1
        if reading == 1:
            logger.warning(
                "ecc_cv: no held-out pair is disjoint from its query's probe (%d models); the "
                "settings are chosen on all held-out pairs, which the probe may decide",
                comparisons.n_models,
            )
        start = time.perf_counter()
        losses, per_query, seconds, iters, last, resources, procedures = self._halving(
            grid, em, shares, folds, data_key, seed, reading
        )
        self.search_seconds_ = time.perf_counter() - start
        self.cv_pairs_ = ("disjoint", "all")[reading]
        self.folds_ = fold
        self.resources_ = shares
        self.cv_results_ = results_table(
            grid, losses[reading], scored[reading], seconds, iters, last, resources, procedures
        )
        best = int(self.cv_results_["rank_test_nll"].to_numpy().argmin())
        if self.rule == "one_se":
            rank = self.cv_results_["rank_test_nll"].to_numpy()
            # the screens chose the EM survivors on their folds' held-out queries, so a survivor's
            # score there is optimistic (selection on the same queries): where the best candidate
            # was screened, the rule compares on the folds no screen read
            n_screened = self._screening(n_folds)[1] if len(shares) > 1 else 0
            unbiased = [f for f in range(n_folds) if best not in em or f >= n_screened]
            best = _one_se_choice(
                grid, best, rank, reading, per_query, unbiased or range(n_folds), scored[reading]
            )
        self.best_index_ = best
        self.best_params_ = dict(grid[self.best_index_])
        self.best_score_ = float(self.cv_results_["mean_test_nll"].iloc[self.best_index_])
        self.n_scored_cv_ = int(scored[reading].sum())
        self._refit(x, comparisons, lab, seed, data_key)
        logger.info(
            "ecc_cv: %s chosen among %d candidates by %d-fold CV (%d halving rounds; %.2f s "
            "search, %.2f s refit)",
            describe_params(self.best_params_),
            len(grid),
            n_folds,
            len(shares),
            self.search_seconds_,
            self.refit_seconds_,
        )
        return self

    def _halving(self, grid, em, shares, folds, data_key, seed, reading) -> tuple:
        """The successive-halving search: every EM candidate (``em``) on growing shares of the
        training queries, the best ``1 / factor`` kept each round, the BT families on the last
        round only; the rounds before the last screen (``screen_max_iter`` EM steps at most, on
        the first ``screen_folds`` folds). Returns ``(losses, per_query, seconds, iters, last,
        resources, procedures)``: a fold a candidate's last round did not fit has NaN losses."""
        n_folds = len(folds)
        losses = np.full((2, len(grid), n_folds), np.nan)
        per_query: dict = {}  # (reading, candidate, fold) -> held-out NLL summed per query
        seconds = np.zeros((len(grid), n_folds))
        iters = np.full((len(grid), n_folds), np.nan)
        last = np.zeros(len(grid), dtype=int)
        resources = np.zeros(len(grid))
        procedures = ["full"] * len(grid)
        screen_iter, screen_folds = self._screening(n_folds)
        alive = list(em)
        # one BLAS thread for the many small products of the search (ECC's fits set it already);
        # the pair counts of each fold subset are computed once for all its candidates, the
        # embeddings (rows of those fit checked) are not checked again, and one warnings filter
        # serves every thread (not converging within max_iter is part of a procedure)
        n_threads = resolve_n_jobs(self.n_jobs, available_cpus())
        if data_backend(folds[0].x) is not None:
            n_threads = 1  # a backend runs its own partitions in parallel
        shared = _SharedFits()
        limit = blas_controller().limit(limits=1, user_api="blas")
        with limit, reuse_pair_counts(), checked_embeddings(), warnings.catch_warnings():
            warnings.simplefilter("ignore", ConvergenceWarning)
            for r, share in enumerate(shares):
                final = r == len(shares) - 1
                todo = alive + ([i for i in range(len(grid)) if i not in em] if final else [])
                max_iter = None if final else screen_iter
                fitted = range(n_folds if final else screen_folds)
                losses[:, todo] = np.nan  # a candidate's row holds its last round only
                subs = {f: folds[f].subset(share) for f in fitted}
                # the costliest fits first: the EM candidates (alive), fold by fold
                tasks = [(i, f) for i in todo for f in fitted]
                jobs = min(n_threads, len(tasks))

                def score(task, share=share, max_iter=max_iter, jobs=jobs, subs=subs):
                    # fit candidate i on the training subset of fold f and score the fold's
                    # held-out queries (or read the same computation from FIT_MEMO); each task
                    # writes its own cell (i, f)
                    i, f = task
                    key = (data_key, f, share, _params_key(grid[i]), max_iter)
                    found = FIT_MEMO.get("score", key)
                    if found is None:
                        n_jobs = 1 if jobs > 1 else None
                        found = self._fit_and_score(
                            grid[i], folds[f], subs[f], seed, max_iter, shared, n_jobs
                        )
                        FIT_MEMO.put("score", key, found)
                    fit_seconds, n_iter, loss, query_losses = found
                    seconds[i, f] += fit_seconds
                    iters[i, f] = n_iter
                    # no held-out pair scored in this fold: 0 (and no per-query losses)
                    losses[:, i, f] = 0.0 if loss is None else loss
                    for reading, values in enumerate(query_losses):
                        per_query[reading, i, f] = values

                _run_tasks(score, tasks, jobs)
                last[todo] = r
                resources[todo] = np.mean([subs[f][0].n_queries for f in fitted])
                words = (
                    _screen_words(screen_iter or int(self.max_iter), screen_folds)
                    if not final and (screen_iter is not None or screen_folds < n_folds)
                    else "full"
                )
                for i in todo:
                    procedures[i] = words
                if not final:  # keep the best 1 / factor of the EM candidates (rounded, >= 1)
                    mean = np.nansum(losses[reading][alive], axis=1)
                    n_keep = _n_kept(len(alive), float(self.factor))
                    alive = [alive[j] for j in np.lexsort((alive, mean))[:n_keep]]
        return losses, per_query, seconds, iters, last, resources, procedures

    def _screening(self, n_folds: int) -> tuple[int | None, int]:
        """``(max_iter, folds)`` of a screening round (None: the deployed procedure's)."""
        max_iter = int(self.max_iter) if self.screen_max_iter is None else int(self.screen_max_iter)
        max_iter = None if max_iter >= int(self.max_iter) else max_iter
        n = n_folds if self.screen_folds is None else min(int(self.screen_folds), n_folds)
        return max_iter, n

    def _refit(self, x, comparisons, lab, seed, data_key) -> None:
        """Refit the chosen candidate on every training query (memoised) and take its fitted
        attributes."""
        start = time.perf_counter()
        refit_key = (data_key, "refit", _params_key(self.best_params_))
        best = FIT_MEMO.get("refit", refit_key)
        if best is None:
            with checked_embeddings():  # fit checked them
                best = self.fit_candidate(self.best_params_, x, comparisons, lab, seed=seed)
            FIT_MEMO.put("refit", refit_key, best)
        best = copy.deepcopy(best)  # each search owns its deployed model
        self.refit_seconds_ = time.perf_counter() - start
        self.best_estimator_ = best
        self.best_choice_ = choice_words(self.best_params_)
        self.theta_ = best.theta_
        self.centroids_ = best.centroids_
        self.responsibilities_ = best.responsibilities_
        self.models_ = tuple(best.models_)
        self.n_iter_ = int(getattr(best, "n_iter_", 1))
        self.converged_ = bool(getattr(best, "converged_", True))
        self.n_features_in_ = int(x.shape[1])

    def _procedure_key(self) -> tuple:
        """The settings that make a fold score (besides the data, folds, seed and candidate)."""
        return (
            int(self.cv),
            int(self.n_probes),
            str(self.cv_probe),
            int(self.max_iter),
            float(self.tol),
            int(self.n_init),
            np.dtype(self.dtype).str,
            self.n_jobs,
        )

    def _fit_and_score(self, params, data, sub, seed, max_iter, shared, n_jobs) -> tuple:
        """``(fit seconds, EM steps, (disjoint, all) summed NLL, per-query NLL per reading)`` of
        one candidate fitted on ``sub`` and scored on the fold's held-out queries."""
        train, x_tr, lab_tr = sub
        t0 = time.perf_counter()
        est = self._fit(
            params, x_tr, train, lab_tr, seed=seed, max_iter=max_iter, shared=shared, n_jobs=n_jobs
        )
        fit_seconds = time.perf_counter() - t0
        n_iter = getattr(est, "n_iter_", 1)
        if len(data.rest) == 0:
            return fit_seconds, n_iter, None, ()
        p = est.predict_proba(
            data.rest, embeddings=data.held_x, probe=data.probe, labels=data.held_lab
        )
        nll = comparison_nll(p, data.rest.y)
        loss = (float(nll[data.keep].sum()), float(nll.sum()))
        n_held = int(data.held.sum())
        query_losses = tuple(
            np.bincount(data.rest.query[rows], weights=nll[rows], minlength=n_held)
            for rows in (data.keep, slice(None))
        )
        return fit_seconds, n_iter, loss, query_losses

    # -- inference (the refitted best candidate's) ----------------------------------------------

    def _check_fitted(self) -> None:
        check_is_fitted(self, "best_estimator_")

    @property
    def temperature(self) -> float | None:
        """Temperature of the chosen candidate's softmax (for the human-label model, that of its
        fallback mixture); None for the global model or before ``fit``."""
        best = getattr(self, "best_estimator_", None)
        return getattr(best, "temperature", None)

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


def _n_kept(n_alive: int, factor: float) -> int:
    """EM candidates that go on to the next halving round: ``n_alive / factor`` rounded to the
    nearest count, at least one (12 candidates at factor 3: 4, then 1; scikit-learn's ceiling
    kept 2 for the last round, whose fits on all of each fold's queries cost the most)."""
    return max(1, int(np.floor(n_alive / factor + 0.5)))


def _screen_words(max_iter: int, n_folds: int) -> str:
    """How a screening round fits (the ``fit`` column of ``cv_results_``)."""
    return f"screen (max_iter={max_iter}, {n_folds} fold{'s' if n_folds > 1 else ''})"


def _params_key(params: dict) -> tuple:
    """A candidate as a hashable key (every setting, in a fixed order)."""
    return tuple(sorted((k, repr(v)) for k, v in params.items()))


def _one_se_choice(grid, best, rank, reading, per_query, folds, scored) -> int:
    """The one-standard-error rule: the best-ranked candidate of the simplest family (global,
    then human) whose paired held-out NLL difference to ``best`` (over the held-out queries of
    ``folds``) is within one standard error."""
    folds = list(folds)
    for family in _SIMPLER:
        if grid[best]["family"] == family:
            return best
        members = [i for i, g in enumerate(grid) if g["family"] == family]
        if not members:
            continue
        c = min(members, key=lambda i: rank[i])
        d = np.concatenate([per_query[reading, c, f] - per_query[reading, best, f] for f in folds])
        n_pairs = float(scored[folds].sum())
        se = np.sqrt(len(d)) * d.std(ddof=1) / n_pairs if len(d) > 1 else 0.0
        if d.sum() / n_pairs <= se:
            return c
    return best


class _SharedFits:
    """The fits of one search that do not depend on ``alpha``, shared by its candidates and
    threads: the embedding-only clustering (the EM alone) and the human categories with their
    centroids, per fold subset and settings (:meth:`ECCCV._fit`). The first candidate to need one
    fits it (the others wait for it); each candidate then fits its own profiles."""

    def __init__(self):
        self._lock = threading.Lock()
        self._entries: dict = {}

    def base(self, est, embeddings, comparisons: Comparisons, labels):
        """``est`` fitted up to its profiles (any ``alpha``: the rest does not read it).

        Parameters
        ----------
        est : EmbeddingClusters or HumanLabelClusters
            An unfitted candidate.
        embeddings, comparisons, labels
            Its training queries.

        Returns
        -------
        estimator
            Shared; callers copy what they take.
        """
        settings = tuple(sorted((k, repr(v)) for k, v in est.get_params().items() if k != "alpha"))
        key = (type(est), id(embeddings), id(comparisons), id(labels), settings)
        with self._lock:
            entry = self._entries.setdefault(key, [threading.Lock(), None])
        with entry[0]:
            if entry[1] is None:
                base = copy.deepcopy(est)
                if isinstance(base, EmbeddingClusters):
                    ECC.fit(base, embeddings, comparisons)  # the EM alone (theta_ zero)
                else:
                    base.fit(embeddings, comparisons, labels=labels)
                # the data are held with the fit, so their ids stay theirs while it lives
                entry[1] = (embeddings, comparisons, labels, base)
        return entry[1][3]


def _run_tasks(fn, tasks: list, n_threads: int) -> None:
    """``fn(task)`` for every task, on ``n_threads`` threads (each in a copy of the caller's
    context, so the memo of :func:`~ecc_lib.bradley_terry.reuse_pair_counts` and the checks'
    context reach them), or in order in this thread for one."""
    if n_threads <= 1:
        for task in tasks:
            fn(task)
        return
    with ThreadPoolExecutor(n_threads) as pool:
        futures = [pool.submit(contextvars.copy_context().run, fn, task) for task in tasks]
        for future in futures:
            future.result()


class _Fold:
    """One fold of the search: held-out mask, probe and scored pairs, nested training subsets
    (``entry``: the seeded order in which training queries enter the halving rounds)."""

    def __init__(self, comparisons, x, lab, held, entry, n_probes: int, cv_probe: str):
        # the held-out queries' probe and scored pairs (ECCCV's n_probes and cv_probe)
        probe, rest = split_probe(comparisons.select_queries(held), n_probes=n_probes)
        if n_probes == 0:
            probe = None  # embedding (and label) only, as the protocol without a probe
        elif cv_probe == "leak_free":
            # as make_leak_free: a probe only where it names no model of the query's scored
            # pairs; the other queries are predicted without one
            clash = np.unique(rest.query[touching_probe(probe, rest)])
            probe = probe.take(~np.isin(probe.query, clash))
        keep = disjoint_from_probe(rest, probe) if probe is not None else np.ones(len(rest), bool)
        self.comparisons, self.x, self.lab, self.held = comparisons, x, lab, held
        self.entry, self.probe, self.rest, self.keep = entry[~held[entry]], probe, rest, keep
        # the held-out queries' embeddings and labels, read by every candidate's score
        self.held_x = x[held]
        self.held_lab = None if lab is None else lab[held]
        self._cache: dict = {}

    def subset(self, share: float):
        """``(comparisons, embeddings, labels)`` of the first ``share`` of the training queries
        (in the seeded entry order, so the rounds are nested; ``share = 1``: all of them)."""
        if share not in self._cache:
            n_take = (
                len(self.entry) if share >= 1 else max(2, int(np.ceil(share * len(self.entry))))
            )
            mask = np.zeros(len(self.held), dtype=bool)
            mask[self.entry[:n_take]] = True
            lab = None if self.lab is None else self.lab[mask]
            self._cache[share] = (self.comparisons.select_queries(mask), self.x[mask], lab)
        return self._cache[share]


__all__ = [
    "ECCCV",
    "FIT_MEMO",
]
