"""A router you can take away: trained once, saved, routing new texts at a calibrated operating point.

:class:`DeployedRouter` bundles a fitted router (:mod:`ecc_lib.routers`) with what routing new
queries needs: the embedder that made its features, the model list, the utility settings, the
dataset's cost scale, a digest of the training data and a held-out *calibration* set (its
embeddings and the observed score and cost of every model on each of its queries). It

- routes texts (:meth:`DeployedRouter.route`): the chosen model per query with the predicted score,
  cost (in the dataset's cost units) and utility;
- picks its operating point on the calibration set (:meth:`DeployedRouter.calibrate`): a budget
  (mean cost per query) sets the cost weight ``lambda`` of ``U = mu_q - lambda mu_c - beta
  sigma_q``; a maximum share of a model sets a per-model offset subtracted from that model's
  utility. The point is described by what it means on the calibration queries: expected quality
  and cost with bootstrap intervals (:func:`ecc_lib.stats.bootstrap_mean_ci`), and the share of
  each model;
- saves to and loads from a folder (:meth:`DeployedRouter.save`, :func:`load_deployed`) through
  :mod:`ecc_lib.routers.io` (arrays and JSON, no pickle).

Routers that learn the utility at one cost weight (ECC, softmax ranking) have no cost prediction:
their utility at another weight is ``U_fit - (lambda - lambda_fit) c_m``, with ``c_m`` the mean
normalised training cost of model ``m``, and their predicted score is not available (NaN).

:func:`train_deployed` fits one family on a dataset (``(queries, outcomes)`` in the data model of
:mod:`ecc_lib.data.schema`) with the routing evaluation's split (docs/design.md, section 4): 20 %
test queries (seed 42), never seen by the router nor by its calibration, and a quarter of the
remaining queries held out for calibration (or, with ``calibration_folds``, a cross-fitted
calibration on out-of-fold predictions of all of them).
"""

from __future__ import annotations

import hashlib
import json
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields, replace
from functools import partial
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib import defaults
from ecc_lib.dars.distributions import (
    DEFAULT_BETA,
    DEFAULT_LAMBDA,
    CapabilityDistributions,
    capability_distributions,
    single_shot_distributions,
)
from ecc_lib.data.observations import RepeatedObservations, repeated_observations, rescale_cost
from ecc_lib.data.splits import split_queries
from ecc_lib.routers import base, io
from ecc_lib.stats import DEFAULT_N_BOOT, bootstrap_mean_ci

CALIBRATION_FILE = "calibration.npz"
TARGET_CHOICES = ("dars", "single")
"""``--targets`` of ``ecc-lib train-router``: DARS distributions or one single-shot draw."""
MAX_LAMBDA = 1e6
"""Largest cost weight a budget search tries."""


def data_digest(queries: pd.DataFrame, outcomes: pd.DataFrame) -> str:
    """sha256 of the training tables' content (row order does not matter).

    Parameters
    ----------
    queries, outcomes : DataFrame
        The dataset.

    Returns
    -------
    str
        ``"sha256:<hex>"``.
    """
    digest = hashlib.sha256()
    for frame in (queries, outcomes):
        frame = frame.reindex(sorted(frame.columns), axis=1)
        rows = np.sort(pd.util.hash_pandas_object(frame, index=False).to_numpy())
        digest.update(json.dumps(list(frame.columns)).encode())
        digest.update(rows.tobytes())
    return f"sha256:{digest.hexdigest()}"


def _embed(texts: Sequence[str], embedder: str, *, use_cache: bool = True) -> np.ndarray:
    """``texts`` embedded by ``embedder``, without the warnings about over-long texts."""
    from ecc_lib.embed.encode import embed_texts

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*longer than.*")
        return embed_texts(
            list(texts), model_name=embedder, use_cache=use_cache, show_progress=False
        )


@dataclass(frozen=True)
class Calibration:
    """Held-out truth of the calibration queries, aligned with their embeddings.

    Attributes
    ----------
    query_ids : ndarray of str, shape (n,)
    embeddings : ndarray, shape (n, d)
    mu_q, mu_c, sigma_q : ndarray, shape (n, n_models)
        Observed mean score, mean normalised cost (training cost scale) and score spread.
    u0, cost : ndarray, shape (n, n_models), optional
        Out-of-fold predictions (cross-fitted calibration, see :func:`train_deployed`): the
        utility at ``lambda = 0`` without offsets and the normalised cost, each predicted by a
        router that did not see the query. When absent the deployed router predicts them from
        ``embeddings`` (which must then be held out from its training).
    """

    query_ids: np.ndarray
    embeddings: np.ndarray
    mu_q: np.ndarray
    mu_c: np.ndarray
    sigma_q: np.ndarray
    u0: np.ndarray | None = None
    cost: np.ndarray | None = None

    @classmethod
    def from_distributions(
        cls, dist: CapabilityDistributions, embeddings: np.ndarray
    ) -> Calibration:
        """Calibration data of held-out distributions and their embeddings (same row order).

        Parameters
        ----------
        dist : CapabilityDistributions
            Held-out truth.
        embeddings : ndarray, shape (n, d)

        Returns
        -------
        Calibration
        """
        return cls(
            query_ids=np.asarray(dist.query_ids, dtype=str),
            embeddings=np.asarray(embeddings, dtype=np.float32),
            mu_q=np.asarray(dist.mu_q, float),
            mu_c=np.asarray(dist.mu_c, float),
            sigma_q=np.asarray(dist.sigma_q, float),
        )

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays written to ``calibration.npz``.

        Returns
        -------
        dict of str to ndarray
        """
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["query_ids"] = self.query_ids.astype(str)
        if self.u0 is None or self.cost is None:
            del out["u0"], out["cost"]
        return out


def router_parts(
    router: base.Router, x: np.ndarray, *, model_cost: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A fitted router's utility parts on embeddings ``x``.

    Parameters
    ----------
    router : Router
        Fitted.
    x : ndarray, shape (n, d)
    model_cost : ndarray, shape (n_models,)
        Mean normalised training cost per model (the cost of routers without a cost prediction).

    Returns
    -------
    u0 : ndarray, shape (n, n_models)
        Utility at ``lambda = 0`` without offsets.
    cost : ndarray, shape (n, n_models)
        Predicted normalised cost.
    score : ndarray or None
        Predicted mean score (None for routers that predict only the utility).
    """
    x = base.as_features(x)
    if router.fitted_target_ == "components":
        pred = router.predict(x)
        return pred["mu_q"] - float(router.beta) * pred["sigma_q"], pred["mu_c"], pred["mu_q"]
    cost = np.broadcast_to(np.asarray(model_cost, float), (len(x), len(model_cost)))
    return router.predict_utility(x) + router.fit_cost_weight_ * cost, cost, None


@dataclass
class DeployedRouter:
    """A fitted router with its embedder, models, utility settings, cost scale and calibration set.

    Parameters
    ----------
    router : Router
        Fitted.
    family : str
        Display name of its family (a key of :data:`ecc_lib.routers.ROUTER_FAMILIES`).
    embedder : str
        Canonical name of the embedder of its features (:func:`ecc_lib.embed.embed_texts`).
    cost_scale : tuple of float
        ``(low, high)`` of the training pair mean raw costs: cost ``c`` normalised is
        ``low + c (high - low)`` in the dataset's units.
    model_cost, model_score : ndarray, shape (n_models,)
        Mean normalised training cost and mean training score of each model.
    calibration : Calibration, optional
        Held-out queries the operating point is calibrated on.
    training_digest : str, optional
        :func:`data_digest` of the training data.
    targets : str, default "dars"
        The training targets (``"dars"`` or ``"single"``).
    cost_weight : float, optional
        Operating cost weight ``lambda`` (default: the router's).
    offsets : ndarray, shape (n_models,), optional
        Subtracted from each model's utility (default zeros).
    operating_point : dict
        What the operating point means (set by :meth:`calibrate`).
    report : dict
        The held-out report of the training (see :func:`ecc_lib.routing_evaluation.deployed`).
    """

    router: base.Router
    family: str
    embedder: str
    cost_scale: tuple[float, float]
    model_cost: np.ndarray
    model_score: np.ndarray
    calibration: Calibration | None = None
    training_digest: str | None = None
    targets: str = "dars"
    cost_weight: float | None = None
    offsets: np.ndarray | None = None
    operating_point: dict = field(default_factory=dict)
    report: dict = field(default_factory=dict)

    def __post_init__(self) -> None:
        m = self.router.n_models_
        if self.cost_weight is None:
            self.cost_weight = float(self.router.cost_weight)
        self.offsets = (
            np.zeros(m) if self.offsets is None else np.asarray(self.offsets, float).reshape(m)
        )
        self.model_cost = np.asarray(self.model_cost, float).reshape(m)
        self.model_score = np.asarray(self.model_score, float).reshape(m)
        self.cost_scale = (float(self.cost_scale[0]), float(self.cost_scale[1]))

    # -- properties ---------------------------------------------------------------------------
    @property
    def models(self) -> tuple[str, ...]:
        """Model names, in the router's column order."""
        return tuple(self.router.models_)

    @property
    def beta(self) -> float:
        """Weight of the score spread in the utility."""
        return float(self.router.beta)

    def raw_cost(self, normalised: np.ndarray) -> np.ndarray:
        """Normalised costs in the dataset's cost units.

        Parameters
        ----------
        normalised : ndarray
            Costs on the training min-max scale.

        Returns
        -------
        ndarray
        """
        low, high = self.cost_scale
        return low + np.asarray(normalised, float) * (high - low if high > low else 1.0)

    def normalised_cost(self, raw: float) -> float:
        """A cost in the dataset's units on the training min-max scale.

        Parameters
        ----------
        raw : float

        Returns
        -------
        float
        """
        low, high = self.cost_scale
        return (float(raw) - low) / (high - low if high > low else 1.0)

    # -- prediction ---------------------------------------------------------------------------
    def embed(self, texts: Sequence[str], *, use_cache: bool = False) -> np.ndarray:
        """Features of ``texts`` with the recorded embedder.

        Parameters
        ----------
        texts : sequence of str
        use_cache : bool, default False
            Read and write the embedding disk cache.

        Returns
        -------
        ndarray, shape (len(texts), d)
        """
        return _embed(texts, self.embedder, use_cache=use_cache)

    def predict_utility(self, x: np.ndarray) -> np.ndarray:
        """Utility of every model at the operating point.

        Parameters
        ----------
        x : ndarray, shape (n, d)
            Query embeddings.

        Returns
        -------
        ndarray, shape (n, n_models)
        """
        u0, cost, _ = router_parts(self.router, x, model_cost=self.model_cost)
        return u0 - self.cost_weight * cost - self.offsets

    def choose(self, x: np.ndarray) -> np.ndarray:
        """Index of the chosen model per query at the operating point.

        Parameters
        ----------
        x : ndarray, shape (n, d)

        Returns
        -------
        ndarray of int, shape (n,)
        """
        return np.argmax(self.predict_utility(x), axis=1)

    def route_embeddings(self, x: np.ndarray) -> pd.DataFrame:
        """The chosen model per query with its predicted score, cost and utility.

        Parameters
        ----------
        x : ndarray, shape (n, d)

        Returns
        -------
        DataFrame
            ``model, predicted_score, predicted_cost, utility``; the cost is in the dataset's
            units; the score is NaN for routers that predict only the utility.
        """
        choice, score, cost, utility = self.decisions(x)
        return pd.DataFrame(
            {
                "model": np.asarray(self.models, dtype=object)[choice],
                "predicted_score": score,
                "predicted_cost": cost,
                "utility": utility,
            }
        )

    def decisions(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """The arrays behind :meth:`route_embeddings` (no table is built).

        Parameters
        ----------
        x : ndarray, shape (n, d)

        Returns
        -------
        choice : ndarray of int, shape (n,)
            Index of the chosen model.
        score, cost, utility : ndarray, shape (n,)
            Its predicted score (NaN when not predicted), cost in the dataset's units and utility.
        """
        x = base.as_features(x)
        u0, cost, score = router_parts(self.router, x, model_cost=self.model_cost)
        utility = u0 - self.cost_weight * cost - self.offsets
        choice = np.argmax(utility, axis=1)
        rows = np.arange(len(x))
        return (
            choice,
            score[rows, choice] if score is not None else np.full(len(x), np.nan),
            self.raw_cost(cost[rows, choice]),
            utility[rows, choice],
        )

    def route(self, texts: Sequence[str]) -> pd.DataFrame:
        """Route texts: embed them with the recorded embedder, then :meth:`route_embeddings`.

        Parameters
        ----------
        texts : sequence of str

        Returns
        -------
        DataFrame
            As :meth:`route_embeddings`.
        """
        texts = [str(t) for t in texts]
        if not texts:
            raise ValueError("route needs at least one text")
        return self.route_embeddings(self.embed(texts))

    # -- calibration ---------------------------------------------------------------------------
    def describe(
        self, *, n_boot: int = DEFAULT_N_BOOT, random_state: int | None = 0
    ) -> dict[str, object]:
        """What the current operating point means on the calibration queries.

        Parameters
        ----------
        n_boot : int, default 1000
            Bootstrap replicates of the intervals.
        random_state : int, optional
            Seed of the bootstrap.

        Returns
        -------
        dict
            ``cost_weight``, ``offsets`` (per model), ``expected_quality`` and ``expected_cost``
            (``[estimate, low, high]``, 95 % percentile bootstrap over calibration queries; cost in
            the dataset's units), ``share`` per model and ``n_calibration``.
        """
        u0, cost, cal = self._calibration_parts()
        choice = np.argmax(u0 - self.cost_weight * cost - self.offsets, axis=1)
        rows = np.arange(len(choice))
        quality = cal.mu_q[rows, choice]
        cost = self.raw_cost(cal.mu_c[rows, choice])
        share = np.bincount(choice, minlength=len(self.models)) / len(choice)
        ci = partial(bootstrap_mean_ci, n_boot=n_boot, random_state=random_state)
        return {
            "cost_weight": float(self.cost_weight),
            "beta": self.beta,
            "offsets": {m: float(v) for m, v in zip(self.models, self.offsets, strict=True)},
            "expected_quality": list(ci(quality)),
            "expected_cost": list(ci(cost)),
            "share": {m: float(s) for m, s in zip(self.models, share, strict=True)},
            "n_calibration": int(len(choice)),
        }

    def _calibration_parts(self) -> tuple[np.ndarray, np.ndarray, Calibration]:
        cal = self.calibration
        if cal is None or len(cal.query_ids) == 0:
            raise ValueError("this router holds no calibration queries; retrain it to calibrate")
        if cal.u0 is not None and cal.cost is not None:
            return np.asarray(cal.u0, float), np.asarray(cal.cost, float), cal
        u0, cost, _ = router_parts(self.router, cal.embeddings, model_cost=self.model_cost)
        return u0, cost, cal

    def calibrate(
        self,
        *,
        budget: float | None = None,
        max_share: Mapping[str, float] | None = None,
        n_boot: int = DEFAULT_N_BOOT,
        random_state: int | None = 0,
    ) -> DeployedRouter:
        """Set the operating point on the calibration queries.

        Parameters
        ----------
        budget : float, optional
            Mean cost per query, in the dataset's cost units: the smallest cost weight ``lambda
            >= 0`` whose routes cost at most ``budget`` on average on the calibration queries (by
            bisection; ``lambda = 0`` when even that stays within the budget).
        max_share : mapping of str to float, optional
            Largest share of queries per named model: the smallest offset subtracted from that
            model's utility that brings its share down to the limit (the other offsets fixed;
            repeated until every limit holds).
        n_boot, random_state
            Bootstrap of the description (:meth:`describe`).

        Returns
        -------
        DeployedRouter
            ``self``, with ``cost_weight``, ``offsets`` and ``operating_point`` set.
        """
        if (budget is None) == (max_share is None):
            raise ValueError("calibrate with exactly one of budget or max_share")
        u0, cost, cal = self._calibration_parts()
        rows = np.arange(len(u0))
        true_cost = cal.mu_c
        if budget is not None:
            budget = float(budget)
            if not np.isfinite(budget):
                raise ValueError(f"budget must be a finite number, got {budget}")
            target = self.normalised_cost(budget)
            offsets = self.offsets

            def mean_cost(lam: float) -> float:
                choice = np.argmax(u0 - lam * cost - offsets, axis=1)
                return float(true_cost[rows, choice].mean())

            lam = self._search_lambda(mean_cost, target, budget)
            self.cost_weight = lam
            if lam == 0.0:
                spent = float(self.raw_cost(mean_cost(0.0)))
                meaning = (
                    f"cost weight lambda = 0: the budget {budget:g} does not bind (routing for "
                    f"quality alone costs {spent:.4g} per query on the {len(rows)} calibration "
                    "queries)"
                )
            else:
                meaning = (
                    f"cost weight lambda = {lam:.6g}: the smallest lambda whose routes cost at "
                    f"most {budget:g} per query on average on the {len(rows)} calibration queries"
                )
            kind = {"budget": budget}
        else:
            self.offsets = self._search_offsets(u0 - self.cost_weight * cost, dict(max_share))
            limits = ", ".join(f"{m} <= {s:g}" for m, s in max_share.items())
            meaning = (
                f"per-model utility offsets (cost weight lambda = {self.cost_weight:.6g}): the "
                f"smallest offsets that keep the share of {limits} on the {len(rows)} "
                "calibration queries"
            )
            kind = {"max_share": {m: float(s) for m, s in max_share.items()}}
        point = self.describe(n_boot=n_boot, random_state=random_state)
        self.operating_point = {**kind, "meaning": meaning, **point}
        return self

    @staticmethod
    def _search_lambda(mean_cost, target: float, budget: float) -> float:
        """Smallest ``lambda`` in ``[0, MAX_LAMBDA]`` with ``mean_cost(lambda) <= target``."""
        if mean_cost(0.0) <= target:
            return 0.0
        high = 1.0
        while mean_cost(high) > target:
            high *= 4.0
            if high > MAX_LAMBDA:
                raise ValueError(
                    f"budget {budget:g} is below the cheapest routes' mean cost on the "
                    "calibration queries; raise it"
                )
        low = 0.0
        for _ in range(60):
            mid = 0.5 * (low + high)
            if mean_cost(mid) <= target:
                high = mid
            else:
                low = mid
            if high - low <= 1e-9 * max(high, 1.0):
                break
        return float(high)

    def _search_offsets(self, utility: np.ndarray, max_share: dict[str, float]) -> np.ndarray:
        """Per-model offsets that keep each named model's share at most its limit."""
        index = {m: i for i, m in enumerate(self.models)}
        for model, share in max_share.items():
            if model not in index:
                raise ValueError(f"unknown model {model!r}; the router's models are {self.models}")
            if not 0.0 <= float(share) <= 1.0:
                raise ValueError(f"max share of {model} must lie in [0, 1], got {share}")
        if sum(float(s) for s in max_share.values()) < 1.0 and len(max_share) == len(index):
            raise ValueError("the max shares of all models add up to less than 1")
        offsets = np.zeros(len(self.models))
        n = len(utility)

        def share_of(i: int) -> float:
            return float(np.mean(np.argmax(utility - offsets, axis=1) == i))

        for _ in range(20):  # coordinate rounds until every limit holds
            changed = False
            for model, limit in max_share.items():
                i = index[model]
                if share_of(i) <= float(limit) + 1e-12:
                    continue
                others = np.delete(utility - offsets, i, axis=1).max(axis=1)
                # the share of model i at offset d is the share of queries with u_i - d > others
                margin = np.sort(utility[:, i] - others)[::-1]
                keep = int(np.floor(float(limit) * n + 1e-9))
                level = max(float(margin[keep]), 0.0) if keep < n else float(offsets[i])
                offsets[i] = level + 1e-9 * (1.0 + abs(level))
                changed = True
            if not changed:
                break
        return offsets

    # -- files -------------------------------------------------------------------------------
    def metadata(self) -> dict:
        """The JSON metadata written beside the router.

        Returns
        -------
        dict
            Exact floats for everything routing reads (the descriptions are rounded by
            :func:`ecc_lib.serialization.to_jsonable`).
        """
        from ecc_lib.serialization import to_jsonable

        return {
            "family": self.family,
            "embedder": self.embedder,
            "embedding_dim": int(self.router.n_features_in_),
            "models": list(self.models),
            "utility": {
                "cost_weight": float(self.router.cost_weight),
                "beta": self.beta,
                "fitted_target": self.router.fitted_target_,
            },
            "targets": self.targets,
            "training_digest": self.training_digest,
            "cost_scale": list(self.cost_scale),
            "model_cost": [float(v) for v in self.model_cost],
            "model_score": [float(v) for v in self.model_score],
            "operating_cost_weight": float(self.cost_weight),
            "operating_offsets": [float(v) for v in self.offsets],
            "operating_point": to_jsonable(self.operating_point),
            "report": to_jsonable(self.report),
        }

    def save(self, folder: str | Path) -> Path:
        """Write the router, its metadata and its calibration set to ``folder``.

        Parameters
        ----------
        folder : str or Path

        Returns
        -------
        Path
        """
        folder = io.save_router(self.router, folder, metadata=self.metadata())
        if self.calibration is not None:
            tmp = folder / f".{CALIBRATION_FILE}.tmp.npz"
            np.savez(tmp, **self.calibration.arrays())
            tmp.replace(folder / CALIBRATION_FILE)
        return folder


def load_deployed(
    folder: str | Path, *, embedder: str | None = None, strict_version: bool = False
) -> DeployedRouter:
    """Read a router folder written by :meth:`DeployedRouter.save`.

    Parameters
    ----------
    folder : str or Path
    embedder : str, optional
        The embedder the caller means to use; refused when it is not the recorded one.
    strict_version : bool, default False
        Refuse (rather than warn about) a file of another ecc_lib version.

    Returns
    -------
    DeployedRouter
    """
    router, meta = io.load_router(folder, embedder=embedder, strict_version=strict_version)
    for key in ("family", "embedder", "cost_scale", "model_cost", "model_score"):
        if key not in meta:
            raise io.RouterFileError(f"{folder}: router.json lacks the deployment field {key!r}")
    if list(meta.get("models", [])) != list(router.models_):
        raise io.RouterFileError(f"{folder}: the recorded models differ from the router's")
    calibration = None
    path = Path(folder) / CALIBRATION_FILE
    if path.is_file():
        arrays = io.read_arrays(path)
        required = [f.name for f in fields(Calibration) if f.default is MISSING]
        for name in required:
            if name not in arrays:
                raise io.RouterFileError(f"{path} lacks the calibration array {name!r}")
        arrays["query_ids"] = arrays["query_ids"].astype(str)
        names = {f.name for f in fields(Calibration)}
        calibration = Calibration(**{k: v for k, v in arrays.items() if k in names})
    return DeployedRouter(
        router=router,
        family=meta["family"],
        embedder=meta["embedder"],
        cost_scale=tuple(meta["cost_scale"]),
        model_cost=np.asarray(meta["model_cost"], float),
        model_score=np.asarray(meta["model_score"], float),
        calibration=calibration,
        training_digest=meta.get("training_digest"),
        targets=meta.get("targets", "dars"),
        cost_weight=meta.get("operating_cost_weight"),
        offsets=meta.get("operating_offsets"),  # None: zeros (see __post_init__)
        operating_point=meta.get("operating_point") or {},
        report=meta.get("report") or {},
    )


# --------------------------------------------------------------------------------------------
# Training
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TrainingSplit:
    """The three parts of a :func:`train_deployed` run.

    Attributes
    ----------
    train, calibration, test : RepeatedObservations
        Observations of each part (costs on the training scale).
    x_train, x_calibration, x_test : ndarray
        Their embeddings, in the parts' query order.
    train_targets : CapabilityDistributions
        The targets the router was fitted on.
    """

    train: RepeatedObservations
    calibration: RepeatedObservations
    test: RepeatedObservations
    x_train: np.ndarray
    x_calibration: np.ndarray
    x_test: np.ndarray
    train_targets: CapabilityDistributions


def _query_features(
    queries: pd.DataFrame, obs: RepeatedObservations, embedder: str, embeddings: np.ndarray | None
) -> np.ndarray:
    """Features of the outcome queries, in their order: ``embeddings`` realigned, or the texts
    embedded by ``embedder``; every outcome query needs a text."""
    text_by_id = queries.set_index(queries["query_id"].astype(str))["text"]
    missing = ~pd.Index(obs.query_ids.astype(str)).isin(text_by_id.index)
    if missing.any():
        raise ValueError(
            f"{int(missing.sum())} outcome queries have no text; first: "
            f"{obs.query_ids[missing][0]!r}"
        )
    if embeddings is None:
        x_all = _embed(text_by_id.loc[obs.query_ids.astype(str)].astype(str).tolist(), embedder)
    else:
        position = pd.Index(queries["query_id"].astype(str)).get_indexer(obs.query_ids.astype(str))
        x_all = np.asarray(embeddings)[position]
    return np.asarray(x_all, dtype=float)


def _calibration_masks(
    rest: np.ndarray, calibration_size: float, calibration_folds: int | None, split_seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """The training and calibration queries among the non-test ones (``rest``): a held-out part
    (``calibration_folds`` None), or all of them for both (cross-fitted calibration)."""
    rest_idx = np.flatnonzero(rest)
    if calibration_folds is None:  # one held-out calibration part, the router fitted on the rest
        fit_part, cal_part = split_queries(
            len(rest_idx), test_size=calibration_size, random_state=split_seed + 1
        )
        train_mask, cal_mask = np.zeros((2, len(rest)), bool)
        train_mask[rest_idx[fit_part]] = True
        cal_mask[rest_idx[cal_part]] = True
    else:  # cross-fitted: every non-test query calibrates, out of fold; the router sees them all
        if int(calibration_folds) < 2 or int(calibration_folds) > len(rest_idx):
            raise ValueError(
                f"calibration_folds must lie in [2, {len(rest_idx)}], got {calibration_folds}"
            )
        train_mask = cal_mask = rest
    return train_mask, cal_mask


def train_deployed(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    *,
    family: str,
    targets: str = "dars",
    embedder: str = "static",
    embeddings: np.ndarray | None = None,
    router_kwargs: Mapping | None = None,
    cost_weight: float = DEFAULT_LAMBDA,
    beta: float = DEFAULT_BETA,
    test_size: float = defaults.TEST_SIZE,
    calibration_size: float = 0.25,
    calibration_folds: int | None = None,
    split_seed: int = defaults.SEED,
    random_state: int = 0,
) -> tuple[DeployedRouter, TrainingSplit]:
    """Fit one router family on a dataset, keeping calibration and test queries aside.

    Parameters
    ----------
    queries, outcomes : DataFrame
        The dataset (``query_id, text`` and the long outcomes).
    family : str
        A key of :func:`ecc_lib.routers.router_families`.
    targets : {"dars", "single"}, default "dars"
        DARS distributions of the training queries, or one single-shot draw per pair
        (seed ``random_state``).
    embedder : str, default "static"
        Embedder of the query texts (recorded with the router).
    embeddings : ndarray, optional
        Precomputed embeddings aligned with the rows of ``queries`` (made by ``embedder``).
    router_kwargs : mapping, optional
        Further constructor arguments of the family.
    cost_weight, beta : float
        Utility weights of the training targets and the default operating point.
    test_size : float, default 0.2
        Share of test queries (split seed ``split_seed``, the routing evaluation's split).
    calibration_size : float, default 0.25
        Share of the remaining queries held out for calibration when ``calibration_folds`` is
        None.
    calibration_folds : int or None, default None
        None: hold out ``calibration_size`` of the non-test queries once; the deployed router
        never sees them, so the calibration describes exactly the router that routes. An int:
        cross-fitted calibration; the non-test queries are cut into this many folds (seed
        ``split_seed + 1``), a router fitted on the other folds predicts each fold, the operating
        point is calibrated on these out-of-fold predictions of every non-test query and the
        deployed router is fitted on all of them. That quarters the calibration's sampling
        error but assumes the deployed router behaves like the fold routers: true for kNN, not
        for routers whose fit changes with the sample (clusters, short torch training), whose
        budgets then miss on new queries by 10-50 % (measured on dcrouter, see
        docs/guide/router.md).
    split_seed, random_state : int
        Seeds of the splits and of the router.

    Returns
    -------
    deployed : DeployedRouter
        At the operating point ``lambda = cost_weight``, no offsets.
    split : TrainingSplit
        The parts, for the held-out report.
    """
    from ecc_lib.embed.models import canonical_model_name
    from ecc_lib.routers import make_router

    if targets not in TARGET_CHOICES:
        raise ValueError(f"targets must be one of {TARGET_CHOICES}, got {targets!r}")
    obs = repeated_observations(outcomes)
    x_all = _query_features(queries, obs, embedder, embeddings)
    rest, test = split_queries(obs.n_queries, test_size=test_size, random_state=split_seed)
    rest_idx = np.flatnonzero(rest)
    kwargs = {"cost_weight": cost_weight, "beta": beta, **dict(router_kwargs or {})}

    def fit(mask: np.ndarray, dist: CapabilityDistributions) -> base.Router:
        router = make_router(family, random_state=random_state, **kwargs)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message=".*[Cc]onverge.*")
            return router.fit(x_all[mask], dist)

    def targets_of(part: RepeatedObservations) -> CapabilityDistributions:
        if targets == "dars":
            return capability_distributions(part)
        return single_shot_distributions(part, random_state=random_state)

    train_mask, cal_mask = _calibration_masks(rest, calibration_size, calibration_folds, split_seed)
    train_obs = rescale_cost(obs.select_queries(train_mask))
    cal_obs = rescale_cost(obs.select_queries(cal_mask), train_obs)
    test_obs = rescale_cost(obs.select_queries(test), train_obs)
    dars_train = capability_distributions(train_obs)
    router = fit(train_mask, targets_of(train_obs))
    cal_truth = capability_distributions(cal_obs)
    model_cost = dars_train.mu_c.mean(axis=0)
    calibration = Calibration.from_distributions(cal_truth, x_all[cal_mask])
    if calibration_folds is not None:
        folds = np.random.default_rng(split_seed + 1).permutation(len(rest_idx))
        folds %= int(calibration_folds)
        u0 = np.empty((len(rest_idx), len(router.models_)))
        cost = np.empty_like(u0)
        for k in range(int(calibration_folds)):
            inside = np.zeros(obs.n_queries, bool)
            inside[rest_idx[folds != k]] = True
            fold_obs = rescale_cost(obs.select_queries(inside), train_obs)
            fold_router = fit(inside, targets_of(fold_obs))
            u0[folds == k], cost[folds == k], _ = router_parts(
                fold_router, x_all[rest_idx[folds == k]], model_cost=model_cost
            )
        calibration = replace(calibration, u0=u0, cost=cost)
    deployed = DeployedRouter(
        router=router,
        family=family,
        embedder=canonical_model_name(embedder),
        cost_scale=tuple(train_obs.cost_scale),
        model_cost=model_cost,
        model_score=dars_train.mu_q.mean(axis=0),
        calibration=calibration,
        training_digest=data_digest(queries, outcomes),
        targets=targets,
    )
    return deployed, TrainingSplit(
        train=train_obs,
        calibration=cal_obs,
        test=test_obs,
        x_train=x_all[train_mask],
        x_calibration=x_all[cal_mask],
        x_test=x_all[test],
        train_targets=dars_train,
    )


__all__ = [
    "DeployedRouter",
    "load_deployed",
    "train_deployed",
]
