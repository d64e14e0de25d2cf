"""toolrouting serve's ``response_format``: the answer decoded under the request's schema.

Over the scripted fake, a reply is passed through as scripted, so those tests check what the
backend was asked (the answer's settings carry the schema, its name and strictness) and the
refusals; the tests marked ``model`` serve the embedded default model and check the guarantee
itself: every reply's content is valid under the schema, or its finish reason is ``length``.
"""

# ruff: noqa: F811 - the fixtures imported from support.structured are the tests' parameters
from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import jsonschema
import openai
import pytest
from starlette.testclient import TestClient
from support.serve import TOOLS, served
from support.structured import (
    NOTE,
    QUESTION,
    UNGUARANTEED,
    Note,
    embedded,  # noqa: F401 - fixtures shared with other tests
    json_schema,
)

from toolrouting import AsyncOpenAICompatible, AsyncScriptedBackend
from toolrouting._serve import serve_app

NONE = '{"tool":"none"}'


@pytest.fixture
def backend() -> AsyncScriptedBackend:
    """The scripted fake: each reply as queued, each request's settings kept."""
    return AsyncScriptedBackend()


@pytest.fixture
def client(backend: AsyncScriptedBackend) -> Iterator[TestClient]:
    """The app over ``backend``, in-process."""
    app = serve_app(backend, model="scripted")
    with TestClient(app) as client:
        yield client


def chat(client: TestClient, **fields: Any) -> Any:
    return client.post("/v1/chat/completions", json={"model": "m", "messages": QUESTION, **fields})


def answered(client: TestClient, schema: dict[str, Any], **fields: Any) -> Any:
    """A reply's content, validated under ``schema``."""
    reply = chat(client, **fields)
    assert reply.status_code == 200, reply.text
    [choice] = reply.json()["choices"]
    assert choice["finish_reason"] == "stop"
    content = json.loads(choice["message"]["content"])
    jsonschema.validate(content, schema)
    return content


@pytest.mark.parametrize("strict", [None, False, True])
def test_the_answer_without_tools_is_asked_under_the_schema(
    client: TestClient, backend: AsyncScriptedBackend, strict: bool | None
) -> None:
    backend.enqueue('{"title":"A latch","stars":3}')
    answered(client, NOTE, response_format=json_schema(NOTE, strict))
    [request] = backend.requests
    assert request.settings.json_schema == NOTE
    assert request.settings.json_schema_name == "note"
    assert request.settings.json_schema_strict is bool(strict)
    assert request.messages == tuple(QUESTION)


def test_json_object_asks_for_any_object_and_text_for_none(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"any":[1,2]}', "Free text.")
    answered(client, {"type": "object"}, response_format={"type": "json_object"})
    chat(client, response_format={"type": "text"})
    assert [r.settings.json_schema for r in backend.requests] == [{"type": "object"}, None]


def test_with_tools_the_routes_none_holds_the_answer_under_the_schema(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"none","answer":{"title":"A latch","stars":4}}', '{"title":"B","stars":1}')
    assert answered(client, NOTE, tools=TOOLS, response_format=json_schema(NOTE)) == {
        "title": "A latch",
        "stars": 4,
    }
    [decision] = backend.requests  # one request decides and answers
    assert decision.settings.json_schema_name == "tool_route"
    assert decision.settings.json_schema is not None
    assert decision.settings.json_schema["anyOf"][-1]["properties"]["answer"] == NOTE
    answered(client, NOTE, tools=TOOLS, tool_choice="none", response_format=json_schema(NOTE))
    assert backend.requests[-1].settings.json_schema == NOTE
    assert len(backend.requests) == 2  # tool_choice none: the answer alone


def test_a_tool_call_is_served_as_ever_beside_a_response_format(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"tool":"read","arguments":{"id":"latch"}}')
    reply = chat(client, tools=TOOLS, response_format=json_schema(NOTE)).json()
    assert reply["choices"][0]["finish_reason"] == "tool_calls"
    assert len(backend.requests) == 1


def test_an_answer_the_cap_cut_is_finished_by_length(
    client: TestClient, backend: AsyncScriptedBackend
) -> None:
    backend.enqueue('{"title":"A very long')
    reply = chat(client, max_tokens=2, response_format=json_schema(NOTE)).json()
    assert reply["choices"][0]["finish_reason"] == "length"


@pytest.mark.parametrize(
    ("response_format", "fields", "param"),
    [
        ("json", {}, "response_format"),
        ({"type": "xml"}, {}, "response_format.type"),
        ({"type": "json_schema"}, {}, "response_format.json_schema"),
        ({"type": "json_schema", "json_schema": {"schema": NOTE}}, {}, "response_format.json_schema.name"),
        (json_schema(NOTE, name="a note"), {}, "response_format.json_schema.name"),
        ({"type": "json_schema", "json_schema": {"name": "n"}}, {}, "response_format.json_schema.schema"),
        (
            {"type": "json_schema", "json_schema": {"name": "n", "schema": NOTE, "strict": "yes"}},
            {},
            "response_format.json_schema.strict",
        ),
        (json_schema(NOTE), {"stop": ["}"]}, "stop"),
    ],
)
def test_a_bad_response_format_is_refused_by_its_field(
    client: TestClient,
    backend: AsyncScriptedBackend,
    response_format: Any,
    fields: dict[str, Any],
    param: str,
) -> None:
    reply = chat(client, response_format=response_format, **fields)
    assert reply.status_code == 400
    assert reply.json()["error"]["param"] == param
    assert backend.requests == []


@pytest.mark.parametrize(("schema", "path"), UNGUARANTEED)
def test_a_schema_the_grammar_cannot_guarantee_is_a_400_before_any_request(
    schema: dict[str, Any], path: str
) -> None:
    # A grammar dialect's backend compiles our grammar: nothing is listening, nothing is asked.
    backend = AsyncOpenAICompatible("http://127.0.0.1:9", dialect="llama.cpp")
    with TestClient(serve_app(backend)) as client:
        for fields in ({}, {"tools": TOOLS}, {"stream": True}):
            reply = chat(client, response_format=json_schema(schema), **fields)
            assert reply.status_code == 400, reply.text
            error = reply.json()["error"]
            param = f"response_format.json_schema.schema.{path}"
            assert (error["param"], error["code"]) == (param, "unsupported_schema")


def test_format_is_an_annotation_and_passes() -> None:
    dated = {"type": "object", "properties": {"on": {"type": "string", "format": "date"}}, "required": ["on"]}
    local = AsyncOpenAICompatible("http://127.0.0.1:9", dialect="llama.cpp")
    from toolrouting._serve.core.output_format import checked_format
    from toolrouting._serve.fields import read_response_format

    output = read_response_format(json_schema(dated))
    assert output is not None
    checked_format(output, local)  # no refusal


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    backend = AsyncScriptedBackend()
    with served(serve_app(backend, model="scripted")) as url:
        yield backend, url


def test_the_sdks_parse_sends_the_models_schema_and_reads_the_answer(
    scripted: tuple[AsyncScriptedBackend, str],
) -> None:
    backend, url = scripted
    backend.enqueue('{"title":"A latch","stars":5}')
    with openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        completion = client.chat.completions.parse(model="scripted", messages=QUESTION, response_format=Note)
    assert completion.choices[0].message.parsed == Note(title="A latch", stars=5)
    asked = backend.requests[-1].settings
    assert asked.json_schema_name == "Note"
    assert asked.json_schema_strict is True
    assert asked.json_schema is not None
    jsonschema.validate({"title": "A latch", "stars": 5}, dict(asked.json_schema))


@pytest.mark.parametrize("method", ["json_schema", "json_mode"])
def test_langchains_structured_output_gets_its_schema_asked(
    scripted: tuple[AsyncScriptedBackend, str], method: str
) -> None:
    from langchain_openai import ChatOpenAI

    backend, url = scripted
    backend.enqueue('{"title":"A latch","stars":2}')
    model = ChatOpenAI(base_url=url, api_key="unused", model="scripted", max_retries=0)
    note = model.with_structured_output(Note, method=method).invoke(  # type: ignore[arg-type]
        "Describe the latch as JSON with title and stars."
    )
    assert note == Note(title="A latch", stars=2)
    asked = backend.requests[-1].settings.json_schema
    assert asked is not None
    assert ("title" in asked["properties"]) if method == "json_schema" else asked == {"type": "object"}


QUESTIONS = [
    "Describe the storage-room latch.",
    "Rate the coffee in the kitchen.",
    "Give a title for a note about the fire drill.",
]


def answer_of(
    client: openai.OpenAI, messages: Any, response_format: Any, fields: dict[str, Any], *, stream: bool
) -> tuple[str, str | None]:
    """The content and finish reason of one reply, whole or streamed (the chunks joined)."""
    if not stream:
        completion = client.chat.completions.create(
            model="m", messages=messages, response_format=response_format, **fields
        )
        [choice] = completion.choices
        return choice.message.content or "", choice.finish_reason
    texts, finish = [], None
    for chunk in client.chat.completions.create(
        model="m", messages=messages, response_format=response_format, stream=True, **fields
    ):
        for piece in chunk.choices:
            texts.append(piece.delta.content or "")
            finish = piece.finish_reason or finish
    return "".join(texts), finish


@pytest.mark.model
@pytest.mark.parametrize("stream", [False, True])
def test_every_answer_of_the_model_is_valid_under_the_schema_or_cut(embedded: str, stream: bool) -> None:
    formats: list[tuple[Any, dict[str, Any]]] = [
        (json_schema(NOTE, True), NOTE),
        ({"type": "json_object"}, {"type": "object"}),
    ]
    # With tools and tool_choice auto, the answer is the route's none's (a tool call is the other reply).
    choices: list[dict[str, Any]] = [{}, {"tools": TOOLS, "tool_choice": "none"}, {"tools": TOOLS}]
    with openai.OpenAI(base_url=embedded, api_key="unused", max_retries=0) as client:
        for question in QUESTIONS:
            for response_format, schema in formats:
                for fields in choices:
                    messages: Any = [{"role": "user", "content": question}]
                    content, finish = answer_of(client, messages, response_format, fields, stream=stream)
                    if finish in ("length", "tool_calls"):
                        continue
                    assert finish == "stop"
                    jsonschema.validate(json.loads(content), schema)


@pytest.mark.model
def test_the_sdks_parse_on_the_model(embedded: str) -> None:
    with openai.OpenAI(base_url=embedded, api_key="unused", max_retries=0) as client:
        try:
            completion = client.chat.completions.parse(
                model="m", messages=QUESTION, response_format=Note, max_tokens=128
            )
        except openai.LengthFinishReasonError:  # the cap cut it: the one other outcome
            return
    assert isinstance(completion.choices[0].message.parsed, Note)


@pytest.mark.model
@pytest.mark.parametrize("method", ["json_schema", "json_mode"])
def test_langchains_structured_output_on_the_model(embedded: str, method: str) -> None:
    from langchain_openai import ChatOpenAI

    model = ChatOpenAI(base_url=embedded, api_key="unused", model="m", max_retries=0, max_tokens=128)
    structured = model.with_structured_output(Note, method=method, include_raw=True)  # type: ignore[arg-type]
    result = structured.invoke("Describe the latch as JSON with a title and stars.")
    finish = result["raw"].response_metadata.get("finish_reason")
    if method == "json_schema" and finish != "length":
        assert isinstance(result["parsed"], Note)
    if method == "json_mode" and finish != "length":
        assert isinstance(json.loads(result["raw"].content), dict)
