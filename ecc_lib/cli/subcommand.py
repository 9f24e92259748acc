"""What every ``ecc-lab`` subcommand shares: its declaration (:class:`Subcommand`: name, help,
arguments, handler) and the one place where a handler runs and the errors a user can act on become
one line on stderr and an exit status (:func:`run_handler`).

A handler takes the parsed arguments and returns the exit status (``None`` counts as 0). It raises
what goes wrong; :func:`run_handler` prints ``ecc-lab COMMAND: error: MESSAGE`` for the errors in
:data:`USER_ERRORS` and lets any other exception (a bug) show its traceback.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from dataclasses import dataclass

from ecc_lib import defaults as D

Handler = Callable[[argparse.Namespace], "int | None"]

USER_ERRORS: tuple[tuple[str, str], ...] = (
    ("ecc_lib._optional", "MissingExtraError"),
    ("ecc_lib.collect.errors", "CollectError"),
    ("ecc_lib.runs.execute", "NotebookExecutionError"),
    ("ecc_lib.runs.folder", "RunFolderBusyError"),
    ("ecc_lib.data.schema", "DataValidationError"),
    ("ecc_lib.cli.init", "InitError"),
    ("ecc_lib.safe_output", "OutputError"),
    ("ecc_lib.distributed.scheduler", "SchedulerError"),
    ("builtins", "FileNotFoundError"),
    ("builtins", "FileExistsError"),
    ("builtins", "ValueError"),
)
"""Errors a user can act on, as ``(module, class name)``. A class counts once its module has been
imported (an error cannot come from a module that was not), so ``ecc-lab --help`` imports none of
them. The exit status is the error's ``exit_status`` attribute when it has one, else 1."""

INTERRUPTED = "interrupted"
"""What stderr says after Ctrl-C (exit status 130) unless the subcommand says more."""


class UsageError(ValueError):
    """A flag value the parser accepted but the subcommand cannot use: exit status 2, as argparse
    gives for a malformed command line."""

    exit_status = 2


@dataclass(frozen=True)
class Subcommand:
    """One ``ecc-lab`` subcommand.

    Parameters
    ----------
    name : str
        The subcommand (``ecc-lab NAME``).
    help : str
        Its line in ``ecc-lab --help``.
    description : str
        The text of ``ecc-lab NAME --help``.
    add_arguments : callable
        ``add_arguments(parser)`` adds the subcommand's flags.
    handler : callable
        ``handler(args) -> int``: runs the subcommand on the parsed arguments and returns the exit
        status; errors are raised (see :func:`run_handler`).
    interrupted : str, default "interrupted"
        What stderr says after Ctrl-C.
    """

    name: str
    help: str
    description: str
    add_arguments: Callable[[argparse.ArgumentParser], None]
    handler: Handler
    interrupted: str = INTERRUPTED

    def add_to(self, subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
        """Add the subcommand's parser, with its handler as the ``handler`` default.

        Parameters
        ----------
        subparsers : argparse._SubParsersAction
            The ``ecc-lab`` subcommand registry.

        Returns
        -------
        argparse.ArgumentParser
            The subcommand's parser.
        """
        parser = subparsers.add_parser(self.name, help=self.help, description=self.description)
        self.add_arguments(parser)
        parser.set_defaults(handler=self.handler, interrupted=self.interrupted)
        return parser


def is_user_error(error: BaseException) -> bool:
    """Whether ``error`` is one of :data:`USER_ERRORS` (a message is enough, no traceback).

    Parameters
    ----------
    error : BaseException
        A raised error.

    Returns
    -------
    bool
    """
    for module, name in USER_ERRORS:
        cls = getattr(sys.modules.get(module), name, None)
        if cls is not None and isinstance(error, cls):
            return True
    return False


def run_handler(args: argparse.Namespace) -> int:
    """Run the subcommand's handler; a user error becomes one line on stderr and its exit status.

    Exit statuses: the handler's own (0 when it returns None), the error's ``exit_status`` (1 when it
    has none; 2 for :class:`UsageError`; ``128 + signal`` for a run stopped by a signal, printed
    without ``error:``), 130 after Ctrl-C.

    Parameters
    ----------
    args : argparse.Namespace
        The parsed command line, with ``command`` and ``handler`` (and ``interrupted``) set.

    Returns
    -------
    int
        The exit status.
    """
    prefix = f"ecc-lab {args.command}:"
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        print(f"{prefix} {getattr(args, 'interrupted', INTERRUPTED)}", file=sys.stderr)
        return 130
    except Exception as error:
        if not is_user_error(error):
            raise
        status = int(getattr(error, "exit_status", 1))
        label = "" if status > 128 else "error: "  # above 128: stopped by a signal, not an error
        print(f"{prefix} {label}{error}", file=sys.stderr)
        return status


def write_json(path: str, payload: dict, *, sort_keys: bool = False) -> None:
    """Write the ``--json`` output of a subcommand: UTF-8, indented by two spaces.

    Parameters
    ----------
    path : str
        The file named by ``--json``.
    payload : dict
        JSON-ready content (see :func:`ecc_lib.serialization.to_jsonable`).
    sort_keys : bool, default False
        Sort the keys of every mapping.
    """
    from ecc_lib.safe_output import write_text

    write_text(path, json.dumps(payload, indent=2, sort_keys=sort_keys))  # atomic, no link


def add_protocol_flags(parser: argparse.ArgumentParser, *names: str) -> None:
    """The protocol's flags that ``ecc-lab ecc`` and ``ecc-lab bench`` share, their defaults and
    help read from :mod:`ecc_lib.defaults`.

    Parameters
    ----------
    parser : ArgumentParser
    *names : str
        Among ``"k"``, ``"lam"``, ``"temperature"``, ``"pairs"``, ``"probes"``, ``"test-size"``,
        ``"seed"``, in the order they are added.
    """
    specs = {
        "k": (int, D.N_CLUSTERS, f"number of clusters (default {D.N_CLUSTERS})"),
        "lam": (float, D.LAM, f"cosine weight (default {D.LAM:g})"),
        "temperature": (float, D.TEMPERATURE, f"softmax temperature (default {D.TEMPERATURE:g})"),
        "pairs": (int, D.N_PAIRS, f"non-tie pairs per query (default {D.N_PAIRS})"),
        "probes": (int, D.N_PROBES, f"probe comparisons per test query (default {D.N_PROBES})"),
        "test-size": (float, D.TEST_SIZE, f"share of test queries (default {D.TEST_SIZE:g})"),
        "seed": (int, D.SEED, f"seed of pairs, split and EM (default {D.SEED})"),
    }
    for name in names:
        kind, default, words = specs[name]
        parser.add_argument(f"--{name}", type=kind, default=default, help=words)


def add_input_flags(parser: argparse.ArgumentParser, queries_help: str, **queries) -> None:
    """``--outcomes``, ``--queries`` and ``--embeddings``, the inputs of ``ecc-lab ecc`` and
    ``ecc-lab check``.

    Parameters
    ----------
    parser : ArgumentParser
    queries_help : str
        The help of ``--queries``.
    **queries
        More keyword arguments of ``--queries`` (e.g. ``required=True``).
    """
    parser.add_argument(
        "--outcomes", required=True, metavar="FILE", help="long outcomes (query_id,model,score)"
    )
    parser.add_argument("--queries", metavar="FILE", help=queries_help, **queries)
    parser.add_argument(
        "--embeddings",
        metavar="FILE.npy",
        help="one embedding row per query, in the order of the queries file (default: embed the "
        "texts with the default model, through the cache)",
    )


def add_flags(parser: argparse.ArgumentParser, *rows: tuple, **shared) -> None:
    """Add valued flags, one ``(flag, type, default, metavar, help)`` row each, in order.

    Parameters
    ----------
    parser : ArgumentParser
    *rows : tuple
        ``(flag, type, default, metavar, help)``; a ``None`` type, default or metavar is
        argparse's own default.
    **shared
        Keyword arguments of every row's flag (e.g. ``required=True``).
    """
    for flag, kind, default, metavar, words in rows:
        parser.add_argument(flag, type=kind, default=default, metavar=metavar, help=words, **shared)


def add_scheduler_option(parser: argparse.ArgumentParser, what: str) -> None:
    """Add ``--scheduler local|ADDRESS``, the one Dask switch of the subcommands.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The subcommand's parser.
    what : str
        What runs on Dask, completing "... on Dask ('local' starts a local cluster, ...)".
    """
    parser.add_argument(
        "--scheduler",
        metavar="local|ADDRESS",
        help=f"{what} on Dask ('local' starts a local cluster, anything else is a scheduler "
        "address); without it everything runs in memory",
    )


__all__: list[str] = []
