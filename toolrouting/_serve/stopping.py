"""A server that has begun to stop (Ctrl-C, or SIGTERM from a service manager), and what its
requests in flight are answered.

uvicorn stops taking connections at once and gives the requests in flight its graceful timeout
to finish, then cancels them: a cancelled request would be answered by uvicorn as a bare 500 with
a traceback in the log. So a request still running :data:`SERVE_STOP_GRACE` seconds after the
stop began is stopped here first, and answered 503 ``server_stopping`` in its API's shape, with
``Retry-After`` (a stream: the front's failure events, which end it); one that ends within the
grace is answered as ever. The notice comes from the signal handler of ``app.stopping_server``;
an application served otherwise is never told, and is stopped as uvicorn stops it.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar

import anyio

from .._errors import ChatRequestError
from .._limits import SERVE_RETRY_AFTER, SERVE_STOP_GRACE

__all__ = ["Stopping", "raced", "until_stopped"]

T = TypeVar("T")

#: Seconds between two looks at whether the grace has run out: a request stopped at the end of
#: its grace is answered within this much of it.
_LOOK_EVERY = 0.1


class Stopping:
    """Whether, and since when, the server has been stopping."""

    def __init__(self) -> None:
        self._since: float | None = None

    def begin(self) -> None:
        """The server begins to stop: one assignment, safe in a signal handler."""
        if self._since is None:
            self._since = time.monotonic()

    @property
    def begun(self) -> bool:
        return self._since is not None

    async def graced(self) -> None:
        """Returns once the server has been stopping for :data:`SERVE_STOP_GRACE` seconds."""
        while self._since is None or time.monotonic() - self._since < SERVE_STOP_GRACE:
            await anyio.sleep(_LOOK_EVERY)

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


async def raced(
    work: Callable[[], Awaitable[T]], watch: Callable[[anyio.CancelScope], Coroutine[Any, Any, None]]
) -> list[T]:
    """``[work()]``, or ``[]`` where ``watch`` (given the scope the work runs in) cancelled the
    work first; an exception of the work's is raised as itself, never in an ExceptionGroup. What
    a request's work is raced against: its client's going, the server's stop."""
    outcome: list[T] = []
    failure: list[Exception] = []
    async with anyio.create_task_group() as group:
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


async def _stop(stopping: Stopping, scope: anyio.CancelScope) -> None:
    await stopping.graced()
    scope.cancel()


async def until_stopped(stopping: Stopping | None, work: Callable[[], Awaitable[T]]) -> T:
    """``work()``'s result, or :meth:`Stopping.error` raised once the server has been stopping for
    its grace, which cancels the work."""
    if stopping is None:
        return await work()
    outcome = await raced(work, functools.partial(_stop, stopping))
    if not outcome:
        raise Stopping.error()
    return outcome[0]
