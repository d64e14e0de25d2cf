"""The two drivers of the step machine behind one face, so the loop's tests run against both.

``driver.loop(backend, provider, **options)`` makes a :class:`RoutingLoop` (``sync``), or an
:class:`AsyncRoutingLoop` over :class:`AsyncOverSync` (``async``) whose ``run``, ``resume``
and ``iter_*`` are run to the end on an event loop and answered synchronously. A test written
against the sync loop's face thereby checks that the async driver behaves identically: the
same events, errors, requests and transcript bytes.

:class:`AsyncOverSync` is a test double: an :class:`AsyncBackend` over a sync backend (the
scripted fake, or an HTTP backend in a worker thread) until the library's own async backends
are there to drive.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal, Self

import anyio
import anyio.lowlevel
import anyio.to_thread

from toolrouting._backends.base import Completion, Message
from toolrouting._backends.scripted import ScriptedBackend
from toolrouting._loop.async_run import AsyncRoutingLoop
from toolrouting._loop.events import Event
from toolrouting._loop.result import RunResult
from toolrouting._loop.run import RoutingLoop
from toolrouting._routed_backend import can_route
from toolrouting._settings import Settings
from toolrouting.demo.store import MemoryStore

__all__ = ["DRIVERS", "AsyncOverSync", "AsyncRunner", "Driver", "DriverName", "collect"]

DriverName = Literal["sync", "async"]


class AsyncOverSync:
    """An async backend over a sync one (test double): clones wrap the sync backend's clones.

    A scripted backend answers on the event loop, after one checkpoint (where a cancellation
    lands, as at a real request's first await); any other runs in a worker thread.
    """

    def __init__(self, backend: Any) -> None:
        self.backend = backend

    @property
    def settings(self) -> Settings:
        settings: Settings = self.backend.settings
        return settings

    def clone(self, **changes: Any) -> Self:
        return type(self)(self.backend.clone(**changes))

    async def complete(self, messages: Sequence[Message]) -> Completion:
        await anyio.lowlevel.checkpoint()
        if isinstance(self.backend, ScriptedBackend):
            return self.backend.complete(messages)
        completion: Completion = await anyio.to_thread.run_sync(
            self.backend.complete, messages, abandon_on_cancel=True
        )
        return completion

    async def aclose(self) -> None:
        self.backend.close()


def collect(events: Any) -> list[Event]:
    """Every event of an async iterator, gathered on a fresh event loop."""

    async def gather() -> list[Event]:
        return [event async for event in events]

    return anyio.run(gather)


class AsyncRunner:
    """An :class:`AsyncRoutingLoop` with the sync loop's face; other attributes are the loop's."""

    def __init__(self, loop: AsyncRoutingLoop) -> None:
        self.loop = loop

    def run(self, messages: Sequence[Message]) -> RunResult:
        return anyio.run(self.loop.run, messages)

    def resume(self) -> RunResult:
        return anyio.run(self.loop.resume)

    def iter_run(self, messages: Sequence[Message]) -> Iterator[Event]:
        return iter(collect(self.loop.iter_run(messages)))

    def iter_resume(self) -> Iterator[Event]:
        return iter(collect(self.loop.iter_resume()))

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loop, name)


class Driver:
    """Makes loops of one driver, from the arguments a sync :class:`RoutingLoop` takes."""

    def __init__(self, name: DriverName) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name

    def loop(self, backend: Any, provider: Any, **options: Any) -> Any:
        if self.name == "sync":
            return RoutingLoop(backend, provider, **options)
        sleep: Callable[[float], object] | None = options.pop("sleep", None)
        if sleep is not None:
            options["sleep"] = _awaitable(sleep)
        if isinstance(provider, MemoryStore):
            options["sync_tools"] = "inline"  # its sqlite3 connection works only in the thread that made it
        if can_route(backend):  # a backend that cannot route is passed on, to be refused as it is
            backend = AsyncOverSync(backend)
        return AsyncRunner(AsyncRoutingLoop(backend, provider, **options))


def _awaitable(sleep: Callable[[float], object]) -> Callable[[float], Any]:
    async def waited(seconds: float) -> None:
        sleep(seconds)

    return waited


DRIVERS = {name: Driver(name) for name in ("sync", "async")}
