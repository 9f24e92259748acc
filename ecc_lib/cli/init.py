"""``ecc-lab init DIR``: a starter folder with the notebooks, to open in JupyterLab and edit."""

from __future__ import annotations

import argparse
import contextlib
import os
import tempfile
from pathlib import Path

from ecc_lib.cli.subcommand import Subcommand

EXAMPLE_CONFIG = "params.example.yaml"


def starter_files(*, notebooks_dir: Path | None = None) -> list[Path]:
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


class InitError(RuntimeError):
    """``ecc-lab init`` cannot fill the folder: a starter file's name is a symbolic link or not a
    regular file, or the folder cannot be written (read-only, disk full, permission denied).
    Nothing was written (the message says what to do)."""


def _refuse_links(target: Path, sources: list[Path], force: bool) -> None:
    """Refuse names that are links (dangling ones too) or not regular files, and clashes
    without ``force``."""
    if target.is_symlink() and not target.exists():
        raise InitError(
            f"{target} is a symbolic link to {os.readlink(target)!r}, which does not exist; "
            "ecc-lab init does not create folders through a link (remove it or give the real path)"
        )
    if target.exists() and not target.is_dir():
        raise FileExistsError(f"{target} exists and is not a folder")
    paths = [target / s.name for s in sources]
    links = [p for p in paths if p.is_symlink()]
    if links:
        shown = ", ".join(f"{p.name} -> {os.readlink(p)}" for p in links)
        raise InitError(
            f"{target} holds symbolic links where the starter files go ({shown}); ecc-lab init "
            "never writes through a link, even with --force: remove them. Nothing was copied"
        )
    others = [p for p in paths if p.exists() and not p.is_file()]
    if others:
        names = ", ".join(p.name for p in others)
        raise InitError(f"{target}: {names} exist(s) and is not a regular file; nothing was copied")
    clashes = [p for p in paths if p.exists()]
    if clashes and not force:
        names = ", ".join(path.name for path in clashes)
        raise FileExistsError(
            f"{target} already has {names}; nothing was copied (use --force to overwrite)"
        )


def init_folder(target: str | Path, *, force: bool = False) -> list[Path]:
    """Copy the notebooks and the example configuration into ``target``.

    Every file is first written in full to a new temporary file in ``target`` and only then
    renamed over its name, so a full or read-only disk leaves no truncated notebook behind (the
    temporary files are removed and nothing is replaced). A name that is a symbolic link is
    refused, even with ``force``: nothing is ever written through a link.

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

    Raises
    ------
    FileExistsError
        ``target`` is a file, or (without ``force``) a starter file exists.
    InitError
        A starter file's name is a link or not a regular file, or the folder cannot be written.
    """
    target = Path(target).expanduser()
    sources = starter_files()
    _refuse_links(target, sources, force)
    temporaries: list[tuple[Path, Path]] = []
    umask = os.umask(0)
    os.umask(umask)
    try:
        target.mkdir(parents=True, exist_ok=True)
        for source in sources:
            handle, name = tempfile.mkstemp(prefix=f".{source.name}.", suffix=".tmp", dir=target)
            temporary = Path(name)
            temporaries.append((temporary, target / source.name))
            with os.fdopen(handle, "wb") as stream:
                stream.write(source.read_bytes())
                stream.flush()
                os.fsync(stream.fileno())
            os.chmod(temporary, 0o666 & ~umask)  # as a plainly created file would be
        for _, final in temporaries:
            if final.is_symlink():  # appeared meanwhile: replace the link, never follow it
                raise InitError(f"{final} became a symbolic link while copying; nothing replaced")
        for temporary, final in temporaries:
            os.replace(temporary, final)
    except OSError as error:
        reason = error.strerror or type(error).__name__
        where = error.filename or target
        raise InitError(
            f"cannot write the starter files into {target}: {reason} ({where}); nothing was "
            "copied and no partial file is left"
        ) from None
    finally:
        for temporary, _ in temporaries:
            with contextlib.suppress(OSError):
                temporary.unlink(missing_ok=True)
    return [final for _, final in temporaries]


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


__all__: list[str] = []
