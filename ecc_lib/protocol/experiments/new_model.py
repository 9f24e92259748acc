"""Ranking a new model from a small budget of comparisons, with ECC clusters.

The paper's new-model experiment (Wu, Silwal & Zhang 2026; ``docs/design.md`` section 3): cluster with
the old models, spend a budget of ``B`` comparisons of the new model against the median-ranked old
model of each query's cluster, refit the profiles, and score the new model's pairs on test queries
against a budget spent against the global median model (:func:`new_model_experiment`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from ecc_lib.bradley_terry import count_matrix, fit_bt_counts
from ecc_lib.data.comparisons import Comparisons, score_matrix, snap_ties
from ecc_lib.data.splits import probe_models, split_probe
from ecc_lib.ecc.estimator import ECC
from ecc_lib.ecc.mixture import comparison_nll
from ecc_lib.protocol.methods import fit_methods, methods_from_prototype
from ecc_lib.protocol.settings import Protocol
from ecc_lib.stats import (
    bootstrap_indices,
    mean_ratio,
    paired_difference,
    ratio_gain,
)


def _refit_with_extra(
    train: Comparisons,
    extra: Comparisons,
    responsibilities: np.ndarray,
    alpha: float,
    theta0: np.ndarray,
    budget_weight: float = 1.0,
) -> np.ndarray:
    """One M-step (BT part) over the training comparisons plus budget comparisons, with
    responsibilities held fixed.

    A training comparison of query ``q`` weighs ``r_qk / N_q`` in profile ``k`` (as in ECC); a
    budget comparison weighs ``r_qk * budget_weight``.
    """
    counts = count_matrix(train, normalize=True)
    if len(extra):
        counts = counts + budget_weight * count_matrix(extra, normalize=False)
    m = train.n_models
    k = responsibilities.shape[1]
    wins = np.asarray(counts.T @ responsibilities).T.reshape(k, m, m)
    return fit_bt_counts(wins, alpha=alpha, theta0=theta0)


def new_model_experiment(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    new_model: str,
    *,
    protocol: Protocol | None = None,
    estimator: ECC | None = None,
    budgets: tuple[int, ...] = (10, 30, 100, 300),
    budget_weight: float = 1.0,
) -> pd.DataFrame:
    """Rank a new model from a small budget of comparisons: ECC, embedding-only and global
    opponent choice.

    The clusterings are fitted on the old models (paper protocol without ``new_model``). For a
    budget ``B``, ``B`` random training queries each get one comparison of the new model against
    an opponent, and the arm refits its cluster profiles with the new model (responsibilities held
    fixed). The three arms (the paper's new-model experiment, ``docs/design.md`` section 3):

    - ``ecc``: ECC clusters; the opponent is the median-ranked old model of the query's (most
      responsible) ECC cluster;
    - ``emb_only``: embedding-only clusters; the opponent is the median-ranked old model of the
      query's embedding cluster (the paper's baseline);
    - ``global``: ECC clusters, but every budget comparison is spent against the median-ranked
      model of the global BT fit (the reference of the gain).

    **Weighting of the budget comparisons.** In ECC's M-step a training comparison of query ``q``
    weighs ``r_qk / N_q`` (every query counts once), against a unit Gaussian prior on the scores.
    Budget comparisons weighed that way (``1/8`` each on a query with 7 pairs) barely move the new
    model's score: on dcrouter ``B = 100`` moved a cluster score by 0.21 where the
    maximum-likelihood move is 1.39, and no budget could separate the arms. The new model has no
    other evidence, so here each budget comparison counts as one full observation: weight
    ``budget_weight * r_qk`` (default ``budget_weight = 1``), so that ``B`` comparisons spread over
    ``K`` clusters give each profile about ``B / K`` observations of the new model against the
    unit prior. ``budget_weight = 1 / (N_q + 1)`` recovers the old behaviour.

    Each arm is scored by the NLL of every (new model, old model) non-tie pair on the test
    queries, whose responsibilities come from the arm's clustering with the query's embedding and
    probe. Gain of an arm = ``(NLL_global - NLL_arm) / NLL_global`` in percent; all intervals are
    percentile bootstraps over test queries with the same resamples (differences are paired).

    **The probe's leak** (issue 23): a test pair whose old model is one of the probe's two models
    has had that model's outcome revealed by a binary probe. The headline columns (``gain_pct``,
    ``nll_*_opponent``, ``ecc_minus_emb_pct``) score the pairs *disjoint* from the probe's
    models; ``*_all_*`` score every pair (the earlier reading) and ``*_touching_*`` the touching
    ones (``touching_share`` of the pairs).

    Parameters
    ----------
    queries, outcomes, embeddings
        As in :func:`~ecc_lib.protocol.ecc_protocol.run_protocol`.
    new_model : str
        The model left out and ranked from the budget.
    protocol : Protocol, optional
        The settings (default ``Protocol()``): pairs, test size, evidence and tie tolerance of the
        split, ``n_probes`` of the test queries, ``n_boot``; ``protocol.seed`` seeds the split,
        the EM starts, the budget queries and the bootstrap.
    estimator : ECC, optional
        The unfitted ECC prototype (default ``ECC()``); the embedding-only arm is built from its
        parameters (:func:`~ecc_lib.protocol.methods.methods_from_prototype`).
    budgets : tuple of int
        Comparison budgets.
    budget_weight : float, default 1.0
        Weight of a budget comparison (times ``r_qk``), see above.

    Returns
    -------
    DataFrame
        One row per budget: ``budget, nll_ecc_opponent, nll_emb_opponent, nll_global_opponent``
        (disjoint pairs, with ``_low`` / ``_high`` intervals; ``_all`` on every pair),
        ``nll_no_budget``, ``gain_pct, gain_low, gain_high`` (ECC against global),
        ``gain_emb_pct, gain_emb_low, gain_emb_high`` (embedding-only against global),
        ``ecc_minus_emb_pct, ecc_minus_emb_low, ecc_minus_emb_high`` (paired difference of the
        two gains, pp), each also as ``gain_all_pct`` ... and ``gain_touching_pct`` ...;
        ``n_test_pairs`` (``_touching`` / ``_disjoint``) and ``touching_share``.
    """
    protocol = Protocol() if protocol is None else protocol
    random_state, n_probes, n_boot = protocol.seed, protocol.n_probes, protocol.n_boot
    if budget_weight <= 0:
        raise ValueError(f"budget_weight must be > 0, got {budget_weight}")
    all_models = sorted(outcomes["model"].astype(str).unique())
    if new_model not in all_models:
        raise ValueError(f"new_model {new_model!r} is not in the outcomes")
    old_models = tuple(m for m in all_models if m != new_model)
    if len(old_models) < 2:
        raise ValueError("the new-model experiment needs at least 2 old models")
    old_outcomes = outcomes[outcomes["model"].astype(str) != new_model]
    data = protocol.prepare(queries, old_outcomes, embeddings, models=old_models)
    fitted, _ = fit_methods(
        data,
        methods_from_prototype(
            estimator, methods=("global", "ecc", "emb_only"), random_state=random_state
        ),
    )
    ecc, emb = fitted["ecc"], fitted["emb_only"]
    models = (*old_models, new_model)
    new_index = len(old_models)
    new_scores, _, _ = score_matrix(outcomes, query_ids=data.comparisons.query_ids, models=models)
    train_scores = new_scores[data.train_mask]
    arms = _arms(fitted, len(old_models), data.train.n_queries)
    pairs = _NewModelPairs.build(data, new_scores[data.test_mask], new_index, n_probes, ecc, emb)
    train_ext = replace(data.train, models=models)  # the same rows, coded with the new model
    rng = np.random.default_rng(random_state)
    usable = np.isfinite(train_scores[:, new_index])
    order = rng.permutation(np.flatnonzero(usable))
    no_budget = pairs.nll(ecc, _start(ecc))
    has = np.bincount(pairs.tq, minlength=pairs.n_test) > 0
    index = bootstrap_indices(int(has.sum()), n_boot=n_boot, random_state=random_state)
    readings = {"": ~pairs.touches, "_all": None, "_touching": pairs.touches}
    rows = []
    for budget in budgets:
        chosen = order[: min(int(budget), len(order))]
        nll = {}
        for arm, (model, opponent) in arms.items():
            extra = _budget_comparisons(
                chosen, opponent[chosen], train_scores, new_index, data.train.query_ids, models
            )
            theta = _refit_with_extra(
                train_ext,
                extra,
                model.responsibilities_,
                float(model.alpha),
                _start(model),
                budget_weight,
            )
            nll[arm] = {
                suffix: pairs.nll(model, theta, mask)[has] for suffix, mask in readings.items()
            }
        row = {"new_model": new_model, "budget": int(len(chosen))}
        row.update(_budget_columns(nll, no_budget, pairs, has, index, readings))
        row["budget_weight"] = budget_weight
        rows.append(row)
    return pd.DataFrame(rows)


def _budget_comparisons(
    chosen: np.ndarray,
    opp: np.ndarray,
    train_scores: np.ndarray,
    new_index: int,
    query_ids: np.ndarray,
    models: tuple[str, ...],
) -> Comparisons:
    """The budget's comparisons: the new model against each chosen query's opponent (where the
    opponent has a score; ties count 0.5)."""
    s_new = train_scores[chosen, new_index]
    s_opp = train_scores[chosen, opp]
    ok = np.isfinite(s_opp)
    y = np.where(s_new > s_opp, 1.0, np.where(s_new < s_opp, 0.0, 0.5))[ok]
    return Comparisons(
        query=chosen[ok].astype(np.int64),
        model_a=opp[ok].astype(np.int64),
        model_b=np.full(int(ok.sum()), new_index, dtype=np.int64),
        y=y,
        query_ids=query_ids,
        models=models,
    )


def _start(model) -> np.ndarray:
    """A fitted clustering's profiles with the new model's score 0 appended (the refit's start)."""
    return np.concatenate([model.theta_, np.zeros((model.theta_.shape[0], 1))], axis=1)


def _arms(fitted: dict, n_old: int, n_train: int) -> dict:
    """The three arms: ``(clustering, opponent of each training query)``; the opponent is the
    median-ranked old model of the query's cluster (ECC, embedding-only) or of the global fit."""
    median_pos = (n_old - 1) // 2

    def cluster_opponent(model) -> np.ndarray:
        cluster_median = np.argsort(-model.theta_, axis=1)[:, median_pos]
        return cluster_median[model.responsibilities_.argmax(axis=1)]

    ecc, emb = fitted["ecc"], fitted["emb_only"]
    global_median = np.argsort(-fitted["global"].theta_[0])[median_pos]
    return {
        "ecc": (ecc, cluster_opponent(ecc)),
        "emb_only": (emb, cluster_opponent(emb)),
        "global": (ecc, np.full(n_train, global_median)),
    }


@dataclass
class _NewModelPairs:
    """The test pairs scored: the new model against every old model, non-tie outcomes.

    ``tq`` / ``to``: each pair's test query and old model; ``y``: 1 where the new model won;
    ``touches``: the old model is one of the probe's models, whose outcome a binary probe has
    decided (issue 23); ``resp``: test responsibilities by ``id`` of the clustering."""

    tq: np.ndarray
    to: np.ndarray
    y: np.ndarray
    touches: np.ndarray
    resp: dict
    new_index: int
    n_test: int

    @classmethod
    def build(cls, data, test_scores, new_index, n_probes, ecc, emb) -> _NewModelPairs:
        """The pairs of ``data``'s test queries (``test_scores``: their score matrix)."""
        probe, _ = split_probe(data.test, n_probes=n_probes)
        snapped = snap_ties(test_scores, tolerance=float(data.params.get("tie_tolerance", 0.0)))
        tq, to = np.nonzero(
            np.isfinite(snapped[:, :new_index])
            & np.isfinite(snapped[:, [new_index]])
            & (snapped[:, :new_index] != snapped[:, [new_index]])
        )
        test_y = (snapped[tq, new_index] > snapped[tq, to]).astype(float)
        if len(tq) == 0:
            raise ValueError("no non-tie test pairs of the new model")
        touches = probe_models(probe)[tq, to] if n_probes else np.zeros(len(tq), dtype=bool)
        resp = {
            id(model): model.predict_responsibilities(
                data.x_test, probe if n_probes else None, "both"
            )
            for model in (ecc, emb)
        }
        return cls(tq, to, test_y, touches, resp, new_index, data.test.n_queries)

    def nll(self, model, theta: np.ndarray, rows: np.ndarray | None = None) -> np.ndarray:
        """NLL per test query of its pairs under ``theta`` (only ``rows`` where given)."""
        tq = self.tq
        diff = theta[:, self.new_index][:, None] - theta[:, self.to]
        p = np.einsum("nk,kn->n", self.resp[id(model)][tq], 1.0 / (1.0 + np.exp(-diff)))
        losses = comparison_nll(p, self.y)
        if rows is not None:
            losses = np.where(rows, losses, 0.0)
        return np.bincount(tq, weights=losses, minlength=self.n_test)


def _budget_columns(
    nll: dict,
    no_budget: np.ndarray,
    pairs: _NewModelPairs,
    has: np.ndarray,
    index: np.ndarray,
    readings: dict,
) -> dict:
    """One budget's columns: each arm's NLL, the gains over the global arm and their difference."""
    touches = pairs.touches
    total = float(np.bincount(pairs.tq, minlength=pairs.n_test).sum())
    row = {}
    disjoint_counts = np.bincount(pairs.tq[~touches], minlength=pairs.n_test)[has]
    n_disjoint = float((~touches).sum())
    for arm, column in (("ecc", "ecc"), ("emb_only", "emb"), ("global", "global")):
        row[f"nll_{column}_opponent"] = (
            float(nll[arm][""].sum() / n_disjoint) if n_disjoint else float("nan")
        )
        interval = mean_ratio(nll[arm][""], disjoint_counts, index, confidence=0.95)[1]
        row[f"nll_{column}_opponent_low"], row[f"nll_{column}_opponent_high"] = interval
        row[f"nll_{column}_opponent_all"] = float(nll[arm]["_all"].sum() / total)
    row["nll_no_budget"] = float(no_budget[has].sum() / total)
    # headline: pairs disjoint from the probe's models; beside it all and touching pairs
    for suffix in readings:
        g = nll["global"][suffix]
        gains = {}
        for arm, prefix in (("ecc", "gain"), ("emb_only", "gain_emb")):
            gains[arm] = ratio_gain(g, nll[arm][suffix], index, confidence=0.95)
            row[f"{prefix}{suffix}_pct"] = gains[arm][0]
            row[f"{prefix}{suffix}_low"], row[f"{prefix}{suffix}_high"] = gains[arm][1]
        diff = paired_difference(
            gains["ecc"][0], gains["ecc"][2], gains["emb_only"][0], gains["emb_only"][2]
        )
        row[f"ecc_minus_emb{suffix}_pct"] = diff["estimate"]
        row[f"ecc_minus_emb{suffix}_low"], row[f"ecc_minus_emb{suffix}_high"] = diff["ci95"]
    row["n_test_pairs"] = int(total)
    row["n_test_pairs_touching"] = int(touches.sum())
    row["n_test_pairs_disjoint"] = int((~touches).sum())
    row["touching_share"] = float(touches.mean())
    return row


__all__ = [
    "new_model_experiment",
]
