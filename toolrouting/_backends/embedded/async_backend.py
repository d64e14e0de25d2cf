"""The embedded model for asyncio code: each request runs in a worker thread, one at a time.

llama.cpp's calls block for the whole generation, so awaiting one on the event loop would stop
every other task. :class:`AsyncEmbeddedLlama` hands each request to a worker thread and queues
the callers on an async lock, so they take turns on the one model without tying up a thread
each while they wait.

Cancelling a caller cannot stop a native call half-way: llama.cpp has no safe point to
interrupt inside ``create_chat_completion``. So a cancelled :meth:`~AsyncEmbeddedLlama.complete`
returns at once and its native call runs to its end in its thread, holding the model's own
lock (the thread lock every :class:`EmbeddedLlama` request takes): the next request's thread
waits for it, so the model is never entered twice and its state stays whole. A cancelled
:meth:`~AsyncEmbeddedLlama.stream` stops generating at the next piece: the piece under way
finishes, then the stream is closed in a thread before the turn passes on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Self

import anyio
import anyio.to_thread

from ..base import AsyncBaseBackend, Completion, Message, TextDelta
from ..reasoning_tags import ReasoningTags
from .backend import EmbeddedLlama

__all__ = ["AsyncEmbeddedLlama"]


class AsyncEmbeddedLlama(AsyncBaseBackend):
    """An :class:`EmbeddedLlama` usable from async code without blocking the event loop.

    It takes over ``backend``: ``aclose()`` closes it, in a thread (closing the backend that
    loaded the model waits for a request under way). Its settings are ``backend``'s; clones
    share the model and the turns, and each wraps a clone of ``backend``. Load the model before
    the event loop starts, or in a thread: loading blocks for a second or two.
    """

    #: As :class:`EmbeddedLlama`'s: ``reasoning_budget`` is the wrapped backend's.
    clone_keys: ClassVar[frozenset[str]] = EmbeddedLlama.clone_keys

    def __init__(self, backend: EmbeddedLlama) -> None:
        if not isinstance(backend, EmbeddedLlama):
            raise TypeError(f"AsyncEmbeddedLlama wraps an EmbeddedLlama, not {type(backend).__name__}")
        super().__init__(backend.settings)
        self._backend = backend
        self._turn = anyio.Lock()

    @property
    def backend(self) -> EmbeddedLlama:
        """The wrapped backend, carrying this one's settings."""
        return self._backend

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._backend.model_path.name!r})"

    @property
    def reasoning_tags(self) -> ReasoningTags | None:
        """:attr:`EmbeddedLlama.reasoning_tags` of the wrapped backend."""
        return self._backend.reasoning_tags

    @property
    def reasoning_budget(self) -> int | None:
        """:attr:`EmbeddedLlama.reasoning_budget` of the wrapped backend."""
        return self._backend.reasoning_budget

    def _clone(self, changes: Mapping[str, Any]) -> Self:
        inner = self._backend.clone(**changes)  # a bad reasoning_budget is refused before anything changes
        twin = super()._clone(changes)
        twin._backend = inner
        return twin

    async def count_prompt_tokens(self, messages: Sequence[Message]) -> int | None:
        """:meth:`EmbeddedLlama.count_prompt_tokens` in a worker thread, without waiting for a turn."""
        return await anyio.to_thread.run_sync(self._backend.count_prompt_tokens, messages)

    async def complete(self, messages: Sequence[Message]) -> Completion:
        """One chat completion in a worker thread, after the requests queued before it."""
        async with self._turn:
            return await anyio.to_thread.run_sync(self._backend.complete, messages, abandon_on_cancel=True)

    async def stream(self, messages: Sequence[Message]) -> AsyncIterator[TextDelta | Completion]:
        """:meth:`EmbeddedLlama.stream` without blocking: each piece is generated in a worker thread."""
        async with self._turn:
            pieces = self._backend.stream(messages)
            try:
                while (item := await anyio.to_thread.run_sync(_next, pieces)) is not None:
                    yield item
            finally:
                # The generator holds the model until closed; closing it stops the generation.
                with anyio.CancelScope(shield=True):
                    await anyio.to_thread.run_sync(pieces.close)

    async def aclose(self) -> None:
        """Close the wrapped backend: the original frees the model (once a request under way has
        finished), a clone retires only itself."""
        if self._closed:
            return
        self._closed = True
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._backend.close)


def _next(pieces: Iterator[TextDelta | Completion]) -> TextDelta | Completion | None:
    return next(pieces, None)
