"""The candidate grid of ECC-CV (:class:`ecc_lib.ecc.cv.ECCCV`): the families and their settings
(:data:`DEFAULT_PARAM_GRID`, :func:`expand_grid`, :func:`family_grid` for one family tuned alone),
the successive-halving schedule (:func:`halving_schedule`), the ``cv_results_`` table
(:func:`results_table`) and the choice in words (:func:`choice_words`, :func:`describe_choices`)."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
from sklearn.model_selection import ParameterGrid

from ecc_lib import defaults
from ecc_lib.bradley_terry import DEFAULT_ALPHA

FAMILIES: tuple[str, ...] = ("global", "human", "emb_only", "comp_only", "ecc", "ecc_labels")
LABEL_FAMILIES: tuple[str, ...] = ("human", "ecc_labels")
BT_FAMILIES: tuple[str, ...] = ("global", "human")
"""Families without EM: one closed-form BT fit per candidate (no clustering is learnt)."""
DEFAULT_ALPHAS: tuple[float, ...] = (0.03, 0.1, 0.3, 1.0)
"""BT prior precisions every tuned method chooses among (docs/design.md, section 8)."""
PARAM_KEYS: tuple[str, ...] = (
    "family",
    "n_clusters",
    "temperature",
    "lam",
    "label_weight",
    "alpha",
)
DEFAULT_PARAM_GRID: tuple[dict, ...] = (
    {"family": ["global"], "alpha": list(DEFAULT_ALPHAS)},
    {"family": ["human"], "alpha": list(DEFAULT_ALPHAS)},
    {
        "family": ["emb_only"],
        "n_clusters": [30],
        "temperature": [0.1],
        "lam": [3.0],
        "alpha": list(DEFAULT_ALPHAS),
    },
    {"family": ["ecc"], "n_clusters": [4], "temperature": [0.3], "lam": [3.0]},
    {"family": ["ecc"], "n_clusters": [10], "temperature": [0.1], "lam": [3.0]},
    {"family": ["ecc"], "n_clusters": [30], "temperature": [0.1], "lam": [3.0]},
    {
        "family": ["ecc_labels"],
        "n_clusters": [30],
        "temperature": [0.3],
        "lam": [3.0],
        "label_weight": [1.0, 4.0],
        "alpha": [0.1],
    },
    {
        "family": ["ecc_labels"],
        "n_clusters": [30],
        "temperature": [0.3],
        "lam": [3.0],
        "label_weight": [1.0],
        "alpha": [DEFAULT_ALPHA],
    },
)
"""The default grid (a list of sub-grids, as scikit-learn's ``param_grid``): the global BT model
(``K = 1``), one BT per human category and the paper's embedding-only clusters at the prior
precisions :data:`DEFAULT_ALPHAS` (the grids of the tuned baselines, :func:`family_grid`), ECC
at K = 4, 10 and the paper's point (K = 30), and label-informed ECC at the weaker prior 0.1 with
two label weights and at the default prior with weight 1 (with the default prior only, the CV
compared label-informed ECC at a fixed prior with human labels at a tuned one and chose human
labels where label-informed ECC is better, synthetic ``capability``). Small on purpose: the
search costs at most a few ECC fits (issue 34). Two candidates of the earlier grid were dropped
as dominated (full-procedure CV, seed 0, on bundled dcrouter and re2 and the four synthetic
regimes): ECC at K = 30 with lam = 10 (the best ECC only on dcrouter, where every clustering
loses to human labels; the worst EM candidate on four of the others) and label-informed ECC at
weight 4 and the default prior (never the best of its family; on re2, ``capability`` and
``hidden_capability`` within 1e-5 of human labels).
Missing keys take :data:`PARAM_DEFAULTS`."""
_SETTING_NAMES = {"n_clusters": "K", "temperature": "T", "lam": "lam", "label_weight": "w"}
"""Short names of the settings of a candidate (:func:`describe_params`, :func:`choice_words`)."""
PARAM_DEFAULTS: dict = {
    "n_clusters": 30,
    "temperature": 0.1,
    "lam": 3.0,
    "label_weight": 0.0,
    "alpha": DEFAULT_ALPHA,
}


def expand_grid(
    param_grid, *, has_labels: bool = False, max_clusters: int | None = None
) -> list[dict]:
    """The candidate settings of a grid, each with every key of :data:`PARAM_KEYS`.

    Parameters
    ----------
    param_grid : dict or sequence of dict
        Lists of values per key (scikit-learn's ``ParameterGrid`` convention); ``family`` is one of
        :data:`FAMILIES` (default ``"ecc"``), other keys default to :data:`PARAM_DEFAULTS`.
    has_labels : bool
        Whether the queries carry categories (else the label families are left out).
    max_clusters : int, optional
        Candidates with more clusters are left out (fewer training queries than clusters).

    Returns
    -------
    list of dict
        Distinct candidates in grid order. Keys that do not apply are normalised: the global
        model has ``n_clusters = 1``, ``label_weight = 0`` and no temperature or lam; the
        human-label model ``label_weight = inf`` (the limit of a hard category assignment),
        ``n_clusters = None`` (one per category) and no temperature or lam; ECC and the
        embedding-only clusters ``label_weight = 0``.
    """
    grids = [param_grid] if isinstance(param_grid, dict) else list(param_grid)
    out: list[dict] = []
    seen = set()
    for sub in ParameterGrid(grids):
        unknown = sorted(set(sub) - set(PARAM_KEYS))
        if unknown:
            raise ValueError(f"unknown grid key(s) {unknown}; use {list(PARAM_KEYS)}")
        params = {**PARAM_DEFAULTS, "family": "ecc", **sub}
        family = params["family"]
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r}; choose from {list(FAMILIES)}")
        if family in LABEL_FAMILIES and not has_labels:
            continue
        params["alpha"] = float(params["alpha"])
        if not params["alpha"] > 0:
            raise ValueError(f"alpha must be > 0, got {params['alpha']}")
        if family == "comp_only":
            params["lam"] = 0.0  # no cosine term
        if family in BT_FAMILIES:
            params.update(temperature=None, lam=None)
            params["n_clusters"] = 1 if family == "global" else None
            params["label_weight"] = 0.0 if family == "global" else float("inf")
        else:
            params["n_clusters"] = int(params["n_clusters"])
            params["temperature"] = float(params["temperature"])
            params["lam"] = float(params["lam"])
            params["label_weight"] = (
                float(params["label_weight"]) if family == "ecc_labels" else 0.0
            )
            if params["n_clusters"] < 1 or not params["temperature"] > 0 or params["lam"] < 0:
                raise ValueError(f"bad candidate {params}: need K >= 1, T > 0, lam >= 0")
            if params["label_weight"] < 0:
                raise ValueError(f"label_weight must be >= 0, got {params['label_weight']}")
            if params["n_clusters"] == 1:  # one cluster is the global BT model
                params.update(family="global", temperature=None, lam=None, label_weight=0.0)
            elif family == "ecc_labels" and params["label_weight"] == 0.0:
                params["family"] = "ecc"  # weight 0 is plain ECC
            if max_clusters is not None and (params["n_clusters"] or 1) > max_clusters:
                continue
        key = tuple(params[k] for k in PARAM_KEYS)
        if key not in seen:
            seen.add(key)
            out.append({k: params[k] for k in PARAM_KEYS})
    if not out:
        raise ValueError("the grid of ECCCV has no candidate for these data")
    return out


def describe_params(params: dict) -> str:
    """``family K=.. T=.. lam=.. w=.. alpha=..`` of a candidate (the settings that apply).

    Parameters
    ----------
    params : dict
        One candidate of :func:`expand_grid`.

    Returns
    -------
    str
    """
    parts = [params["family"]]
    parts += [f"{v}={params[k]:g}" for k, v in _SETTING_NAMES.items() if params.get(k) is not None]
    if params["family"] in BT_FAMILIES or params["alpha"] != PARAM_DEFAULTS["alpha"]:
        parts.append(f"alpha={params['alpha']:g}")
    return " ".join(parts)


def family_grid(
    family: str,
    *,
    n_clusters: int = defaults.N_CLUSTERS,
    temperature: float = defaults.TEMPERATURE,
    lam: float = defaults.LAM,
    label_weight: float | None = None,
    alphas=DEFAULT_ALPHAS,
) -> tuple[dict, ...]:
    """The grid of one method tuned alone: its configured settings at every prior precision.

    The ``*_tuned`` methods of the protocol (``global_tuned``, ``human_tuned``,
    ``emb_only_tuned`` ...) are :class:`~ecc_lib.ecc.cv.ECCCV` over this grid, so they choose
    ``alpha`` by the same inner cross-validation as ECC-CV (same folds, same score, same
    candidate fits): where ECC-CV chooses such a candidate it deploys the same model.

    Parameters
    ----------
    family : str
        One of :data:`FAMILIES`.
    n_clusters, temperature, lam : optional
        Settings of the clustering families (ignored by ``global`` and ``human``).
    label_weight : float, optional
        Label weights of ``ecc_labels`` (default ``1`` and ``4``, as the default grid).
    alphas : sequence of float
        Prior precisions (default :data:`DEFAULT_ALPHAS`).

    Returns
    -------
    tuple of dict
        One sub-grid (scikit-learn's ``param_grid`` convention).
    """
    if family not in FAMILIES:
        raise ValueError(f"unknown family {family!r}; choose from {list(FAMILIES)}")
    grid: dict = {"family": [family], "alpha": [float(a) for a in alphas]}
    if family not in BT_FAMILIES:
        grid.update(n_clusters=[int(n_clusters)], temperature=[float(temperature)])
        grid["lam"] = [float(lam)]
    if family == "ecc_labels":
        grid["label_weight"] = [1.0, 4.0] if label_weight is None else [float(label_weight)]
    return (grid,)


def halving_schedule(
    n_candidates: int, n_train: int, *, factor: float | None = 3, min_resources: int = 1
) -> list[float]:
    """Share of each fold's training queries per round of successive halving.

    As scikit-learn's ``HalvingGridSearchCV`` (resource: training queries, ``min_resources =
    "exhaust"``): ``1 + floor(log_factor(n_candidates))`` rounds, the last one on all the fold's
    training queries, each earlier one on ``1 / factor`` of the next; rounds are dropped from the
    front while the first would see fewer than ``min_resources`` queries.

    Parameters
    ----------
    n_candidates : int
        Candidates that halving eliminates (the EM families).
    n_train : int
        Training queries of the smallest fold fit.
    factor : float or None
        Kept share per round is ``1 / factor``; None or ``<= 1``: one round (every candidate on
        all training queries).
    min_resources : int
        Fewest training queries of a round.

    Returns
    -------
    list of float
        Shares, increasing, the last ``1.0``.
    """
    if factor is None or factor <= 1 or n_candidates <= 1:
        return [1.0]
    rounds = 1 + int(np.floor(np.log(n_candidates) / np.log(factor) + 1e-9))
    while rounds > 1 and n_train / factor ** (rounds - 1) < min_resources:
        rounds -= 1
    return [float(factor) ** -(rounds - 1 - r) for r in range(rounds)]


def results_table(
    grid, losses, scored, seconds, iters, rounds=None, resources=None, procedures=None
) -> pd.DataFrame:
    """The ``cv_results_`` table (see :class:`ecc_lib.ecc.cv.ECCCV`).

    Parameters
    ----------
    grid : list of dict
        The candidates.
    losses, scored : ndarray (n_candidates, n_folds) and (n_folds,)
        Summed held-out NLL per candidate and fold (of its last round; NaN where that round did
        not fit the fold), and scored pairs per fold.
    seconds, iters : ndarray (n_candidates, n_folds)
        Fit time (summed over rounds) and EM steps (of the last round; NaN: fold not fitted).
    rounds, resources : ndarray (n_candidates,), optional
        Last round of each candidate (0-based) and its training queries per fold fit (mean over
        its folds); default: one round on all training queries.
    procedures : sequence of str, optional
        How each candidate's last round was fitted (the ``fit`` column; default ``"full"``).

    Returns
    -------
    DataFrame
        One row per candidate; ``rank_test_nll`` ranks the candidates of the last round first
        (halving ranks a candidate only against those that saw as many queries);
        ``mean_test_gain`` is the percent over the best global BT candidate (the tuned global BT,
        same pairs, last round).
    """
    n = len(grid)
    rounds = np.zeros(n, dtype=int) if rounds is None else np.asarray(rounds, dtype=int)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_fold = losses / np.where(scored > 0, scored, np.nan)[None, :]
    mean = np.nansum(losses, axis=1) / (~np.isnan(losses) @ scored)
    frame = pd.DataFrame({f"param_{k}": [g[k] for g in grid] for k in PARAM_KEYS})
    frame.insert(0, "params", [describe_params(g) for g in grid])
    for f in range(losses.shape[1]):
        frame[f"split{f}_test_nll"] = per_fold[:, f]
    frame["mean_test_nll"] = mean
    frame["std_test_nll"] = np.nanstd(per_fold, axis=1)
    glob = [i for i, g in enumerate(grid) if g["family"] == "global"]
    ref = float(np.min(mean[glob])) if glob else np.nan  # the tuned global BT
    frame["mean_test_gain"] = 100.0 * (ref - mean) / ref
    # rank 1 = best of the last round; ties keep the grid order (simpler candidates come first)
    order = np.lexsort((np.arange(n), mean, -rounds))
    rank = np.empty(n, dtype=int)
    rank[order] = np.arange(1, n + 1)
    frame["rank_test_nll"] = rank
    frame["mean_fit_time"] = seconds.mean(axis=1)
    frame["mean_n_iter"] = np.nanmean(iters, axis=1)
    frame["iter"] = rounds
    frame["fit"] = ["full"] * n if procedures is None else list(procedures)
    frame["n_resources"] = np.nan if resources is None else np.asarray(resources, dtype=float)
    return frame


_FAMILY_WORDS = {
    "global": "one global BT",
    "human": "one BT per human category",
    "emb_only": "embedding-only clusters",
    "comp_only": "comparison-only clusters",
    "ecc": "ECC clusters",
    "ecc_labels": "label-informed ECC clusters",
}


def prior_words(alpha: float) -> str:
    """``"weaker prior"`` (alpha below the default), ``"default prior"`` or ``"stronger prior"``.

    Parameters
    ----------
    alpha : float

    Returns
    -------
    str
    """
    default = float(PARAM_DEFAULTS["alpha"])
    alpha = float(alpha)
    return (
        "default prior"
        if alpha == default
        else ("weaker" if alpha < default else "stronger") + " prior"
    )


def is_clustering(params: dict) -> bool:
    """Whether a chosen candidate learns a clustering (not the global BT or the human labels).

    Parameters
    ----------
    params : dict
        One candidate of :func:`expand_grid` (``best_params_``).

    Returns
    -------
    bool
    """
    return params["family"] not in BT_FAMILIES


def choice_words(params: dict, *, settings: bool = False) -> str:
    """One chosen candidate in words: ``"one BT per human category, weaker prior"``.

    Parameters
    ----------
    params : dict
        One candidate of :func:`expand_grid` (``best_params_``).
    settings : bool
        Append the settings (``"(K = 30, T = 0.1, lam = 3, alpha = 0.03)"``).

    Returns
    -------
    str
    """
    words = f"{_FAMILY_WORDS[params['family']]}, {prior_words(params['alpha'])}"
    if settings:
        parts = [
            f"{v} = {params[k]:g}"
            for k, v in _SETTING_NAMES.items()
            if params.get(k) is not None
            and np.isfinite(params[k])
            and not (k == "label_weight" and params["family"] != "ecc_labels")
            and not (k == "n_clusters" and params["family"] == "global")
        ]
        parts.append(f"alpha = {float(params['alpha']):g}")
        words += f" ({', '.join(parts)})"
    return words


def describe_choices(choices) -> str:
    """ECC-CV's choice over seeds in words, most frequent first: ``"one BT per human category,
    weaker prior, on 3 of 3 seeds"`` (``"...; ECC clusters, default prior, on 1 of 3 seeds"``).

    Parameters
    ----------
    choices : sequence of dict or None
        ``best_params_`` per seed (None where the method did not run on a seed).

    Returns
    -------
    str
        ``""`` when no seed has a choice.
    """
    words = [choice_words(c) for c in choices if c is not None]
    if not words:
        return ""
    n = len(words)
    # most frequent first, ties in order of first appearance (most_common's sort is stable)
    counts = Counter(words).most_common()
    return "; ".join(f"{w}, on {c} of {n} seed{'s' if n > 1 else ''}" for w, c in counts)


__all__ = [
    "describe_choices",
    "describe_params",
]
