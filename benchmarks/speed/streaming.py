"""Time to the first streamed piece against the whole answer, on the default model.

    .venv/bin/python -m benchmarks.speed.streaming [--repeat N] [--tokens T]

For each backend that streams the real SmolLM2-135M model (in-process, and over HTTP from a
``python -m llama_cpp.server`` this script starts on loopback, through the sync and the async
client), the same unconstrained answers are asked for whole (``complete``, the baseline) and
streamed (``stream``): the table gives the seconds to the whole answer, to the first streamed
piece and to the streamed answer's end, and the two ratios that matter: how soon the first
piece comes, as a share of the whole answer, and what streaming costs over the whole answer.
Each request has the same seed and the cap is one the answers reach, so whole and streamed
answers are of a length; each round swaps which of the two is asked first, so the model's
cache of the last prompt favours neither.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import AsyncIterator, Iterator

from benchmarks.common.servers import local_server
from toolrouting import (
    AsyncOpenAICompatible,
    Completion,
    EmbeddedLlama,
    Message,
    OpenAICompatible,
    Settings,
    TextDelta,
    default_model_path,
)

# llama.cpp threads busy-wait under OpenMP: passive, before the in-process model loads.
os.environ.setdefault("OMP_WAIT_POLICY", "passive")

__all__ = ["main"]

#: Answers of some length, from public everyday requests (no routing: the answer is what streams).
PROMPTS = [
    "Explain why the sky is blue.",
    "Describe how to make a cup of tea.",
    "Write a short poem about the sea.",
]
THREADS = 2


def ask(prompt: str) -> list[Message]:
    return [{"role": "user", "content": prompt}]


def timed_stream(pieces: Iterator[TextDelta | Completion]) -> tuple[float, float, Completion]:
    started = time.perf_counter()
    first = 0.0
    for item in pieces:
        if isinstance(item, TextDelta) and not first:
            first = time.perf_counter() - started
        if isinstance(item, Completion):
            return first, time.perf_counter() - started, item
    raise AssertionError("a stream ends with its Completion")


async def timed_astream(pieces: AsyncIterator[TextDelta | Completion]) -> tuple[float, float, Completion]:
    started = time.perf_counter()
    first = 0.0
    async for item in pieces:
        if isinstance(item, TextDelta) and not first:
            first = time.perf_counter() - started
        if isinstance(item, Completion):
            return first, time.perf_counter() - started, item
    raise AssertionError("a stream ends with its Completion")


Row = tuple[str, list[float], list[float], list[float], list[int]]


def measure_sync(name: str, backend: OpenAICompatible | EmbeddedLlama, repeat: int) -> Row:
    wholes, firsts, ends, tokens = [], [], [], []
    for round_ in range(repeat):
        for prompt in PROMPTS:
            # Each round swaps which goes first, so neither always finds the prompt in the model's cache.
            for streaming in (False, True) if round_ % 2 == 0 else (True, False):
                if streaming:
                    first, end, streamed = timed_stream(backend.stream(ask(prompt)))
                    firsts.append(first)
                    ends.append(end)
                    tokens.append(streamed.usage.completion_tokens)
                else:
                    started = time.perf_counter()
                    backend.complete(ask(prompt))
                    wholes.append(time.perf_counter() - started)
    return name, wholes, firsts, ends, tokens


async def measure_async(url: str, settings: Settings, repeat: int) -> Row:
    wholes, firsts, ends, tokens = [], [], [], []
    async with AsyncOpenAICompatible(url, dialect="llama-cpp-python", settings=settings) as backend:
        for round_ in range(repeat):
            for prompt in PROMPTS:
                for streaming in (False, True) if round_ % 2 == 0 else (True, False):
                    if streaming:
                        first, end, streamed = await timed_astream(backend.stream(ask(prompt)))
                        firsts.append(first)
                        ends.append(end)
                        tokens.append(streamed.usage.completion_tokens)
                    else:
                        started = time.perf_counter()
                        await backend.complete(ask(prompt))
                        wholes.append(time.perf_counter() - started)
    return "AsyncOpenAICompatible", wholes, firsts, ends, tokens


def table(rows: list[Row]) -> str:
    lines = [
        f"{'backend':<24} {'whole (s)':>9}  {'first piece (s)':>15}  {'streamed (s)':>12}  "
        f"{'first/whole':>11}  {'streamed/whole':>14}  {'tokens':>6}"
    ]
    for name, wholes, firsts, ends, tokens in rows:
        whole, first, end = (statistics.median(values) for values in (wholes, firsts, ends))
        lines.append(
            f"{name:<24} {whole:>9.3f}  {first:>15.3f}  {end:>12.3f}  {first / whole:>11.3f}  "
            f"{end / whole:>14.3f}  {statistics.median(tokens):>6.0f}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=2, help="rounds over the prompts (default 2)")
    parser.add_argument("--tokens", type=int, default=96, help="the completion cap (default 96)")
    args = parser.parse_args(argv)
    settings = Settings(max_tokens=args.tokens, temperature=0.8, seed=0)
    rows: list[Row] = []
    with EmbeddedLlama(settings=settings, n_threads=THREADS) as embedded:
        rows.append(measure_sync("EmbeddedLlama", embedded, args.repeat))
    with local_server("llama_cpp.server", default_model_path(), THREADS, 2048) as url:
        with OpenAICompatible(url, dialect="llama-cpp-python", settings=settings) as http:
            rows.append(measure_sync("OpenAICompatible", http, args.repeat))
        rows.append(asyncio.run(measure_async(url, settings, args.repeat)))
    print(table(rows))
    print(
        f"\nmedians over {args.repeat} x {len(PROMPTS)} answers, cap {args.tokens} tokens, {THREADS} threads"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
