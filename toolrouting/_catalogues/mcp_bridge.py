"""One background event loop, in a thread of its own, that owns async sessions for sync callers.

The MCP SDK is async and the routing loop is sync. Every session lives on this one loop, so
its tasks, streams and subprocesses are entered and left on the loop that made them; a sync
caller hands it a coroutine and waits for the result with a deadline, so nothing it runs
can leave the caller waiting forever. An async caller needs none of this: it awaits the
sessions on its own loop.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["LoopThread"]

_T = TypeVar("_T")


class LoopThread:
    """An asyncio loop running in a daemon thread until :meth:`close`."""

    def __init__(self, name: str = "toolrouting-mcp") -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._serve, name=name, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` has run."""
        return self._loop.is_closed()

    def run(self, coroutine: Coroutine[Any, Any, _T], timeout: float | None) -> _T:
        """Run ``coroutine`` on the loop and return its result; :class:`TimeoutError` after ``timeout`` s.

        On a timeout, or when the caller is interrupted (Ctrl-C), the coroutine is cancelled.
        """
        if self._loop.is_closed():
            coroutine.close()
            raise RuntimeError("the event loop thread is closed")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return future.result(timeout)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise TimeoutError(f"no result within {timeout:g} s") from None
        except BaseException:
            future.cancel()  # Ctrl-C: the work stops too, instead of running on behind the caller
            raise

    async def arun(self, coroutine: Coroutine[Any, Any, _T], timeout: float | None) -> _T:
        """:meth:`run` for a caller on another asyncio loop: awaited, so that loop goes on meanwhile.

        On a timeout, or when the caller's task is cancelled, the coroutine is cancelled too.
        """
        if self._loop.is_closed():
            coroutine.close()
            raise RuntimeError("the event loop thread is closed")
        future = asyncio.run_coroutine_threadsafe(coroutine, self._loop)
        try:
            return await asyncio.wait_for(asyncio.wrap_future(future), timeout)
        except TimeoutError:
            raise TimeoutError(f"no result within {timeout:g} s") from None
        finally:
            future.cancel()  # a no-op once it is done; otherwise the work stops with the caller

    def close(self, timeout: float = 5.0) -> None:
        """Stop the loop and end the thread; a second call does nothing.

        Tasks still pending (a session whose close ran out of time) are cancelled first.
        """
        if self._loop.is_closed():
            return
        if self._loop.is_running():
            # A task that ignores cancellation is left to the daemon thread's end.
            with contextlib.suppress(TimeoutError, RuntimeError):
                self.run(self._cancel_the_rest(), timeout)
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout)
        if not self._thread.is_alive():
            self._loop.close()

    @staticmethod
    async def _cancel_the_rest() -> None:
        current = asyncio.current_task()
        rest = [task for task in asyncio.all_tasks() if task is not current]
        for task in rest:
            task.cancel()
        if rest:
            await asyncio.wait(rest, timeout=2.0)
