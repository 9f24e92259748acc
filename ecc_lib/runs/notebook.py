"""One notebook's run: its folder, its parameters and the calls that write into the folder.

A notebook opens its run once, ``run = open_run(run_dir, "02_label_instability", globals())``, and
then saves tables and figures and records its ``metrics.json`` section through ``run``; the
parameters it records are read from its ``parameters`` cell (the shipped notebook's declared names,
with the values the cell or papermill set), never copied by hand into a ``parameters={...}`` dict
(issue 33, ``docs/design.md`` section 9). :class:`NotebookRun` is a
:class:`~ecc_lib.runs.folder.RunContext`, so every function that takes a run folder takes it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ecc_lib import paths
from ecc_lib.runs import artifacts
from ecc_lib.runs import metrics as run_metrics
from ecc_lib.runs.config import notebook_parameters
from ecc_lib.runs.folder import RunContext, resolve_run_dir

NOT_RECORDED = ("run_dir",)
"""Parameters a notebook never records (where its outputs go is the run folder itself)."""


@dataclass(frozen=True)
class NotebookRun(RunContext):
    """A run folder opened by one notebook, with the parameters it records.

    Parameters
    ----------
    run_dir : Path
        The run folder.
    notebook : str
        The notebook's name (``"02_label_instability"``).
    parameters : mapping
        What :meth:`record` records with the section: the notebook's parameters but
        :data:`NOT_RECORDED`, the embedder as the canonical name of its model
        (``embedding_model``).
    """

    notebook: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict, compare=False, hash=False)

    def save_table(self, table: pd.DataFrame, name: str, *, index: bool = False) -> Path:
        """Write ``tables/<name>.csv`` (:func:`ecc_lib.runs.artifacts.save_table`).

        Parameters
        ----------
        table : DataFrame
        name : str
        index : bool, default False

        Returns
        -------
        Path
        """
        return artifacts.save_table(table, self, name, index=index)

    def save_figure(self, fig, name: str, *, caption: str | None = None) -> list[Path]:
        """Write ``figures/<name>.png`` and ``.pdf`` (:func:`ecc_lib.runs.artifacts.save_figure`)
        and, in a notebook, show the figure there once (then close it).

        Parameters
        ----------
        fig : matplotlib Figure
        name : str
        caption : str, optional

        Returns
        -------
        list of Path
        """
        written = artifacts.save_figure(fig, self, name, caption=caption)
        if fig is not None:
            _show_in_notebook(fig)
        return written

    def record(
        self,
        section: str,
        payload: Mapping[str, Any],
        *,
        parameters: Mapping[str, Any] | None = None,
        drop: Sequence[str] = (),
        **changed: Any,
    ) -> Path:
        """Record a ``metrics.json`` section with the notebook's parameters
        (:func:`ecc_lib.runs.metrics.record_metrics`).

        Parameters
        ----------
        section : str
        payload : mapping
        parameters : mapping, optional
            The section's own parameters instead of the notebook's (a result that records its
            settings, such as the capability map's; ``{}``: none).
        drop : sequence of str
            Parameters not recorded with this section.
        **changed
            Values recorded instead of the parameters' (``datasets=names`` once resolved).

        Returns
        -------
        Path
            The section's fragment.
        """
        if parameters is None:
            parameters = {k: v for k, v in self.parameters.items() if k not in set(drop)}
            parameters.update(changed)
        return run_metrics.record_metrics(self, section, payload, parameters=parameters)


def _show_in_notebook(fig) -> None:
    """Display a figure in the running IPython kernel and close it, so that it shows exactly once,
    where it is saved (the inline backend shows a figure at the end of its cell only while
    pyplot is interactive, and some cells left their figures unshown)."""
    try:
        from IPython import get_ipython
        from IPython.display import display
    except ImportError:
        return
    if get_ipython() is None:
        return
    import matplotlib.pyplot as plt

    display(fig)
    plt.close(fig)


def open_run(
    run_dir: str | os.PathLike | RunContext | None,
    notebook: str,
    namespace: Mapping[str, Any],
) -> NotebookRun:
    """Open the run folder of one notebook (created where it does not exist).

    Parameters
    ----------
    run_dir : path, RunContext or None
        The run folder (None or empty: ``runs/interactive``).
    notebook : str
        The notebook's name without suffix (``"03_clustering"``): its shipped copy declares the
        parameters.
    namespace : mapping
        Where the parameters' values are (the notebook's ``globals()``).

    Returns
    -------
    NotebookRun
    """
    from ecc_lib.embed.models import canonical_model_name

    declared = notebook_parameters(paths.notebooks_dir() / f"{notebook}.ipynb")
    values = {}
    for name in declared:
        if name in NOT_RECORDED:
            continue
        if name not in namespace:
            raise KeyError(f"{notebook}: its parameter {name!r} is not set in the namespace given")
        if name == "embedder":
            values["embedding_model"] = canonical_model_name(namespace[name])
        else:
            values[name] = namespace[name]
    folder = run_dir.run_dir if isinstance(run_dir, RunContext) else resolve_run_dir(run_dir)
    return NotebookRun(folder, notebook=notebook, parameters=values).create()


__all__ = ["NotebookRun", "open_run"]
