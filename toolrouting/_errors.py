"""The one error tree of toolrouting.

ToolRoutingError
├── CatalogueError (also ValueError)   a tool catalogue that cannot become a route schema
├── BackendError                       a request to a model failed
│   ├── BackendConnectError            the server could not be reached
│   ├── BackendTimeout                 the server did not answer in time
│   ├── BackendHTTPError               the server answered with an error status
│   └── BackendResponseError           the answer is not a usable chat completion
└── RunError                           a routing run could not finish
"""

from __future__ import annotations

__all__ = [
    "BackendConnectError",
    "BackendError",
    "BackendHTTPError",
    "BackendResponseError",
    "BackendTimeout",
    "CatalogueError",
    "RunError",
    "SchemaIgnoredError",
    "ToolRoutingError",
]


class ToolRoutingError(Exception):
    """Base class of every error toolrouting raises on purpose."""


class CatalogueError(ToolRoutingError, ValueError):
    """A tool catalogue entry that cannot be offered; names the 0-based entry and why."""

    def __init__(self, index: int, reason: str) -> None:
        self.index = index
        self.reason = reason
        super().__init__(f"tool catalogue entry {index}: {reason}")

    def __reduce__(self) -> tuple[type[CatalogueError], tuple[int, str]]:
        return (type(self), (self.index, self.reason))


class BackendError(ToolRoutingError):
    """A request to a model backend failed.

    ``retryable`` says whether the same request may succeed later (a refused connection,
    a timeout, 429 or 5xx); ``retry_after`` is the server's ``Retry-After`` in seconds.
    """

    retryable: bool = False
    retry_after: float | None = None


class BackendConnectError(BackendError):
    """The server could not be reached (refused, reset, closed mid-response)."""

    retryable = True


class BackendTimeout(BackendError):
    """The server did not answer within the timeout."""

    retryable = True


class BackendHTTPError(BackendError):
    """The server answered with an HTTP error status."""

    def __init__(
        self, status: int, url: str, body: str, message: str, *, retry_after: float | None = None
    ) -> None:
        self.status = status
        self.url = url
        self.body = body
        self.retryable = status in (408, 429) or status >= 500
        self.retry_after = retry_after
        super().__init__(message)


class BackendResponseError(BackendError):
    """The server's answer is not a chat completion this backend can read."""


class SchemaIgnoredError(BackendResponseError):
    """A schema was sent and the reply is not JSON at all: the server did not constrain it."""


class RunError(ToolRoutingError):
    """A routing run stopped before the model handed off."""
