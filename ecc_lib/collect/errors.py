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


class EndpointUnreachableError(EndpointError):
    """The endpoint cannot be reached: connection refused before any call succeeded, or ``N``
    consecutive connection errors or timeouts; the run stops (the store keeps what it holds)."""


class EndpointRedirectError(EndpointError):
    """The endpoint redirected to another origin (scheme, host, port); nothing was sent there and
    the run stops (every prompt, and the API key, would go to that host)."""


class EndpointResponseError(EndpointError):
    """A reply that cannot be used: over ``max_response_bytes`` once decoded, or content that is
    not text (a JSON object); not retried, recorded as a failed call."""


class EndpointConfigError(CollectError, ValueError):
    """The base URL or the API key cannot be used (no scheme, characters not allowed in a header);
    raised before anything is sent or written. Never shows the key."""


class StoreError(CollectError):
    """The collection store cannot be used: locked by another process, holds different queries,
    cannot be written (read-only, permission denied, disk full) or is a file, not a folder."""


class CollectionInterrupted(CollectError):
    """The run was stopped by a signal (SIGTERM); the manifest says "interrupted" and a rerun of the
    same command resumes.

    Parameters
    ----------
    message : str
        The error message.
    signal_number : int
        The signal that stopped the run.

    Attributes
    ----------
    signal_number : int
    """

    def __init__(self, message: str, *, signal_number: int) -> None:
        super().__init__(message)
        self.signal_number = signal_number

    @property
    def exit_status(self) -> int:
        """``128 + signal_number``: the shell's status of a process stopped by that signal."""
        return 128 + self.signal_number


__all__: list[str] = []
