"""OpenAICompatible made and cloned: what a clone shares and what it changes, what construction refuses.

A named fake: httpx.MockTransport (tests/support/mock_transport.py) stands in for the servers.
"""
# ruff: noqa: F811 - the fixtures imported from support.mock_transport are the tests' parameters

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from support.http_dialects import DIALECT_NAMES, MESSAGES, ROUTED, SCHEMA, chat_completion
from support.mock_transport import Recorder, client, make, recorder  # noqa: F401 - fixtures

from toolrouting import Backend, Settings, can_route, routed_backend
from toolrouting._backends.http import OpenAICompatible
from toolrouting._errors import BackendError


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
