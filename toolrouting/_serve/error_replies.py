"""The one table from the error tree to OpenAI's error shape (which the Responses API shares,
and the Messages front rewrites into Anthropic's) and an HTTP status.

A request the server cannot serve is the client's to fix (4xx, with the field it names), and so
is a prompt past the model's context (:class:`ContextLengthError`): 400 in the words each API's
own server uses, OpenAI's ``context_length_exceeded`` ("This model's maximum context length is M
tokens. However, your messages resulted in N tokens. ...") and Anthropic's "prompt is too long:
N tokens > M maximum" (:attr:`ErrorReply.messages_text`). A backend that failed is upstream's
(502, or 504 when it did not answer in time), with the error tree's message; a path or a method
no route takes is a 404 or a 405. Nothing reaches a client as a traceback, and no key as itself
(the core's ``redacted``).

A backend's failure also says whether the same request is worth sending again, in the headers
the openai SDK reads before it retries (it retries every 5xx unless told not to): one the error
tree calls retryable (unreachable, busy, past its timeout) carries ``Retry-After``, the
backend's own wait or ``SERVE_UPSTREAM_RETRY_AFTER``; any other (a reply that is not a valid
action, a schema the server ignored, a grammar refused) carries ``x-should-retry: false``, as
the same request would fail the same way. A full queue's 429 carries ``Retry-After`` too.

The error body is typed as written (:class:`ErrorBody`, its :class:`ErrorObject`): the one error
shape every front starts from, shared here rather than kept by one front.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Literal, TypedDict

from .._errors import (
    BackendError,
    BackendTimeout,
    CatalogueError,
    ChatRequestError,
    ContextLengthError,
    GrammarError,
    ToolRoutingError,
)
from .._limits import SERVE_UPSTREAM_RETRY_AFTER
from .._redact import redacted

__all__ = [
    "ErrorBody",
    "ErrorObject",
    "ErrorReply",
    "ErrorType",
    "error_body",
    "error_reply",
    "http_error_reply",
    "openai_error_body",
]

#: The ``type`` of an error object: the request's fault, a full queue's, the backend's, or the server's.
ErrorType = Literal["invalid_request_error", "rate_limit_error", "upstream_error", "server_error"]


class ErrorObject(TypedDict):
    """OpenAI's error object: what went wrong, its type, the field it names and its code."""

    message: str
    type: ErrorType
    param: str | None
    code: str | None


class ErrorBody(TypedDict):
    """OpenAI's error body (the Responses API's too): ``{"error": {...}}``."""

    error: ErrorObject


#: The code of an HTTP error no route answers, by its status.
_HTTP_CODES = {404: "not_found", 405: "method_not_allowed"}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ErrorReply:
    """What an error is answered with: the status, OpenAI's error body, and headers."""

    status: int
    body: ErrorBody
    headers: dict[str, str]
    messages_text: str | None = None
    """The message the Messages front gives in place of the body's, where Anthropic's own server
    words the error otherwise; ``None``: the body's, headed by the field it names."""


def error_body(message: str, type: ErrorType, param: str | None, code: str | None) -> ErrorBody:
    """OpenAI's error object."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def openai_error_body(reply: ErrorReply) -> ErrorBody:
    """The error body in OpenAI's shape, the error writer of the fronts that speak it (chat
    completions, Responses)."""
    return reply.body


def error_reply(error: BaseException, secrets: Sequence[str] = ()) -> ErrorReply:
    """The answer to ``error``; ``secrets`` (API keys) never appear in its message."""
    message = redacted(str(error), secrets)
    headers: dict[str, str] = {}
    if isinstance(error, ChatRequestError):
        kind: ErrorType = (
            "rate_limit_error"
            if error.status == 429
            else "server_error"
            if error.status >= 500  # a stopping server's 503: no fault of the request
            else "invalid_request_error"
        )
        if error.retry_after is not None:
            headers["Retry-After"] = str(int(error.retry_after))
        return ErrorReply(
            status=error.status, body=error_body(message, kind, error.param, error.code), headers=headers
        )
    if isinstance(error, CatalogueError):
        at = "tools" if error.index is None else f"tools[{error.index}]"  # None: the catalogue as a whole
        body = error_body(message, "invalid_request_error", at, "invalid_tools")
        return ErrorReply(status=400, body=body, headers=headers)
    if isinstance(error, ContextLengthError):
        openai, anthropic = _past_context(error.prompt_tokens, error.n_ctx)
        body = error_body(openai, "invalid_request_error", None, "context_length_exceeded")
        return ErrorReply(status=400, body=body, headers=_retry_headers(error), messages_text=anthropic)
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


def _past_context(prompt_tokens: int | None, n_ctx: int | None) -> tuple[str, str]:
    """OpenAI's words and Anthropic's for a prompt of ``prompt_tokens`` past a context of ``n_ctx``
    (each ``None`` where the backend's server did not say)."""
    reduce = "Please reduce the length of the messages."
    if prompt_tokens is not None and n_ctx is not None:
        return (
            f"This model's maximum context length is {n_ctx} tokens. However, your messages resulted in "
            f"{prompt_tokens} tokens. {reduce}",
            f"prompt is too long: {prompt_tokens} tokens > {n_ctx} maximum",
        )
    if n_ctx is not None:
        return (
            f"This model's maximum context length is {n_ctx} tokens, and your messages are longer. {reduce}",
            f"prompt is too long: more tokens than the {n_ctx} maximum",
        )
    if prompt_tokens is not None:
        return (
            f"Your messages resulted in {prompt_tokens} tokens, more than this model's maximum context "
            f"length. {reduce}",
            f"prompt is too long: {prompt_tokens} tokens > the maximum",
        )
    longer = f"Your messages are longer than this model's maximum context length. {reduce}"
    return longer, "prompt is too long"


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
