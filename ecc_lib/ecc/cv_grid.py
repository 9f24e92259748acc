"""The candidate grid of ECC-CV (:class:`ecc_lib.ecc.cv.ECCCV`): the families and their settings
(:data:`DEFAULT_PARAM_GRID`, :func:`expand_grid`), the warm-start path through them
(:func:`warm_path`) and the ``cv_results_`` table (:func:`results_table`)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from sklearn.model_selection import ParameterGrid

from ecc_lib.bradley_terry import DEFAULT_ALPHA

FAMILIES: tuple[str, ...] = ("global", "human", "emb_only", "ecc", "ecc_labels")
LABEL_FAMILIES: tuple[str, ...] = ("human", "ecc_labels")
PARAM_KEYS: tuple[str, ...] = (
    "family",
    "n_clusters",
    "temperature",
    "lam",
    "label_weight",
    "alpha",
)
DEFAULT_PARAM_GRID: tuple[dict, ...] = (
    {"family": ["global"], "alpha": [0.03, 0.1, 0.3, 1.0]},
    {"family": ["human"], "alpha": [0.03, 0.1, 0.3, 1.0]},
    {"family": ["emb_only"], "n_clusters": [10, 30], "temperature": [0.1], "lam": [3.0]},
    {
        "family": ["ecc"],
        "n_clusters": [4, 10, 30],
        "temperature": [0.1, 0.3, 1.0],
        "lam": [3.0],
    },
    {"family": ["ecc"], "n_clusters": [10], "temperature": [0.1], "lam": [1.0, 10.0]},
    {"family": ["ecc"], "n_clusters": [30], "temperature": [0.1], "lam": [10.0]},
    {
        "family": ["ecc_labels"],
        "n_clusters": [30],
        "temperature": [0.3],
        "lam": [3.0],
        "label_weight": [1.0, 4.0],
    },
    {
        "family": ["ecc_labels"],
        "n_clusters": [10],
        "temperature": [0.3],
        "lam": [3.0],
        "label_weight": [4.0],
    },
)
"""The default grid (a list of sub-grids, as scikit-learn's ``param_grid``): the global BT model
(``K = 1``) and one BT per human category at four BT prior precisions, the paper's embedding-only
clusters, ECC over K x T at the paper's lam and over lam at the paper's T, and label-informed
ECC over K x label weight. Missing
keys take :data:`PARAM_DEFAULTS`."""
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
        if family in ("global", "human"):
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


def warm_path(grid: list[dict]) -> list[int]:
    """Order of the grid indices along which warm starts run: by (embedding-only or not, K),
    ECC before label-informed ECC, then by label weight and alpha, from the highest temperature
    down (an annealing path: each fit starts from the smoother solution of its neighbour), then
    by lam.

    Parameters
    ----------
    grid : list of dict
        Candidates of :func:`expand_grid`.

    Returns
    -------
    list of int
    """
    return sorted(
        range(len(grid)),
        key=lambda i: (
            grid[i]["family"] not in ("global", "human"),
            grid[i]["family"] == "emb_only",
            grid[i]["n_clusters"] or 0,
            grid[i]["family"] != "ecc",
            grid[i]["label_weight"],
            grid[i]["alpha"],
            -(grid[i]["temperature"] or 0.0),
            grid[i]["lam"] or 0.0,
        ),
    )


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
    names = {"n_clusters": "K", "temperature": "T", "lam": "lam", "label_weight": "w"}
    parts = [params["family"]]
    parts += [f"{names[k]}={params[k]:g}" for k in names if params.get(k) is not None]
    if params["family"] in ("global", "human") or params["alpha"] != PARAM_DEFAULTS["alpha"]:
        parts.append(f"alpha={params['alpha']:g}")
    return " ".join(parts)


def results_table(grid, losses, scored, seconds, iters) -> pd.DataFrame:
    """The ``cv_results_`` table (see :class:`ecc_lib.ecc.cv.ECCCV`).

    Parameters
    ----------
    grid : list of dict
        The candidates.
    losses, scored : ndarray (n_candidates, n_folds) and (n_folds,)
        Summed held-out NLL per candidate and fold, and scored pairs per fold.
    seconds, iters : ndarray (n_candidates, n_folds)
        Fit time and EM steps.

    Returns
    -------
    DataFrame
    """
    with np.errstate(invalid="ignore", divide="ignore"):
        per_fold = losses / np.where(scored > 0, scored, np.nan)[None, :]
    mean = losses.sum(axis=1) / scored.sum()
    frame = pd.DataFrame({f"param_{k}": [g[k] for g in grid] for k in PARAM_KEYS})
    frame.insert(0, "params", [describe_params(g) for g in grid])
    for f in range(losses.shape[1]):
        frame[f"split{f}_test_nll"] = per_fold[:, f]
    frame["mean_test_nll"] = mean
    frame["std_test_nll"] = np.nanstd(per_fold, axis=1)
    glob = [i for i, g in enumerate(grid) if g["family"] == "global"]
    frame["mean_test_gain"] = 100.0 * (mean[glob[0]] - mean) / mean[glob[0]] if glob else np.nan
    # rank 1 = best; ties keep the grid order (simpler candidates come first)
    order = np.lexsort((np.arange(len(grid)), mean))
    rank = np.empty(len(grid), dtype=int)
    rank[order] = np.arange(1, len(grid) + 1)
    frame["rank_test_nll"] = rank
    frame["mean_fit_time"] = seconds.mean(axis=1)
    frame["mean_n_iter"] = iters.mean(axis=1)
    return frame


__all__ = [
    "DEFAULT_PARAM_GRID",
    "FAMILIES",
    "LABEL_FAMILIES",
    "PARAM_DEFAULTS",
    "PARAM_KEYS",
    "describe_params",
    "expand_grid",
    "results_table",
    "warm_path",
]
