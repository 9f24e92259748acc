"""Pipeline configuration: the notebooks' declared parameters, config files and their validation.

Configuration (YAML or a mapping)
    top-level keys that are valid Python identifiers are parameters applied to every notebook that
    declares them; keys that start with a digit name a notebook (``"03_clustering"`` or ``"03"``) and
    hold a mapping of parameters for that notebook only::

        seed: 0
        max_queries: 0
        03_clustering:
          n_clusters: 10

    A top-level parameter that no notebook declares, a per-notebook parameter that this notebook does
    not declare, or a section naming no notebook is an error (:class:`UnknownParameterError`).
"""

from __future__ import annotations

import ast
import logging
import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ecc_lib import paths
from ecc_lib._optional import require
from ecc_lib.redaction import redact_urls_in

logger = logging.getLogger(__name__)
RESERVED_PARAMETERS = ("run_dir",)


class UnknownParameterError(ValueError):
    """A configuration names a parameter (or a notebook) that the notebooks do not declare."""


class ParameterTypeError(ValueError):
    """A configured value does not have the type of the notebook's default."""


class ParameterValueError(ValueError):
    """A configured value is out of its range (``n_boot: 0``, ``seed: -1``)."""


PARAMETER_MINIMA: dict[str, int] = {
    "seed": 0,
    "split_seed": 0,
    "max_queries": 0,
    "change_draws": 0,
    "n_probes": 0,
    "n_boot": 1,
    "n_seeds": 1,
    "n_runs": 1,
    "n_draws": 1,
    "n_pairs": 1,
    "n_clusters": 1,
    "ecc_router_clusters": 1,
    "n_capabilities": 1,
    "n_queries": 1,
    "max_iter": 1,
    "collect_decodes": 1,
    "collect_rewrites": 0,
}
"""Smallest value of the notebooks' whole-number parameters (seeds are numpy seeds: >= 0; a
bootstrap needs a resample), checked before any notebook runs."""

LARGEST_WEIGHT = 1e6
"""Largest cost weight (``lambdas``, ``cost_weight``) or softmax parameter a configuration may set:
beyond it every cost-aware choice is the cheapest model and exp() overflows (``1e308``)."""

PARAMETER_RANGES: dict[str, tuple[float, float, bool, bool]] = {
    # name: (low, high, low included, high included); every value must also be finite
    "lam": (0.0, LARGEST_WEIGHT, True, True),
    "temperature": (0.0, LARGEST_WEIGHT, False, True),
    "cost_weight": (0.0, LARGEST_WEIGHT, True, True),
    "beta": (0.0, LARGEST_WEIGHT, True, True),
    "test_size": (0.0, 1.0, False, False),
    "lambdas": (0.0, LARGEST_WEIGHT, True, True),
    "k_sweep": (1, math.inf, True, False),
    "probe_sweep": (0, math.inf, True, False),
}
"""Range of the notebooks' real-valued parameters and of the items of their numeric list
parameters (issue 36: ``lambdas: [.nan]``, ``[-1]``, ``[1e308]`` and ``temperature: 0`` were taken),
checked before any notebook runs."""

NON_EMPTY_LISTS: tuple[str, ...] = ("k_sweep", "probe_sweep", "lambdas")
"""List parameters that need at least one item (``datasets: []`` is how notebook 01 is told to
read only ``--dataset``)."""

EMPTY_DEFAULT_ITEMS: dict[str, type] = {"routers": str, "datasets": str}
"""Item type of the list parameters whose default is empty (``routers: []`` runs every registered
router family), where the default has no item to read it from."""

MAX_CONFIG_BYTES = 1_000_000
"""Largest configuration file read (a configuration is a few hundred bytes)."""


class ConfigError(ValueError):
    """A configuration file cannot be read (YAML syntax); the message names the file and line."""


# --------------------------------------------------------------------------------------------
# notebooks and parameters


STANDALONE_NOTEBOOKS: tuple[str, ...] = ("06_benchmark",)
"""Notebooks run only when asked for (``--only 06``): the benchmark across datasets (issue 27)
is its own job, not a step of every run."""


def discover_notebooks(notebooks_dir: str | os.PathLike | None = None) -> list[Path]:
    """The pipeline notebooks ``NN_name.ipynb`` in order.

    Parameters
    ----------
    notebooks_dir : path, optional
        Folder of the notebooks (default: the project's or the installed copy).

    Returns
    -------
    list of Path
    """
    folder = Path(notebooks_dir) if notebooks_dir else paths.notebooks_dir()
    found = sorted(p for p in folder.glob("*.ipynb") if re.match(r"^\d{2}_", p.name))
    if not found:
        raise FileNotFoundError(f"no notebooks named NN_*.ipynb in {folder}")
    return found


def select_notebooks(notebooks: Sequence[Path], only: str | Iterable[str] | None) -> list[Path]:
    """The notebooks named by ``only`` ("02,03", ["02", "03_clustering"]), in pipeline order.

    Parameters
    ----------
    notebooks : sequence of Path
        All pipeline notebooks.
    only : str, iterable of str or None
        Prefixes or stems; None keeps every notebook but the standalone ones
        (:data:`STANDALONE_NOTEBOOKS`, run only when named).

    Returns
    -------
    list of Path
    """
    if only is None or only == "" or only == []:
        return [nb for nb in notebooks if nb.stem not in STANDALONE_NOTEBOOKS]
    wanted = [part.strip() for part in only.split(",")] if isinstance(only, str) else list(only)
    wanted = [part for part in wanted if part]
    chosen = set()
    for part in wanted:
        matches = [nb for nb in notebooks if _matches(nb, part)]
        if not matches:
            raise ValueError(
                f"--only: no notebook matches {part!r}; available: {[nb.stem for nb in notebooks]}"
            )
        chosen.update(matches)
    return [nb for nb in notebooks if nb in chosen]


def _matches(notebook: Path, key: str) -> bool:
    key = key.removesuffix(".ipynb")
    return notebook.stem == key or notebook.stem.split("_", 1)[0] == key


def notebook_parameters(notebook: str | os.PathLike) -> dict[str, dict[str, Any]]:
    """Parameters declared in the ``parameters`` cell: name -> {default, type, help}.

    ``default`` is the Python value of the literal, ``type`` the annotated type name.

    Parameters
    ----------
    notebook : path
        A notebook with a cell tagged ``parameters``.

    Returns
    -------
    dict of str to dict
        ``{name: {"default", "type", "help"}}`` in declaration order.
    """
    papermill = require("papermill", extra="notebooks", purpose="reading notebook parameters")

    declared = papermill.inspect_notebook(str(notebook))
    result = {}
    for name, info in declared.items():
        try:
            default = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError):
            default = info["default"]
        result[name] = {
            "default": default,
            "type": info.get("inferred_type_name") or "None",
            "help": info.get("help") or "",
        }
    return result


def load_config(config: str | os.PathLike | Mapping[str, Any] | None) -> dict[str, Any]:
    """Read a YAML configuration (a path) or copy a mapping; None gives ``{}``.

    Parameters
    ----------
    config : path, mapping or None
        A YAML file, a mapping or nothing.

    Returns
    -------
    dict
    """
    if config is None:
        return {}
    if isinstance(config, Mapping):
        return dict(config)
    yaml = require("yaml", extra="notebooks", purpose="reading a run configuration")

    path = Path(config)
    if not path.is_file():
        raise FileNotFoundError(f"no such configuration file: {path}")
    size = path.stat().st_size
    if size > MAX_CONFIG_BYTES:
        raise ConfigError(
            f"{path}: {size:,} bytes is too large for a run configuration (at most "
            f"{MAX_CONFIG_BYTES:,})"
        )
    try:
        loaded = yaml.load(path.read_text(encoding="utf-8"), Loader=_config_loader())
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None) or getattr(error, "context_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "?"
        problem = getattr(error, "problem", None) or str(error).splitlines()[0]
        raise ConfigError(f"{path}: YAML error at {where}: {problem}") from None
    if loaded is None:
        return {}
    if not isinstance(loaded, Mapping):
        raise ValueError(f"{path}: the configuration must be a mapping of parameters")
    return {str(key): value for key, value in loaded.items()}


def _config_loader():
    """A safe YAML loader that keeps mapping keys as written: ``03:`` names notebook 03 (plain
    YAML would read it as the octal number 3), ``1e1:`` stays a string."""
    yaml = require("yaml", extra="notebooks", purpose="reading a run configuration")

    class KeyPreservingLoader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            # an alias (``*name``) repeats a node: a few hundred bytes of nested aliases expand
            # to gigabytes (the "billion laughs"); a configuration has no need of them (issue 36)
            if self.check_event(yaml.events.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"YAML aliases (*{event.anchor}) are not allowed in a run configuration; "
                    "write the value out",
                    event.start_mark,
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                self.flatten_mapping(node)
            mapping = {}
            for key_node, value_node in node.value:
                if isinstance(key_node, yaml.ScalarNode):
                    key = key_node.value
                else:
                    key = self.construct_object(key_node, deep=deep)
                if key in mapping:
                    raise yaml.constructor.ConstructorError(
                        None,
                        None,
                        f"duplicate key {key!r} (a later value would silently replace the "
                        "earlier one)",
                        key_node.start_mark,
                    )
                mapping[key] = self.construct_object(value_node, deep=deep)
            return mapping

    KeyPreservingLoader.add_constructor(
        "tag:yaml.org,2002:map", KeyPreservingLoader.construct_mapping
    )
    return KeyPreservingLoader


PATH_PARAMETERS: tuple[str, ...] = ("dataset", "datasets", "cost_dataset", "collect_queries")
"""Notebook parameters that may name files or folders (resolved from the caller's directory)."""


def resolve_path_value(value: Any, *, cwd: str | os.PathLike | None = None) -> Any:
    """An existing relative path made absolute from ``cwd`` (default: the working directory).

    Notebooks run inside the run folder, so ``--dataset my_data`` must be resolved where the user
    typed it. A value that names no existing file or folder (a bundled or public dataset name) is
    returned unchanged; a list is resolved item by item.

    Parameters
    ----------
    value : Any
        The value (non-string values and empty strings are returned unchanged).
    cwd : str or PathLike, optional
        Folder the relative path is read from (default: the working directory).

    Returns
    -------
    Any
        The absolute resolved path as a string when it exists, else ``value``.
    """
    if isinstance(value, list):
        return [resolve_path_value(item, cwd=cwd) for item in value]
    if not isinstance(value, str) or not value:
        return value
    path = Path(value).expanduser()
    if not path.is_absolute():
        path = Path(cwd or os.getcwd()) / path
    return str(path.resolve()) if path.exists() else value


_TYPES = {
    "int": (int,),
    "float": (int, float),
    "str": (str,),
    "bool": (bool,),
    "list": (list,),
    "dict": (dict,),
}


def _check_type(notebook: str, name: str, value: Any, declared: Mapping[str, Any]) -> None:
    type_name = declared["type"]
    if type_name not in _TYPES:  # no annotation: the type of the default
        type_name = type(declared["default"]).__name__
    expected = _TYPES.get(type_name)
    if expected is None:
        return
    if not isinstance(value, expected) or (isinstance(value, bool) and bool not in expected):
        raise ParameterTypeError(
            f"parameter {name!r} of {notebook} must be {type_name} (default "
            f"{declared['default']!r}), got {type(value).__name__} {value!r}"
        )


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _check_value(notebook: str, name: str, value: Any, declared: Mapping[str, Any]) -> None:
    """Items of a list parameter have the type of the default's items (``k_sweep: [[4]]`` and
    ``["a"]`` are refused), the lists of :data:`NON_EMPTY_LISTS` are not empty, and real values
    and numeric items lie in :data:`PARAMETER_RANGES` (finite)."""
    default = declared["default"]
    where = f"parameter {name!r} of {notebook}"
    if isinstance(value, list) and isinstance(default, list):
        if not value and name in NON_EMPTY_LISTS:
            raise ParameterValueError(f"{where} must not be an empty list (default {default!r})")
        kinds = {type(item) for item in default}
        if not default and name in EMPTY_DEFAULT_ITEMS:
            kinds = {EMPTY_DEFAULT_ITEMS[name]}
        if kinds and kinds <= {int, float, str}:
            numeric = kinds <= {int, float}
            want = "numbers" if float in kinds else "whole numbers" if numeric else "strings"
            for item in value:
                if numeric:
                    ok = _is_number(item) and (float in kinds or isinstance(item, int))
                else:
                    ok = isinstance(item, str)
                if not ok:
                    raise ParameterTypeError(
                        f"{where} must be a list of {want} (default {default!r}), got item "
                        f"{item!r} in {value!r}"
                    )
        items = value
    else:
        items = [value]
    bounds = PARAMETER_RANGES.get(name)
    if bounds is None:
        return
    low, high, low_in, high_in = bounds
    for item in items:
        if not _is_number(item):
            continue
        ok = math.isfinite(item)
        ok = ok and (item >= low if low_in else item > low)
        ok = ok and (item <= high if high_in else item < high)
        if not ok:
            span = f"{'[' if low_in else '('}{low:g}, {high:g}{']' if high_in else ')'}"
            raise ParameterValueError(
                f"{where} must be a finite number in {span}, got {item!r}"
                + (f" in {value!r}" if items is value else "")
            )


def recorded_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters as they are written down (``run.json``, ``metrics.json``, the executed
    notebook): every URL with its credentials redacted (:func:`ecc_lib.redaction.redact_url`).
    The notebook itself is given the real values.

    Parameters
    ----------
    parameters : mapping
        Parameters of one notebook.

    Returns
    -------
    dict
    """
    return redact_urls_in(dict(parameters))


def resolve_parameters(
    notebooks: Sequence[Path],
    config: Mapping[str, Any],
    declared: Mapping[str, Mapping[str, Mapping[str, Any]]],
    *,
    dataset: str | None = None,
) -> dict[str, dict[str, Any]]:
    """Parameters passed to each notebook (only those that differ from nothing: set explicitly).

    Parameters
    ----------
    notebooks : sequence of Path
        The notebooks to run.
    config : mapping
        Global parameters and per-notebook sections (see the module docstring).
    declared : mapping
        ``{notebook stem: notebook_parameters(...)}`` for every pipeline notebook (also those not
        run, so that a shared configuration stays valid with ``--only``).
    dataset : str, optional
        Sets ``dataset`` in every notebook that declares it (overrides the configuration).
        Values of :data:`PATH_PARAMETERS` that name an existing relative path are made absolute
        from the working directory (the notebooks run inside the run folder).

    Returns
    -------
    dict of str to dict
        Notebook stem to the parameters injected into it.

    Raises
    ------
    UnknownParameterError
        A parameter or section that no notebook declares.
    ParameterTypeError
        A value of another type than the notebook's declared type.
    ParameterValueError
        A whole number below its :data:`PARAMETER_MINIMA` (``n_boot: 0``, ``seed: -1``).
    """
    if dataset is not None:
        looks_like_path = os.sep in dataset or "/" in dataset or dataset.startswith(".")
        if looks_like_path and not Path(dataset).expanduser().exists():
            raise FileNotFoundError(
                f"--dataset {dataset!r}: no such folder (relative paths are taken from "
                f"{os.getcwd()})"
            )
    stems = list(declared)
    known_anywhere = sorted({name for params in declared.values() for name in params})
    globals_: dict[str, Any] = {}
    sections: dict[str, dict[str, Any]] = {}
    for key, value in config.items():
        key = str(key)
        if key[:1].isdigit():
            matches = [stem for stem in stems if _matches(Path(stem + ".ipynb"), key)]
            if not matches:
                raise UnknownParameterError(
                    f"configuration section {key!r} names no notebook; notebooks: {stems}"
                )
            if not isinstance(value, Mapping):
                raise ValueError(f"configuration section {key!r} must be a mapping of parameters")
            sections.setdefault(matches[0], {}).update({str(k): v for k, v in value.items()})
        else:
            globals_[key] = value
    for key in globals_:
        if key in RESERVED_PARAMETERS:
            raise UnknownParameterError(f"parameter {key!r} is set by the runner (use --out)")
        if key not in known_anywhere:
            raise UnknownParameterError(
                f"unknown parameter {key!r}: no notebook declares it; known parameters: "
                f"{known_anywhere}"
            )
    for stem, values in sections.items():
        for key in values:
            if key in RESERVED_PARAMETERS:
                raise UnknownParameterError(f"parameter {key!r} is set by the runner (use --out)")
            if key not in declared[stem]:
                raise UnknownParameterError(
                    f"unknown parameter {key!r} for notebook {stem}; its parameters are "
                    f"{sorted(declared[stem])}"
                )
    resolved: dict[str, dict[str, Any]] = {}
    for notebook in notebooks:
        stem = notebook.stem
        params = declared[stem]
        chosen = {key: value for key, value in globals_.items() if key in params}
        chosen.update(sections.get(stem, {}))
        if dataset is not None and "dataset" in params:
            chosen["dataset"] = dataset
            # --dataset is a complete switch: prices come from that dataset too, unless the
            # configuration names a cost dataset explicitly
            explicit = "cost_dataset" in globals_ or "cost_dataset" in sections.get(stem, {})
            if "cost_dataset" in params and not explicit:
                chosen["cost_dataset"] = ""
        for key, value in chosen.items():
            _check_type(stem, key, value, params[key])
            _check_value(stem, key, value, params[key])
            low = PARAMETER_MINIMA.get(key)
            if low is not None and isinstance(value, int) and value < low:
                raise ParameterValueError(
                    f"parameter {key!r} of {stem} must be >= {low}, got {value!r}"
                    + (" (seeds are whole numbers >= 0)" if "seed" in key else "")
                )
            if key in PATH_PARAMETERS:
                chosen[key] = resolve_path_value(value)
        resolved[stem] = chosen
    return resolved


__all__ = [
    "notebook_parameters",
]
