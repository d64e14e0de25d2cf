"""The HTTP backend: one chat completion per request, on any OpenAI-compatible server or Ollama."""

from __future__ import annotations

import datetime
import email.utils
import json
import math
import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Self

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
from .._limits import (
    DEFAULT_REQUEST_TIMEOUT,
    MAX_BODY_QUOTE,
    MAX_REPLY_QUOTE,
    MAX_RESPONSE_BYTES,
    SHOWN_VALUE_CHARS,
)
from .._settings import Settings
from .base import BaseBackend, Completion, Message, is_truncated
from .dialects import DIALECTS, WireShapeError, get_dialect

__all__ = ["OpenAICompatible", "check_size", "endpoint_url"]

#: The characters a JSON text may open with, for a schema whose top-level type is not pinned.
_JSON_OPENERS: tuple[str, ...] = (*'{["-0123456789', "true", "false", "null")
_OPENER_BY_TYPE: dict[object, tuple[str, ...]] = {"object": ("{",), "array": ("[",), "string": ('"',)}


class OpenAICompatible(BaseBackend):
    """A chat model behind an HTTP server: OpenAI's API or a local server that copies it.

    ``dialect`` says where the server wants ``settings.json_schema`` and ``settings.max_tokens``
    (see docs/backends.md): ``openai`` (OpenAI, vLLM, SGLang, LM Studio, OpenRouter),
    ``llama.cpp`` (``llama-server``), ``llama-cpp-python`` (``python -m llama_cpp.server``),
    ``koboldcpp``, or ``ollama`` (its native ``/api/chat``; ``model`` is required).
    ``base_url`` is the server root (``http://127.0.0.1:8080``), its ``/v1`` root, or the endpoint.

    Settings are read when a request is sent, so a clone's schema and cap never reach this
    backend. A clone shares the connection pool; only the backend that created the pool
    closes it, so close the original last. A ``http_client`` passed in is never closed here.
    """

    clone_keys: ClassVar[frozenset[str]] = frozenset(
        {"base_url", "model", "api_key", "dialect", "timeout", "settings"}
    )

    def __init__(
        self,
        base_url: str,
        *,
        model: str | None = None,
        api_key: str | None = None,
        dialect: str = "openai",
        timeout: float = DEFAULT_REQUEST_TIMEOUT,
        settings: Settings | None = None,
        http_client: httpx.Client | None = None,
    ) -> None:
        super().__init__(settings, owner=http_client is None)
        self._dialect = get_dialect(dialect)
        self._url = endpoint_url(base_url, self._dialect.path)
        if self._dialect.requires_model and not model:
            raise ValueError(f"the {dialect} dialect needs model=, the name of a model the server has")
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < math.inf:
            raise ValueError(f"timeout is a positive number of seconds, not {timeout!r}")
        if api_key is not None and not (
            isinstance(api_key, str) and api_key.isascii() and api_key.isprintable()
        ):
            raise ValueError("api_key goes in an HTTP header, so it must be printable ASCII text")
        self._base_url = base_url
        self._model = model
        self._api_key = api_key
        self._timeout = float(timeout)
        self._client = http_client if http_client is not None else httpx.Client()

    @property
    def dialect(self) -> str:
        return self._dialect.name

    @property
    def base_url(self) -> str:
        return self._base_url

    @property
    def url(self) -> str:
        """The endpoint requests are posted to."""
        return self._url

    @property
    def model(self) -> str | None:
        return self._model

    @property
    def timeout(self) -> float:
        return self._timeout

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._base_url!r}, model={self._model!r}, dialect={self.dialect!r})"

    def _clone(self, changes: Mapping[str, Any]) -> Self:
        # Built anew, so a changed base_url, dialect or timeout is checked as at construction;
        # the pool passed in is one this clone does not own.
        return type(self)(
            changes.get("base_url", self._base_url),
            model=changes.get("model", self._model),
            api_key=changes.get("api_key", self._api_key),
            dialect=changes.get("dialect", self._dialect.name),
            timeout=changes.get("timeout", self._timeout),
            settings=changes.get("settings", self._settings),
            http_client=self._client,
        )

    def complete(self, messages: Sequence[Message]) -> Completion:
        """Send ``messages`` with this backend's settings; every failure is a :class:`BackendError`."""
        if self._client.is_closed:
            raise BackendError(
                "this backend's HTTP client is closed: the backend that created it (not a clone) "
                "or the caller that passed http_client closed it; make a new backend"
            )
        settings = self._settings
        response = self._post(self._dialect.build(messages, settings, self._model))
        if not response.is_success:
            if self._dialect.sends_grammar(settings) and _mentions_grammar(response):
                raise GrammarError(
                    f"POST {self._url} refused the grammar toolrouting compiled from the schema (HTTP "
                    f"{response.status_code}: {quoted(response.text, MAX_BODY_QUOTE)}); Settings(grammar="
                    "'server') sends the schema for the server to convert instead, and "
                    "preflight(schema, 'toolrouting') lists what our grammar changes"
                )
            raise self._http_error(response, schema_sent=settings.json_schema is not None)
        body = self._decode(response)
        try:
            reply = self._dialect.parse(body)
        except WireShapeError as error:
            raise BackendResponseError(
                f"{self._url} answered HTTP {response.status_code} but {error}; check that "
                f"dialect={self.dialect!r} matches the server (known: {', '.join(DIALECTS)})"
            ) from None
        completion = Completion(
            text=reply.text,
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            truncated=is_truncated(reply.finish_reason, reply.usage.completion_tokens, settings.max_tokens),
            raw=body,
        )
        if settings.json_schema is not None:
            self._check_constrained(completion, settings.json_schema)
        return completion

    def _release(self) -> None:
        """Close the connection pool this backend created; a clone's ``close()`` leaves it open."""
        self._client.close()

    def _post(self, body: Mapping[str, Any]) -> httpx.Response:
        try:
            content = json.dumps(body, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as error:  # a NaN setting, a schema holding a set, ...
            raise BackendError(
                f"the request to {self._url} cannot be written as JSON ({error}); check the settings "
                "and the schema for values JSON cannot carry"
            ) from None
        headers = {"Content-Type": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        # httpx's timeout bounds each read, so a server dribbling its answer a byte at a time
        # would hold the request for ever; the deadline bounds the whole answer as well.
        deadline = time.monotonic() + self._timeout
        try:
            with self._client.stream(
                "POST", self._url, content=content.encode("utf-8"), headers=headers, timeout=self._timeout
            ) as response:
                received = bytearray()
                for chunk in response.iter_bytes():
                    received += chunk
                    check_size(
                        received, self._url, "MAX_RESPONSE_BYTES", MAX_RESPONSE_BYTES, "a chat completion"
                    )
                    if time.monotonic() > deadline:
                        raise BackendTimeout(
                            f"{self._url} did not finish its answer within the timeout of "
                            f"{self._timeout:g} s (it was still arriving, {len(received)} bytes so far); "
                            "a long generation needs a larger timeout= or a lower max_tokens"
                        )
            # The same answer, read: its content is decoded, so it no longer has an encoding.
            kept = [(k, v) for k, v in response.headers.multi_items() if k.lower() != "content-encoding"]
            return httpx.Response(
                response.status_code,
                headers=kept,
                content=bytes(received),
                request=response.request,
                extensions=response.extensions,
            )
        except httpx.TimeoutException as error:
            raise BackendTimeout(
                f"{self._url} did not answer within the timeout of {self._timeout:g} s "
                f"({type(error).__name__}); a long generation needs a larger timeout= or a lower max_tokens"
            ) from error
        except (httpx.NetworkError, httpx.RemoteProtocolError) as error:
            raise BackendConnectError(self._connect_problem(error)) from error
        except (httpx.HTTPError, httpx.InvalidURL, httpx.StreamError, httpx.CookieConflict) as error:
            raise BackendError(
                f"the request to {self._url} failed: {type(error).__name__}: {error}"
            ) from error

    def _connect_problem(self, error: httpx.NetworkError | httpx.RemoteProtocolError) -> str:
        if isinstance(error, httpx.ConnectError):
            return f"could not connect to {self._url} ({error}); is the server running and listening there?"
        if isinstance(error, httpx.RemoteProtocolError):
            return (
                f"{self._url} closed the connection before a complete response ({error}); "
                "the server may have crashed or restarted"
            )
        return (
            f"the connection to {self._url} broke ({type(error).__name__}: {error}); "
            "the server may have reset it"
        )

    def _http_error(self, response: httpx.Response, *, schema_sent: bool) -> BackendHTTPError:
        status = response.status_code
        text = response.text
        retry_after = _retry_after(response.headers.get("Retry-After"))
        message = (
            f"POST {self._url} answered HTTP {status} {response.reason_phrase[:SHOWN_VALUE_CHARS]}: "
            f"{quoted(text, MAX_BODY_QUOTE)}; {self._status_hint(response, retry_after)}"
        )
        if schema_sent and status in (400, 422, 500):
            message += (
                f"; if it objects to the schema or response_format, the server may want another "
                f"dialect than {self.dialect!r} (known: {', '.join(DIALECTS)})"
            )
        return BackendHTTPError(status, self._url, text[:MAX_BODY_QUOTE], message, retry_after=retry_after)

    def _status_hint(self, response: httpx.Response, retry_after: float | None) -> str:
        status = response.status_code
        if status in (401, 403):
            return "check api_key"
        if status == 404:
            return f"check base_url and model: the {self.dialect} dialect posts to {self._dialect.path}"
        if status in (408, 429) or status >= 500:
            wait = f" after {retry_after:g} s (Retry-After)" if retry_after is not None else " later"
            return f"the same request may succeed{wait}"
        if status < 400:
            location = quoted(response.headers.get("Location", ""), MAX_BODY_QUOTE)
            return f"the server redirects to {location}: use that as base_url"
        return "the server refused the request"

    def _decode(self, response: httpx.Response) -> Any:
        try:
            return json.loads(response.content)
        except (ValueError, RecursionError):
            raise BackendResponseError(
                f"{self._url} answered HTTP {response.status_code} with a body that is not JSON: "
                f"{quoted(response.text, MAX_BODY_QUOTE)}; check that base_url "
                "points at the server's API, not at a web page or a proxy's error page"
            ) from None

    def _check_constrained(self, completion: Completion, schema: Mapping[str, Any]) -> None:
        """A reply that cannot even open the JSON the schema asks for was never constrained."""
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
            if self.dialect == "koboldcpp"
            else ""
        )
        sent_as = self._dialect.schema_field(self._settings)
        raise SchemaIgnoredError(
            f"the server may have ignored the schema: it was sent as {sent_as} "
            f"(dialect {self.dialect!r}) and {problem}. Check that the dialect matches the server "
            f"(known: {', '.join(DIALECTS)}).{kobold}"
        )


def _mentions_grammar(response: httpx.Response) -> bool:
    """Whether an error answer is about the grammar (llama-server: "Failed to initialize samplers")."""
    text = response.text[:MAX_RESPONSE_BYTES].lower()
    return response.status_code in (400, 422, 500) and ("grammar" in text or "sampler" in text)


def _openers(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """What a reply constrained by ``schema`` can begin with: by its one type, else any JSON value."""
    kind = schema.get("type")
    return _OPENER_BY_TYPE.get(kind, _JSON_OPENERS) if isinstance(kind, str) else _JSON_OPENERS


def check_size(received: bytearray, url: str, limit_name: str, limit: int, expected: str) -> None:
    """Refuse an answer past ``limit`` bytes: reading on would only fill memory."""
    if len(received) > limit:
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
        for root in ("/v1", path[: path.index("/", 1)]):
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
