"""Pairwise model comparisons derived from outcomes, and query-level splits.

A comparison says which of two models did better on one query: ``y = 1`` when ``model_b`` beat
``model_a``, ``0`` when ``model_a`` won, ``0.5`` for a tie. Several observations of one
(query, model) pair (rewrites, decodes) are compared through their mean score.

Everything is vectorised over queries, never a Python loop over queries or pairs. With few models
(``DENSE_MAX_MODELS``) pairs are drawn with one seeded random key per (query, pair); with more, by
drawing pair numbers among each query's eligible pairs, in ``O(queries x n_pairs)`` draws and
``O(queries x models)`` memory, so a 1,000-model leaderboard needs nothing of size ``queries x M^2``.
"""

from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.data.schema import DataValidationError, QueryModelAxes

logger = logging.getLogger(__name__)

TIE_POLICIES = ("drop", "half")
DENSE_MAX_MODELS = 16
"""Up to this many models, pairs are drawn with one random key per (query, pair) (the draw of
earlier versions, kept so that seeds give the same pairs); above it, by index sampling over each
query's eligible pairs, in O(queries x n_pairs) draws."""
KEY_CHUNK_ROWS = 8192
SORT_CHUNK_ROWS = 2048


@dataclass(frozen=True)
class Comparisons(QueryModelAxes):
    """Pairwise comparisons in integer-coded arrays.

    Attributes
    ----------
    query : ndarray of int64, shape (n,)
        Row of each comparison's query in :attr:`query_ids` (and in any embedding matrix aligned to
        it).
    model_a, model_b : ndarray of int64, shape (n,)
        Indices into :attr:`models`.
    y : ndarray of float64, shape (n,)
        1 when ``model_b`` beat ``model_a``, 0 when ``model_a`` won, 0.5 for a tie.
    query_ids : ndarray of str, shape (n_queries,)
        The queries the rows refer to, in embedding order.
    models : tuple of str
        Model names.
    dropped_query_ids : tuple of str
        Queries left out because they had fewer than ``min_pairs`` usable pairs.

    Rows are grouped by query; within a query they keep their sampled order, so the first rows of a
    query are its probe comparisons (see :func:`split_probe`).
    """

    query: np.ndarray
    model_a: np.ndarray
    model_b: np.ndarray
    y: np.ndarray
    query_ids: np.ndarray
    models: tuple[str, ...]
    dropped_query_ids: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        n = len(self.y)
        for name in ("query", "model_a", "model_b"):
            if len(getattr(self, name)) != n:
                raise ValueError(
                    f"Comparisons.{name} has {len(getattr(self, name))} rows, y has {n}"
                )
        if n and (self.query.min() < 0 or self.query.max() >= len(self.query_ids)):
            raise ValueError("Comparisons.query holds an index outside query_ids")
        if n and max(self.model_a.max(), self.model_b.max()) >= len(self.models):
            raise ValueError("Comparisons model index outside models")
        if n and np.any(self.model_a == self.model_b):
            raise ValueError("a comparison pits a model against itself")

    def __len__(self) -> int:
        return int(len(self.y))

    def pairs_per_query(self) -> np.ndarray:
        """Number of comparisons of each query, aligned to :attr:`query_ids`.

        Returns
        -------
        ndarray of int, shape (n_queries,)
        """
        return np.bincount(self.query, minlength=self.n_queries)

    def to_frame(self) -> pd.DataFrame:
        """Comparisons as a DataFrame with ``query_id, model_a, model_b, y``.

        Returns
        -------
        DataFrame
        """
        models = np.asarray(self.models, dtype=object)
        return pd.DataFrame(
            {
                "query_id": self.query_ids[self.query],
                "model_a": models[self.model_a],
                "model_b": models[self.model_b],
                "y": self.y,
            }
        )

    @classmethod
    def from_frame(
        cls,
        frame: pd.DataFrame,
        *,
        query_ids: np.ndarray | list[str] | None = None,
        models: list[str] | tuple[str, ...] | None = None,
    ) -> Comparisons:
        """Build from a DataFrame with ``query_id, model_a, model_b, y``.

        ``query_ids`` fixes the query order (for alignment with embeddings); by default queries are
        ordered by first appearance. ``models`` fixes the model order; by default sorted names.

        Parameters
        ----------
        frame : DataFrame
            Columns ``query_id, model_a, model_b, y``.
        query_ids : sequence of str, optional
            Query order.
        models : sequence of str, optional
            Model order.

        Returns
        -------
        Comparisons
        """
        missing = [c for c in ("query_id", "model_a", "model_b", "y") if c not in frame.columns]
        if missing:
            raise DataValidationError(f"comparisons table is missing column(s) {missing}")
        qid = frame["query_id"].astype(str).to_numpy()
        if query_ids is None:
            query_ids = pd.unique(qid)
        query_ids = np.asarray(query_ids, dtype=object).astype(str)
        if models is None:
            models = sorted(set(frame["model_a"].astype(str)) | set(frame["model_b"].astype(str)))
        models = tuple(str(m) for m in models)
        query_index = pd.Index(query_ids).get_indexer(qid)
        if (query_index < 0).any():
            first = qid[np.flatnonzero(query_index < 0)[0]]
            raise DataValidationError(f"comparison for query '{first}' not in query_ids")
        model_index = pd.Index(models)
        a = model_index.get_indexer(frame["model_a"].astype(str))
        b = model_index.get_indexer(frame["model_b"].astype(str))
        if (a < 0).any() or (b < 0).any():
            raise DataValidationError("comparison names a model not in models")
        y = frame["y"].to_numpy(dtype=float)
        if not np.isin(y, (0.0, 0.5, 1.0)).all():
            raise DataValidationError("comparison outcomes y must be 0, 0.5 or 1")
        order = np.argsort(query_index, kind="stable")
        return cls(
            query=query_index[order].astype(np.int64),
            model_a=a[order].astype(np.int64),
            model_b=b[order].astype(np.int64),
            y=y[order],
            query_ids=query_ids,
            models=models,
        )

    def take(self, rows: np.ndarray) -> Comparisons:
        """Rows ``rows`` (a boolean mask or indices), keeping the query and model coding.

        Parameters
        ----------
        rows : ndarray of bool or int
            Rows to keep.

        Returns
        -------
        Comparisons
        """
        return Comparisons(
            query=self.query[rows],
            model_a=self.model_a[rows],
            model_b=self.model_b[rows],
            y=self.y[rows],
            query_ids=self.query_ids,
            models=self.models,
        )

    def _keep_queries(self, query_mask: np.ndarray) -> Comparisons:
        # the rows of the kept queries, with ``query`` re-coded to index the kept queries
        new_index = np.cumsum(query_mask) - 1
        kept = self.take(query_mask[self.query])
        return replace(
            kept,
            query=new_index[kept.query].astype(np.int64),
            query_ids=self.query_ids[query_mask],
        )


def score_matrix(
    outcomes: pd.DataFrame,
    *,
    query_ids: np.ndarray | list[str] | None = None,
    models: list[str] | tuple[str, ...] | None = None,
) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """Mean score per (query, model) as a dense matrix.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes table (``query_id, model, score``).
    query_ids : sequence of str, optional
        Row order (default: order of first appearance).
    models : sequence of str, optional
        Column order (default: sorted names).

    Returns
    -------
    scores : ndarray, shape (n_queries, n_models)
        Mean over all observations of the pair; NaN where a model has no observation of a query.
    query_ids : ndarray of str
    models : tuple of str
    """
    qid = outcomes["query_id"].astype(str)
    model = outcomes["model"].astype(str)
    if query_ids is None:
        query_ids = pd.unique(qid.to_numpy())
    if models is None:
        models = sorted(model.unique())
    query_ids = np.asarray(query_ids, dtype=object).astype(str)
    models = tuple(models)
    qi = pd.Index(query_ids).get_indexer(qid)
    mi = pd.Index(models).get_indexer(model)
    keep = (qi >= 0) & (mi >= 0)
    flat = qi[keep] * len(models) + mi[keep]
    size = len(query_ids) * len(models)
    sums = np.bincount(flat, weights=outcomes["score"].to_numpy(float)[keep], minlength=size)
    counts = np.bincount(flat, minlength=size)
    with np.errstate(invalid="ignore", divide="ignore"):
        scores = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return scores.reshape(len(query_ids), len(models)), query_ids, models


def available_cpus() -> int:
    """CPUs this process may run on (its affinity mask on Linux, else ``os.cpu_count()``).

    Returns
    -------
    int
        At least 1.
    """
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def _sample_by_keys(
    scores: np.ndarray, n_pairs: int | None, ties: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """One uniform key per (query, model pair), the ``n_pairs`` smallest usable keys win.

    Processes ``KEY_CHUNK_ROWS`` queries at a time; the keys are drawn row-major in one stream, so
    the draw does not depend on the chunking.
    """
    n_rows, n_models = scores.shape
    ia, ib = np.triu_indices(n_models, k=1)
    out_rows, out_pairs, out_y = [], [], []
    for start in range(0, max(n_rows, 1), KEY_CHUNK_ROWS):  # one empty chunk without rows
        block = scores[start : start + KEY_CHUNK_ROWS]
        left, right = block[:, ia], block[:, ib]
        usable = ~(np.isnan(left) | np.isnan(right))
        if ties == "drop":
            usable &= left != right
        keys = rng.random(usable.shape)
        keys[~usable] = np.inf
        order = np.argsort(keys, axis=1, kind="stable")
        limit = order.shape[1] if n_pairs is None else min(n_pairs, order.shape[1])
        order = order[:, :limit]
        chosen = np.take_along_axis(usable, order, axis=1)
        rows, cols = np.nonzero(chosen)
        pair = order[rows, cols]
        lv, rv = left[rows, pair], right[rows, pair]
        out_rows.append(rows + start)
        out_pairs.append(pair)
        out_y.append(np.where(rv > lv, 1.0, np.where(rv < lv, 0.0, 0.5)))
    rows, pair, y = (np.concatenate(parts) for parts in (out_rows, out_pairs, out_y))
    return rows, ia[pair], ib[pair], y


def _sample_by_index(
    scores: np.ndarray, n_pairs: int, ties: str, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Uniform draw without replacement of ``n_pairs`` eligible pairs per query, in random order.

    Each query's observed models are sorted by score. With ``ties="drop"`` a pair is eligible when
    its two models lie in different groups of equal score, so the model at sorted position ``j``
    has as eligible lower partners the ``s_j`` positions before its group; with ``"half"`` every
    pair of observed models is eligible (``s_j = j``). Eligible pairs are numbered
    ``0 .. E_q - 1`` by upper position, then lower; ``n_pairs`` distinct numbers are drawn per
    query with Floyd's algorithm (vectorised over queries) and shuffled, then mapped back to
    models by a binary search in the cumulative counts of ``s_j``. Work and memory are
    ``O(queries x models)`` for the sort and ``O(queries x n_pairs)`` for the draw; nothing of
    size ``queries x M^2`` is built.
    """
    n_rows, n_models = scores.shape
    count_type = np.int32 if n_models * (n_models - 1) // 2 < 2**31 else np.int64
    order = np.empty((n_rows, n_models), dtype=np.int64)
    cum = np.empty((n_rows, n_models), dtype=count_type)
    pos = np.arange(n_models, dtype=count_type)

    def rank_rows(start: int) -> None:
        # sorted order and inclusive cumulative counts of eligible lower partners, for a chunk
        block = scores[start : start + SORT_CHUNK_ROWS]
        observed = ~np.isnan(block)
        n_obs = observed.sum(axis=1)
        if ties == "drop":
            order_b = np.argsort(block, axis=1)  # NaN last; order within ties is irrelevant
            ranked = np.take_along_axis(block, order_b, axis=1)
            new_group = np.ones(block.shape, dtype=bool)
            np.not_equal(ranked[:, 1:], ranked[:, :-1], out=new_group[:, 1:])
            lower = np.maximum.accumulate(np.where(new_group, pos, 0), axis=1)
        else:
            order_b = np.argsort(~observed, axis=1, kind="stable")  # observed models first
            lower = pos[None, :]
        partners = np.where(pos < n_obs[:, None], lower, 0)
        order[start : start + len(block)] = order_b
        np.cumsum(partners, axis=1, dtype=count_type, out=cum[start : start + len(block)])

    starts = range(0, n_rows, SORT_CHUNK_ROWS)
    with ThreadPoolExecutor(max(1, min(available_cpus(), len(starts)))) as pool:
        list(pool.map(rank_rows, starts))  # NumPy sorts release the GIL
    eligible = cum[:, -1].astype(np.int64)

    # Floyd's algorithm: n_pairs distinct numbers in [0, E_q) per query (all if E_q is smaller)
    take = np.minimum(eligible, n_pairs)
    draws = np.broadcast_to(np.arange(n_pairs, dtype=np.int64), (n_rows, n_pairs)).copy()
    big = np.flatnonzero(eligible > n_pairs)
    if len(big):
        sub = np.empty((len(big), n_pairs), dtype=np.int64)
        top = eligible[big]
        for s in range(n_pairs):
            j = top - n_pairs + s
            t = rng.integers(0, j + 1)
            seen = (sub[:, :s] == t[:, None]).any(axis=1)
            sub[:, s] = np.where(seen, j, t)
        draws[big] = sub
    keys = rng.random((n_rows, n_pairs))
    valid = np.arange(n_pairs)[None, :] < take[:, None]
    keys[~valid] = np.inf
    shuffle = np.argsort(keys, axis=1, kind="stable")
    draws = np.take_along_axis(draws, shuffle, axis=1)
    rows, slot = np.nonzero(np.take_along_axis(valid, shuffle, axis=1))
    number = draws[rows, slot]

    # upper position: the first whose inclusive cumulative count exceeds the number
    low = np.zeros(len(rows), dtype=np.int64)
    high = np.full(len(rows), n_models - 1, dtype=np.int64)
    for _ in range(int(np.ceil(np.log2(max(n_models, 2)))) + 1):
        mid = (low + high) // 2
        right = cum[rows, mid] <= number
        low = np.where(right, mid + 1, low)
        high = np.where(right, high, mid)
    upper = low
    before = np.where(upper > 0, cum[rows, np.maximum(upper - 1, 0)], 0)
    lower_pos = number - before
    m1, m2 = order[rows, upper], order[rows, lower_pos]
    a, b = np.minimum(m1, m2), np.maximum(m1, m2)
    left, right = scores[rows, a], scores[rows, b]
    y = np.where(right > left, 1.0, np.where(right < left, 0.0, 0.5))
    return rows, a, b, y


DEFAULT_TIE_TOLERANCE = defaults.TIE_TOLERANCE
"""Scores of one query closer than this count as tied (absolute, on the [0, 1] score scale):
continuous scores such as 0.70001 and 0.70000 are not a decisive pair (issue 23)."""


def snap_ties(scores: np.ndarray, *, tolerance: float = DEFAULT_TIE_TOLERANCE) -> np.ndarray:
    """Scores with near-equal values of a query made equal, so that ``!=`` reads "decisive".

    Each row is sorted; a value within ``tolerance`` of the previous sorted value joins its
    group, and every member of a group takes the group's smallest value (values more than
    ``tolerance`` apart always stay apart; a chain of close values forms one group). NaN stays
    NaN. ``tolerance <= 0`` returns the scores unchanged.

    Parameters
    ----------
    scores : ndarray, shape (n_queries, M)
    tolerance : float, default :data:`DEFAULT_TIE_TOLERANCE`

    Returns
    -------
    ndarray, shape (n_queries, M)
    """
    s = np.asarray(scores, dtype=float)
    if not tolerance > 0 or s.size == 0:
        return s
    order = np.argsort(s, axis=1)  # NaN last
    ranked = np.take_along_axis(s, order, axis=1)
    new_group = np.ones(ranked.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        new_group[:, 1:] = ~(ranked[:, 1:] - ranked[:, :-1] <= tolerance)
    pos = np.arange(s.shape[1])
    start = np.maximum.accumulate(np.where(new_group, pos, 0), axis=1)
    out = np.empty_like(s)
    np.put_along_axis(out, order, np.take_along_axis(ranked, start, axis=1), axis=1)
    return out


def _check_draw(n_pairs: int | None, ties: str) -> None:
    if ties not in TIE_POLICIES:
        raise ValueError(f"ties must be one of {TIE_POLICIES}, got {ties!r}")
    if n_pairs is not None and n_pairs < 1:
        raise ValueError(f"n_pairs must be >= 1 or None, got {n_pairs}")


def make_comparisons(
    outcomes: pd.DataFrame,
    *,
    n_pairs: int | None = None,
    ties: str = "drop",
    min_pairs: int = 1,
    query_ids: np.ndarray | list[str] | None = None,
    models: list[str] | tuple[str, ...] | None = None,
    random_state: int | np.random.Generator | None = None,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
) -> Comparisons:
    """Pairwise comparisons of models on each query.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes (``query_id, model, score``); repeated observations of a (query, model) pair
        are averaged before comparing.
    n_pairs : int, optional
        Keep at most this many pairs per query, drawn uniformly without replacement among the
        usable pairs (seeded). ``None`` keeps all pairs, in a seeded random order.
    ties : {"drop", "half"}
        ``"drop"`` keeps only pairs with a winner; ``"half"`` keeps ties as ``y = 0.5``.
    min_pairs : int, default 1
        Queries with fewer usable pairs are left out; their ids are in
        ``Comparisons.dropped_query_ids`` and their number is logged.
    query_ids, models : sequence, optional
        Fix the query order (e.g. to align with embeddings) and model order.
    random_state : int or Generator, optional
        Seed for the pair draw and order.
    tie_tolerance : float, default 1e-4
        Scores of a query within this distance count as tied (:func:`snap_ties`); 0 compares
        exactly.

    Returns
    -------
    Comparisons
        Only queries with at least ``min_pairs`` pairs remain in ``query_ids``.
    """
    _check_draw(n_pairs, ties)
    scores, query_ids, models = score_matrix(outcomes, query_ids=query_ids, models=models)
    return sample_pairs(
        scores,
        query_ids,
        models,
        n_pairs=n_pairs,
        ties=ties,
        min_pairs=min_pairs,
        random_state=random_state,
        tie_tolerance=tie_tolerance,
    )


def sample_pairs(
    scores: np.ndarray,
    query_ids: np.ndarray | list[str],
    models: list[str] | tuple[str, ...],
    *,
    n_pairs: int | None = None,
    ties: str = "drop",
    min_pairs: int = 1,
    random_state: int | np.random.Generator | None = None,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
) -> Comparisons:
    """Pairwise comparisons drawn from a dense score matrix (the work of :func:`make_comparisons`
    once the outcomes are averaged per (query, model)).

    Parameters
    ----------
    scores : ndarray, shape (n_queries, n_models)
        Mean score per (query, model); NaN where a model has no observation of a query.
    query_ids : sequence of str, length n_queries
    models : sequence of str, length n_models
    n_pairs, ties, min_pairs, random_state, tie_tolerance
        As in :func:`make_comparisons`.

    Returns
    -------
    Comparisons
    """
    _check_draw(n_pairs, ties)
    scores = snap_ties(np.asarray(scores, dtype=float), tolerance=tie_tolerance)
    query_ids = np.asarray(query_ids, dtype=object).astype(str)
    models = tuple(str(m) for m in models)
    if scores.shape != (len(query_ids), len(models)):
        raise ValueError(
            f"scores have shape {scores.shape}, expected ({len(query_ids)}, {len(models)}) "
            "(queries x models)"
        )
    rng = np.random.default_rng(random_state)
    n_models = len(models)
    if n_models < 2:
        raise DataValidationError(f"comparisons need at least 2 models, got {list(models)}")
    if n_pairs is None or n_models <= DENSE_MAX_MODELS:
        rows, pair_a, pair_b, y = _sample_by_keys(scores, n_pairs, ties, rng)
    else:
        rows, pair_a, pair_b, y = _sample_by_index(scores, n_pairs, ties, rng)
    n_per_query = np.bincount(rows, minlength=len(query_ids))
    keep_query = n_per_query >= max(min_pairs, 1)
    dropped = query_ids[~keep_query]
    if len(dropped):
        logger.info(
            "make_comparisons: %d of %d queries left out with fewer than %d usable pair(s)",
            len(dropped),
            len(query_ids),
            max(min_pairs, 1),
        )
    every_query = Comparisons(
        query=rows,
        model_a=pair_a.astype(np.int64),
        model_b=pair_b.astype(np.int64),
        y=y,
        query_ids=query_ids,
        models=models,
    )
    kept = every_query.select_queries(keep_query)
    return replace(kept, dropped_query_ids=tuple(dropped.tolist()))


__all__ = [
    "Comparisons",
    "sample_pairs",
]
