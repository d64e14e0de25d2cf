"""The async loop's own overhead: decisions per second at 1, 100 and 1,000 runs in flight.

    .venv/bin/python benchmarks/async_overhead.py

Each run is four routed decisions (three tool calls, then the handoff) against a scripted
async backend that answers at once after yielding to the event loop, as a request awaiting a
server does, so what is measured is the client: the step machine, the driver, the route schema,
the parser and the tool call. The tool is an ``async def`` behind ``FunctionTools``. The sync
``RoutingLoop`` running the same runs one after another, on the sync scripted backend, is the
baseline; the ratio is the async driver's cost per decision over the sync one's.

Memory per run is the peak that ``tracemalloc`` traces while a batch of runs is in flight,
divided by the runs, beside the size of one run's messages (its transcript's content), which is
what a run must hold. Ratios, not absolute times, are what carries from machine to machine.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import time
import tracemalloc
from collections.abc import Sequence
from typing import Any, Self

from toolrouting import (
    AsyncRoutingLoop,
    Completion,
    FunctionTools,
    Message,
    RoutingLoop,
    ScriptedBackend,
    Settings,
)

CONCURRENCY = (1, 100, 1000)
#: Runs measured at each concurrency (at least the concurrency itself).
RUNS = 500
WORDS = ("latch", "door", "hinge")
REPLIES = [
    *(f'{{"tool": "lookup", "arguments": {{"word": "{word}"}}}}' for word in WORDS),
    '{"tool": "none"}',
]
DECISIONS_PER_RUN = len(REPLIES)
QUESTION: list[Message] = [
    {"role": "system", "content": "Answer from the notes."},
    {"role": "user", "content": "What does the latch on the storage-room door do?"},
]


#: Characters of padding in each tool result: 0 for the timed runs; the memory check runs again
#: with long results to show what a run holds grows with its messages.
PADDING = {"chars": 0}
LONG_RESULT_CHARS = 4000


async def lookup(word: str) -> str:
    """Look a word up in the notes."""
    return f"{word}: part of the storage-room door." + "." * PADDING["chars"]


def plain_lookup(word: str) -> str:
    """Look a word up in the notes."""
    return f"{word}: part of the storage-room door."


plain_lookup.__name__ = "lookup"


class AsyncScripted:
    """An async backend that answers from a script after one pass of the event loop."""

    def __init__(self, replies: collections.deque[str], settings: Settings | None = None) -> None:
        self._replies = replies
        self._settings = settings or Settings()

    @property
    def settings(self) -> Settings:
        return self._settings

    def clone(self, **changes: Any) -> Self:
        return type(self)(self._replies, changes.get("settings", self._settings))

    async def complete(self, messages: Sequence[Message]) -> Completion:
        await asyncio.sleep(0)
        return Completion(text=self._replies.popleft())

    async def aclose(self) -> None:
        pass


async def _one(tools: FunctionTools) -> int:
    loop = AsyncRoutingLoop(AsyncScripted(collections.deque(REPLIES)), tools)
    result = await loop.run(QUESTION)
    return sum(len(message["content"].encode()) for message in result.messages)


async def _batch(concurrency: int, runs: int, tools: FunctionTools) -> int:
    """``runs`` runs, ``concurrency`` in flight at once; the bytes of one run's messages."""
    gate = asyncio.Semaphore(concurrency)

    async def gated() -> int:
        async with gate:
            return await _one(tools)

    sizes = await asyncio.gather(*(gated() for _ in range(runs)))
    return sizes[0]


def _timed_async(concurrency: int) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds and decisions of one measured batch."""
    runs = max(RUNS, concurrency)
    tools = FunctionTools(lookup)
    asyncio.run(_batch(concurrency, min(runs, 50), tools))  # warm up
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    asyncio.run(_batch(concurrency, runs, tools))
    return time.perf_counter() - wall, time.process_time() - cpu, runs * DECISIONS_PER_RUN


def _timed_sync() -> tuple[float, float, int]:
    tools = FunctionTools(plain_lookup)

    def once() -> None:
        RoutingLoop(ScriptedBackend(REPLIES), tools).run(QUESTION)

    for _ in range(50):
        once()
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(RUNS):
        once()
    return time.perf_counter() - wall, time.process_time() - cpu, RUNS * DECISIONS_PER_RUN


def _memory(concurrency: int) -> tuple[float, int]:
    """Peak traced bytes per run with ``concurrency`` runs in flight, and one run's message bytes."""
    tools = FunctionTools(lookup)
    gc.collect()
    tracemalloc.start()
    try:
        size = asyncio.run(_batch(concurrency, concurrency, tools))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak / concurrency, size


def main() -> None:
    base_wall, base_cpu, base_decisions = _timed_sync()
    base_per = base_cpu / base_decisions
    print(f"{DECISIONS_PER_RUN} decisions a run; the sync loop, runs one after another, is the baseline")
    print(
        f"{'loop':>6} {'in flight':>9} {'decisions/s':>12} {'CPU/decision':>13} {'vs sync':>8} "
        f"{'memory/run':>11} {'messages/run':>13}"
    )
    print(
        f"{'sync':>6} {1:>9} {base_decisions / base_wall:>12,.0f} {base_per * 1e3:>11.3f}ms {1.0:>7.2f}x "
        f"{'':>11} {'':>13}"
    )
    for concurrency in CONCURRENCY:
        wall, cpu, decisions = _timed_async(concurrency)
        per = cpu / decisions
        memory, size = _memory(concurrency)
        print(
            f"{'async':>6} {concurrency:>9} {decisions / wall:>12,.0f} {per * 1e3:>11.3f}ms "
            f"{per / base_per:>7.2f}x {memory / 1024:>9.1f}KB {size:>12}B"
        )
    PADDING["chars"] = LONG_RESULT_CHARS
    memory, size = _memory(CONCURRENCY[-1])
    print(
        f"with {LONG_RESULT_CHARS:,}-character tool results, {CONCURRENCY[-1]:,} in flight: "
        f"{memory / 1024:.1f}KB a run, {size:,}B of messages"
    )


if __name__ == "__main__":
    main()
