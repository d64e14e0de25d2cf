"""The loop's repeat rule behind serve: a call the conversation made more than ``max_repeats``
times since its question, its result there, is not offered again.

The client runs the loop, so the server reads the rule off the conversation it is sent. The
SDKs drive a server on loopback over the scripted fake, which records the route each decision
was sent: the guarantee is that route, which has no alternative for the repeated call's tool
(the model can only route another tool or ``none``), and the ``x-toolrouting-withheld`` header
that names it, on each API, whole and streamed.
"""

# ruff: noqa: F811 - the fixtures imported from support.anthropic_served are the tests' parameters
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from support.anthropic_served import backend, claude, root, scripted  # noqa: F401 - the fixtures
from support.serve import TOOLS, served_to_sdk

from toolrouting import AsyncScriptedBackend, ScriptedRequest
from toolrouting._limits import DEFAULT_MAX_REPEATS
from toolrouting._serve import conversation_of, decision_of, read_chat_request, serve_app
from toolrouting._serve.transport import WITHHELD_HEADER

QUESTION = "What does the latch on the storage-room door do?"
ANSWER = "It holds the door."
HANDOFF = '{"tool":"none"}'
RESULT = "M1: it locks itself."
LATCH = {"query": "latch"}
RESPONSES_TOOLS: list[Any] = [{"type": "function", **tool["function"]} for tool in TOOLS]
ANTHROPIC_TOOLS: list[Any] = [
    {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS
]


@pytest.fixture
def chat(root: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{root}/v1", api_key="unused", max_retries=0) as client:
        yield client


def offered(request: ScriptedRequest) -> list[str]:
    """The tools a decision's route offers, ``none`` among them: one alternative each."""
    schema = request.settings.json_schema
    assert schema is not None
    return [alternative["properties"]["tool"]["const"] for alternative in schema["anyOf"]]


def chat_messages(calls: list[dict[str, Any]]) -> list[Any]:
    """The question, then each call made and its result, in chat completions' shapes."""
    messages: list[Any] = [{"role": "user", "content": QUESTION}]
    for index, arguments in enumerate(calls):
        function = {"name": "search", "arguments": json.dumps(arguments)}
        call = {"id": f"c{index}", "type": "function", "function": function}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        messages.append({"role": "tool", "tool_call_id": f"c{index}", "content": RESULT})
    return messages


def responses_input(calls: list[dict[str, Any]]) -> list[Any]:
    items: list[Any] = [{"role": "user", "content": QUESTION}]
    for index, arguments in enumerate(calls):
        items.append(
            {
                "type": "function_call",
                "call_id": f"c{index}",
                "name": "search",
                "arguments": json.dumps(arguments),
            }
        )
        items.append({"type": "function_call_output", "call_id": f"c{index}", "output": RESULT})
    return items


def messages_turns(calls: list[dict[str, Any]]) -> list[Any]:
    turns: list[Any] = [{"role": "user", "content": QUESTION}]
    for index, arguments in enumerate(calls):
        use = {"type": "tool_use", "id": f"toolu_{index}", "name": "search", "input": arguments}
        result = {"type": "tool_result", "tool_use_id": f"toolu_{index}", "content": RESULT}
        turns += [{"role": "assistant", "content": [use]}, {"role": "user", "content": [result]}]
    return turns


#: The same call, made once more than the repeat limit lets it run again: the next is withheld.
REPEATED = [LATCH] * (DEFAULT_MAX_REPEATS + 1)
#: The same tool, each call below the limit: still offered.
VARIED = [{"query": f"latch {n}"} for n in range(DEFAULT_MAX_REPEATS + 2)]


@pytest.mark.parametrize("stream", [False, True])
def test_chat_withholds_the_repeated_calls_tool_and_says_so(
    backend: AsyncScriptedBackend, chat: openai.OpenAI, stream: bool
) -> None:
    backend.enqueue(HANDOFF, ANSWER)
    raw = chat.chat.completions.with_raw_response.create(
        model="m", messages=chat_messages(REPEATED), tools=TOOLS, stream=stream
    )
    parsed: Any = raw.parse()
    text = "".join(c.choices[0].delta.content or "" for c in parsed if c.choices) if stream else None
    assert (text if stream else parsed.choices[0].message.content) == ANSWER
    assert offered(backend.requests[0]) == ["read", "none"]
    assert raw.headers[WITHHELD_HEADER] == "search"


@pytest.mark.parametrize("stream", [False, True])
def test_a_different_call_of_the_same_tool_is_still_offered(
    backend: AsyncScriptedBackend, chat: openai.OpenAI, stream: bool
) -> None:
    backend.enqueue('{"tool":"search","arguments":{"query":"door"}}')
    raw = chat.chat.completions.with_raw_response.create(
        model="m", messages=chat_messages(VARIED), tools=TOOLS, stream=stream
    )
    list(raw.parse()) if stream else raw.parse()
    assert offered(backend.requests[0]) == ["search", "read", "none"]
    assert WITHHELD_HEADER not in raw.headers


@pytest.mark.parametrize("stream", [False, True])
def test_responses_withholds_the_repeated_calls_tool(
    backend: AsyncScriptedBackend, chat: openai.OpenAI, stream: bool
) -> None:
    backend.enqueue('{"tool":"read","arguments":{"id":"M1"}}')
    raw = chat.responses.with_raw_response.create(
        model="m", input=responses_input(REPEATED), tools=RESPONSES_TOOLS, stream=stream
    )
    if stream:
        events: Any = list(raw.parse())
        final = events[-1].response
    else:
        final = raw.parse()
    [call] = [item for item in final.output if item.type == "function_call"]
    assert call.name == "read"
    assert offered(backend.requests[0]) == ["read", "none"]
    assert raw.headers[WITHHELD_HEADER] == "search"


@pytest.mark.parametrize("stream", [False, True])
def test_messages_withholds_the_repeated_calls_tool(
    backend: AsyncScriptedBackend, claude: anthropic.Anthropic, stream: bool
) -> None:
    backend.enqueue(HANDOFF, ANSWER)
    raw = claude.messages.with_raw_response.create(
        model="claude",
        max_tokens=256,
        messages=messages_turns(REPEATED),
        tools=ANTHROPIC_TOOLS,
        stream=stream,
    )
    parsed: Any = raw.parse()
    if stream:
        assert list(parsed)[-1].type == "message_stop"
    else:
        assert parsed.stop_reason == "end_turn"
    assert offered(backend.requests[0]) == ["read", "none"]
    assert raw.headers[WITHHELD_HEADER] == "search"
    # Below the limit, the same tool is offered, and no header says otherwise.
    backend.enqueue(HANDOFF, ANSWER)
    below = claude.messages.with_raw_response.create(
        model="claude", max_tokens=256, messages=messages_turns(REPEATED[1:]), tools=ANTHROPIC_TOOLS
    )
    below.parse()
    assert offered(backend.requests[2]) == ["search", "read", "none"]
    assert WITHHELD_HEADER not in below.headers


def test_a_call_is_the_same_whatever_the_spacing_of_its_arguments(
    backend: AsyncScriptedBackend, chat: openai.OpenAI
) -> None:
    backend.enqueue(HANDOFF, ANSWER)
    messages = chat_messages(REPEATED)
    messages[-2]["tool_calls"][0]["function"]["arguments"] = '{ "query" :\n "latch" }'
    chat.chat.completions.create(model="m", messages=messages, tools=TOOLS)
    assert offered(backend.requests[0]) == ["read", "none"]


def test_a_new_question_begins_a_new_count(backend: AsyncScriptedBackend, chat: openai.OpenAI) -> None:
    """The loop counts repeats in one run, one question's: the calls before a later question
    do not count against it."""
    backend.enqueue(HANDOFF, ANSWER)
    earlier = chat_messages(REPEATED)
    asked = [*earlier, {"role": "assistant", "content": ANSWER}, {"role": "user", "content": "And the key?"}]
    raw = chat.chat.completions.with_raw_response.create(model="m", messages=asked, tools=TOOLS)
    raw.parse()
    assert offered(backend.requests[0]) == ["search", "read", "none"]
    assert WITHHELD_HEADER not in raw.headers


def test_a_required_choice_keeps_what_is_left_and_refuses_when_nothing_is(
    backend: AsyncScriptedBackend, chat: openai.OpenAI
) -> None:
    backend.enqueue('{"tool":"read","arguments":{"id":"M1"}}')
    raw = chat.chat.completions.with_raw_response.create(
        model="m", messages=chat_messages(REPEATED), tools=TOOLS, tool_choice="required"
    )
    assert raw.parse().choices[0].finish_reason == "tool_calls"
    assert offered(backend.requests[0]) == ["read"]
    assert raw.headers[WITHHELD_HEADER] == "search"
    # A choice of the withheld tool alone cannot be answered: a 400 that names it, never a 5xx.
    named: Any = {"type": "function", "function": {"name": "search"}}
    with pytest.raises(openai.BadRequestError) as refused:
        chat.chat.completions.create(
            model="m", messages=chat_messages(REPEATED), tools=TOOLS, tool_choice=named
        )
    error: Any = refused.value.body
    assert error["code"] == "repeated_call"
    assert error["param"] == "tool_choice"
    assert '"search"' in error["message"]
    assert len(backend.requests) == 1  # the refused request reached no backend


def test_max_repeats_is_the_servers_and_0_offers_each_call_once() -> None:
    with served_to_sdk("m", max_repeats=0) as (scripted, client):
        scripted.enqueue(HANDOFF, ANSWER, HANDOFF, ANSWER)
        once = client.chat.completions.with_raw_response.create(
            model="m", messages=chat_messages([LATCH]), tools=TOOLS
        )
        once.parse()
        client.chat.completions.create(model="m", messages=chat_messages([]), tools=TOOLS)
    assert offered(scripted.requests[0]) == ["read", "none"]
    assert once.headers[WITHHELD_HEADER] == "search"
    assert offered(scripted.requests[2]) == ["search", "read", "none"]


@pytest.mark.parametrize("value", [-1, True, 1.5])
def test_a_max_repeats_that_is_no_count_is_refused_when_the_server_is_made(value: Any) -> None:
    with pytest.raises(ValueError, match="max_repeats must be an integer of at least 0"):
        serve_app(AsyncScriptedBackend(), max_repeats=value)


def test_under_a_shortlist_the_tool_is_withheld_before_the_tools_are_ranked() -> None:
    """With ``--shortlist K`` the withheld tool takes none of the K places: the K are ranked from
    the tools left."""
    extra: dict[str, Any] = {
        "type": "function",
        "function": {"name": "list", "parameters": {"type": "object", "properties": {}}},
    }
    request = read_chat_request({"model": "m", "messages": chat_messages(REPEATED), "tools": [*TOOLS, extra]})
    decision = decision_of(request, conversation_of(request, spaced=False), shortlist=2)
    assert decision is not None
    assert decision.withheld == ("search",)
    assert decision.names == ("read", "list")
    assert "search(" not in decision.messages[0]["content"]
    # Unshortlisted, the instructions still list the whole catalogue; the route alone leaves it out.
    whole = decision_of(request, conversation_of(request, spaced=False))
    assert whole is not None
    assert (whole.names, whole.withheld) == (("read", "list"), ("search",))
    assert "search(" in whole.messages[0]["content"]
