"""The Messages front takes what agents send on their defaults, through the anthropic SDK.

Claude Code (2.1.332, its captures in the module's tests) sends its environment and reminders as
``system`` turns inside ``messages``, a deferred tool (``defer_loading``) that no model should be
offered, and ``tool_reference`` blocks in a tool search's result. The backend is the scripted
fake, so what it is sent is recorded; the SDK sends these turns as they are (its types do not
declare them, so they are built as plain dicts).
"""

# ruff: noqa: F811 - the fixtures imported from support.anthropic_served are the tests' parameters
from __future__ import annotations

from typing import Any

import anthropic
import pytest
from support.anthropic_served import backend, claude, root, scripted  # noqa: F401 - the fixtures

from toolrouting import AsyncScriptedBackend
from toolrouting._loop.answer_request import ANSWER_PROMPT

QUESTION = "what is the weather in Paris"
READ: dict[str, Any] = {
    "name": "Read",
    "description": "Read a file.",
    "input_schema": {
        "type": "object",
        "properties": {"file_path": {"type": "string"}},
        "required": ["file_path"],
    },
}
#: Claude Code's environment, as the system turn after the question carries it (text blocks,
#: the last one cached).
ENVIRONMENT: dict[str, Any] = {
    "role": "system",
    "content": [
        {"type": "text", "text": "# Environment"},
        {"type": "text", "text": "Platform: linux", "cache_control": {"type": "ephemeral"}},
    ],
}


def create(claude: anthropic.Anthropic, messages: list[Any], **given: Any) -> anthropic.types.Message:
    body: dict[str, Any] = {"model": "claude-opus-5-5", "max_tokens": 4096, "tools": [READ], **given}
    message: anthropic.types.Message = claude.messages.create(messages=messages, **body)
    return message


def test_a_system_turn_after_the_question_reaches_the_decision_and_the_answer_in_its_place(
    backend: AsyncScriptedBackend, claude: anthropic.Anthropic
) -> None:
    call = '{"tool":"Read","arguments":{"file_path":"weather.txt"}}'
    backend.enqueue(call, '{"tool":"none"}', "Sunny.")
    conversation: list[Any] = [{"role": "user", "content": QUESTION}, ENVIRONMENT]
    first = create(claude, conversation, system="You are an agent.")
    assert first.stop_reason == "tool_use"
    decision = backend.requests[0].messages
    assert [m["role"] for m in decision] == ["system", "user", "system"]
    assert decision[2]["content"] == "# Environment\n\nPlatform: linux"
    use = first.content[0]
    assert use.type == "tool_use"
    # The next request sends the system turn back as a string, as Claude Code does.
    result = {"type": "tool_result", "tool_use_id": use.id, "content": "sunny, 21 C"}
    conversation = [
        {"role": "user", "content": QUESTION},
        {"role": "system", "content": "# Environment\n\nPlatform: linux"},
        {"role": "assistant", "content": [use.model_dump(exclude_none=True)]},
        {"role": "user", "content": [result]},
    ]
    second = create(claude, conversation, system="You are an agent.")
    assert [block.type for block in second.content] == ["text"]
    answer = backend.requests[2].messages
    assert answer[0] == {
        "role": "system",
        "content": "You are an agent.\n\n# Environment\n\nPlatform: linux",
    }


#: Claude Code's placeholder that keeps its deferred tools loading, and a deferred tool of its own.
PLACEHOLDER: dict[str, Any] = {
    "name": "DeferredToolPlaceholder",
    "description": "Reserved placeholder that keeps deferred tool loading active; never call this tool.",
    "input_schema": {"type": "object", "properties": {}},
    "defer_loading": True,
}
FETCH: dict[str, Any] = {
    "name": "WebFetch",
    "description": "Fetch a page.",
    "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
    "defer_loading": True,
}
SEARCH: dict[str, Any] = {
    "name": "ToolSearch",
    "description": "Fetch deferred tools' schemas.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


def _offered(backend: AsyncScriptedBackend, index: int) -> list[str]:
    schema = backend.requests[index].settings.json_schema
    assert schema is not None
    return [alternative["properties"]["tool"]["const"] for alternative in schema["anyOf"]]


def test_deferred_tools_are_offered_once_a_tool_reference_loads_them(
    backend: AsyncScriptedBackend, claude: anthropic.Anthropic
) -> None:
    backend.enqueue(
        '{"tool":"ToolSearch","arguments":{"query":"select:WebFetch"}}', '{"tool":"none"}', "Done."
    )
    tools = [READ, SEARCH, FETCH, PLACEHOLDER]
    first = create(claude, [{"role": "user", "content": QUESTION}], tools=tools)
    assert _offered(backend, 0) == ["Read", "ToolSearch", "none"]
    use = first.content[0]
    assert use.type == "tool_use"
    # Claude Code's next request: the search's result loads WebFetch, and a note follows it.
    loaded: dict[str, Any] = {
        "type": "tool_result",
        "tool_use_id": use.id,
        "content": [{"type": "tool_reference", "tool_name": "WebFetch"}],
    }
    turns: list[Any] = [
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": [use.model_dump(exclude_none=True)]},
        {"role": "user", "content": [loaded, {"type": "text", "text": "Tool loaded."}]},
    ]
    create(claude, turns, tools=tools)
    assert _offered(backend, 1) == ["Read", "ToolSearch", "WebFetch", "none"]
    # The note after the result is part of it: the question is still the user's.
    result = backend.requests[1].messages[-1]["content"]
    assert result.startswith("Tool result for ToolSearch (call route-1):")
    assert result.endswith("Tool loaded: WebFetch\n\nTool loaded.")
    assert backend.requests[2].messages[-1]["content"].endswith(f"Question: {QUESTION}\n{ANSWER_PROMPT}")


def test_a_bad_tool_after_a_deferred_one_is_named_by_its_index_as_sent(claude: anthropic.Anthropic) -> None:
    bad = {"name": "bad name", "input_schema": {"type": "object"}}
    with pytest.raises(anthropic.BadRequestError, match=r"tools\[2\]"):
        create(claude, [{"role": "user", "content": QUESTION}], tools=[READ, PLACEHOLDER, bad])
