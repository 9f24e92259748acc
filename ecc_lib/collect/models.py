"""Model variants: one endpoint model under different request settings counts as separate models.

People compare ``o3-mini`` at low and high reasoning effort, or one model at two temperatures. A
model is given as ``NAME[@KEY=VALUE[;KEY=VALUE...]]``::

    smollm2@temperature=0.2
    o3-mini@reasoning_effort=high;max_tokens=4000

``NAME`` is what the endpoint is asked for; the whole text (the *label*) is the model's name in the
outcomes, so each variant is its own column of the outcome matrix. ``temperature``, ``top_p`` and
``max_tokens`` override the collection's decoding settings; any other key is sent as a field of the
request body (``reasoning_effort``, ``seed``, ``top_k``...). Values are read as JSON where they
parse (numbers, ``true``, ``null``, quoted strings, lists) and kept as text otherwise. The
``@...`` suffix counts as settings only when it holds ``=``, so names that contain ``@`` (Vertex
AI's ``claude-3-5-sonnet@20240620``) still work.
"""

from __future__ import annotations

import json
import math
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

SAMPLING_KEYS: tuple[str, ...] = ("temperature", "top_p", "max_tokens")
"""Settings that override the collection's decoding settings; other keys go into the body."""
RESERVED_KEYS: tuple[str, ...] = ("model", "messages", "stream", "n")
"""Request fields a variant may not set."""


@dataclass(frozen=True)
class ModelSpec:
    """One candidate model: the endpoint model and the request settings that define the variant.

    Attributes
    ----------
    label : str
        Name in the outcomes and the store (``NAME`` alone when there are no settings).
    endpoint_model : str
        The model name sent to the endpoint.
    settings : dict
        Request settings of the variant (empty for a plain model).
    """

    label: str
    endpoint_model: str
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def sampling(self) -> dict[str, Any]:
        """The settings among ``temperature``, ``top_p`` and ``max_tokens``."""
        return {k: v for k, v in self.settings.items() if k in SAMPLING_KEYS}

    @property
    def extra_body(self) -> dict[str, Any]:
        """The settings sent as extra request fields."""
        return {k: v for k, v in self.settings.items() if k not in SAMPLING_KEYS}


def _value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _check(label: str, key: str, value: Any) -> Any:
    if key in RESERVED_KEYS:
        raise ValueError(f"model {label!r}: the setting {key!r} cannot be set per model")
    if key in ("temperature", "top_p"):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ValueError(f"model {label!r}: {key} must be a number, got {value!r}")
        value = float(value)
        low_ok = value >= 0 if key == "temperature" else value > 0
        if not math.isfinite(value) or not low_ok or (key == "top_p" and value > 1):
            bounds = ">= 0" if key == "temperature" else "in (0, 1]"
            raise ValueError(f"model {label!r}: {key} must be {bounds}, got {value!r}")
    if key == "max_tokens" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ValueError(f"model {label!r}: max_tokens must be an integer >= 1, got {value!r}")
    return value


def parse_model_spec(text: str) -> ModelSpec:
    """Read one ``NAME[@KEY=VALUE[;KEY=VALUE...]]``.

    Parameters
    ----------
    text : str

    Returns
    -------
    ModelSpec

    Raises
    ------
    ValueError
        No name, a setting without ``=``, a key given twice, or a bad temperature / top_p /
        max_tokens.
    """
    raw = unicodedata.normalize("NFC", str(text)).strip()  # one form per name (issue 36)
    name, at, suffix = raw.rpartition("@")
    if not at or "=" not in suffix:
        if not raw:
            raise ValueError("a model name is empty")
        return ModelSpec(label=raw, endpoint_model=raw)
    name = name.strip()
    if not name:
        raise ValueError(f"model {raw!r} has settings but no name before '@'")
    settings: dict[str, Any] = {}
    parts = []
    for item in suffix.split(";"):
        if not item.strip():
            continue
        key, equals, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not equals or not key:
            raise ValueError(f"model {raw!r}: setting {item.strip()!r} is not KEY=VALUE")
        if key in settings:
            raise ValueError(f"model {raw!r}: setting {key!r} is given twice")
        settings[key] = _check(raw, key, _value(value))
        parts.append(f"{key}={value}")
    return ModelSpec(label=f"{name}@{';'.join(parts)}", endpoint_model=name, settings=settings)


def parse_models(models: str | Sequence[str | ModelSpec]) -> list[ModelSpec]:
    """Candidate models from a comma-separated string or a sequence (see the module docstring).

    Parameters
    ----------
    models : str or sequence of (str or ModelSpec)
        Comma-separated specs, or specs and :class:`ModelSpec` objects (blank items are skipped).

    Returns
    -------
    list of ModelSpec
        In the order given.

    Raises
    ------
    ValueError
        No model, or the same model (same name and settings) listed twice.
    """
    if isinstance(models, str):
        models = models.split(",")
    specs = [
        m if isinstance(m, ModelSpec) else parse_model_spec(m)
        for m in models
        if isinstance(m, ModelSpec) or str(m).strip()
    ]
    if not specs:
        raise ValueError("give at least one model")
    seen: dict[tuple, str] = {}
    for spec in specs:
        identity = (spec.endpoint_model, json.dumps(spec.settings, sort_keys=True))
        if identity in seen or spec.label in seen.values():
            raise ValueError(
                f"model {spec.label!r} is listed twice (same name and settings as "
                f"{seen.get(identity, spec.label)!r})"
            )
        seen[identity] = spec.label
    return specs


__all__: list[str] = []
