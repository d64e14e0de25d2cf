"""toolrouting serve's application in-process, through Starlette's TestClient.

The backend is the scripted fake that ships in the package: these tests drive the server's
plumbing (shapes, statuses, what the backend is sent) reply by reply;
tests/serve/chat/test_serve_chat_clients.py drives it through real clients on loopback and the
real model.
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_app are the tests' parameters
from __future__ import annotations

import json
import subprocess
import sys
from typing import TYPE_CHECKING, Any

import anyio
import httpx
import pytest
from starlette.testclient import TestClient
from support.serve import BARE_READ as READ
from support.serve import BARE_SEARCH as SEARCH
from support.serve_app import backend, client, error_of  # noqa: F401 - fixtures shared with other tests

from toolrouting import (
    AsyncScriptedBackend,
    BackendHTTPError,
    BackendTimeout,
    Completion,
    GrammarError,
    ScriptedRequest,
    Usage,
)
from toolrouting._limits import SERVE_MAX_BODY_BYTES
from toolrouting._serve import SERVE_ANSWER_TOKENS, serve_app

if TYPE_CHECKING:
    import httpx2  # what starlette's TestClient is built on, and answers with

QUESTION = [{"role": "user", "content": "What does the latch do?"}]
ACTION = '{"tool":"search","arguments":{"query":"latch"}}'


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def chat(client: TestClient, **fields: Any) -> httpx2.Response:
    return client.post("/v1/chat/completions", json={"model": "m", "messages": QUESTION, **fields})


def test_a_chosen_tool_is_one_tool_call(client: TestClient, backend: AsyncScriptedBackend) -> None:
    used = Usage(prompt_tokens=50, completion_tokens=9, cached_tokens=32)
    backend.enqueue(Completion(text=ACTION, finish_reason="stop", usage=used))
    reply = chat(client, tools=[SEARCH, READ]).json()
    [choice] = reply["choices"]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    [call] = choice["message"]["tool_calls"]
    assert call == {
        "id": "route-1",
        "type": "function",
        "function": {"name": "search", "arguments": '{"query":"latch"}'},
    }
    cached = {"prompt_tokens_details": {"cached_tokens": 32}}
    assert reply["usage"] == {"prompt_tokens": 50, "completion_tokens": 9, "total_tokens": 59, **cached}
    assert backend.requests[0].settings.json_schema is not None


def test_none_is_answered_with_the_requests_cap_and_usage_counts_both(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"none"}', "one two three four five six")
    reply = chat(client, tools=[SEARCH], max_tokens=3, temperature=0.25, stop=["."]).json()
    assert reply["choices"][0]["message"] == {
        "role": "assistant",
        "content": "one two three",
        "refusal": None,
    }
    assert reply["choices"][0]["finish_reason"] == "length"
    decision, answer = backend.requests
    assert (answer.settings.max_tokens, answer.settings.temperature, answer.settings.stop) == (
        3,
        0.25,
        (".",),
    )
    assert answer.settings.json_schema is None
    assert decision.settings.stop == ()
    assert reply["usage"]["completion_tokens"] == 1 + 3


def test_a_request_without_max_tokens_gets_the_stated_answer_cap(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue("Hello there.")
    reply = chat(client).json()
    assert reply["choices"][0]["finish_reason"] == "stop"
    assert backend.requests[0].settings.max_tokens == SERVE_ANSWER_TOKENS


def test_tool_choice_none_asks_no_decision(client: TestClient, backend: AsyncScriptedBackend) -> None:
    backend.enqueue("An answer.")
    assert chat(client, tools=[SEARCH], tool_choice="none").json()["choices"][0]["finish_reason"] == "stop"
    [only] = backend.requests
    assert only.settings.json_schema is None


def test_required_offers_no_none_and_a_none_reply_is_the_backends_failure(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"none"}')
    response = chat(client, tools=[SEARCH, READ], tool_choice="required")
    assert response.status_code == 502
    assert "demands a tool call" in error_of(response)["message"]
    schema = backend.requests[0].settings.json_schema
    assert schema is not None
    assert [alt["properties"]["tool"]["const"] for alt in schema["anyOf"]] == ["search", "read"]


def test_a_tool_result_goes_back_as_the_result_message(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue(ACTION)
    first = chat(client, tools=[SEARCH])
    message = first.json()["choices"][0]["message"]
    backend.enqueue('{"tool":"none"}', "It holds the door.")
    result = {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"], "content": "M1: the latch"}
    chat(client, tools=[SEARCH], messages=[*QUESTION, message, result])
    first_sent, second_sent = backend.requests[0].messages, backend.requests[1].messages
    assert second_sent[: len(first_sent)] == first_sent  # one conversation, one growing prefix
    assert second_sent[-2:] == (
        {"role": "assistant", "content": ACTION},
        {"role": "user", "content": "Tool result for search (call route-1):\nM1: the latch"},
    )


def test_the_stream_rebuilds_the_same_tool_call(client: TestClient, backend: AsyncScriptedBackend) -> None:
    backend.enqueue(ACTION, ACTION)
    whole = chat(client, tools=[SEARCH]).json()["choices"][0]["message"]["tool_calls"][0]
    with client.stream(
        "POST",
        "/v1/chat/completions",
        json={
            "messages": QUESTION,
            "tools": [SEARCH],
            "stream": True,
            "stream_options": {"include_usage": True},
        },
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        events = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert events[-1] == "[DONE]"
    chunks = [json.loads(event) for event in events[:-1]]
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] > 0
    assert chunks[-2]["choices"][0]["finish_reason"] == "tool_calls"
    head = chunks[0]["choices"][0]["delta"]["tool_calls"][0]
    assert (head["index"], head["id"], head["type"], head["function"]["name"]) == (
        0,
        "route-1",
        "function",
        "search",
    )
    pieces = [c["choices"][0]["delta"].get("tool_calls", [{}])[0] for c in chunks[:-1]]
    assert (
        "".join(p.get("function", {}).get("arguments", "") for p in pieces) == whole["function"]["arguments"]
    )


def test_a_streamed_answer_ends_with_its_finish_reason(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"none"}', "The latch holds the door.")
    with client.stream(
        "POST", "/v1/chat/completions", json={"messages": QUESTION, "tools": [SEARCH], "stream": True}
    ) as response:
        events = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    chunks = [json.loads(event) for event in events[:-1]]
    assert (
        "".join(c["choices"][0]["delta"].get("content") or "" for c in chunks) == "The latch holds the door."
    )
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"
    assert all("usage" not in c for c in chunks)  # not asked for


@pytest.mark.parametrize(
    ("fault", "status", "code"),
    [
        (BackendTimeout("no answer in 300 s"), 504, "upstream_timeout"),
        (BackendHTTPError(500, "http://x/v1", "boom", "the server answered 500"), 502, "BackendHTTPError"),
        (GrammarError("the compiler refused the pattern", "/anyOf/0"), 400, "grammar_refused"),
    ],
)
def test_a_backend_failure_is_answered_in_openais_shape(
    client: TestClient, backend: AsyncScriptedBackend, fault: Exception, status: int, code: str
) -> None:
    # Fault injection: the scripted backend raises what a failing backend raises.
    backend.enqueue(fault)
    response = chat(client, tools=[SEARCH])
    assert response.status_code == status
    assert error_of(response)["code"] == code
    backend.enqueue("still serving")
    assert chat(client).status_code == 200


def test_a_failure_in_a_stream_is_answered_before_the_status_when_it_can_be(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue(BackendTimeout("no answer in 300 s"))
    response = client.post(
        "/v1/chat/completions", json={"messages": QUESTION, "tools": [SEARCH], "stream": True}
    )
    assert response.status_code == 504
    assert error_of(response)["code"] == "upstream_timeout"


def test_bad_requests_are_4xx_in_openais_shape(client: TestClient) -> None:
    cases = [
        (client.post("/v1/chat/completions", content=b"{"), 400, None),
        (chat(client, messages=[{"role": "robot", "content": "x"}]), 400, "messages[0].role"),
        (chat(client, tools=[SEARCH, SEARCH]), 400, "tools[1]"),
        (
            chat(client, tools=[SEARCH], tool_choice={"type": "function", "function": {"name": "x"}}),
            400,
            None,
        ),
        (client.post("/v1/chat/completions", content=b" " * (SERVE_MAX_BODY_BYTES + 1)), 413, None),
        (client.get("/v1/chat/completions"), 405, None),
        (client.get("/v2/nothing"), 404, None),
    ]
    for response, status, param in cases:
        assert response.status_code == status, response.text
        error = error_of(response)
        if param is not None:
            assert error["param"] == param


def test_health_and_models(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok"}
    models = client.get("/v1/models").json()
    assert models["object"] == "list"
    assert [m["id"] for m in models["data"]] == ["test-model"]


def test_a_required_key_is_demanded(backend: AsyncScriptedBackend) -> None:
    backend.enqueue("hello")
    with TestClient(serve_app(backend, require_key="sesame")) as client:
        refused = client.get("/v1/models", headers={"Authorization": "Bearer wrong"})
        assert refused.status_code == 401
        assert error_of(refused)["code"] == "invalid_api_key"
        assert "sesame" not in refused.text
        assert client.get("/health").status_code == 200
        allowed = client.post(
            "/v1/chat/completions", json={"messages": QUESTION}, headers={"Authorization": "Bearer sesame"}
        )
        assert allowed.status_code == 200


@pytest.mark.anyio
async def test_a_full_queue_answers_429_with_retry_after() -> None:
    held = anyio.Event()
    release = anyio.Event()

    async def slow(request: ScriptedRequest) -> str:
        held.set()
        await release.wait()
        return "done"

    backend = AsyncScriptedBackend([slow])
    app = serve_app(backend, in_flight=1)
    transport = httpx.ASGITransport(app=app)
    async with (
        httpx.AsyncClient(transport=transport, base_url="http://test") as client,
        anyio.create_task_group() as group,
    ):
        first: list[httpx.Response] = []

        async def ask() -> None:
            first.append(await client.post("/v1/chat/completions", json={"messages": QUESTION}))

        group.start_soon(ask)
        await held.wait()
        busy = await client.post("/v1/chat/completions", json={"messages": QUESTION})
        assert busy.status_code == 429
        assert int(busy.headers["Retry-After"]) >= 1
        assert error_of(busy)["code"] == "server_busy"
        release.set()
    assert first[0].status_code == 200


def test_a_failure_after_the_first_chunk_ends_the_stream_with_an_error_event(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    # The call's head and arguments go out as written; the whole reply is then refused.
    backend.enqueue('{"tool":"search","arguments":{"query":"latch"},"more":1}')
    with client.stream(
        "POST", "/v1/chat/completions", json={"messages": QUESTION, "tools": [SEARCH], "stream": True}
    ) as response:
        assert response.status_code == 200
        events = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert json.loads(events[0])["choices"][0]["delta"]["tool_calls"][0]["function"]["name"] == "search"
    last = json.loads(events[-1])
    assert set(last["error"]) == {"message", "type", "param", "code"}
    assert last["error"]["type"] == "upstream_error"
    assert "[DONE]" not in events


def test_a_plain_stream_whose_backend_fails_is_answered_with_its_status(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue(BackendTimeout("no answer in 300 s"))
    response = client.post("/v1/chat/completions", json={"messages": QUESTION, "stream": True})
    assert response.status_code == 504


def test_a_catalogue_nested_too_deeply_to_route_is_a_400(client: TestClient) -> None:
    parameters: dict[str, Any] = {"type": "object"}
    for _ in range(250):
        parameters = {"type": "object", "properties": {"a": parameters}}
    tool = {"type": "function", "function": {"name": "deep", "parameters": parameters}}
    response = client.post(
        "/v1/chat/completions", content=json.dumps({"messages": QUESTION, "tools": [tool]}).encode()
    )
    assert response.status_code == 400
    assert error_of(response)["param"] == "tools[0]"  # the catalogue check names the entry


def test_no_key_reaches_a_client_in_an_error_whole_or_streamed(backend: AsyncScriptedBackend) -> None:
    # The upstream's key and the server's own, echoed by a failing upstream or quoted from a reply.
    upstream, own = "sk-upstream-1234", "sesame-5678"
    echoed = f"the server answered 401: bad key {upstream} (sent {own})"
    backend.enqueue(BackendHTTPError(401, "http://x/v1", echoed, echoed))
    backend.enqueue(f'{{"tool":"search","arguments":{{"query":"{upstream}"}},"more":1}}')
    headers = {"Authorization": f"Bearer {own}"}
    asked = {"messages": QUESTION, "tools": [SEARCH]}
    with TestClient(serve_app(backend, require_key=own, secrets=[upstream])) as client:
        whole = client.post("/v1/chat/completions", json=asked, headers=headers)
        with client.stream(
            "POST", "/v1/chat/completions", json={**asked, "stream": True}, headers=headers
        ) as response:
            assert response.status_code == 200
            events = [line.removeprefix("data: ") for line in response.iter_lines() if line]
    assert whole.status_code == 502
    assert (
        error_of(whole)["message"]
        == "the server answered 401: bad key [api key hidden] (sent [api key hidden])"
    )
    failure = json.loads(events[-1])["error"]["message"]  # the refused reply, quoted
    assert "[api key hidden]" in failure
    assert upstream not in failure


def test_the_server_is_public_and_import_toolrouting_loads_neither_starlette_nor_uvicorn() -> None:
    code = (
        "import sys, toolrouting\n"
        "from toolrouting import serve_app, server_config\n"
        "assert 'serve_app' in toolrouting.__all__ and 'server_config' in toolrouting.__all__\n"
        "print(sorted(name for name in ('starlette', 'uvicorn') if name in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_without_the_serve_extra_the_server_names_it() -> None:
    code = (
        "import sys\n"
        "sys.modules['starlette'] = None\n"  # how Python itself marks a module as not importable
        "sys.modules['uvicorn'] = None\n"
        "from toolrouting import AsyncScriptedBackend, serve_app, server_config\n"
        "calls = [lambda: serve_app(AsyncScriptedBackend()), lambda: server_config(None, host='', port=0)]\n"
        "for call in calls:\n"
        "    try:\n"
        "        call()\n"
        "    except ImportError as error:\n"
        "        print(error)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    lines = done.stdout.splitlines()
    assert len(lines) == 2
    for line in lines:
        assert line.startswith("the server needs the serve extra: pip install 'toolrouting[serve]'")
