"""The Responses front under malformed requests: never a 5xx, always the SDK's shapes, alive after.

As tests/serve/chat/test_serve_chat_fuzz.py does for chat completions (whose scripted app and JSON values this
reuses): hypothesis writes Responses bodies from valid fields and arbitrary JSON in their
place, and now and then bytes that are no JSON at all; 2,000 in-process and 300 (the default
profile's count) over a real uvicorn socket, with reads and deletes of stored ids among them.
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_fuzz_app are the tests' parameters
from __future__ import annotations

import json
from typing import Any, get_args

import httpx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import Response, ResponseStreamEvent
from starlette.testclient import TestClient
from support.serve import BARE_READ, BARE_SEARCH
from support.serve_app import error_of as openai_error_of
from support.serve_fuzz import IN_PROCESS, either
from support.serve_fuzz_app import app, client, http, socket_url  # noqa: F401 - the scripted app, in-process and on a socket

EVENTS: dict[str, Any] = {
    get_args(kind.model_fields["type"].annotation)[0]: kind
    for kind in get_args(get_args(ResponseStreamEvent)[0])
}
SEARCH = {"type": "function", **BARE_SEARCH["function"]}
READ = {"type": "function", **BARE_READ["function"]}

part = st.fixed_dictionaries(
    {
        "type": either(st.sampled_from(["input_text", "output_text", "refusal", "input_image"])),
        "text": either(st.text(max_size=20)),
    }
)
content = either(st.text(max_size=30) | st.lists(part, max_size=2))
item = st.one_of(
    st.fixed_dictionaries(
        {"role": either(st.sampled_from(["user", "assistant", "system", "developer", "tool"]))},
        optional={"type": either(st.just("message")), "content": content},
    ),
    st.fixed_dictionaries(
        {"type": either(st.just("function_call"))},
        optional={
            "call_id": either(st.sampled_from(["a", "b"])),
            "name": either(st.sampled_from(["search", "read", "bad name"])),
            "arguments": either(st.sampled_from(['{"query":"x"}', "{}", "[1]", "{"])),
        },
    ),
    st.fixed_dictionaries(
        {"type": either(st.sampled_from(["function_call_output", "reasoning", "item_reference"]))},
        optional={"call_id": either(st.sampled_from(["a", "b"])), "output": content},
    ),
)
tool = either(st.sampled_from([SEARCH, READ, {"type": "function", "name": "none"}, {"type": "web_search"}]))
choice = either(
    st.sampled_from(["auto", "required", "none"])
    | st.builds(lambda n: {"type": "function", "name": n}, st.sampled_from(["search", "read", "x"]))
    | st.builds(
        lambda m, n: {"type": "allowed_tools", "mode": m, "tools": [{"type": "function", "name": n}]},
        st.sampled_from(["auto", "required", "none"]),
        st.sampled_from(["search", "read", "x"]),
    )
)


def maybe(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """A field's valid values, arbitrary JSON, and often null: a null field is no field to a client."""
    return either(valid) | st.none()


bodies = st.fixed_dictionaries(
    {},
    optional={
        "model": maybe(st.text(max_size=10)),
        "input": maybe(st.text(max_size=20) | st.lists(item, min_size=1, max_size=4)),
        "instructions": maybe(st.text(max_size=20)),
        "tools": maybe(st.lists(tool, max_size=3)),
        "tool_choice": choice,
        "max_output_tokens": maybe(st.integers(1, 64)),
        "temperature": maybe(st.floats(0, 2)),
        "stream": maybe(st.booleans()),
        "store": maybe(st.booleans()),
        "previous_response_id": maybe(st.just("resp_unknown")),
        "text": maybe(st.sampled_from([{"format": {"type": "text"}}, {"format": {"type": "json_object"}}])),
        "reasoning": maybe(st.sampled_from([{"effort": None}, {"effort": "low"}])),
        "include": maybe(st.lists(st.sampled_from(["reasoning.encrypted_content", "x"]), max_size=2)),
        "background": maybe(st.booleans()),
    },
)
#: Bodies a client would send, each field valid or null, so that the answers (whole and streamed)
#: are fuzzed as much as the refusals.
asked = st.fixed_dictionaries(
    {
        "input": st.text(max_size=20)
        | st.just([{"role": "user", "content": [{"type": "input_text", "text": "q"}]}])
    },
    optional={
        name: st.none() | values
        for name, values in {
            "model": st.text(max_size=10),
            "instructions": st.text(max_size=20),
            "tools": st.lists(st.sampled_from([SEARCH, READ]), max_size=2, unique_by=lambda t: t["name"]),
            "tool_choice": st.sampled_from(["auto", "none", {"type": "function", "name": "search"}]),
            "max_output_tokens": st.integers(1, 64),
            "temperature": st.floats(0, 2),
            "top_p": st.floats(0, 1),
            "stream": st.booleans(),
            "store": st.booleans(),
            "parallel_tool_calls": st.booleans(),
            "metadata": st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=2),
            "reasoning": st.just({"effort": None, "summary": "auto"}),
            "include": st.just(["reasoning.encrypted_content"]),
            "truncation": st.sampled_from(["auto", "disabled"]),
        }.items()
    },
)
payloads = st.one_of(
    bodies.map(lambda b: json.dumps(b).encode()),
    asked.map(lambda b: json.dumps(b).encode()),
    st.binary(max_size=40),
)
#: A request: a body to create a response, or a read or delete of an id.
requests = st.one_of(
    payloads.map(lambda payload: ("POST", "/responses", payload)),
    st.tuples(
        st.sampled_from(["GET", "DELETE"]),
        st.text(
            st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="/?#%"), max_size=12
        ).map(lambda t: f"/responses/resp_{t}"),
        st.just(b""),
    ),
)


def check(response: Any) -> None:
    """No 5xx; an error in OpenAI's shape; a response, or its events in order, as the SDK reads them."""
    assert response.status_code < 500, response.content[:300]
    if response.status_code != 200:
        openai_error_of(response)
    elif response.headers["content-type"].startswith("text/event-stream"):
        blocks = response.content.decode().strip().split("\n\n")
        events = [json.loads(block.split("\n")[1].removeprefix("data: ")) for block in blocks]
        read = [EVENTS[event["type"]].model_validate(event) for event in events]
        assert [event.sequence_number for event in read] == list(range(len(read)))
        assert read[-1].type in ("response.completed", "response.incomplete", "error")
    else:
        Response.model_validate(response.json())


@settings(max_examples=IN_PROCESS, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests)
def test_no_malformed_request_gets_a_5xx_in_process(
    client: TestClient, request: tuple[str, str, bytes]
) -> None:
    method, path, payload = request
    response = client.request(method, f"/v1{path}", content=payload)
    check(response)


@settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(request=requests)
def test_no_malformed_request_gets_a_5xx_over_a_socket(
    http: httpx.Client, request: tuple[str, str, bytes]
) -> None:
    method, path, payload = request
    response = http.request(method, path, content=payload)
    check(response)


def test_the_server_is_alive_after_the_fuzz(socket_url: str) -> None:
    body = {"input": "hi", "tools": [SEARCH], "tool_choice": "required"}
    response = httpx.post(f"{socket_url}/responses", json=body, timeout=30)
    assert response.status_code == 200
    stored = httpx.get(f"{socket_url}/responses/{response.json()['id']}", timeout=30)
    assert stored.json()["output"][0]["type"] == "function_call"
