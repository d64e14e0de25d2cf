"""The Responses front's ``text.format``: the answer decoded under the request's schema, as the
chat front's ``response_format`` (tests/serve/chat/test_serve_chat_structured.py), in the Responses API's flat
shape ``{"type": "json_schema", "name", "schema", "strict"}``.

Over the scripted fake, a reply is passed through as scripted, so those tests check what the
backend was asked and the refusals, named under ``text.format``; the test marked ``model``
serves the embedded default model and checks the guarantee itself: every reply's text is valid
under the schema, or the response is ``incomplete``.
"""

# ruff: noqa: F811 - the fixtures imported from support.serve_app are the tests' parameters
from __future__ import annotations

import json
from typing import Any

import jsonschema
import openai
import pytest
from openai.types.responses import Response
from starlette.testclient import TestClient
from support.serve_app import backend, client  # noqa: F401 - a scripted backend, served in-process
from support.serve_clients import scripted  # noqa: F401 - the scripted backend on loopback
from support.structured import NOTE, UNGUARANTEED, Note, embedded  # noqa: F401 - the model on loopback

from toolrouting import AsyncOpenAICompatible, AsyncScriptedBackend, Completion, Usage
from toolrouting._serve import serve_app

QUESTION = "Describe the storage-room latch in one line."
SEARCH: dict[str, Any] = {
    "type": "function",
    "name": "search",
    "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


def json_schema(schema: dict[str, Any], strict: bool | None = None, name: str = "note") -> dict[str, Any]:
    """A ``text.format`` asking for ``schema``: flat, as the Responses API writes it."""
    form: dict[str, Any] = {"type": "json_schema", "name": name, "schema": schema}
    return form if strict is None else form | {"strict": strict}


def create(client: TestClient, form: Any, **fields: Any) -> Any:
    body = {"model": "m", "input": QUESTION, "text": {"format": form}, **fields}
    return client.post("/v1/responses", json=body)


def answered(client: TestClient, form: Any, schema: dict[str, Any], **fields: Any) -> Response:
    """A response whose text is valid under ``schema``, read by the SDK's own type."""
    reply = create(client, form, **fields)
    assert reply.status_code == 200, reply.text
    response = Response.model_validate(reply.json())
    assert response.status == "completed"
    jsonschema.validate(json.loads(response.output_text), schema)
    return response


def test_the_answer_is_asked_under_the_schema_and_the_format_echoed(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    for strict in (None, False, True):
        backend.enqueue('{"title":"A latch","stars":3}')
        form = json_schema(NOTE, strict)
        echoed = answered(client, form, NOTE).text
        asked = backend.requests[-1].settings
        assert (asked.json_schema, asked.json_schema_name, asked.json_schema_strict) == (
            NOTE,
            "note",
            bool(strict),
        )
        assert echoed is not None
        assert echoed.format is not None
        assert echoed.format.model_dump(by_alias=True, exclude_none=True) == form
    assert len(backend.requests) == 3  # one answer each, no decision without tools


def test_json_object_asks_for_any_object_and_text_for_none(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"any":[1,2]}', "Free text.")
    echoed = answered(client, {"type": "json_object"}, {"type": "object"}).text
    assert echoed is not None
    assert echoed.format is not None
    assert echoed.format.type == "json_object"
    assert create(client, {"type": "text"}).json()["text"] == {"format": {"type": "text"}}
    assert [r.settings.json_schema for r in backend.requests] == [{"type": "object"}, None]


def test_with_tools_the_routes_none_holds_the_answer_under_the_schema(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"none","answer":{"title":"A latch","stars":4}}')
    answered(client, json_schema(NOTE), NOTE, tools=[SEARCH])
    [decision] = backend.requests  # one request decides and answers
    assert decision.settings.json_schema_name == "tool_route"
    assert decision.settings.json_schema is not None
    assert decision.settings.json_schema["anyOf"][-1]["properties"]["answer"] == NOTE


def test_with_tools_an_answer_the_cap_cut_is_incomplete(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    cut = '{"tool":"none","answer":{"title":"A very long'
    backend.enqueue(Completion(text=cut, finish_reason="length", usage=Usage(), truncated=True))
    body = create(client, json_schema(NOTE), tools=[SEARCH], max_output_tokens=2).json()
    assert (body["status"], body["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})
    assert backend.requests[0].settings.max_tokens == 512 + 2  # the routing cap and the answer's


def test_an_answer_the_cap_cut_is_incomplete(client: TestClient, backend: AsyncScriptedBackend) -> None:
    backend.enqueue('{"title":"A very long')
    body = create(client, json_schema(NOTE), max_output_tokens=2).json()
    assert (body["status"], body["incomplete_details"]) == ("incomplete", {"reason": "max_output_tokens"})


@pytest.mark.parametrize(
    ("text", "param"),
    [
        ("json", "text"),
        ({"format": "json"}, "text.format"),
        ({"format": {"type": "xml"}}, "text.format.type"),
        ({"format": {"type": "json_schema", "schema": NOTE}}, "text.format.name"),
        ({"format": json_schema(NOTE, name="a note")}, "text.format.name"),
        ({"format": {"type": "json_schema", "name": "n"}}, "text.format.schema"),
        (
            {"format": {"type": "json_schema", "name": "n", "schema": NOTE, "strict": "yes"}},
            "text.format.strict",
        ),
    ],
)
def test_a_bad_text_format_is_refused_by_its_field(
    client: TestClient, backend: AsyncScriptedBackend, text: Any, param: str
) -> None:
    reply = client.post("/v1/responses", json={"model": "m", "input": QUESTION, "text": text})
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == param
    assert backend.requests == []


@pytest.mark.parametrize(("schema", "path"), UNGUARANTEED)
def test_a_schema_the_grammar_cannot_guarantee_is_a_400_before_any_request(
    schema: dict[str, Any], path: str
) -> None:
    # A grammar dialect's backend compiles our grammar: nothing is listening, nothing is asked.
    with TestClient(serve_app(AsyncOpenAICompatible("http://127.0.0.1:9", dialect="llama.cpp"))) as client:
        for fields in ({}, {"tools": [SEARCH]}, {"stream": True}):
            reply = create(client, json_schema(schema), **fields)
            assert reply.status_code == 400, reply.text
            error = reply.json()["error"]
            assert (error["param"], error["code"]) == (f"text.format.schema.{path}", "unsupported_schema")


def test_the_sdks_parse_sends_the_models_schema_and_reads_the_answer(
    scripted: tuple[AsyncScriptedBackend, str],
) -> None:
    backend, url = scripted
    backend.enqueue('{"title":"A latch","stars":5}', '{"title":"Streamed","stars":1}')
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        parsed = client.responses.parse(model="scripted", input=QUESTION, text_format=Note)
        with client.responses.stream(model="scripted", input=QUESTION, text_format=Note) as stream:
            final = stream.get_final_response()
    assert parsed.output_parsed == Note(title="A latch", stars=5)
    assert final.output_parsed == Note(title="Streamed", stars=1)
    for request in backend.requests:
        asked = request.settings
        assert (asked.json_schema_name, asked.json_schema_strict) == ("Note", True)
        assert asked.json_schema is not None
        jsonschema.validate({"title": "A latch", "stars": 5}, dict(asked.json_schema))


@pytest.mark.model
@pytest.mark.parametrize("stream", [False, True])
def test_every_answer_of_the_model_is_valid_under_the_schema_or_incomplete(
    embedded: str, stream: bool
) -> None:
    formats: list[tuple[Any, dict[str, Any]]] = [
        (json_schema(NOTE, True), NOTE),
        ({"type": "json_object"}, {"type": "object"}),
    ]
    questions = [QUESTION, "Rate the coffee in the kitchen."]
    with openai.OpenAI(base_url=embedded, api_key="unused", max_retries=0) as client:
        for question in questions:
            for form, schema in formats:
                for fields in ({}, {"tools": [SEARCH], "tool_choice": "none"}):
                    asked: dict[str, Any] = {
                        "model": "m",
                        "input": question,
                        "text": {"format": form},
                        **fields,
                    }
                    if stream:
                        # The last event carries the response: the SDK's get_final_response
                        # takes only response.completed, and a cut answer ends with .incomplete.
                        with client.responses.stream(**asked) as events:
                            [response] = [
                                event.response
                                for event in events
                                if event.type in ("response.completed", "response.incomplete")
                            ]
                    else:
                        response = client.responses.create(**asked)
                    if response.status == "incomplete":
                        continue
                    assert response.status == "completed"
                    jsonschema.validate(json.loads(response.output_text), schema)
