"""The streams of both HTTP backends, and AsyncOpenAICompatible's requests, against the fault server
on loopback: every dialect's body and streamed shape, and each fault of a stream as its named error.

The fault server (tests/support/fault_server.py with the streamed answers of
tests/support/stream_faults.py) is a fake: http.server in a thread speaking the wire shapes of
servers this machine does not run (OpenAI, llama-server, KoboldCpp, Ollama) and the faults no
real server shows on demand.
tests/backends/http/test_backends_http_llama_cpp_python_server_async.py drives a real
llama-cpp-python server. A held or stalled answer waits on an Event the test releases, so only
those requests get the short timeout, which they pass whatever the load. The async backend's
faults of a whole answer, cancellation, concurrency and clones are
tests/backends/http/test_backends_http_async.py's.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support.fault_server import (
    ACTION,
    FaultServer,
    ok,
    status,
)
from support.http_dialects import EXPECTED, MESSAGES, STATES, chat_completion, ollama_chat
from support.stream_cases import FLAVOURS, GAP, GIVE_UP, PIECES, SCHEMA, SHORT, TIMEOUT, assert_usable
from support.stream_faults import (
    JSON_LINES,
    chat_chunks,
    endless_stream,
    events,
    ollama_lines,
    stream_then_close,
    stream_then_stall,
    streamed,
    trickled_stream,
)

from toolrouting import (
    AsyncOpenAICompatible,
    BackendConnectError,
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    BackendTimeout,
    Completion,
    OpenAICompatible,
    SchemaIgnoredError,
    Settings,
    TextDelta,
    Usage,
)

pytestmark = pytest.mark.anyio


async def stream(flavour: str, url: str, **options: Any) -> list[TextDelta | Completion]:
    """Every item one streamed request yields, through the sync or the async backend."""
    options.setdefault("timeout", TIMEOUT)
    if flavour == "sync":
        with OpenAICompatible(url, **options) as backend:
            return list(backend.stream(MESSAGES))
    async with AsyncOpenAICompatible(url, **options) as backend:
        return [item async for item in backend.stream(MESSAGES)]


def whole(items: list[TextDelta | Completion]) -> Completion:
    """The stream's last item, once checked to be the completion of the pieces before it."""
    *pieces, last = items
    assert all(isinstance(piece, TextDelta) for piece in pieces)
    assert isinstance(last, Completion)
    assert "".join(piece.text for piece in pieces if isinstance(piece, TextDelta)) == last.text
    return last


# --- the wire: what each dialect sends and how its answer, whole or streamed, is read ---------------


def reply_body(dialect: str) -> bytes:
    return json.dumps(ollama_chat() if dialect == "ollama" else chat_completion()).encode()


@pytest.mark.parametrize(("dialect", "state"), list(EXPECTED))
async def test_async_complete_sends_exactly_the_dialect_shape(
    server: FaultServer, dialect: str, state: str
) -> None:
    server.script.append(status(200, reply_body(dialect)))
    model = "smollm2" if dialect == "ollama" else None
    backend = AsyncOpenAICompatible(server.url, dialect=dialect, model=model, settings=STATES[state])
    async with backend:
        completion = await backend.complete(MESSAGES)
    assert server.bodies[-1] == EXPECTED[(dialect, state)]
    assert (completion.text, completion.finish_reason) == (
        chat_completion()["choices"][0]["message"]["content"],
        "stop",
    )
    assert completion.usage == Usage(prompt_tokens=30, completion_tokens=12)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("dialect", ["openai", "llama.cpp", "llama-cpp-python", "koboldcpp", "ollama"])
async def test_a_stream_asks_each_dialect_to_stream(server: FaultServer, flavour: str, dialect: str) -> None:
    ollama = dialect == "ollama"
    server.script.append(
        streamed(ollama_lines(PIECES), JSON_LINES) if ollama else streamed(events(chat_chunks(PIECES)))
    )
    items = await stream(
        flavour, server.url, dialect=dialect, model="smollm2" if ollama else None, settings=STATES["routed"]
    )
    added = {"stream": True} if ollama else {"stream": True, "stream_options": {"include_usage": True}}
    assert server.bodies[-1] == {**EXPECTED[(dialect, "routed")], **added}
    assert whole(items).text == "".join(PIECES)
    assert [item.text for item in items[:-1]] == PIECES


#: Each shape a streamed answer comes in, and the usage read from it.
SHAPES = {
    # OpenAI with stream_options.include_usage: a last chunk with no choices carries the usage.
    "openai, usage apart": (
        streamed(events(chat_chunks(PIECES, used=7))),
        Usage(prompt_tokens=30, completion_tokens=7),
    ),
    # llama-server: the usage rides on the chunk with the finish reason.
    "llama-server, usage on the finish": (
        streamed(events(chat_chunks(PIECES, usage="in finish", used=7))),
        Usage(prompt_tokens=30, completion_tokens=7),
    ),
    # llama-cpp-python and KoboldCpp report none: the pieces are counted, the prompt unknown.
    "no usage, counted": (streamed(events(chat_chunks(PIECES, usage="none"))), Usage(completion_tokens=5)),
    # CRLF line ends and comment pings between the events (sse-starlette's defaults).
    "CRLF and pings": (
        streamed([b": ping\r\n\r\n", *events(chat_chunks(PIECES, usage="none"), newline="\r\n")]),
        Usage(completion_tokens=5),
    ),
    # Every byte its own read: events, lines and UTF-8 characters cut anywhere.
    "a byte at a time": (
        streamed([bytes([b]) for b in b"".join(events(chat_chunks(PIECES, used=7)))]),
        Usage(prompt_tokens=30, completion_tokens=7),
    ),
}


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("shape", list(SHAPES))
async def test_each_streamed_shape_is_read(server: FaultServer, flavour: str, shape: str) -> None:
    behaviour, usage = SHAPES[shape]
    server.script.append(behaviour)
    completion = whole(await stream(flavour, server.url))
    assert (completion.text, completion.finish_reason, completion.usage) == ("".join(PIECES), "stop", usage)
    assert not completion.truncated


@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_characters_cut_between_reads_arrive_whole(server: FaultServer, flavour: str) -> None:
    pieces = ["Grüße ", "aus ", "Köln ✓"]
    server.script.append(streamed([bytes([b]) for b in b"".join(events(chat_chunks(pieces)))]))
    assert whole(await stream(flavour, server.url)).text == "Grüße aus Köln ✓"


@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_ollama_streams_json_lines_with_its_counts(server: FaultServer, flavour: str) -> None:
    server.script.append(streamed(ollama_lines(PIECES, "length", used=9), JSON_LINES))
    options: dict[str, Any] = {"dialect": "ollama", "model": "smollm2", "settings": Settings(max_tokens=9)}
    completion = whole(await stream(flavour, server.url, **options))
    assert (completion.finish_reason, completion.truncated) == ("length", True)
    assert completion.usage == Usage(prompt_tokens=30, completion_tokens=9)


@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_a_stream_cut_at_the_cap_is_truncated(server: FaultServer, flavour: str) -> None:
    server.script.append(streamed(events(chat_chunks(PIECES[:2], finish="length", usage="none"))))
    completion = whole(await stream(flavour, server.url, settings=Settings(max_tokens=2)))
    assert (completion.text, completion.finish_reason, completion.truncated) == (
        '{"tool": "search", ',
        "length",
        True,
    )


@pytest.mark.parametrize("flavour", FLAVOURS)
async def test_a_server_that_ignores_stream_is_read_whole(server: FaultServer, flavour: str) -> None:
    server.script.append(ok())
    items = await stream(flavour, server.url)
    assert items == [TextDelta(ACTION), whole(items)]
    assert whole(items).usage == Usage(prompt_tokens=9, completion_tokens=6)


# --- faults: the same named errors as a whole answer, and the backend recovers ----------------------


def cases() -> dict[str, tuple[Any, type[BackendError], str, dict[str, Any]]]:
    parts = events(chat_chunks(PIECES))
    return {
        "dropped mid-stream": (
            stream_then_close(parts, 3),
            BackendConnectError,
            "closed the connection before a complete response",
            {},
        ),
        "ended unfinished": (
            streamed(events(chat_chunks(PIECES)[:3], done=False)),
            BackendConnectError,
            r"before the reply was finished \(no finish reason and no \[DONE\], 19 characters",
            {},
        ),
        "an event that is not JSON": (
            streamed([*parts[:2], b'data: {"choices": [\n\n']),
            BackendResponseError,
            r'streamed an event that is not JSON: "\{\\"choices\\": \["',
            {},
        ),
        "a chunk that is not a chunk": (
            streamed(events([{"object": "list", "data": []}])),
            BackendResponseError,
            r'streamed something other than a chat completion: a streamed chunk has no "choices" list',
            {},
        ),
        "an error mid-stream": (
            streamed([*parts[:2], *events([{"error": {"message": "slot unavailable"}}])]),
            BackendResponseError,
            r"reported an error in the middle of its stream: .*slot unavailable",
            {},
        ),
        "an error event": (
            streamed([*parts[:2], b'event: error\ndata: "model unloaded"\n\n']),
            BackendResponseError,
            r"reported an error in the middle of its stream: .*model unloaded",
            {},
        ),
        "stalled mid-stream": (
            stream_then_stall(parts, 2),
            BackendTimeout,
            rf"did not answer within the timeout of {SHORT:g} s \(ReadTimeout\)",
            {"timeout": SHORT},
        ),
        "a trickle past the timeout": (
            trickled_stream(parts * 8, GAP),
            BackendTimeout,
            rf"did not finish its answer within the timeout of {GIVE_UP:g} s \(it was still arriving",
            {"timeout": GIVE_UP},
        ),
        "endless": (
            endless_stream,
            BackendResponseError,
            r"answered more than MAX_RESPONSE_BYTES \(16,000,000 bytes\) and was left unread",
            {},
        ),
        "429 with Retry-After": (
            status(429, b'{"error": "slow down"}', {"Retry-After": "7"}),
            BackendHTTPError,
            r"answered HTTP 429 Too Many Requests: .*slow down.*after 7 s \(Retry-After\)",
            {},
        ),
        "prose although a schema was sent": (
            streamed(events(chat_chunks(["Sure! ", "Let me look."]))),
            SchemaIgnoredError,
            r'may have ignored the schema: .* not JSON: "Sure! Let me look\."',
            {"settings": Settings(json_schema=SCHEMA)},
        ),
    }


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("case", list(cases()))
async def test_a_faulty_stream_is_a_named_error(server: FaultServer, flavour: str, case: str) -> None:
    behaviour, kind, message, options = cases()[case]
    server.script.append(behaviour)
    with pytest.raises(BackendError) as caught:
        await stream(flavour, server.url, **options)
    assert type(caught.value) is kind
    assert re.search(message, str(caught.value)), str(caught.value)
    server.release.set()
    await assert_usable(server.url)
