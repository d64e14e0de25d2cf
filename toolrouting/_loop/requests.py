"""Every request the step machine makes (:func:`complete`): sent, retried, and its reply checked.

A request is sent by the one wire rule, retried under its :class:`RetryPolicy` while the
backend's error is retryable (which errors, how long to wait, when to give up), and its
completion checked before the loop reads it (:func:`checked_completion`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from .._backends import Completion, Message, Usage, wire_text
from .._errors import BackendError, BackendResponseError, RetriesExhaustedError
from .._limits import DEFAULT_RETRIES, MAX_RETRY_AFTER, RETRY_BACKOFF_BASE, RETRY_BACKOFF_MAX
from .effects import Effect, Emit, Request, Wait
from .events import Event, ReplyReceived, RetryScheduled
from .run_limits import check_count

__all__ = ["RetryPolicy", "checked_completion", "complete"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class RetryPolicy:
    """How a failed request is retried: ``retries`` times at most, with exponential backoff."""

    retries: int = DEFAULT_RETRIES
    """Retries of one request after a retryable backend error; 0 fails on the first."""
    backoff_base: float = RETRY_BACKOFF_BASE
    backoff_max: float = RETRY_BACKOFF_MAX
    max_retry_after: float = MAX_RETRY_AFTER
    """The longest server ``Retry-After`` waited for; a longer one fails the run now."""

    def __post_init__(self) -> None:
        check_count("retries", self.retries, 0)

    def delay(self, error: BackendError, attempt: int, round: int) -> float:
        """Seconds to wait before retrying a request that failed ``attempt + 1`` times, the last
        with ``error``; :class:`RetriesExhaustedError` when it is not to be retried again."""
        reason = f"{type(error).__name__}: {error}"
        if attempt >= self.retries:
            raise RetriesExhaustedError(
                round, attempt + 1, f"{reason} (retries={self.retries} exhausted)"
            ) from error
        if error.retry_after is not None and error.retry_after > self.max_retry_after:
            raise RetriesExhaustedError(
                round,
                attempt + 1,
                f"{reason} (the server asks to wait {error.retry_after:g} s, "
                f"over MAX_RETRY_AFTER of {self.max_retry_after:g} s)",
            ) from error
        if error.retry_after is not None:
            return error.retry_after
        return min(self.backoff_base * 2.0**attempt, self.backoff_max)


def complete(
    backend: Any,
    messages: Sequence[Message],
    policy: RetryPolicy,
    round: int,
    *,
    piece: Callable[[str], Event] | None = None,
) -> Generator[Effect, Any, Completion]:
    """One request, retried under ``policy`` while the error is retryable; emits each retry and
    waits out its delay, through the driver, then what the server said of the reply."""
    attempt = 0
    while True:
        began = time.monotonic()  # a clock read, not I/O: the driver performs the request
        try:
            # Sent by the one wire rule (lone surrogates as U+FFFD); committed as they are.
            sent = [Message(role=m["role"], content=wire_text(m["content"])) for m in messages]
            completion = checked_completion(backend, (yield Request(backend, sent, piece)))
        except BackendError as error:
            if not error.retryable:
                raise
            delay = policy.delay(error, attempt, round)
            attempt += 1
            yield Emit(
                RetryScheduled(
                    round=round, attempt=attempt, delay=delay, error=f"{type(error).__name__}: {error}"
                )
            )
            yield Wait(delay)
            continue
        yield Emit(_received(backend, completion, round, time.monotonic() - began))
        return completion


def checked_completion(backend: Any, completion: object) -> Completion:
    """``completion`` as the loop reads it, or a :class:`BackendResponseError` that says what is wrong.

    A backend that lies (no usage, a count that is not a whole number of 0 or more, text that is
    not a str) would otherwise fail deep in the loop, or be summed into the run's usage, or be
    committed as a transcript that cannot be read back.
    """
    said = f"{type(backend).__name__}.complete() returned"
    if not isinstance(completion, Completion):
        raise BackendResponseError(f"{said} {type(completion).__name__}, not a Completion")
    problem = None
    if not isinstance(completion.text, str):
        problem = f"text of type {type(completion.text).__name__}; a completion's text is a str"
    elif not isinstance(completion.usage, Usage):
        problem = f"usage of type {type(completion.usage).__name__}; a completion's usage is a Usage"
    elif completion.finish_reason is not None and not isinstance(completion.finish_reason, str):
        problem = f"a finish_reason of type {type(completion.finish_reason).__name__}; it is a str or None"
    elif not isinstance(completion.truncated, bool):
        problem = f"truncated={completion.truncated!r}; it is a bool"
    else:
        for field in ("prompt_tokens", "completion_tokens", "cached_tokens"):
            count = getattr(completion.usage, field)
            if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                problem = f"usage.{field}={count!r}; a token count is a whole number of 0 or more"
                break
    if problem is not None:
        raise BackendResponseError(f"{said} {problem}")
    if type(completion.text) is not str:
        # A str subclass with a __str__ of its own would show one text and commit another.
        completion = dataclasses.replace(completion, text=str.__str__(completion.text))
    return completion


def _received(backend: Any, completion: Completion, round: int, seconds: float) -> ReplyReceived:
    """What the server said of a request, as the event a tracer reads."""
    model = getattr(backend, "model", None)
    raw = completion.raw.get("model") if isinstance(completion.raw, Mapping) else None
    return ReplyReceived(
        round=round,
        routed=backend.settings.json_schema is not None,
        model=model if isinstance(model, str) else None,
        response_model=raw if isinstance(raw, str) else None,
        usage=completion.usage,
        finish_reason=completion.finish_reason,
        truncated=completion.truncated,
        seconds=seconds,
    )
