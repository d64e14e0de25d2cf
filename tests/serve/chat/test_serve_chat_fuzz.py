"""toolrouting serve under malformed requests: never a 5xx, always OpenAI's shapes, alive after.

Hypothesis writes request bodies from valid fields and arbitrary JSON in their place (and now
and then bytes that are no JSON at all): 2,000 in-process through Starlette's TestClient and
300 more (the default profile's count) through a real uvicorn socket. The backend is the
package's scripted fake, answering every decision with an action the route offers, so any
5xx would be the server's own.
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_fuzz_app are the tests' parameters
from __future__ import annotations

import json

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from starlette.testclient import TestClient
from support.serve import BARE_READ as READ
from support.serve import BARE_SEARCH as SEARCH
from support.serve_fuzz import IN_PROCESS, either
from support.serve_fuzz_app import app, client, http, socket_url  # noqa: F401 - fixtures shared with other tests

text_part = st.fixed_dictionaries({"type": either(st.just("text")), "text": either(st.text(max_size=20))})
call = st.fixed_dictionaries(
    {
        "id": either(st.sampled_from(["a", "b"])),
        "type": either(st.just("function")),
        "function": st.fixed_dictionaries(
            {
                "name": either(st.sampled_from(["search", "read", "bad name"])),
                "arguments": either(st.sampled_from(['{"query":"x"}', "{}", "[1]", "{"])),
            }
        ),
    }
)
legacy_call = st.fixed_dictionaries(
    {
        "name": either(st.sampled_from(["search", "read", "bad name"])),
        "arguments": either(st.sampled_from(['{"query":"x"}', "{}", "[1]"])),
    }
)
message = st.fixed_dictionaries(
    {"role": either(st.sampled_from(["system", "developer", "user", "assistant", "tool", "function"]))},
    optional={
        "content": either(st.text(max_size=30) | st.lists(text_part, max_size=2)),
        "tool_calls": either(st.lists(call, max_size=2)),
        "tool_call_id": either(st.sampled_from(["a", "b"])),
        "function_call": either(legacy_call),
        "name": either(st.sampled_from(["search", "read"])),
    },
)
tool = either(st.sampled_from([SEARCH, READ, {"type": "function", "function": {"name": "none"}}]))
choice = either(
    st.sampled_from(["auto", "required", "none"])
    | st.builds(
        lambda n: {"type": "function", "function": {"name": n}}, st.sampled_from(["search", "read", "x"])
    )
)
bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": either(st.text(max_size=10)),
        "messages": either(st.lists(message, min_size=1, max_size=4)),
        "tools": either(st.lists(tool, max_size=3)),
        "tool_choice": choice,
        "functions": either(st.lists(st.sampled_from([SEARCH["function"], READ["function"]]), max_size=3)),
        "function_call": either(
            st.sampled_from(["auto", "none", {"name": "search"}, {"name": "read"}, {"name": "x"}])
        ),
        "logprobs": either(st.booleans()),
        "top_logprobs": either(st.integers(0, 2)),
        "max_tokens": either(st.integers(1, 64)),
        "temperature": either(st.floats(0, 2)),
        "stop": either(st.text(min_size=1, max_size=3)),
        "stream": either(st.booleans()),
        "stream_options": either(st.fixed_dictionaries({"include_usage": either(st.booleans())})),
        "n": either(st.just(1)),
    },
)
payloads = st.one_of(
    bodies.map(lambda b: json.dumps(b).encode()),
    bodies.map(lambda b: json.dumps(b).encode()),
    st.binary(max_size=40),
)


def check(status: int, content: bytes, content_type: str) -> None:
    assert status < 500, content[:300]
    if status != 200:
        error = json.loads(content)["error"]
        assert set(error) == {"message", "type", "param", "code"}
        return
    if content_type.startswith("text/event-stream"):
        events = [line.removeprefix("data: ") for line in content.decode().split("\n\n") if line]
        assert events[-1] == "[DONE]"
        for event in events[:-1]:
            ChatCompletionChunk.model_validate(json.loads(event))
    else:
        ChatCompletion.model_validate(json.loads(content))


@settings(max_examples=IN_PROCESS, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=payloads)
def test_no_malformed_request_gets_a_5xx_in_process(client: TestClient, payload: bytes) -> None:
    response = client.post("/v1/chat/completions", content=payload)
    check(response.status_code, response.content, response.headers.get("content-type", ""))


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(payload=payloads)
def test_no_malformed_request_gets_a_5xx_over_a_socket(http: httpx.Client, payload: bytes) -> None:
    response = http.post("/chat/completions", content=payload)
    check(response.status_code, response.content, response.headers.get("content-type", ""))


def test_the_server_is_alive_after_the_fuzz(socket_url: str) -> None:
    response = httpx.post(
        f"{socket_url}/chat/completions",
        json={"messages": [{"role": "user", "content": "hi"}], "tools": [SEARCH], "tool_choice": "required"},
        timeout=30,
    )
    assert response.status_code == 200
    assert response.json()["choices"][0]["finish_reason"] == "tool_calls"
