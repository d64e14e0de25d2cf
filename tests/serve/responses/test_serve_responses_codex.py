"""The Responses front takes the tools Codex offers with only a model provider configured.

Codex (0.171.0, captured against a fake) offers its sub-agent tools as one ``namespace`` and
OpenAI's hosted ``web_search`` with every request. A namespace is served as the function tools
it groups, each offered as ``NAMESPACE.NAME`` and written back with ``name`` and ``namespace``
apart, as Codex runs a call only so; the hosted tool is left out of the offer, the response's
``x-toolrouting-omitted-tools`` header names it, and a ``tool_choice`` that picks it is refused.
The openai SDK drives the server on loopback over the scripted backend.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from support.serve import served_to_sdk

from toolrouting import AsyncScriptedBackend
from toolrouting._serve.responses.endpoints import OMITTED_HEADER

EXEC: dict[str, Any] = {
    "type": "function",
    "name": "exec_command",
    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]},
    "strict": False,
}
AGENTS: dict[str, Any] = {
    "type": "namespace",
    "name": "multi_agent_v1",
    "description": "Tools for spawning and managing sub-agents.",
    "tools": [
        {
            "type": "function",
            "name": "close_agent",
            "parameters": {
                "type": "object",
                "properties": {"target": {"type": "string"}},
                "required": ["target"],
            },
            "strict": False,
        },
        {"type": "function", "name": "list_agents", "parameters": {"type": "object", "properties": {}}},
    ],
}
WEB_SEARCH: dict[str, Any] = {"type": "web_search", "external_web_access": False}
TOOLS: list[Any] = [EXEC, AGENTS, WEB_SEARCH]
CLOSE = '{"tool":"multi_agent_v1.close_agent","arguments":{"target":"a1"}}'


@pytest.fixture
def scripted() -> Iterator[tuple[AsyncScriptedBackend, openai.OpenAI]]:
    with served_to_sdk("m") as both:
        yield both


def offered(backend: AsyncScriptedBackend, index: int = -1) -> list[str]:
    schema = backend.requests[index].settings.json_schema
    assert schema is not None
    return [alternative["properties"]["tool"]["const"] for alternative in schema["anyOf"]]


@pytest.mark.parametrize("stream", [False, True])
def test_a_namespace_is_its_tools_and_a_call_of_one_comes_back_with_its_namespace(
    scripted: tuple[AsyncScriptedBackend, openai.OpenAI], stream: bool
) -> None:
    backend, client = scripted
    backend.enqueue(CLOSE)
    ask: dict[str, Any] = {"model": "m", "input": "Close agent a1.", "tools": TOOLS}
    if stream:
        with client.responses.stream(**ask) as events:
            response = events.get_final_response()
    else:
        response = client.responses.create(**ask)
    assert offered(backend) == [
        "exec_command",
        "multi_agent_v1.close_agent",
        "multi_agent_v1.list_agents",
        "none",
    ]
    [call] = response.output
    assert call.type == "function_call"
    assert (call.name, call.namespace, call.arguments) == ("close_agent", "multi_agent_v1", '{"target":"a1"}')


def test_a_call_sent_back_with_its_namespace_is_the_action_the_backend_wrote(
    scripted: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = scripted
    backend.enqueue('{"tool":"none"}', "Closed.")
    sent_back: list[Any] = [
        {"role": "user", "content": "Close agent a1."},
        {
            "type": "function_call",
            "call_id": "route-1",
            "name": "close_agent",
            "namespace": "multi_agent_v1",
            "arguments": '{"target":"a1"}',
        },
        {"type": "function_call_output", "call_id": "route-1", "output": "closed"},
    ]
    client.responses.create(model="m", input=sent_back, tools=TOOLS)
    action, result = backend.requests[0].messages[-2:]
    assert action == {"role": "assistant", "content": CLOSE}
    assert result["content"].startswith("Tool result for multi_agent_v1.close_agent (call route-1):")


def test_an_output_answering_no_call_is_what_the_client_says_of_its_state(
    scripted: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    # Codex 0.171.0 after a create_goal call: the call's result, then the goal's objective as a
    # function_call_output with a name and a namespace and no call_id (captured from its session).
    backend, client = scripted
    backend.enqueue('{"tool":"none"}', "Working on it.")
    sent_back: list[Any] = [
        {"role": "user", "content": "Close agent a1."},
        {"type": "function_call", "call_id": "route-1", "name": "exec_command", "arguments": '{"cmd":"ls"}'},
        {"type": "function_call_output", "call_id": "route-1", "output": "a1"},
        {
            "type": "function_call_output",
            "name": "goal_objective",
            "namespace": "agent",
            "output": "close a1",
        },
    ]
    client.responses.create(model="m", input=sent_back, tools=TOOLS)
    result, state = backend.requests[0].messages[-2:]
    assert result["content"].startswith("Tool result for exec_command (call route-1):")
    assert state["content"] == "agent.goal_objective (from the client, answering no call): close a1"
    assert state["role"] in ("system", "developer")


@pytest.mark.parametrize("stream", [False, True])
def test_a_hosted_tool_is_left_out_and_the_response_says_so(
    scripted: tuple[AsyncScriptedBackend, openai.OpenAI], stream: bool
) -> None:
    backend, client = scripted
    backend.enqueue('{"tool":"exec_command","arguments":{"cmd":"date"}}')
    raw = client.responses.with_raw_response.create(
        model="m", input="What day is it?", tools=TOOLS, stream=stream
    )
    assert raw.headers[OMITTED_HEADER] == "web_search"
    assert "web_search" not in offered(backend)
    # The response echoes the tools as sent.
    if not stream:
        assert raw.http_response.json()["tools"][-1] == WEB_SEARCH


def test_no_header_when_nothing_is_left_out(scripted: tuple[AsyncScriptedBackend, openai.OpenAI]) -> None:
    backend, client = scripted
    backend.enqueue('{"tool":"none"}', "Hello.")
    only: list[Any] = [EXEC]
    raw = client.responses.with_raw_response.create(model="m", input="Hi.", tools=only)
    assert OMITTED_HEADER not in raw.headers


@pytest.mark.parametrize(
    ("given", "param", "said"),
    [
        ({"tool_choice": {"type": "web_search"}}, "tool_choice", "cannot be left out"),
        (
            {"tools": [EXEC, {**AGENTS, "tools": [{"type": "function", "name": "bad name"}]}]},
            "tools[1].tools[0]",
            "whitespace",
        ),
        (
            {"tools": [EXEC, {**AGENTS, "tools": [{"type": "custom", "name": "x"}]}]},
            "tools[1].tools[0].type",
            "custom",
        ),
        ({"tools": [{"type": "local_shell"}]}, "tools[0].type", "local_shell"),
        (
            {
                "tools": [
                    {
                        "type": "function",
                        "name": "multi_agent_v1.close_agent",
                        "parameters": {"type": "object"},
                    },
                    AGENTS,
                ]
            },
            "tools[1].tools[0]",
            "multi_agent_v1.close_agent",
        ),
    ],
)
def test_what_cannot_be_served_is_a_400_naming_where_it_was_sent(
    scripted: tuple[AsyncScriptedBackend, openai.OpenAI], given: dict[str, Any], param: str, said: str
) -> None:
    _, client = scripted
    with pytest.raises(openai.BadRequestError) as refused:
        client.responses.create(**{"model": "m", "input": "Hi.", "tools": TOOLS, **given})
    error: Any = refused.value.body
    assert error["param"] == param
    assert said in error["message"]
