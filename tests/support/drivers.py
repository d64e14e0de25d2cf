"""The two drivers of the step machine behind one face, so the loop's tests run against both.

``driver.loop(backend, provider, **options)`` makes a :class:`RoutingLoop` (``sync``), or an
:class:`AsyncRoutingLoop` (``async``) over the async twin of ``backend`` whose ``run``,
``resume`` and ``iter_*`` are run to the end on an event loop and answered synchronously. A
test written against the sync loop's face thereby checks that the async driver behaves
identically: the same events, errors, requests and transcript bytes.

The twins are the library's own async backends: a :class:`ScriptedBackend` becomes an
:class:`AsyncScriptedBackend` on the same script and record (:func:`scripted_twin`), an
:class:`OpenAICompatible` an :class:`AsyncOpenAICompatible` on the same endpoint
(:func:`http_twin`), an :class:`EmbeddedLlama` an :class:`AsyncEmbeddedLlama` over a clone
of it. Any other backend is passed on as it is, to be refused as it is.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import anyio
import httpx

from toolrouting._backends.async_http import AsyncOpenAICompatible
from toolrouting._backends.base import Message
from toolrouting._backends.embedded.async_backend import AsyncEmbeddedLlama
from toolrouting._backends.embedded.backend import EmbeddedLlama
from toolrouting._backends.http import OpenAICompatible
from toolrouting._backends.scripted import AsyncScriptedBackend, ScriptedBackend
from toolrouting._loop.async_run import AsyncRoutingLoop
from toolrouting._loop.events import Event
from toolrouting._loop.result import RunResult
from toolrouting._loop.run import RoutingLoop
from toolrouting.demo.store import MemoryStore

__all__ = [
    "DRIVERS",
    "AsyncRunner",
    "Driver",
    "DriverName",
    "async_twin",
    "collect",
    "http_twin",
    "scripted_twin",
]

DriverName = Literal["sync", "async"]


def scripted_twin(backend: ScriptedBackend) -> AsyncScriptedBackend:
    """An :class:`AsyncScriptedBackend` answering from ``backend``'s queue into its record, so a
    test that reads ``backend.requests`` or ``backend.pending`` sees the async run's too."""
    twin = AsyncScriptedBackend(settings=backend.settings)
    twin.__dict__.update(_queue=backend.__dict__["_queue"], requests=backend.requests)
    return twin


def http_twin(backend: OpenAICompatible) -> AsyncOpenAICompatible:
    """An :class:`AsyncOpenAICompatible` on ``backend``'s endpoint and settings.

    It keeps no connection alive between requests: each call of :class:`AsyncRunner` is an
    event loop of its own, and a pooled connection belongs to the loop that opened it.
    """
    client = httpx.AsyncClient(limits=httpx.Limits(max_keepalive_connections=0))
    return AsyncOpenAICompatible(
        backend.base_url,
        model=backend.model,
        dialect=backend.dialect,
        timeout=backend.timeout,
        settings=backend.settings,
        http_client=client,
    )


def async_twin(backend: Any) -> Any:
    """The library's async backend that does what ``backend`` does; any other is passed on as it is."""
    if type(backend) is ScriptedBackend:
        return scripted_twin(backend)
    if type(backend) is OpenAICompatible:
        return http_twin(backend)
    if isinstance(backend, EmbeddedLlama):
        return AsyncEmbeddedLlama(backend.clone())
    return backend


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
        return AsyncRunner(AsyncRoutingLoop(async_twin(backend), provider, **options))


def _awaitable(sleep: Callable[[float], object]) -> Callable[[float], Any]:
    async def waited(seconds: float) -> None:
        sleep(seconds)

    return waited


DRIVERS = {name: Driver(name) for name in ("sync", "async")}
