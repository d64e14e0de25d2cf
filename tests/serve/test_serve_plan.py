"""The serve core's plan (``_serve/plan.py``), without a socket: which decision a request asks
for (the route ``tool_choice`` picks, the instructions that stay the same), and how the answer
after it is asked."""

from __future__ import annotations

from typing import Any

import pytest
from support.serve_bodies import body
from support.serve_tools import TOOLS

from toolrouting import Settings
from toolrouting._serve import (
    conversation_of,
    decision_of,
    read_chat_request,
)
from toolrouting._serve.core.plan import answer_messages, answer_settings


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


def test_a_catalogue_error_names_the_request_index() -> None:
    tools = [*TOOLS, {"type": "function", "function": {"name": "none"}}]
    request = read_chat_request(body(tools=tools))
    with pytest.raises(Exception, match="entry 2") as caught:
        decision_of(request, conversation_of(request, spaced=False))
    assert getattr(caught.value, "index", None) == 2
