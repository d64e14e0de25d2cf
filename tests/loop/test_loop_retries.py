"""The loop's retries, on the scripted backend: which errors are retried, the waits, and the end of
the budget.

The scripted backend is a fake by design: it raises the backend error a test names at the request
it means. Each test runs through both drivers of the step machine (the ``driver`` fixture).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.catalogues import NONE, QUESTION, lookup
from support.drivers import Driver
from support.loop_desk import loop_of

from toolrouting import BackendConnectError, BackendHTTPError, BackendTimeout, ScriptedBackend
from toolrouting._errors import RetriesExhaustedError
from toolrouting._limits import MAX_RETRY_AFTER, RETRY_BACKOFF_BASE
from toolrouting._loop.events import Event, RetryScheduled
from toolrouting._loop.transcript_reader import read_transcript


def test_retryable_errors_are_retried_with_backoff_within_the_budget(driver: Driver) -> None:
    waits: list[float] = []
    backend = ScriptedBackend(
        [
            BackendConnectError("connection refused"),
            BackendTimeout("no answer in 5 s"),
            lookup("latch"),
            BackendHTTPError(429, "http://x", "", "HTTP 429 Too Many Requests", retry_after=3.0),
            NONE,
        ]
    )
    events: list[Event] = []
    result = loop_of(driver, backend, retries=2, sleep=waits.append, on_event=events.append).run(QUESTION)

    assert result.reason == "handoff"
    assert waits == [RETRY_BACKOFF_BASE, RETRY_BACKOFF_BASE * 2, 3.0]
    retries = [e for e in events if isinstance(e, RetryScheduled)]
    assert [(e.round, e.attempt, e.delay) for e in retries] == [(1, 1, 0.5), (1, 2, 1.0), (2, 1, 3.0)]
    assert retries[0].error == "BackendConnectError: connection refused"
    # A failed request commits nothing: the transcript has no trace of the faults.
    assert len(result.messages) == len(QUESTION) + 3


def test_retries_run_out_with_the_last_error_as_cause(driver: Driver, tmp_path: Path) -> None:
    last = BackendHTTPError(503, "http://x", "", "HTTP 503 Service Unavailable")
    backend = ScriptedBackend([BackendConnectError("refused"), BackendConnectError("refused"), last])
    path = tmp_path / "run.jsonl"
    with pytest.raises(
        RetriesExhaustedError, match=r"failed 3 times: BackendHTTPError: HTTP 503 .*retries=2"
    ) as e:
        loop_of(driver, backend, retries=2, transcript=path).run(QUESTION)
    assert e.value.__cause__ is last
    # The conversation as sent: the caller's, the catalogue merged into its system message.
    assert read_transcript(path).messages == backend.requests[0].messages


def test_a_non_retryable_error_is_raised_at_once(driver: Driver) -> None:
    refused = BackendHTTPError(400, "http://x", "bad", "HTTP 400 Bad Request")
    backend = ScriptedBackend([refused, NONE])
    with pytest.raises(BackendHTTPError) as caught:
        loop_of(driver, backend, retries=5).run(QUESTION)
    assert caught.value is refused
    assert backend.pending == 1


def test_a_retry_after_beyond_the_limit_fails_now(driver: Driver) -> None:
    waits: list[float] = []
    slow = BackendHTTPError(429, "http://x", "", "HTTP 429", retry_after=MAX_RETRY_AFTER + 1)
    with pytest.raises(RetriesExhaustedError, match="MAX_RETRY_AFTER"):
        loop_of(driver, ScriptedBackend([slow]), sleep=waits.append).run(QUESTION)
    assert waits == []
