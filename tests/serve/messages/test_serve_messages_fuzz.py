"""The Messages front under malformed requests: never a 5xx, always Anthropic's shapes, alive after.

Hypothesis writes ``/v1/messages`` and ``/v1/messages/count_tokens`` bodies from valid fields
and arbitrary JSON in their place (and now and then bytes that are no JSON at all): 2,000
in-process through Starlette's TestClient and 300 more (the default profile's count) through
a real uvicorn socket. The backend is the package's scripted fake, answering every decision
with an action the route offers, so any 5xx would be the server's own.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest
from anthropic.types import Message, MessageTokensCount, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import TypeAdapter
from starlette.testclient import TestClient
from support.serve import served
from support.serve_fuzz import IN_PROCESS, either, routed_reply

from toolrouting import AsyncScriptedBackend
from toolrouting._serve import serve_app

SEARCH = {
    "name": "search",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}
READ = {"name": "read", "description": "Read it.", "input_schema": {"type": "object", "properties": {}}}
EVENTS: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)

ids = st.sampled_from(["toolu_a", "toolu_b"])
text = st.fixed_dictionaries({"type": either(st.just("text")), "text": either(st.text(max_size=20))})
use = st.fixed_dictionaries(
    {
        "type": either(st.just("tool_use")),
        "id": either(ids),
        "name": either(st.sampled_from(["search", "read", "bad name"])),
        "input": either(st.sampled_from([{"query": "x"}, {}])),
    }
)
result = st.fixed_dictionaries(
    {"type": either(st.just("tool_result")), "tool_use_id": either(ids)},
    optional={
        "content": either(st.text(max_size=10) | st.lists(text, max_size=2)),
        "is_error": either(st.booleans()),
    },
)
refused = st.sampled_from(
    [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": ""}},
        {"type": "document", "source": {"type": "text", "data": "x", "media_type": "text/plain"}},
        {"type": "thinking", "thinking": "", "signature": ""},
    ]
)
message = st.fixed_dictionaries(
    {
        "role": either(st.sampled_from(["user", "assistant", "system"])),
        "content": either(st.text(max_size=30) | st.lists(text | use | result | refused, max_size=3)),
    }
)
tool = either(st.sampled_from([SEARCH, READ, {"type": "web_search_20250305", "name": "web_search"}]))
choice = either(
    st.sampled_from([{"type": "auto"}, {"type": "any"}, {"type": "none"}])
    | st.builds(lambda n: {"type": "tool", "name": n}, st.sampled_from(["search", "read", "x"]))
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": either(st.text(max_size=10)),
        "max_tokens": either(st.integers(1, 64)),
        "system": either(st.text(max_size=10) | st.lists(text, max_size=2)),
        "messages": either(st.lists(message, min_size=1, max_size=4)),
        "tools": either(st.lists(tool, max_size=3)),
        "tool_choice": choice,
        "temperature": either(st.floats(0, 1)),
        "top_k": either(st.integers(0, 50)),
        "stop_sequences": either(st.lists(st.text(min_size=1, max_size=3), max_size=2)),
        "stream": either(st.booleans()),
        "metadata": either(st.just({"user_id": "u"})),
        "thinking": either(st.just({"type": "disabled"})),
    },
)
payloads = st.one_of(
    bodies.map(lambda b: json.dumps(b).encode()),
    bodies.map(lambda b: json.dumps(b).encode()),
    st.binary(max_size=40),
)
paths = st.sampled_from(["/v1/messages", "/v1/messages", "/v1/messages/count_tokens"])


def check(path: str, status: int, content: bytes, content_type: str) -> None:
    assert status < 500, content[:300]
    if status != 200:
        assert ErrorResponse.model_validate_json(content).type == "error"
        return
    if path.endswith("count_tokens"):
        assert MessageTokensCount.model_validate_json(content).input_tokens >= 0
    elif content_type.startswith("text/event-stream"):
        events = [event.split("\n", 1) for event in content.decode().strip().split("\n\n")]
        assert events[-1][0] == "event: message_stop"
        for head, data in events:
            kind = json.loads(data.removeprefix("data: "))["type"]
            assert head == f"event: {kind}"
            # The SDK's stream passes a ping over, as the API's keep-alive, so its union omits it.
            if kind != "ping":
                EVENTS.validate_json(data.removeprefix("data: "))
    else:
        Message.model_validate_json(content)


@pytest.fixture(scope="module")
def app() -> Iterator[tuple[TestClient, httpx.Client]]:
    """The one app, in process and on a socket, over a backend with a reply for every request."""
    app = serve_app(AsyncScriptedBackend([routed_reply] * 20_000))
    with (
        TestClient(app) as in_process,
        served(app) as url,
        httpx.Client(base_url=url.removesuffix("/v1"), timeout=30) as over_a_socket,
    ):
        yield in_process, over_a_socket


@settings(max_examples=IN_PROCESS, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=paths, payload=payloads)
def test_no_malformed_request_gets_a_5xx_in_process(
    app: tuple[TestClient, httpx.Client], path: str, payload: bytes
) -> None:
    response = app[0].post(path, content=payload)
    check(path, response.status_code, response.content, response.headers.get("content-type", ""))


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=paths, payload=payloads)
def test_no_malformed_request_gets_a_5xx_over_a_socket(
    app: tuple[TestClient, httpx.Client], path: str, payload: bytes
) -> None:
    response = app[1].post(path, content=payload)
    check(path, response.status_code, response.content, response.headers.get("content-type", ""))


def test_the_server_is_alive_after_the_fuzz(app: tuple[TestClient, httpx.Client]) -> None:
    response = app[1].post(
        "/v1/messages",
        json={
            "max_tokens": 8,
            "messages": [{"role": "user", "content": "hi"}],
            "tools": [SEARCH],
            "tool_choice": {"type": "any"},
        },
    )
    assert response.status_code == 200
    assert response.json()["stop_reason"] == "tool_use"
