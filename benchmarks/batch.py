"""Batch runs at several concurrencies, side by side: decisions per second and the client's CPU per decision.

    .venv/bin/python benchmarks/batch.py [--questions N] [--server-questions N] [--no-server]

Two tables from one run. The first drives ``run_batch`` over a fake model that answers at once
(ScriptedBackend: search the demo notes, then hand off), so all the time is the client's: the
loop, the demo store, the transcripts and results on disk, one thread a run in flight. The
second drives a real ``python -m llama_cpp.server`` on loopback with the default model
(SmolLM2-135M, greedy, 2 threads), which serves one request at a time: it shows the batch
keeps the server busy and what share of the wall time the client itself spends on a CPU
(process CPU time over wall time). A server with parallel slots (llama-server ``--parallel``,
vLLM, SGLang) is what the concurrency is for; docs/batch.md says how to drive one.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolrouting import (  # noqa: E402
    OpenAICompatible,
    ScriptedBackend,
    ScriptedRequest,
    Settings,
    default_model_path,
    run_batch,
)
from toolrouting.demo import MemoryStore  # noqa: E402

__all__ = ["main"]

SEARCH = '{"tool": "memory_search", "arguments": {"query": "latch"}}'
NONE = '{"tool": "none"}'


def _fake(request: ScriptedRequest) -> str:
    results = sum(1 for m in request.messages if m["content"].startswith("Tool result"))
    return SEARCH if results == 0 else NONE


def _questions(folder: Path, count: int) -> Path:
    path = folder / "questions.jsonl"
    lines = (
        json.dumps({"id": f"q{n}", "question": f"What does note {n} say about the latch?"})
        for n in range(count)
    )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _measure(
    make_backend: Callable[[], Any], questions: int, concurrency: int, **options: Any
) -> dict[str, float]:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch)
        path = _questions(folder, questions)
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


def _table(title: str, rows: list[dict[str, float]]) -> None:
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


def _server() -> tuple[subprocess.Popen[bytes], str]:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(default_model_path()),
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096",
        "--n_threads", "2", "--n_threads_batch", "2",
    ]  # fmt: skip
    process = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, "OMP_WAIT_POLICY": "passive"},
    )
    url = f"http://127.0.0.1:{port}/v1"
    for _ in range(600):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                pass
            if OpenAICompatible(url, dialect="llama-cpp-python").complete(
                [{"role": "user", "content": "hi"}]
            ):
                return process, url
        except Exception:
            time.sleep(0.2)
    process.kill()
    raise SystemExit("python -m llama_cpp.server did not start")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--questions", type=int, default=200, help="questions of the fake-model batch")
    parser.add_argument("--server-questions", type=int, default=8, help="questions of the server batch")
    parser.add_argument("--no-server", action="store_true", help="skip the llama_cpp.server table")
    args = parser.parse_args(argv)

    fake = [
        _measure(lambda: ScriptedBackend([_fake] * (2 * args.questions)), args.questions, n)
        for n in (1, 8, 64)
    ]
    _table(f"Fake model that answers at once, {args.questions} questions (2 decisions each)", fake)
    if args.no_server:
        return 0
    process, url = _server()
    try:
        settings = Settings(temperature=0.0, max_tokens=256)
        rows = [
            _measure(
                lambda: OpenAICompatible(url, dialect="llama-cpp-python", settings=settings),
                args.server_questions,
                n,
                cap=256,
            )
            for n in (1, 2, 4)
        ]
    finally:
        process.terminate()
        process.wait()
    _table(f"python -m llama_cpp.server (one request at a time), {args.server_questions} questions", rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
