"""The exact bodies each dialect sends and how each dialect's answer is read.

A named fake: httpx.MockTransport stands in for OpenAI, llama-server, KoboldCpp and Ollama,
whose wire shapes no server on this machine speaks
(tests/backends/http/test_backends_http_llama_cpp_python_server.py drives a real
llama-cpp-python server, tests/backends/http/test_backends_http_faults.py a real misbehaving one).
Each expected body below restates the shape cited beside its row in toolrouting/_backends/dialects.py.
"""
# ruff: noqa: F811 - the fixtures imported from support.mock_transport are the tests' parameters

from __future__ import annotations

from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import httpx
import pytest
from support.http_dialects import (
    ACTION,
    DIALECT_NAMES,
    EXPECTED,
    MESSAGES,
    ROUTED,
    SCHEMA,
    STATES,
    chat_completion,
    ollama_chat,
)
from support.mock_transport import Recorder, client, make, recorder  # noqa: F401 - fixtures

from toolrouting import Completion, Settings, route_grammar
from toolrouting._backends.base import Usage
from toolrouting._backends.endpoint import endpoint_url
from toolrouting._backends.http import OpenAICompatible


def reply_for(dialect: str, text: str = ACTION, finish: str = "stop", used: int = 12) -> dict[str, Any]:
    return ollama_chat(text, finish, used) if dialect == "ollama" else chat_completion(text, finish, used)


@pytest.mark.parametrize(("dialect", "state"), list(EXPECTED))
def test_request_body_is_exactly_the_dialect_shape(
    make: Callable[..., OpenAICompatible], recorder: Recorder, dialect: str, state: str
) -> None:
    recorder.answer(reply_for(dialect))
    make(dialect, settings=STATES[state]).complete(MESSAGES)
    assert recorder.body() == EXPECTED[dialect, state]
    request = recorder.requests[-1]
    assert request.method == "POST"
    assert request.headers["content-type"] == "application/json"
    assert "authorization" not in request.headers


@pytest.mark.parametrize("dialect", DIALECT_NAMES)
def test_no_schema_means_nothing_schema_related_on_the_wire(
    make: Callable[..., OpenAICompatible], recorder: Recorder, dialect: str
) -> None:
    recorder.answer(reply_for(dialect, "Hello there."))
    completion = make(dialect, settings=Settings(max_tokens=64, json_schema_strict=True)).complete(MESSAGES)
    body = recorder.body()
    assert not {"response_format", "format", "json_schema", "grammar"} & set(body)
    assert completion.text == "Hello there."  # prose is fine when no schema was asked for


def test_strict_and_name_are_settings(make: Callable[..., OpenAICompatible], recorder: Recorder) -> None:
    recorder.answer(chat_completion())
    settings = Settings(json_schema=SCHEMA, json_schema_name="answer", json_schema_strict=True)
    make("openai", settings=settings).complete(MESSAGES)
    wrapper = recorder.body()["response_format"]["json_schema"]
    assert (wrapper["name"], wrapper["strict"]) == ("answer", True)


def test_schema_in_a_read_only_mapping_still_serialises(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    recorder.answer(chat_completion())
    frozen = MappingProxyType({"type": "object", "properties": MappingProxyType({"a": {"type": "string"}})})
    make("llama.cpp", settings=Settings(json_schema=frozen, grammar="server")).complete(MESSAGES)
    expected = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert recorder.body()["response_format"]["schema"] == expected


def test_model_and_api_key_go_on_the_wire(client: httpx.Client, recorder: Recorder) -> None:
    recorder.answer(chat_completion())
    backend = OpenAICompatible(
        "https://api.example.test/v1", model="gpt-x", api_key="sk-test", http_client=client
    )
    backend.complete(MESSAGES)
    assert recorder.body()["model"] == "gpt-x"
    assert recorder.requests[-1].headers["authorization"] == "Bearer sk-test"
    assert "sk-test" not in repr(backend)


@pytest.mark.parametrize(
    ("dialect", "base_url", "endpoint"),
    [
        ("openai", "http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"),
        ("openai", "http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("openai", "https://api.example.test/v1", "https://api.example.test/v1/chat/completions"),
        ("openai", "https://openrouter.test/api/v1", "https://openrouter.test/api/v1/chat/completions"),
        ("llama.cpp", "http://h:8080/v1/chat/completions", "http://h:8080/v1/chat/completions"),
        ("koboldcpp", "http://h:5001", "http://h:5001/v1/chat/completions"),
        ("ollama", "http://h:11434", "http://h:11434/api/chat"),
        ("ollama", "http://h:11434/v1", "http://h:11434/api/chat"),
        ("ollama", "http://h:11434/api", "http://h:11434/api/chat"),
    ],
)
def test_endpoint_from_base_url(
    make: Callable[..., OpenAICompatible], recorder: Recorder, dialect: str, base_url: str, endpoint: str
) -> None:
    recorder.answer(reply_for(dialect))
    backend = make(dialect).clone(base_url=base_url)
    assert backend.url == endpoint
    backend.complete(MESSAGES)
    assert str(recorder.requests[-1].url) == endpoint


@pytest.mark.parametrize(
    ("base_url", "path", "url"),
    [
        ("http://h:8080", "/v1/models", "http://h:8080/v1/models"),
        ("http://h:8080/v1/", "/v1/models", "http://h:8080/v1/models"),
        ("http://h:11434/api", "/api/tags", "http://h:11434/api/tags"),
        ("http://h:11434/v1", "/api/tags", "http://h:11434/api/tags"),
        (
            "http://h/deploy/v1?api-version=2",
            "/v1/chat/completions",
            "http://h/deploy/v1/chat/completions?api-version=2",
        ),
    ],
)
def test_endpoint_url_serves_any_path_on_the_server(base_url: str, path: str, url: str) -> None:
    assert endpoint_url(base_url, path) == url


@pytest.mark.parametrize("dialect", DIALECT_NAMES)
def test_reply_is_read_from_each_dialect_shape(
    make: Callable[..., OpenAICompatible], recorder: Recorder, dialect: str
) -> None:
    recorder.answer(reply_for(dialect, ACTION, "stop", 12))
    completion = make(dialect, settings=ROUTED).complete(MESSAGES)
    assert completion.text == ACTION
    assert completion.finish_reason == "stop"
    assert completion.usage == Usage(prompt_tokens=30, completion_tokens=12)
    assert completion.truncated is False
    assert completion.raw == reply_for(dialect, ACTION, "stop", 12)


@pytest.mark.parametrize("dialect", DIALECT_NAMES)
def test_stopping_at_the_cap_is_truncated(
    make: Callable[..., OpenAICompatible], recorder: Recorder, dialect: str
) -> None:
    half = '{"tool": "search", "argu'
    recorder.answer(reply_for(dialect, half, "length", 64))
    completion = make(dialect, settings=ROUTED).complete(MESSAGES)
    assert (completion.text, completion.finish_reason, completion.truncated) == (half, "length", True)


def test_using_the_whole_cap_is_truncated_without_a_length_reason(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    recorder.answer(chat_completion('{"tool": "none"', "stop", 64))
    assert make("openai", settings=ROUTED).complete(MESSAGES).truncated is True


def test_missing_usage_counts_zero(make: Callable[..., OpenAICompatible], recorder: Recorder) -> None:
    body = chat_completion()
    del body["usage"]
    recorder.answer(body)
    completion = make("openai").complete(MESSAGES)
    assert completion.usage == Usage()
    assert completion.truncated is False


@pytest.mark.parametrize(
    ("details", "cached"),
    [({"cached_tokens": 24}, 24), ({"cached_tokens": 99}, 30), ({"cached_tokens": "24"}, 0), (None, 0)],
)
def test_the_cached_prompt_tokens_are_read_where_the_server_gives_them(
    make: Callable[..., OpenAICompatible], recorder: Recorder, details: Any, cached: int
) -> None:
    body = chat_completion()
    body["usage"]["prompt_tokens_details"] = details  # OpenAI's, llama-server's and vLLM's field
    recorder.answer(body)
    completion = make("openai").complete(MESSAGES)
    assert completion.usage == Usage(prompt_tokens=30, completion_tokens=12, cached_tokens=cached)


@pytest.mark.parametrize(
    ("dialect", "sent"),
    [("openai", "response_format"), ("ollama", "format"), ("llama.cpp", "grammar")],
)
def test_our_grammar_goes_only_where_a_grammar_is_taken(
    make: Callable[..., OpenAICompatible], recorder: Recorder, dialect: str, sent: str
) -> None:
    recorder.answer(reply_for(dialect))
    make(dialect, settings=ROUTED.clone(grammar="ours")).complete(MESSAGES)
    assert {"response_format", "format", "json_schema", "grammar"} & set(recorder.body()) == {sent}


def test_bounded_is_a_setting_of_our_grammar(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    recorder.answer(chat_completion())
    recorder.answer(chat_completion())
    make("llama.cpp", settings=ROUTED).complete(MESSAGES)
    make("llama.cpp", settings=ROUTED.clone(bounded=False)).complete(MESSAGES)
    bounded, unbounded = recorder.body(0)["grammar"], recorder.body(1)["grammar"]
    assert bounded == route_grammar(SCHEMA, bounded=True).gbnf
    assert unbounded == route_grammar(SCHEMA).gbnf != bounded


def test_completion_is_a_frozen_value(make: Callable[..., OpenAICompatible], recorder: Recorder) -> None:
    recorder.answer(chat_completion())
    completion = make().complete(MESSAGES)
    assert isinstance(completion, Completion)
    with pytest.raises(AttributeError):
        completion.text = "other"  # type: ignore[misc]


def test_the_grammar_setting_names_its_choices() -> None:
    with pytest.raises(ValueError, match="grammar is 'ours' or 'server'"):
        Settings(grammar="llguidance")  # type: ignore[arg-type]
