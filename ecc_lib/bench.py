"""Evidence across datasets: the checks, the ECC protocol over seeds, the flip readings and routing,
for several datasets at once (``ecc-lab bench``, notebook 06; issue 27).

For each dataset :func:`bench_dataset`

1. loads it, embeds its texts (through the cache) and applies the imperfect-data policy exactly as
   ``ecc-lab ecc`` does;
2. runs the checks of :mod:`ecc_lib.data.checks`; a dataset that fails one is listed with the failure
   and **left out** of every table and mean;
3. runs the ECC protocol seed by seed with :func:`ecc_lib.protocol.seeds.run_seeds` (the same call, the
   same seeds ``seed, seed + 1, ...`` and the same methods as ``ecc-lab ecc --seeds S``, plus
   ``ecc_cv`` when it is registered), so the bench's mean +- sd agree with ``ecc-lab ecc`` to the
   printed digit; per seed also paired differences on disjoint pairs against the human-label
   baseline, and the routing experiment of :mod:`ecc_lib.protocol.routing` with two paired readings:
   the best router minus the best fixed model without a probe (both call one model per query) and
   the best router minus the probe's winner with the probe (both pay the probe);
4. reads the three winner-flip readings with their chance level where the data hold repeats.

Each seed's numbers are kept in ``DIR/work/<dataset>/seed_<s>.json`` and each finished dataset in
``DIR/datasets/<dataset>.json``: a rerun with the same settings recomputes nothing that is done.
:class:`BenchResult` gathers the datasets: one row per dataset plus the mean row (average over the
datasets that passed), and one sentence per method (on how many datasets it is better than, worse
than or not distinguishable from the global BT and from human labels on disjoint pairs).

Intervals of a dataset's reading over seeds: mean +- t(0.975, S - 1) sd / sqrt(S) over the ``S``
seeds (each seed redraws pairs, split and EM start); with one seed, that seed's 95% bootstrap
interval over test queries.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import os
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from ecc_lib.serialization import to_jsonable
from ecc_lib.stats import (
    DEFAULT_N_BOOT,
    bootstrap_indices,
    mean_with_replicates,
    paired_difference,
    ratio_gain,
)

logger = logging.getLogger(__name__)

BENCH_VERSION = 2
"""Version of the cached per-seed and per-dataset records (a change recomputes them). 2: no
"probe" routing reading on two-model data; checks with the protocol's tie tolerance."""
REFERENCES = ("global", "human")
"""What each method is compared with on disjoint pairs in the per-method sentences."""
VERDICTS = ("better than", "worse than", "not distinguishable from")


@dataclass(frozen=True)
class BenchSettings:
    """The protocol settings of a benchmark (the defaults of ``ecc-lab ecc``).

    Attributes
    ----------
    n_clusters, lam, temperature : ECC parameters (30, 3, 0.1)
    n_pairs, n_probes, test_size : the protocol (7 pairs, 1 probe, 20% test queries)
    seed : int
        First protocol seed; seeds are ``seed, seed + 1, ...``.
    n_seeds : int
    n_boot : int
        Bootstrap resamples of every interval.
    """

    n_clusters: int = 30
    lam: float = 3.0
    temperature: float = 0.1
    n_pairs: int = 7
    n_probes: int = 1
    test_size: float = 0.2
    seed: int = 42
    n_seeds: int = 3
    n_boot: int = DEFAULT_N_BOOT

    def __post_init__(self) -> None:
        if self.n_seeds < 1:
            raise ValueError(f"the bench needs at least 1 seed, got {self.n_seeds}")
        if self.n_probes < 1 or self.n_probes >= self.n_pairs:
            raise ValueError(
                f"n_probes must lie in [1, n_pairs) for routing, got {self.n_probes} (n_pairs "
                f"{self.n_pairs})"
            )
        if self.n_clusters < 1:
            raise ValueError(f"n_clusters must be >= 1, got {self.n_clusters}")

    @property
    def seeds(self) -> list[int]:
        """The protocol seeds ``seed, seed + 1, ...``."""
        return list(range(self.seed, self.seed + self.n_seeds))

    def protocol_options(self) -> dict:
        """Keyword arguments of :func:`ecc_lib.protocol.seeds.run_seeds` (as ``ecc-lab ecc`` passes
        them).

        Returns
        -------
        dict
        """
        return {
            "n_clusters": self.n_clusters,
            "lam": self.lam,
            "temperature": self.temperature,
            "n_pairs": self.n_pairs,
            "n_probes": self.n_probes,
            "test_size": self.test_size,
            "evidence": "sampled",
        }

    def key(self) -> dict:
        """What a cached seed depends on (everything but the number of seeds).

        Returns
        -------
        dict
            The settings without ``n_seeds``, with the record version.
        """
        out = asdict(self)
        out.pop("n_seeds")
        out["version"] = BENCH_VERSION
        return out


def bench_methods(has_labels: bool) -> tuple[str, ...]:
    """The methods of ``ecc-lab ecc`` (:func:`~ecc_lib.protocol.methods.default_methods`), plus
    ``ecc_cv`` when it is registered in :data:`~ecc_lib.protocol.methods.METHOD_FACTORIES`.

    Parameters
    ----------
    has_labels : bool
        Whether the queries carry at least 2 categories.

    Returns
    -------
    tuple of str
    """
    from ecc_lib.protocol.methods import METHOD_FACTORIES, default_methods

    methods = tuple(default_methods(has_labels))
    if "ecc_cv" in METHOD_FACTORIES and "ecc_cv" not in methods:
        methods += ("ecc_cv",)
    return methods


def seed_interval(
    values: Sequence[float], bootstrap: Sequence[float] | None = None
) -> tuple[float, float]:
    """95% interval of a reading over seeds: mean +- t sd / sqrt(S), or the one seed's bootstrap
    interval.

    Parameters
    ----------
    values : sequence of float
        The reading on each seed.
    bootstrap : sequence of float, optional
        ``[low, high]`` of the first seed (used when there is one seed).

    Returns
    -------
    low, high : float
        NaN when nothing is known.
    """
    from scipy.stats import t

    v = np.asarray([x for x in values if x is not None], dtype=float)
    v = v[np.isfinite(v)]
    if len(v) >= 2:
        half = float(t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v)))
        return float(v.mean() - half), float(v.mean() + half)
    if len(v) == 1 and bootstrap is not None and None not in bootstrap:
        return float(bootstrap[0]), float(bootstrap[1])
    return float("nan"), float("nan")


def verdict(estimate: float, low: float, high: float) -> str:
    """``"better than"``, ``"worse than"`` or ``"not distinguishable from"``: the sign of
    ``estimate`` where the interval excludes 0.

    Parameters
    ----------
    estimate, low, high : float
        A difference "A minus B" and its interval (higher is better).

    Returns
    -------
    str
        One of :data:`VERDICTS`; an interval that is not finite is "not distinguishable from".
    """
    if not all(np.isfinite([estimate, low, high])):
        return VERDICTS[2]
    if low > 0:
        return VERDICTS[0]
    if high < 0:
        return VERDICTS[1]
    return VERDICTS[2]


# --------------------------------------------------------------------------------------------------
# one seed


def disjoint_differences(result, reference: str, n_boot: int = DEFAULT_N_BOOT) -> dict:
    """Gain on disjoint pairs of every method minus that of ``reference``, with a paired bootstrap
    interval over test queries (the resamples of :func:`~ecc_lib.protocol.scoring.score_methods`).

    Needs the probe strategy ``"first"`` (every method reads the same probe, so the pairs touching
    it are the same for all).

    Parameters
    ----------
    result : ECCEvaluation
    reference : str
        A method of ``result`` (``"human"``).
    n_boot : int

    Returns
    -------
    dict
        ``{method: {"estimate": pp, "ci95": [low, high]}}`` ({} when ``reference`` is absent).
    """
    frame = result.per_query
    if f"nll_{reference}" not in frame:
        return {}
    has = frame["n_scored"].to_numpy() > 0
    index = bootstrap_indices(int(has.sum()), n_boot, 0)
    glob = (frame["nll_global"] - frame["nll_global_touching"]).to_numpy()[has]

    def gain(name: str) -> tuple[float, np.ndarray]:
        # NaN when no scored pair is disjoint from the probe (3 models, say)
        m = (frame[f"nll_{name}"] - frame[f"nll_{name}_touching"]).to_numpy()[has]
        value, _, reps = ratio_gain(glob, m, index)
        return value, reps

    ref, ref_reps = gain(reference)
    out = {}
    for name in result.gain_disjoint:
        if name == reference:
            continue
        value, reps = gain(name)
        out[name] = paired_difference(value, reps, ref, ref_reps)
    return out


def _paired_routing(data, routing, fitted: dict, n_boot: int) -> dict:
    """Per method: routed score minus the best fixed model (``no_probe``) and minus the probe's
    winner (``probe``), paired over test queries, with bootstrap intervals and mean costs."""
    from ecc_lib.protocol.routing import routed_scores

    n_test = data.test.n_queries
    index = bootstrap_indices(n_test, n_boot, 0)
    cells = routing.to_dict()

    def per_query(choice: np.ndarray) -> np.ndarray:
        return routed_scores(data, choice)

    def paired(values: np.ndarray, reference: np.ndarray) -> dict:
        d = values - reference
        estimate, ci, _ = mean_with_replicates(d, index)
        return {"estimate": estimate, "ci95": ci, "n_queries": int(np.isfinite(d).sum())}

    out: dict = {}
    for setting, reference in (("no_probe", "global"), ("probe", "probe_winner")):
        if setting not in routing.choices:  # no probe on two-model data: no "probe" setting
            continue
        choices = routing.choices[setting]
        ref = per_query(choices[reference])
        block = {}
        for method in fitted:
            if setting == "no_probe" and method == reference:
                continue
            entry = paired(per_query(choices[method]), ref)
            entry["score"] = cells[setting][method]["score"]
            entry["cost"] = cells[setting][method]["cost"]
            entry["reference_score"] = cells[setting][reference]["score"]
            entry["reference_cost"] = cells[setting][reference]["cost"]
            block[method] = entry
        out[setting] = {"reference": reference, "methods": block}
    return out


def bench_seed(
    queries: pd.DataFrame,
    outcomes: pd.DataFrame,
    embeddings: np.ndarray,
    seed: int,
    *,
    methods: tuple[str, ...],
    settings: BenchSettings,
) -> dict:
    """The protocol and the routing experiment on one seed, as a JSON-ready record.

    Runs :func:`ecc_lib.protocol.seeds.run_seeds` with ``seeds=[seed]`` (each seed of ``run_seeds`` is
    independent, so this is the seed's share of ``ecc-lab ecc --seeds S``), then
    :func:`ecc_lib.protocol.routing.routing_experiment` as ``run_seeds(routing=True)`` does.

    Parameters
    ----------
    queries, outcomes, embeddings
        After the data policy; ``embeddings`` rows follow ``queries``.
    seed : int
    methods : tuple of str
    settings : BenchSettings

    Returns
    -------
    dict
        ``seed``, sizes, ``gain`` / ``gain_touching`` / ``gain_disjoint`` with their ``ci95*``,
        ``differences``, ``disjoint_minus_human``, ``probe_leak_share``, ``routing`` (the
        experiment's cells) and ``routing_paired``, ``seconds``.
    """
    from ecc_lib.ecc.estimator import ECC
    from ecc_lib.protocol.routing import routing_experiment
    from ecc_lib.protocol.seeds import run_seeds
    from ecc_lib.protocol.settings import Protocol

    start, cpu = time.perf_counter(), time.process_time()
    multi = run_seeds(
        queries,
        outcomes,
        embeddings,
        protocol=Protocol(
            seeds=(int(seed),),
            n_pairs=settings.n_pairs,
            n_probes=settings.n_probes,
            test_size=settings.test_size,
            n_boot=settings.n_boot,
        ),
        estimator=ECC(
            n_clusters=settings.n_clusters, lam=settings.lam, temperature=settings.temperature
        ),
        methods=methods,
        routing=False,
    )
    result, data = multi.first, multi.data
    routing = routing_experiment(
        data,
        result.fitted,
        outcomes=outcomes,
        n_probes=result.n_probes,  # 0 on two-model data, as run_seeds(routing=True) passes
        probe_evidence="mean",
        probe_strategy="first",
        n_boot=settings.n_boot,
        random_state=0,
    )
    record = {
        "seed": int(seed),
        "n_queries": result.n_queries,
        "n_input_queries": result.n_input_queries,
        "n_models": result.n_models,
        "n_train": result.n_train,
        "n_test": result.n_test,
        "n_scored": result.n_scored,
        "methods": list(result.gain),
        "gain": result.gain,
        "ci95": result.ci95,
        "gain_touching": result.gain_touching,
        "ci95_touching": result.ci95_touching,
        "gain_disjoint": result.gain_disjoint,
        "ci95_disjoint": result.ci95_disjoint,
        "differences": result.differences,
        "disjoint_minus_human": disjoint_differences(result, "human", settings.n_boot),
        "probe_leak_share": result.probe_leak_share,
        "best_params": result.params.get("best_params", {}),  # what ecc_cv chose on this seed
        "warnings": result.params.get("warnings", []),
        "routing": routing.to_dict(),
        "routing_paired": _paired_routing(data, routing, result.fitted, settings.n_boot),
        "train_ids": [str(q) for q in data.train.query_ids],
        "test_ids": [str(q) for q in data.test.query_ids],
    }
    record["seconds"] = time.perf_counter() - start
    record["cpu_seconds"] = time.process_time() - cpu
    return to_jsonable(record)


# --------------------------------------------------------------------------------------------------
# one dataset


def _write_json(path: Path, payload) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(to_jsonable(payload), indent=1, allow_nan=False), encoding="utf-8")
    os.replace(tmp, path)


def _read_json(path: Path):
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def dataset_label(name: str) -> str:
    """The label of a dataset: a bundled or public name as given, a folder by its name.

    Parameters
    ----------
    name : str

    Returns
    -------
    str
    """
    from ecc_lib.data.loaders import dataset_files

    if dataset_files(name) is not None:
        return Path(name).expanduser().resolve().name
    return str(name)


def data_fingerprint(name: str) -> str | None:
    """sha256 over the queries and outcomes files of a folder or bundled dataset.

    A cached bench record is reused only for the same files: a folder edited in place, or another
    folder of the same name, is recomputed.

    Parameters
    ----------
    name : str
        Bundled name, public name or folder (as :func:`ecc_lib.data.loaders.load_dataset` reads it).

    Returns
    -------
    str or None
        Hex digest; None for a public dataset (downloaded, not fingerprinted here).
    """
    from ecc_lib import paths
    from ecc_lib.data.loaders import BUNDLED_DATASETS, dataset_files

    files = dataset_files(name)
    if files is None and name in BUNDLED_DATASETS:
        files = dataset_files(paths.data_dir() / name)
    if files is None:
        return None
    digest = hashlib.sha256()
    for kind in ("queries", "outcomes"):
        digest.update(f"{kind}:{files[kind].name}:".encode())
        with open(files[kind], "rb") as handle:
            for chunk in iter(lambda: handle.read(1 << 20), b""):
                digest.update(chunk)
    return digest.hexdigest()


def prepare_dataset(name: str, *, show_progress: bool = True):
    """Load, embed and apply the data policy as ``ecc-lab ecc`` does.

    Parameters
    ----------
    name : str
        Bundled name, public name or folder.
    show_progress : bool
        Progress bar while embedding texts the cache lacks.

    Returns
    -------
    queries, outcomes, embeddings, embedding_check, policy_report
    """
    from ecc_lib.data.loaders import load_dataset
    from ecc_lib.data.policy import apply_data_policy
    from ecc_lib.embed.encode import embed_texts

    queries, outcomes = load_dataset(name)
    embeddings, check = embed_texts(
        queries["text"].astype(str).tolist(), show_progress=show_progress, return_check=True
    )
    kept, outcomes, report = apply_data_policy(queries, outcomes, dataset=dataset_label(name))
    embeddings = embeddings[queries["query_id"].isin(set(kept["query_id"])).to_numpy()]
    return kept, outcomes, embeddings, check, report


def flip_readings(outcomes: pd.DataFrame, n_boot: int = DEFAULT_N_BOOT) -> dict | None:
    """The three winner-flip readings with their chance level, on all observations (None without
    repeated observations).

    Parameters
    ----------
    outcomes : DataFrame
    n_boot : int

    Returns
    -------
    dict or None
        ``pairwise``, ``strict``, ``change``: ``{"estimate", "ci95", "chance"}``; ``change_draws``.
    """
    from ecc_lib.dars.label_instability import label_instability
    from ecc_lib.data.policy import has_repeated_observations

    if not has_repeated_observations(outcomes):
        return None
    both = label_instability(outcomes, n_boot=n_boot, random_state=0)["both"]
    if both is None:
        return None
    s = both.summary
    chance = s["flip_rate_chance"]
    out = {"change_draws": s["winner_change_rate_r"], "method": s["flip_rate_method"]}
    for reading, key in (
        ("pairwise", "winner_flip_rate"),
        ("strict", "winner_flip_rate_strict"),
        ("change", "winner_change_rate"),
    ):
        out[reading] = {"estimate": s[key], "ci95": s[f"{key}_ci95"], "chance": chance[reading]}
    return to_jsonable(out)


def _num(value) -> float:
    """A stored number (None, as JSON writes NaN, becomes NaN)."""
    return float("nan") if value is None else float(value)


def summarise_seeds(records: list[dict]) -> dict:
    """Mean +- sd over seeds of every reading, the intervals over seeds and the routing readings.

    Parameters
    ----------
    records : list of dict
        :func:`bench_seed` records, in seed order.

    Returns
    -------
    dict
        ``methods``; ``gain`` / ``gain_touching`` / ``gain_disjoint``: ``{method: [mean, sd]}``
        (:func:`ecc_lib.protocol.seeds.mean_sd`, as ``ecc-lab ecc``); ``versus``: ``{reference:
        {method: {"estimate", "ci95", "verdict"}}}`` on disjoint pairs; ``differences``: ``{"ecc -
        X": [mean, sd]}`` (all and disjoint pairs); ``routing``; ``best_params``: ``{method:
        [the settings it chose on each seed]}`` for the methods that choose (``ecc_cv``).
    """
    from ecc_lib.protocol.seeds import mean_sd

    first = records[0]
    methods = list(first["gain"])
    out: dict = {"methods": methods, "seeds": [r["seed"] for r in records]}
    chosen = sorted({m for r in records for m in r.get("best_params") or {}})
    out["best_params"] = {m: [(r.get("best_params") or {}).get(m) for r in records] for m in chosen}
    for reading in ("gain", "gain_touching", "gain_disjoint"):
        out[reading] = {m: list(mean_sd([_num(r[reading][m]) for r in records])) for m in methods}
    versus: dict = {"global": {}, "human": {}}
    for m in methods:
        values = [_num(r["gain_disjoint"][m]) for r in records]
        mean = mean_sd(values)[0]
        low, high = seed_interval(values, first["ci95_disjoint"][m])
        versus["global"][m] = {
            "estimate": mean,
            "ci95": [low, high],
            "verdict": verdict(mean, low, high) if np.isfinite(mean) else None,
        }
        if m in first.get("disjoint_minus_human", {}):
            values = [_num(r["disjoint_minus_human"][m]["estimate"]) for r in records]
            mean = mean_sd(values)[0]
            low, high = seed_interval(values, first["disjoint_minus_human"][m]["ci95"])
            versus["human"][m] = {
                "estimate": mean,
                "ci95": [low, high],
                "verdict": verdict(mean, low, high) if np.isfinite(mean) else None,
            }
    out["versus"] = versus
    differences: dict = {}
    if "ecc" in methods:
        for m in methods:
            if m == "ecc":
                continue
            differences[f"ecc - {m}"] = {
                "all": list(
                    mean_sd([_num(r["gain"]["ecc"]) - _num(r["gain"][m]) for r in records])
                ),
                "disjoint": list(
                    mean_sd(
                        [
                            _num(r["gain_disjoint"]["ecc"]) - _num(r["gain_disjoint"][m])
                            for r in records
                        ]
                    )
                ),
            }
    out["differences"] = differences
    out["probe_leak_share"] = list(mean_sd([_num(r["probe_leak_share"]) for r in records]))
    out["routing"] = _summarise_routing(records)
    return to_jsonable(out)


def _summarise_routing(records: list[dict]) -> dict:
    """Best router (by mean routed score over seeds) minus its reference, in both settings."""
    from ecc_lib.protocol.seeds import mean_sd

    out = {}
    for setting in ("no_probe", "probe"):
        if any(setting not in r["routing_paired"] for r in records):
            continue  # not run (no probe on two-model data)
        blocks = [r["routing_paired"][setting] for r in records]
        methods = list(blocks[0]["methods"])
        if not methods:
            continue
        mean_score = {m: mean_sd([b["methods"][m]["score"] for b in blocks])[0] for m in methods}
        best = max(methods, key=lambda m: (mean_score[m], -methods.index(m)))
        values = [b["methods"][best]["estimate"] for b in blocks]
        mean, sd = mean_sd(values)
        low, high = seed_interval(values, blocks[0]["methods"][best]["ci95"])
        costs = [b["methods"][best]["cost"] for b in blocks]
        ref_costs = [b["methods"][best]["reference_cost"] for b in blocks]
        out[setting] = {
            "reference": blocks[0]["reference"],
            "best_router": best,
            "score": list(mean_sd([b["methods"][best]["score"] for b in blocks])),
            "reference_score": list(
                mean_sd([b["methods"][best]["reference_score"] for b in blocks])
            ),
            "difference": [mean, sd],
            "ci95": [low, high],
            "first_seed_ci95": blocks[0]["methods"][best]["ci95"],
            "verdict": verdict(mean, low, high),
            "cost": mean_sd(costs)[0] if None not in costs else None,
            "reference_cost": mean_sd(ref_costs)[0] if None not in ref_costs else None,
        }
    return out


def bench_dataset(
    name: str,
    settings: BenchSettings,
    out_dir: str | os.PathLike,
    *,
    progress: Callable[[str], None] | None = None,
    show_progress: bool = True,
) -> dict:
    """Checks, protocol over seeds, flip readings and routing of one dataset (resumable).

    Parameters
    ----------
    name : str
        Bundled name, public name or folder.
    settings : BenchSettings
    out_dir : path
        The bench folder (``datasets/`` and ``work/`` are written under it).
    progress : callable, optional
        Called with one line per step (checks, each seed).
    show_progress : bool
        Progress bar while embedding.

    Returns
    -------
    dict
        ``dataset``, ``status`` (``"done"``, ``"failed_checks"`` or ``"not_applicable"``),
        ``checks``, ``failures`` / ``reason``, ``summary`` (:func:`summarise_seeds`), ``flips``,
        ``per_seed``, ``settings``, ``seconds``.
    """
    from ecc_lib.data import checks as checks_module
    from ecc_lib.data.policy import human_baseline_reason

    say = progress or (lambda line: None)
    label = dataset_label(name)
    out_dir = Path(out_dir)
    done_path = out_dir / "datasets" / f"{label}.json"
    done = _read_json(done_path) if done_path.is_file() else None
    fingerprint = data_fingerprint(name)
    if (
        done
        and done.get("settings") == settings.key()
        and done.get("seeds") == settings.seeds
        and done.get("data_sha256") == fingerprint
    ):
        say(f"[{label}] already done in {done_path}: not recomputed")
        return done
    start = time.perf_counter()
    queries, outcomes, embeddings, _, policy = prepare_dataset(name, show_progress=show_progress)
    timing: dict = {"prepare_seconds": time.perf_counter() - start}
    tick = time.perf_counter()
    results = checks_module.run_checks(outcomes, queries, embeddings=embeddings)
    timing["checks_seconds"] = time.perf_counter() - tick
    timing["check_seconds"] = {k: r.seconds for k, r in results.items()}
    entry: dict = {
        "dataset": label,
        "source": str(name),
        "data_sha256": fingerprint,
        "settings": settings.key(),
        "seeds": settings.seeds,
        "n_queries": int(len(queries)),
        "n_models": int(outcomes["model"].nunique()),
        "data_policy": policy.to_dict(),
        "timing": timing,
    }
    failed = checks_module.failures(results)
    say(f"[{label}] checks: {checks_module.worst_status(results)}")
    if failed:
        entry.update(
            status="failed_checks",
            failures=failed,
            checks=checks_module.checks_to_dict(results),
            seconds=time.perf_counter() - start,
        )
        _write_json(done_path, entry)
        return to_jsonable(entry)
    methods = bench_methods(human_baseline_reason(queries.get("category")) is None)
    entry["methods"] = list(methods)
    work = out_dir / "work" / label
    records = []
    for i, seed in enumerate(settings.seeds):
        path = work / f"seed_{seed}.json"
        cached = _read_json(path) if path.is_file() else None
        if (
            cached
            and cached.get("settings") == settings.key()
            and cached.get("methods_run") == list(methods)
            and cached.get("data_sha256") == fingerprint
        ):
            records.append(cached)
            say(f"[{label}] seed {seed} ({i + 1}/{settings.n_seeds}): cached")
            continue
        say(f"[{label}] seed {seed} ({i + 1}/{settings.n_seeds}): running")
        try:
            record = bench_seed(
                queries, outcomes, embeddings, seed, methods=methods, settings=settings
            )
        except ValueError as error:  # the protocol does not apply (too few decisive pairs ...)
            entry.update(
                status="not_applicable",
                reason=f"the ECC protocol does not apply: {error}",
                checks=checks_module.checks_to_dict(results),
                seconds=time.perf_counter() - start,
            )
            say(f"[{label}] {entry['reason']}")
            _write_json(done_path, entry)
            return to_jsonable(entry)
        record["settings"] = settings.key()
        record["methods_run"] = list(methods)
        record["data_sha256"] = fingerprint
        _write_json(path, record)
        records.append(record)
        say(f"[{label}] seed {seed} ({i + 1}/{settings.n_seeds}): {record['seconds']:.1f} s")
    # duplicates across the protocol's split (of the first seed)
    results["texts"] = checks_module.check_texts(
        queries, train_ids=records[0]["train_ids"], test_ids=records[0]["test_ids"]
    )
    tick = time.perf_counter()
    flips = flip_readings(outcomes, settings.n_boot)
    timing["flips_seconds"] = time.perf_counter() - tick
    entry.update(
        status="done",
        checks=checks_module.checks_to_dict(results),
        summary=summarise_seeds(records),
        flips=flips,
        per_seed=[
            {k: v for k, v in r.items() if k not in ("train_ids", "test_ids", "settings")}
            for r in records
        ],
        seconds=time.perf_counter() - start,
        seed_seconds=[r["seconds"] for r in records],
        seed_cpu_seconds=[r.get("cpu_seconds") for r in records],
    )
    _write_json(done_path, entry)
    return to_jsonable(entry)


# --------------------------------------------------------------------------------------------------
# several datasets


def _cell(mean_sd_pair) -> str:
    """``+m.mm +- s.ss`` as ``ecc-lab ecc --seeds`` prints it (``n/a`` when missing)."""
    mean, sd = mean_sd_pair if mean_sd_pair is not None else (None, None)
    if mean is None or mean != mean:
        return "n/a"
    return f"{mean:+.2f} +- {sd:.2f}" if sd is not None and sd == sd else f"{mean:+.2f}"


@dataclass
class BenchResult:
    """The benchmark over datasets.

    Attributes
    ----------
    datasets : dict
        ``{label: bench_dataset entry}`` in the order given.
    settings : BenchSettings
    seconds : float
    """

    datasets: dict
    settings: BenchSettings
    seconds: float = float("nan")
    methods: list = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.methods:
            names: list = []
            for entry in self.included.values():
                names += [m for m in entry["summary"]["methods"] if m not in names]
            self.methods = names

    @property
    def included(self) -> dict:
        """The datasets in the table (checks passed, protocol applied)."""
        return {k: v for k, v in self.datasets.items() if v.get("status") == "done"}

    @property
    def left_out(self) -> dict:
        """``{label: reason}`` of the datasets left out of the table."""
        out = {}
        for label, entry in self.datasets.items():
            if entry.get("status") == "failed_checks":
                out[label] = "failed checks: " + "; ".join(
                    f"{k}: {v}" for k, v in entry["failures"].items()
                )
            elif entry.get("status") == "not_applicable":
                out[label] = entry["reason"]
        return out

    def table(self, reading: str = "gain_disjoint") -> pd.DataFrame:
        """One row per included dataset and the mean row: ``mean +- sd`` over seeds per method
        (gain in % of the global BT's NLL on ``reading``), routing and flip columns.

        Parameters
        ----------
        reading : {"gain_disjoint", "gain", "gain_touching"}

        Returns
        -------
        DataFrame of str
        """
        numeric = self.numeric_table()
        records = numeric.to_dict("records")
        n = len(records) - 1  # datasets (the last row is the mean)
        rows = []
        for i, row in enumerate(records):
            cells = {"dataset": row["dataset"]}
            for m in self.methods:
                key = f"{m}_{reading}"
                cells[m] = _cell((row.get(f"{key}_mean"), row.get(f"{key}_sd")))
                if i == n and cells[m] != "n/a":
                    seen = int(numeric[f"{key}_mean"].iloc[:n].notna().sum())
                    if seen < n:
                        cells[m] += f" ({seen} of {n})"
            rows.append(cells)
        return pd.DataFrame(rows, columns=["dataset", *self.methods])

    def numeric_table(self) -> pd.DataFrame:
        """The numbers of :meth:`table` for every reading, one row per included dataset plus the
        ``mean`` row (the average over the datasets where the method ran).

        Returns
        -------
        DataFrame
        """
        rows = []
        for label, entry in self.included.items():
            s = entry["summary"]
            row: dict = {
                "dataset": label,
                "n_queries": entry["n_queries"],
                "n_models": entry["n_models"],
                "n_seeds": len(s["seeds"]),
            }
            for m in self.methods:
                for reading in ("gain", "gain_disjoint"):
                    mean, sd = s[reading].get(m, (np.nan, np.nan))
                    row[f"{m}_{reading}_mean"], row[f"{m}_{reading}_sd"] = mean, sd
            for setting, column in (
                ("no_probe", "router_minus_fixed"),
                ("probe", "router_minus_probe_winner"),
            ):
                r = s["routing"].get(setting)
                row[f"{column}_router"] = r["best_router"] if r else None
                row[f"{column}_mean"] = r["difference"][0] if r else np.nan
                row[f"{column}_sd"] = r["difference"][1] if r else np.nan
                row[f"{column}_low"] = r["ci95"][0] if r else np.nan
                row[f"{column}_high"] = r["ci95"][1] if r else np.nan
            flips = entry.get("flips") or {}
            for reading in ("pairwise", "strict", "change"):
                f = flips.get(reading) or {}
                row[f"flip_{reading}"] = f.get("estimate", np.nan)
                row[f"flip_{reading}_chance"] = f.get("chance", np.nan)
            rows.append(row)
        frame = pd.DataFrame(rows)
        if len(frame):
            mean = {"dataset": "mean", "n_queries": np.nan, "n_models": np.nan, "n_seeds": np.nan}
            for column in frame.columns:
                if column in mean or not pd.api.types.is_numeric_dtype(frame[column]):
                    continue
                if column.endswith(("_sd", "_low", "_high")):
                    mean[column] = np.nan  # an sd over seeds does not average into anything
                    continue
                mean[column] = frame[column].mean(skipna=True)
            frame = pd.concat([frame, pd.DataFrame([mean])], ignore_index=True)
            for column in ("n_queries", "n_models", "n_seeds"):
                frame[column] = frame[column].astype("Int64")  # counts; empty on the mean row
        return frame

    def sentences(self) -> list[str]:
        """One sentence per method: on how many datasets it is better than, worse than or not
        distinguishable from the global BT and from human labels on disjoint pairs.

        Returns
        -------
        list of str
        """
        out = []
        n = len(self.included)
        for m in self.methods:
            parts = []
            for reference, words in (("global", "the global BT"), ("human", "human labels")):
                if m == reference:
                    continue
                counts = dict.fromkeys(VERDICTS, 0)
                seen = undefined = 0
                for entry in self.included.values():
                    cell = entry["summary"]["versus"].get(reference, {}).get(m)
                    if cell is None:
                        continue
                    if cell["verdict"] is None:  # no scored pair is disjoint from the probe
                        undefined += 1
                        continue
                    counts[cell["verdict"]] += 1
                    seen += 1
                if seen == 0:
                    parts.append(
                        f"no dataset has {words} to compare with on disjoint pairs"
                        if not undefined
                        else f"no disjoint pair to compare with {words} on {undefined} dataset(s)"
                    )
                    continue
                parts.append(
                    f"better than {words} on {counts['better than']}, worse on "
                    f"{counts['worse than']}, not distinguishable on "
                    f"{counts['not distinguishable from']}"
                    + (f" ({undefined} without disjoint pairs)" if undefined else "")
                )
            out.append(
                f"{m} on disjoint pairs, over the {n} dataset(s) in the table: "
                + "; ".join(parts)
                + "."
            )
        return out

    def to_metrics(self) -> dict:
        """JSON-ready: ``settings``, ``seeds``, ``datasets`` (every entry), ``included``,
        ``left_out``, ``methods``, ``table`` (numeric), ``sentences``, ``seconds``.

        Returns
        -------
        dict
        """
        return to_jsonable(
            {
                "settings": asdict(self.settings),
                "seeds": self.settings.seeds,
                "methods": self.methods,
                "included": list(self.included),
                "left_out": self.left_out,
                "table": self.numeric_table().to_dict("records"),
                "sentences": self.sentences(),
                "datasets": self.datasets,
                "seconds": self.seconds,
            }
        )


def run_bench(
    datasets: Sequence[str],
    settings: BenchSettings,
    out_dir: str | os.PathLike,
    *,
    progress: Callable[[str], None] | None = None,
    show_progress: bool = True,
) -> BenchResult:
    """:func:`bench_dataset` on every dataset, gathered in a :class:`BenchResult`.

    Parameters
    ----------
    datasets : sequence of str
        Bundled names, public names or folders (distinct labels).
    settings : BenchSettings
    out_dir : path
    progress : callable, optional
        One line per step.
    show_progress : bool
        Progress bars while embedding.

    Returns
    -------
    BenchResult
    """
    if not datasets:
        raise ValueError("the bench needs at least one dataset")
    labels = [dataset_label(d) for d in datasets]
    if len(set(labels)) != len(labels):
        raise ValueError(f"dataset labels must be distinct, got {labels}")
    start = time.perf_counter()
    entries = {}
    for name, label in zip(datasets, labels, strict=True):
        entries[label] = bench_dataset(
            name, settings, out_dir, progress=progress, show_progress=show_progress
        )
    return BenchResult(entries, settings, seconds=time.perf_counter() - start)


__all__ = [
    "BENCH_VERSION",
    "BenchResult",
    "BenchSettings",
    "bench_dataset",
    "bench_methods",
    "bench_seed",
    "data_fingerprint",
    "dataset_label",
    "disjoint_differences",
    "flip_readings",
    "prepare_dataset",
    "run_bench",
    "seed_interval",
    "summarise_seeds",
    "verdict",
]
