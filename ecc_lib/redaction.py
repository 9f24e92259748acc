"""Credentials out of recorded URLs: one :func:`redact_url` used wherever a URL is written down.

A URL may carry a secret in its user info (``https://user:password@host/``) or in a query
parameter (``http://host/v1?api_key=...``). Everything ecc_lib records (collection manifests and
records, ``metrics.json`` and its fragments, ``run.json``, executed notebooks, the report, error
messages) holds the URL with those values replaced by ``[REDACTED]``; the rest of the URL (scheme,
host, port, path, the other query parameters) is kept so that the record still says where the data
came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, urlsplit, urlunsplit

REDACTED = "[REDACTED]"
REDACTED_USER = "REDACTED"
"""Replaces user info (brackets there would read as an IPv6 host)."""

SECRET_PARAMETER = re.compile(
    r"(key|token|secret|passw|pwd|auth|credential|signature|sig$|session|cookie)", re.IGNORECASE
)
"""Query parameter names whose values are credentials (``api_key``, ``access_token``,
``client_secret``, ``password``, ``X-Amz-Signature``, ``sig``, ...)."""

MIN_BARE_SECRET = 8
"""Shortest credential value replaced on its own (outside its URL) when scrubbing a file."""

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>`]+")


def url_secrets(url: str) -> list[str]:
    """The credential values a URL carries: its password (and user name when a password is
    given) and the values of query parameters named like a credential.

    Parameters
    ----------
    url : str
        Any URL.

    Returns
    -------
    list of str
        Non-empty values, raw and percent-decoded (empty for a URL without credentials).
    """
    try:
        parts = urlsplit(str(url).strip())
    except ValueError:
        return []
    found: list[str] = []
    netloc = parts.netloc
    if "@" in netloc:
        userinfo = netloc.rsplit("@", 1)[0]
        found.extend(piece for piece in userinfo.split(":", 1) if piece)
    for name, value in parse_qsl(parts.query, keep_blank_values=True):
        if value and SECRET_PARAMETER.search(name):
            found.append(value)
    for raw in parts.query.split("&"):
        name, _, value = raw.partition("=")
        if value and SECRET_PARAMETER.search(name):
            found.append(value)
    return sorted({v for v in found if v}, key=len, reverse=True)


def redact_url(url: str) -> str:
    """``url`` with its credentials replaced by ``[REDACTED]``.

    User info becomes ``REDACTED@``; the value of each query parameter named like a credential
    (see :data:`SECRET_PARAMETER`) becomes ``[REDACTED]``; the rest of the URL is kept as given.
    Text that is not a URL (no ``scheme://``) is returned unchanged.

    Parameters
    ----------
    url : str
        Any URL.

    Returns
    -------
    str

    Examples
    --------
    >>> redact_url("https://bob:hunter2@host:8443/v1?api_key=abc&api-version=2")
    'https://REDACTED@host:8443/v1?api_key=[REDACTED]&api-version=2'
    """
    text = str(url)
    if "://" not in text:
        return text
    try:
        parts = urlsplit(text)
    except ValueError:  # e.g. an invalid IPv6 literal: keep only the scheme
        return f"{text.split('://', 1)[0]}://{REDACTED_USER}"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{REDACTED_USER}@{netloc.rsplit('@', 1)[1]}"
    query = parts.query
    if query:
        pieces = []
        for raw in query.split("&"):
            name, equals, value = raw.partition("=")
            if value and SECRET_PARAMETER.search(name):
                value = REDACTED
            pieces.append(f"{name}{equals}{value}")
        query = "&".join(pieces)
    fragment = parts.fragment
    if fragment and SECRET_PARAMETER.search(fragment):  # e.g. #access_token=... (OAuth)
        fragment = REDACTED
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_urls_in(value: Any) -> Any:
    """``value`` with :func:`redact_url` applied to every URL inside its strings.

    Mappings, lists and tuples are walked (their keys are kept); other values are returned as
    they are.

    Parameters
    ----------
    value : any
        A parameter value, a mapping of parameters, a text holding URLs...

    Returns
    -------
    any
        The same structure with the URLs in its strings redacted.
    """
    if isinstance(value, str):
        return (
            _URL.sub(lambda match: redact_url(match.group(0)), value) if "://" in value else value
        )
    if isinstance(value, Mapping):
        return {key: redact_urls_in(item) for key, item in value.items()}
    if isinstance(value, list):
        return [redact_urls_in(item) for item in value]
    if isinstance(value, tuple):
        return tuple(redact_urls_in(item) for item in value)
    return value


def secret_replacements(values: Any) -> dict[str, str]:
    """``{raw URL: redacted URL}`` for every URL with credentials in ``values`` (walked as in
    :func:`redact_urls_in`), also in the escaped forms a notebook file (JSON) and Python source
    write it in, and percent-encoded; for scrubbing a file that already holds the raw URL.

    Parameters
    ----------
    values : any
        Parameter values.

    Returns
    -------
    dict
        Longest raw form first.
    """
    urls: list[str] = []

    def walk(item: Any) -> None:
        if isinstance(item, str):
            urls.extend(m.group(0) for m in _URL.finditer(item))
        elif isinstance(item, Mapping):
            for sub in item.values():
                walk(sub)
        elif isinstance(item, (list, tuple)):
            for sub in item:
                walk(sub)

    walk(values)
    import json

    pairs: dict[str, str] = {}
    for url in urls:
        clean = redact_url(url)
        if clean == url:
            continue
        for raw, redacted in (
            (url, clean),
            (json.dumps(url)[1:-1], json.dumps(clean)[1:-1]),
            (repr(url)[1:-1], repr(clean)[1:-1]),
            (quote(url, safe=""), quote(clean, safe="")),
        ):
            pairs[raw] = redacted
        for secret in url_secrets(url):  # the bare value, wherever else it was echoed
            if len(secret) >= MIN_BARE_SECRET:  # a short value would hit unrelated text
                pairs.setdefault(secret, REDACTED)
    return dict(sorted(pairs.items(), key=lambda kv: len(kv[0]), reverse=True))


__all__ = [
    "MIN_BARE_SECRET",
    "REDACTED",
    "REDACTED_USER",
    "SECRET_PARAMETER",
    "redact_url",
    "redact_urls_in",
    "secret_replacements",
    "url_secrets",
]
