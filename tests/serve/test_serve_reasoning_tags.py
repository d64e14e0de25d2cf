"""Reasoning through serve on a model with its own ``<think>`` tags: each API's reasoning field
spent in the model's tags (the embedded backend's ``reasoning_budget``), not in the route's slot.

The default model is served under a template with the tags (``support.think_templates``) and
driven by the official SDKs on loopback. The backend records what each request asked and what
it got, so the tests assert what the code guarantees whatever the model writes: the route has no
thought slot, the budget is the request's, the thought the client reads is the one the model
wrote, and a thought sent back is put before its action between the tags.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import anthropic
import anyio
import openai
import pytest
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS
from support.serve import TOOLS, served
from support.think_templates import STRIPS_REASONING

from toolrouting import AsyncEmbeddedLlama, Completion, EmbeddedLlama, Message, Settings, TextDelta
from toolrouting._limits import SERVE_REASONING_EFFORTS
from toolrouting._loop import THOUGHT_NOTE
from toolrouting._serve import serve_app

pytestmark = pytest.mark.model

QUESTION = "What does the latch on the storage-room door do?"
ANTHROPIC_TOOLS: list[Any] = [
    {"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS
]


@dataclasses.dataclass(frozen=True)
class Asked:
    messages: list[Message]
    settings: Settings
    reasoning_budget: int | None
    reply: Completion


class Recording(AsyncEmbeddedLlama):
    """The embedded backend, recording each request it is sent and what it answered; its clones
    share the record."""

    def __init__(self, backend: EmbeddedLlama) -> None:
        super().__init__(backend)
        self.asked: list[Asked] = []

    async def complete(self, messages: Sequence[Message]) -> Completion:
        reply = await super().complete(messages)
        self.asked.append(Asked(list(messages), self.settings, self.reasoning_budget, reply))
        return reply

    async def stream(self, messages: Sequence[Message]) -> AsyncIterator[TextDelta | Completion]:
        async for item in super().stream(messages):
            if isinstance(item, Completion):
                self.asked.append(Asked(list(messages), self.settings, self.reasoning_budget, item))
            yield item


@pytest.fixture(scope="module")
def served_reasoning() -> Iterator[tuple[Recording, str]]:
    settings = Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED, max_tokens=256)
    model = EmbeddedLlama(settings=settings, n_threads=TEST_THREADS, chat_template=STRIPS_REASONING)
    backend = Recording(model)
    try:
        with served(serve_app(backend)) as url:
            yield backend, url
    finally:
        anyio.run(backend.aclose)


@pytest.fixture
def recording(served_reasoning: tuple[Recording, str]) -> Recording:
    backend = served_reasoning[0]
    backend.asked.clear()
    return backend


def decided(backend: Recording, budget: int) -> Asked:
    """The decision's request: spent in the tags within ``budget``, on a route with no slot."""
    decision = backend.asked[0]
    assert decision.reasoning_budget == budget
    assert decision.reply.raw is not None
    assert decision.reply.raw["reasoning_tokens"] <= budget
    schema = decision.settings.json_schema
    assert schema is not None
    assert all("thought" not in alternative["properties"] for alternative in schema["anyOf"])
    assert not decision.messages[0]["content"].endswith(THOUGHT_NOTE)
    assert decision.reply.reasoning is not None
    return decision


def test_messages_thinking_is_the_models_own_and_comes_back_between_its_tags(
    recording: Recording, served_reasoning: tuple[Recording, str]
) -> None:
    root = served_reasoning[1].removesuffix("/v1")
    ask: dict[str, Any] = {
        "model": "claude-sonnet-5-5",
        "max_tokens": 1024,
        "tools": ANTHROPIC_TOOLS,
        "tool_choice": {"type": "any"},
        "thinking": {"type": "enabled", "budget_tokens": 24},
    }
    asked: list[Any] = [{"role": "user", "content": QUESTION}]
    with anthropic.Anthropic(base_url=root, api_key="unused", max_retries=0) as claude:
        whole = claude.messages.create(messages=asked, **ask)
        thought = decided(recording, 24).reply.reasoning
        thinking, use = whole.content
        assert thinking.type == "thinking"
        assert use.type == "tool_use"
        assert thinking.thinking == thought
        recording.asked.clear()
        back: list[Any] = [
            *asked,
            {"role": "assistant", "content": [thinking.model_dump(), use.model_dump()]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "M1"}]},
        ]
        claude.messages.create(messages=back, **{**ask, "tool_choice": {"type": "auto"}})
    sent = recording.asked[0].messages
    assert thought is not None
    assert sent[2]["role"] == "assistant"
    assert sent[2]["content"].startswith(f"<think>\n{thought.rstrip()}\n</think>\n\n" + '{"tool":"search"')


@pytest.mark.parametrize("stream", [False, True])
def test_chat_reasoning_content_is_the_thought_the_model_wrote(
    recording: Recording, served_reasoning: tuple[Recording, str], stream: bool
) -> None:
    asked: Any = {
        "model": "m",
        "messages": [{"role": "user", "content": QUESTION}],
        "tools": TOOLS,
        "tool_choice": "required",
        "reasoning_effort": "minimal",
    }
    with openai.OpenAI(base_url=served_reasoning[1], api_key="unused", max_retries=0) as client:
        if stream:
            chunks = list(client.chat.completions.create(**asked, stream=True))
            read = "".join(
                getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices
            )
            finish = [c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason]
        else:
            reply = client.chat.completions.create(**asked)
            read = getattr(reply.choices[0].message, "reasoning_content", None) or ""
            finish = [reply.choices[0].finish_reason]
    assert read == decided(recording, SERVE_REASONING_EFFORTS["minimal"]).reply.reasoning
    assert finish == ["tool_calls"]


def test_responses_reasoning_item_is_the_thought_the_model_wrote(
    recording: Recording, served_reasoning: tuple[Recording, str]
) -> None:
    tools: list[Any] = [{"type": "function", **tool["function"]} for tool in TOOLS]
    with openai.OpenAI(base_url=served_reasoning[1], api_key="unused", max_retries=0) as client:
        response = client.responses.create(
            model="m", input=QUESTION, tools=tools, tool_choice="required", reasoning={"effort": "low"}
        )
    thought = decided(recording, SERVE_REASONING_EFFORTS["low"]).reply.reasoning
    kinds = [item.type for item in response.output]
    assert kinds[-1] == "function_call"
    if thought:
        reasoning: Any = response.output[0]
        assert reasoning.type == "reasoning"
        assert reasoning.content is not None
        assert "".join(part.text for part in reasoning.content) == thought
