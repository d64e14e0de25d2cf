"""What an HTTP backend knows besides its I/O: where it posts, what it sends, how it reads the answer.

:class:`~toolrouting.OpenAICompatible` and :class:`~toolrouting.AsyncOpenAICompatible` differ only
in how they wait for bytes. Everything they say about a request and its answer (the body, the
limits on size and time, every error and its message) is written here once, so the two raise
the same errors with the same words.
"""

from __future__ import annotations

import dataclasses
import datetime
import email.utils
import json
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from .._errors import (
    BackendConnectError,
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    BackendTimeout,
    GrammarError,
    SchemaIgnoredError,
)
from .._json import quoted
from .._limits import MAX_BODY_QUOTE, MAX_REPLY_QUOTE, MAX_RESPONSE_BYTES, SHOWN_VALUE_CHARS
from .._settings import Settings
from .base import Completion, Message, is_truncated, wire_text
from .context_refusals import context_refusal
from .dialects import DIALECTS, Dialect, WireReply, WireShapeError, get_dialect

__all__ = ["TRANSPORT_ERRORS", "Endpoint", "Intake", "check_size", "endpoint_url"]

#: What httpx raises for a request that went wrong on the way: each becomes a :class:`BackendError`.
TRANSPORT_ERRORS = (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, httpx.CookieConflict)

#: The characters a JSON text may open with, for a schema whose top-level type is not pinned.
_JSON_OPENERS: tuple[str, ...] = (*'{["-0123456789', "true", "false", "null")
_OPENER_BY_TYPE: dict[object, tuple[str, ...]] = {"object": ("{",), "array": ("[",), "string": ('"',)}


@dataclasses.dataclass(frozen=True, kw_only=True)
class Endpoint:
    """One server endpoint as a backend talks to it: checked once, shared by its clones' requests."""

    base_url: str
    dialect: Dialect
    url: str
    """The endpoint requests are posted to."""
    model: str | None
    api_key: str | None
    timeout: float

    @classmethod
    def checked(
        cls, base_url: str, *, model: str | None, api_key: str | None, dialect: str, timeout: float
    ) -> Endpoint:
        """The endpoint, or a ValueError (TypeError for a base_url that is no string) naming the fix."""
        wire = get_dialect(dialect)
        url = endpoint_url(base_url, wire.path)
        if wire.requires_model and not model:
            raise ValueError(f"the {dialect} dialect needs model=, the name of a model the server has")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            raise ValueError(f"timeout is a positive number of seconds, not {timeout!r}")
        if api_key is not None and not (
            isinstance(api_key, str) and api_key.isascii() and api_key.isprintable()
        ):
            raise ValueError("api_key goes in an HTTP header, so it must be printable ASCII text")
        return cls(
            base_url=base_url, dialect=wire, url=url, model=model, api_key=api_key, timeout=float(timeout)
        )

    def request(
        self, messages: Sequence[Message], settings: Settings, extra: Mapping[str, Any] | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """The request's body and headers; ``extra`` fields (a stream's) go over the dialect's."""
        body = self.dialect.build(messages, settings, self.model)
        body.update(extra or {})
        return self.encoded(body)

    def encoded(self, body: Mapping[str, Any]) -> tuple[bytes, dict[str, str]]:
        """A request body as it goes on the wire, with its headers."""
        try:
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as error:  # a NaN setting, a schema holding a set, ...
            raise BackendError(
                f"the request to {self.url} cannot be written as JSON ({error}); check the settings "
                "and the schema for values JSON cannot carry"
            ) from None
        headers = {"Content-Type": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        # A lone surrogate in a message cannot be UTF-8: sent as U+FFFD, by the one wire rule.
        return wire_text(content).encode("utf-8"), headers

    def closed_error(self) -> BackendError:
        return BackendError(
            "this backend's HTTP client is closed: the backend that created it (not a clone) "
            "or the caller that passed http_client closed it; make a new backend"
        )

    def intake(self) -> Intake:
        """The bounds on the answer about to be read: its size and, from now, its time."""
        return Intake(self)

    def transport_error(self, error: Exception) -> BackendError:
        """What one of :data:`TRANSPORT_ERRORS` means for this request."""
        if isinstance(error, httpx.TimeoutException):
            return BackendTimeout(
                f"{self.url} did not answer within the timeout of {self.timeout:g} s "
                f"({type(error).__name__}); a long generation needs a larger timeout= or a lower max_tokens"
            )
        said = _said(error)
        if isinstance(error, httpx.ConnectError):
            return BackendConnectError(
                f"could not connect to {self.url} ({said}); is the server running and listening there?"
            )
        if isinstance(error, httpx.RemoteProtocolError):
            return BackendConnectError(
                f"{self.url} closed the connection before a complete response ({said}); "
                "the server may have crashed or restarted"
            )
        if isinstance(error, httpx.NetworkError):
            return BackendConnectError(
                f"the connection to {self.url} broke ({type(error).__name__}: {said}); "
                "the server may have reset it"
            )
        return BackendError(f"the request to {self.url} failed: {type(error).__name__}: {said}")

    def answered(self, response: httpx.Response, received: bytes) -> httpx.Response:
        """``response`` with its body ``received``: decoded, so it no longer has an encoding."""
        kept = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-encoding"]
        return httpx.Response(
            response.status_code,
            headers=kept,
            content=received,
            request=response.request,
            extensions=response.extensions,
        )

    def completion(self, response: httpx.Response, settings: Settings) -> Completion:
        """The whole answer read as the dialect's completion; every failure is a :class:`BackendError`."""
        if not response.is_success:
            raise self.http_error(response, settings)
        try:
            body = json.loads(response.content)
        except (ValueError, RecursionError):
            raise BackendResponseError(
                f"{self.url} answered HTTP {response.status_code} with a body that is not JSON: "
                f"{quoted(response.text, MAX_BODY_QUOTE)}; check that base_url "
                "points at the server's API, not at a web page or a proxy's error page"
            ) from None
        return self.finished(self.reply(body, f"answered HTTP {response.status_code}"), body, settings)

    def reply(self, body: Any, what: str) -> WireReply:
        """``body`` read by the dialect; ``what`` says what the server did, for the error."""
        try:
            return self.dialect.parse(body)
        except WireShapeError as error:
            raise BackendResponseError(
                f"{self.url} {what} but {error}; check that dialect={self.dialect.name!r} matches the "
                f"server (known: {', '.join(DIALECTS)})"
            ) from None

    def finished(self, reply: WireReply, raw: Any, settings: Settings) -> Completion:
        """The :class:`Completion` of a reply read whole; a schema the server ignored is refused."""
        completion = Completion(
            text=reply.text,
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            truncated=is_truncated(reply.finish_reason, reply.usage.completion_tokens, settings.max_tokens),
            raw=raw,
        )
        if settings.json_schema is not None:
            self._check_constrained(completion, settings)
        return completion

    def http_error(self, response: httpx.Response, settings: Settings) -> BackendError:
        """The error of an error answer: a :class:`GrammarError` when it refuses our grammar, a
        :class:`ContextLengthError` when the prompt is too long for the server's context."""
        status = response.status_code
        text = response.text
        refused = context_refusal(self.url, status, text)
        if refused is not None:
            return refused
        if self.dialect.sends_grammar(settings) and status in (400, 422, 500) and _about_grammar(text):
            return GrammarError(
                f"POST {self.url} refused the grammar toolrouting compiled from the schema (HTTP {status}: "
                f"{quoted(text, MAX_BODY_QUOTE)}); Settings(grammar='server') sends the schema for the "
                "server to convert instead, and preflight(schema, 'toolrouting') lists what our grammar "
                "changes"
            )
        retry_after = _retry_after(response.headers.get("Retry-After"))
        message = (
            f"POST {self.url} answered HTTP {status} {response.reason_phrase[:SHOWN_VALUE_CHARS]}: "
            f"{quoted(text, MAX_BODY_QUOTE)}; {self._status_hint(response, retry_after)}"
        )
        if settings.json_schema is not None and status in (400, 422, 500):
            message += (
                f"; if it objects to the schema or response_format, the server may want another "
                f"dialect than {self.dialect.name!r} (known: {', '.join(DIALECTS)})"
            )
        return BackendHTTPError(status, self.url, text[:MAX_BODY_QUOTE], message, retry_after=retry_after)

    def _status_hint(self, response: httpx.Response, retry_after: float | None) -> str:
        status = response.status_code
        if status in (401, 403):
            return "check api_key"
        if status == 404:
            return f"check base_url and model: the {self.dialect.name} dialect posts to {self.dialect.path}"
        if status in (408, 429) or status >= 500:
            wait = f" after {retry_after:g} s (Retry-After)" if retry_after is not None else " later"
            return f"the same request may succeed{wait}"
        if status < 400:
            location = quoted(response.headers.get("Location", ""), MAX_BODY_QUOTE)
            return f"the server redirects to {location}: use that as base_url"
        return "the server refused the request"

    def _check_constrained(self, completion: Completion, settings: Settings) -> None:
        """A reply that cannot even open the JSON the schema asks for was never constrained."""
        schema: Mapping[str, Any] = settings.json_schema or {}
        trimmed = completion.text.strip()
        if not trimmed:
            if completion.truncated:
                return  # the cap cut a constrained reply before it began: truncated says so
            problem = "the reply is empty"
        elif trimmed.startswith(_openers(schema)):
            return
        else:
            problem = f"the reply is not JSON: {quoted(trimmed, MAX_REPLY_QUOTE)}"
        kobold = (
            " KoboldCpp also generates unconstrained when it cannot convert a schema to a grammar"
            " (its log says 'JSON to GBNF failed')."
            if self.dialect.name == "koboldcpp"
            else ""
        )
        raise SchemaIgnoredError(
            f"the server may have ignored the schema: it was sent as {self.dialect.schema_field(settings)} "
            f"(dialect {self.dialect.name!r}) and {problem}. Check that the dialect matches the server "
            f"(known: {', '.join(DIALECTS)}).{kobold}"
        )


class Intake:
    """The bytes of one answer as they arrive, held to ``MAX_RESPONSE_BYTES`` and to the timeout.

    httpx's timeout bounds each read, so a server dribbling its answer a byte at a time would
    hold the request for ever; the deadline bounds the whole answer as well.
    """

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._deadline = time.monotonic() + endpoint.timeout
        self.size = 0

    def take(self, chunk: bytes) -> bytes:
        """``chunk``, counted; a :class:`BackendError` once the answer is too large or too late."""
        self.size += len(chunk)
        url = self._endpoint.url
        check_size(self.size, url, "MAX_RESPONSE_BYTES", MAX_RESPONSE_BYTES, "a chat completion")
        if time.monotonic() > self._deadline:
            raise BackendTimeout(
                f"{url} did not finish its answer within the timeout of "
                f"{self._endpoint.timeout:g} s (it was still arriving, {self.size} bytes so far); "
                "a long generation needs a larger timeout= or a lower max_tokens"
            )
        return chunk


def _said(error: BaseException) -> str:
    """What an error says; on asyncio, httpx's own is often empty and the socket's lies beneath it."""
    cause: BaseException | None = error
    while cause is not None:
        if str(cause):
            return str(cause)
        cause = cause.__cause__ or cause.__context__
    return "no detail given"


def _about_grammar(text: str) -> bool:
    """Whether an error answer is about the grammar (llama-server: "Failed to initialize samplers")."""
    lowered = text[:MAX_BODY_QUOTE].lower()
    return "grammar" in lowered or "sampler" in lowered


def _openers(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """What a reply constrained by ``schema`` can begin with: by its one type, else any JSON value."""
    kind = schema.get("type")
    return _OPENER_BY_TYPE.get(kind, _JSON_OPENERS) if isinstance(kind, str) else _JSON_OPENERS


def check_size(size: int, url: str, limit_name: str, limit: int, expected: str) -> None:
    """Refuse an answer past ``limit`` bytes: reading on would only fill memory."""
    if size > limit:
        raise BackendResponseError(
            f"{url} answered more than {limit_name} ({limit:,} bytes) and was left unread; {expected} is "
            "far smaller, so check that base_url points at the model server"
        )


def endpoint_url(base_url: str, path: str) -> str:
    """``path`` on the server at ``base_url``: its root, an OpenAI-style ``/v1`` root, or the endpoint.

    ``path`` is absolute (``/v1/chat/completions``, ``/api/chat``); its first segment counts as
    a root too (``/api`` for Ollama). A ValueError says what a usable ``base_url`` looks like.
    """
    if not isinstance(base_url, str):
        raise TypeError(
            f"base_url is a string such as 'http://127.0.0.1:8080', not {type(base_url).__name__}"
        )
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL as error:
        raise ValueError(f"base_url {base_url!r} is not a URL: {error}") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise ValueError(
            f"base_url needs http:// or https:// and a host, as in 'http://127.0.0.1:8080', not {base_url!r}"
        )
    given = url.path.rstrip("/")
    if not given.endswith(path):
        # OpenAI clients take a base URL ending in /v1, some Ollama clients one ending in /api.
        # A path of one segment (llama-server's /props, /completion) has no root of its own.
        first = path[: path.index("/", 1)] if "/" in path[1:] else "/v1"
        for root in ("/v1", first):
            if given.endswith(root):
                given = given.removesuffix(root)
                break
        given += path
    return str(url.copy_with(path=given, fragment=None))


def _retry_after(value: str | None, now: datetime.datetime | None = None) -> float | None:
    """``Retry-After`` in seconds: delay-seconds or an HTTP-date (RFC 9110 10.2.3); ``None`` if unreadable."""
    if value is None:
        return None
    value = value.strip()
    if value.isascii() and value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, OverflowError):  # a year past what datetime holds overflows
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    now = now if now is not None else datetime.datetime.now(datetime.UTC)
    return max(0.0, (when - now).total_seconds())
