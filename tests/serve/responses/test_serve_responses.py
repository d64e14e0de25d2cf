"""The Responses front (``POST /v1/responses``, ``GET`` / ``DELETE /v1/responses/{id}``) in-process,
through Starlette's TestClient, over the scripted backend: the shapes (checked against the openai
SDK's own types), what the backend is sent and the refusals; its store is tested in
tests/serve/responses/test_serve_responses_store.py, its stream in
tests/serve/responses/test_serve_responses_stream.py.
tests/serve/responses/test_serve_responses_clients.py drives the same front through real clients on loopback.
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_app are the tests' parameters
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest
from starlette.testclient import TestClient
from support.responses_cases import ACTION, QUESTION, SEARCH, create, created, error_of
from support.serve import BARE_READ
from support.serve_app import backend, client  # noqa: F401 - a scripted backend, served in-process

from toolrouting import AsyncScriptedBackend, Completion, Usage
from toolrouting._serve import SERVE_ANSWER_TOKENS

if TYPE_CHECKING:
    pass  # what starlette's TestClient is built on, and answers with

READ = {"type": "function", **BARE_READ["function"]}


#: An assistant's message, which the function_call items after it join.
SAID = {"role": "assistant", "content": "Searching."}


def call_item(call_id: str, name: str = "search") -> dict[str, str]:
    return {"type": "function_call", "call_id": call_id, "name": name, "arguments": "{}"}


def output_item(call_id: str) -> dict[str, str]:
    return {"type": "function_call_output", "call_id": call_id, "output": "M1"}


def test_a_chosen_tool_is_one_function_call_item(client: TestClient, backend: AsyncScriptedBackend) -> None:
    backend.enqueue(
        Completion(text=ACTION, finish_reason="stop", usage=Usage(prompt_tokens=50, completion_tokens=9))
    )
    response = created(client, tools=[SEARCH, READ])
    assert (response.status, response.object, response.model, response.error) == (
        "completed",
        "response",
        "m",
        None,
    )
    assert response.id.startswith("resp_")
    [call] = response.output
    assert call.type == "function_call"
    assert (call.call_id, call.name, call.arguments, call.status) == (
        "route-1",
        "search",
        '{"query":"latch"}',
        "completed",
    )
    assert call.id is not None
    assert call.id.startswith("fc_")
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens, response.usage.total_tokens) == (
        50,
        9,
        59,
    )
    assert [tool.name for tool in response.tools] == ["search", "read"]  # type: ignore[union-attr]
    assert backend.requests[0].settings.json_schema is not None


def test_an_answer_is_one_message_and_the_cap_makes_it_incomplete(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"none"}', "one two three four five")
    response = created(client, tools=[SEARCH], max_output_tokens=3, temperature=0.25, top_p=0.5)
    assert response.status == "incomplete"
    assert response.incomplete_details is not None
    assert response.incomplete_details.reason == "max_output_tokens"
    [message] = response.output
    assert message.type == "message"
    assert (message.role, message.status) == ("assistant", "incomplete")
    assert response.output_text == "one two three"
    decision, answer = backend.requests
    assert (answer.settings.max_tokens, answer.settings.temperature, answer.settings.top_p) == (3, 0.25, 0.5)
    assert (decision.settings.temperature, decision.settings.stop, answer.settings.json_schema) == (
        0.25,
        (),
        None,
    )
    assert (response.temperature, response.top_p, response.max_output_tokens) == (0.25, 0.5, 3)


def test_a_plain_request_is_a_chat_with_the_stated_cap(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue("Hello there.")
    response = created(client, instructions="Be brief.")
    assert (response.status, response.output_text, response.instructions) == (
        "completed",
        "Hello there.",
        "Be brief.",
    )
    [only] = backend.requests
    assert only.messages == (
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": QUESTION},
    )
    assert only.settings.max_tokens == SERVE_ANSWER_TOKENS


@pytest.mark.parametrize(
    ("choice", "offered"),
    [
        ("auto", ["search", "read", "none"]),
        ("required", ["search", "read"]),
        ({"type": "function", "name": "read"}, ["read"]),
        (
            {"type": "allowed_tools", "mode": "auto", "tools": [{"type": "function", "name": "read"}]},
            ["read", "none"],
        ),
    ],
)
def test_tool_choice_picks_what_the_decision_offers(
    client: TestClient, backend: AsyncScriptedBackend, choice: Any, offered: list[str]
) -> None:
    backend.enqueue('{"tool":"read","arguments":{}}')
    response = created(client, tools=[SEARCH, READ], tool_choice=choice)
    assert response.output[0].type == "function_call"
    schema = backend.requests[0].settings.json_schema
    assert schema is not None
    assert [alt["properties"]["tool"]["const"] for alt in schema["anyOf"]] == offered


def test_tool_choice_none_asks_no_decision(client: TestClient, backend: AsyncScriptedBackend) -> None:
    backend.enqueue("An answer.")
    assert created(client, tools=[SEARCH], tool_choice="none").output_text == "An answer."
    [only] = backend.requests
    assert only.settings.json_schema is None


def test_a_conversation_of_items_reaches_the_backend_as_the_runs_messages(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"none"}', "It holds the door.")
    items = [
        {"type": "message", "role": "developer", "content": "Use the notes."},
        {"role": "user", "content": [{"type": "input_text", "text": QUESTION}]},
        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Searching."}]},
        {"type": "function_call", "call_id": "c1", "name": "search", "arguments": '{"query":"latch"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "M1: the latch"},
    ]
    assert created(client, input=items, tools=[SEARCH]).output_text == "It holds the door."
    sent = backend.requests[0].messages
    assert sent[-2:] == (
        {"role": "assistant", "content": ACTION},
        {"role": "user", "content": "Tool result for search (call route-1):\nM1: the latch"},
    )


@pytest.mark.parametrize(
    ("fields", "param", "code"),
    [
        *[
            ({"tools": [{"type": kind}]}, "tools[0].type", "unsupported_tool")
            # The hosted tools are left out (tests/serve/responses/test_serve_responses_codex.py);
            # these run on the client, in shapes that are not a function's.
            for kind in ("custom", "local_shell", "apply_patch")
        ],
        ({"background": True}, "background", "unsupported_parameter"),
        ({"reasoning": {"effort": "huge"}}, "reasoning.effort", "invalid_value"),
        ({"reasoning": {"summary": "long"}}, "reasoning.summary", "invalid_request"),
        ({"include": ["message.output_text.logprobs"]}, "include[0]", "unsupported_parameter"),
        ({"include": ["no.such.thing"]}, "include[0]", "invalid_request"),
        ({"top_logprobs": 3}, "top_logprobs", "unsupported_parameter"),
        ({"conversation": "conv_1"}, "conversation", "unsupported_parameter"),
        ({"prompt": {"id": "pmpt_1"}}, "prompt", "unsupported_parameter"),
        (
            {"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "x"}]}]},
            "input[0].content[0]",
            "unsupported_content",
        ),
        ({"input": [{"type": "item_reference", "id": "msg_1"}]}, "input[0].type", "unsupported_content"),
        ({"input": [{"role": "tool", "content": "x"}]}, "input[0].role", "unknown_role"),
        ({"input": []}, "input", "invalid_request"),
        (
            {"tools": [SEARCH], "tool_choice": {"type": "function", "name": "nope"}},
            "tool_choice.name",
            "unknown_tool",
        ),
        ({"tools": [SEARCH], "tool_choice": {"type": "web_search"}}, "tool_choice", "unsupported_parameter"),
        ({"max_output_tokens": 0}, "max_output_tokens", "invalid_request"),
        ({"temperature": 3}, "temperature", "invalid_request"),
        ({"previous_response_id": "resp_unknown"}, "previous_response_id", "previous_response_not_found"),
        (
            {"input": [{"type": "function_call_output", "call_id": "c9", "output": "x"}]},
            "input[0].call_id",
            "unknown_tool_call",
        ),
        (
            {
                "input": [
                    {"role": "user", "content": "q"},
                    {"type": "function_call", "call_id": "c", "name": "search", "arguments": "[1]"},
                ]
            },
            "input[1].arguments",
            "invalid_request",
        ),
        (
            {"tools": [SEARCH], "input": [{"role": "assistant", "content": "done"}]},
            "input",
            "invalid_request",
        ),
        *[
            (
                {"input": [{"role": "user", "content": "q"}, *items]},
                param,
                code,
            )
            for items, param, code in (
                ([call_item("a"), call_item("a")], "input[2].call_id", "invalid_request"),
                ([SAID, call_item("a"), call_item("b", "bad name")], "input[3].name", "invalid_request"),
                (
                    [call_item("a"), output_item("a"), output_item("a")],
                    "input[3].call_id",
                    "unknown_tool_call",
                ),
            )
        ],
    ],
)
def test_what_cannot_be_honoured_is_refused_by_its_field(
    client: TestClient, backend: AsyncScriptedBackend, fields: dict[str, Any], param: str, code: str
) -> None:
    error = error_of(create(client, **fields))
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")
    assert error["message"].startswith(f"{param}: ")
    assert backend.requests == []


def test_a_bad_catalogue_names_the_tool_by_its_index(client: TestClient) -> None:
    error = error_of(create(client, tools=[SEARCH, SEARCH]))
    assert (error["param"], error["code"]) == ("tools[1]", "invalid_tools")


@pytest.mark.parametrize(
    "fields",
    [
        {"include": ["reasoning.encrypted_content", "file_search_call.results"]},
        {"reasoning": {"effort": None, "summary": None}},
        {"reasoning": {"effort": "none", "summary": "auto"}},
        {
            "tool_choice": None,
            "parallel_tool_calls": None,
            "temperature": None,
            "metadata": None,
            "store": None,
        },
        {
            "truncation": "auto",
            "service_tier": "auto",
            "user": "u",
            "safety_identifier": "s",
            "prompt_cache_key": "k",
        },
        {"parallel_tool_calls": False, "metadata": {"run": "7"}, "max_tool_calls": 3, "background": False},
        {
            "text": {"format": {"type": "text"}, "verbosity": "low"},
            "stream_options": {"include_obfuscation": False},
        },
    ],
)
def test_what_is_harmless_to_ignore_is_accepted(
    client: TestClient, backend: AsyncScriptedBackend, fields: dict[str, Any]
) -> None:
    backend.enqueue("Fine.")
    response = created(client, **fields)
    assert response.output_text == "Fine."
    assert response.metadata == (fields.get("metadata") or {})
    assert response.parallel_tool_calls is (fields.get("parallel_tool_calls") is not False)
