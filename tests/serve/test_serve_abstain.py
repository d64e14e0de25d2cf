"""``serve_app(..., abstain="grounding")``: a decision under ``tool_choice`` auto whose required
arguments the conversation does not give is answered instead, the answer request saying why.

Served on loopback over the scripted backend and asked through the real SDKs on all three
fronts (openai's chat completions and Responses, anthropic's Messages), whole and streamed, so
what is asserted is what the client got and what the backend was sent. A call the conversation
grounds, one under ``tool_choice`` required or a named tool, and every call with ``abstain``
off, go out as before. The embedded model served with abstention hands out no call the
conversation cannot fill (a model test).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest
from openai.types.chat import ChatCompletionMessageFunctionToolCall as FunctionCall
from support.serve import drained, served_embedded, served_to_sdk

from toolrouting import AsyncScriptedBackend, Usage, conversation_evidence, grounding
from toolrouting._loop.abstention_notice import ABSTAINED_LEAD
from toolrouting._serve import serve_app
from toolrouting._serve.request_log import RequestRecord
from toolrouting._serve.transport import ABSTAINED_HEADER

WEATHER: Any = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "The weather forecast for a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
ASK: list[Any] = [{"role": "user", "content": "Will it rain tomorrow?"}]
GIVEN: list[Any] = [{"role": "user", "content": "Will it rain in Paris tomorrow?"}]
CALL = '{"tool":"get_weather","arguments":{"city":"Paris"}}'
ANSWER = "Which city do you mean?"
NOTICE = f"{ABSTAINED_LEAD}get_weather needs city, which the conversation does not give."


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[AsyncScriptedBackend, openai.OpenAI]]:
    with served_to_sdk("scripted", abstain="grounding") as served:
        yield served


@pytest.fixture
def backend(server: tuple[AsyncScriptedBackend, openai.OpenAI]) -> Iterator[AsyncScriptedBackend]:
    with drained(server[0]) as backend:
        yield backend


@pytest.fixture
def client(server: tuple[AsyncScriptedBackend, openai.OpenAI]) -> openai.OpenAI:
    return server[1]


def _asked_why(backend: AsyncScriptedBackend) -> None:
    """The backend was asked the decision, then the answer with the reason in its request."""
    decision, answer = backend.requests
    assert decision.settings.json_schema is not None
    assert answer.settings.json_schema is None
    assert NOTICE in answer.messages[-1]["content"]


def test_chat_answers_a_call_the_conversation_cannot_fill(
    backend: AsyncScriptedBackend, client: openai.OpenAI
) -> None:
    backend.enqueue(CALL, ANSWER)
    reply = client.chat.completions.create(model="scripted", messages=ASK, tools=[WEATHER])
    [choice] = reply.choices
    assert (choice.message.content, choice.message.tool_calls, choice.finish_reason) == (ANSWER, None, "stop")
    _asked_why(backend)
    assert reply.usage is not None
    assert reply.usage.completion_tokens == len(CALL.split()) + len(ANSWER.split())  # both requests'


def test_chat_streams_the_answer_and_never_a_call_begun(
    backend: AsyncScriptedBackend, client: openai.OpenAI
) -> None:
    backend.enqueue(CALL, ANSWER)
    chunks = list(
        client.chat.completions.create(model="scripted", messages=ASK, tools=[WEATHER], stream=True)
    )
    assert not [chunk for chunk in chunks if chunk.choices and chunk.choices[0].delta.tool_calls]
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == ANSWER
    _asked_why(backend)


@pytest.mark.parametrize("stream", [False, True])
def test_an_abstention_says_why_in_its_header_and_a_call_has_none(
    backend: AsyncScriptedBackend, client: openai.OpenAI, stream: bool
) -> None:
    backend.enqueue(CALL, ANSWER)
    raw = client.chat.completions.with_raw_response.create(
        model="scripted", messages=ASK, tools=[WEATHER], stream=stream
    )
    raw.parse()
    assert raw.headers.get(ABSTAINED_HEADER) == "get_weather needs city, which the conversation does not give"
    backend.requests.clear()
    backend.enqueue(CALL)
    grounded = client.chat.completions.with_raw_response.create(
        model="scripted", messages=GIVEN, tools=[WEATHER], stream=stream
    )
    grounded.parse()
    assert ABSTAINED_HEADER not in grounded.headers


def test_the_request_log_notes_why_it_abstained_and_no_value() -> None:
    record = RequestRecord(api="chat")
    record.answered(Usage(), abstained="get_weather needs city, which the conversation does not give")
    assert record.decision == "abstained"
    assert "notes: abstained: get_weather needs city, which the conversation does not give" in record.line()
    called = RequestRecord(api="chat")
    called.answered(Usage(), ["get_weather"])
    assert (called.decision, called.notes) == ("call", [])


@pytest.mark.parametrize("stream", [False, True])
def test_a_grounded_call_goes_out_whole(
    backend: AsyncScriptedBackend, client: openai.OpenAI, stream: bool
) -> None:
    backend.enqueue(CALL)
    reply: Any
    if stream:
        with client.chat.completions.stream(model="scripted", messages=GIVEN, tools=[WEATHER]) as streamed:
            reply = streamed.get_final_completion()
    else:
        reply = client.chat.completions.create(model="scripted", messages=GIVEN, tools=[WEATHER])
    [call] = reply.choices[0].message.tool_calls or []
    assert isinstance(call, FunctionCall)
    assert (call.function.name, json.loads(call.function.arguments)) == ("get_weather", {"city": "Paris"})
    assert len(backend.requests) == 1


@pytest.mark.parametrize(
    "choice",
    ["required", {"type": "function", "function": {"name": "get_weather"}}],
    ids=["required", "named"],
)
def test_a_choice_that_demands_a_call_is_never_abstained_from(
    backend: AsyncScriptedBackend, client: openai.OpenAI, choice: Any
) -> None:
    backend.enqueue(CALL)
    reply = client.chat.completions.create(
        model="scripted", messages=ASK, tools=[WEATHER], tool_choice=choice
    )
    assert reply.choices[0].finish_reason == "tool_calls"
    assert len(backend.requests) == 1


def test_a_later_call_is_grounded_by_an_earlier_result(
    backend: AsyncScriptedBackend, client: openai.OpenAI
) -> None:
    # The city a search result named grounds the call; the one no result named does not.
    search: Any = {
        "type": "function",
        "function": {
            "name": "find_office",
            "parameters": {
                "type": "object",
                "properties": {"team": {"type": "string"}},
                "required": ["team"],
            },
        },
    }
    turns: list[Any] = [
        {"role": "user", "content": "Will it rain where the sales team works?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "find_office", "arguments": '{"team":"sales"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"office": "Paris"}'},
    ]
    backend.enqueue(CALL)
    reply = client.chat.completions.create(model="scripted", messages=turns, tools=[search, WEATHER])
    assert reply.choices[0].finish_reason == "tool_calls"
    backend.requests.clear()
    backend.enqueue('{"tool":"get_weather","arguments":{"city":"Lyon"}}', ANSWER)
    reply = client.chat.completions.create(model="scripted", messages=turns, tools=[search, WEATHER])
    assert reply.choices[0].message.content == ANSWER
    assert "get_weather needs city" in backend.requests[1].messages[-1]["content"]


def test_responses_answers_a_call_the_conversation_cannot_fill_unless_one_is_demanded(
    backend: AsyncScriptedBackend, client: openai.OpenAI
) -> None:
    flat: Any = [{"type": "function", **WEATHER["function"]}]
    backend.enqueue(CALL, ANSWER)
    response = client.responses.create(model="scripted", input="Will it rain tomorrow?", tools=flat)
    assert response.output_text == ANSWER
    assert [item.type for item in response.output] == ["message"]
    _asked_why(backend)
    backend.requests.clear()
    backend.enqueue(CALL, ANSWER)
    with client.responses.stream(model="scripted", input="Will it rain tomorrow?", tools=flat) as stream:
        final = stream.get_final_response()
    assert final.output_text == ANSWER
    _asked_why(backend)
    backend.requests.clear()
    backend.enqueue(CALL)
    demanded = client.responses.create(
        model="scripted", input="Will it rain tomorrow?", tools=flat, tool_choice="required"
    )
    assert [item.type for item in demanded.output] == ["function_call"]
    assert len(backend.requests) == 1


def test_messages_answers_a_call_the_conversation_cannot_fill_unless_one_is_demanded(
    backend: AsyncScriptedBackend, client: openai.OpenAI
) -> None:
    tools: Any = [
        {
            "name": "get_weather",
            "description": "The weather forecast for a city.",
            "input_schema": WEATHER["function"]["parameters"],
        }
    ]
    ask: Any = {"model": "scripted", "max_tokens": 64, "messages": ASK, "tools": tools}
    root = str(client.base_url).rstrip("/").removesuffix("/v1")
    with anthropic.Anthropic(base_url=root, api_key="unused", max_retries=0) as messages:
        backend.enqueue(CALL, ANSWER)
        message = messages.messages.create(**ask)
        assert (message.stop_reason, [block.type for block in message.content]) == ("end_turn", ["text"])
        _asked_why(backend)
        backend.requests.clear()
        backend.enqueue(CALL, ANSWER)
        with messages.messages.stream(**ask) as stream:
            assert stream.get_final_message().stop_reason == "end_turn"
        _asked_why(backend)
        backend.requests.clear()
        backend.enqueue(CALL)
        demanded = messages.messages.create(**ask, tool_choice={"type": "any"})
        assert demanded.stop_reason == "tool_use"


def test_off_hands_out_every_call() -> None:
    with served_to_sdk("scripted") as (backend, client):
        backend.enqueue(CALL)
        reply = client.chat.completions.create(model="scripted", messages=ASK, tools=[WEATHER])
    assert reply.choices[0].finish_reason == "tool_calls"


def test_a_bad_policy_is_refused_when_the_app_is_made() -> None:
    with pytest.raises(ValueError, match="abstain is one of 'off', 'grounding', not 'on'"):
        serve_app(AsyncScriptedBackend(), abstain="on")  # type: ignore[arg-type]


@pytest.mark.model
def test_the_embedded_model_hands_out_no_call_the_conversation_cannot_fill() -> None:
    questions = [ASK, GIVEN, [{"role": "user", "content": "What is the forecast?"}]]
    with (
        served_embedded(model="smollm2", answer_tokens=24, abstain="grounding") as url,
        openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client,
    ):
        for messages in questions:
            reply = client.chat.completions.create(model="smollm2", messages=messages, tools=[WEATHER])
            for call in reply.choices[0].message.tool_calls or []:
                assert isinstance(call, FunctionCall)
                arguments = json.loads(call.function.arguments)
                parameters = WEATHER["function"]["parameters"]
                assert grounding(
                    call.function.name, arguments, parameters, conversation_evidence(messages)
                ).grounded
