"""``ecc-lab init DIR``: a starter folder with the notebooks, to open in JupyterLab and edit."""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from ecc_lib.cli.subcommand import Subcommand

EXAMPLE_CONFIG = "params.example.yaml"


def starter_files(notebooks_dir: Path | None = None) -> list[Path]:
    """The files ``ecc-lab init`` copies: the numbered notebooks and the example configuration.

    Parameters
    ----------
    notebooks_dir : Path, optional
        Where the notebooks are; default :func:`ecc_lib.paths.notebooks_dir`.

    Returns
    -------
    list of Path
        ``NN_*.ipynb`` in order, then ``params.example.yaml`` when present.
    """
    from ecc_lib import paths

    folder = Path(notebooks_dir) if notebooks_dir is not None else paths.notebooks_dir()
    files = sorted(folder.glob("[0-9][0-9]_*.ipynb"))
    if not files:
        raise FileNotFoundError(f"no notebooks named NN_*.ipynb in {folder}")
    example = folder / EXAMPLE_CONFIG
    return files + ([example] if example.is_file() else [])


def init_folder(target: str | Path, force: bool = False) -> list[Path]:
    """Copy the notebooks and the example configuration into ``target``.

    Parameters
    ----------
    target : str or Path
        Folder to fill; created when missing.
    force : bool, default False
        Overwrite files of the same name; without it an existing file is an error and nothing is
        copied.

    Returns
    -------
    list of Path
        The files written.
    """
    target = Path(target).expanduser()
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a folder")
    sources = starter_files()
    clashes = [target / source.name for source in sources if (target / source.name).exists()]
    if clashes and not force:
        names = ", ".join(path.name for path in clashes)
        raise FileExistsError(
            f"{target} already has {names}; nothing was copied (use --force to overwrite)"
        )
    target.mkdir(parents=True, exist_ok=True)
    written = []
    for source in sources:
        shutil.copyfile(source, target / source.name)
        written.append(target / source.name)
    return written


def _arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of ``ecc-lab init``."""
    parser.add_argument("folder", metavar="DIR", help="folder to create or fill")
    parser.add_argument("--force", action="store_true", help="overwrite files of the same name")


def _run(args: argparse.Namespace) -> int:
    """Copy the starter files and say what to do next."""
    written = init_folder(args.folder, force=args.force)
    folder = Path(args.folder)
    for path in written:
        print(f"wrote {path}")
    print(
        f"\nNext: 'jupyter lab {folder}' to open the notebooks, or "
        f"'ecc-lab run --notebooks {folder}' to run your copies into ./runs/."
    )
    return 0


SUBCOMMANDS = (
    Subcommand(
        "init",
        help="copy the notebooks and an example config into a folder to edit in JupyterLab",
        description=(
            "Copy the analysis notebooks (NN_*.ipynb) and params.example.yaml into DIR, so that "
            "you can open, edit and rerun them in JupyterLab; 'ecc-lab run --notebooks DIR' runs "
            "your copies. Existing files are never overwritten unless --force is given."
        ),
        add_arguments=_arguments,
        handler=_run,
    ),
)
