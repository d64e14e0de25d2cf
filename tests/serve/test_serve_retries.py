"""toolrouting serve tells a client which failures to send again: the openai SDK with its default retries.

A failure the same request would meet again (a reply that is not a valid action, a schema the
server ignored, a grammar refused) carries ``x-should-retry: false``, so the SDK asks once; one
that may pass (a full queue, a busy upstream, a timeout) carries ``Retry-After``, and the SDK
waits that long and asks again. The SDK here is the real one with its default retries; only
its waits are recorded instead of slept, so the tests take no seconds.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import openai
import pytest
from starlette.testclient import TestClient
from starlette.types import ASGIApp, Receive, Scope, Send
from support.serve import BARE_SEARCH, TOOLS, served

from toolrouting import (
    AsyncScriptedBackend,
    BackendConnectError,
    BackendHTTPError,
    BackendTimeout,
    GrammarError,
    SchemaIgnoredError,
    ScriptedRequest,
)
from toolrouting._limits import SERVE_RETRY_AFTER, SERVE_UPSTREAM_RETRY_AFTER
from toolrouting._serve import serve_app

QUESTION: list[Any] = [{"role": "user", "content": "What does the latch on the storage-room door do?"}]
INVALID = "I would search the notes for the latch."  # no action: what a server that ignores the route writes


class NoWait(openai.OpenAI):
    """The openai SDK as it is, default retries and all; each wait it chooses is recorded, not slept."""

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.waits: list[float] = []

    def _calculate_retry_timeout(self, *args: Any, **kwargs: Any) -> float:
        self.waits.append(super()._calculate_retry_timeout(*args, **kwargs))
        return 0.0


class Counted:
    """The chat requests that reach the server, counted as they arrive."""

    def __init__(self, app: ASGIApp, seen: list[str]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/v1/chat/completions":
            self.seen.append(scope["path"])
        await self.app(scope, receive, send)


@pytest.fixture
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str, list[str]]]:
    backend = AsyncScriptedBackend()
    app = serve_app(backend, model="scripted")
    seen: list[str] = []
    app.add_middleware(Counted, seen=seen)
    with served(app) as url:
        yield backend, url, seen


def sdk(url: str) -> NoWait:
    return NoWait(base_url=url, api_key="unused", timeout=30)  # max_retries left at its default


@pytest.mark.parametrize(
    "fault", [INVALID, SchemaIgnoredError("the reply is not JSON: the schema was ignored")]
)
@pytest.mark.parametrize("stream", [False, True])
def test_a_reply_that_is_no_valid_action_is_asked_of_the_backend_once(
    scripted: tuple[AsyncScriptedBackend, str, list[str]], fault: Any, stream: bool
) -> None:
    backend, url, seen = scripted
    backend.enqueue(*[fault] * (openai.DEFAULT_MAX_RETRIES + 1))  # the same, however often it is asked
    with sdk(url) as client:
        assert client.max_retries == openai.DEFAULT_MAX_RETRIES > 0
        with pytest.raises(openai.InternalServerError) as caught:
            client.chat.completions.create(model="scripted", messages=QUESTION, tools=TOOLS, stream=stream)
    assert caught.value.status_code == 502
    assert caught.value.response.headers["x-should-retry"] == "false"
    assert "Retry-After" not in caught.value.response.headers
    assert len(backend.requests) == len(seen) == 1
    assert client.waits == []


@pytest.mark.parametrize(
    ("fault", "wait"),
    [
        (BackendHTTPError(503, "http://x/v1", "busy", "the server answered 503"), SERVE_UPSTREAM_RETRY_AFTER),
        (BackendHTTPError(503, "http://x/v1", "busy", "503 with a wait", retry_after=3), 3),
        (BackendTimeout("no answer within 300 s"), SERVE_UPSTREAM_RETRY_AFTER),
    ],
)
def test_a_busy_or_slow_upstream_is_asked_again_after_retry_after(
    scripted: tuple[AsyncScriptedBackend, str, list[str]], fault: Exception, wait: int
) -> None:
    backend, url, seen = scripted
    retries = openai.DEFAULT_MAX_RETRIES
    backend.enqueue(*[fault] * (retries + 1))
    with sdk(url) as client, pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="scripted", messages=QUESTION, tools=TOOLS)
    assert caught.value.response.headers["Retry-After"] == str(wait)
    assert "x-should-retry" not in caught.value.response.headers
    assert len(backend.requests) == len(seen) == retries + 1
    assert client.waits == [wait] * retries  # the SDK waited what the server asked
    backend.enqueue('{"tool":"none"}', "It holds.")
    with sdk(url) as client:  # and once the upstream is back, the retried request is served
        assert client.chat.completions.create(model="s", messages=QUESTION, tools=TOOLS).choices


def test_a_full_queue_is_asked_again_after_retry_after() -> None:
    started, release = threading.Event(), threading.Event()

    async def held(request: ScriptedRequest) -> str:
        started.set()
        while not release.is_set():
            await anyio.sleep(0.01)
        return "done"

    backend = AsyncScriptedBackend([held])
    app = serve_app(backend, in_flight=1)
    seen: list[str] = []
    app.add_middleware(Counted, seen=seen)
    with served(app) as url:
        first: list[httpx.Response] = []
        holder = threading.Thread(
            target=lambda: first.append(
                httpx.post(f"{url}/chat/completions", json={"messages": QUESTION}, timeout=30)
            )
        )
        holder.start()
        try:
            assert started.wait(10)
            with sdk(url) as client, pytest.raises(openai.RateLimitError) as caught:
                client.chat.completions.create(model="s", messages=QUESTION)
        finally:
            release.set()
            holder.join(30)
    assert caught.value.response.headers["Retry-After"] == str(SERVE_RETRY_AFTER)
    assert len(seen) == 1 + openai.DEFAULT_MAX_RETRIES + 1  # the held one, then the SDK's three
    assert client.waits == [SERVE_RETRY_AFTER] * openai.DEFAULT_MAX_RETRIES
    assert len(backend.requests) == 1
    assert first[0].status_code == 200


@pytest.mark.parametrize(
    ("fault", "status", "headers"),
    [
        (INVALID, 502, {"x-should-retry": "false"}),
        (SchemaIgnoredError("the reply is not JSON"), 502, {"x-should-retry": "false"}),
        (GrammarError("the compiler refused the pattern", "/anyOf/0"), 400, {"x-should-retry": "false"}),
        (
            BackendHTTPError(400, "http://x/v1", "bad", "the server answered 400"),
            502,
            {"x-should-retry": "false"},
        ),
        (BackendHTTPError(429, "http://x/v1", "slow", "429", retry_after=7.2), 502, {"retry-after": "8"}),
        (BackendConnectError("refused"), 502, {"retry-after": str(SERVE_UPSTREAM_RETRY_AFTER)}),
        (BackendTimeout("no answer"), 504, {"retry-after": str(SERVE_UPSTREAM_RETRY_AFTER)}),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_every_backend_failure_says_whether_to_retry_whole_or_streamed(
    fault: Any, status: int, headers: dict[str, str], stream: bool
) -> None:
    backend = AsyncScriptedBackend([fault])
    with TestClient(serve_app(backend)) as client:
        body = {"messages": QUESTION, "tools": [BARE_SEARCH], "stream": stream}
        response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == status
    told = {
        name: value for name, value in response.headers.items() if name in ("retry-after", "x-should-retry")
    }
    assert told == headers
