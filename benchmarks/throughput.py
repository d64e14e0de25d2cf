"""Batch throughput against a real server with parallel slots: the async loop and the sync loop in threads.

    .venv/bin/python benchmarks/throughput.py [--questions N] [--slots N] [--server PATH] [--one-slot]

One run, one server, one table: decisions per second of ``run_batch`` at concurrency 1, 2, 4
and 8, each through the async loop (``AsyncOpenAICompatible``, a task a run on one event loop)
and through the sync loop (``OpenAICompatible``, a thread a run), and the client's share of
the wall time (its process CPU time over the wall time: the server is a process of its own).
The two drivers alternate at each concurrency, so a machine that slows down as the run goes
weighs on both alike.

The server is llama.cpp's ``llama-server`` with ``--parallel`` slots (``--slots``, default 4)
and continuous batching, found at ``--server`` or where ``scripts/build-llama-server.sh``
caches it; with none there, ``python -m llama_cpp.server``, which serves one request at a
time, and the table says so. The model is the default one (SmolLM2-135M-Instruct, greedy, 2
threads); each question is the demo's (search the demo notes, read, hand off), with the
routing cap the batch benchmark uses.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolrouting import (  # noqa: E402
    AsyncOpenAICompatible,
    OpenAICompatible,
    Settings,
    arun_batch,
    default_model_path,
    run_batch,
)
from toolrouting.demo import MemoryStore  # noqa: E402

__all__ = ["main"]

CONCURRENCIES = (1, 2, 4, 8)
#: The routing cap of every decision, as benchmarks/batch.py has it.
CAP = 256
#: Threads the server decodes with: the machine's two cores.
SERVER_THREADS = 2
#: Context of one slot, in tokens: a run of the demo fits with room to spare.
SLOT_CONTEXT = 4096
#: Where scripts/build-llama-server.sh caches the binary.
CACHED_SERVER = Path(
    os.environ.get("LLAMA_SERVER_CACHE", Path.home() / ".cache" / "toolrouting" / "llama-server-11434")
)
#: What the demo's questions ask about: the titles of its sample notes, public in the package.
TOPICS = (
    "the storage-room latch",
    "the keys",
    "the evening radio check",
    "the generator",
    "the water filter",
)


def _questions(folder: Path, count: int) -> Path:
    path = folder / "questions.jsonl"
    lines = (
        json.dumps(
            {"id": f"q{n}", "question": f"What do the notes say about {TOPICS[n % len(TOPICS)]}? ({n})"}
        )
        for n in range(count)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _measure(driver: str, url: str, dialect: str, questions: int, concurrency: int) -> dict[str, Any]:
    settings = Settings(temperature=0.0, max_tokens=CAP)
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = _questions(folder, questions)
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


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def _server(binary: Path | None, slots: int) -> Iterator[tuple[str, str, str]]:
    """The server on loopback: (base URL, dialect, what it is), stopped on the way out."""
    port = _free_port()
    model = str(default_model_path())
    if binary is not None:
        command = [
            str(binary), "-m", model, "--host", "127.0.0.1", "--port", str(port),
            "--parallel", str(slots), "--ctx-size", str(SLOT_CONTEXT * slots), "--cont-batching",
            "--threads", str(SERVER_THREADS), "--threads-batch", str(SERVER_THREADS),
        ]  # fmt: skip
        dialect, what = "llama.cpp", f"llama-server --parallel {slots} (continuous batching)"
    else:
        command = [
            sys.executable, "-m", "llama_cpp.server", "--model", model, "--host", "127.0.0.1",
            "--port", str(port), "--n_ctx", str(SLOT_CONTEXT),
            "--n_threads", str(SERVER_THREADS), "--n_threads_batch", str(SERVER_THREADS),
        ]  # fmt: skip
        dialect, what = "llama-cpp-python", "python -m llama_cpp.server (one slot)"
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OMP_WAIT_POLICY": "passive"},
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait(process, url, dialect)
        yield url, dialect, what
    finally:
        process.terminate()
        process.wait()


def _wait(process: subprocess.Popen[bytes], url: str, dialect: str) -> None:
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"the server exited with status {process.returncode} before it answered")
        try:
            with OpenAICompatible(url, dialect=dialect, timeout=30) as probe:
                probe.complete([{"role": "user", "content": "hi"}])
            return
        except Exception:
            time.sleep(0.5)
    raise SystemExit("the server did not answer within 300 s")


def _binary(given: str | None) -> Path | None:
    if given is not None:
        return Path(given)
    cached = CACHED_SERVER / "llama-server"
    if cached.is_file() and os.access(cached, os.X_OK):
        return cached
    found = shutil.which("llama-server")
    return Path(found) if found else None


def _table(title: str, rows: list[dict[str, Any]]) -> None:
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--questions", type=int, default=16, help="questions of each batch")
    parser.add_argument("--slots", type=int, default=4, help="llama-server's --parallel slots")
    parser.add_argument(
        "--server", metavar="PATH", help="the llama-server binary (default: the cached build)"
    )
    parser.add_argument(
        "--one-slot",
        action="store_true",
        help="use python -m llama_cpp.server even when llama-server is there",
    )
    parser.add_argument("--json", metavar="PATH", help="also write the rows as JSON to PATH")
    args = parser.parse_args(argv)

    rows: list[dict[str, Any]] = []
    with _server(None if args.one_slot else _binary(args.server), args.slots) as (url, dialect, what):
        for n in CONCURRENCIES:
            for driver in ("async", "sync") if n % 2 else ("sync", "async"):
                rows.append(_measure(driver, url, dialect, args.questions, n))
                print(json.dumps(rows[-1]), file=sys.stderr)
    _table(f"{what}, {args.questions} questions a batch, SmolLM2-135M, {SERVER_THREADS} threads", rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
