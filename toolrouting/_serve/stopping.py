"""A server that has begun to stop (Ctrl-C, or SIGTERM from a service manager), and what its
requests in flight are answered.

uvicorn stops taking connections at once and gives the requests in flight its graceful timeout
to finish, then cancels them: a cancelled request would be answered by uvicorn as a bare 500 with
a traceback in the log. So a request still running :data:`SERVE_STOP_GRACE` seconds after the
stop began is stopped here first, and answered 503 ``server_stopping`` in its API's shape, with
``Retry-After`` (a stream: the front's failure events, which end it); one that ends within the
grace is answered as ever. The notice comes from the signal handler of ``app.stopping_server``;
an application served otherwise is never told, and is stopped as uvicorn stops it. A request
only registers its cancel scope (:func:`cut_short`); one timer, set when the stop begins, cancels
those still running once the grace is past, so a server that is not stopping spends no task and
no wake-up on it.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Coroutine, Iterator
from typing import Any, TypeVar

import anyio

from .._errors import ChatRequestError
from .._limits import SERVE_RETRY_AFTER, SERVE_STOP_GRACE

__all__ = ["Stopping", "Watch", "cut_short", "raced"]

T = TypeVar("T")


class Stopping:
    """Whether, and since when, the server has been stopping, and the requests it cuts short."""

    def __init__(self) -> None:
        self._since: float | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._running: dict[anyio.CancelScope, list[bool]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._past = False

    def begin(self) -> None:
        """The server begins to stop: safe in a signal handler, which sets the grace's timer
        through the event loop."""
        if self._since is None:
            self._since = time.monotonic()
            loop = self._loop
            if loop is not None:
                loop.call_soon_threadsafe(self._arm)

    @property
    def begun(self) -> bool:
        return self._since is not None

    def watch(self, scope: anyio.CancelScope, stopped: list[bool]) -> None:
        """Cancel ``scope`` once the grace is past, noting it in ``stopped``; in the event loop."""
        self._loop = asyncio.get_running_loop()
        if self._past:
            self._cut(scope, stopped)
            return
        self._running[scope] = stopped
        if self._since is not None:  # looked at after the loop is known, so begin() is never missed
            self._arm()

    def unwatch(self, scope: anyio.CancelScope) -> None:
        self._running.pop(scope, None)

    def _arm(self) -> None:
        if self._timer is None and self._since is not None and self._loop is not None:
            left = SERVE_STOP_GRACE - (time.monotonic() - self._since)
            self._timer = self._loop.call_later(max(0.0, left), self._cut_all)

    def _cut_all(self) -> None:
        self._past = True
        for scope, stopped in list(self._running.items()):
            self._cut(scope, stopped)

    @staticmethod
    def _cut(scope: anyio.CancelScope, stopped: list[bool]) -> None:
        stopped.append(True)
        scope.cancel()

    @staticmethod
    def error() -> ChatRequestError:
        """What a request the stop cut short is answered."""
        return ChatRequestError(
            f"the server is stopping and this request did not finish within {SERVE_STOP_GRACE:g} "
            "seconds of it; send it again once the server is back",
            status=503,
            code="server_stopping",
            retry_after=SERVE_RETRY_AFTER,
        )


@contextlib.contextmanager
def cut_short(stopping: Stopping | None) -> Iterator[list[bool]]:
    """A scope the server's stop cancels once its grace is past (never, where ``stopping`` is
    ``None``); what it gives holds ``True`` once the stop did."""
    stopped: list[bool] = []
    with anyio.CancelScope() as scope:
        if stopping is not None:
            stopping.watch(scope, stopped)
        try:
            yield stopped
        finally:
            if stopping is not None:
                stopping.unwatch(scope)


#: What a request's work is watched by: given the scope the work runs in, it cancels it.
Watch = Callable[[anyio.CancelScope], Coroutine[Any, Any, None]]


async def raced(work: Callable[[], Awaitable[T]], *watches: Watch) -> list[T]:
    """``[work()]``, or ``[]`` where one of ``watches`` cancelled the work first; an exception of
    the work's is raised as itself, never in an ExceptionGroup. What a request's work is raced
    against: its client's going."""
    outcome: list[T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:
        for watch in watches:
            group.start_soon(watch, group.cancel_scope)
        try:
            outcome.append(await work())
        except Exception as error:  # raised below, outside the group
            failure.append(error)
        finally:
            group.cancel_scope.cancel()
    if failure:
        raise failure[0]
    return outcome
