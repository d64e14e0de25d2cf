"""Thinking and reasoning through serve: each API's field read into one budget, served as the
route's bounded ``thought`` before the decision, written back in each API's shape, and read
back when a client sends it (Messages' ``signature``, Responses' ``encrypted_content``, chat's
``reasoning_content``).

The SDKs drive the server on loopback over the scripted fake, so what the backend was asked is
recorded (the slot's length, the cap, the instructions); the test marked ``model`` asks the
embedded model and asserts the guarantees only: a valid decision, a thought within its bound.
"""

# ruff: noqa: F811 - the fixtures imported from support.anthropic_served are the tests' parameters
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anthropic
import anyio
import openai
import pytest
from openai.types.responses import ResponseReasoningItem
from support.anthropic_served import backend, claude, root, scripted  # noqa: F401 - the fixtures
from support.serve import TOOLS, served_embedded

from toolrouting import AsyncScriptedBackend, Settings
from toolrouting._limits import (
    CHARS_PER_TOKEN,
    DEFAULT_ROUTING_CAP,
    SERVE_REASONING_CAP,
    SERVE_REASONING_EFFORTS,
)
from toolrouting._loop import THOUGHT_NOTE
from toolrouting._serve.core.engine import THOUGHT_TOKENS_PER_CHARACTER
from toolrouting._serve.transport import REASONING_HEADER

QUESTION = "What does the latch on the storage-room door do?"
THOUGHT = "the latch is a word to search"
CALL = '{"thought":"' + THOUGHT + '","tool":"search","arguments":{"query":"latch"}}'
RESPONSES_TOOLS: list[Any] = [{"type": "function", **tool["function"]} for tool in TOOLS]
ANTHROPIC_TOOLS: list[Any] = [
    {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS
]


@pytest.fixture
def chat(root: str) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=f"{root}/v1", api_key="unused", max_retries=0) as client:
        yield client


def slot(settings: Settings) -> Any:
    """The thought slot of a decision's route, ``None`` without one."""
    assert settings.json_schema is not None
    return settings.json_schema["anyOf"][0]["properties"].get("thought")


def test_an_effort_is_a_bounded_thought_before_the_decision_and_the_cap_holds_it(
    backend: AsyncScriptedBackend, chat: openai.OpenAI
) -> None:
    backend.enqueue(CALL)
    reply = chat.chat.completions.create(
        model="m", messages=[{"role": "user", "content": QUESTION}], tools=TOOLS, reasoning_effort="low"
    )
    chars = SERVE_REASONING_EFFORTS["low"] * CHARS_PER_TOKEN
    [decision] = backend.requests
    assert slot(decision.settings) == {"type": "string", "maxLength": chars}
    # Every alternative begins with it, so the decision's guarantees hold after it.
    assert decision.settings.json_schema is not None
    assert all(next(iter(a["properties"])) == "thought" for a in decision.settings.json_schema["anyOf"])
    assert decision.settings.max_tokens == DEFAULT_ROUTING_CAP + chars * THOUGHT_TOKENS_PER_CHARACTER
    assert decision.messages[0]["content"].endswith(THOUGHT_NOTE)
    message: Any = reply.choices[0].message
    assert message.reasoning_content == THOUGHT
    assert message.tool_calls[0].function.arguments == '{"query":"latch"}'


@pytest.mark.parametrize("field", [{}, {"reasoning_effort": "none"}])
def test_no_reasoning_asked_is_none_served(
    backend: AsyncScriptedBackend, chat: openai.OpenAI, field: dict[str, Any]
) -> None:
    backend.enqueue('{"tool":"search","arguments":{"query":"latch"}}')
    reply = chat.chat.completions.create(
        model="m", messages=[{"role": "user", "content": QUESTION}], tools=TOOLS, **field
    )
    [decision] = backend.requests
    assert slot(decision.settings) is None
    assert decision.settings.max_tokens == DEFAULT_ROUTING_CAP
    assert THOUGHT_NOTE not in decision.messages[0]["content"]
    assert getattr(reply.choices[0].message, "reasoning_content", None) is None


def test_chat_streams_the_thought_first_and_takes_it_back_as_the_backend_wrote_it(
    backend: AsyncScriptedBackend, chat: openai.OpenAI
) -> None:
    backend.enqueue(CALL, '{"thought":"found","tool":"none"}', "It holds the door.")
    asked: list[Any] = [{"role": "user", "content": QUESTION}]
    chunks = list(
        chat.chat.completions.create(
            model="m", messages=asked, tools=TOOLS, reasoning_effort="low", stream=True
        )
    )
    deltas: list[Any] = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    thought = "".join(getattr(delta, "reasoning_content", None) or "" for delta in deltas)
    assert thought == THOUGHT
    first_call = next(index for index, delta in enumerate(deltas) if delta.tool_calls)
    assert all(getattr(delta, "reasoning_content", None) for delta in deltas[:first_call])
    call = deltas[first_call].tool_calls[0]
    said: Any = {
        "role": "assistant",
        "reasoning_content": thought,
        "tool_calls": [call.model_dump(exclude_none=True)],
    }
    said["tool_calls"][0]["function"]["arguments"] = '{"query":"latch"}'
    result: Any = {"role": "tool", "tool_call_id": call.id, "content": "M1: it locks itself."}
    chat.chat.completions.create(
        model="m", messages=[*asked, said, result], tools=TOOLS, reasoning_effort="low"
    )
    assert backend.requests[1].messages[-2] == {"role": "assistant", "content": CALL}


@pytest.mark.parametrize("display", ["summarized", "omitted"])
def test_messages_thinking_is_a_signed_block_and_comes_back_checked(
    backend: AsyncScriptedBackend, claude: anthropic.Anthropic, display: str
) -> None:
    backend.enqueue(CALL, CALL, '{"thought":"found","tool":"none"}', "It holds the door.")
    ask: dict[str, Any] = {
        "model": "claude-opus-5-5",
        "max_tokens": 2048,
        "tools": ANTHROPIC_TOOLS,
        "thinking": {"type": "adaptive", "display": display},
        "output_config": {"effort": "medium"},
    }
    asked: list[Any] = [{"role": "user", "content": QUESTION}]
    whole = claude.messages.create(messages=asked, **ask)
    with claude.messages.stream(messages=asked, **ask) as stream:
        rebuilt = stream.get_final_message()
    assert whole.content == rebuilt.content
    thinking, use = whole.content
    assert thinking.type == "thinking"
    assert use.type == "tool_use"
    assert thinking.thinking == (THOUGHT if display == "summarized" else "")
    chars = SERVE_REASONING_EFFORTS["medium"] * CHARS_PER_TOKEN
    assert slot(backend.requests[0].settings) == {"type": "string", "maxLength": chars}
    # Sent back with its text left out, the signature gives the server the thought it wrote.
    back: list[Any] = [
        *asked,
        {"role": "assistant", "content": [{**thinking.model_dump(), "thinking": ""}, use.model_dump()]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "M1"}]},
    ]
    claude.messages.create(messages=back, **ask)
    assert backend.requests[2].messages[-2] == {"role": "assistant", "content": CALL}


@pytest.mark.parametrize("stream", [False, True])
def test_a_budget_over_the_cap_is_served_within_it_and_the_header_says_so(
    backend: AsyncScriptedBackend, claude: anthropic.Anthropic, stream: bool
) -> None:
    """Anthropic's least budget (1,024 tokens, what Claude Code sends) is a maximum: served as the
    longest thought the grammar bounds, never refused."""
    backend.enqueue(CALL)
    ask: dict[str, Any] = {
        "model": "claude-opus-5-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": ANTHROPIC_TOOLS,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
    }
    raw = claude.messages.with_raw_response.create(**ask, stream=stream)
    parsed: Any = raw.parse()
    if stream:
        assert list(parsed)[-1].type == "message_stop"
    else:
        assert [block.type for block in parsed.content] == ["thinking", "tool_use"]
    assert raw.headers[REASONING_HEADER] == f"served={SERVE_REASONING_CAP} asked=1024"
    chars = SERVE_REASONING_CAP * CHARS_PER_TOKEN
    assert slot(backend.requests[0].settings) == {"type": "string", "maxLength": chars}
    # A budget within the cap is served as asked, and no header says otherwise.
    backend.enqueue(CALL)
    within = claude.messages.with_raw_response.create(
        **{**ask, "thinking": {"type": "enabled", "budget_tokens": 64}}, stream=stream
    )
    within.parse()
    assert REASONING_HEADER not in within.headers


@pytest.mark.parametrize(
    ("given", "param"),
    [
        ({"thinking": {"type": "enabled", "budget_tokens": 64}, "max_tokens": 64}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled", "budget_tokens": -1}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled", "budget_tokens": 1024.5}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled", "budget_tokens": 4096}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "enabled"}}, "thinking.budget_tokens"),
        ({"thinking": {"type": "adaptive"}, "output_config": {"effort": "extreme"}}, "output_config.effort"),
        ({"thinking": {"type": "enabled", "budget_tokens": 64, "display": "hidden"}}, "thinking.display"),
        (
            {
                "messages": [
                    {"role": "user", "content": QUESTION},
                    {
                        "role": "assistant",
                        "content": [
                            {"type": "thinking", "thinking": "forged", "signature": "AQ"},
                            {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"query": "x"}},
                        ],
                    },
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "M1"}],
                    },
                ]
            },
            "messages[1].content[0].signature",
        ),
    ],
)
def test_a_budget_or_a_thought_that_cannot_be_served_is_a_400_naming_it(
    claude: anthropic.Anthropic, given: dict[str, Any], param: str
) -> None:
    body: dict[str, Any] = {
        "model": "claude-opus-5-5",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": ANTHROPIC_TOOLS,
        **given,
    }
    with pytest.raises(anthropic.BadRequestError) as refused:
        claude.messages.create(**body)
    error: Any = refused.value.body
    assert error["error"]["message"].startswith(f"{param}: ")


def test_responses_reasoning_is_an_item_and_codex_sends_it_back_encrypted(
    backend: AsyncScriptedBackend, chat: openai.OpenAI
) -> None:
    backend.enqueue(CALL, CALL, '{"thought":"found","tool":"none"}', "It holds the door.")
    ask: dict[str, Any] = {
        "model": "m",
        "tools": RESPONSES_TOOLS,
        "reasoning": {"effort": "high", "summary": "auto"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
    }
    whole = chat.responses.create(input=QUESTION, **ask)
    with chat.responses.stream(input=QUESTION, **ask) as stream:
        rebuilt = stream.get_final_response()
    for response in (whole, rebuilt):
        reasoning, call = response.output
        assert isinstance(reasoning, ResponseReasoningItem)
        assert reasoning.type == "reasoning"
        assert call.type == "function_call"
        assert [part.text for part in reasoning.summary] == [THOUGHT]
        assert reasoning.encrypted_content
    assert whole.reasoning is not None
    assert whole.reasoning.effort == "high"
    # As Codex sends it back: every item again, store being false.
    items: list[Any] = [
        {"role": "user", "content": QUESTION},
        *[item.model_dump(exclude_none=True) for item in whole.output],
        {"type": "function_call_output", "call_id": whole.output[1].call_id, "output": "M1"},
    ]
    chat.responses.create(input=items, **ask)
    assert backend.requests[2].messages[-2] == {"role": "assistant", "content": CALL}
    items[1]["encrypted_content"] = "AQ"
    with pytest.raises(openai.BadRequestError) as refused:
        chat.responses.create(input=items, **ask)
    assert refused.value.param == "input[1].encrypted_content"


def test_codexs_summary_without_an_effort_asks_no_reasoning(
    backend: AsyncScriptedBackend, chat: openai.OpenAI
) -> None:
    backend.enqueue('{"tool":"search","arguments":{"query":"latch"}}')
    response = chat.responses.create(
        model="m", input=QUESTION, tools=RESPONSES_TOOLS, reasoning={"summary": "auto"}, store=False
    )
    assert slot(backend.requests[0].settings) is None
    assert [item.type for item in response.output] == ["function_call"]


def test_the_agents_sdks_gpt_5_default_effort_runs_its_loop(backend: AsyncScriptedBackend, root: str) -> None:
    from agents import Agent, OpenAIProvider, RunConfig, Runner, function_tool, set_tracing_disabled

    def search(query: str) -> str:
        """Search the notes for a word."""
        return "M1: it locks itself."

    async def run() -> object:
        # The client is this run's and closed with it: the SDK's run_sync and a default client set
        # for the process would leave a loop and its sockets for a later test to collect.
        async with openai.AsyncOpenAI(base_url=f"{root}/v1", api_key="unused", max_retries=0) as client:
            agent = Agent(name="notes", model="gpt-5", tools=[function_tool(search)])
            config = RunConfig(model_provider=OpenAIProvider(openai_client=client))
            result = await Runner.run(agent, QUESTION, max_turns=4, run_config=config)
            return result.final_output

    backend.enqueue(CALL, '{"thought":"found","tool":"none"}', "It holds the door.")
    set_tracing_disabled(True)  # its traces would go to OpenAI
    assert anyio.run(run) == "It holds the door."
    assert slot(backend.requests[0].settings) is not None  # gpt-5's default effort, low


def test_langchains_reasoning_effort_on_chat(backend: AsyncScriptedBackend, root: str) -> None:
    from langchain_openai import ChatOpenAI

    backend.enqueue(CALL)
    model = ChatOpenAI(
        model="o3", base_url=f"{root}/v1", api_key="unused", max_retries=0, reasoning_effort="low"
    )
    reply = model.bind_tools(TOOLS).invoke(QUESTION)
    assert reply.tool_calls[0]["name"] == "search"
    assert slot(backend.requests[0].settings) is not None


@pytest.mark.model
@pytest.mark.parametrize("stream", [False, True])
def test_the_model_reasons_within_its_bound_and_decides_validly(stream: bool) -> None:
    with served_embedded() as url, openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        asked: Any = {"model": "m", "messages": [{"role": "user", "content": QUESTION}], "tools": TOOLS}
        if stream:
            chunks = list(client.chat.completions.create(**asked, reasoning_effort="minimal", stream=True))
            thought = "".join(
                getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices
            )
            finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
            assert finish in (["tool_calls"], ["stop"], ["length"])
        else:
            reply = client.chat.completions.create(**asked, reasoning_effort="minimal")
            thought = getattr(reply.choices[0].message, "reasoning_content", None) or ""
            assert reply.choices[0].finish_reason in ("tool_calls", "stop", "length")
    assert len(thought) <= SERVE_REASONING_EFFORTS["minimal"] * CHARS_PER_TOKEN
