"""Backends that answer from a script: for tests, docs and users' own tests, sync and async."""

from __future__ import annotations

import collections
import dataclasses
import inspect
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Iterator, Sequence

import anyio.lowlevel

from .._errors import BackendError, BackendResponseError
from .._settings import Settings
from .base import AsyncBaseBackend, BaseBackend, Completion, Message, TextDelta, Usage, is_truncated

__all__ = ["AsyncScriptedBackend", "ScriptedBackend", "ScriptedRequest"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class ScriptedRequest:
    """One request a scripted backend received: the conversation and the settings it carried."""

    messages: tuple[Message, ...]
    settings: Settings


Reply = str | Completion | BaseException | Callable[[ScriptedRequest], str | Completion]
AsyncReply = (
    str
    | Completion
    | BaseException
    | Callable[[ScriptedRequest], str | Completion | Awaitable[str | Completion]]
)

#: A streamed scripted reply comes a word at a time (with the blanks after it), as it is counted.
_WORD = re.compile(r"\s*\S+\s*|\s+")


class _Script:
    """What both scripted backends share: the queue, the record, and how a reply becomes a completion."""

    _settings: Settings

    def _start(self, replies: Iterable[object]) -> None:
        # One queue and one record for a backend and its clones (a clone is a shallow copy).
        self._queue: collections.deque[object] = collections.deque(replies)
        self.requests: list[ScriptedRequest] = []

    @property
    def pending(self) -> int:
        """How many queued replies are left."""
        return len(self._queue)

    def _take(self, messages: Sequence[Message]) -> tuple[ScriptedRequest, object]:
        """Record the request and take its reply off the queue; an exception queued is raised."""
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
        return request, reply

    def _completion(self, reply: str | Completion, messages: Sequence[Message]) -> Completion:
        """A string counts one token per whitespace-separated word, cut at the cap as a server would."""
        if isinstance(reply, Completion):
            return reply
        if not isinstance(reply, str):  # a callable reply that returned something else
            raise BackendResponseError(
                f"the scripted reply to request {len(self.requests)} is {type(reply).__name__}; "
                "a reply is a str or a Completion"
            )
        cap = self._settings.max_tokens
        text, words, finish = reply, reply.split(), "stop"
        if cap is not None and len(words) > cap:
            text, words, finish = " ".join(words[:cap]), words[:cap], "length"
        usage = Usage(
            prompt_tokens=sum(len(m["content"].split()) for m in messages),
            completion_tokens=len(words),
        )
        return Completion(
            text=text, finish_reason=finish, usage=usage, truncated=is_truncated(finish, len(words), cap)
        )


def _pieces(completion: Completion) -> list[TextDelta]:
    return [TextDelta(word) for word in _WORD.findall(completion.text)]


class ScriptedBackend(_Script, BaseBackend):
    """Answers each request with the next queued reply, and records every request.

    A reply is a string, a :class:`Completion`, an exception to raise (fault injection),
    or a callable that gets the :class:`ScriptedRequest` and returns either of the first
    two. A string counts one token per whitespace-separated word; when it has more words
    than ``settings.max_tokens`` it is cut there and reported truncated, as a server would.
    Clones share the queue and the record, so a test sees what a routed clone was sent.
    ``stream`` hands a reply over a word at a time, then the whole completion.
    """

    def __init__(self, replies: Iterable[Reply] = (), *, settings: Settings | None = None) -> None:
        super().__init__(settings)
        self._start(replies)

    def enqueue(self, *replies: Reply) -> None:
        """Queue replies for the next requests, in order."""
        self._queue.extend(replies)

    def complete(self, messages: Sequence[Message]) -> Completion:
        request, reply = self._take(messages)
        if callable(reply):
            reply = reply(request)
        return self._completion(reply, messages)  # type: ignore[arg-type]

    def stream(self, messages: Sequence[Message]) -> Iterator[TextDelta | Completion]:
        """The next reply a word at a time, then the whole :class:`Completion`."""
        completion = self.complete(messages)
        yield from _pieces(completion)
        yield completion


class AsyncScriptedBackend(_Script, AsyncBaseBackend):
    """:class:`ScriptedBackend` for asyncio code: the same script, record and counting, awaited.

    A callable reply may also be a coroutine function, so a test can hold a request open
    (await an event) or see requests overlap. A streamed reply yields to the event loop
    between its words, as a server's would.
    """

    def __init__(self, replies: Iterable[AsyncReply] = (), *, settings: Settings | None = None) -> None:
        super().__init__(settings)
        self._start(replies)

    def enqueue(self, *replies: AsyncReply) -> None:
        """Queue replies for the next requests, in order."""
        self._queue.extend(replies)

    async def complete(self, messages: Sequence[Message]) -> Completion:
        request, reply = self._take(messages)
        if callable(reply):
            reply = reply(request)
            if inspect.isawaitable(reply):
                reply = await reply
        await anyio.lowlevel.checkpoint()
        return self._completion(reply, messages)  # type: ignore[arg-type]

    async def stream(self, messages: Sequence[Message]) -> AsyncIterator[TextDelta | Completion]:
        """The next reply a word at a time, then the whole :class:`Completion`."""
        completion = await self.complete(messages)
        for piece in _pieces(completion):
            yield piece
            await anyio.lowlevel.checkpoint()
        yield completion
