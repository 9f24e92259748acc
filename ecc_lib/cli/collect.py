"""``ecc-lab collect`` and ``ecc-lab collect-export``: live collection from an OpenAI-compatible
endpoint into an append-only store, and its export to the long outcomes format."""

from __future__ import annotations

import argparse
import logging
import math
import sys

from ecc_lib.cli.subcommand import Subcommand, UsageError, add_flags

DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""``--max-response-bytes`` default (the client's; not imported so that ``--help`` stays fast)."""


def _collect_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab collect``: queries, models and endpoint; rewriter, rewrites, decodes
    and temperature; concurrency, timeout and retries; rewrite format, token and reply limits,
    prices and store."""
    parser.add_argument(
        "--queries",
        required=True,
        metavar="FILE",
        help="queries table (.csv, .tsv, .parquet, .jsonl): query_id, text, optional category, "
        "answer, choices, passage",
    )
    parser.add_argument(
        "--models",
        required=True,
        help="comma-separated candidate models, e.g. m1,m2; a variant NAME@KEY=VALUE[;KEY=VALUE] "
        "is a separate model with its own request settings, e.g. "
        "'smollm2@temperature=0.2,smollm2@temperature=1.0'",
    )
    parser.add_argument(
        "--base-url",
        required=True,
        metavar="URL",
        help="endpoint including the API prefix, e.g. http://localhost:8000/v1",
    )
    add_flags(
        parser,
        (
            "--api-key-env",
            None,
            None,
            "NAME",
            "environment variable holding the API key, sent to --base-url (default: "
            "OPENAI_API_KEY for https://api.openai.com exactly, no key for any other endpoint; no "
            "key is sent when the variable is unset)",
        ),
        ("--rewriter", None, None, "MODEL", "model writing the rewrites (default: first model)"),
        ("--rewrites", int, 2, "N", "rewrites per query (default 2)"),
        ("--decodes", int, 3, "M", "answers per query, variant and model (default 3)"),
        ("--temperature", float, 0.7, None, "answer temperature (default 0.7)"),
        ("--concurrency", int, 8, None, "calls in flight at once (default 8)"),
        ("--timeout", float, 60.0, "SECONDS", "deadline of one attempt of a call (default 60)"),
        (
            "--max-retries",
            int,
            5,
            "N",
            "retries of a call after 429, 5xx, timeouts and connection errors (default 5)",
        ),
        (
            "--max-consecutive-errors",
            int,
            10,
            "N",
            "stop after N connection errors or timeouts in a row (default 10); a refused "
            "connection before any answer stops at once",
        ),
    )
    parser.add_argument(
        "--rewrite-format",
        choices=("auto", "json_schema", "json_object", "none", "single"),
        default="auto",
        help="response_format of the rewriting calls (default auto: structured JSON where the "
        "server accepts it; numbered or one-per-line lists are read as a fallback); single: one "
        "paraphrase per call after worked examples, for small models",
    )
    add_flags(
        parser,
        (
            "--rewrite-calls",
            int,
            None,
            "N",
            "rewriting calls per query per run before its missing rewrites are given up "
            "(default 3, or 3 per missing rewrite with --rewrite-format single)",
        ),
        ("--max-tokens", int, 1024, "N", "max_tokens of the answers (default 1024)"),
        (
            "--max-response-bytes",
            int,
            DEFAULT_MAX_RESPONSE_BYTES,
            "N",
            "largest decoded reply read, in bytes (default 4 MiB); a longer one is recorded as "
            "a failed call and not stored",
        ),
        (
            "--prices",
            None,
            None,
            "FILE",
            "price table (.csv, .json, .yaml): model, input_per_1m, output_per_1m in USD",
        ),
    )
    parser.add_argument("--store", required=True, metavar="DIR", help="collection folder")


def _export_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab collect-export``."""
    parser.add_argument("--store", required=True, metavar="DIR", help="collection folder")
    parser.add_argument(
        "--out",
        required=True,
        metavar="FILE|DIR",
        help="output table (.csv, .parquet, .jsonl), or a folder (no such suffix) that gets "
        "queries.parquet and outcomes.parquet, ready for `ecc-lab run --dataset DIR`",
    )


def _collect(args: argparse.Namespace) -> int:
    """Handler of ``ecc-lab collect``; exit status 0 when every planned record is stored."""
    from ecc_lib.collect import collect

    logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise
    for name, value, low in (
        ("--timeout", args.timeout, 0.0),
        ("--max-retries", args.max_retries, -1),
        ("--max-consecutive-errors", args.max_consecutive_errors, 0),
        ("--max-tokens", args.max_tokens, 0),
        ("--max-response-bytes", args.max_response_bytes, 0),
    ):
        if not value > low:
            raise UsageError(f"{name} must be > {low:g}, got {value}")
    if not (math.isfinite(args.temperature) and args.temperature >= 0):
        # JSON has no inf or NaN: every request would be refused (issue 36)
        raise UsageError(f"--temperature must be a finite number >= 0, got {args.temperature}")
    summary = collect(
        args.queries,
        args.models,
        args.base_url,
        args.store,
        api_key_env=args.api_key_env or None,
        rewriter=args.rewriter,
        n_rewrites=args.rewrites,
        n_decodes=args.decodes,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        rewrite_format=args.rewrite_format,
        rewrite_calls=args.rewrite_calls,
        concurrency=args.concurrency,
        prices=args.prices,
        timeout=args.timeout,
        max_retries=args.max_retries,
        max_consecutive_errors=args.max_consecutive_errors,
        max_response_bytes=args.max_response_bytes,
        show_progress=True,
    )
    spend = f"${summary.spend_usd:.4f}"
    if summary.n_unpriced:
        spend += f" (+{summary.n_unpriced} call(s) of unknown cost)"
    print(
        f"{args.store}: {summary.n_done}/{summary.n_planned} records "
        f"({summary.n_collected} new, {summary.n_skipped} already there), "
        f"{summary.n_failed} failed call(s), {summary.n_missing_variants} missing rewrite(s), "
        f"{summary.n_scoring_failures} scoring failure(s), spend {spend}"
    )
    if summary.n_empty_replies:
        print(
            f"{summary.n_empty_replies} empty repl(ies) recorded as failures, not scored "
            "(see failures.jsonl: finish_reason 'length' means max_tokens was too small)"
        )
    if summary.n_rewrite_calls or summary.n_rewrite_unusable:
        print(summary.rewrite_report())
    if not summary.complete:
        print(
            "ecc-lab collect: incomplete; run the same command again to retry what failed",
            file=sys.stderr,
        )
        return 1
    return 0


def _export(args: argparse.Namespace) -> int:
    """Handler of ``ecc-lab collect-export``."""
    from pathlib import Path

    from ecc_lib.collect.export import EXPORT_SUFFIXES, export_dataset, export_outcomes

    out = Path(args.out)
    if out.is_dir() or out.suffix.lower() not in EXPORT_SUFFIXES:
        queries, outcomes = export_dataset(args.store, out)
        print(
            f"{out}: queries.parquet ({len(queries)} queries) and outcomes.parquet "
            f"({len(outcomes)} row(s)) from {args.store}; use it with --dataset {out}"
        )
    else:
        outcomes = export_outcomes(args.store, args.out)
        print(f"{args.out}: {len(outcomes)} outcome row(s) from {args.store}")
    return 0


SUBCOMMANDS = (
    Subcommand(
        "collect",
        help="collect rewrites x decodes from an OpenAI-compatible endpoint",
        description=(
            "Ask each model to answer each query's original text and N rewrites M times, score and "
            "cost every answer, and append it to the store. Rerunning the same command skips what "
            "is done and retries what failed. The API key is read from an environment variable "
            "and never stored."
        ),
        add_arguments=_collect_arguments,
        handler=_collect,
    ),
    Subcommand(
        "collect-export",
        help="export a collection store to the long outcomes format",
        description=(
            "Write one row per (query_id, model, variant_id, decode_id) with score, cost, tokens "
            "and latency. Records whose scoring failed are left out and counted."
        ),
        add_arguments=_export_arguments,
        handler=_export,
    ),
)


__all__: list[str] = []
