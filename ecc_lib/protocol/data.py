"""The data of the ECC paper's protocol: sampled comparisons, the split by query, the defaults.

Protocol (Wu, Silwal & Zhang 2026, arXiv 2605.17110, as in the authors' code; ``docs/design.md``
section 3): per query up to 7 non-tie pairs sampled with a seed, queries with fewer than 2 dropped;
an 80/20 split by query (seed 42). :func:`prepare_protocol` builds :class:`ProtocolData` (the kept
queries' comparisons, embeddings, labels and split), :func:`left_out_reasons` says why the other
queries were left out and :func:`single_pair_settings` what two-model data allow. Every other
module of :mod:`ecc_lib.protocol` reads :class:`ProtocolData`; this one imports none of them.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.data import protocol_policy
from ecc_lib.data.comparisons import (
    DEFAULT_TIE_TOLERANCE,
    Comparisons,
    make_comparisons,
    score_matrix,
    snap_ties,
)
from ecc_lib.data.splits import split_queries
from ecc_lib.ecc.validation import labels_to_str

logger = logging.getLogger(__name__)

PAPER_N_PAIRS = defaults.N_PAIRS
PAPER_SEED = defaults.SEED
PAPER_TEST_SIZE = defaults.TEST_SIZE


@dataclass
class ProtocolData:
    """Comparisons, embeddings and labels of the kept queries, split into train and test.

    Attributes
    ----------
    comparisons : Comparisons
        All kept queries (``query_ids`` in the order of the queries table).
    embeddings : ndarray (n, d)
        Aligned to ``comparisons.query_ids``.
    labels : ndarray of str or None
        Human category per query (``None`` when the queries table has none).
    texts : ndarray of str
    scores : ndarray (n, M)
        Mean score per (query, model), NaN where missing (for the new-model experiment).
    train_mask, test_mask : ndarray of bool (n,)
    train, test : Comparisons
        Re-coded to the training / test queries.
    n_input_queries : int
        Queries in the queries table before dropping those with too few pairs.
    params : dict
    probe_candidates : ndarray of bool or None
        Over the rows of ``test``: the comparisons that may be revealed as probes (the others are
        scored). ``None`` (the paper's protocol) means by position: a test query's first
        ``n_probes`` (or ``score_from``) comparisons. Set by
        :func:`~ecc_lib.protocol.leak_free.make_leak_free`.
    """

    comparisons: Comparisons
    embeddings: np.ndarray
    labels: np.ndarray | None
    texts: np.ndarray
    scores: np.ndarray
    train_mask: np.ndarray
    test_mask: np.ndarray
    train: Comparisons
    test: Comparisons
    n_input_queries: int
    params: dict = field(default_factory=dict)
    probe_candidates: np.ndarray | None = None

    @property
    def x_train(self) -> np.ndarray:
        """Embeddings of the training queries."""
        return self.embeddings[self.train_mask]

    @property
    def x_test(self) -> np.ndarray:
        """Embeddings of the test queries."""
        return self.embeddings[self.test_mask]

    @property
    def labels_train(self) -> np.ndarray | None:
        """Human categories of the training queries (None without labels)."""
        return None if self.labels is None else self.labels[self.train_mask]

    @property
    def labels_test(self) -> np.ndarray | None:
        """Human categories of the test queries (None without labels)."""
        return None if self.labels is None else self.labels[self.test_mask]

    @property
    def models(self) -> tuple[str, ...]:
        """Model names, in the comparisons' coding."""
        return self.comparisons.models


def prepare_protocol(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    *,
    n_pairs: int = PAPER_N_PAIRS,
    test_size: float = PAPER_TEST_SIZE,
    random_state: int = PAPER_SEED,
    min_pairs: int = 2,
    models: tuple[str, ...] | None = None,
    evidence: str = defaults.EVIDENCE,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
) -> ProtocolData:
    """Sample comparisons and split queries as in the paper's protocol.

    Parameters
    ----------
    queries : DataFrame
        ``query_id, text[, category]``; ``embeddings`` rows follow its row order.
    outcomes : DataFrame
        Long outcomes ``query_id, model, score``.
    embeddings : ndarray, shape (len(queries), d)
    n_pairs : int, default 7
        Non-tie pairs per query (seeded with ``random_state``).
    test_size : float, default 0.2
    random_state : int, default 42
        Seed of the pair draw and of the split.
    min_pairs : int, default 2
        Queries with fewer non-tie pairs are dropped (logged).
    models : tuple of str, optional
        Model order (default: sorted names).
    evidence : {"sampled", "soft"}, default "sampled"
        ``"soft"``: the same pairs, each with the probability that ``b`` beats ``a`` under the two
        empirical score distributions (:func:`ecc_lib.ecc.soft_evidence.soft_outcomes`) as outcome,
        for fitting and scoring; ``"sampled"``: the mean-score winner (the paper's protocol).
    tie_tolerance : float, default 1e-4
        Mean scores of a query within this distance tie (recorded in ``params``; see
        :func:`ecc_lib.data.comparisons.snap_ties`).

    Returns
    -------
    ProtocolData
        ``params`` records ``left_out_reasons`` (why each dropped query was left out: "all
        models tie", "one non-tie pair", "fewer than 2 models observed") and, with two models,
        ``single_pair`` (each query has its one pair; ``min_pairs`` is lowered to 1 with a
        warning).
    """
    if evidence not in ("sampled", "soft"):
        raise ValueError(f"evidence must be 'sampled' or 'soft', got {evidence!r}")
    query_ids = queries["query_id"].astype(str).to_numpy()
    emb = np.asarray(embeddings)
    if emb.ndim != 2 or emb.shape[0] != len(query_ids):
        raise ValueError(
            f"embeddings have shape {emb.shape}; expected one row per query of the queries table "
            f"({len(query_ids)} rows, in its order)"
        )
    protocol_policy.check_embedding_dims(emb.shape[1])
    n_models = len(models) if models is not None else int(outcomes["model"].nunique())
    notes: list[str] = []
    single_pair = n_models == 2 and min_pairs > 1
    if single_pair:
        min_pairs = 1
        notes.append(
            "only 2 models: each query has a single comparison pair, so ECC is fitted on that one "
            "pair per query and a test query is scored on its pair without a probe (embedding "
            "only); read its gain with care"
        )
        logger.warning(notes[-1])
    comparisons = _protocol_comparisons(
        outcomes,
        query_ids,
        n_pairs=n_pairs,
        min_pairs=min_pairs,
        models=models,
        random_state=random_state,
        tie_tolerance=tie_tolerance,
        evidence=evidence,
    )
    rows = pd.Index(query_ids).get_indexer(comparisons.query_ids)
    labels = None
    if "category" in queries.columns and queries["category"].notna().any():
        labels = labels_to_str(queries["category"].to_numpy(dtype=object)[rows], len(rows))
    scores, _, _ = score_matrix(
        outcomes, query_ids=comparisons.query_ids, models=comparisons.models
    )
    train_mask, test_mask = split_queries(
        comparisons.n_queries, test_size=test_size, random_state=random_state
    )
    left_out = left_out_reasons(
        outcomes,
        comparisons.dropped_query_ids,
        comparisons.models,
        tie_tolerance=tie_tolerance,
        min_pairs=min_pairs,
    )
    texts = queries["text"].astype(str).to_numpy()[rows]
    checks = protocol_policy.protocol_notes(
        outcomes, labels, int(train_mask.sum()), train_mask=train_mask, texts=texts
    )
    if single_pair:  # the generic two-model note is replaced by the single-pair sentence
        checks = [c for c in checks if c != protocol_policy.two_models_note(2)]
    notes = notes + checks
    return ProtocolData(
        comparisons=comparisons,
        embeddings=np.ascontiguousarray(emb[rows], dtype=np.float32),
        labels=labels,
        texts=texts,
        scores=scores,
        train_mask=train_mask,
        test_mask=test_mask,
        train=comparisons.select_queries(train_mask),
        test=comparisons.select_queries(test_mask),
        n_input_queries=len(query_ids),
        params={
            "n_pairs": n_pairs,
            "test_size": test_size,
            "random_state": random_state,
            "min_pairs": min_pairs,
            "warnings": notes,
            "evidence": evidence,
            "tie_tolerance": float(tie_tolerance),
            "left_out_reasons": left_out,
            "single_pair": bool(single_pair),
        },
    )


def _protocol_comparisons(
    outcomes: pd.DataFrame,
    query_ids: np.ndarray,
    *,
    n_pairs: int,
    min_pairs: int,
    models: tuple[str, ...] | None,
    random_state: int,
    tie_tolerance: float,
    evidence: str,
) -> Comparisons:
    """The protocol's comparisons: ``n_pairs`` non-tie pairs per query (queries with fewer than
    ``min_pairs`` dropped, logged), soft outcomes with ``evidence="soft"``."""
    comparisons = make_comparisons(
        outcomes,
        n_pairs=n_pairs,
        ties="drop",
        min_pairs=min_pairs,
        query_ids=query_ids,
        models=models,
        random_state=random_state,
        tie_tolerance=tie_tolerance,
    )
    if comparisons.n_queries < 2:
        two = protocol_policy.two_models_note(int(outcomes["model"].nunique()))
        raise ValueError(
            f"only {comparisons.n_queries} query(ies) have at least {min_pairs} non-tie "
            f"pair{'s' if min_pairs != 1 else ''}; "
            "the protocol needs at least 2" + (f" ({two})" if two else "")
        )
    if len(comparisons.dropped_query_ids):
        logger.info(
            "protocol: %d of %d queries dropped with fewer than %d non-tie pairs",
            len(comparisons.dropped_query_ids),
            len(query_ids),
            min_pairs,
        )
    if evidence == "soft":
        from ecc_lib.ecc.soft_evidence import soft_outcomes

        comparisons = soft_outcomes(outcomes, comparisons)
    return comparisons


def left_out_reasons(
    outcomes: pd.DataFrame,
    dropped_query_ids,
    models: tuple[str, ...],
    *,
    tie_tolerance: float = DEFAULT_TIE_TOLERANCE,
    min_pairs: int = 2,
) -> dict[str, int]:
    """Why the queries left out of the protocol were left out, with their counts.

    Parameters
    ----------
    outcomes : DataFrame
        Long outcomes ``query_id, model, score``.
    dropped_query_ids : sequence of str
        The queries with fewer than ``min_pairs`` non-tie pairs.
    models : tuple of str
    tie_tolerance : float
        As in :func:`prepare_protocol`.
    min_pairs : int, default 2

    Returns
    -------
    dict
        ``{reason: number of queries}`` with reasons ``"all models tie"`` (at least 2 models
        observed, no pair with a winner), ``"fewer than 2 models observed"`` and ``"only k
        non-tie pair(s)"`` (fewer than ``min_pairs``); empty when nothing was left out.
    """
    ids = np.asarray(list(dropped_query_ids), dtype=object).astype(str)
    if len(ids) == 0:
        return {}
    scores, _, _ = score_matrix(outcomes, query_ids=ids, models=models)
    scores = snap_ties(scores, tolerance=tie_tolerance)
    observed = np.isfinite(scores).sum(axis=1)
    # decisive pairs per query = pairs of observed models in different score groups; in each row
    # sorted (NaN last), a value's position past the start of its run of equal values counts the
    # tied pairs it closes, c (c - 1) / 2 over a run of c (no queries x M x M array)
    pairs_total = observed * (observed - 1) // 2
    ranked = np.sort(scores, axis=1)
    position = np.arange(ranked.shape[1])
    run_start = np.ones(ranked.shape, dtype=bool)
    run_start[:, 1:] = ranked[:, 1:] != ranked[:, :-1]
    start = np.maximum.accumulate(np.where(run_start, position, 0), axis=1)
    same = np.where(np.isfinite(ranked), position - start, 0).sum(axis=1)
    decisive = pairs_total - same
    out: dict[str, int] = {}
    few = observed < 2
    tie = ~few & (decisive == 0)
    if few.any():
        out["fewer than 2 models observed"] = int(few.sum())
    if tie.any():
        out["all models tie"] = int(tie.sum())
    for k in range(1, int(min_pairs)):
        n = int((~few & (decisive == k)).sum())
        if n:
            out[f"only {k} non-tie pair(s)"] = n
    return out


def single_pair_settings(data: ProtocolData, *, n_probes: int, leak_free: bool) -> tuple[int, bool]:
    """Probes and leak-free setting that two-model data allow (issue 23).

    With two models each query has one pair: a probe would leave nothing to score, and no pair
    is disjoint from it. ECC then runs without a probe (the test query's one pair is scored from
    its embedding) and the leak-free protocol is skipped, each with a warning in
    ``data.params["warnings"]``.

    Parameters
    ----------
    data : ProtocolData
    n_probes : int
    leak_free : bool

    Returns
    -------
    n_probes, leak_free : int, bool
    """
    if not data.params.get("single_pair"):
        return n_probes, leak_free
    notes = data.params.setdefault("warnings", [])
    if n_probes:
        notes.append(
            f"{n_probes} probe(s) asked, but with one pair per query a probe would leave nothing "
            "to score: test queries are scored without a probe"
        )
        logger.warning(notes[-1])
    if leak_free:
        notes.append("the leak-free protocol is skipped: with 2 models no pair avoids the probe")
        logger.warning(notes[-1])
    data.params["n_probes_asked"] = n_probes
    return 0, False


__all__ = [
    "ProtocolData",
    "prepare_protocol",
]
