"""toolrouting serve's legacy ``functions`` and ``function_call``, and the fields it refuses by name.

The legacy form is served as ``tools`` and ``tool_choice`` are: the backend is sent the same
bytes whichever form a conversation comes in, and the reply's call is written as
``function_call``, whole and streamed. The openai SDK drives it on loopback; Starlette's
TestClient checks what the backend is sent, reply by reply.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from openai.types.chat import ChatCompletion
from starlette.testclient import TestClient
from support.serve import BARE_READ, BARE_SEARCH, SEARCH, TOOLS, served_to_sdk

from toolrouting import AsyncScriptedBackend
from toolrouting._serve import serve_app

QUESTION: list[Any] = [{"role": "user", "content": "What does the latch on the storage-room door do?"}]
ACTION = '{"tool":"search","arguments":{"query":"latch"}}'
FUNCTIONS = [tool["function"] for tool in TOOLS]
CALL = {"name": "search", "arguments": '{"query":"latch"}'}
RESULT = "M1: the latch keeps the door shut"


@pytest.fixture(scope="module")
def sdk() -> Iterator[tuple[AsyncScriptedBackend, openai.OpenAI]]:
    """The openai SDK, without retries, on loopback to a server over the scripted backend."""
    with served_to_sdk("scripted") as both:
        yield both


@pytest.fixture
def backend() -> AsyncScriptedBackend:
    return AsyncScriptedBackend()


@pytest.fixture
def client(backend: AsyncScriptedBackend) -> Iterator[TestClient]:
    with TestClient(serve_app(backend)) as client:
        yield client


def chat(client: TestClient, **fields: Any) -> Any:
    return client.post("/v1/chat/completions", json={"messages": QUESTION, **fields})


def error_of(response: Any, status: int = 400) -> dict[str, Any]:
    assert response.status_code == status, response.text
    error: dict[str, Any] = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    return error


def offered(backend: AsyncScriptedBackend, request: int = 0) -> list[str] | None:
    """The names request ``request`` to the backend offers, ``None`` when it asked for text."""
    schema = backend.requests[request].settings.json_schema
    return None if schema is None else [alt["properties"]["tool"]["const"] for alt in schema["anyOf"]]


def test_the_sdk_gets_a_function_call_whole_and_streamed(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = sdk
    backend.enqueue(ACTION, ACTION, ACTION)
    raw = client.chat.completions.with_raw_response.create(
        model="scripted", messages=QUESTION, functions=FUNCTIONS
    )
    stream = client.chat.completions.create(
        model="scripted", messages=QUESTION, functions=FUNCTIONS, stream=True
    )
    chunks = list(stream)
    with client.chat.completions.stream(model="scripted", messages=QUESTION, functions=FUNCTIONS) as helper:
        rebuilt = helper.get_final_completion().choices[0]  # the SDK's own stream helper
    whole = ChatCompletion.model_validate(raw.http_response.json())  # the SDK's types accept it
    [choice] = whole.choices
    assert choice.finish_reason == "function_call"
    assert choice.message.tool_calls is None
    assert choice.message.content is None
    assert choice.message.function_call is not None
    assert choice.message.function_call.model_dump() == CALL
    assert rebuilt.finish_reason == "function_call"
    assert rebuilt.message.function_call is not None
    assert rebuilt.message.function_call.model_dump() == CALL
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    assert all(delta.tool_calls is None for delta in deltas)
    calls = [delta.function_call for delta in deltas if delta.function_call is not None]
    assert [call.name for call in calls if call.name is not None] == ["search"]  # the head, once
    assert "".join(call.arguments or "" for call in calls) == CALL["arguments"]
    assert [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices][-1] == "function_call"


def test_a_legacy_conversation_is_sent_as_the_same_conversation_in_tools(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = sdk
    backend.enqueue(ACTION, '{"tool":"none"}', "It keeps the door shut.")
    first = client.chat.completions.create(model="scripted", messages=QUESTION, functions=FUNCTIONS)
    message = first.choices[0].message.model_dump(exclude_none=True)
    history: list[Any] = [*QUESTION, message, {"role": "function", "name": "search", "content": RESULT}]
    second = client.chat.completions.create(model="scripted", messages=history, functions=FUNCTIONS)
    assert second.choices[0].finish_reason == "stop"
    assert second.choices[0].message.content == "It keeps the door shut."
    legacy = [request.messages for request in backend.requests[-3:]]
    # The same turns in tools' form, sent again: the backend is sent the same bytes.
    backend.enqueue(ACTION, '{"tool":"none"}', "It keeps the door shut.")
    first = client.chat.completions.create(model="scripted", messages=QUESTION, tools=TOOLS)
    assert first.choices[0].message.tool_calls is not None
    call_id = first.choices[0].message.tool_calls[0].id
    message = first.choices[0].message.model_dump(exclude_none=True)
    history = [*QUESTION, message, {"role": "tool", "tool_call_id": call_id, "content": RESULT}]
    client.chat.completions.create(model="scripted", messages=history, tools=TOOLS)
    assert [request.messages for request in backend.requests[-3:]] == legacy
    assert legacy[1][-2:] == (
        {"role": "assistant", "content": ACTION},
        {"role": "user", "content": f"Tool result for search (call route-1):\n{RESULT}"},
    )


def test_function_call_maps_as_tool_choice_does(client: TestClient, backend: AsyncScriptedBackend) -> None:
    functions = [BARE_SEARCH["function"], BARE_READ["function"]]
    backend.enqueue('{"tool":"read","arguments":{}}', '{"tool":"none"}', "An answer.", "Another.")
    named = chat(client, functions=functions, function_call={"name": "read"}).json()
    assert named["choices"][0]["message"]["function_call"] == {"name": "read", "arguments": "{}"}
    auto = chat(client, functions=functions, function_call="auto").json()
    assert auto["choices"][0]["finish_reason"] == "stop"
    chat(client, functions=functions, function_call="none")
    assert [offered(backend, n) for n in range(4)] == [["read"], ["search", "read", "none"], None, None]
    # Without functions, a request is a plain chat, as without tools.
    backend.enqueue("Hello.")
    assert chat(client, function_call="none").json()["choices"][0]["message"]["content"] == "Hello."


@pytest.mark.parametrize(
    ("fields", "param", "words"),
    [
        ({"tools": [SEARCH], "functions": FUNCTIONS}, "functions", ["tools", "functions"]),
        ({"tool_choice": "auto", "functions": FUNCTIONS}, "functions", ["tool_choice", "functions"]),
        ({"tools": [SEARCH], "function_call": "none"}, "function_call", ["tools", "function_call"]),
        ({"functions": FUNCTIONS, "function_call": {"name": "x"}}, "function_call.name", ["functions"]),
        ({"functions": FUNCTIONS, "function_call": "required"}, "function_call", ['"auto"']),
        ({"function_call": "auto"}, "function_call", ["functions"]),
        ({"functions": [FUNCTIONS[0], FUNCTIONS[0]]}, "functions[1]", ["twice"]),
        ({"functions": ["search"]}, "functions[0]", ["object"]),
        ({"functions": {"name": "search"}}, "functions", ["list"]),
    ],
)
def test_a_legacy_request_that_cannot_be_served_is_a_400_naming_the_field(
    client: TestClient, backend: AsyncScriptedBackend, fields: dict[str, Any], param: str, words: list[str]
) -> None:
    error = error_of(chat(client, **fields))
    assert error["param"] == param
    for word in words:
        assert word in error["message"]
    assert backend.requests == []


@pytest.mark.parametrize(
    ("history", "param"),
    [
        ([{"role": "function", "name": "search", "content": RESULT}], "messages[1].name"),
        (
            [
                {"role": "assistant", "content": None, "function_call": CALL},
                {"role": "function", "name": "read", "content": RESULT},
            ],
            "messages[2].name",
        ),
        (
            [
                {"role": "assistant", "content": None, "function_call": CALL},
                {"role": "function", "name": "search", "content": RESULT},
                {"role": "function", "name": "search", "content": RESULT},
            ],
            "messages[3].name",
        ),
        (
            [
                {
                    "role": "assistant",
                    "function_call": CALL,
                    "tool_calls": [{"id": "a", "type": "function", "function": CALL}],
                }
            ],
            "messages[1].function_call",
        ),
        ([{"role": "assistant", "function_call": {"name": "search"}}], "messages[1].function_call.arguments"),
        (
            [{"role": "assistant", "function_call": {"name": "search", "arguments": "[1]"}}],
            "messages[1].function_call.arguments",
        ),
        (
            [{"role": "assistant", "function_call": {"name": "bad name", "arguments": "{}"}}],
            "messages[1].function_call.name",
        ),
        ([{"role": "function", "content": RESULT}], "messages[1].name"),
    ],
)
def test_a_legacy_history_that_is_no_call_and_result_is_a_400_at_its_place(
    client: TestClient, backend: AsyncScriptedBackend, history: list[Any], param: str
) -> None:
    messages = [*QUESTION, *history]
    if history[-1]["role"] == "assistant":
        messages.append({"role": "user", "content": "And?"})
    assert error_of(chat(client, messages=messages, functions=FUNCTIONS))["param"] == param
    assert backend.requests == []


def test_n_above_one_is_refused_with_what_to_send(sdk: tuple[AsyncScriptedBackend, openai.OpenAI]) -> None:
    backend, client = sdk
    asked = len(backend.requests)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="scripted", messages=QUESTION, n=2)
    assert caught.value.param == "n"
    assert caught.value.code == "unsupported_parameter"
    assert "n=1" in caught.value.message
    assert "again" in caught.value.message  # several requests, for several choices
    assert len(backend.requests) == asked


@pytest.mark.parametrize(
    ("fields", "param"),
    [({"logprobs": True}, "logprobs"), ({"logprobs": True, "top_logprobs": 3}, "logprobs")],
)
def test_logprobs_no_backend_gives_are_refused_not_left_out(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI], fields: dict[str, Any], param: str
) -> None:
    backend, client = sdk
    asked = len(backend.requests)
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(model="scripted", messages=QUESTION, tools=TOOLS, **fields)
    assert caught.value.param == param
    assert caught.value.code == "unsupported_parameter"
    assert len(backend.requests) == asked


def test_top_logprobs_alone_is_refused_and_asking_for_none_is_served(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    assert error_of(chat(client, top_logprobs=2))["param"] == "top_logprobs"
    assert error_of(chat(client, top_logprobs="2"))["param"] == "top_logprobs"
    assert error_of(chat(client, logprobs="yes"))["param"] == "logprobs"
    backend.enqueue("Hello.")
    reply = chat(client, logprobs=False, top_logprobs=0).json()
    assert reply["choices"][0]["logprobs"] is None
    assert reply["choices"][0]["message"]["content"] == "Hello."
