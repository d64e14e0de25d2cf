"""Faults from a real misbehaving HTTP server on loopback: each is its own error, and the backend recovers.

The server (tests/support/fault_server.py) is http.server in a thread on 127.0.0.1; each test queues
what it does next. A slow answer is held on an Event the test releases, so no test waits on a clock:
only a request to a held server gets the short timeout (it cannot be answered in time however
loaded the machine), and every other request a timeout no loopback answer comes near.
"""

from __future__ import annotations

import pickle
import socket
from collections.abc import Iterator

import pytest
from support.fault_server import (
    ACTION,
    ANSWERED_TIMEOUT,
    HELD_TIMEOUT,
    FaultServer,
    close_mid_body,
    held,
    ok,
    reset,
    status,
)

from toolrouting import Settings
from toolrouting._backends.base import Message
from toolrouting._backends.http import OpenAICompatible
from toolrouting._errors import (
    BackendConnectError,
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    BackendTimeout,
    SchemaIgnoredError,
)
from toolrouting._limits import MAX_BODY_QUOTE, MAX_REPLY_QUOTE

MESSAGES: list[Message] = [{"role": "user", "content": "Find the llama docs."}]
SCHEMA = {"type": "object", "properties": {"tool": {"const": "none"}}, "required": ["tool"]}
TIMEOUT = ANSWERED_TIMEOUT
SHORT = HELD_TIMEOUT


@pytest.fixture
def backend(server: FaultServer) -> Iterator[OpenAICompatible]:
    with OpenAICompatible(server.url, dialect="llama-cpp-python", timeout=TIMEOUT) as http_backend:
        yield http_backend


def assert_usable(backend: OpenAICompatible) -> None:
    """The next request after a fault succeeds on the same backend."""
    completion = backend.complete(MESSAGES)
    assert (completion.text, completion.finish_reason) == (ACTION, "stop")


def test_a_good_request_first(server: FaultServer, backend: OpenAICompatible) -> None:
    assert_usable(backend)
    assert server.paths == ["/v1/chat/completions"]


def test_500_with_a_body(server: FaultServer, backend: OpenAICompatible) -> None:
    body = b'{"error": {"message": "model exploded", "trace": "' + b"x" * 1000 + b'"}}'
    server.script.append(status(500, body))
    with pytest.raises(BackendHTTPError) as caught:
        backend.complete(MESSAGES)
    error = caught.value
    assert error.status == 500
    assert error.url == f"{server.url}/v1/chat/completions"
    assert error.body == body.decode()[:MAX_BODY_QUOTE]
    assert len(error.body) == MAX_BODY_QUOTE
    assert error.retryable
    assert error.retry_after is None
    assert "answered HTTP 500 Internal Server Error" in str(error)
    assert "model exploded" in str(error)
    assert "x" * (MAX_BODY_QUOTE + 1) not in str(error)
    assert_usable(backend)


def test_429_with_retry_after(server: FaultServer, backend: OpenAICompatible) -> None:
    server.script.append(status(429, b'{"error": "slow down"}', {"Retry-After": "7"}))
    with pytest.raises(BackendHTTPError, match=r"HTTP 429 .*after 7 s \(Retry-After\)") as caught:
        backend.complete(MESSAGES)
    assert (caught.value.status, caught.value.retry_after, caught.value.retryable) == (429, 7.0, True)
    assert_usable(backend)


def test_schema_refused_with_500_hints_at_the_dialect(server: FaultServer, backend: OpenAICompatible) -> None:
    # What llama-cpp-python answers to the openai dialect's json_schema response_format.
    server.script.append(status(500, b"Input should be 'text' or 'json_object'"))
    routed = backend.clone(dialect="openai", settings=Settings(json_schema=SCHEMA))
    with pytest.raises(BackendHTTPError, match="another dialect than 'openai'") as caught:
        routed.complete(MESSAGES)
    assert caught.value.status == 500
    assert_usable(backend)


def test_body_that_is_not_json(server: FaultServer, backend: OpenAICompatible) -> None:
    server.script.append(status(200, b"<html><body>Welcome to nginx!</body></html>"))
    with pytest.raises(BackendResponseError, match=r"not JSON.*Welcome to nginx") as caught:
        backend.complete(MESSAGES)
    assert type(caught.value) is BackendResponseError
    assert_usable(backend)


def test_json_that_is_not_a_completion(server: FaultServer, backend: OpenAICompatible) -> None:
    server.script.append(status(200, b'{"object": "list", "data": [{"id": "smollm2"}]}'))
    with pytest.raises(
        BackendResponseError, match=r'not a chat completion: it has no "choices" \(keys: data'
    ):
        backend.complete(MESSAGES)
    assert_usable(backend)


def test_no_choices(server: FaultServer, backend: OpenAICompatible) -> None:
    server.script.append(status(200, b'{"object": "chat.completion", "choices": []}'))
    with pytest.raises(BackendResponseError, match="has no choices"):
        backend.complete(MESSAGES)
    assert_usable(backend)


def test_connection_closed_mid_response(server: FaultServer, backend: OpenAICompatible) -> None:
    server.script.append(close_mid_body)
    with pytest.raises(
        BackendConnectError, match="closed the connection before a complete response"
    ) as caught:
        backend.complete(MESSAGES)
    assert caught.value.retryable
    assert_usable(backend)


def test_connection_reset(server: FaultServer, backend: OpenAICompatible) -> None:
    server.script.append(reset)
    with pytest.raises(BackendConnectError) as caught:
        backend.complete(MESSAGES)
    assert caught.value.retryable
    assert_usable(backend)


def test_slower_than_the_timeout(server: FaultServer, backend: OpenAICompatible) -> None:
    server.script.append(held)
    with (
        backend.clone(timeout=SHORT) as impatient,
        pytest.raises(BackendTimeout, match=rf"within the timeout of {SHORT:g} s \(ReadTimeout\)") as caught,
    ):
        impatient.complete(MESSAGES)
    assert caught.value.retryable
    server.release.set()
    assert_usable(backend)


def test_connection_refused() -> None:
    # A socket bound but not listening: the kernel refuses connections to its port, and
    # nothing else can take the port while it is held.
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
        with OpenAICompatible(f"http://127.0.0.1:{port}", timeout=TIMEOUT) as refused:
            with pytest.raises(
                BackendConnectError, match=f"could not connect to http://127.0.0.1:{port}/v1"
            ) as caught:
                refused.complete(MESSAGES)
            assert caught.value.retryable
            with pytest.raises(BackendConnectError):  # and again: nothing is left half-open
                refused.complete(MESSAGES)


def test_prose_although_a_schema_was_sent(server: FaultServer, backend: OpenAICompatible) -> None:
    prose = "Sure! Let me look that up for you. First, I will open the documentation index."
    server.script.append(ok(prose))
    routed = backend.clone(settings=Settings(json_schema=SCHEMA, max_tokens=64))
    with pytest.raises(SchemaIgnoredError) as caught:
        routed.complete(MESSAGES)
    message = str(caught.value)
    assert "may have ignored the schema" in message
    assert "dialect 'llama-cpp-python'" in message
    assert f'"{prose[:MAX_REPLY_QUOTE]}"…' in message  # the first 64 characters, no more
    assert_usable(backend)
    server.script.append(ok())
    assert routed.complete(MESSAGES).text == ACTION


def test_closing_a_clone_keeps_the_original_working(server: FaultServer, backend: OpenAICompatible) -> None:
    with backend.clone(settings=Settings(max_tokens=8)) as clone:
        assert clone.complete(MESSAGES).text == ACTION
    assert_usable(backend)


def test_every_fault_is_a_backend_error(server: FaultServer, backend: OpenAICompatible) -> None:
    # Each as its own subclass: a fault must not pass as some other error (a timeout, say).
    faults = [
        (status(503, b"busy"), BackendHTTPError),
        (status(200, b"nope"), BackendResponseError),
        (close_mid_body, BackendConnectError),
        (reset, BackendConnectError),
        (held, BackendTimeout),
    ]
    with backend.clone(timeout=SHORT) as impatient:
        for fault, kind in faults:
            server.script.append(fault)
            with pytest.raises(BackendError) as caught:
                (impatient if fault is held else backend).complete(MESSAGES)
            assert type(caught.value) is kind, fault
    server.release.set()
    assert_usable(backend)


def test_http_error_survives_pickling(server: FaultServer, backend: OpenAICompatible) -> None:
    server.script.append(status(429, b"busy", {"Retry-After": "3"}))
    with pytest.raises(BackendHTTPError) as caught:
        backend.complete(MESSAGES)
    copy = pickle.loads(pickle.dumps(caught.value))
    assert (copy.status, copy.url, copy.body, copy.retry_after, copy.retryable) == (
        429,
        caught.value.url,
        "busy",
        3.0,
        True,
    )
    assert str(copy) == str(caught.value)
