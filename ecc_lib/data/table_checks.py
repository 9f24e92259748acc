"""The checks of an outcome table (see :mod:`ecc_lib.data.checks`): item alignment across models,
near-identical and constant models, models that never or always win, all-tie queries and the
score type; each takes a :class:`~ecc_lib.data.check_result.ScoreTable`."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components
from scipy.stats import rankdata

from ecc_lib.data.check_result import LISTED_NAMES, CheckResult, ScoreTable, name_list, timed
from ecc_lib.data.comparisons import DEFAULT_TIE_TOLERANCE, snap_ties

NEAR_IDENTICAL_R = 0.98
"""Item-level correlation above which two models count as near-identical."""
ALIGNED_R = 0.1
"""Smallest item-level correlation that links two models in the alignment check (also at least
``ALIGNED_Z / sqrt(n_items)``, well above the noise of ``r`` on ``n_items`` items)."""
ALIGNED_Z = 4.0
"""Noise multiple for the alignment link: ``r > ALIGNED_Z / sqrt(n_items)``."""
ALL_TIES_WARN_SHARE = 0.5
"""Share of all-tie queries above which ``all_ties`` warns."""
TIE_TOLERANCE_HOW = (
    "set another tolerance with --tie-tolerance (ecc-lab check, ecc-lab ecc) or "
    "Protocol(tie_tolerance=...)"
)
"""How a warning about the tie tolerance says to change it."""
DECISIVE_TOLERANCE = DEFAULT_TIE_TOLERANCE
"""Tolerance of a decisive pair, the protocol's (``prepare_protocol(tie_tolerance=1e-4)``): mean
scores of a query closer than this tie (:func:`ecc_lib.data.comparisons.snap_ties`)."""
GRADED_MAX_LEVELS = 11
"""A score with at most this many distinct values in [0, 1] is graded (else continuous)."""
MIN_PROTOCOL_PAIRS = 2
"""Decisive pairs a query needs to enter the ECC protocol (``prepare_protocol``'s ``min_pairs``);
with exactly 2 models the protocol lowers it to 1 (each query has its one pair)."""


# --------------------------------------------------------------------------------------------------
# correlations between models


def item_correlations(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Pearson correlation of every pair of model columns over the items both observed.

    Built from five ``models x models`` matrix products (nothing of size queries x models^2).

    Parameters
    ----------
    scores : ndarray, shape (n_queries, n_models)
        NaN where a model has no score.

    Returns
    -------
    r : ndarray, shape (n_models, n_models)
        NaN where fewer than 3 common items or a column is constant on them.
    n : ndarray of int, shape (n_models, n_models)
        Common items per pair.
    sq_diff : ndarray, shape (n_models, n_models)
        Sum over common items of the squared score difference (0: identical vectors).
    """
    observed = np.isfinite(scores)
    w = observed.astype(float)
    x = np.where(observed, scores, 0.0)
    n = w.T @ w
    sx = x.T @ w  # sx[i, j]: sum of model i's scores over items both i and j observed
    sxx = (x * x).T @ w
    sxy = x.T @ x
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_i, mean_j = sx / n, sx.T / n
        cov = sxy / n - mean_i * mean_j
        var_i = np.maximum(sxx / n - mean_i**2, 0.0)
        var_j = np.maximum(sxx.T / n - mean_j**2, 0.0)
        scale = np.sqrt(var_i * var_j)
        r = np.where((n >= 3) & (scale > 1e-12), cov / scale, np.nan)
    sq_diff = np.maximum(sxx + sxx.T - 2.0 * sxy, 0.0)
    return np.clip(r, -1.0, 1.0), n.astype(np.int64), sq_diff


def _constant(scores: np.ndarray) -> np.ndarray:
    """Which model columns hold one value (or none) over their observed queries."""
    with np.errstate(invalid="ignore"):
        return ~(np.nanmax(scores, axis=0) > np.nanmin(scores, axis=0))


@timed
def check_item_alignment(table: ScoreTable) -> CheckResult:
    """Blocks of models that correlate within but not across mean permuted item columns.

    Two models are linked when their item-level correlation exceeds ``max(ALIGNED_R, ALIGNED_Z /
    sqrt(n_common))``; the blocks are the connected groups of linked models (constant models are
    left out). Two or more blocks of at least two models each: **fail** (real benchmarks never show
    it: shared item difficulty links every pair). A model linked to no other, a pair with a clearly
    negative correlation, or two models that do not correlate: **warn**.

    Parameters
    ----------
    table : ScoreTable

    Returns
    -------
    CheckResult
        ``numbers``: ``blocks`` (lists of models), ``isolated``, ``mean_r_within``,
        ``mean_r_across``, ``min_r``, ``median_r``, ``n_negative_pairs``.
    """
    name = "item_alignment"
    models = np.asarray(table.models, dtype=object)
    keep = ~_constant(table.scores)
    if keep.sum() < 2:
        return CheckResult(name, "ok", "fewer than 2 non-constant models: nothing to align", {})
    r, n, _ = item_correlations(table.scores[:, keep])
    models = models[keep]
    m = len(models)
    with np.errstate(divide="ignore"):
        cut = np.maximum(ALIGNED_R, ALIGNED_Z / np.sqrt(np.maximum(n, 1)))
    off = ~np.eye(m, dtype=bool)
    linked = (np.nan_to_num(r, nan=-1.0) > cut) & off
    n_blocks, label = connected_components(csr_matrix(linked), directed=False)
    sizes = np.bincount(label, minlength=n_blocks)
    order = np.argsort(-sizes, kind="stable")
    blocks = [models[label == b].tolist() for b in order if sizes[b] >= 2]
    isolated = [models[label == b][0] for b in order if sizes[b] == 1]
    same = (label[:, None] == label[None, :]) & off
    upper = np.triu(off)
    finite = np.isfinite(r)
    negative = upper & finite & (r < -cut)
    within = r[same & upper & finite]
    across = r[~same & upper & finite]
    numbers = {
        "n_models": int(m),
        "blocks": blocks,
        "isolated": isolated,
        "mean_r_within": float(within.mean()) if within.size else None,
        "mean_r_across": float(across.mean()) if across.size else None,
        "min_r": float(np.nanmin(r[upper])) if finite[upper].any() else None,
        "median_r": float(np.nanmedian(r[upper])) if finite[upper].any() else None,
        "n_negative_pairs": int(negative.sum()),
    }
    if len(blocks) >= 2:
        parts = "; ".join(f"[{name_list(b)}]" for b in blocks)
        status, text = (
            "fail",
            f"{len(blocks)} blocks of models correlate within (mean r = "
            f"{numbers['mean_r_within']:.2f}) but not across (mean r = "
            f"{numbers['mean_r_across']:.2f}) on item-level scores: the item columns look "
            f"permuted between groups of models, so no clustering or routing result on this table "
            f"means anything. Blocks: {parts}",
        )
    elif m == 2 and not linked.any():
        status, text = (
            "warn",
            f"the two models' item-level scores do not correlate (r = {numbers['median_r']:.2f}),"
            " which shared item difficulty makes rare: check that both score the same items",
        )
    elif isolated or numbers["n_negative_pairs"]:
        what = []
        if isolated:
            what.append(f"{name_list(isolated)} correlate(s) with no other model")
        if numbers["n_negative_pairs"]:
            what.append(f"{numbers['n_negative_pairs']} pair(s) correlate negatively")
        status = "warn"
        text = "; ".join(what) + " on item-level scores (a random, broken or misaligned model?)"
    else:
        status, text = (
            "ok",
            f"every pair of the {m} models correlates positively on item-level scores (median r = "
            f"{numbers['median_r']:.2f}, min {numbers['min_r']:.2f}): the items are aligned",
        )
    return CheckResult(name, status, text, numbers)


@timed
def check_near_identical_models(
    table: ScoreTable, *, threshold: float = NEAR_IDENTICAL_R
) -> CheckResult:
    """Pairs of models with item-level correlation above ``threshold`` or identical scores.

    Parameters
    ----------
    table : ScoreTable
    threshold : float, default 0.98

    Returns
    -------
    CheckResult
        ``warn`` with the pairs listed (``numbers["pairs"]``: ``[a, b, r, identical]``).
    """
    name = "near_identical_models"
    r, n, sq_diff = item_correlations(table.scores)
    upper = np.triu(np.ones_like(n, dtype=bool), k=1) & (n > 0)
    identical = upper & (sq_diff <= 1e-12 * np.maximum(n, 1))
    close = upper & (np.nan_to_num(r, nan=-1.0) > threshold)
    a, b = np.nonzero(identical | close)
    models = table.models
    pairs = [
        [
            models[i],
            models[j],
            float(r[i, j]) if np.isfinite(r[i, j]) else None,
            bool(identical[i, j]),
        ]
        for i, j in zip(a.tolist(), b.tolist(), strict=True)
    ]
    numbers = {"threshold": threshold, "n_pairs": len(pairs), "pairs": pairs}
    if not pairs:
        return CheckResult(
            name, "ok", f"no two models correlate above {threshold} or share their scores", numbers
        )
    shown = "; ".join(
        f"{p[0]} ~ {p[1]}" + (" (identical)" if p[3] else "") for p in pairs[:LISTED_NAMES]
    )
    return CheckResult(
        name,
        "warn",
        f"{len(pairs)} pair(s) of models are near-identical on item-level scores (r > {threshold}"
        f" or the same scores): {shown}; a duplicated model counts twice in every comparison",
        numbers,
    )


@timed
def check_constant_models(table: ScoreTable) -> CheckResult:
    """Models with one score on every query they answered.

    Parameters
    ----------
    table : ScoreTable

    Returns
    -------
    CheckResult
        ``warn`` with the models and their value.
    """
    name = "constant_models"
    constant = _constant(table.scores)
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns / rows
        values = np.nanmax(table.scores, axis=0)
    found = {table.models[i]: float(values[i]) for i in np.flatnonzero(constant)}
    numbers = {"n_constant": len(found), "models": found}
    if not found:
        return CheckResult(name, "ok", "no model has the same score on every query", numbers)
    shown = name_list([f"{k} (always {v:g})" for k, v in found.items()])
    return CheckResult(
        name,
        "warn",
        f"{len(found)} model(s) have the same score on every query: {shown}; they carry no "
        "item-level information (a failed run or a placeholder?)",
        numbers,
    )


@timed
def check_never_or_always_wins(table: ScoreTable) -> CheckResult:
    """Models that lose every decisive pair they are in, or win every one.

    Wins and losses per model come from ranks within each query (a model beats the models with a
    strictly lower score), in ``O(queries x models log models)``.

    Parameters
    ----------
    table : ScoreTable

    Returns
    -------
    CheckResult
        ``numbers``: ``wins``, ``losses`` per model, ``never_wins``, ``always_wins``.
    """
    name = "never_or_always_wins"
    scores = table.scores
    observed = np.isfinite(scores)
    n_obs = observed.sum(axis=1, keepdims=True)
    low = rankdata(scores, method="min", axis=1, nan_policy="omit")
    high = rankdata(scores, method="max", axis=1, nan_policy="omit")
    wins = np.where(observed, low - 1.0, 0.0).sum(axis=0)
    losses = np.where(observed, n_obs - high, 0.0).sum(axis=0)
    models = table.models
    never = [models[i] for i in np.flatnonzero((wins == 0) & (losses > 0))]
    always = [models[i] for i in np.flatnonzero((losses == 0) & (wins > 0))]
    numbers = {
        "wins": dict(zip(models, wins.astype(int).tolist(), strict=True)),
        "losses": dict(zip(models, losses.astype(int).tolist(), strict=True)),
        "never_wins": never,
        "always_wins": always,
    }
    if not never and not always:
        return CheckResult(name, "ok", "every model wins and loses some decisive pairs", numbers)
    parts = [f"{name_list(never)} never win(s) a decisive pair"] if never else []
    parts += [f"{name_list(always)} win(s) every decisive pair"] if always else []
    text = "; ".join(parts) + (
        ": such a model's Bradley-Terry strength runs to the bound and it adds nothing to tell "
        "queries apart"
    )
    return CheckResult(name, "warn", text, numbers)


@timed
def check_all_ties(
    table: ScoreTable,
    *,
    min_pairs: int | None = None,
    tie_tolerance: float = DECISIVE_TOLERANCE,
) -> CheckResult:
    """Share of queries where every model has the same score, and per-category counts.

    The protocol keeps only decisive pairs (mean scores further apart than ``tie_tolerance``), so
    an all-tie query is left out; so is a query with fewer than ``min_pairs`` decisive pairs.

    Parameters
    ----------
    table : ScoreTable
    min_pairs : int, optional
        Decisive pairs a query needs to enter the ECC protocol; default the protocol's rule:
        :data:`MIN_PROTOCOL_PAIRS`, or 1 with exactly 2 models (one pair per query).
    tie_tolerance : float, default :data:`DECISIVE_TOLERANCE`
        Scores of a query closer than this tie, as in ``prepare_protocol``.

    Returns
    -------
    CheckResult
        ``fail`` when no query has a decisive pair; ``warn`` when fewer than 2 queries have
        ``min_pairs`` decisive pairs (the ECC protocol does not apply), when more than half of the
        queries are all-tie or when a category is all-tie; ``numbers["per_category"]``:
        ``{category: [queries, all-tie queries]}``.
    """
    name = "all_ties"
    scores = snap_ties(table.scores, tolerance=tie_tolerance)
    two_models = scores.shape[1] == 2
    if min_pairs is None:
        min_pairs = 1 if two_models else MIN_PROTOCOL_PAIRS
    observed = np.isfinite(scores)
    n_obs = observed.sum(axis=1)
    comparable = n_obs >= 2
    with np.errstate(invalid="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns / rows
        tied = comparable & ~(np.nanmax(scores, axis=1) > np.nanmin(scores, axis=1))
    # decisive pairs per query: all observed pairs minus those inside groups of equal score
    ranks_low = rankdata(scores, method="min", axis=1, nan_policy="omit")
    ranks_high = rankdata(scores, method="max", axis=1, nan_policy="omit")
    group = np.where(observed, ranks_high - ranks_low + 1.0, 1.0)  # size of each model's group
    tied_pairs = np.where(observed, group - 1.0, 0.0).sum(axis=1) / 2.0
    decisive = n_obs * (n_obs - 1) / 2.0 - tied_pairs
    usable = decisive >= min_pairs
    n_q = int(comparable.sum())
    share = float(tied.sum() / n_q) if n_q else float("nan")
    per_category: dict = {}
    all_tie_categories: list = []
    if table.categories is not None:
        labels = pd.Series(table.categories).fillna("(none)").astype(str).to_numpy()
        frame = pd.DataFrame({"c": labels[comparable], "t": tied[comparable]})
        counts = frame.groupby("c", sort=True)["t"].agg(["size", "sum"])
        per_category = {k: [int(s), int(t)] for k, s, t in counts.itertuples()}
        all_tie_categories = [k for k, (s, t) in per_category.items() if s and s == t]
    numbers = {
        "n_queries": n_q,
        "n_all_tie": int(tied.sum()),
        "all_tie_share": share,
        "min_pairs": min_pairs,
        "n_usable_by_protocol": int(usable.sum()),
        "per_category": per_category,
        "all_tie_categories": all_tie_categories,
        "tolerance": float(tie_tolerance),
    }
    text = (
        f"{numbers['n_all_tie']} of {n_q} queries ({100 * share:.1f}%) have every model tied and "
        f"are left out by the protocol; {numbers['n_usable_by_protocol']} have at least "
        f"{min_pairs} decisive pair{'s' if min_pairs != 1 else ''}"
    )
    if n_q and not (decisive > 0).any():
        return CheckResult(name, "fail", text + ": no query tells any two models apart", numbers)
    if numbers["n_usable_by_protocol"] < 2:
        text += ": the ECC protocol, which needs at least 2 such queries, does not apply"
        text += " (with 2 models a query has one pair at most)" if two_models else ""
        return CheckResult(name, "warn", text + "; routing between the models still does", numbers)
    if share > ALL_TIES_WARN_SHARE or all_tie_categories or two_models:
        extra = []
        if two_models:
            extra.append(
                "with 2 models the protocol fits ECC on the one pair per query and scores a test "
                "query without a probe (nothing else would be left to score)"
            )
        if share > ALL_TIES_WARN_SHARE:
            extra.append(
                f"more than {100 * ALL_TIES_WARN_SHARE:.0f}% of the queries tell no model apart"
            )
        if all_tie_categories:
            extra.append(f"categories with every query tied: {name_list(all_tie_categories)}")
        return CheckResult(name, "warn", text + "; " + "; ".join(extra), numbers)
    return CheckResult(name, "ok", text, numbers)


@timed
def check_score_type(
    table: ScoreTable, *, tie_tolerance: float = DECISIVE_TOLERANCE
) -> CheckResult:
    """Binary, graded or continuous scores, and the tolerance of a decisive pair.

    The protocol calls a pair decisive when the two mean scores differ by more than
    ``tie_tolerance`` (``prepare_protocol``'s, 1e-4 by default); closer scores tie. The check
    counts, per query, adjacent sorted scores that differ but by at most the tolerance: with
    continuous scores a large share of them means that many differences the table records are
    read as ties.

    Parameters
    ----------
    table : ScoreTable
    tie_tolerance : float, default :data:`DECISIVE_TOLERANCE`

    Returns
    -------
    CheckResult
        ``numbers``: ``score_type``, ``n_levels``, ``min``, ``max``, ``tolerance``,
        ``near_tie_share`` (of positive adjacent gaps).
    """
    name = "score_type"
    raw = table.raw
    if raw.size == 0:
        return CheckResult(name, "fail", "the outcomes hold no finite score", {})
    levels = np.unique(raw)
    low, high = float(levels[0]), float(levels[-1])
    if np.isin(levels, (0.0, 1.0)).all():
        kind = "binary"
    elif len(levels) <= GRADED_MAX_LEVELS and low >= 0.0 and high <= 1.0:
        kind = "graded"
    else:
        kind = "continuous"
    ordered = np.sort(table.scores, axis=1)  # NaN last
    gaps = np.diff(ordered, axis=1)
    gaps = gaps[np.isfinite(gaps) & (gaps > 0)]
    near = float(np.mean(gaps <= tie_tolerance)) if gaps.size else 0.0
    numbers = {
        "score_type": kind,
        "n_levels": int(min(len(levels), 10**6)),
        "min": low,
        "max": high,
        "tolerance": float(tie_tolerance),
        "near_tie_share": near,
    }
    text = (
        f"{kind} scores ({len(levels)} distinct value{'s' if len(levels) != 1 else ''} in "
        f"[{low:g}, {high:g}]); a pair is decisive when the two mean scores differ by more "
        f"than the tie tolerance {tie_tolerance:g}"
    )
    if kind != "continuous" or near <= 0.01:
        return CheckResult(name, "ok", text, numbers)
    text += (
        f"; {100 * near:.1f}% of the nonzero score gaps within a query are at most "
        f"{tie_tolerance:g}, so the protocol reads them as ties, not wins; {TIE_TOLERANCE_HOW}"
    )
    return CheckResult(name, "warn", text, numbers)


__all__: list[str] = []
