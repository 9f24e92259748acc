"""The teaching tour (``notebooks/00_tour.ipynb``): ECC and DARS on data with a planted truth.

Three lessons, each a few calls:

1. :func:`profile_table`: a Bradley-Terry (BT) profile gives each model a score ``theta_m`` with
   ``P(b beats a) = sigmoid(theta_b - theta_a)``; planted capability clusters rank the models
   differently, and one global profile averages them away.
2. :func:`fit_clusterings` and :func:`recovery_table`: clustering the embeddings (or taking the topic
   labels) finds topics, not capabilities; ECC, which also reads a few pairwise comparisons per
   query, recovers the planted capability clusters (adjusted Rand index with a bootstrap CI, and the
   paired difference against embedding-only clusters).
3. :func:`label_truth_table`: with repeated answers, one sampled answer per model names the true
   best model less often than the label from all observations, and two single-shot labels of the
   same query often disagree (the flip rate).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.dars import distributions as dars
from ecc_lib.dars import winners as dars_winners
from ecc_lib.ecc.baselines import EmbeddingClusters, GlobalBT
from ecc_lib.ecc.estimator import ECC
from ecc_lib.labels import TOUR_METHOD_NAMES
from ecc_lib.stats import adjusted_rand_ci, bootstrap_mean_ci
from ecc_lib.synthetic.capability import CapabilityData
from ecc_lib.synthetic.repeated_outcomes import RepeatedOutcomesData


def profile_table(data: CapabilityData) -> pd.DataFrame:
    """Planted BT profile of each capability cluster beside the one fitted global profile.

    Parameters
    ----------
    data : CapabilityData

    Returns
    -------
    DataFrame
        One row per capability cluster (``capability k (n=...)``) and a last row ``global BT
        (fitted)``; one column per model (centred BT scores, logits), plus ``best model``.
    """
    sizes = np.bincount(data.capability, minlength=len(data.theta))
    glob = GlobalBT().fit(None, data.comparisons).theta_[0]
    theta = np.vstack([data.theta, glob - glob.mean()])
    index = [f"capability {k} (n={int(n)})" for k, n in enumerate(sizes)] + ["global BT (fitted)"]
    table = pd.DataFrame(theta, index=index, columns=list(data.models)).round(2)
    table["best model"] = [data.models[i] for i in theta.argmax(axis=1)]
    return table.rename_axis("profile")


def fit_clusterings(
    data: CapabilityData, *, n_clusters: int, n_init: int = 4, random_state: int = 0
) -> dict[str, np.ndarray]:
    """Hard cluster labels of ECC, of embedding-only clusters and of the topic labels.

    Parameters
    ----------
    data : CapabilityData
    n_clusters : int
        Clusters of ECC and of the embedding-only baseline.
    n_init : int, default 4
        EM restarts of each.
    random_state : int, default 0

    Returns
    -------
    dict
        ``{"ecc", "emb_only", "labels"}`` -> integer labels per query.
    """
    x, c = data.embeddings, data.comparisons
    ecc = ECC(n_clusters=n_clusters, n_init=n_init, random_state=random_state).fit(x, c)
    emb = EmbeddingClusters(n_clusters=n_clusters, n_init=n_init, random_state=random_state).fit(
        x, c
    )
    return {
        "ecc": ecc.responsibilities_.argmax(axis=1),
        "emb_only": emb.responsibilities_.argmax(axis=1),
        "labels": pd.factorize(data.queries["category"])[0],
    }


def recovery_table(
    truth: np.ndarray,
    labelings: dict[str, np.ndarray],
    *,
    reference: str = "emb_only",
    n_boot: int = defaults.N_BOOT,
    random_state: int = 0,
) -> tuple[pd.DataFrame, dict[str, float | list[float]]]:
    """Adjusted Rand index of each labelling against the planted truth, with 95% CIs.

    Parameters
    ----------
    truth : ndarray of int
        Planted cluster of each query.
    labelings : dict
        Method -> labels per query.
    reference : str, default "emb_only"
        Method that ECC (``"ecc"``) is compared with, paired on the same bootstrap resamples.
    n_boot : int, default 1000
    random_state : int, default 0

    Returns
    -------
    table : DataFrame
        ``method``, ``ari``, ``low``, ``high`` (one row per method).
    difference : dict
        ``estimate`` and ``ci95`` of ``ARI(ecc) - ARI(reference)``.
    """
    rows = []
    for method, labels in labelings.items():
        estimate, low, high = adjusted_rand_ci(
            truth, labels, n_boot=n_boot, random_state=random_state
        )
        rows.append(
            {
                "method": TOUR_METHOD_NAMES.get(method, method),
                "key": method,
                "ari": estimate,
                "low": low,
                "high": high,
            }
        )
    estimate, low, high = adjusted_rand_ci(
        truth,
        labelings["ecc"],
        reference=labelings[reference],
        n_boot=n_boot,
        random_state=random_state,
    )
    return pd.DataFrame(rows), {"estimate": estimate, "ci95": [low, high]}


def label_truth_table(
    data: RepeatedOutcomesData, *, n_boot: int = defaults.N_BOOT, random_state: int = 0
) -> pd.DataFrame:
    """How often labels name the planted best model, and how often single-shot labels flip.

    Parameters
    ----------
    data : RepeatedOutcomesData
        Repeated outcomes whose truth holds the best model of each query.
    n_boot : int, default 1000
    random_state : int, default 0

    Returns
    -------
    DataFrame
        ``key``, ``measure``, ``estimate``, ``low``, ``high`` (fractions of queries, 95% CI over
        queries): ``single_shot_accuracy`` (one sampled answer per model, ties broken at random),
        ``distribution_accuracy`` (argmax of the mean over all observations) and
        ``winner_flip_rate`` (two independent single-shot labels differ).
    """
    obs = dars.repeated_observations(data.outcomes)
    order = pd.Index(data.queries["query_id"]).get_indexer(obs.query_ids)
    models = pd.Index(data.models).get_indexer(list(obs.models))
    best = data.truth.best_model[order]
    winners = dars_winners.single_shot_winners(obs, random_state=random_state)
    probs = winners.winner_probabilities[:, np.argsort(models)]
    mu = dars.capability_distributions(obs).mu_q[:, np.argsort(models)]
    values = {
        "single_shot_accuracy": (
            "one sampled answer per model names the true best model",
            probs[np.arange(len(best)), best],
        ),
        "distribution_accuracy": (
            "the mean over all observations names the true best model",
            (mu.argmax(axis=1) == best).astype(float),
        ),
        "winner_flip_rate": ("two single-shot labels of a query disagree", winners.flip),
    }
    rows = []
    for key, (measure, per_query) in values.items():
        estimate, low, high = bootstrap_mean_ci(per_query, n_boot=n_boot, random_state=random_state)
        rows.append(
            {"key": key, "measure": measure, "estimate": estimate, "low": low, "high": high}
        )
    return pd.DataFrame(rows)


__all__ = [
    "fit_clusterings",
    "label_truth_table",
    "profile_table",
    "recovery_table",
]
