"""The serve core's conversation (``_serve/conversation.py``), without a socket: a request's
messages as the conversation a routing run sends, byte for byte, its calls as actions and its
results as the loop's result messages, under the call ids the loop gives."""

from __future__ import annotations

import json
from typing import Any

import pytest
from support.serve_tools import TOOLS, read, search

from toolrouting import ChatRequestError, FunctionTools, Message, RoutingLoop, ScriptedBackend, Settings
from toolrouting._route_schema import action_text, route_schema
from toolrouting._serve import (
    arguments_text,
    conversation_of,
    decision_of,
    read_chat_request,
)


def test_a_conversation_is_what_routing_loop_sends_byte_for_byte() -> None:
    # The loop runs on a scripted backend: its requests are the reference the server must meet.
    search_action = '{"tool":"search","arguments":{"query":"latch"}}'
    backend = ScriptedBackend([search_action, '{"tool":"none"}'])
    RoutingLoop(backend, FunctionTools(search, read)).run(
        [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What does the latch do?"}]
    )
    sent_by_loop = backend.requests[1].messages
    # The same turn as an OpenAI client sends it, under ids the server never gave.
    request = read_chat_request(
        {
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "What does the latch do?"},
                {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_abc",
                            "type": "function",
                            "function": {"name": "search", "arguments": '{"query":"latch"}'},
                        }
                    ],
                },
                {
                    "role": "tool",
                    "tool_call_id": "call_abc",
                    "content": [{"type": "text", "text": search("latch")}],
                },
            ],
            "tools": TOOLS,
        }
    )
    decision = decision_of(request, conversation_of(request, spaced=False))
    assert decision is not None
    assert decision.messages == sent_by_loop


@pytest.mark.parametrize("spaced", [False, True])
def test_an_action_the_grammar_wrote_comes_back_as_the_same_text(spaced: bool) -> None:
    colon, comma = (": ", ", ") if spaced else (":", ",")
    reply = f'{{"tool"{colon}"search"{comma}"arguments"{colon}{{"query"{colon}"a  b"}}}}'
    arguments = arguments_text(reply, "search", {"query": "a  b"}, spaced=spaced)
    assert json.loads(arguments) == {"query": "a  b"}
    assert action_text("search", arguments, spaced=spaced) == reply


def test_an_action_in_another_layout_is_written_compactly() -> None:
    reply = '{ "tool" : "search", "arguments" : {"query" : "x"} }'
    assert arguments_text(reply, "search", {"query": "x"}, spaced=False) == '{"query":"x"}'


def test_the_call_ids_count_the_calls_of_the_conversation() -> None:
    def call(call_id: str) -> dict[str, Any]:
        function = {"name": "search", "arguments": '{"query":"x"}'}
        return {
            "role": "assistant",
            "tool_calls": [{"id": call_id, "type": "function", "function": function}],
        }

    messages = [
        {"role": "user", "content": "q"},
        call("a"),
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        call("b"),
        {"role": "tool", "tool_call_id": "b", "content": "two"},
    ]
    conversation = conversation_of(read_chat_request({"messages": messages}), spaced=False)
    assert conversation.calls == 2
    assert conversation.messages[2]["content"] == "Tool result for search (call route-1):\none"
    assert conversation.messages[4]["content"] == "Tool result for search (call route-2):\ntwo"
    assert conversation.question == 1


@pytest.mark.parametrize(
    ("messages", "param"),
    [
        (
            [{"role": "user", "content": "q"}, {"role": "tool", "tool_call_id": "x", "content": "r"}],
            "messages[1]",
        ),
        (
            [
                {"role": "user", "content": "q"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {"id": "x", "type": "function", "function": {"name": "s", "arguments": "[1]"}}
                    ],
                },
            ],
            "messages[1].tool_calls[0].function.arguments",
        ),
    ],
)
def test_a_call_or_result_that_cannot_be_one_is_refused(messages: list[Any], param: str) -> None:
    request = read_chat_request({"messages": messages})
    with pytest.raises(ChatRequestError) as caught:
        conversation_of(request, spaced=False)
    assert caught.value.param is not None
    assert caught.value.param.startswith(param)


def test_several_calls_in_one_message_become_the_rounds_a_run_makes() -> None:
    # Another server's history: two calls in one assistant message, answered in the other order.
    search_action = '{"tool":"search","arguments":{"query":"latch"}}'
    read_action = '{"tool":"read","arguments":{"ids":["M1"]}}'
    backend = ScriptedBackend([search_action, read_action, '{"tool":"none"}'])
    question: list[Message] = [{"role": "user", "content": "What does the latch do?"}]
    RoutingLoop(backend, FunctionTools(search, read)).run(question)
    sent_by_loop = backend.requests[2].messages

    def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}

    request = read_chat_request(
        {
            "messages": [
                *question,
                {
                    "role": "assistant",
                    "content": "Let me look.",
                    "tool_calls": [
                        call("x1", "search", '{"query":"latch"}'),
                        call("x2", "read", '{"ids":["M1"]}'),
                    ],
                },
                {"role": "tool", "tool_call_id": "x2", "content": read(["M1"])},
                {"role": "tool", "tool_call_id": "x1", "content": search("latch")},
            ],
            "tools": TOOLS,
        }
    )
    conversation = conversation_of(request, spaced=False)
    decision = decision_of(request, conversation)
    assert decision is not None
    assert decision.messages == sent_by_loop
    assert conversation.calls == 2


def test_an_open_call_still_stands_for_its_action_before_the_next_message() -> None:
    calls = [
        {"id": "a", "type": "function", "function": {"name": "search", "arguments": '{"query":"x"}'}},
        {"id": "b", "type": "function", "function": {"name": "read", "arguments": "{}"}},
    ]
    messages = [
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": None, "tool_calls": calls},
        {"role": "tool", "tool_call_id": "a", "content": "one"},
        {"role": "user", "content": "and then?"},
    ]
    conversation = conversation_of(read_chat_request({"messages": messages}), spaced=False)
    assert [(m["role"], m["content"]) for m in conversation.messages] == [
        ("user", "q"),
        ("assistant", '{"tool":"search","arguments":{"query":"x"}}'),
        ("user", "Tool result for search (call route-1):\none"),
        ("assistant", '{"tool":"read","arguments":{}}'),
        ("user", "and then?"),
    ]
    assert conversation.question == 5


@pytest.mark.parametrize("spaced", [False, True], ids=["compact", "spaced"])
def test_several_calls_in_one_message_are_the_decision_a_run_with_max_calls_sends(spaced: bool) -> None:
    # On a server whose decisions make up to K calls, an assistant message of several calls is
    # the one decision RoutingLoop(max_calls=K) commits: one array, then each result in order.
    comma, colon = (", ", ": ") if spaced else (",", ":")
    search_action = f'{{"tool"{colon}"search"{comma}"arguments"{colon}{{"query"{colon}"latch"}}}}'
    read_action = f'{{"tool"{colon}"read"{comma}"arguments"{colon}{{"ids"{colon}["M1"]}}}}'
    decision = f"[{search_action}{comma}{read_action}]"
    backend = ScriptedBackend(
        [decision, '{"tool":"none"}'], settings=Settings(spaced=spaced) if spaced else None
    )
    question: list[Message] = [{"role": "user", "content": "What does the latch do?"}]
    RoutingLoop(backend, FunctionTools(search, read), max_calls=3).run(question)
    sent_by_loop = backend.requests[1].messages

    def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
        return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}

    messages = [
        *question,
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                call("x1", "search", f'{{"query"{colon}"latch"}}'),
                call("x2", "read", f'{{"ids"{colon}["M1"]}}'),
            ],
        },
        # Answered in the other order: the results still follow in the order of the calls.
        {"role": "tool", "tool_call_id": "x2", "content": read(["M1"])},
        {"role": "tool", "tool_call_id": "x1", "content": search("latch")},
    ]
    request = read_chat_request({"messages": messages, "tools": TOOLS})
    conversation = conversation_of(request, spaced=spaced, max_calls=3)
    served = decision_of(request, conversation, max_calls=3)
    assert served is not None
    assert served.messages == sent_by_loop
    assert conversation.calls == 2
    assert served.max_calls == 3
    assert served.schema == backend.requests[1].settings.json_schema
    # parallel_tool_calls false: the same instructions and history, a route of one call.
    one = read_chat_request({"messages": messages, "tools": TOOLS, "parallel_tool_calls": False})
    single = decision_of(one, conversation_of(one, spaced=spaced, max_calls=3), max_calls=3)
    assert single is not None
    assert single.messages == sent_by_loop
    assert single.max_calls == 1
    assert single.schema == route_schema(TOOLS)
    # A server of one call a decision keeps the rounds it always made.
    assert decision_of(request, conversation_of(request, spaced=spaced)) != served
