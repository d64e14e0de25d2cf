"""A backend that answers from a script: for tests, docs and users' own tests."""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Callable, Iterable, Sequence

from .._errors import BackendError
from .._settings import Settings
from .base import BaseBackend, Completion, Message, Usage, is_truncated

__all__ = ["ScriptedBackend", "ScriptedRequest"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScriptedRequest:
    """One request a scripted backend received: the conversation and the settings it carried."""

    messages: tuple[Message, ...]
    settings: Settings


Reply = str | Completion | BaseException | Callable[[ScriptedRequest], str | Completion]


class ScriptedBackend(BaseBackend):
    """Answers each request with the next queued reply, and records every request.

    A reply is a string, a :class:`Completion`, an exception to raise (fault injection),
    or a callable that gets the :class:`ScriptedRequest` and returns either of the first
    two. A string counts one token per whitespace-separated word; when it has more words
    than ``settings.max_tokens`` it is cut there and reported truncated, as a server would.
    Clones share the queue and the record, so a test sees what a routed clone was sent.
    """

    def __init__(self, replies: Iterable[Reply] = (), *, settings: Settings | None = None) -> None:
        super().__init__(settings)
        self._queue: collections.deque[Reply] = collections.deque(replies)
        self.requests: list[ScriptedRequest] = []

    @property
    def pending(self) -> int:
        """How many queued replies are left."""
        return len(self._queue)

    def enqueue(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        self._queue.extend(replies)

    def complete(self, messages: Sequence[Message]) -> Completion:
        request = ScriptedRequest(messages=tuple(dict(m) for m in messages), settings=self._settings)  # type: ignore[misc]
        self.requests.append(request)
        if not self._queue:
            raise BackendError(
                f"the scripted backend has no reply for request {len(self.requests)}; "
                "queue one with enqueue()"
            )
        reply = self._queue.popleft()
        if isinstance(reply, BaseException):
            raise reply
        if callable(reply):
            reply = reply(request)
        if isinstance(reply, Completion):
            return reply
        return self._complete_text(reply, messages)

    def _complete_text(self, text: str, messages: Sequence[Message]) -> Completion:
        cap = self._settings.max_tokens
        words = text.split()
        finish = "stop"
        if cap is not None and len(words) > cap:
            text, words, finish = " ".join(words[:cap]), words[:cap], "length"
        usage = Usage(
            prompt_tokens=sum(len(m["content"].split()) for m in messages),
            completion_tokens=len(words),
        )
        return Completion(
            text=text,
            finish_reason=finish,
            usage=usage,
            truncated=is_truncated(finish, len(words), cap),
        )
