"""Batch runs at several concurrencies: decisions per second and the client's share of the work.

    .venv/bin/python -m benchmarks.speed.batch [--ways fake,one-slot,slots] [--questions N]
                                         [--server-questions N] [--slot-questions N]
                                         [--slots N] [--server PATH] [--one-slot] [--json PATH]

Three ways, each a table, from one run (``--ways``; the default is ``fake,one-slot``):

- ``fake``: ``run_batch`` over a fake model that answers at once (ScriptedBackend: search the
  demo notes, then hand off) at concurrency 1, 8 and 64, so all the time is the client's: the
  loop, the demo store, the transcripts and results on disk, one thread a run in flight.
- ``one-slot``: the same against a real ``python -m llama_cpp.server`` on loopback with the
  default model (SmolLM2-135M, greedy, 2 threads), which serves one request at a time, at 1, 2
  and 4: the batch keeps the server busy, and the client's share of the wall time (process
  CPU time over wall time) shows what it costs on a CPU.
- ``slots``: a server with parallel slots: llama.cpp's ``llama-server`` with ``--parallel``
  (``--slots``, default 4) and continuous batching, found at ``--server`` or where
  ``scripts/build-llama-server.sh`` caches it (with none there, or ``--one-slot``,
  ``python -m llama_cpp.server``, and the table says so). ``run_batch`` at concurrency 1, 2, 4
  and 8, each through the async loop (``AsyncOpenAICompatible``, a task a run on one event
  loop, as ``toolrouting batch`` runs) and through the sync loop (``OpenAICompatible``, a thread
  a run), the two alternating at each concurrency so a machine that slows down weighs on both;
  each question one of the demo's, routing cap 256. ``--json`` also writes its rows.

docs/batch.md says how to drive a server with parallel slots (llama-server, vLLM, SGLang).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.common.servers import llama_server_binary, local_server
from toolrouting import (
    AsyncOpenAICompatible,
    OpenAICompatible,
    ScriptedBackend,
    ScriptedRequest,
    Settings,
    arun_batch,
    default_model_path,
    run_batch,
)
from toolrouting.demo import MemoryStore

__all__ = ["main"]

SEARCH = '{"tool": "memory_search", "arguments": {"query": "latch"}}'
NONE = '{"tool": "none"}'
WAYS = ("fake", "one-slot", "slots")
#: The routing cap of every decision against a server.
CAP = 256
#: Threads a server decodes with: the machine's two cores.
SERVER_THREADS = 2
#: Context of one slot, in tokens: a run of the demo fits with room to spare.
SLOT_CONTEXT = 4096
#: What the slots way's questions ask about: the titles of the demo's sample notes.
TOPICS = (
    "the storage-room latch",
    "the keys",
    "the evening radio check",
    "the generator",
    "the water filter",
)


def _fake(request: ScriptedRequest) -> str:
    results = sum(1 for m in request.messages if m["content"].startswith("Tool result"))
    return SEARCH if results == 0 else NONE


def _questions(folder: Path, count: int, question: Callable[[int], str]) -> Path:
    """A questions file of ``count`` questions, the n-th ``question(n)``."""
    path = folder / "questions.jsonl"
    lines = (json.dumps({"id": f"q{n}", "question": question(n)}) for n in range(count))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _about_the_latch(n: int) -> str:
    return f"What does note {n} say about the latch?"


def _about_a_topic(n: int) -> str:
    return f"What do the notes say about {TOPICS[n % len(TOPICS)]}? ({n})"


def _measure(
    make_backend: Callable[[], Any], questions: int, concurrency: int, **options: Any
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = _questions(folder, questions, _about_the_latch)
        backend = make_backend()
        cpu, wall = time.process_time(), time.monotonic()
        progress = run_batch(
            path,
            folder / "out",
            backend=backend,
            tools=MemoryStore.sample,
            concurrency=concurrency,
            **options,
        )
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
        backend.close()
    assert progress.done == questions, progress
    return {
        "concurrency": concurrency,
        "seconds": wall,
        "decisions_per_second": progress.decisions / wall,
        "cpu_ms_per_decision": 1000 * cpu / progress.decisions,
        "client_cpu_share": cpu / wall,
    }


def _one_driver_table(title: str, rows: list[dict[str, float]]) -> None:
    base = rows[0]["decisions_per_second"]
    print(f"\n{title}\n")
    print("| concurrency | wall s | decisions/s | vs 1 | client CPU ms per decision | client CPU / wall |")
    print("|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['concurrency']:.0f} | {row['seconds']:.2f} | {row['decisions_per_second']:.1f} | "
            f"{row['decisions_per_second'] / base:.2f}x | {row['cpu_ms_per_decision']:.2f} | "
            f"{row['client_cpu_share']:.0%} |"
        )


def _measure_driver(driver: str, url: str, dialect: str, questions: int, concurrency: int) -> dict[str, Any]:
    settings = Settings(temperature=0.0, max_tokens=CAP)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = _questions(folder, questions, _about_a_topic)
        cpu, wall = time.process_time(), time.monotonic()
        if driver == "async":

            async def batch() -> Any:
                async with AsyncOpenAICompatible(url, dialect=dialect, settings=settings) as backend:
                    return await arun_batch(
                        path, folder / "out", backend=backend, tools=MemoryStore.sample,
                        concurrency=concurrency, cap=CAP,
                    )  # fmt: skip

            progress = asyncio.run(batch())
        else:
            with OpenAICompatible(url, dialect=dialect, settings=settings) as backend:
                progress = run_batch(
                    path, folder / "out", backend=backend, tools=MemoryStore.sample,
                    concurrency=concurrency, cap=CAP,
                )  # fmt: skip
        cpu, wall = time.process_time() - cpu, time.monotonic() - wall
    assert progress.finished == questions, progress
    return {
        "driver": driver,
        "concurrency": concurrency,
        "seconds": wall,
        "decisions": progress.decisions,
        "failed": progress.failed,
        "decisions_per_second": progress.decisions / wall,
        "client_share": cpu / wall,
        "cpu_ms_per_decision": 1000 * cpu / max(progress.decisions, 1),
    }


def _binary(given: str | None) -> Path | None:
    if given is not None:
        return Path(given)
    cached = llama_server_binary()
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached
    found = shutil.which("llama-server")
    return Path(found) if found else None


def _two_drivers_table(title: str, rows: list[dict[str, Any]]) -> None:
    by = {(row["driver"], row["concurrency"]): row for row in rows}
    base = by[("sync", 1)]["decisions_per_second"]
    print(f"\n{title}\n")
    print(
        "| concurrency | async decisions/s | sync (threads) decisions/s | async / sync | "
        "async vs 1 | sync vs 1 | client CPU / wall, async | client CPU / wall, sync |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|")
    for n in sorted({row["concurrency"] for row in rows}):
        a, s = by[("async", n)], by[("sync", n)]
        print(
            f"| {n} | {a['decisions_per_second']:.2f} | {s['decisions_per_second']:.2f} | "
            f"{a['decisions_per_second'] / s['decisions_per_second']:.2f} | "
            f"{a['decisions_per_second'] / by[('async', 1)]['decisions_per_second']:.2f}x | "
            f"{s['decisions_per_second'] / base:.2f}x | {a['client_share']:.1%} | {s['client_share']:.1%} |"
        )
    failed = sum(row["failed"] for row in rows)
    if failed:
        print(f"\n{failed} runs failed (their decisions count; see the results).")


def _one_slot(questions: int) -> None:
    with local_server("llama_cpp.server", default_model_path(), SERVER_THREADS, SLOT_CONTEXT) as url:
        settings = Settings(temperature=0.0, max_tokens=CAP)
        rows = [
            _measure(
                lambda: OpenAICompatible(url, dialect="llama-cpp-python", settings=settings),
                questions,
                n,
                cap=CAP,
            )
            for n in (1, 2, 4)
        ]
    _one_driver_table(f"python -m llama_cpp.server (one request at a time), {questions} questions", rows)


def _slots(args: argparse.Namespace) -> None:
    binary = None if args.one_slot else _binary(args.server)
    model = default_model_path()
    if binary is not None:
        slots = args.slots
        server = local_server(
            "llama-server", model, SERVER_THREADS, SLOT_CONTEXT * slots, slots=slots, binary=binary,
            extra=["--cont-batching"],
        )  # fmt: skip
        dialect, what = "llama.cpp", f"llama-server --parallel {slots} (continuous batching)"
    else:
        server = local_server("llama_cpp.server", model, SERVER_THREADS, SLOT_CONTEXT)
        dialect, what = "llama-cpp-python", "python -m llama_cpp.server (one slot)"
    rows: list[dict[str, Any]] = []
    with server as url:
        for n in (1, 2, 4, 8):
            for driver in ("async", "sync") if n % 2 else ("sync", "async"):
                rows.append(_measure_driver(driver, url, dialect, args.slot_questions, n))
                print(json.dumps(rows[-1]), file=sys.stderr)
    _two_drivers_table(
        f"{what}, {args.slot_questions} questions a batch, SmolLM2-135M, {SERVER_THREADS} threads", rows
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--ways", default="fake,one-slot", help="comma-separated: " + ", ".join(WAYS))
    parser.add_argument("--questions", type=int, default=200, help="questions of the fake-model batch")
    parser.add_argument("--server-questions", type=int, default=8, help="questions of the one-slot batch")
    parser.add_argument(
        "--slot-questions", type=int, default=16, help="questions of each batch of the slots way"
    )
    parser.add_argument("--slots", type=int, default=4, help="llama-server's --parallel slots")
    parser.add_argument(
        "--server", metavar="PATH", help="the llama-server binary (default: the cached build)"
    )
    parser.add_argument(
        "--one-slot",
        action="store_true",
        help="the slots way on python -m llama_cpp.server even when llama-server is there",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the slots way's rows as JSON to PATH")
    args = parser.parse_args(argv)
    ways = [name.strip() for name in args.ways.split(",") if name.strip()]
    unknown = [name for name in ways if name not in WAYS]
    if unknown:
        parser.error(f"unknown ways {', '.join(unknown)}; choose from {', '.join(WAYS)}")
    if "fake" in ways:
        fake = [
            _measure(lambda: ScriptedBackend([_fake] * (2 * args.questions)), args.questions, n)
            for n in (1, 8, 64)
        ]
        _one_driver_table(
            f"Fake model that answers at once, {args.questions} questions (2 decisions each)", fake
        )
    if "one-slot" in ways:
        _one_slot(args.server_questions)
    if "slots" in ways:
        _slots(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
