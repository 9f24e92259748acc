"""Names of methods and models, the one place the figures and the report take them from.

- method names for figures (:data:`METHOD_LABELS`, :func:`method_label`), for prose
  (:data:`METHOD_NAMES`, :func:`method_name`, :data:`PLURAL`), for the tour's clusterings
  (:data:`TOUR_METHOD_NAMES`) and for the routing references and settings
  (:data:`ROUTING_METHOD_LABELS`, :data:`ROUTING_SETTING_LABELS`);
- model names that never look alike (:func:`shorten_name`, :func:`short_model_names`,
  :func:`model_name_legend`).

Names only: colours stay in :mod:`ecc_lib.plotting.style`; the methods' names are read from
:mod:`ecc_lib.method_registry`, the only module of ``ecc_lib`` this one imports.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import pandas as pd

from ecc_lib.method_registry import spec_view

# ------------------------------------------------------------------------------------------ methods

METHOD_LABELS = spec_view("label")
"""Display names of the clustering methods in figures and tables (a view of
:data:`~ecc_lib.method_registry.METHOD_SPECS`)."""

METHOD_NAMES = spec_view("name")
"""Words for the methods of ``metrics.json["ecc"]`` in sentences (a view of
:data:`~ecc_lib.method_registry.METHOD_SPECS`); an unknown method is named by its key with spaces
(so a new method appears without code changes)."""

PLURAL = spec_view("plural", lambda spec: spec.plural)
"""Methods whose name is plural ("human labels are"); ``method in PLURAL`` reads the registry."""

TOUR_METHOD_NAMES = {
    "ecc": "ECC (embeddings + comparisons)",
    "emb_only": "embedding-only clusters",
    "labels": "topic labels",
}
"""Names of the clusterings compared on the tour's planted data
(:mod:`ecc_lib.protocol.experiments.tour`)."""

ROUTING_METHOD_LABELS = {
    "global": "best model of the global ranking",
    "random": "random model",
    "oracle": "oracle (best model per query)",
    "probe_winner": "the probe's winner, nothing else",
}
"""Display names of the routing references (the routers themselves are named by
:func:`method_label`)."""

ROUTING_SETTING_LABELS = {
    "no_probe": "no probe (embedding / label only)",
    "probe": "with the probe (paper)",
    "probe_outside": "with the probe, models outside the probe pair",
}
"""Display names of the routing settings of the clustering routers."""


SUPERVISION_SUFFIXES = (" (DARS)", " (single-shot)")
"""How a router key (``kNN (DARS)``) names the supervision it was trained on."""


def router_name(key: str, *, repeats: bool) -> str:
    """A router as figures and sentences name it.

    With repeated observations a router key keeps its supervision (``kNN (DARS)`` against
    ``kNN (single-shot)``); without them the DARS targets are the observed outcomes and there is
    no single-shot arm, so the router is named alone (``kNN``).

    Parameters
    ----------
    key : str
        ``router (supervision)``, as the routing headline keys, or a reference.
    repeats : bool
        Whether the routed data has repeated observations (rewrites or decodes).

    Returns
    -------
    str
    """
    key = str(key)
    if repeats:
        return key
    for suffix in SUPERVISION_SUFFIXES:
        if key.endswith(suffix):
            return key[: -len(suffix)]
    return key


def method_label(name: str) -> str:
    """Display name of a clustering method in figures and tables (:data:`METHOD_LABELS`).

    Parameters
    ----------
    name : str
        Method key (``ecc``, ``emb_only`` ...).

    Returns
    -------
    str
        The key itself when it has no label.
    """
    return METHOD_LABELS.get(str(name), str(name))


def method_name(key: str) -> str:
    """Words for a method key in sentences (:data:`METHOD_NAMES`, else the key with spaces).

    Parameters
    ----------
    key : str

    Returns
    -------
    str
    """
    return METHOD_NAMES.get(key, str(key).replace("_", " "))


# ------------------------------------------------------------------------------------------- models

_ORG_PREFIX = re.compile(r"[\w.\-/]+")  # an organisation path before a model name
_TOKEN = re.compile(r"([-_/ ]+)")
_ELLIPSIS = "\u2026"


_VERSION = re.compile(r"^\d+(?:\.\d+)*$")


def _tokens(label: str) -> list[str]:
    """``label`` as alternating segments and separators (``["llama-3.1", "-", "8b", ...]``).

    A bare version number belongs to the word before it (``Qwen-2.5``, ``gemma-2``): the two are
    one segment, kept or dropped together, so a name is never cut between them.
    """
    parts = [t for t in _TOKEN.split(str(label)) if t != ""]
    out: list[str] = []
    for part in parts:
        if (
            _VERSION.fullmatch(part)
            and len(out) >= 2
            and out[-1] == "-"
            and not _TOKEN.fullmatch(out[-2])
            and not any(ch.isdigit() for ch in out[-2])
        ):
            out[-2:] = [out[-2] + "-" + part]
        else:
            out.append(part)
    return out


def _join(parts: list[str], dropped: set[int]) -> str:
    """The label with the parts at positions ``dropped`` replaced by one ellipsis per run."""
    out: list[str] = []
    for i, part in enumerate(parts):
        if i not in dropped:
            out.append(part)
        elif not out or out[-1] != _ELLIPSIS:
            out.append(_ELLIPSIS)
    return "".join(out)


def shorten_name(label: str, *, width: int = 28, common: dict[str, int] | None = None) -> str:
    """``label`` within ``width`` characters by dropping whole tokens, never cutting one.

    The first token stays, and the last unless other names share it; tokens are dropped (each run
    of dropped tokens becomes one ellipsis) in order of how many names share them (``common``),
    the most shared first, words before tokens with digits, then from the middle outwards. A label
    whose kept tokens are still longer than ``width`` stays longer: a token is never cut.

    Parameters
    ----------
    label : str
    width : int, default 28
    common : dict, optional
        Token -> number of names that hold it (the more shared, the less distinguishing).

    Returns
    -------
    str
    """
    label = str(label)
    if len(label) <= width:
        return label
    parts = _tokens(label)
    words = [i for i, p in enumerate(parts) if not _TOKEN.fullmatch(p)]
    if len(words) <= 2:
        return label
    centre = (len(parts) - 1) / 2
    # the last token may go only when other names share it ("instruct"); the first always stays
    candidates = [i for i in words[1:] if i != words[-1] or (common or {}).get(parts[i], 0) > 1]
    # versions and sizes ("3.1", "51b") distinguish more than words: among equally shared tokens
    # they go last
    order = sorted(
        candidates,
        key=lambda i: (
            -(common or {}).get(parts[i], 0),
            any(ch.isdigit() for ch in parts[i]),
            abs(i - centre),
        ),
    )
    dropped: set[int] = set()
    for i in order:
        dropped.add(i)
        # separators between two dropped tokens go with them
        for j in range(1, len(parts) - 1):
            if _TOKEN.fullmatch(parts[j]) and j - 1 in dropped and j + 1 in dropped:
                dropped.add(j)
        text = _join(parts, dropped)
        if len(text) <= width:
            return text
    return _join(parts, dropped)


def short_model_names(names: Sequence[str], *, width: int = 24) -> dict[str, str]:
    """Display names of models that never look alike: the one shortening of every figure and table.

    The organisation prefix (``meta-llama/``) is dropped unless two models would then share a
    name; a name longer than ``width`` loses whole middle tokens, those shared by the most other
    names first (``llama-3.1-nemotron-51b\u2026``, never ``llama-3.1-n\u2026``); where
    shortening would make two names equal, they stay whole. :func:`model_name_legend` lists the
    full names beside the short ones.

    Parameters
    ----------
    names : sequence of str
    width : int, default 24

    Returns
    -------
    dict
        Full name -> display name, one entry per distinct name.
    """
    full = [str(n) for n in dict.fromkeys(str(n) for n in names)]
    # only an organisation path ("meta-llama/", "org/sub/") is a prefix: a "/" inside a name
    # with spaces or brackets ("Llama 3 (via provider/x)") is part of the name
    stripped = {
        n: (n.rsplit("/", 1)[-1] or n) if _ORG_PREFIX.fullmatch(n.rsplit("/", 1)[0]) else n
        for n in full
    }
    counts = pd.Series(list(stripped.values()), dtype=object).value_counts()
    base = {n: (s if counts[s] == 1 else n) for n, s in stripped.items()}
    common: dict[str, int] = {}
    for s in base.values():
        for token in set(_tokens(s)):
            common[token] = common.get(token, 0) + 1
    cut = {n: shorten_name(s, width=width, common=common) for n, s in base.items()}
    seen = pd.Series(list(cut.values()), dtype=object).value_counts()
    return {n: (c if seen[c] == 1 else base[n]) for n, c in cut.items()}


def model_name_legend(names: Sequence[str], *, width: int = 24) -> pd.DataFrame:
    """The full name of every model whose display name is shorter (:func:`short_model_names`).

    Parameters
    ----------
    names : sequence of str
    width : int, default 24

    Returns
    -------
    DataFrame
        ``shown as``, ``full name``; empty when no name is shortened.
    """
    mapping = short_model_names(names, width=width)
    rows = [{"shown as": s, "full name": f} for f, s in mapping.items() if s != f]
    return pd.DataFrame(rows, columns=["shown as", "full name"])


__all__ = [
    "ROUTING_METHOD_LABELS",
    "TOUR_METHOD_NAMES",
]
