"""``ecc-lab check``: the checks of :mod:`ecc_lib.data.checks` on an outcomes table (and its queries).

Prints one line per check (``OK``, ``WARN`` or ``FAIL`` and a sentence) and exits with status 1
when a check fails, so that scripts can stop before computing numbers on a broken table.
"""

from __future__ import annotations

import argparse

from ecc_lib import defaults as D
from ecc_lib.cli.subcommand import Subcommand, add_input_flags, write_json


def _arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab check``."""
    add_input_flags(
        parser, "queries (query_id,text[,category]): adds the text, length and embedding checks"
    )
    parser.add_argument(
        "--seed",
        type=int,
        default=D.SEED,
        help="protocol seed whose train/test split the duplicate-text check reads "
        f"(default {D.SEED})",
    )
    parser.add_argument(
        "--tie-tolerance",
        type=float,
        default=None,
        metavar="TOL",
        help="mean scores of a query closer than this tie, as in the protocol (default 1e-4, "
        "ecc-lab ecc --tie-tolerance); read by the all_ties and score_type checks",
    )
    parser.add_argument("--json", metavar="OUT.json", help="write the results as JSON")


def protocol_split(queries, outcomes, seed: int):
    """Train and test query ids of the ECC protocol's split at ``seed``.

    The split does not depend on the embeddings, so none are needed.

    Parameters
    ----------
    queries, outcomes : DataFrame
        After the data policy.
    seed : int
        Protocol seed.

    Returns
    -------
    train_ids, test_ids : list of str or None
        Both None when the protocol does not apply (too few decisive pairs).
    """
    import numpy as np

    from ecc_lib.protocol.data import prepare_protocol

    try:
        data = prepare_protocol(
            queries, outcomes, np.zeros((len(queries), 2), dtype=np.float32), random_state=seed
        )
    except ValueError:
        return None, None
    return list(data.train.query_ids), list(data.test.query_ids)


def _run(args: argparse.Namespace) -> int:
    """Handler of ``ecc-lab check``."""
    from ecc_lib.data import checks
    from ecc_lib.data.policy import apply_data_policy
    from ecc_lib.data.tables import read_outcomes, read_queries

    queries = read_queries(args.queries) if args.queries else None
    outcomes = read_outcomes(args.outcomes, queries=queries)
    if args.embeddings and queries is None:
        raise ValueError("--embeddings needs --queries (its rows follow the queries file)")
    embeddings = None
    if queries is not None:
        if args.embeddings:
            import numpy as np

            embeddings = np.load(args.embeddings, allow_pickle=False)
            if embeddings.ndim != 2 or embeddings.shape[0] != len(queries):
                raise ValueError(
                    f"{args.embeddings}: embeddings have shape {embeddings.shape}, but the queries "
                    f"file {args.queries} has {len(queries)} rows; pass one row per query"
                )
        else:
            from ecc_lib.embed.encode import embed_texts

            embeddings = embed_texts(queries["text"].astype(str).tolist(), show_progress=True)
    kept, kept_outcomes, _ = apply_data_policy(queries, outcomes, dataset=str(args.outcomes))
    train_ids = test_ids = None
    if queries is not None:
        train_ids, test_ids = protocol_split(kept, kept_outcomes, args.seed)
    tolerance = {} if args.tie_tolerance is None else {"tie_tolerance": args.tie_tolerance}
    results = checks.run_checks(
        outcomes,
        queries,
        embeddings=embeddings,
        train_ids=train_ids,
        test_ids=test_ids,
        **tolerance,
    )
    print(checks.format_checks(results, label=str(args.outcomes)))
    if args.json:
        payload = {
            "outcomes": str(args.outcomes),
            "queries": str(args.queries) if args.queries else None,
            "status": checks.worst_status(results),
            "checks": checks.checks_to_dict(results),
            "seconds": {name: r.seconds for name, r in results.items()},
        }
        write_json(args.json, payload)
    return 1 if checks.failures(results) else 0


SUBCOMMANDS = (
    Subcommand(
        "check",
        help="check that an outcome table is sane before computing numbers on it",
        description="Check an outcomes table (and its queries): item alignment between models "
        "(blocks that correlate within but not across mean permuted item columns), near-identical, "
        "constant and never- or always-winning models, the all-tie share, the score type, empty "
        "and duplicate texts, text length and embedding collapse. Exit status 1 when a check "
        "fails.",
        add_arguments=_arguments,
        handler=_run,
    ),
)


__all__: list[str] = []
