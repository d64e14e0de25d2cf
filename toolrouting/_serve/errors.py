"""The one table from the error tree to OpenAI's error shape (which the Responses API shares,
and the Messages front rewrites into Anthropic's) and an HTTP status.

A request the server cannot serve is the client's to fix (4xx, with the field it names); a
backend that failed is upstream's (502, or 504 when it did not answer in time), with the error
tree's message; a path or a method no route takes is a 404 or a 405. Nothing reaches a client
as a traceback, and no key as itself (the core's ``redacted``).

A backend's failure also says whether the same request is worth sending again, in the headers
the openai SDK reads before it retries (it retries every 5xx unless told not to): one the error
tree calls retryable (unreachable, busy, past its timeout) carries ``Retry-After``, the
backend's own wait or ``SERVE_UPSTREAM_RETRY_AFTER``; any other (a reply that is not a valid
action, a schema the server ignored, a grammar refused) carries ``x-should-retry: false``, as
the same request would fail the same way. A full queue's 429 carries ``Retry-After`` too.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from .._errors import (
    BackendError,
    BackendTimeout,
    CatalogueError,
    ChatRequestError,
    GrammarError,
    ToolRoutingError,
)
from .._redact import redacted
from .limits import SERVE_UPSTREAM_RETRY_AFTER

__all__ = ["ErrorReply", "error_body", "error_reply", "http_error_reply"]

#: The code of an HTTP error no route answers, by its status.
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ErrorReply:
    """What an error is answered with: the status, OpenAI's error body, and headers."""

    status: int
    body: dict[str, Any]
    headers: dict[str, str]


def error_body(message: str, type: str, param: str | None, code: str | None) -> dict[str, Any]:
    """OpenAI's error object."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def error_reply(error: BaseException, secrets: Sequence[str] = ()) -> ErrorReply:
    """The answer to ``error``; ``secrets`` (API keys) never appear in its message."""
    message = redacted(str(error), secrets)
    headers: dict[str, str] = {}
    if isinstance(error, ChatRequestError):
        kind = "rate_limit_error" if error.status == 429 else "invalid_request_error"
        if error.retry_after is not None:
            headers["Retry-After"] = str(int(error.retry_after))
        return ErrorReply(
            status=error.status, body=error_body(message, kind, error.param, error.code), headers=headers
        )
    if isinstance(error, CatalogueError):
        at = "tools" if error.index is None else f"tools[{error.index}]"  # None: the catalogue as a whole
        body = error_body(message, "invalid_request_error", at, "invalid_tools")
        return ErrorReply(status=400, body=body, headers=headers)
    if isinstance(error, BackendError):
        headers = _retry_headers(error)
    if isinstance(error, GrammarError):
        # The grammar is the catalogue's: a tool's parameters that no compiler here can express.
        body = error_body(message, "invalid_request_error", "tools", "grammar_refused")
        return ErrorReply(status=400, body=body, headers=headers)
    if isinstance(error, BackendTimeout):
        return ErrorReply(
            status=504, body=error_body(message, "upstream_error", None, "upstream_timeout"), headers=headers
        )
    if isinstance(error, BackendError):
        code = type(error).__name__
        return ErrorReply(status=502, body=error_body(message, "upstream_error", None, code), headers=headers)
    if isinstance(error, ToolRoutingError):
        code = type(error).__name__
        return ErrorReply(status=502, body=error_body(message, "server_error", None, code), headers=headers)
    # A fault of the server's own: named, never shown as a traceback.
    message = f"the server failed on this request ({type(error).__name__})"
    body = error_body(message, "server_error", None, "internal_error")
    return ErrorReply(status=500, body=body, headers={})


def _retry_headers(error: BackendError) -> dict[str, str]:
    """Whether a client should send the same request again, and when (whole seconds, as
    ``Retry-After`` takes them)."""
    if not error.retryable:
        return {"x-should-retry": "false"}
    wait = SERVE_UPSTREAM_RETRY_AFTER if error.retry_after is None else error.retry_after
    return {"Retry-After": str(max(0, math.ceil(wait)))}


def http_error_reply(
    where: str, status: int, detail: str, headers: Mapping[str, str] | None = None
) -> ErrorReply:
    """The answer to a request no route takes (``where`` is its method and path), with the
    status and headers the router gave it (a 405's ``Allow``)."""
    code = _HTTP_CODES.get(status, "invalid_request")
    body = error_body(f"{where}: {detail}", "invalid_request_error", None, code)
    return ErrorReply(status=status, body=body, headers=dict(headers or {}))
