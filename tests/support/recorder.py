"""The server's exchanges recorded, for tests/serve/test_serve_recorded.py: a case is a few requests to
``serve_app`` in-process (Starlette's TestClient) over the scripted backend, and its record what
came back (the status, every header, the body's bytes) and what the backend was sent.

Only what is random is normalised, and so that a change still shows: each id's random hex becomes
``<id N>``, numbered by first appearance across the case (an id repeated in every chunk of a
stream, or named again by a later request, stays one number), a timestamp within the seconds
the case ran becomes ``<time>`` (any other number, ``"created":0`` among them, is kept), and a
405's ``Allow`` lists its methods sorted, as Starlette lists them in no fixed order. What the
backend was sent is kept as it was, but for the long texts (a catalogue's instructions, a route
schema), each recorded as its head and a digest.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from starlette.testclient import TestClient

from toolrouting import (
    AsyncScriptedBackend,
    BackendHTTPError,
    BackendTimeout,
    Completion,
    ContextLengthError,
    Settings,
)
from toolrouting._serve import serve_app

__all__ = [
    "LAST_ID",
    "SEVERAL",
    "SPACED_CUT",
    "Body",
    "Case",
    "Step",
    "call",
    "chat",
    "fault",
    "message",
    "record",
    "response",
    "shared_failures",
    "shared_successes",
]

#: Where a later request takes the last response's id (``previous_response_id``, a stored
#: response's path).
LAST_ID = "$LAST_ID"

#: The ids the fronts make, each a prefix and 32 random hex digits.
_IDS = re.compile(r"(chatcmpl-|resp_|msg_|fc_|rs_)([0-9a-f]{32})")
_TIMES = re.compile(r'"(created|created_at|completed_at)":(\d+)')
#: A text the backend was sent that is longer than this is recorded as its head and a digest.
_LONG = 240


class GrammarDialect(AsyncScriptedBackend):
    """The scripted backend as a llama.cpp server that takes our grammar, so that a response
    format's schema is checked by the preflight against our compiler (a fake of the dialect's
    name alone: what it answers is the script's)."""

    dialect = "llama.cpp"


def _app(kind: str) -> tuple[AsyncScriptedBackend, Any]:
    """The scripted backend and the app of each kind a case runs on."""
    if kind == "spaced":
        backend = AsyncScriptedBackend(settings=Settings(spaced=True))
    elif kind == "grammar":
        backend = GrammarDialect()
    else:
        backend = AsyncScriptedBackend()
    options: dict[str, Any] = {
        "plain": {},
        "spaced": {},
        "grammar": {},
        "keyed": {"require_key": "sk-recorded-key", "secrets": ["upstream-secret"]},
        "calls": {"max_calls": 3},
        "shortlist": {"shortlist": 2},
        "short": {"answer_tokens": 3, "cap": 12},
    }
    # A fixed secret: a thought's signature is then the same bytes every time it is recorded.
    return backend, serve_app(backend, model="test-model", reasoning_secret="recorded", **options[kind])


@dataclasses.dataclass(frozen=True)
class Step:
    """One request of a case, and the backend's replies queued before it."""

    path: str
    body: Any = None
    """A JSON value sent as JSON, or bytes sent as they are; ``None`` for no body."""
    replies: Sequence[Any] = ()
    method: str = "POST"
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    chunked: bool = False
    """Send the body in chunks, without a Content-Length."""


@dataclasses.dataclass(frozen=True)
class Case:
    """Requests to one fresh app of ``app``'s kind, in order."""

    name: str
    steps: Sequence[Step]
    app: str = "plain"


def chat(name: str, body: Any, *replies: Any, app: str = "plain", **step: Any) -> Case:
    """A case of one chat completions request."""
    return Case(name, [Step("/v1/chat/completions", body, replies, **step)], app)


def response(name: str, body: Any, *replies: Any, app: str = "plain", **step: Any) -> Case:
    """A case of one Responses request."""
    return Case(name, [Step("/v1/responses", body, replies, **step)], app)


def message(name: str, body: Any, *replies: Any, app: str = "plain", **step: Any) -> Case:
    """A case of one Messages request."""
    return Case(name, [Step("/v1/messages", body, replies, **step)], app)


def fault(kind: type[Exception]) -> Callable[[object], str]:
    """A reply that fails as the server's own code might: ``kind`` raised where no error of the
    tree is."""

    def raised(request: object) -> str:
        raise kind("recorded")

    return raised


def call(name: str, arguments: Mapping[str, Any], *, spaced: bool = False) -> str:
    """An action as the route grammar writes it."""
    separators = (", ", ": ") if spaced else (",", ":")
    return json.dumps({"tool": name, "arguments": arguments}, separators=separators)


#: A decision of no call.
NONE = '{"tool":"none"}'
#: Two calls in one decision, for a server of several calls a decision.
SEVERAL = "[" + ",".join([call("search", {"query": "a"}), call("read", {})]) + "]"
#: A call cut at the cap after its name: spaced, so a stream hands out its head (and some of its
#: arguments) before the cut is known.
SPACED_CUT = Completion(
    text='{"tool": "search", "arguments": {"query": "the la', finish_reason="length", truncated=True
)


class Body:
    """A front's request body: ``body(**fields)`` the base with the case's fields (which replace
    the base's), ``body.streamed(**fields)`` the same asking for a stream."""

    def __init__(self, **base: Any) -> None:
        self.base = base

    def __call__(self, **fields: Any) -> dict[str, Any]:
        return {**self.base, **fields}

    def streamed(self, **fields: Any) -> dict[str, Any]:
        return self(stream=True, **fields)


def shared_successes(
    case: Callable[..., Case], ask: Body, cap: str, tools: list[Any], answer: str, used: Completion
) -> list[Case]:
    """The answers every front is recorded with, whole and streamed, each made by the front's
    ``case``: an answer, one cut at the request's ``cap`` field, a call (``used``), and ``none``
    then an answer, or an empty one."""
    return [
        case("answer", ask(), answer),
        case("answer streamed", ask.streamed(), answer),
        case("answer cut", ask(**{cap: 2}), answer),
        case("answer cut streamed", ask.streamed(**{cap: 2}), answer),
        case("tool call", ask(tools=tools), used),
        case("tool call streamed", ask.streamed(tools=tools), used),
        case("none then answer", ask(tools=tools), NONE, answer),
        case("none then answer streamed", ask.streamed(tools=tools), NONE, answer),
        case("none then an empty answer streamed", ask.streamed(tools=tools), NONE, ""),
    ]


#: A prompt past the model's context, as the embedded model raises it.
_PAST_CONTEXT = ContextLengthError(
    "the prompt is 5000 tokens and the context holds 4096", prompt_tokens=5000, n_ctx=4096
)


def shared_failures(
    case: Callable[..., Case],
    ask: Body,
    tools: list[Any],
    answer: str,
    upstream: BackendHTTPError,
    raised: type[Exception],
) -> list[Case]:
    """The failures every front is recorded with, each made by the front's ``case``: an upstream
    error whole and streamed, a timeout, a prompt past the context (whole, streamed, and with no
    numbers, as a server may refuse it), a reply that is no action, a stream cut after a call's
    head, the key missing and sent, and a fault of the server's own (``raised``)."""
    return [
        case(f"upstream {upstream.status}", ask(tools=tools), upstream),
        case(f"upstream {upstream.status} streamed", ask.streamed(tools=tools), upstream),
        case("upstream timeout", ask(), BackendTimeout("slow")),
        case("prompt past the context", ask(tools=tools), _PAST_CONTEXT),
        case("prompt past the context streamed", ask.streamed(tools=tools), _PAST_CONTEXT),
        case(
            "prompt past a context of no numbers",
            ask(),
            ContextLengthError("over", prompt_tokens=None, n_ctx=None),
        ),
        case("not an action", ask(tools=tools), "Sure."),
        case("cut after the call's head", ask.streamed(tools=tools), SPACED_CUT, app="spaced"),
        case("key missing", ask(), app="keyed"),
        case("key as x-api-key", ask(), answer, app="keyed", headers={"x-api-key": "sk-recorded-key"}),
        case("a fault of the server", ask(), fault(raised)),
    ]


def record(case: Case) -> dict[str, Any]:
    """The case run on a fresh app, its exchanges normalised."""
    backend, app = _app(case.app)
    start = int(time.time())
    exchanges: list[dict[str, Any]] = []
    last_id: str | None = None
    with TestClient(app, raise_server_exceptions=False) as client:
        for step in case.steps:
            backend.enqueue(*step.replies)
            before = len(backend.requests)
            body = _with_id(step.body, last_id)
            content = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
            headers = dict(step.headers)
            if content is not None:
                headers.setdefault("content-type", "application/json")
            sent: Any = _chunks(content) if step.chunked and content is not None else content
            answer = client.request(step.method, _with_id(step.path, last_id), content=sent, headers=headers)
            raw = answer.content
            exchanges.append(
                {
                    "request": f"{step.method} {step.path}",
                    "status": answer.status_code,
                    "headers": [_header(*pair) for pair in answer.headers.multi_items()],
                    "body": raw.decode("utf-8"),
                    "sent": [_sent(request) for request in backend.requests[before:]],
                }
            )
            last_id = _response_id(raw) or last_id
    end = int(time.time())
    return {"app": case.app, "exchanges": _normalised(exchanges, start, end), "pending": backend.pending}


def _header(name: str, value: str) -> list[str]:
    """A header as it came, but ``Allow``'s methods in order: Starlette lists them from a set,
    whose order changes with each interpreter's hash seed."""
    if name.lower() == "allow":
        value = ", ".join(sorted(value.split(", ")))
    return [name, value]


def _chunks(content: bytes) -> Iterator[bytes]:
    for at in range(0, len(content), 1 << 20):
        yield content[at : at + (1 << 20)]


def _with_id(value: Any, last_id: str | None) -> Any:
    """``value`` with ``$LAST_ID`` (in a string, or in a JSON value's strings) replaced."""
    if isinstance(value, str):
        return value.replace(LAST_ID, last_id or "none-yet")
    if isinstance(value, list):
        return [_with_id(item, last_id) for item in value]
    if isinstance(value, dict):
        return {key: _with_id(item, last_id) for key, item in value.items()}
    return value


def _response_id(raw: bytes) -> str | None:
    """The Responses id a body carries: the object's, or the one a stream's last event carries."""
    ids = re.findall(rb'"id":"(resp_[0-9a-f]{32})"', raw)
    return ids[-1].decode() if ids else None


def _digest(text: str) -> str:
    return f"{text[:60]}... (sha256 {hashlib.sha256(text.encode()).hexdigest()[:16]}, {len(text)} chars)"


def _sent(request: Any) -> dict[str, Any]:
    messages = [
        {
            **message,
            "content": message["content"]
            if len(message["content"]) <= _LONG
            else _digest(message["content"]),
        }
        for message in request.messages
    ]
    settings = {
        field.name: getattr(request.settings, field.name) for field in dataclasses.fields(request.settings)
    }
    for name, value in settings.items():
        if isinstance(value, Mapping):
            settings[name] = _digest(json.dumps(value, ensure_ascii=False))
        elif isinstance(value, tuple):
            settings[name] = list(value)
    return {"messages": messages, "settings": settings}


def _normalised(exchanges: list[dict[str, Any]], start: int, end: int) -> list[dict[str, Any]]:
    """Each body with its ids numbered across the case and its timestamps of the case's seconds
    named: what is random, and only that."""
    numbers: dict[str, int] = {}

    def id_of(match: re.Match[str]) -> str:
        number = numbers.setdefault(match[2], len(numbers) + 1)
        return f"{match[1]}<id {number}>"

    def time_of(match: re.Match[str]) -> str:
        value = int(match[2])
        return f'"{match[1]}":<time>' if start - 1 <= value <= end + 1 else match[0]

    for exchange in exchanges:
        body = _TIMES.sub(time_of, _IDS.sub(id_of, exchange["body"]))
        # A stream one event a line, so a difference shows by its event; joined, the body's bytes.
        exchange["body"] = re.split(r"(?<=\n\n)(?=.)", body, flags=re.DOTALL)
    return exchanges
