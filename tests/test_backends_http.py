"""The exact bodies each dialect sends and how each dialect's answer is read.

A named fake: httpx.MockTransport stands in for OpenAI, llama-server, KoboldCpp and Ollama,
whose wire shapes no server on this machine speaks (tests/test_backends_llama_cpp_python_server.py
drives a real llama-cpp-python server, tests/test_backends_http_faults.py a real misbehaving one).
Each expected body below restates the shape cited beside its row in toolrouting/_backends/dialects.py.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Iterator
from types import MappingProxyType
from typing import Any

import httpx
import pytest

from toolrouting import Backend, Completion, Settings, can_route, route_grammar, routed_backend
from toolrouting._backends.base import Message, Usage
from toolrouting._backends.endpoint import _retry_after, endpoint_url
from toolrouting._backends.http import OpenAICompatible
from toolrouting._errors import (
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    GrammarError,
    SchemaIgnoredError,
)

MESSAGES: list[Message] = [
    {"role": "system", "content": "Route the request."},
    {"role": "user", "content": "Find the llama docs."},
]
SCHEMA: dict[str, Any] = {
    "type": "object",
    "anyOf": [
        {
            "type": "object",
            "properties": {"tool": {"const": "search"}, "arguments": {"type": "object"}},
            "required": ["tool", "arguments"],
        },
        {"type": "object", "properties": {"tool": {"const": "none"}}, "required": ["tool"]},
    ],
}
ACTION = '{"tool": "search", "arguments": {"query": "llama"}}'


def chat_completion(text: str | None = ACTION, finish: str = "stop", used: int = 12) -> dict[str, Any]:
    """An OpenAI chat.completion object, as OpenAI, llama.cpp, llama-cpp-python and KoboldCpp answer."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": finish}],
        "usage": {"prompt_tokens": 30, "completion_tokens": used, "total_tokens": 30 + used},
    }


def ollama_chat(text: str = ACTION, done_reason: str = "stop", used: int = 12) -> dict[str, Any]:
    """Ollama's /api/chat answer with stream false (docs/api.md, 'Chat request (No streaming)')."""
    return {
        "model": "smollm2",
        "created_at": "2024-12-06T00:46:58.265747Z",
        "message": {"role": "assistant", "content": text},
        "done_reason": done_reason,
        "done": True,
        "prompt_eval_count": 30,
        "eval_count": used,
    }


class Recorder:
    """A MockTransport handler that records each request and answers with the next queued response."""

    def __init__(self) -> None:
        self.requests: list[httpx.Request] = []
        self.responses: list[httpx.Response] = []

    def answer(self, body: Any, status: int = 200, headers: dict[str, str] | None = None) -> None:
        self.responses.append(httpx.Response(status, json=body, headers=headers))

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        return self.responses.pop(0)

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


@pytest.fixture
def recorder() -> Recorder:
    return Recorder()


@pytest.fixture
def client(recorder: Recorder) -> Iterator[httpx.Client]:
    with httpx.Client(transport=httpx.MockTransport(recorder)) as http_client:
        yield http_client


@pytest.fixture
def make(client: httpx.Client) -> Callable[..., OpenAICompatible]:
    def build(dialect: str = "openai", **kwargs: Any) -> OpenAICompatible:
        if dialect == "ollama":
            kwargs.setdefault("model", "smollm2")
        return OpenAICompatible("http://127.0.0.1:8080", dialect=dialect, http_client=client, **kwargs)

    return build


def reply_for(dialect: str, text: str = ACTION, finish: str = "stop", used: int = 12) -> dict[str, Any]:
    return ollama_chat(text, finish, used) if dialect == "ollama" else chat_completion(text, finish, used)


ROUTED = Settings(json_schema=SCHEMA, json_schema_name="tool_route", max_tokens=64)
#: Our grammar as the three grammar-taking dialects send it (its text is tests/test_grammar.py's
#: subject): in the field ``grammar``, in place of the schema, never beside it.
OUR_GBNF = route_grammar(SCHEMA, bounded=True).gbnf
SAMPLED = Settings(temperature=0.0, top_p=0.9, top_k=20, seed=7, stop=("\n\n", "END"))

# The whole body of every dialect, in three states: bare, routed (schema and cap), sampled; the
# dialects that take a grammar also routed with grammar="server" (the schema as before).
EXPECTED: dict[tuple[str, str], dict[str, Any]] = {
    ("llama.cpp", "routed"): {"messages": MESSAGES, "max_tokens": 64, "grammar": OUR_GBNF},
    ("llama-cpp-python", "routed"): {"messages": MESSAGES, "max_tokens": 64, "grammar": OUR_GBNF},
    ("koboldcpp", "routed"): {"messages": MESSAGES, "max_tokens": 64, "max_length": 64, "grammar": OUR_GBNF},
    ("openai", "bare"): {"messages": MESSAGES},
    ("openai", "routed"): {
        "messages": MESSAGES,
        "max_tokens": 64,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "tool_route", "schema": SCHEMA, "strict": False},
        },
    },
    ("openai", "sampled"): {
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 7,
        "stop": ["\n\n", "END"],
    },
    ("llama.cpp", "bare"): {"messages": MESSAGES},
    ("llama.cpp", "server grammar"): {
        "messages": MESSAGES,
        "max_tokens": 64,
        "response_format": {"type": "json_object", "schema": SCHEMA},
    },
    ("llama.cpp", "sampled"): {
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 7,
        "stop": ["\n\n", "END"],
    },
    ("llama-cpp-python", "bare"): {"messages": MESSAGES},
    ("llama-cpp-python", "server grammar"): {
        "messages": MESSAGES,
        "max_tokens": 64,
        "response_format": {"type": "json_object", "schema": SCHEMA},
    },
    ("llama-cpp-python", "sampled"): {
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 7,
        "stop": ["\n\n", "END"],
    },
    ("koboldcpp", "bare"): {"messages": MESSAGES},
    ("koboldcpp", "server grammar"): {
        "messages": MESSAGES,
        "max_tokens": 64,
        "max_length": 64,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "tool_route", "schema": SCHEMA, "strict": False},
        },
    },
    ("koboldcpp", "sampled"): {
        "messages": MESSAGES,
        "temperature": 0.0,
        "top_p": 0.9,
        "top_k": 20,
        "seed": 7,
        "stop": ["\n\n", "END"],
    },
    ("ollama", "bare"): {"model": "smollm2", "messages": MESSAGES, "stream": False},
    ("ollama", "routed"): {
        "model": "smollm2",
        "messages": MESSAGES,
        "stream": False,
        "format": SCHEMA,
        "options": {"num_predict": 64},
    },
    ("ollama", "sampled"): {
        "model": "smollm2",
        "messages": MESSAGES,
        "stream": False,
        "options": {"temperature": 0.0, "top_p": 0.9, "top_k": 20, "seed": 7, "stop": ["\n\n", "END"]},
    },
}
STATES = {
    "bare": Settings(),
    "routed": ROUTED,
    "server grammar": ROUTED.clone(grammar="server"),
    "sampled": SAMPLED,
}
DIALECT_NAMES = ("openai", "llama.cpp", "llama-cpp-python", "koboldcpp", "ollama")


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


def test_a_clone_schema_never_leaks_into_the_original(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    original = make("openai", settings=Settings(max_tokens=400, temperature=0.2))
    routed = routed_backend(original, SCHEMA, 32)
    recorder.answer(chat_completion())
    recorder.answer(chat_completion("Plain prose answer."))
    recorder.answer(chat_completion())
    routed.complete(MESSAGES)
    original.complete(MESSAGES)
    routed.complete(MESSAGES)
    first, second, third = (recorder.body(i) for i in range(3))
    assert first["max_tokens"] == third["max_tokens"] == 32
    assert first["response_format"]["json_schema"]["name"] == "tool_route"
    assert second == {"messages": MESSAGES, "max_tokens": 400, "temperature": 0.2}
    assert original.settings == Settings(max_tokens=400, temperature=0.2)
    assert routed.settings.temperature == 0.2


def test_clone_shares_the_pool_and_closing_it_leaves_the_original_open() -> None:
    with OpenAICompatible("http://127.0.0.1:8080") as original:
        clone = original.clone(settings=ROUTED)
        assert clone._client is original._client
        clone.close()
        with clone:
            pass
        assert not original._client.is_closed
    assert original._client.is_closed
    with pytest.raises(BackendError, match="closed"):
        clone.complete(MESSAGES)


def test_a_client_passed_in_is_never_closed(client: httpx.Client) -> None:
    with OpenAICompatible("http://127.0.0.1:8080", http_client=client):
        pass
    assert not client.is_closed


def test_clone_changes_dialect_model_and_timeout(make: Callable[..., OpenAICompatible]) -> None:
    original = make("openai", model="a")
    clone = original.clone(dialect="ollama", model="b", timeout=5)
    assert (clone.dialect, clone.model, clone.timeout) == ("ollama", "b", 5.0)
    assert (original.dialect, original.model, original.timeout) == ("openai", "a", 300.0)
    with pytest.raises(TypeError, match="http_client"):
        original.clone(http_client=None)


def test_is_a_backend_that_can_route(make: Callable[..., OpenAICompatible]) -> None:
    backend = make()
    assert isinstance(backend, Backend)
    assert can_route(backend)


def test_unknown_dialect_lists_the_known_ones() -> None:
    with pytest.raises(ValueError, match="unknown dialect 'vllm'") as caught:
        OpenAICompatible("http://127.0.0.1:8080", dialect="vllm")
    for name in DIALECT_NAMES:
        assert name in str(caught.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"base_url": "127.0.0.1:8080"}, "http:// or https://"),
        ({"base_url": "ftp://h/"}, "http:// or https://"),
        ({"base_url": "http://h", "dialect": "ollama"}, "needs model="),
        ({"base_url": "http://h", "timeout": 0}, "positive number"),
        ({"base_url": "http://h", "timeout": float("inf")}, "positive number"),
    ],
)
def test_misuse_is_refused_at_construction(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        OpenAICompatible(**kwargs)


def test_schema_ignored_names_the_dialect_and_where_the_schema_went(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    recorder.answer(ollama_chat("Sure! I would search for llamas."))
    with pytest.raises(
        SchemaIgnoredError, match=r"may have ignored the schema: it was sent as format \(dialect 'ollama'\)"
    ):
        make("ollama", settings=ROUTED).complete(MESSAGES)


def test_koboldcpp_schema_ignored_mentions_its_failed_conversion(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    recorder.answer(chat_completion("Here is my answer in prose."))
    with pytest.raises(SchemaIgnoredError, match="JSON to GBNF failed"):
        make("koboldcpp", settings=ROUTED.clone(grammar="server")).complete(MESSAGES)


@pytest.mark.parametrize("dialect", ["llama.cpp", "llama-cpp-python", "koboldcpp"])
def test_prose_under_our_grammar_says_the_grammar_was_sent(
    make: Callable[..., OpenAICompatible], recorder: Recorder, dialect: str
) -> None:
    recorder.answer(chat_completion("Here is my answer in prose."))
    with pytest.raises(SchemaIgnoredError, match=r"sent as grammar \(our GBNF\)"):
        make(dialect, settings=ROUTED).complete(MESSAGES)


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


def test_a_grammar_the_server_refuses_is_a_grammar_error(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    # llama-server's answer to a grammar its parser refuses (server-context.cpp, launch_slot).
    refusal = {
        "error": {"code": 400, "message": "Failed to initialize samplers: ", "type": "invalid_request_error"}
    }
    recorder.answer(refusal, status=400)
    with pytest.raises(GrammarError, match=r"refused the grammar toolrouting compiled.*grammar='server'"):
        make("llama.cpp", settings=ROUTED).complete(MESSAGES)


def test_a_schema_our_grammar_refuses_is_a_grammar_error_before_sending(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    with pytest.raises(GrammarError, match="prefixItems"):
        make("llama.cpp", settings=Settings(json_schema={"type": "array", "prefixItems": []})).complete(
            MESSAGES
        )
    assert recorder.requests == []


@pytest.mark.parametrize(
    ("schema", "text", "ignored"),
    [
        (SCHEMA, '  {"tool": "none"}', False),
        (SCHEMA, "[1, 2]", True),
        ({"type": "array"}, "[1, 2]", False),
        ({"type": "string"}, '"hi"', False),
        ({"type": "string"}, "hi", True),
        ({"anyOf": [{"type": "number"}, {"type": "null"}]}, "null", False),
        ({"anyOf": [{"type": "number"}, {"type": "null"}]}, "-1.5", False),
        ({"anyOf": [{"type": "number"}, {"type": "null"}]}, "The answer", True),
    ],
)
def test_what_counts_as_unconstrained(
    make: Callable[..., OpenAICompatible],
    recorder: Recorder,
    schema: dict[str, Any],
    text: str,
    ignored: bool,
) -> None:
    recorder.answer(chat_completion(text))
    backend = make("llama.cpp", settings=Settings(json_schema=schema))
    if ignored:
        with pytest.raises(SchemaIgnoredError, match=r"'llama\.cpp'"):
            backend.complete(MESSAGES)
    else:
        assert backend.complete(MESSAGES).text == text


def test_empty_reply_cut_at_the_cap_is_truncated_not_ignored(
    make: Callable[..., OpenAICompatible], recorder: Recorder
) -> None:
    recorder.answer(chat_completion("   ", "length", 64))
    assert make("openai", settings=ROUTED).complete(MESSAGES).truncated is True
    recorder.answer(chat_completion("", "stop", 0))
    with pytest.raises(SchemaIgnoredError, match="the reply is empty"):
        make("openai", settings=ROUTED).complete(MESSAGES)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ([1, 2], "a JSON array, not a chat completion"),
        ({"object": "list", "data": []}, 'no "choices"'),
        ({"error": {"message": "model not loaded"}}, "model not loaded"),
        ({"choices": {}}, '"choices" is a JSON object'),
        ({"choices": []}, "no choices"),
        ({"choices": [{"index": 0}]}, 'no "message"'),
        ({"choices": [{"message": {"content": 5}}]}, "content is a JSON number"),
        ({"choices": [{"message": {"content": None, "refusal": "I cannot help"}}]}, "refused"),
    ],
)
def test_bodies_that_are_not_completions(
    make: Callable[..., OpenAICompatible], recorder: Recorder, body: Any, message: str
) -> None:
    recorder.answer(body)
    with pytest.raises(BackendResponseError, match=message) as caught:
        make("openai").complete(MESSAGES)
    assert "dialect='openai'" in str(caught.value)
    assert not isinstance(caught.value, SchemaIgnoredError)


def test_ollama_body_without_message(make: Callable[..., OpenAICompatible], recorder: Recorder) -> None:
    recorder.answer({"error": "model 'smollm2' not found"})
    with pytest.raises(BackendResponseError, match=r"not an Ollama chat response.*not found"):
        make("ollama").complete(MESSAGES)


def test_retry_after_as_an_http_date(make: Callable[..., OpenAICompatible], recorder: Recorder) -> None:
    recorder.answer({"error": "busy"}, status=503, headers={"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"})
    with pytest.raises(BackendHTTPError) as caught:
        make("openai").complete(MESSAGES)
    assert caught.value.retry_after == 0.0  # a date in the past: retry now
    assert caught.value.retryable
    now = datetime.datetime(2015, 10, 21, 7, 27, 30, tzinfo=datetime.UTC)
    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now) == 30.0
    assert _retry_after(" 12 ") == 12.0
    assert _retry_after("soon") is None
    assert _retry_after("-3") is None


def test_redirect_names_where_to(make: Callable[..., OpenAICompatible], recorder: Recorder) -> None:
    recorder.answer({}, status=307, headers={"Location": "https://elsewhere.test/v1/chat/completions"})
    with pytest.raises(BackendHTTPError, match=r"elsewhere\.test"):
        make("openai").complete(MESSAGES)


def test_completion_is_a_frozen_value(make: Callable[..., OpenAICompatible], recorder: Recorder) -> None:
    recorder.answer(chat_completion())
    completion = make().complete(MESSAGES)
    assert isinstance(completion, Completion)
    with pytest.raises(AttributeError):
        completion.text = "other"  # type: ignore[misc]


def test_the_grammar_setting_names_its_choices() -> None:
    with pytest.raises(ValueError, match="grammar is 'ours' or 'server'"):
        Settings(grammar="llguidance")  # type: ignore[arg-type]
