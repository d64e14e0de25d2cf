"""The Messages front through the frameworks that speak Anthropic's API: pydantic-ai's
``AnthropicModel`` and LangChain's ``ChatAnthropic``, on loopback.

The first tests serve the scripted fake, so a framework's whole tool loop runs against known
replies; the tests marked ``model`` serve the embedded default model and assert the contract
only: shapes, stop reasons, tool_choice's semantics, input valid against the tool's schema.
Never which tool the model picks.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import anyio
import jsonschema
import pytest
from support.serve import TOOLS, served, served_embedded

from toolrouting import AsyncScriptedBackend
from toolrouting._serve import serve_app

SCHEMAS = {tool["function"]["name"]: tool["function"]["parameters"] for tool in TOOLS}
ANTHROPIC_TOOLS: list[Any] = [
    {
        "name": tool["function"]["name"],
        "description": tool["function"]["description"],
        "input_schema": tool["function"]["parameters"],
    }
    for tool in TOOLS
]
QUESTION = "What does the latch on the storage-room door do?"
ANSWER = "The latch holds the storage-room door shut."


def search(query: str) -> str:
    """Search the notes for a word."""
    return "M1: the latch on the storage-room door"


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    backend = AsyncScriptedBackend()
    with served(serve_app(backend, model="scripted")) as url:
        yield backend, url.removesuffix("/v1")


def test_pydantic_ais_anthropic_model_runs_a_tool_then_answers(
    scripted: tuple[AsyncScriptedBackend, str],
) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.anthropic import AnthropicModel
    from pydantic_ai.providers.anthropic import AnthropicProvider

    backend, url = scripted
    backend.enqueue('{"tool":"search","arguments":{"query":"latch"}}', '{"tool":"none"}', ANSWER)

    async def run() -> Any:
        async with anthropic.AsyncAnthropic(base_url=url, api_key="unused", max_retries=0) as client:
            model = AnthropicModel("scripted", provider=AnthropicProvider(anthropic_client=client))
            return await Agent(model, tools=[search]).run(QUESTION)

    result = anyio.run(run)
    assert result.output == ANSWER
    responses = [m for m in result.all_messages() if isinstance(m, ModelResponse)]
    [call] = [part for part in responses[0].parts if isinstance(part, ToolCallPart)]
    assert (call.tool_name, call.args_as_dict()) == ("search", {"query": "latch"})
    returns = [
        p for m in result.all_messages() for p in getattr(m, "parts", []) if isinstance(p, ToolReturnPart)
    ]
    assert [part.tool_call_id for part in returns] == [call.tool_call_id]
    # The result went back to the backend as the result message a run commits.
    assert backend.requests[-2].messages[-1]["content"].startswith("Tool result for search (call route-1):")


@pytest.mark.parametrize("streaming", [False, True])
def test_langchains_chat_anthropic_reads_a_tool_call_and_an_answer(
    scripted: tuple[AsyncScriptedBackend, str], streaming: bool
) -> None:
    from langchain_anthropic import ChatAnthropic
    from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

    backend, url = scripted
    backend.enqueue('{"tool":"search","arguments":{"query":"latch"}}', '{"tool":"none"}', ANSWER)
    chat = ChatAnthropic(
        model="scripted",
        base_url=url,
        api_key="unused",
        max_tokens=64,
        streaming=streaming,
        max_retries=0,
    ).bind_tools(ANTHROPIC_TOOLS)
    asked = [HumanMessage(QUESTION)]
    called = chat.invoke(asked)
    assert isinstance(called, AIMessage)
    [call] = called.tool_calls
    assert (call["name"], call["args"]) == ("search", {"query": "latch"})
    answered = chat.invoke([*asked, called, ToolMessage(search("latch"), tool_call_id=call["id"])])
    assert answered.tool_calls == []
    assert answered.text == ANSWER
    assert answered.usage_metadata is not None
    assert answered.usage_metadata["output_tokens"] > 0


@pytest.fixture(scope="module")
def embedded() -> Iterator[str]:
    with served_embedded(model="smollm2", answer_tokens=48) as url:
        yield url.removesuffix("/v1")


@pytest.mark.model
@pytest.mark.parametrize(
    ("tool_choice", "names"),
    [({"type": "any"}, {"search", "read"}), ({"type": "tool", "name": "read"}, {"read"})],
)
def test_the_model_makes_one_valid_tool_use_when_the_choice_demands_one(
    embedded: str, tool_choice: Any, names: set[str]
) -> None:
    ask: dict[str, Any] = {
        "model": "smollm2",
        "max_tokens": 32,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": ANTHROPIC_TOOLS,
        "tool_choice": tool_choice,
    }
    with anthropic.Anthropic(base_url=embedded, api_key="unused", max_retries=0) as client:
        whole = client.messages.create(**ask)
        with client.messages.stream(**ask) as stream:
            rebuilt = stream.get_final_message()
    for message in (whole, rebuilt):
        assert message.stop_reason == "tool_use"
        [use] = message.content
        assert isinstance(use, anthropic.types.ToolUseBlock)
        assert use.name in names
        jsonschema.validate(use.input, SCHEMAS[use.name])
        assert use.id == "route-1"


@pytest.mark.model
def test_the_model_under_tool_choice_none_answers_within_max_tokens(embedded: str) -> None:
    with anthropic.Anthropic(base_url=embedded, api_key="unused", max_retries=0) as client:
        message = client.messages.create(
            model="smollm2",
            max_tokens=16,
            messages=[{"role": "user", "content": QUESTION}],
            tools=ANTHROPIC_TOOLS,
            tool_choice={"type": "none"},
        )
    assert message.stop_reason in ("end_turn", "max_tokens")
    [block] = message.content
    assert block.type == "text"
    assert 0 < message.usage.output_tokens <= 16
