"""The Messages front over the scripted backend: Anthropic's request read into the one core, its
message, stream events and errors written in the shapes the anthropic SDK's own types read.

The SDK drives the server on loopback (``messages.create``, ``messages.stream``,
``count_tokens``); what a client cannot send on purpose (a bad body, a refused block) goes
through Starlette's TestClient.
"""

# ruff: noqa: F811 - the fixtures imported from support.anthropic_served are the tests' parameters
from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from anthropic.types import Message, MessageTokensCount, RawMessageStreamEvent
from anthropic.types.shared import ErrorResponse
from openai.types.chat import ChatCompletionMessageParam
from pydantic import TypeAdapter
from starlette.testclient import TestClient
from support.anthropic_served import backend, scripted  # noqa: F401 - the fixtures
from support.serve import TOOLS, served

from toolrouting import AsyncScriptedBackend, ScriptedRequest
from toolrouting._errors import BackendError
from toolrouting._limits import CHARS_PER_TOKEN
from toolrouting._serve import serve_app

#: The notes catalogue as Anthropic declares tools.
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": tool["function"]["name"],
        "description": tool["function"]["description"],
        "input_schema": tool["function"]["parameters"],
    }
    for tool in TOOLS
]
QUESTION: list[Any] = [{"role": "user", "content": "What does the latch on the storage-room door do?"}]
ACTION = '{"tool":"search","arguments":{"query":"latch"}}'
ANSWER = "The latch holds the storage-room door shut."
KEY = "sk-messages-test-key"
EVENTS: TypeAdapter[RawMessageStreamEvent] = TypeAdapter(RawMessageStreamEvent)


@pytest.fixture
def client(scripted: tuple[AsyncScriptedBackend, str]) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=scripted[1], api_key="unused", max_retries=0) as client:
        yield client


def ask(**given: Any) -> dict[str, Any]:
    return {"model": "scripted", "max_tokens": 64, "messages": QUESTION, **given}


def test_a_tool_use_is_one_message_and_the_stream_rebuilds_it(
    backend: AsyncScriptedBackend, client: anthropic.Anthropic
) -> None:
    backend.enqueue(ACTION, ACTION)
    raw = client.messages.with_raw_response.create(**ask(tools=ANTHROPIC_TOOLS))
    whole = Message.model_validate(raw.http_response.json())  # the SDK's type reads it as sent
    with client.messages.stream(**ask(tools=ANTHROPIC_TOOLS)) as stream:
        rebuilt = stream.get_final_message()
    assert whole.stop_reason == rebuilt.stop_reason == "tool_use"
    assert (whole.type, whole.role) == ("message", "assistant")
    assert whole.id.startswith("msg_")
    [use] = whole.content
    assert use.type == "tool_use"
    assert (use.name, use.input) == ("search", {"query": "latch"})
    assert [block.model_dump() for block in rebuilt.content] == [
        block.model_dump() for block in whole.content
    ]
    assert rebuilt.usage.input_tokens == whole.usage.input_tokens > 0
    assert rebuilt.usage.output_tokens == whole.usage.output_tokens


def test_an_answer_is_one_text_block_and_the_stream_rebuilds_it(
    backend: AsyncScriptedBackend, client: anthropic.Anthropic
) -> None:
    backend.enqueue('{"tool":"none"}', ANSWER, '{"tool":"none"}', ANSWER)
    whole = client.messages.create(**ask(tools=ANTHROPIC_TOOLS))
    with client.messages.stream(**ask(tools=ANTHROPIC_TOOLS)) as stream:
        texts = list(stream.text_stream)
        rebuilt = stream.get_final_message()
    assert whole.stop_reason == rebuilt.stop_reason == "end_turn"
    assert [block.model_dump() for block in whole.content] == [
        {"type": "text", "text": ANSWER, "citations": None}
    ]
    assert "".join(texts) == ANSWER
    assert rebuilt.content[0].model_dump() == whole.content[0].model_dump()
    assert rebuilt.usage.model_dump() == whole.usage.model_dump()


def test_every_event_is_one_the_sdks_types_accept_in_anthropics_order(
    backend: AsyncScriptedBackend, scripted: tuple[AsyncScriptedBackend, str]
) -> None:
    backend.enqueue(ACTION)
    with TestClient(serve_app(backend)) as http:
        response = http.post("/v1/messages", json=ask(tools=ANTHROPIC_TOOLS, stream=True))
    assert response.headers["content-type"].startswith("text/event-stream")
    names, datas = [], []
    for event in response.text.strip().split("\n\n"):
        head, data = event.split("\n")
        names.append(head.removeprefix("event: "))
        datas.append(json.loads(data.removeprefix("data: ")))
    assert [data["type"] for data in datas] == names
    assert names[:3] == ["message_start", "ping", "content_block_start"]
    assert set(names[3:-3]) == {"content_block_delta"}
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    for data in datas[2:]:
        EVENTS.validate_python(data)
    Message.model_validate(datas[0]["message"])
    assert "".join(data["delta"]["partial_json"] for data in datas[3:-3]) == '{"query":"latch"}'
    assert datas[-2]["delta"]["stop_reason"] == "tool_use"


def test_a_conversation_reaches_the_backend_as_the_chat_front_sends_it(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend, client: anthropic.Anthropic
) -> None:
    """One conversation, sent through chat completions and through Messages: the same bytes."""
    backend.enqueue(ACTION, '{"tool":"none"}', ANSWER)
    first = client.messages.create(**ask(tools=ANTHROPIC_TOOLS, system="Be brief."))
    history = [
        *QUESTION,
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in first.content]},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": first.content[0].id, "content": "M1"}],
        },
    ]
    client.messages.create(
        **ask(messages=history, tools=ANTHROPIC_TOOLS, system="Be brief."), extra_body={"temperature": 0.5}
    )
    through_messages = [(r.messages, r.settings) for r in backend.requests]
    backend.requests.clear()

    backend.enqueue(ACTION, '{"tool":"none"}', ANSWER)
    system: list[ChatCompletionMessageParam] = [{"role": "system", "content": "Be brief."}]
    with openai.OpenAI(base_url=f"{scripted[1]}/v1", api_key="unused", max_retries=0) as chat:
        call = chat.chat.completions.create(
            model="m", messages=[*system, *QUESTION], tools=TOOLS, max_tokens=64
        )
        message = call.choices[0].message
        chat.chat.completions.create(
            model="m",
            messages=[
                *system,
                *QUESTION,
                message.model_dump(exclude_none=True),  # type: ignore[list-item]
                {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "M1"},  # type: ignore[index]
            ],
            tools=TOOLS,
            max_tokens=64,
            temperature=0.5,
        )
    assert [(r.messages, r.settings) for r in backend.requests] == through_messages


def test_a_failed_tool_result_reaches_the_backend_as_an_error(
    backend: AsyncScriptedBackend, client: anthropic.Anthropic
) -> None:
    backend.enqueue('{"tool":"none"}', ANSWER)
    use = {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "latch"}}
    result = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "is_error": True,
        "content": [{"type": "text", "text": "down"}],
    }
    messages = [*QUESTION, {"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    client.messages.create(**ask(messages=messages, tools=ANTHROPIC_TOOLS))
    decision = backend.requests[0].messages
    assert decision[-2]["content"] == ACTION
    assert decision[-1]["content"] == "Tool error for search (call route-1):\ndown"


@pytest.mark.parametrize(
    ("choice", "offered"),
    [
        ({"type": "auto"}, {"search", "read", "none"}),
        ({"type": "any", "disable_parallel_tool_use": True}, {"search", "read"}),
        ({"type": "tool", "name": "read"}, {"read"}),
    ],
)
def test_tool_choice_is_the_decisions_offer(
    backend: AsyncScriptedBackend, client: anthropic.Anthropic, choice: Any, offered: set[str]
) -> None:
    def act(request: ScriptedRequest) -> str:
        assert request.settings.json_schema is not None
        names = {alt["properties"]["tool"]["const"] for alt in request.settings.json_schema["anyOf"]}
        assert names == offered
        return '{"tool":"read","arguments":{"id":"M1"}}'

    backend.enqueue(act)
    message = client.messages.create(**ask(tools=ANTHROPIC_TOOLS, tool_choice=choice))
    assert message.stop_reason == "tool_use"


def test_tool_choice_none_and_no_tools_ask_for_an_answer_alone(
    backend: AsyncScriptedBackend, client: anthropic.Anthropic
) -> None:
    backend.enqueue(ANSWER, ANSWER)
    client.messages.create(**ask(tools=ANTHROPIC_TOOLS, tool_choice={"type": "none"}))
    client.messages.create(**ask(system=[{"type": "text", "text": "Be"}, {"type": "text", "text": "brief."}]))
    assert [r.settings.json_schema for r in backend.requests] == [None, None]
    assert backend.requests[1].messages == (
        {"role": "system", "content": "Be\n\nbrief."},
        {"role": "user", "content": QUESTION[0]["content"]},
    )


def test_sampling_stop_sequences_and_the_cap_reach_the_answer(
    backend: AsyncScriptedBackend, client: anthropic.Anthropic
) -> None:
    backend.enqueue("one two three four five")
    message = client.messages.create(
        **ask(max_tokens=3, stop_sequences=["END"], metadata={"user_id": "u"}),
        # This SDK's create() no longer takes sampling arguments; the API and other clients send them.
        extra_body={"temperature": 0.25, "top_p": 0.5, "top_k": 7},
    )
    settings = backend.requests[0].settings
    assert (settings.temperature, settings.top_p, settings.top_k) == (0.25, 0.5, 7)
    assert (settings.stop, settings.max_tokens) == (("END",), 3)
    assert message.stop_reason == "max_tokens"
    assert message.content[0].model_dump() == {"type": "text", "text": "one two three", "citations": None}


def test_count_tokens_counts_what_the_backend_would_be_sent(
    backend: AsyncScriptedBackend, client: anthropic.Anthropic
) -> None:
    counted = client.messages.count_tokens(model="scripted", messages=QUESTION, tools=ANTHROPIC_TOOLS)
    assert isinstance(counted, MessageTokensCount)
    backend.enqueue(ACTION)
    client.messages.create(**ask(tools=ANTHROPIC_TOOLS))
    characters = sum(len(message["content"]) for message in backend.requests[0].messages)
    assert counted.input_tokens == math.ceil(characters / CHARS_PER_TOKEN)
    bare = client.messages.count_tokens(
        model="scripted", messages=[{"role": "user", "content": "hello there"}]
    )
    assert bare.input_tokens == 3


def test_the_key_is_taken_as_x_api_key_or_a_bearer_token() -> None:
    backend = AsyncScriptedBackend([ANSWER, ANSWER])
    with served(serve_app(backend, require_key=KEY)) as url:
        base = url.removesuffix("/v1")
        with anthropic.Anthropic(base_url=base, api_key=KEY, max_retries=0) as by_header:
            assert by_header.messages.create(**ask()).content[0].type == "text"
        with anthropic.Anthropic(base_url=base, auth_token=KEY, max_retries=0) as by_bearer:
            assert by_bearer.messages.create(**ask()).stop_reason == "end_turn"
        with (
            anthropic.Anthropic(base_url=base, api_key="wrong", max_retries=0) as wrong,
            pytest.raises(anthropic.AuthenticationError) as refused,
        ):
            wrong.messages.count_tokens(model="m", messages=QUESTION)
    body = ErrorResponse.model_validate(refused.value.body)
    assert body.error.type == "authentication_error"
    assert KEY not in body.error.message


@pytest.fixture(scope="module")
def http() -> Iterator[TestClient]:
    with TestClient(serve_app(AsyncScriptedBackend())) as http:
        yield http


def refusal(http: TestClient, body: Any, path: str = "/v1/messages", status: int = 400) -> str:
    response = http.post(path, json=body, headers={"anthropic-version": "2023-06-01"})
    assert response.status_code == status, response.text
    error = ErrorResponse.model_validate(response.json())
    assert error.type == "error"
    return f"{error.error.type}: {error.error.message}"


IMAGE = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"max_tokens": None}, "invalid_request_error: max_tokens: max_tokens is required"),
        ({"max_tokens": 0}, "invalid_request_error: max_tokens: "),
        (
            {"messages": [{"role": "user", "content": [IMAGE]}]},
            "messages[0].content[0].type: a content block of type 'image'",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "document", "source": {}}]}]},
            "messages[0].content[0].type: a content block of type 'document'",
        ),
        (
            {
                "messages": [
                    *QUESTION,
                    {"role": "assistant", "content": [{"type": "thinking", "thinking": "", "signature": ""}]},
                ]
            },
            "messages[1].content[0].signature: this reasoning was not written by this server",
        ),
        (
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
            "thinking.budget_tokens: the budget of 2048 tokens is not below max_tokens (64)",
        ),
        (
            {"tools": [{"type": "web_search_20250305", "name": "web_search"}]},
            "tools[0].type: a tool of type 'web_search_20250305'",
        ),
        ({"mcp_servers": [{"type": "url", "url": "https://x", "name": "x"}]}, "mcp_servers: "),
        (
            {"tools": ANTHROPIC_TOOLS, "tool_choice": {"type": "tool", "name": "write"}},
            "tool_choice.name: tool_choice names 'write'",
        ),
        ({"tool_choice": {"type": "any"}}, "tool_choice: tool_choice 'any' needs tools"),
        ({"temperature": 1.5}, "temperature: temperature is between 0 and 1"),
        ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].role: the role 'tool'"),
        (
            {
                "messages": [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "nobody", "content": "x"}],
                    }
                ],
                "tools": ANTHROPIC_TOOLS,
            },
            'messages[0].content[0].tool_use_id: the tool_result answers "nobody", which is no earlier',
        ),
    ],
)
def test_what_is_not_served_is_refused_by_the_field_in_anthropics_shape(
    http: TestClient, given: dict[str, Any], named: str
) -> None:
    body = {key: value for key, value in ask(**given).items() if value is not None}
    assert named in refusal(http, body)


def test_count_tokens_refuses_as_messages_does_and_needs_no_max_tokens(http: TestClient) -> None:
    assert "messages[0].content[0].type" in refusal(
        http, {"messages": [{"role": "user", "content": [IMAGE]}]}, "/v1/messages/count_tokens"
    )
    assert "tools[2]: tool catalogue entry 2: the name 'search' is used twice" in refusal(
        http,
        {"messages": QUESTION, "tools": [*ANTHROPIC_TOOLS, ANTHROPIC_TOOLS[0]]},
        "/v1/messages/count_tokens",
    )


def test_errors_under_the_messages_path_take_anthropics_shape_and_only_there(http: TestClient) -> None:
    assert refusal(http, {}, "/v1/messages/nowhere", 404).startswith(
        "not_found_error: POST /v1/messages/nowhere"
    )
    assert refusal(http, [], "/v1/messages").startswith("invalid_request_error: the body is a JSON object")
    assert http.get("/v1/messages").status_code == 405
    chat = http.post("/v1/chat/completions", json={})
    assert set(chat.json()["error"]) == {"message", "type", "param", "code"}


def test_a_backend_failure_is_an_api_error_whole_and_an_error_event_streamed(
    backend: AsyncScriptedBackend, client: anthropic.Anthropic
) -> None:
    with TestClient(serve_app(backend)) as http:
        backend.enqueue(BackendError("the backend is down"))
        assert refusal(http, ask(), status=502) == "api_error: the backend is down"
    # The call's head goes out as written; the whole reply is then refused.
    backend.enqueue('{"tool":"search","arguments":{"query":"latch"},"more":1}')
    with (
        pytest.raises(anthropic.APIStatusError) as failed,
        client.messages.stream(**ask(tools=ANTHROPIC_TOOLS)) as stream,
    ):
        stream.get_final_message()
    error = ErrorResponse.model_validate(failed.value.body)
    assert error.error.type == "api_error"
    assert "not a valid action" in error.error.message


def test_the_sdk_finds_the_server_by_anthropic_base_url(
    scripted: tuple[AsyncScriptedBackend, str], backend: AsyncScriptedBackend, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", scripted[1])
    monkeypatch.setenv("ANTHROPIC_API_KEY", "unused")
    backend.enqueue(ANSWER)
    with anthropic.Anthropic(max_retries=0) as client:
        assert client.messages.create(**ask()).content[0].model_dump()["text"] == ANSWER
