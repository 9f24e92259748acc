"""The ``ecc-lab`` command line (also ``python -m ecc_lib``).

Each subcommand lives in its own module of this package with a ``register(subparsers)`` function
that adds its parser and sets ``handler``; heavy imports stay inside the handlers so that
``ecc-lab --help`` is fast.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from ecc_lib.schema import DataValidationError

SUBCOMMAND_MODULES = ("datasets", "ecc", "dars", "collect", "run", "init")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser with every available subcommand.

    Returns
    -------
    argparse.ArgumentParser
    """
    parser = argparse.ArgumentParser(
        prog="ecc-lab",
        description="Capability-aware LLM evaluation and routing (ECC clustering, DARS labels).",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress details")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMAND_MODULES:
        try:
            module = importlib.import_module(f"ecc_lib.cli.{name}")
        except ModuleNotFoundError as error:
            if error.name != f"ecc_lib.cli.{name}":
                raise
            continue
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``ecc-lab``.

    Parameters
    ----------
    argv : list of str, optional
        Arguments after the program name (default: ``sys.argv[1:]``).

    Returns
    -------
    int
        The process exit status (0 on success; errors are printed as one-line messages).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
    )
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except (DataValidationError, FileNotFoundError, FileExistsError, ValueError) as error:
        print(f"ecc-lab {args.command}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"ecc-lab {args.command}: interrupted", file=sys.stderr)
        return 130
