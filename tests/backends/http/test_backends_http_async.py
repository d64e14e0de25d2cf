"""AsyncOpenAICompatible against the fault server on loopback: each fault of a whole answer raised
as the sync backend raises it, a request cancelled, a stream left early, many requests in flight
on one backend, clones and closing; and the protocols that tell a sync backend from an async and a
streaming one.

The fault server (tests/support/fault_server.py) is a fake: http.server in a thread, whose held
answers wait on an Event the test releases.
"""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import AsyncGenerator

import anyio
import httpx
import pytest
from support.fault_server import (
    ACTION,
    FaultServer,
    close_mid_body,
    endless_body,
    held,
    reset,
    status,
    trickle,
)
from support.http_dialects import MESSAGES
from support.stream_cases import (
    FLAVOURS,
    GAP,
    GIVE_UP,
    PIECES,
    SCHEMA,
    SHORT,
    TIMEOUT,
    assert_usable,
    complete,
)
from support.stream_faults import chat_chunks, events, stream_then_stall

from toolrouting import (
    AsyncBackend,
    AsyncOpenAICompatible,
    AsyncStreamingBackend,
    Backend,
    BackendConnectError,
    BackendError,
    OpenAICompatible,
    Settings,
    StreamingBackend,
    TextDelta,
    routed_backend,
)

pytestmark = pytest.mark.anyio


async def test_cancelling_a_request_returns_at_once_and_the_backend_goes_on(server: FaultServer) -> None:
    server.script.append(held)
    async with AsyncOpenAICompatible(server.url, timeout=TIMEOUT) as backend:
        started = time.monotonic()
        with anyio.move_on_after(0.2) as scope:
            await backend.complete(MESSAGES)
        assert scope.cancelled_caught
        assert time.monotonic() - started < TIMEOUT / 2
        server.release.set()
        assert (await backend.complete(MESSAGES)).text == ACTION


async def test_leaving_a_stream_early_closes_its_request(server: FaultServer) -> None:
    server.script.append(stream_then_stall(events(chat_chunks(PIECES)), 3))
    async with AsyncOpenAICompatible(server.url, timeout=TIMEOUT) as backend:
        pieces = backend.stream(MESSAGES)
        assert isinstance(pieces, AsyncGenerator)  # an async generator, which can be closed
        assert await anext(pieces) == TextDelta(PIECES[0])
        await pieces.aclose()  # contextlib.aclosing does this
        server.release.set()
        assert (await backend.complete(MESSAGES)).text == ACTION


async def test_many_requests_in_flight_on_one_backend(server: FaultServer) -> None:
    async with AsyncOpenAICompatible(server.url, timeout=TIMEOUT) as backend:
        results: list[str] = []

        async def ask() -> None:
            results.append((await backend.complete(MESSAGES)).text)

        async with anyio.create_task_group() as group:
            for _ in range(8):
                group.start_soon(ask)
    assert results == [ACTION] * 8


async def test_clones_share_the_pool_and_only_the_original_closes_it(server: FaultServer) -> None:
    backend = AsyncOpenAICompatible(server.url, dialect="llama-cpp-python", timeout=TIMEOUT)
    routed = routed_backend(backend, SCHEMA, 16)
    assert isinstance(routed, AsyncOpenAICompatible)
    assert (routed.dialect, routed.url, routed.settings.max_tokens) == (backend.dialect, backend.url, 16)
    assert backend.settings == Settings()
    async with routed:
        assert (await routed.complete(MESSAGES)).text == ACTION
    assert server.bodies[-1]["max_tokens"] == 16
    assert (await backend.complete(MESSAGES)).text == ACTION
    await backend.aclose()
    with pytest.raises(BackendError, match="HTTP client is closed"):
        await routed.complete(MESSAGES)
    with pytest.raises(
        TypeError,
        match="clone takes api_key, base_url, dialect, model, reasoning_budget, reasoning_tags, settings, "
        "timeout, not seed",
    ):
        backend.clone(seed=1)


async def test_a_client_passed_in_is_never_closed(server: FaultServer) -> None:
    async with httpx.AsyncClient() as client:
        async with AsyncOpenAICompatible(server.url, http_client=client, timeout=TIMEOUT) as backend:
            assert (await backend.complete(MESSAGES)).text == ACTION
        assert not client.is_closed


def test_misuse_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="needs model="):
        AsyncOpenAICompatible("http://127.0.0.1:1", dialect="ollama")
    with pytest.raises(ValueError, match="unknown dialect 'vllm'"):
        AsyncOpenAICompatible("http://127.0.0.1:1", dialect="vllm")
    with pytest.raises(ValueError, match="timeout is a positive number"):
        AsyncOpenAICompatible("http://127.0.0.1:1", timeout=0)


def test_the_protocols_tell_sync_from_async_and_streaming() -> None:
    sync_backend = OpenAICompatible("http://127.0.0.1:1")
    async_backend = AsyncOpenAICompatible("http://127.0.0.1:1")
    assert isinstance(sync_backend, Backend)
    assert isinstance(sync_backend, StreamingBackend)
    assert not isinstance(sync_backend, AsyncBackend)
    assert isinstance(async_backend, AsyncBackend)
    assert isinstance(async_backend, AsyncStreamingBackend)
    assert not isinstance(async_backend, Backend)
    assert repr(async_backend) == "AsyncOpenAICompatible('http://127.0.0.1:1', model=None, dialect='openai')"
    sync_backend.close()


#: Faults of a whole answer, each with the timeout its request gets.
WHOLE_FAULTS = {
    "500": (status(500, b'{"error": "model exploded"}'), TIMEOUT),
    "503 with a Retry-After date": (
        status(503, b"busy", {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}),
        TIMEOUT,
    ),
    "not JSON": (status(200, b"<html>Welcome to nginx!</html>"), TIMEOUT),
    "not a completion": (status(200, b'{"object": "list", "data": []}'), TIMEOUT),
    "closed mid-body": (close_mid_body, TIMEOUT),
    "reset": (reset, TIMEOUT),
    "held": (held, SHORT),
    "trickle": (trickle(GAP / 2), GIVE_UP),
    "endless": (endless_body, TIMEOUT),
}


@pytest.mark.parametrize("fault", list(WHOLE_FAULTS))
async def test_async_complete_fails_as_the_sync_one_does(server: FaultServer, fault: str) -> None:
    behaviour, timeout = WHOLE_FAULTS[fault]
    raised: list[BackendError] = []
    for flavour in FLAVOURS:
        server.script.append(behaviour)
        with pytest.raises(BackendError) as caught:
            await complete(flavour, server.url, timeout)
        raised.append(caught.value)
        server.release.set()
        server.release = threading.Event()
    sync_error, async_error = raised
    assert type(async_error) is type(sync_error)
    # The same words; only a count of bytes that had arrived may differ.
    assert re.sub(r"\d+ bytes so far", "", str(async_error)) == re.sub(
        r"\d+ bytes so far", "", str(sync_error)
    )
    assert (async_error.retryable, async_error.retry_after) == (sync_error.retryable, sync_error.retry_after)
    await assert_usable(server.url)


async def test_connection_refused() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        async with AsyncOpenAICompatible(f"http://127.0.0.1:{port}", timeout=TIMEOUT) as refused:
            with pytest.raises(BackendConnectError, match=f"could not connect to http://127.0.0.1:{port}/v1"):
                await refused.complete(MESSAGES)
            with pytest.raises(BackendConnectError):
                await anext(aiter(refused.stream(MESSAGES)))
