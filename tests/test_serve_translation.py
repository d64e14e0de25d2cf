"""toolrouting serve's translation, without a socket: a request in, what the backend is sent, a reply out."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolrouting import ChatRequestError, FunctionTools, Message, RoutingLoop, ScriptedBackend, Settings
from toolrouting._route_schema import action_text, route_schema
from toolrouting._serve import (
    arguments_text,
    conversation_of,
    decision_of,
    decode_body,
    read_chat_request,
)
from toolrouting._serve.call_pieces import CallStream
from toolrouting._serve.chat.writer import delta_body
from toolrouting._serve.limits import SERVE_MAX_BODY_BYTES
from toolrouting._serve.plan import answer_messages, answer_settings
from toolrouting._serve.protocol import ToolCall


def search(query: str) -> str:
    """Search the notes."""
    return f"M1: a note about {query}"


def read(ids: list[str]) -> str:
    """Read notes by id."""
    return "the latch holds the door"


TOOLS = FunctionTools(search, read).tools_for_llm()


def body(**fields: Any) -> dict[str, Any]:
    return {"model": "m", "messages": [{"role": "user", "content": "What does the latch do?"}], **fields}


def refused(value: Any) -> ChatRequestError:
    with pytest.raises(ChatRequestError) as caught:
        read_chat_request(value)
    return caught.value


def test_tool_choice_defaults_to_auto_with_tools_and_to_text_without() -> None:
    assert read_chat_request(body(tools=TOOLS)).tool_choice.mode == "auto"
    assert read_chat_request(body()).tool_choice.mode == "none"


@pytest.mark.parametrize(
    ("choice", "names", "handoff"),
    [
        ("auto", ["search", "read", "none"], True),
        ("required", ["search", "read"], False),
        ({"type": "function", "function": {"name": "read"}}, ["read"], False),
        (
            {
                "type": "allowed_tools",
                "allowed_tools": {"mode": "auto", "tools": [{"function": {"name": "read"}}]},
            },
            ["read", "none"],
            True,
        ),
    ],
)
def test_tool_choice_picks_the_route_and_the_instructions_stay_the_same(
    choice: Any, names: list[str], handoff: bool
) -> None:
    request = read_chat_request(body(tools=TOOLS, tool_choice=choice))
    decision = decision_of(request, conversation_of(request, spaced=False))
    assert decision is not None
    offered = [alt["properties"]["tool"]["const"] for alt in decision.schema["anyOf"]]
    assert offered == names
    assert decision.handoff is handoff
    auto = read_chat_request(body(tools=TOOLS))
    auto_decision = decision_of(auto, conversation_of(auto, spaced=False))
    assert auto_decision is not None
    assert decision.messages == auto_decision.messages  # the prefix a server caches does not move


def test_tool_choice_none_asks_no_decision_and_answers_from_the_answer_request() -> None:
    request = read_chat_request(body(tools=TOOLS, tool_choice="none"))
    conversation = conversation_of(request, spaced=False)
    assert decision_of(request, conversation) is None
    [asked] = answer_messages(request, conversation)
    assert "\n\nQuestion: What does the latch do?\n" in asked["content"]


def test_without_tools_the_messages_pass_through() -> None:
    messages = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "text", "text": " there"}]},
    ]
    request = read_chat_request({"messages": messages})
    conversation = conversation_of(request, spaced=False)
    assert answer_messages(request, conversation) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi there"},
    ]


def test_the_answer_takes_the_requests_cap_sampling_and_stops_or_the_stated_default() -> None:
    base = Settings(max_tokens=256, temperature=0.0, json_schema={"type": "object"})
    asked = read_chat_request(body(max_tokens=7, temperature=0.5, stop=["\n\n"]))
    settings = answer_settings(base, asked, 1024)
    assert (settings.max_tokens, settings.temperature, settings.stop, settings.json_schema) == (
        7,
        0.5,
        ("\n\n",),
        None,
    )
    assert answer_settings(base, read_chat_request(body()), 1024).max_tokens == 1024


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
    ("value", "param", "code"),
    [
        ([], None, "invalid_request"),
        ({"messages": []}, "messages", "invalid_request"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "unknown_role"),
        ({"messages": [{"role": "user"}]}, "messages[0].content", "invalid_request"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages[0].content[0]",
            "unsupported_content",
        ),
        (body(n=2), "n", "unsupported_parameter"),
        (body(temperature=3), "temperature", "invalid_request"),
        (body(max_tokens=0), "max_tokens", "invalid_request"),
        (body(stop=["a", "b", "c", "d", "e"]), "stop", "invalid_request"),
        (body(stream="yes"), "stream", "invalid_request"),
        (body(tool_choice="required"), "tool_choice", "invalid_request"),
        (
            body(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}),
            None,
            "unknown_tool",
        ),
        (body(tools={"search": {}}), "tools", "invalid_request"),
    ],
)
def test_a_bad_field_is_refused_by_its_path(value: Any, param: str | None, code: str) -> None:
    error = refused(value)
    assert error.status == 400
    assert error.code == code
    if param is not None:
        assert error.param == param


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


def test_a_body_that_is_not_json_or_too_large_is_refused() -> None:
    with pytest.raises(ChatRequestError, match="not valid JSON"):
        decode_body(b"{bad")
    with pytest.raises(ChatRequestError, match="not valid JSON"):
        decode_body(b'{"temperature": NaN}')
    with pytest.raises(ChatRequestError) as caught:
        decode_body(b" " * (SERVE_MAX_BODY_BYTES + 1))
    assert caught.value.status == 413


def test_a_catalogue_error_names_the_request_index() -> None:
    tools = [*TOOLS, {"type": "function", "function": {"name": "none"}}]
    request = read_chat_request(body(tools=tools))
    with pytest.raises(Exception, match="entry 2") as caught:
        decision_of(request, conversation_of(request, spaced=False))
    assert getattr(caught.value, "index", None) == 2


def test_a_streamed_call_hands_out_its_head_first_and_its_arguments_as_written() -> None:
    reply = '{"tool":"search","arguments":{"query":"the {latch}"}}'
    stream = CallStream(["search", "read"], "route-1", spaced=False)
    pieces = [piece for char in reply for piece in stream.feed(char)]
    arguments = arguments_text(reply, "search", {"query": "the {latch}"}, spaced=False)
    pieces += stream.finish(ToolCall(id="route-1", name="search", arguments=arguments))
    deltas = [delta_body(piece) for piece in pieces]
    head = deltas[0]["tool_calls"][0]
    assert (head["index"], head["id"], head["type"], head["function"]["name"]) == (
        0,
        "route-1",
        "function",
        "search",
    )
    assert "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas) == arguments
    assert len(deltas) > 3  # the arguments came in pieces, not at the end


def test_a_streamed_call_is_named_as_soon_as_one_offered_name_alone_fits() -> None:
    stream = CallStream(["search", "read", "reader"], "route-1", spaced=False)
    assert stream.feed('{"tool":"re') == []  # read, reader
    assert stream.feed("ad") == []  # read or reader still
    [head] = map(delta_body, stream.feed('er"'))
    assert head["tool_calls"][0]["function"]["name"] == "reader"
    other = CallStream(["search", "read"], "route-1", spaced=False)
    assert other.feed('{"tool":"n') == []  # none is an action too: no call yet
    [named] = map(delta_body, CallStream(["search", "read"], "route-1", spaced=False).feed('{"tool":"s'))
    assert named["tool_calls"][0]["function"]["name"] == "search"


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


def test_parallel_tool_calls_is_a_bool() -> None:
    assert read_chat_request(body()).parallel_tool_calls is True
    assert read_chat_request(body(parallel_tool_calls=False)).parallel_tool_calls is False
    error = refused(body(parallel_tool_calls="no"))
    assert (str(error), error.param) == (
        "parallel_tool_calls: parallel_tool_calls is a boolean, not a string",
        "parallel_tool_calls",
    )
