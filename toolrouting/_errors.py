"""The one error tree of toolrouting.

ToolRoutingError
├── CatalogueError (also ValueError)   a tool catalogue that cannot become a route schema
├── BackendError                       a request to a model failed
│   ├── BackendConnectError            the server could not be reached
│   ├── BackendTimeout                 the server did not answer in time
│   ├── BackendHTTPError               the server answered with an error status
│   ├── BackendResponseError           the answer is not a usable chat completion
│   │   └── SchemaIgnoredError         a schema was sent and prose came back
│   ├── ContextLengthError             the prompt does not fit the model's context
│   ├── GrammarError (also ValueError) a schema that cannot become a grammar, or a grammar a server refused
│   └── ModelLoadError                 the embedded model or llama-cpp-python is missing or unreadable
├── MemoryStoreError                   a memory database or notes folder that cannot be used
├── ToolServerError                    an MCP server that cannot be started, reached or listed
├── QuestionsFileError (also ValueError) a batch's questions file with a line that is not a question
├── ChatRequestError (also ValueError) a request toolrouting serve cannot serve, on any front
└── RunError                           a routing run could not finish
    ├── RepairsExhaustedError          the model's reply stayed invalid after its repairs
    ├── RetriesExhaustedError          a backend kept failing past the retry budget
    └── TranscriptError                a transcript that cannot be resumed
"""

from __future__ import annotations

import functools
from collections.abc import Callable

__all__ = [
    "BackendConnectError",
    "BackendError",
    "BackendHTTPError",
    "BackendResponseError",
    "BackendTimeout",
    "CatalogueError",
    "ChatRequestError",
    "ContextLengthError",
    "GrammarError",
    "MemoryStoreError",
    "ModelLoadError",
    "QuestionsFileError",
    "RepairsExhaustedError",
    "RetriesExhaustedError",
    "RunError",
    "SchemaIgnoredError",
    "ToolRoutingError",
    "ToolServerError",
    "TranscriptError",
]


class ToolRoutingError(Exception):
    """Base class of every error toolrouting raises on purpose."""


class CatalogueError(ToolRoutingError, ValueError):
    """A tool catalogue entry that cannot be offered; names the 0-based entry and why.

    ``index`` is ``None`` when the catalogue as a whole is at fault (a dict or a generator
    where a list of declarations belongs).
    """

    def __init__(self, index: int | None, reason: str) -> None:
        self.index = index
        self.reason = reason
        super().__init__(f"tool catalogue{'' if index is None else f' entry {index}'}: {reason}")

    def __reduce__(self) -> tuple[type[CatalogueError], tuple[int | None, str]]:
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

    def __reduce__(
        self,
    ) -> tuple[type[BackendHTTPError], tuple[int, str, str, str], dict[str, float | None]]:
        return (type(self), (self.status, self.url, self.body, str(self)), {"retry_after": self.retry_after})


class BackendResponseError(BackendError):
    """The server's answer is not a chat completion this backend can read."""


class SchemaIgnoredError(BackendResponseError):
    """A schema was sent and the reply is not JSON at all: the server did not constrain it."""


class ContextLengthError(BackendError):
    """A prompt that does not fit the model's context: no token of a reply would.

    ``prompt_tokens`` is the prompt's length in tokens and ``n_ctx`` the context's, each ``None``
    where a server did not say. Not retryable: the same prompt never fits; a larger context or a
    shorter conversation does. ``toolrouting serve`` answers it 400, in each API's own words.
    """

    def __init__(self, message: str, *, prompt_tokens: int | None, n_ctx: int | None) -> None:
        self.prompt_tokens = prompt_tokens
        self.n_ctx = n_ctx
        super().__init__(message)

    def __reduce__(self) -> tuple[Callable[..., ContextLengthError], tuple[str]]:
        rebuild = functools.partial(type(self), prompt_tokens=self.prompt_tokens, n_ctx=self.n_ctx)
        return (rebuild, (str(self),))


class GrammarError(BackendError, ValueError):
    """A request's JSON schema that cannot become a grammar (llama.cpp's converter or ours), or a
    grammar the server refused.

    ``pointer`` is the JSON pointer of the sub-schema it refused, ``""`` when unknown.
    """

    def __init__(self, reason: str, pointer: str = "") -> None:
        self.reason = reason
        self.pointer = pointer
        super().__init__(reason)

    def __reduce__(self) -> tuple[type[GrammarError], tuple[str, str]]:
        return (type(self), (self.reason, self.pointer))


class ModelLoadError(BackendError):
    """The embedded backend cannot start: llama-cpp-python or the model file is missing or unreadable,
    or the default model could not be fetched (``toolrouting fetch-model``)."""


class RunError(ToolRoutingError):
    """A routing run stopped before the model handed off."""


class RepairsExhaustedError(RunError):
    """The model's reply was refused, and still refused after the repairs the run allows.

    ``round`` is the round it happened in, ``problem`` what was wrong with the last reply,
    ``truncated`` whether that reply was cut off at the completion cap: then the backend did
    its job and the cap is what to raise, and the message says so rather than blaming it.
    """

    def __init__(self, round: int, problem: str, max_repairs: int, *, truncated: bool = False) -> None:
        self.round = round
        self.problem = problem
        self.max_repairs = max_repairs
        self.truncated = truncated
        advice = (
            "raise the routing completion cap (cap=) or max_repairs"
            if truncated
            else "check that the backend enforces the route schema, or raise max_repairs"
        )
        super().__init__(
            f"round {round}: the reply is still not a valid action after {max_repairs} "
            f"repair{'s' if max_repairs != 1 else ''} (max_repairs): {problem}; {advice}"
        )

    def __reduce__(self) -> tuple[Callable[..., RepairsExhaustedError], tuple[int, str, int]]:
        rebuild = functools.partial(type(self), truncated=self.truncated)
        return (rebuild, (self.round, self.problem, self.max_repairs))


class RetriesExhaustedError(RunError):
    """A request kept failing with retryable backend errors; the last one is ``__cause__``."""

    def __init__(self, round: int, attempts: int, reason: str) -> None:
        self.round = round
        self.attempts = attempts
        self.reason = reason
        super().__init__(f"round {round}: the backend request failed {attempts} times: {reason}")

    def __reduce__(self) -> tuple[type[RetriesExhaustedError], tuple[int, int, str]]:
        return (type(self), (self.round, self.attempts, self.reason))


class TranscriptError(RunError):
    """A transcript file that cannot be read back or resumed; ``line`` is 1-based, 0 for the whole file."""

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = f"{path}, line {line}" if line else path
        super().__init__(f"transcript {where}: {reason}")

    def __reduce__(self) -> tuple[type[TranscriptError], tuple[str, int, str]]:
        return (type(self), (self.path, self.line, self.reason))


class MemoryStoreError(ToolRoutingError):
    """A memory database or a folder of notes that the demo memory store cannot use."""


class ToolServerError(ToolRoutingError):
    """An MCP tool server that cannot be started, reached, or listed, or the SDK to reach it is missing.

    ``server`` names the server (its configured name, or its command or URL). A server that
    fails once a run is under way is not raised: its calls become error results the model reads.
    """

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"MCP server {server}: {reason}")

    def __reduce__(self) -> tuple[type[ToolServerError], tuple[str, str]]:
        return (type(self), (self.server, self.reason))


class QuestionsFileError(ToolRoutingError, ValueError):
    """A batch's questions file that cannot be read, or a line of it that is not a question.

    ``line`` is 1-based, 0 for the whole file; ``reason`` says what is wrong and how to fix it.
    """

    def __init__(self, path: str, line: int, reason: str) -> None:
        self.path = path
        self.line = line
        self.reason = reason
        where = f"{path}, line {line}" if line else path
        super().__init__(f"questions file {where}: {reason}")

    def __reduce__(self) -> tuple[type[QuestionsFileError], tuple[str, int, str]]:
        return (type(self), (self.path, self.line, self.reason))


class ChatRequestError(ToolRoutingError, ValueError):
    """A request to ``toolrouting serve`` that cannot be served as sent.

    ``param`` is where in the request body the problem is (``messages[2].role``), ``None`` for the
    whole request; ``status`` the HTTP status it is answered with (400, 413, 429, ...); ``code``
    a short machine-readable name; ``retry_after`` the seconds a busy server asks a client to wait.
    """

    def __init__(
        self,
        reason: str,
        param: str | None = None,
        *,
        status: int = 400,
        code: str = "invalid_request",
        retry_after: float | None = None,
    ) -> None:
        self.reason = reason
        self.param = param
        self.status = status
        self.code = code
        self.retry_after = retry_after
        super().__init__(f"{param}: {reason}" if param else reason)

    def __reduce__(self) -> tuple[type[ChatRequestError], tuple[str, str | None], dict[str, object]]:
        state = {"status": self.status, "code": self.code, "retry_after": self.retry_after}
        return (type(self), (self.reason, self.param), state)
