"""The answer `serve` asks after `none` keeps the client's context, through the official openai SDK.

The upstream is the scripted fake, so what it was asked is recorded: the client's system and
developer messages (one system message), the conversation's earlier turns in words, then the
loop's answer request with this turn's results. Never the catalogue's instructions, which are
about routing. What a model would answer is not the point here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import openai
import pytest
from support.serve import TOOLS, served_to_sdk

from toolrouting import AsyncScriptedBackend
from toolrouting._loop.answer_request import ANSWER_PROMPT

QUESTION = "What does the latch on the storage-room door do?"
#: An agent's conversation: its instructions, an earlier turn, and the question.
AGENT: list[Any] = [
    {"role": "system", "content": "Always answer in French."},
    {"role": "developer", "content": "Be brief."},
    {"role": "user", "content": "Which key opens the shed?"},
    {"role": "assistant", "content": "The brass key."},
    {"role": "user", "content": QUESTION},
]
#: What the answer is asked with, before the answer request.
CONTEXT = [
    {"role": "system", "content": "Always answer in French.\n\nBe brief."},
    {"role": "user", "content": "Which key opens the shed?"},
    {"role": "assistant", "content": "The brass key."},
]


@pytest.fixture
def scripted() -> Iterator[tuple[AsyncScriptedBackend, openai.OpenAI]]:
    with served_to_sdk("s") as both:
        yield both


@pytest.mark.parametrize("stream", [False, True])
def test_the_answer_after_none_holds_the_clients_system_prompt_and_earlier_turns(
    scripted: tuple[AsyncScriptedBackend, openai.OpenAI], stream: bool
) -> None:
    backend, client = scripted
    backend.enqueue('{"tool":"search","arguments":{"query":"latch"}}', '{"tool":"none"}', "Elle ferme.")
    first = client.chat.completions.create(model="s", messages=AGENT, tools=TOOLS)
    message = first.choices[0].message
    assert message.tool_calls is not None
    result = {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "M1: it locks itself."}
    history = [*AGENT, message.model_dump(exclude_none=True), result]
    if stream:
        chunks = client.chat.completions.create(model="s", messages=history, tools=TOOLS, stream=True)
        answer = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    else:
        second = client.chat.completions.create(model="s", messages=history, tools=TOOLS)
        answer = second.choices[0].message.content or ""
    assert answer == "Elle ferme."
    *context, asked = backend.requests[-1].messages
    assert context == CONTEXT
    assert asked == {
        "role": "user",
        "content": f"What was found:\nM1: it locks itself.\n\nQuestion: {QUESTION}\n{ANSWER_PROMPT}",
    }
    # The decisions were routed with the catalogue merged into the client's system prompt.
    assert backend.requests[0].messages[0]["content"].endswith("\n\nAlways answer in French.")


def test_tool_choice_none_answers_with_the_clients_context(
    scripted: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = scripted
    backend.enqueue("Elle ferme.")
    reply = client.chat.completions.create(model="s", messages=AGENT, tools=TOOLS, tool_choice="none")
    assert reply.choices[0].message.content == "Elle ferme."
    [request] = backend.requests  # no decision asked
    *context, asked = request.messages
    assert context == CONTEXT
    assert asked["content"].endswith(f"Question: {QUESTION}\n{ANSWER_PROMPT}")


def test_system_text_after_the_question_is_in_the_decision_and_the_answer_in_order(
    scripted: tuple[AsyncScriptedBackend, openai.OpenAI],
) -> None:
    backend, client = scripted
    # As Claude Code sends it: the question, then the environment as a system message.
    late: list[Any] = [*AGENT, {"role": "system", "content": "The user is in Paris."}]
    backend.enqueue('{"tool":"none"}', "Elle ferme.")
    client.chat.completions.create(model="s", messages=late, tools=TOOLS)
    decision, answer = backend.requests
    assert decision.messages[-1] == {"role": "system", "content": "The user is in Paris."}
    *context, asked = answer.messages
    assert context[0] == {
        "role": "system",
        "content": "Always answer in French.\n\nBe brief.\n\nThe user is in Paris.",
    }
    assert asked["content"].endswith(f"Question: {QUESTION}\n{ANSWER_PROMPT}")
