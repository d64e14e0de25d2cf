"""Several calls in one decision on the Responses and Messages fronts, through the openai and
anthropic SDKs on loopback, on a server of up to three calls a decision (``max_calls=3``).

Over the scripted backend: each call is its own ``function_call`` item or ``tool_use`` block,
under its own ids and in the order written, whole and streamed; ``parallel_tool_calls: false``
and ``disable_parallel_tool_use: true`` route one call (asserted on the schema the backend was
sent); and a history of several calls reaches the backend as the same messages through every
front as a ``RoutingLoop(max_calls=3)`` run sends. tests/serve/test_serve_front_calls_clients.py drives
the same server through the frameworks built on the SDKs, and the embedded model.
"""

# ruff: noqa: F811 - the fixture imported from support.anthropic_served is the tests' parameter
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from support.anthropic_served import backend  # noqa: F401 - the fixture, on this module's own scripted
from support.front_calls import (
    ANSWER,
    ANTHROPIC_TOOLS,
    FLAT,
    QUESTION,
    READ_ACTION,
    RESULTS,
    SEARCH_ACTION,
    TWO,
    function_calls,
    scripted,  # noqa: F401 - fixtures shared with other tests
)
from support.serve import TOOLS

from toolrouting import AsyncScriptedBackend, Message, RoutingLoop, ScriptedBackend, ToolOutput

#: What each call of ``TWO`` stands for: its name and its arguments' text.
CALLS = [("route-1", "search", '{"query":"latch"}'), ("route-2", "read", '{"id":"M1"}')]


class Notes:
    """The notes catalogue as a run's tools, each answering its fixed result."""

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [json.loads(json.dumps(tool)) for tool in TOOLS]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput(RESULTS[name])


@pytest.fixture
def openai_client(scripted: tuple[AsyncScriptedBackend, str]) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{scripted[1]}/v1", api_key="unused", max_retries=0) as client:
        yield client


@pytest.fixture
def anthropic_client(scripted: tuple[AsyncScriptedBackend, str]) -> Iterator[anthropic.Anthropic]:
    with anthropic.Anthropic(base_url=scripted[1], api_key="unused", max_retries=0) as client:
        yield client


def offered_calls(backend: AsyncScriptedBackend) -> int:
    """The most calls the route of the backend's last request takes: 1 when it has no array."""
    schema = backend.requests[-1].settings.json_schema
    assert schema is not None
    arrays = [alternative for alternative in schema["anyOf"] if alternative.get("type") == "array"]
    assert all(alternative.get("type") in ("object", "array") for alternative in schema["anyOf"])
    return max([array["maxItems"] for array in arrays], default=1)


def test_responses_several_calls_are_several_function_call_items_whole_and_streamed(
    backend: AsyncScriptedBackend, openai_client: openai.OpenAI
) -> None:
    backend.enqueue(TWO, TWO, TWO)
    whole = openai_client.responses.create(model="scripted", input=QUESTION, tools=FLAT)
    assert function_calls(whole.output) == CALLS
    assert all(item.id and item.id.startswith("fc_") for item in whole.output)
    assert offered_calls(backend) == 3  # parallel_tool_calls absent: OpenAI's default, true
    assert whole.parallel_tool_calls is True
    with openai_client.responses.stream(model="scripted", input=QUESTION, tools=FLAT) as stream:
        final = stream.get_final_response()
    assert function_calls(final.output) == CALLS
    # The raw events: each item added, its arguments written and done, the item done, in order.
    events = list(openai_client.responses.create(model="scripted", input=QUESTION, tools=FLAT, stream=True))
    per_item = [
        (event.type.removeprefix("response."), event.output_index)
        for event in events
        if hasattr(event, "output_index")
    ]
    assert per_item == [
        (kind, index)
        for index in (0, 1)
        for kind in (
            "output_item.added",
            "function_call_arguments.delta",
            "function_call_arguments.done",
            "output_item.done",
        )
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    assert events[-1].type == "response.completed"
    added = [event.item for event in events if event.type == "response.output_item.added"]
    done = [event.item for event in events if event.type == "response.output_item.done"]
    deltas = [event for event in events if event.type == "response.function_call_arguments.delta"]
    assert [item.id for item in added] == [item.id for item in done] == [d.item_id for d in deltas]
    assert [d.delta for d in deltas] == [arguments for _, _, arguments in CALLS]
    assert [item.model_dump() for item in done] == [item.model_dump() for item in events[-1].response.output]


def test_responses_parallel_tool_calls_false_routes_one_call(
    backend: AsyncScriptedBackend, openai_client: openai.OpenAI
) -> None:
    backend.enqueue(SEARCH_ACTION)
    one = openai_client.responses.create(
        model="scripted", input=QUESTION, tools=FLAT, parallel_tool_calls=False
    )
    assert function_calls(one.output) == CALLS[:1]
    assert one.parallel_tool_calls is False
    assert offered_calls(backend) == 1
    # The array such a route never lets a model write is not a valid action: a 502 that says why.
    backend.enqueue(TWO)
    with pytest.raises(openai.InternalServerError, match="not a valid action"):
        openai_client.responses.create(
            model="scripted", input=QUESTION, tools=FLAT, parallel_tool_calls=False
        )


def test_messages_several_calls_are_several_tool_use_blocks_whole_and_streamed(
    scripted: tuple[AsyncScriptedBackend, str],
    backend: AsyncScriptedBackend,
    anthropic_client: anthropic.Anthropic,
) -> None:
    backend.enqueue(TWO, TWO, TWO)
    ask: dict[str, Any] = {
        "model": "scripted",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": ANTHROPIC_TOOLS,
    }
    whole = anthropic_client.messages.create(**ask)
    assert whole.stop_reason == "tool_use"
    uses = [block for block in whole.content if isinstance(block, anthropic.types.ToolUseBlock)]
    assert len(uses) == len(whole.content) == 2
    assert [(use.id, use.name, json.dumps(use.input, separators=(",", ":"))) for use in uses] == CALLS
    assert offered_calls(backend) == 3  # no disable_parallel_tool_use: up to the server's three
    with anthropic_client.messages.stream(**ask) as stream:
        rebuilt = stream.get_final_message()
    assert [block.model_dump() for block in rebuilt.content] == [
        block.model_dump() for block in whole.content
    ]
    assert rebuilt.stop_reason == "tool_use"
    events = list(anthropic_client.messages.create(**ask, stream=True))
    blocks = [(event.type, getattr(event, "index", None)) for event in events]
    assert blocks == [
        ("message_start", None),
        *[
            (kind, index)
            for index in (0, 1)
            for kind in ("content_block_start", "content_block_delta", "content_block_stop")
        ],
        ("message_delta", None),
        ("message_stop", None),
    ]


@pytest.mark.parametrize(
    ("choice", "calls"),
    [
        ({"type": "auto", "disable_parallel_tool_use": True}, 1),
        ({"type": "any", "disable_parallel_tool_use": True}, 1),
        ({"type": "any", "disable_parallel_tool_use": False}, 3),
        ({"type": "tool", "name": "read"}, 3),
    ],
)
def test_messages_disable_parallel_tool_use_routes_one_call(
    backend: AsyncScriptedBackend, anthropic_client: anthropic.Anthropic, choice: Any, calls: int
) -> None:
    backend.enqueue(READ_ACTION)
    message = anthropic_client.messages.create(
        model="scripted",
        max_tokens=64,
        messages=[{"role": "user", "content": QUESTION}],
        tools=ANTHROPIC_TOOLS,
        tool_choice=choice,
    )
    assert [block.type for block in message.content] == ["tool_use"]
    assert offered_calls(backend) == calls


def test_a_history_of_several_calls_is_the_runs_decision_through_every_front(
    scripted: tuple[AsyncScriptedBackend, str],
    backend: AsyncScriptedBackend,
    openai_client: openai.OpenAI,
    anthropic_client: anthropic.Anthropic,
) -> None:
    """The run's second decision, after its two calls' results, is the backend's request through
    chat completions, Responses (the items sent, and continued by ``previous_response_id``) and
    Messages: byte for byte, the route included."""
    run_backend = ScriptedBackend([TWO, '{"tool":"none"}', ANSWER])
    question: list[Message] = [{"role": "user", "content": QUESTION}]
    RoutingLoop(run_backend, Notes(), max_calls=3, answer=True).run(question)
    run_first, run_second, run_answer = run_backend.requests
    sent: dict[str, tuple[tuple[Message, ...], tuple[Message, ...]]] = {}

    def decided(front: str) -> None:
        decision, answer = backend.requests[-2:]
        assert decision.settings.json_schema == run_second.settings.json_schema, front
        sent[front] = (decision.messages, answer.messages)

    ids = {"search": "call_a", "read": "call_b"}
    chat_calls = [
        {"id": ids[name], "type": "function", "function": {"name": name, "arguments": arguments}}
        for _, name, arguments in CALLS
    ]
    # Each front gets its results in the other order: they still follow in the order of the calls.
    chat_messages: list[Any] = [
        *question,
        {"role": "assistant", "content": None, "tool_calls": chat_calls},
        *[{"role": "tool", "tool_call_id": ids[n], "content": RESULTS[n]} for n in ("read", "search")],
    ]
    backend.enqueue('{"tool":"none"}', ANSWER)
    openai_client.chat.completions.create(model="scripted", messages=chat_messages, tools=TOOLS)
    decided("chat")

    items: list[Any] = [
        {"type": "function_call", "call_id": ids[name], "name": name, "arguments": arguments}
        for _, name, arguments in CALLS
    ]
    outputs: list[Any] = [
        {"type": "function_call_output", "call_id": ids[n], "output": RESULTS[n]} for n in ("read", "search")
    ]
    backend.enqueue('{"tool":"none"}', ANSWER)
    openai_client.responses.create(
        model="scripted", input=[{"role": "user", "content": QUESTION}, *items, *outputs], tools=FLAT
    )
    decided("responses")

    backend.enqueue(TWO)
    first = openai_client.responses.create(model="scripted", input=QUESTION, tools=FLAT)
    assert backend.requests[-1].messages == run_first.messages
    by_id = {item.name: item.call_id for item in first.output if item.type == "function_call"}
    backend.enqueue('{"tool":"none"}', ANSWER)
    continued = openai_client.responses.create(
        model="scripted",
        previous_response_id=first.id,
        input=[
            {"type": "function_call_output", "call_id": by_id[n], "output": RESULTS[n]}
            for n in ("read", "search")
        ],
        tools=FLAT,
    )
    assert continued.output_text == ANSWER
    decided("responses by previous_response_id")

    uses = [
        {"type": "tool_use", "id": ids[name], "name": name, "input": json.loads(arguments)}
        for _, name, arguments in CALLS
    ]
    results = [
        {"type": "tool_result", "tool_use_id": ids[n], "content": RESULTS[n]} for n in ("read", "search")
    ]
    turns: list[Any] = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]
    backend.enqueue('{"tool":"none"}', ANSWER)
    anthropic_client.messages.create(model="scripted", max_tokens=64, messages=turns, tools=ANTHROPIC_TOOLS)
    decided("messages")

    assert run_second.messages[-3]["content"] == TWO
    for front, (decision, answer) in sent.items():
        assert decision == run_second.messages, front
        assert answer == run_answer.messages, front
