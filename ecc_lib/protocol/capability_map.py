"""Which model for which queries: the capability map of a grouping of the queries (issue 37).

A *grouping* is a fitted clustering of the protocol (ECC-CV's chosen method by default, any named
method such as ``"ecc"`` or ``"human"``) or the human categories themselves (``"categories"``).
Training and test queries alike belong to the group their embedding (and category) alone gives
them, as a router would place them before calling any model: the fit's own responsibilities also
read a training query's comparisons, and a group selected by its outcomes would find its winner
with false certainty. A group of fewer than ``min_queries`` training queries states no interval,
P(best) or distinguishability.

For every group and model, :func:`capability_map` gives

- the group's **name**: its dominant categories with their shares and 3 to 5 distinctive terms of
  a class-based TF-IDF over the group's training texts (``tf(t, g) * log(1 + A / f(t))``, with
  ``A`` the mean number of words per group and ``f(t)`` the term's count over all groups), made
  unique across groups by adding terms, then the group number;
- its **size** (training and test queries);
- the model's **BT score** on the group's training comparisons with a percentile interval from a
  bootstrap over the group's training queries, **P(best)** (the share of bootstrap draws in which
  the model scores highest; it sums to 1 over the group's models) and whether it is
  **distinguishable** from the group's best (the interval of ``score(best) - score(model)`` over
  the same draws excludes 0);
- the **held-out value** of the map: on test queries, the mean score of sending each query to its
  group's best model minus sending every query to the global best (one BT fit over all training
  queries), with a paired bootstrap interval over test queries (:func:`ecc_lib.stats.paired_difference`),
  and the share of groups whose best differs from the global best.

The bootstrap is batched: per group one batched Bradley-Terry fit over all draws
(:func:`ecc_lib.bradley_terry.fit_bt_pairs` on the group's observed pairs), never a Python loop over
draws or pairs. :func:`show_group` is the exploration of one group in JupyterLab: its table, its most
typical queries (nearest the centroid of its embeddings) and the queries its best model lost.
Query texts of a category containing ``gpqa`` are never shown nor used for the names
(:data:`~ecc_lib.protocol.experiments.sweeps.HIDDEN_EXAMPLE_CATEGORIES`). See ``docs/design.md``
(section 3) for the BT model and the protocol.
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import scipy.sparse as sp

from ecc_lib.bradley_terry import DEFAULT_ALPHA, fit_bt_pairs, pair_counts
from ecc_lib.data.comparisons import DEFAULT_TIE_TOLERANCE
from ecc_lib.protocol.data import ProtocolData
from ecc_lib.protocol.experiments.sweeps import (
    HIDDEN_EXAMPLE_CATEGORIES,
    hidden_category_mask,
    shorten_text,
)
from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import (
    DEFAULT_N_BOOT,
    bootstrap_indices,
    mean_with_replicates,
    paired_difference,
)

CATEGORIES = "categories"
"""The grouping by the queries' human categories (no fitted method needed)."""
DEFAULT_MAP_BOOT = 200
"""Bootstrap draws of the per-group BT fits (P(best) in steps of 1/200)."""
_TOKEN_PATTERN = r"(?u)\b[^\W\d_]{3,}\b"
MIN_GROUP_QUERIES = 10
"""Training queries a group needs before the map states intervals, P(best) and distinguishability."""
REPLICATE_TOL = 1e-6
"""Newton step size at which a bootstrap replicate's BT fit stops (the point fits use the library's
tighter default): replicates only give percentiles and the top model."""


# --------------------------------------------------------------------------------------------------
# the result


@dataclass
class CapabilityMap:
    """The capability map of one grouping (see the module docstring).

    Attributes
    ----------
    method : str
        The grouping: a method name of the protocol or ``"categories"``.
    method_detail : str
        What the grouping is in words (``"ecc_cv (chose human, alpha=0.1)"``).
    models : tuple of str
    groups : DataFrame
        One row per group, largest first: ``group, name, categories, terms, n_train, n_test,
        best_model, p_best, runner_up, runner_up_p_best, global_best_distinguishable,
        needs_other_model``.
    rows : DataFrame
        One row per group and model: ``group, name, n_train, n_test, model, score, score_low,
        score_high, p_best, best, distinguishable, observed``.
    global_best : str
        The best model of one BT fit over all training queries.
    held_out : dict
        ``estimate, ci95`` (routed minus global best, mean score per test query, paired
        bootstrap), ``routed_score, routed_score_ci95, global_score, global_score_ci95, n_test,
        n_test_scored, n_test_unmapped``.
    share_groups_other_best : float
        Share of groups whose best model is not the global best.
    n_boot : int
    confidence : float
    alpha : float
        BT prior precision of the per-group fits.
    data : ProtocolData
        The protocol data the map was built on (for :func:`show_group`).
    train_group, test_group : ndarray of int
        Group of each training / test query (``-1``: a test query whose group has no training
        query; it is sent to the global best).
    seed : int or None
        The seed it was built with (None: a generator was passed).
    """

    method: str
    method_detail: str
    models: tuple
    groups: pd.DataFrame
    rows: pd.DataFrame
    global_best: str
    held_out: dict
    share_groups_other_best: float
    n_boot: int
    confidence: float
    alpha: float
    data: ProtocolData = field(repr=False)
    train_group: np.ndarray = field(repr=False)
    test_group: np.ndarray = field(repr=False)
    seed: int | None = None

    def settings(self) -> dict:
        """What the map's ``metrics.json`` section records as its parameters.

        Returns
        -------
        dict
            ``method``, ``n_boot`` and ``seed``.
        """
        return {"method": self.method, "n_boot": self.n_boot, "seed": self.seed}

    @property
    def groups_needing_other_model(self) -> list[str]:
        """Names of the groups whose best model is not the global best, with the global best
        distinguishable from it (worse on this evidence)."""
        return self.groups.loc[self.groups["needs_other_model"], "name"].tolist()

    def to_frame(self) -> pd.DataFrame:
        """One row per group and model (the ``tables/03_capability_map.csv`` of notebook 03).

        Returns
        -------
        DataFrame
        """
        return self.rows.copy()

    def group_table(self) -> pd.DataFrame:
        """One row per group (name, size, best model, P(best), runner-up, ...).

        Returns
        -------
        DataFrame
        """
        return self.groups.copy()

    def to_metrics(self, *, dataset: str = "") -> dict:
        """The ``capability_map`` section of ``metrics.json`` (schema: :mod:`ecc_lib.metrics_schema`).

        Parameters
        ----------
        dataset : str, default ""
            The dataset's label.

        Returns
        -------
        dict
            JSON-ready.
        """
        # the groups table without the words of the name and the runner-up's P(best)
        groups = self.groups.drop(columns=["categories", "terms", "runner_up_p_best"])
        n_other = int((self.groups["best_model"] != self.global_best).sum())
        return to_jsonable(
            {
                "dataset": dataset,
                "method": self.method,
                "method_detail": self.method_detail,
                "global_best": self.global_best,
                "n_groups": len(self.groups),
                "n_models": len(self.models),
                "n_groups_other_best": n_other,
                "share_groups_other_best": self.share_groups_other_best,
                "n_groups_needing_other_model": len(self.groups_needing_other_model),
                "held_out": self.held_out,
                "n_boot": self.n_boot,
                "confidence": self.confidence,
                "bt_alpha": self.alpha,
                "groups": groups.to_dict(orient="records"),
            }
        )

    def show_group(self, group: int | str, **kwargs) -> GroupView:
        """:func:`show_group` of this map.

        Parameters
        ----------
        group : int or str
        **kwargs
            As :func:`show_group`.

        Returns
        -------
        GroupView
        """
        return show_group(self, group, **kwargs)


@dataclass
class GroupView:
    """One group of a capability map, for reading in JupyterLab (:func:`show_group`).

    Attributes
    ----------
    group : int or str
        The group's number (a cluster) or category.
    name : str
    n_train, n_test : int
    best_model : str
    table : DataFrame
        The group's models, best first: BT score with its interval, P(best), distinguishable.
    examples : DataFrame
        The most typical queries (highest cosine to the centroid of the group's embeddings).
    losses : DataFrame
        Queries of the group on which another model scored higher than the group's best.
    n_losses : int
        How many queries of the group its best model lost (the table shows the largest margins).
    n_hidden : int
        Queries of the group never quoted (hidden categories).
    """

    group: int | str
    name: str
    n_train: int
    n_test: int
    best_model: str
    table: pd.DataFrame
    examples: pd.DataFrame
    losses: pd.DataFrame
    n_losses: int
    n_hidden: int

    def _heading(self) -> str:
        return (
            f"group {self.group}: {self.name} ({self.n_train} training, {self.n_test} test "
            f"queries); best model {self.best_model}"
        )

    def __str__(self) -> str:
        with pd.option_context("display.width", 160, "display.max_colwidth", 90):
            parts = [
                self._heading(),
                "",
                self.table.to_string(index=False),
                "",
                "most typical queries (nearest the centroid of the group's embeddings):",
                self.examples.to_string(index=False) if len(self.examples) else "(none shown)",
                "",
                f"queries where {self.best_model} lost ({self.n_losses} of the group's queries; "
                "largest margins first):",
                self.losses.to_string(index=False) if len(self.losses) else "(none)",
            ]
        if self.n_hidden:
            parts.append(f"({self.n_hidden} queries of hidden categories are never quoted)")
        return "\n".join(parts)

    def _repr_html_(self) -> str:
        parts = [
            f"<h4>{html.escape(self._heading())}</h4>",
            self.table.to_html(index=False),
            "<p>Most typical queries (nearest the centroid of the group's embeddings):</p>",
            self.examples.to_html(index=False),
            f"<p>Queries where {html.escape(self.best_model)} lost ({self.n_losses}; largest "
            "margins first):</p>",
            self.losses.to_html(index=False),
        ]
        if self.n_hidden:
            parts.append(f"<p>{self.n_hidden} queries of hidden categories are never quoted.</p>")
        return "\n".join(parts)


# --------------------------------------------------------------------------------------------------
# the grouping


def _grouping_estimator(fitted: dict | None, method: str | None):
    """The method name and the fitted estimator of the grouping (None for the categories)."""
    if method == CATEGORIES:
        return CATEGORIES, None
    if not fitted:
        raise ValueError(
            f"capability_map needs the fitted methods for method={method!r} "
            f"(or method={CATEGORIES!r} to group by the human categories)"
        )
    if method is None:  # ECC-CV, else ECC, else the first method but the global BT
        preferred = ("ecc_cv", "ecc", *fitted)
        method = next((m for m in preferred if m in fitted and m != "global"), "global")
    if method not in fitted:
        raise ValueError(f"method {method!r} was not fitted; choose from {sorted(fitted)}")
    return method, fitted[method]


def _method_detail(method: str, estimator) -> str:
    """The grouping in words (``"ECC-CV, which chose human labels (alpha 0.1)"``)."""
    from ecc_lib.labels import method_name

    if estimator is None:
        return "human categories"
    best = getattr(estimator, "best_params_", None)
    if isinstance(best, dict):
        family = str(best.get("family", "?"))
        shorts = (("n_clusters", "K"), ("temperature", "T"), ("lam", "lam"), ("alpha", "BT prior"))
        parts = [f"{short} {best[key]:g}" for key, short in shorts if best.get(key) is not None]
        settings = f" ({', '.join(parts)})" if parts else ""
        return f"{method_name(method)}, which chose {method_name(family)}{settings}"
    k = getattr(estimator, "theta_", np.zeros((1, 1))).shape[0]
    return f"{method_name(method)}, {k} cluster{'' if k == 1 else 's'}"


def _estimator_alpha(estimator) -> float:
    """The BT prior precision of the grouping's fits (``DEFAULT_ALPHA`` where it has none)."""
    inner = getattr(estimator, "best_estimator_", estimator)
    value = getattr(inner, "alpha", None)
    return float(value) if isinstance(value, int | float) and value >= 0 else DEFAULT_ALPHA


def _assignments(data: ProtocolData, estimator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(train_group, test_group, group_keys)``: group index of each training and test query
    (``-1`` for a test category unseen in training) and the key (cluster number or category) of
    each group index."""
    if estimator is None:
        if data.labels is None:
            raise ValueError(f"method={CATEGORIES!r} needs queries with a category")
        keys, train = np.unique(data.labels_train.astype(str), return_inverse=True)
        test_labels = data.labels_test.astype(str)
        pos = np.clip(np.searchsorted(keys, test_labels), 0, len(keys) - 1)
        test = np.where(keys[pos] == test_labels, pos, -1)
        return train.astype(np.int64), test.astype(np.int64), keys.astype(object)
    # training queries are placed as test queries are, by their embedding (and category) alone:
    # the fit's responsibilities also read each query's own comparisons, so a group made of the
    # queries a model won would "find" that model best with certainty (selection on the outcome)
    resp_train, resp_test = (
        np.asarray(estimator.predict_responsibilities(x, mode="embedding", labels=labels))
        for x, labels in ((data.x_train, data.labels_train), (data.x_test, data.labels_test))
    )
    k = max(
        np.asarray(estimator.responsibilities_).shape[1], resp_train.shape[1], resp_test.shape[1]
    )
    train, test = resp_train.argmax(axis=1), resp_test.argmax(axis=1)
    return train.astype(np.int64), test.astype(np.int64), np.arange(int(k)).astype(object)


# --------------------------------------------------------------------------------------------------
# names: dominant categories and class-based TF-IDF terms


def class_tfidf_terms(
    texts: np.ndarray,
    groups: np.ndarray,
    n_groups: int,
    *,
    n_terms: int = 5,
    exclude: np.ndarray | None = None,
) -> list[list[str]]:
    """The most distinctive terms of each group by class-based TF-IDF.

    ``weight(t, g) = tf(t, g) * log(1 + A / f(t))`` with ``tf`` the term's share of the group's
    words, ``A`` the mean number of words per group and ``f(t)`` the term's count over all groups
    (the c-TF-IDF of topic-modelling libraries), from scikit-learn's ``CountVectorizer`` (English
    stop words removed, words of 3 letters or more).

    Parameters
    ----------
    texts : ndarray of str, shape (n,)
    groups : ndarray of int, shape (n,)
        Group of each text in ``[0, n_groups)`` (others are ignored).
    n_groups : int
    n_terms : int, default 5
        Terms per group at most.
    exclude : ndarray of bool, shape (n,), optional
        Texts left out of the counts (hidden categories).

    Returns
    -------
    list of list of str
        Per group its terms, most distinctive first (fewer where the group has fewer words).
    """
    from sklearn.feature_extraction.text import CountVectorizer

    texts = np.asarray(texts, dtype=object).astype(str)
    groups = np.asarray(groups, dtype=np.int64)
    keep = (groups >= 0) & (groups < n_groups)
    if exclude is not None:
        keep &= ~np.asarray(exclude, dtype=bool)
    vectorizer = CountVectorizer(
        stop_words="english", token_pattern=_TOKEN_PATTERN, lowercase=True, dtype=np.float64
    )
    try:
        counts = vectorizer.fit_transform(texts[keep])
    except ValueError:  # no text kept, or no word of 3 letters outside the stop words
        return [[] for _ in range(n_groups)]
    rows = groups[keep]
    onehot = sp.csr_matrix(
        (np.ones(len(rows)), (rows, np.arange(len(rows)))), shape=(n_groups, len(rows))
    )
    per_group = np.asarray((onehot @ counts).todense())  # (G, V)
    words = per_group.sum(axis=1, keepdims=True)
    total = per_group.sum(axis=0)
    mean_words = float(words[words > 0].mean()) if (words > 0).any() else 1.0
    with np.errstate(invalid="ignore", divide="ignore"):
        tf = np.where(words > 0, per_group / np.maximum(words, 1.0), 0.0)
        weight = tf * np.log1p(mean_words / np.maximum(total, 1.0))
    weight = np.where(per_group > 0, weight, -np.inf)
    vocabulary = vectorizer.get_feature_names_out()
    top = np.argsort(-weight, axis=1, kind="stable")[:, :n_terms]
    return [
        [str(vocabulary[j]) for j in top[g] if np.isfinite(weight[g, j])] for g in range(n_groups)
    ]


def _category_text(labels: np.ndarray | None, groups: np.ndarray, n_groups: int) -> list[str]:
    """``"gsm8k 73%, math 20%"``: each group's categories with a share of 10% or more (at most
    two; the first always)."""
    if labels is None:
        return [""] * n_groups
    frame = pd.DataFrame({"group": groups, "category": labels.astype(str)})
    shares = frame.groupby("group")["category"].value_counts(normalize=True)
    out = [""] * n_groups
    for g, part in shares.groupby(level=0):
        part = part.droplevel(0)
        kept = [(c, s) for i, (c, s) in enumerate(part.items()) if i == 0 or s >= 0.1][:2]
        out[int(g)] = ", ".join(f"{c} {100 * s:.0f}%" for c, s in kept)
    return out


def unique_group_names(
    categories: list[str], terms: list[list[str]], keys: list[Any], *, n_terms: int = 3
) -> list[str]:
    """Names ``"CATEGORIES: term, term, term"``, unique across groups: groups that share a name
    get more terms (up to all of theirs), then their group number.

    Parameters
    ----------
    categories : list of str
        Per group its dominant categories (``""`` without categories).
    terms : list of list of str
        Per group its distinctive terms, most distinctive first.
    keys : list
        Per group its number (or category), the last resort.
    n_terms : int, default 3

    Returns
    -------
    list of str
    """

    def name(i: int, k: int) -> str:
        words = ", ".join(terms[i][:k])
        if categories[i] and words:
            return f"{categories[i]}: {words}"
        return categories[i] or words or f"group {keys[i]}"

    width = [n_terms] * len(terms)
    names = [name(i, n_terms) for i in range(len(terms))]
    longest = max((len(t) for t in terms), default=0)
    while True:
        counts = pd.Series(names).value_counts()
        clashing = [i for i, n in enumerate(names) if counts[n] > 1 and width[i] < len(terms[i])]
        if not clashing or min(width[i] for i in clashing) >= longest:
            break
        for i in clashing:
            width[i] += 1
            names[i] = name(i, width[i])
    counts = pd.Series(names).value_counts()
    return [f"{n} (#{keys[i]})" if counts[n] > 1 else n for i, n in enumerate(names)]


# --------------------------------------------------------------------------------------------------
# the map


def capability_map(
    data: ProtocolData,
    fitted: dict | None = None,
    *,
    method: str | None = None,
    n_boot: int = DEFAULT_MAP_BOOT,
    held_out_boot: int = DEFAULT_N_BOOT,
    confidence: float = 0.95,
    alpha: float | None = None,
    n_terms: int = 3,
    max_terms: int = 5,
    hidden_categories: tuple[str, ...] = HIDDEN_EXAMPLE_CATEGORIES,
    min_queries: int = MIN_GROUP_QUERIES,
    random_state: int | np.random.Generator | None = 0,
) -> CapabilityMap:
    """Which model is best for which group of queries, how sure that is, and what it is worth.

    Parameters
    ----------
    data : ProtocolData
        The protocol's data (train/test split, comparisons, embeddings, scores).
    fitted : dict, optional
        The fitted methods by name (:func:`~ecc_lib.protocol.methods.fit_methods`); not needed for
        ``method="categories"``.
    method : str, optional
        The grouping: a fitted method's name, or ``"categories"`` (the human categories).
        Default ``"ecc_cv"`` (the method ECC-CV chose) where it was fitted, else ``"ecc"``.
    n_boot : int, default 200
        Bootstrap draws over each group's training queries (batched BT fits).
    held_out_boot : int, default 1000
        Bootstrap draws over test queries of the held-out value (paired).
    confidence : float, default 0.95
    alpha : float, optional
        BT prior precision of the per-group fits (default: the grouping's, else 1).
    n_terms, max_terms : int, default 3 and 5
        Distinctive terms in a group's name, and at most (to make names unique).
    hidden_categories : tuple of str
        Categories whose texts are never used for names or shown.
    min_queries : int, default 10
        A group with fewer training queries (with comparisons) keeps its point scores and best
        model, but claims nothing: its intervals and P(best) are NaN and no model is
        distinguishable from its best (a bootstrap of a handful of queries that all went one way
        would say "certain").
    random_state : int, Generator or None, default 0
        Seed of both bootstraps.

    Returns
    -------
    CapabilityMap
    """
    _check_map_arguments(n_boot, held_out_boot, confidence, min_queries, n_terms, max_terms)
    method, estimator = _grouping_estimator(fitted, method)
    alpha = _estimator_alpha(estimator) if alpha is None else float(alpha)
    if alpha < 0:
        raise ValueError(f"alpha must be >= 0, got {alpha}")
    rng = np.random.default_rng(random_state)
    train_group, test_group, keys = _assignments(data, estimator)
    train = data.train
    m = train.n_models
    counts = pair_counts(train, normalize=True)  # each query counts once (1 / N_q), as ECC
    has_pairs = np.bincount(train.query, minlength=train.n_queries) > 0
    n_keys = len(keys)
    n_train_k = np.bincount(train_group[has_pairs], minlength=n_keys)
    present = np.flatnonzero(n_train_k > 0)  # groups with a training query with comparisons
    order = present[np.argsort(-n_train_k[present], kind="stable")]
    # the global best: one BT fit over every training query
    global_theta = fit_bt_pairs(
        counts.winner, counts.loser, np.asarray(counts.matrix.sum(axis=0)).ravel(), m, alpha=alpha
    )
    observed_any = np.zeros(m, dtype=bool)
    observed_any[np.concatenate([train.model_a, train.model_b])] = True
    global_best = int(np.argmax(np.where(observed_any, global_theta, -np.inf)))
    n_test_k = np.bincount(test_group[test_group >= 0], minlength=n_keys)
    labels_train = None if data.labels is None else data.labels_train
    hidden = hidden_category_mask(labels_train, len(train_group), hidden_categories)
    terms = class_tfidf_terms(
        data.texts[data.train_mask], train_group, n_keys, n_terms=max_terms, exclude=hidden
    )
    cats = _category_text(labels_train, train_group, n_keys)
    in_order = ([column[g] for g in order] for column in (cats, terms, keys))
    names_present = unique_group_names(*in_order, n_terms=n_terms)
    models = tuple(train.models)
    matrix = counts.matrix.tocsr()
    tail = (1.0 - confidence) / 2.0
    best_of = np.full(n_keys, -1, dtype=np.int64)  # by group key (-1: no training comparisons)
    group_rows, long_rows = [], []
    for i, g in enumerate(order):  # one batched BT fit over all draws per group
        members = np.flatnonzero((train_group == g) & has_pairs)
        seen, point, reps = _group_fit(matrix[members], counts, m, n_boot, alpha, rng)
        est = _GroupEstimates.from_fit(seen, point, reps, tail, enough=len(members) >= min_queries)
        best_of[g] = est.best
        identity = {
            "group": keys[g],
            "name": names_present[i],
            "n_train": int(n_train_k[g]),
            "n_test": int(n_test_k[g]),
        }
        descr = {"categories": cats[g], "terms": ", ".join(terms[g][:max_terms])}
        group_rows.append(est.group_row(identity, descr, models, global_best))
        long_rows.append(est.model_rows(identity, models))
    groups = pd.DataFrame(group_rows)
    rows = pd.concat(long_rows, ignore_index=True) if long_rows else pd.DataFrame()
    held_out = _held_out_value(
        data,
        test_group,
        best_of,
        global_best,
        n_boot=held_out_boot,
        confidence=confidence,
        random_state=rng,
    )
    share = float((groups["best_model"] != models[global_best]).mean()) if len(groups) else 0.0
    return CapabilityMap(
        method=method,
        method_detail=_method_detail(method, estimator),
        models=models,
        groups=groups,
        rows=rows,
        global_best=models[global_best],
        held_out=held_out,
        share_groups_other_best=share,
        n_boot=int(n_boot),
        confidence=float(confidence),
        alpha=alpha,
        data=data,
        train_group=train_group,
        test_group=np.where(best_of[np.maximum(test_group, 0)] >= 0, test_group, -1),
        seed=None if isinstance(random_state, np.random.Generator) else random_state,
    )


def _check_map_arguments(
    n_boot: int,
    held_out_boot: int,
    confidence: float,
    min_queries: int,
    n_terms: int,
    max_terms: int,
) -> None:
    """Refuse out-of-range arguments of :func:`capability_map` (``ValueError``)."""
    if n_boot < 2 or held_out_boot < 2:
        raise ValueError(f"n_boot and held_out_boot must be >= 2, got {n_boot}, {held_out_boot}")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence}")
    if min_queries < 1:
        raise ValueError(f"min_queries must be >= 1, got {min_queries}")
    if not 1 <= n_terms <= max_terms:
        raise ValueError(f"need 1 <= n_terms <= max_terms, got {n_terms}, {max_terms}")


def _group_fit(
    sub: sp.csr_matrix, counts: Any, m: int, n_boot: int, alpha: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """One group's BT fit and its ``n_boot`` bootstrap refits over its training queries (one
    batched fit): ``(observed models, point scores (m,), replicate scores (n_boot, m))``.

    ``sub`` holds the group's rows of the normalised pair-count matrix."""
    cols = np.unique(sub.indices)
    sub = sub[:, cols].tocsc()
    seen = np.zeros(m, dtype=bool)
    seen[counts.winner[cols]] = seen[counts.loser[cols]] = True
    # the fit over the group's observed models only: an unobserved model's score is the
    # prior's 0 and moves no other score, so this is the same fit in fewer dimensions
    local = np.cumsum(seen) - 1
    winner, loser, m_g = local[counts.winner[cols]], local[counts.loser[cols]], int(seen.sum())
    point_g = fit_bt_pairs(winner, loser, np.asarray(sub.sum(axis=0)).ravel(), m_g, alpha=alpha)
    n_g = sub.shape[0]
    draws = rng.integers(0, n_g, size=(n_boot, n_g))
    flat = (np.arange(n_boot)[:, None] * n_g + draws).ravel()
    multiplicity = np.bincount(flat, minlength=n_boot * n_g).reshape(n_boot, n_g)
    weights = np.asarray((sub.T @ multiplicity.T.astype(float)).T)
    reps_g = fit_bt_pairs(
        winner,
        loser,
        weights,
        m_g,
        alpha=alpha,
        theta0=np.broadcast_to(point_g, (n_boot, m_g)),
        tol=REPLICATE_TOL,
    )
    point = np.zeros(m)
    point[seen] = point_g
    reps = np.zeros((n_boot, m))
    reps[:, seen] = reps_g
    return seen, point, reps


@dataclass
class _GroupEstimates:
    """One group's estimates per model: score, interval, P(best), whether it is distinguishable
    from the group's best and whether it was observed; the best model and the models ranked,
    best first."""

    score: np.ndarray
    low: np.ndarray
    high: np.ndarray
    p_best: np.ndarray
    disting: np.ndarray
    observed: np.ndarray
    best: int
    ranked: np.ndarray

    @classmethod
    def from_fit(
        cls, seen: np.ndarray, point: np.ndarray, reps: np.ndarray, tail: float, *, enough: bool
    ) -> _GroupEstimates:
        """The estimates of one fit of :func:`_group_fit`; without ``enough`` training queries
        they claim nothing (NaN intervals and P(best), nothing distinguishable)."""
        score = np.where(seen, point, np.nan)
        best = int(np.argmax(np.where(seen, point, -np.inf)))
        top = np.argmax(np.where(seen, reps, -np.inf), axis=1)
        p_best = np.bincount(top, minlength=len(point)) / len(reps)
        low, high = np.where(seen, np.quantile(reps, [tail, 1.0 - tail], axis=0), np.nan)
        disting = seen & (np.quantile(reps[:, [best]] - reps, tail, axis=0) > 0)
        disting[best] = False
        if not enough:  # too few queries for the bootstrap to say how sure
            p_best, low, high = (np.full(len(point), np.nan) for _ in range(3))
            disting = np.zeros(len(point), dtype=bool)
        ranked = np.argsort(-np.where(seen, score, -np.inf), kind="stable")
        return cls(score, low, high, p_best, disting, seen, best, ranked)

    def group_row(
        self, identity: dict, descr: dict, models: tuple[str, ...], global_best: int
    ) -> dict:
        """The group's row of the groups table: its best model and runner-up, and whether it
        needs a model other than the global best."""
        best = int(self.ranked[0])
        runner = int(self.ranked[1]) if self.observed.sum() > 1 else -1
        p_best, disting = self.p_best, self.disting
        return {
            "group": identity["group"],
            "name": identity["name"],
            **descr,
            "n_train": identity["n_train"],
            "n_test": identity["n_test"],
            "best_model": models[best],
            "p_best": float(p_best[best]),
            "runner_up": models[runner] if runner >= 0 else None,
            "runner_up_p_best": float(p_best[runner]) if runner >= 0 else float("nan"),
            "global_best_distinguishable": bool(disting[global_best]),
            "needs_other_model": bool(best != global_best and disting[global_best]),
        }

    def model_rows(self, identity: dict, models: tuple[str, ...]) -> pd.DataFrame:
        """The group's rows of the long table, one per model, best first."""
        return pd.DataFrame(
            {
                **identity,
                "model": list(models),
                "score": self.score,
                "score_low": self.low,
                "score_high": self.high,
                "p_best": self.p_best,
                "best": np.arange(len(models)) == int(self.ranked[0]),
                "distinguishable": self.disting,
                "observed": self.observed,
            }
        ).iloc[self.ranked]


def _held_out_value(
    data: ProtocolData,
    test_group: np.ndarray,
    best_of: np.ndarray,
    global_best: int,
    *,
    n_boot: int,
    confidence: float,
    random_state,
) -> dict:
    """Routed (each test query to its group's best) minus global best, mean score per test query,
    with the paired bootstrap over test queries; a test query whose group has no training query
    is sent to the global best (``n_test_unmapped``), one without a score of either model is left
    out of both arms (``n_test_scored``)."""
    scores = data.scores[data.test_mask]
    n_test = len(scores)
    mapped = (test_group >= 0) & (best_of[np.maximum(test_group, 0)] >= 0)
    routed_model = np.where(mapped, best_of[np.maximum(test_group, 0)], global_best)
    rows = np.arange(n_test)
    routed = scores[rows, routed_model]
    reference = scores[rows, np.full(n_test, global_best)]
    both = np.isfinite(routed) & np.isfinite(reference)
    out = {
        "n_test": int(n_test),
        "n_test_scored": int(both.sum()),
        "n_test_unmapped": int((~mapped).sum()),
        "share_test_routed_elsewhere": float((routed_model != global_best).mean())
        if n_test
        else float("nan"),
    }
    nan, nan2 = float("nan"), [float("nan"), float("nan")]
    r_mean, r_ci, g_mean, g_ci = nan, nan2, nan, nan2
    diff = {"estimate": nan, "ci95": nan2}  # no test query with both scores: nothing to say
    if both.any():
        routed, reference = routed[both], reference[both]
        index = bootstrap_indices(len(routed), n_boot=n_boot, random_state=random_state)
        r_mean, r_ci, r_reps = mean_with_replicates(routed, index, confidence=confidence)
        g_mean, g_ci, g_reps = mean_with_replicates(reference, index, confidence=confidence)
        diff = paired_difference(r_mean, r_reps, g_mean, g_reps, confidence=confidence)
    return {
        **out,
        "estimate": diff["estimate"],
        "ci95": diff["ci95"],
        "routed_score": r_mean,
        "routed_score_ci95": r_ci,
        "global_score": g_mean,
        "global_score_ci95": g_ci,
    }


# --------------------------------------------------------------------------------------------------
# exploring one group


def _find_group(cmap: CapabilityMap, group: int | str) -> int:
    """The row of ``group`` (its number, category or name) in ``cmap.groups``."""
    groups = cmap.groups
    for column in ("group", "name"):
        hits = np.flatnonzero(groups[column].astype(str).to_numpy() == str(group))
        if len(hits):
            return int(hits[0])
    raise ValueError(
        f"no group {group!r} in the map; groups: {groups['group'].astype(str).tolist()[:20]}"
    )


def show_group(
    cmap: CapabilityMap,
    group: int | str,
    *,
    n_examples: int = 5,
    n_losses: int = 5,
    max_chars: int = 160,
    hidden_categories: tuple[str, ...] = HIDDEN_EXAMPLE_CATEGORIES,
    tie_tolerance: float | None = None,
) -> GroupView:
    """One group of a capability map: its table, its most typical queries, where its best lost.

    Parameters
    ----------
    cmap : CapabilityMap
    group : int or str
        The group's number (or category, for ``method="categories"``) or its name.
    n_examples : int, default 5
        Typical queries shown: the group's training queries nearest (cosine) the centroid of the
        group's training embeddings.
    n_losses : int, default 5
        Lost queries shown (largest margins first): queries of the group (training and test) on
        which another model's mean score beats the group's best model's by more than the tie
        tolerance.
    max_chars : int, default 160
        Texts are shortened to this length.
    hidden_categories : tuple of str
        Queries of these categories are never quoted (counted in ``n_hidden``).
    tie_tolerance : float, optional
        Default: the protocol's.

    Returns
    -------
    GroupView
    """
    row = cmap.groups.iloc[_find_group(cmap, group)]
    data = cmap.data
    key = row["group"]
    table = cmap.rows[cmap.rows["group"].astype(str) == str(key)]
    table = table[table["observed"]]
    shown = pd.DataFrame(
        {
            "model": table["model"].to_numpy(),
            "BT score": table["score"].round(3).to_numpy(),
            f"{100 * cmap.confidence:.0f}% interval": [
                f"[{lo:+.2f}, {hi:+.2f}]" if np.isfinite(lo) and np.isfinite(hi) else "\u2013"
                for lo, hi in zip(table["score_low"], table["score_high"], strict=True)
            ],
            "P(best)": table["p_best"]
            .round(3)
            .astype(object)
            .where(table["p_best"].notna(), "\u2013")
            .to_numpy(),
            "distinguishable from the best": np.where(
                table["best"], "(best)", np.where(table["distinguishable"], "yes", "no")
            ),
        }
    )
    # the group index as assign() numbered it: the position of its key among all keys
    index = _group_index(cmap, key)
    labels = data.labels
    train_rows = np.flatnonzero(data.train_mask)[cmap.train_group == index]
    test_rows = np.flatnonzero(data.test_mask)[cmap.test_group == index]
    hidden_all = hidden_category_mask(labels, len(data.texts), hidden_categories)
    x = data.embeddings[train_rows].astype(float)
    examples = pd.DataFrame(columns=["query_id", "category", "cosine to centroid", "text"])
    if len(train_rows):
        x = x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)
        centroid = x.mean(axis=0)
        centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
        cosine = x @ centroid
        keep = ~hidden_all[train_rows]
        pick = np.flatnonzero(keep)[np.argsort(-cosine[keep], kind="stable")][:n_examples]
        examples = pd.DataFrame(
            {
                "query_id": data.comparisons.query_ids[train_rows[pick]],
                "category": labels[train_rows[pick]] if labels is not None else "",
                "cosine to centroid": np.round(cosine[pick], 3),
                "text": [shorten_text(t, max_chars) for t in data.texts[train_rows[pick]]],
            }
        )
    best = cmap.models.index(row["best_model"])
    tol = tie_tolerance
    if tol is None:
        tol = data.params.get("tie_tolerance", DEFAULT_TIE_TOLERANCE)
    rows = np.concatenate([train_rows, test_rows])
    split = np.array(["train"] * len(train_rows) + ["test"] * len(test_rows))
    scores = data.scores[rows]
    best_score = scores[:, best]
    others = np.where(
        np.arange(len(cmap.models)) == best, -np.inf, np.nan_to_num(scores, nan=-np.inf)
    )
    winner = others.argmax(axis=1) if len(rows) else np.zeros(0, dtype=np.int64)
    winner_score = others[np.arange(len(rows)), winner] if len(rows) else np.zeros(0)
    lost = np.isfinite(best_score) & (winner_score > best_score + tol)
    margin = np.where(lost, winner_score - best_score, -np.inf)
    quotable = lost & ~hidden_all[rows]
    pick = np.flatnonzero(quotable)[np.argsort(-margin[quotable], kind="stable")][:n_losses]
    losses = pd.DataFrame(
        {
            "query_id": data.comparisons.query_ids[rows[pick]],
            "split": split[pick],
            "category": labels[rows[pick]] if labels is not None else "",
            f"{row['best_model']} score": np.round(best_score[pick], 3),
            "best other model": [cmap.models[w] for w in winner[pick]],
            "its score": np.round(winner_score[pick], 3),
            "text": [shorten_text(t, max_chars) for t in data.texts[rows[pick]]],
        }
    )
    return GroupView(
        group=key,
        name=str(row["name"]),
        n_train=int(row["n_train"]),
        n_test=int(row["n_test"]),
        best_model=str(row["best_model"]),
        table=shown.reset_index(drop=True),
        examples=examples,
        losses=losses,
        n_losses=int(lost.sum()),
        n_hidden=int(hidden_all[rows].sum()),
    )


def _group_index(cmap: CapabilityMap, key) -> int:
    """The internal index of a group key (the cluster number, or the category's position among
    the training categories)."""
    if cmap.method == CATEGORIES:
        categories = np.unique(cmap.data.labels_train.astype(str))
        return int(np.searchsorted(categories, str(key)))
    return int(key)


__all__ = [
    "show_group",
]
