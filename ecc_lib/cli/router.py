"""``ecc-lab train-router``, ``ecc-lab route`` and ``ecc-lab serve-router``: a router you can take away.

Contract::

    ecc-lab train-router --dataset FOLDER --family NAME [--targets dars|single] --out DIR
                         [--embedder static] [--lambda 0.05] [--beta 0.2] [--seed 0]
                         [--param KEY=VALUE ...] [--budget X | --max-share MODEL=0.3 ...]
    ecc-lab route --router DIR --queries FILE --out FILE [--budget X | --max-share MODEL=0.3 ...]
    ecc-lab serve-router --router DIR --upstream NAME=URL ... [--dry-run] [--host 127.0.0.1]
                         [--port 8080] [--api-key-env NAME=ENV ...] [--timeout 60]
                         [--max-retries 2] [--log-dir DIR]

``train-router`` fits one family (:func:`ecc_lib.routers.deploy.train_deployed`), writes the router
to DIR (``router.npz``, ``router.json``, ``calibration.npz``: arrays and JSON, no pickle) and a
held-out report (``report.json``: quality, cost, utility and share per model against the best
fixed model and the oracle, :func:`ecc_lib.routing_evaluation.deployed.deployed_report`).
``route`` writes the chosen model per query with its predicted score, cost and utility
(CSV, Parquet or JSONL by the extension of ``--out``) and prints what the operating point means on
the calibration queries: expected quality and cost with 95 % bootstrap intervals (also written to
``OUT.operating_point.json``). ``--budget`` is a mean cost per query in the dataset's cost units;
``--max-share`` caps a model's share of queries. ``serve-router`` runs
:class:`ecc_lib.routers.serve.RouterServer` until Ctrl-C.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from ecc_lib import defaults as D
from ecc_lib.cli.subcommand import Subcommand, UsageError, add_flags, write_json


def _operating_point_flags(parser: argparse.ArgumentParser) -> None:
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--budget",
        type=float,
        metavar="X",
        help="mean cost per query (dataset's cost units): sets the cost weight lambda on the "
        "calibration queries",
    )
    group.add_argument(
        "--max-share",
        action="append",
        metavar="MODEL=SHARE",
        help="largest share of queries routed to MODEL (repeatable): sets a per-model offset on "
        "the calibration queries",
    )


def _pairs(specs: list[str] | None, what: str, cast=str) -> dict:
    out = {}
    for spec in specs or []:
        key, sep, value = spec.partition("=")
        if not sep or not key.strip() or not value.strip():
            raise UsageError(f"{what} {spec!r} is not KEY=VALUE")
        try:
            out[key.strip()] = cast(value.strip())
        except ValueError:
            raise UsageError(f"{what} {spec!r}: {value!r} is not a number") from None
    return out


def _param_value(text: str):
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _calibrate(deployed, args: argparse.Namespace) -> None:
    if args.budget is not None:
        deployed.calibrate(budget=args.budget)
    elif args.max_share:
        deployed.calibrate(max_share=_pairs(args.max_share, "--max-share", float))


def format_operating_point(deployed) -> str:
    """What the operating point means, as text.

    Parameters
    ----------
    deployed : DeployedRouter

    Returns
    -------
    str
    """
    point = deployed.operating_point or deployed.describe()
    q, c = point["expected_quality"], point["expected_cost"]
    said = point.get("meaning") or f"cost weight lambda = {deployed.cost_weight:.6g} (as trained)"
    lines = [f"operating point: {said}"]
    lines.append(
        f"on {point['n_calibration']} calibration queries: expected quality {q[0]:.3f} "
        f"[{q[1]:.3f}, {q[2]:.3f}], expected cost per query {c[0]:.4g} [{c[1]:.4g}, {c[2]:.4g}] "
        "(95% bootstrap intervals)"
    )
    shares = ", ".join(f"{m} {s:.3f}" for m, s in point["share"].items() if s > 0)
    lines.append(f"share per model: {shares}")
    return "\n".join(lines)


# -- train-router --------------------------------------------------------------------------------


def _train_arguments(parser: argparse.ArgumentParser) -> None:
    from ecc_lib.routers.deploy import TARGET_CHOICES

    parser.add_argument(
        "--dataset",
        required=True,
        metavar="FOLDER",
        help="dataset folder (queries.* and outcomes.*) or a bundled dataset name",
    )
    parser.add_argument(
        "--family",
        required=True,
        metavar="NAME",
        help="router family (kNN, MLP, EmbedLLM-MF, MIRT, Avengers-Pro, ECC, Softmax-ranking, "
        "GraphRouter)",
    )
    parser.add_argument(
        "--targets",
        choices=TARGET_CHOICES,
        default="dars",
        help="DARS distributions or one single-shot draw per pair (default dars)",
    )
    parser.add_argument("--out", required=True, metavar="DIR", help="router folder to write")
    parser.add_argument(
        "--embedder",
        default="minilm",
        metavar="NAME",
        help="embedder of the query texts: 'minilm' (default) or 'static'",
    )
    parser.add_argument(
        "--lambda",
        dest="cost_weight",
        type=float,
        default=D.COST_WEIGHT,
        help=f"cost weight lambda of the training utility (default {D.COST_WEIGHT:g})",
    )
    parser.add_argument(
        "--beta", type=float, default=D.BETA, help=f"risk weight beta (default {D.BETA:g})"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the router (default 0)")
    parser.add_argument(
        "--param",
        action="append",
        metavar="KEY=VALUE",
        help="a constructor argument of the family (JSON value), repeatable",
    )
    _operating_point_flags(parser)


def _train(args: argparse.Namespace) -> int:
    from ecc_lib.data.protocol_policy import check_utility_weights
    from ecc_lib.data.sources import load_dataset
    from ecc_lib.routers import router_families
    from ecc_lib.routers.deploy import train_deployed
    from ecc_lib.routing_evaluation.deployed import deployed_report, format_report
    from ecc_lib.serialization import to_jsonable

    check_utility_weights(args.cost_weight, args.beta)
    if args.family not in router_families():
        raise UsageError(f"unknown family {args.family!r}; choose from {sorted(router_families())}")
    params = _pairs(args.param, "--param", _param_value)
    queries, outcomes = load_dataset(args.dataset)
    deployed, split = train_deployed(
        queries,
        outcomes,
        family=args.family,
        targets=args.targets,
        embedder=args.embedder,
        router_kwargs=params,
        cost_weight=args.cost_weight,
        beta=args.beta,
        random_state=args.seed,
    )
    _calibrate(deployed, args)
    report = deployed_report(deployed, split)
    report["family"] = args.family
    report["targets"] = args.targets
    report["dataset"] = str(args.dataset)
    report["n_train"] = split.train.n_queries
    report["n_calibration"] = split.calibration.n_queries
    deployed.report = report
    folder = deployed.save(args.out)
    write_json(str(Path(folder) / "report.json"), to_jsonable(report))
    print(
        f"{args.family} on {args.targets} targets: {split.train.n_queries} training, "
        f"{split.calibration.n_queries} calibration, {split.test.n_queries} test queries; "
        f"embedder {deployed.embedder}"
    )
    print(format_report(report))
    print(format_operating_point(deployed))
    print(f"wrote {folder}")
    return 0


# -- route ---------------------------------------------------------------------------------------


def _route_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--router", required=True, metavar="DIR", help="router folder")
    parser.add_argument(
        "--queries",
        required=True,
        metavar="FILE",
        help="queries table (query_id, text) as CSV, Parquet or JSONL",
    )
    parser.add_argument(
        "--out", required=True, metavar="FILE", help="output table (.csv, .parquet or .jsonl)"
    )
    _operating_point_flags(parser)


def _route(args: argparse.Namespace) -> int:
    from ecc_lib.data.tables import read_queries, write_table
    from ecc_lib.routers.deploy import load_deployed
    from ecc_lib.serialization import to_jsonable

    deployed = load_deployed(args.router)
    queries = read_queries(args.queries)
    _calibrate(deployed, args)
    table = deployed.route(queries["text"].astype(str).tolist())
    table.insert(0, "query_id", queries["query_id"].to_numpy())
    write_table(table, args.out)
    point = deployed.operating_point or deployed.describe()
    write_json(f"{args.out}.operating_point.json", to_jsonable(point))
    print(format_operating_point(deployed))
    counts = table["model"].value_counts()
    print(
        f"routed {len(table)} queries: "
        + ", ".join(f"{m} {n}" for m, n in counts.items())
        + f"; mean predicted cost {table['predicted_cost'].mean():.4g}"
    )
    print(f"wrote {args.out}")
    return 0


# -- serve-router --------------------------------------------------------------------------------


def _serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--router", required=True, metavar="DIR", help="router folder")
    parser.add_argument(
        "--upstream",
        action="append",
        default=[],
        metavar="NAME=URL",
        help="base URL (with /v1) of the endpoint serving model NAME, repeatable",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="answer with the choice only; forward nothing"
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8080, help="port (default 8080)")
    parser.add_argument(
        "--api-key-env",
        action="append",
        metavar="NAME=ENV",
        help="send the key in environment variable ENV to model NAME's upstream "
        "(default: OPENAI_API_KEY to https://api.openai.com only)",
    )
    add_flags(
        parser,
        (
            "--timeout",
            float,
            60.0,
            None,
            "deadline of one upstream attempt in seconds (default 60)",
        ),
        ("--max-retries", int, 2, None, "retries of a failed upstream call (default 2)"),
        ("--log-dir", None, None, "DIR", "append every decision to DIR/decisions.jsonl"),
    )
    _operating_point_flags(parser)


def _serve(args: argparse.Namespace) -> int:
    from ecc_lib.routers.deploy import load_deployed
    from ecc_lib.routers.serve import RouterServer, parse_upstreams

    deployed = load_deployed(args.router)
    _calibrate(deployed, args)
    server = RouterServer(
        deployed,
        parse_upstreams(args.upstream),
        api_key_envs=_pairs(args.api_key_env, "--api-key-env"),
        dry_run=args.dry_run,
        host=args.host,
        port=args.port,
        timeout=args.timeout,
        max_retries=args.max_retries,
        log_dir=args.log_dir,
    )
    server.start()
    print(format_operating_point(deployed) if deployed.calibration is not None else "")
    print(f"serving {server.base_url}/chat/completions (Ctrl-C to stop)", flush=True)
    try:
        import time

        while True:
            time.sleep(3600)
    finally:
        server.stop()


SUBCOMMANDS = (
    Subcommand(
        "train-router",
        help="train a router on a dataset and save it with a held-out report",
        description="Fit one router family on a dataset folder (DARS or single-shot targets), "
        "keep calibration and test queries aside, write the router (arrays and JSON, no pickle) "
        "and a held-out report against the best fixed model and the oracle.",
        add_arguments=_train_arguments,
        handler=_train,
    ),
    Subcommand(
        "route",
        help="route a queries file with a saved router",
        description="Choose a model per query with a saved router, at an operating point set by "
        "--budget (mean cost per query) or --max-share MODEL=SHARE on the router's calibration "
        "queries; writes the choice, predicted score, cost and utility per query.",
        add_arguments=_route_arguments,
        handler=_route,
    ),
    Subcommand(
        "serve-router",
        help="serve a saved router as an OpenAI-compatible chat endpoint",
        description="Route each chat request's last user message and forward it to the chosen "
        "model's upstream (the collect client's key policy, size caps and timeouts apply).",
        add_arguments=_serve_arguments,
        handler=_serve,
        interrupted="stopped",
    ),
)


__all__: list[str] = []
