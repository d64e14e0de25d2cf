"""toolrouting serve's ``response_format`` beside tools: the route's ``none`` holds the answer.

With ``tools``, ``tool_choice`` auto and a ``response_format``, one request decides and
answers: ``{"tool":"none","answer":...}``, the answer under the schema, is the reply's
content. Over the scripted upstream (a reply passes as scripted), through the openai SDK on
loopback, these check what the backend is asked (one request, the route, its cap, the same
instructions) and what the client gets, whole and streamed; tests/serve/chat/test_serve_chat_structured.py
checks the guarantee on the model.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest
from support.pydantic_models import Order
from support.serve import TOOLS, served_to_sdk
from support.structured import NOTE, QUESTION, json_schema

from toolrouting import AsyncScriptedBackend, Completion, GrammarError, Usage, route_grammar

ANSWERED = [
    '{"tool":"none","answer":{"title":"A latch","stars":4}}',
    '{"tool": "none", "answer": {"title": "The latch, } closed", "stars": -1} }',
    '{"answer":{"stars":0,"title":""},"tool":"none"}',
]
ROUTING_CAP, ANSWER_TOKENS = 512, 1024


@pytest.fixture
def sdk() -> Iterator[tuple[AsyncScriptedBackend, openai.OpenAI]]:
    with served_to_sdk("scripted") as both:
        yield both


def ask(
    client: openai.OpenAI, *, stream: bool, response_format: Any = None, **fields: Any
) -> tuple[str | None, str | None, list[tuple[str, str]]]:
    """The content, finish reason and tool calls (name, arguments) of one reply, whole or
    streamed (the pieces joined)."""
    body: dict[str, Any] = {"model": "scripted", "messages": QUESTION, "tools": TOOLS, **fields}
    body["response_format"] = response_format or json_schema(NOTE, True)
    if not stream:
        [choice] = client.chat.completions.create(**body).choices
        made = [(c.function.name, c.function.arguments) for c in choice.message.tool_calls or []]
        return choice.message.content, choice.finish_reason, made
    texts, finish, calls = [], None, dict[int, tuple[str, str]]()
    for chunk in client.chat.completions.create(**body, stream=True):
        for piece in chunk.choices:
            texts.append(piece.delta.content or "")
            for call in piece.delta.tool_calls or []:
                name, arguments = calls.get(call.index, ("", ""))
                if call.function is not None:
                    name += call.function.name or ""
                    arguments += call.function.arguments or ""
                calls[call.index] = (name, arguments)
            finish = piece.finish_reason or finish
    return "".join(texts) if texts else None, finish, list(calls.values())


@pytest.mark.parametrize("stream", [False, True])
def test_one_request_decides_and_its_none_is_the_answer_under_the_schema(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI], stream: bool
) -> None:
    backend, client = sdk
    for number, reply in enumerate(ANSWERED, start=1):
        backend.enqueue(reply)
        content, finish, calls = ask(client, stream=stream)
        assert (finish, calls) == ("stop", [])
        assert content is not None
        jsonschema.validate(json.loads(content), NOTE)
        assert json.loads(content) == json.loads(reply)["answer"]
        assert len(backend.requests) == number  # no second request
    decision = backend.requests[-1].settings
    assert decision.json_schema_name == "tool_route"
    assert decision.json_schema is not None
    assert decision.json_schema["anyOf"][-1]["required"] == ["tool", "answer"]
    assert decision.max_tokens == ROUTING_CAP + ANSWER_TOKENS  # the route and the answer


def test_the_cap_is_the_routing_cap_and_the_requests_answer_tokens(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = sdk
    backend.enqueue(ANSWERED[0], ANSWERED[0])
    ask(client, stream=False, max_tokens=50)
    ask(client, stream=False, max_completion_tokens=60)
    assert [r.settings.max_tokens for r in backend.requests] == [ROUTING_CAP + 50, ROUTING_CAP + 60]


@pytest.mark.parametrize("stream", [False, True])
def test_an_answer_the_cap_cut_is_what_it_had_so_far_finished_by_length(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI], stream: bool
) -> None:
    backend, client = sdk
    cut = '{"tool":"none","answer":{"title":"A very long'
    backend.enqueue(Completion(text=cut, finish_reason="length", usage=Usage(), truncated=True))
    assert ask(client, stream=stream)[:2] == ('{"title":"A very long', "length")


def test_a_reply_cut_before_its_answer_began_is_the_backends_failure(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = sdk
    backend.enqueue(Completion(text='{"tool":"no', finish_reason="length", usage=Usage(), truncated=True))
    backend.enqueue('{"tool":"none"}')  # a none without the answer the route demands
    problems = []
    for _ in range(2):
        with pytest.raises(openai.APIStatusError) as raised:
            ask(client, stream=False)
        assert raised.value.status_code == 502
        problems.append(raised.value.message)
    assert "cut off at the cap of the route and its answer (512 tokens and the answer's)" in problems[0]


@pytest.mark.parametrize("stream", [False, True])
def test_a_tool_call_is_served_as_ever(sdk: tuple[AsyncScriptedBackend, openai.OpenAI], stream: bool) -> None:
    backend, client = sdk
    backend.enqueue('{"tool":"read","arguments":{"id":"latch"}}')
    content, finish, calls = ask(client, stream=stream)
    assert (content or None, finish) == (None, "tool_calls")
    assert [(name, json.loads(arguments)) for name, arguments in calls] == [("read", {"id": "latch"})]
    assert len(backend.requests) == 1


def test_the_instructions_are_those_of_a_request_without_the_schema(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = sdk
    backend.enqueue(ANSWERED[0], '{"tool":"none"}', "In words.")
    ask(client, stream=False)
    client.chat.completions.create(model="scripted", messages=QUESTION, tools=TOOLS)
    with_schema, without, _ = backend.requests
    assert with_schema.messages == without.messages  # the prefix a server caches, the same


def test_required_and_none_choices_are_unchanged(sdk: tuple[AsyncScriptedBackend, openai.OpenAI]) -> None:
    backend, client = sdk
    backend.enqueue('{"tool":"search","arguments":{"query":"latch"}}', '{"title":"A","stars":1}')
    assert ask(client, stream=False, tool_choice="required")[1] == "tool_calls"
    required = backend.requests[0].settings
    assert required.json_schema is not None
    assert required.max_tokens == ROUTING_CAP
    assert all("answer" not in alt["properties"] for alt in required.json_schema["anyOf"])
    content, finish, _ = ask(client, stream=False, tool_choice="none")
    assert (json.loads(content or ""), finish) == ({"title": "A", "stars": 1}, "stop")
    assert backend.requests[1].settings.json_schema == NOTE  # the answer alone, as ever


def test_a_schema_with_defs_joins_the_routes_beside_the_tools(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = sdk
    schema = Order.model_json_schema()
    assert "$defs" in schema
    order = {"main": {"name": "latch", "count": 1}, "more": [{"name": "key", "count": 2}]}
    backend.enqueue(json.dumps({"tool": "none", "answer": order}))
    content, finish, _ = ask(client, stream=True, response_format=json_schema(schema, True, "Order"))
    assert finish == "stop"
    assert Order.model_validate_json(content or "") == Order.model_validate(order)
    route = backend.requests[0].settings.json_schema
    assert route is not None
    assert set(route["$defs"]) == {"none.Item"}
    route_grammar(route)  # the refs resolve: the route compiles


def test_a_grammar_refused_in_the_answer_is_named_under_response_format(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = sdk
    inside = "/anyOf/2/properties/answer/properties/title"  # none follows the two tools
    backend.enqueue(
        GrammarError(f"{inside} maxLength: refused", inside),
        GrammarError("/$defs/none.Item minimum: refused", "/$defs/none.Item"),
        GrammarError("/anyOf/0 pattern: refused", "/anyOf/0"),
    )
    params = []
    for _ in range(3):
        with pytest.raises(openai.BadRequestError) as raised:
            ask(client, stream=False)
        params.append(raised.value.body["param"])  # type: ignore[index]
    assert params == [
        "response_format.json_schema.schema.properties.title.maxLength",
        "response_format.json_schema.schema.$defs.Item.minimum",
        "tools",  # a tool's part of the route is the tools'
    ]


def test_an_answers_definition_named_as_a_tools_is_a_400_naming_the_tools(
    sdk: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = sdk
    parameters = {
        "type": "object",
        "properties": {"p": {"$ref": "#/$defs/b"}},
        "$defs": {"b": {"type": "string"}},
    }
    tools = [{"type": "function", "function": {"name": "none.a", "parameters": parameters}}]
    schema = {
        "type": "object",
        "properties": {"q": {"$ref": "#/$defs/a.b"}},
        "$defs": {"a.b": {"type": "string"}},
    }
    with pytest.raises(openai.BadRequestError) as raised:
        ask(client, stream=False, response_format=json_schema(schema, True), tools=tools)
    assert raised.value.body["param"] == "tools"  # type: ignore[index]
    assert backend.requests == []
