"""Credentials out of recorded URLs: one :func:`redact_url` used wherever a URL is written down.

A URL may carry a secret in its user info (``https://user:password@host/``) or in a query
parameter (``http://host/v1?api_key=...``, ``?jwt=...``): a parameter named like a credential
(:data:`SECRET_PARAMETER`) or whose value looks like one (:func:`looks_like_credential`: a JSON Web
Token, a key with a known prefix such as ``sk-`` or ``ghp_``, a long random-looking string). Everything ecc_lib records (collection manifests and
records, ``metrics.json`` and its fragments, ``run.json``, executed notebooks, the report, error
messages) holds the URL with those values replaced by ``[REDACTED]``; the rest of the URL (scheme,
host, port, path, the other query parameters) is kept so that the record still says where the data
came from.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qsl, quote, unquote, urlsplit, urlunsplit

REDACTED = "[REDACTED]"
REDACTED_USER = "REDACTED"
"""Replaces user info (brackets there would read as an IPv6 host)."""

SECRET_PARAMETER = re.compile(
    r"(key|token|secret|passw|pwd|auth|credential|(?<![a-z])sig|jwt|session|cookie|bearer|ticket)",
    re.IGNORECASE,
)
"""Query parameter names whose values are credentials (``api_key``, ``access_token``,
``client_secret``, ``password``, ``X-Amz-Signature``, ``sig``, ``sigv``, ``jwt``, ``auth``, ...)."""

_JWT = re.compile(r"^eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*$")
_KEY_PREFIX = re.compile(
    r"^(?:(?:sk|pk|rk)[-_][A-Za-z0-9_-]{8,}"
    r"|(?:ghp|gho|ghu|ghs|ghr|github_pat)_[A-Za-z0-9_]{10,}"
    r"|xox[abprs]-[A-Za-z0-9-]{10,}|glpat-[A-Za-z0-9_-]{10,}|hf_[A-Za-z0-9]{16,}"
    r"|AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{20,}|ya29\.[0-9A-Za-z_-]{10,})"
)
_TOKEN_CHARS = re.compile(r"^[A-Za-z0-9_\-+/=.~]+$")
MIN_RANDOM_SECRET = 20
"""Shortest value taken for a credential because it looks random (upper and lower case letters and
digits); hexadecimal values count from 32 characters."""

MIN_BARE_SECRET = 8
"""Shortest credential value replaced on its own (outside its URL) when scrubbing a file."""

_URL = re.compile(r"\b[a-zA-Z][a-zA-Z0-9+.-]*://[^\s\"'<>`]+")


def looks_like_credential(value: str) -> bool:
    """Whether a query parameter's value looks like a credential whatever its name.

    A JSON Web Token (``eyJ...``), a key with a known prefix (``sk-``, ``ghp_``, ``xoxb-``,
    ``AKIA``, ``AIza``, ``hf_``, ...), a random-looking string of :data:`MIN_RANDOM_SECRET` or more
    token characters mixing upper and lower case letters and digits, or 32 or more hexadecimal
    digits. Words, numbers, dates and version strings (``2024-06-01``) are not.

    Parameters
    ----------
    value : str
        The value (percent-encoded or not).

    Returns
    -------
    bool

    Examples
    --------
    >>> looks_like_credential("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl")
    True
    >>> looks_like_credential("2024-06-01"), looks_like_credential("gpt-4o-mini")
    (False, False)
    """
    text = unquote(str(value)).strip()
    if not text:
        return False
    if _JWT.match(text) or _KEY_PREFIX.match(text):
        return True
    if len(text) >= MIN_RANDOM_SECRET and _TOKEN_CHARS.match(text):
        kinds = (
            any(c.islower() for c in text),
            any(c.isupper() for c in text),
            any(c.isdigit() for c in text),
        )
        if all(kinds):
            return True
    return len(text) >= 32 and re.fullmatch(r"[0-9a-fA-F]+", text) is not None


DIGEST_PARAMETER = re.compile(r"(rev|commit|sha|hash|digest|etag|checksum|version)", re.IGNORECASE)
"""Query parameter names whose values are digests or versions (``revision=<git sha>``): kept, unless
the name also reads as a credential (:data:`SECRET_PARAMETER`)."""


def _is_secret(name: str, value: str) -> bool:
    """Whether a query parameter ``name=value`` carries a credential."""
    if not value:
        return False
    if SECRET_PARAMETER.search(name):
        return True
    return not DIGEST_PARAMETER.search(name) and looks_like_credential(value)


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
        if _is_secret(name, value):
            found.append(value)
    for raw in parts.query.split("&"):
        name, _, value = raw.partition("=")
        if _is_secret(name, value):
            found.append(value)
    return sorted({v for v in found if v}, key=len, reverse=True)


def redact_url(url: str) -> str:
    """``url`` with its credentials replaced by ``[REDACTED]``.

    User info becomes ``REDACTED@``; the value of each query parameter named like a credential
    (see :data:`SECRET_PARAMETER`) or whose value looks like one (:func:`looks_like_credential`)
    becomes ``[REDACTED]``; the rest of the URL is kept as given.
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
    changed = False
    if "@" in netloc:
        netloc = f"{REDACTED_USER}@{netloc.rsplit('@', 1)[1]}"
        changed = True
    query = parts.query
    if query:
        pieces = []
        for raw in query.split("&"):
            name, equals, value = raw.partition("=")
            if _is_secret(name, value):
                value = REDACTED
                changed = True
            pieces.append(f"{name}{equals}{value}")
        query = "&".join(pieces)
    fragment = parts.fragment
    if fragment and SECRET_PARAMETER.search(fragment):  # e.g. #access_token=... (OAuth)
        fragment = REDACTED
        changed = True
    if not changed:  # nothing to hide: the text as given (urlunsplit would drop a bare "?")
        return text
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


__all__: list[str] = []
