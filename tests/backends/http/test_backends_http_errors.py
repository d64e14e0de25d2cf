"""How the HTTP backend names what goes wrong: a schema the server ignored, a grammar refused, a
body that is no completion, a wait asked for, a redirect, and malformed or extreme values.

httpx.MockTransport is a named fake here: it plays servers answering in ways no local server can
be made to (Ollama and KoboldCpp's shapes, a schema-typed list, a 100,000-character key, an absurd
date). tests/backends/http/test_backends_http_faults.py drives a real misbehaving server.
"""
# ruff: noqa: F811 - the fixtures imported from support.mock_transport are the tests' parameters

from __future__ import annotations

import datetime
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from support.http_dialects import MESSAGES, ROUTED, SCHEMA, chat_completion, ollama_chat
from support.mock_transport import Recorder, client, make, recorder  # noqa: F401 - fixtures

from toolrouting import Settings
from toolrouting._backends.endpoint import _retry_after
from toolrouting._backends.http import OpenAICompatible
from toolrouting._errors import (
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    GrammarError,
    SchemaIgnoredError,
)


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


HI = [{"role": "user", "content": "hi"}]


def _backend(response: httpx.Response, **settings: Any) -> OpenAICompatible:
    client = httpx.Client(transport=httpx.MockTransport(lambda request: response))
    return OpenAICompatible("http://127.0.0.1:1", settings=Settings(**settings), http_client=client)


def _completion(text: str) -> httpx.Response:
    body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}
    return httpx.Response(200, json=body)


def test_a_schema_whose_type_is_a_list_is_checked_like_any_json() -> None:
    backend = _backend(_completion('{"a": 1}'), json_schema={"type": ["object", "null"]})
    assert backend.complete(HI).text == '{"a": 1}'  # type: ignore[arg-type]


def test_an_absurd_retry_after_date_is_unreadable_not_a_crash() -> None:
    headers = {"Retry-After": "Mon, 01 Jan 10000000000000000000 00:00:00 GMT"}
    with pytest.raises(BackendHTTPError) as caught:
        _backend(httpx.Response(503, headers=headers, text="busy")).complete(HI)  # type: ignore[arg-type]
    assert caught.value.retry_after is None


def test_a_body_with_huge_keys_is_quoted_within_bounds() -> None:
    with pytest.raises(BackendResponseError) as caught:
        _backend(httpx.Response(200, json={"x" * 100_000: 1})).complete(HI)  # type: ignore[arg-type]
    assert len(str(caught.value)) < 1_000


@pytest.mark.parametrize(
    "settings",
    [{"temperature": float("nan")}, {"json_schema": {"type": "object", "enum": {1, 2}}}],
)
def test_a_request_json_cannot_carry_is_a_backend_error(settings: dict[str, Any]) -> None:
    with pytest.raises(BackendError, match="cannot be written as JSON"):
        _backend(_completion("{}"), **settings).complete(HI)  # type: ignore[arg-type]


def test_an_api_key_that_cannot_be_a_header_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        OpenAICompatible("http://127.0.0.1:1", api_key="clé")


def test_a_closed_backend_says_so() -> None:
    backend = OpenAICompatible("http://127.0.0.1:1")
    backend.close()
    with pytest.raises(BackendError, match="client is closed"):
        backend.complete(HI)  # type: ignore[arg-type]
