"""Errors raised by live collection.

Every message names the endpoint (base URL without credentials) and, for a call, the model, so that a
user running against several servers sees at once which one failed.
"""

from __future__ import annotations


class CollectError(RuntimeError):
    """Base class of every collection error."""


class EndpointError(CollectError):
    """A chat-completions call failed for good (after retries, or with a status that is not retried).

    Parameters
    ----------
    message : str
        The error message.
    status : int or None
        HTTP status of the last attempt, ``None`` for a timeout or connection error.
    url : str
        The URL called (no credentials).
    model : str
        The model asked for.
    attempts : int, default 1
        How many attempts were made.

    Attributes
    ----------
    status, url, model, attempts
        The constructor arguments.
    """

    def __init__(
        self, message: str, *, status: int | None, url: str, model: str, attempts: int = 1
    ) -> None:
        super().__init__(message)
        self.status = status
        self.url = url
        self.model = model
        self.attempts = attempts


class EndpointAuthError(EndpointError):
    """401 or 403: the API key is missing, wrong or not allowed; the run stops."""


class EndpointNotFoundError(EndpointError):
    """404: wrong base URL or unknown model; the run stops."""


class StoreError(CollectError):
    """The collection store is inconsistent with the request (locked, or holds different queries)."""
