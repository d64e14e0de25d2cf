"""``serve_app(..., shortlist=K)``: a request of more than K tools is offered the K ranked best.

Served on loopback over the scripted backend and asked through the real openai SDK, so what is
asserted is what the backend was sent: the system message (the catalogue's instructions) and
the route schema hold only the tools ``shortlist`` keeps for the request's conversation, with
``none`` where ``tool_choice`` allows it. The ranking is the default ranker's (``shortlist``), compared
with the function itself; a model's choice is never asserted.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletion
from openai.types.chat import ChatCompletionMessageFunctionToolCall as FunctionCall
from support.serve import served_to_sdk
from support.serve_shortlist import MESSAGES, NAMES, QUESTION, TOOLS, K, name_of, offered

from toolrouting import (
    AsyncScriptedBackend,
    catalogue_prompt,
    shortlist,
    shortlist_query,
)
from toolrouting._serve import conversation_of, decision_of, read_chat_request, serve_app


def called(completion: ChatCompletion) -> str:
    """The tool of a reply's one call."""
    calls = completion.choices[0].message.tool_calls
    assert calls is not None
    assert isinstance(calls[0], FunctionCall)
    return calls[0].function.name


def kept(tools: list[dict[str, Any]], conversation: Any, k: int = K) -> list[str]:
    return [name_of(tool) for tool in shortlist(tools, conversation, k)]


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[AsyncScriptedBackend, openai.OpenAI, str]]:
    with served_to_sdk("scripted", shortlist=K) as (backend, client):
        yield backend, client, str(client.base_url).rstrip("/")


def test_auto_offers_the_k_tools_ranked_best_and_none_in_instructions_and_route(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str],
) -> None:
    backend, client, _ = server
    expected = kept(TOOLS, MESSAGES)
    assert {"get_weather", "send_email"} <= set(expected)
    assert len(expected) == K
    backend.requests.clear()
    backend.enqueue('{"tool":"get_weather","arguments":{"city":"Paris"}}')
    reply = client.chat.completions.create(model="scripted", messages=MESSAGES, tools=TOOLS)
    [request] = backend.requests
    assert offered(request) == [*expected, "none"]
    assert request.messages[0] == {
        "role": "system",
        "content": catalogue_prompt(shortlist(TOOLS, MESSAGES, K)),
    }
    for name in set(NAMES) - set(expected):
        assert name not in request.messages[0]["content"]
    assert called(reply) == "get_weather"


def test_required_ranks_then_demands_a_call_of_the_shortlist_streamed_too(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str],
) -> None:
    backend, client, _ = server
    backend.requests.clear()
    backend.enqueue('{"tool":"send_email","arguments":{"to":"ana","body":"sun"}}')
    with client.chat.completions.stream(
        model="scripted", messages=MESSAGES, tools=TOOLS, tool_choice="required"
    ) as stream:
        final = stream.get_final_completion()
    [request] = backend.requests
    assert offered(request) == kept(TOOLS, MESSAGES)
    assert called(final) == "send_email"


def test_a_named_tool_is_offered_alone_though_it_ranks_low(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str],
) -> None:
    backend, client, _ = server
    assert "play_music" not in kept(TOOLS, MESSAGES)
    backend.requests.clear()
    backend.enqueue('{"tool":"play_music","arguments":{"song":"Paris"}}')
    reply = client.chat.completions.create(
        model="scripted",
        messages=MESSAGES,
        tools=TOOLS,
        tool_choice={"type": "function", "function": {"name": "play_music"}},
    )
    [request] = backend.requests
    assert offered(request) == ["play_music"]
    assert request.messages[0]["content"] == catalogue_prompt([TOOLS[NAMES.index("play_music")]])
    assert called(reply) == "play_music"


def test_allowed_tools_narrow_before_the_ranking(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str],
) -> None:
    backend, client, _ = server
    allowed = [tool for tool in TOOLS if name_of(tool) not in ("get_weather", "send_email")]
    expected = kept(allowed, MESSAGES)
    assert len(allowed) > K
    # Ranked after the narrowing: K allowed tools, not the fewer allowed ones of the catalogue's best K.
    assert len(expected) == K
    assert len(set(kept(TOOLS, MESSAGES)) & {name_of(t) for t in allowed}) < K
    choice: Any = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "auto",
            "tools": [{"type": "function", "function": {"name": name_of(t)}} for t in allowed],
        },
    }
    backend.requests.clear()
    backend.enqueue('{"tool":"none"}', "No tool fits.")
    reply = client.chat.completions.create(
        model="scripted", messages=MESSAGES, tools=TOOLS, tool_choice=choice
    )
    decision = backend.requests[0]
    assert offered(decision) == [*expected, "none"]
    assert decision.messages[0]["content"] == catalogue_prompt([t for t in allowed if name_of(t) in expected])
    assert reply.choices[0].message.content == "No tool fits."


def test_a_history_call_off_the_shortlist_is_read_and_results_rank_the_next_turn(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str],
) -> None:
    backend, client, _ = server
    call = {"id": "c1", "type": "function", "function": {"name": "git_status", "arguments": '{"repo":"x"}'}}
    history: list[Any] = [
        {"role": "user", "content": "And now?"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "Twelve dollars, in the local currency."},
    ]
    backend.requests.clear()
    backend.enqueue('{"tool":"convert_currency","arguments":{"amount":"12","currency":"EUR"}}')
    reply = client.chat.completions.create(model="scripted", messages=history, tools=TOOLS)
    [request] = backend.requests
    conversation = [dict(message) for message in request.messages[1:]]
    expected = kept(TOOLS, conversation)
    assert "git_status" not in expected
    assert "convert_currency" in expected  # ranked in by the tool's result
    assert "convert_currency" not in kept(TOOLS, history[:1])
    assert offered(request) == [*expected, "none"]
    # The history is the whole conversation, the call off the shortlist written as its action.
    assert request.messages[2] == {
        "role": "assistant",
        "content": '{"tool":"git_status","arguments":{"repo":"x"}}',
    }
    assert shortlist_query(conversation).splitlines()[-1] == "Twelve dollars, in the local currency."
    assert called(reply) == "convert_currency"


def test_each_conversation_gets_its_own_shortlist_from_the_one_route_cache(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str],
) -> None:
    backend, client, _ = server
    questions = [QUESTION, "Which files are in my git repository's directory?", QUESTION]
    backend.requests.clear()
    for question in questions:
        backend.enqueue('{"tool":"none"}', "ok")
        client.chat.completions.create(
            model="scripted", messages=[{"role": "user", "content": question}], tools=TOOLS
        )
    decisions = backend.requests[::2]
    wanted = [[*kept(TOOLS, question), "none"] for question in questions]
    assert [offered(request) for request in decisions] == wanted
    assert wanted[0] != wanted[1]


def test_the_responses_front_is_narrowed_the_same_way(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str],
) -> None:
    backend, client, _ = server
    flat = [{"type": "function", **tool["function"]} for tool in TOOLS]
    backend.requests.clear()
    backend.enqueue('{"tool":"get_weather","arguments":{"city":"Paris"}}')
    response = client.responses.create(model="scripted", input=QUESTION, tools=flat, store=False)  # type: ignore[arg-type]
    [request] = backend.requests
    assert offered(request) == [*kept(TOOLS, MESSAGES), "none"]
    assert request.messages[0]["content"] == catalogue_prompt(shortlist(TOOLS, MESSAGES, K))
    assert response.output[0].type == "function_call"


def test_the_messages_front_is_narrowed_and_counts_what_it_sends(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str],
) -> None:
    backend, _, url = server
    root = url.removesuffix("/v1")
    anthropic_tools = [
        {
            "name": name_of(t),
            "description": t["function"]["description"],
            "input_schema": t["function"]["parameters"],
        }
        for t in TOOLS
    ]
    body = {"model": "scripted", "max_tokens": 64, "messages": MESSAGES, "tools": anthropic_tools}
    backend.requests.clear()
    backend.enqueue('{"tool":"send_email","arguments":{"to":"ana","body":"sun"}}')
    message = httpx.post(
        f"{root}/v1/messages", json={**body, "tool_choice": {"type": "any"}}, timeout=30
    ).json()
    [request] = backend.requests
    assert offered(request) == kept(TOOLS, MESSAGES)
    assert message["content"][0]["type"] == "tool_use"
    counted = httpx.post(f"{root}/v1/messages/count_tokens", json=body, timeout=30).json()
    assert counted["input_tokens"] == -(-sum(len(m["content"]) for m in request.messages) // 4)


@pytest.mark.parametrize("choice", [None, {"type": "function", "function": {"name": "read_file"}}])
def test_a_bad_tool_is_refused_by_its_index_whatever_is_shortlisted(
    server: tuple[AsyncScriptedBackend, openai.OpenAI, str], choice: Any
) -> None:
    backend, client, _ = server
    bad = [*TOOLS, {"type": "function", "function": {"name": "play_music", "parameters": {"type": "object"}}}]
    backend.requests.clear()
    with pytest.raises(openai.BadRequestError) as caught:
        client.chat.completions.create(
            model="scripted",
            messages=MESSAGES,
            tools=bad,
            **({} if choice is None else {"tool_choice": choice}),
        )
    assert (caught.value.param, caught.value.code) == (f"tools[{len(TOOLS)}]", "invalid_tools")
    assert backend.requests == []


def test_several_calls_a_decision_take_their_tools_from_the_shortlist_too() -> None:
    request = read_chat_request({"model": "m", "messages": MESSAGES, "tools": TOOLS})
    conversation = conversation_of(request, spaced=False, max_calls=2)
    decision = decision_of(request, conversation, max_calls=2, shortlist=K)
    assert decision is not None
    assert decision.names == tuple(kept(TOOLS, MESSAGES))
    assert decision.messages[0]["content"] == catalogue_prompt(shortlist(TOOLS, MESSAGES, K), max_calls=2)
    assert '"play_music"' not in json.dumps(decision.schema)


def test_a_shortlist_that_is_no_positive_int_is_refused_when_the_server_is_made() -> None:
    backend = AsyncScriptedBackend()
    for bad, kind in (
        (0, ValueError),
        (-2, ValueError),
        (True, TypeError),
        ("3", TypeError),
        (2.0, TypeError),
    ):
        with pytest.raises(kind, match="shortlist is the most tools a decision offers"):
            serve_app(backend, shortlist=bad)  # type: ignore[arg-type]
