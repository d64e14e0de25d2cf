"""The scripted backend shipped for tests and docs."""

from __future__ import annotations

import pytest

from toolrouting import (
    Backend,
    BackendConnectError,
    BackendError,
    Completion,
    ScriptedBackend,
    Settings,
    Usage,
)

HI = [{"role": "user", "content": "hi there"}]


def test_replies_in_order_and_requests_recorded() -> None:
    backend = ScriptedBackend(["one", "two"])
    assert isinstance(backend, Backend)
    assert backend.complete(HI).text == "one"  # type: ignore[arg-type]
    backend.enqueue("three")
    assert [backend.complete(HI).text for _ in range(2)] == ["two", "three"]  # type: ignore[arg-type]
    assert len(backend.requests) == 3
    assert backend.requests[0].messages == ({"role": "user", "content": "hi there"},)
    assert backend.pending == 0


def test_usage_counts_words_and_the_cap_truncates() -> None:
    backend = ScriptedBackend(["a b c d e"], settings=Settings(max_tokens=3))
    completion = backend.complete(HI)  # type: ignore[arg-type]
    assert completion.text == "a b c"
    assert (completion.finish_reason, completion.truncated) == ("length", True)
    assert completion.usage == Usage(prompt_tokens=2, completion_tokens=3)
    assert ScriptedBackend(["a b"], settings=Settings(max_tokens=3)).complete(HI).truncated is False  # type: ignore[arg-type]


def test_completions_exceptions_and_callables() -> None:
    canned = Completion(text="{}", finish_reason="length", truncated=True)
    backend = ScriptedBackend(
        [canned, BackendConnectError("refused"), lambda request: request.settings.json_schema_name]
    )
    assert backend.complete(HI) is canned  # type: ignore[arg-type]
    with pytest.raises(BackendConnectError):
        backend.complete(HI)  # type: ignore[arg-type]
    assert backend.complete(HI).text == "response"  # type: ignore[arg-type]


def test_an_empty_queue_is_a_clear_error() -> None:
    with pytest.raises(BackendError, match="no reply for request 1; queue one with enqueue"):
        ScriptedBackend().complete(HI)  # type: ignore[arg-type]


def test_clones_share_queue_and_record_but_not_settings() -> None:
    backend = ScriptedBackend(["x", "y"])
    with backend.clone(settings=Settings(max_tokens=7)) as clone:
        assert clone.complete(HI).text == "x"  # type: ignore[arg-type]
    assert backend.complete(HI).text == "y"  # type: ignore[arg-type]
    assert [r.settings.max_tokens for r in backend.requests] == [7, None]
    with pytest.raises(TypeError, match="only settings"):
        backend.clone(model="x")
