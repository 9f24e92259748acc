"""The ``ecc-lab`` command line (also ``python -m ecc_lib``).

Each subcommand lives in its own module of this package, which lists it in ``SUBCOMMANDS`` (see
:class:`ecc_lib.cli.subcommand.Subcommand`); heavy imports stay inside the handlers so that
``ecc-lab --help`` is fast. Errors become one-line messages in one place,
:func:`ecc_lib.cli.subcommand.run_handler`.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import logging
import sys

from ecc_lib.cli.subcommand import run_handler

SUBCOMMAND_MODULES = (
    "datasets",
    "ecc",
    "map",
    "dars",
    "collect",
    "run",
    "init",
    "check",
    "bench",
    "router",
)


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
        for subcommand in module.SUBCOMMANDS:
            subcommand.add_to(subparsers)
    return parser


class OwnLineHandler(logging.StreamHandler):
    """Log records on stderr, each on a line of its own.

    What the command printed on stdout is flushed first: stdout is block-buffered when it is a
    pipe or a file, so without the flush a warning written to stderr lands before, or inside, a
    result line when both streams go to one place (``2>&1``, a CI log).
    """

    def emit(self, record: logging.LogRecord) -> None:
        """Flush stdout, then write the record (on stderr) and flush it.

        Parameters
        ----------
        record : logging.LogRecord
        """
        with contextlib.suppress(OSError, ValueError):  # a closed or broken stdout
            sys.stdout.flush()
        super().emit(record)


def configure_output(*, verbose: bool = False) -> None:
    """Line-buffered stdout and one log handler on stderr (:class:`OwnLineHandler`).

    Parameters
    ----------
    verbose : bool, default False
        Log INFO records too (``-v``); otherwise WARNING and above.
    """
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(OSError, ValueError):
            reconfigure(line_buffering=True)
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        format="%(levelname)s %(name)s: %(message)s",
        handlers=[OwnLineHandler(sys.stderr)],
    )  # a no-op where the root logger already has handlers (an application's, pytest's)


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
    configure_output(verbose=args.verbose)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    return run_handler(args)


__all__ = [
    "main",
]
