"""toolrouting serve's own cost against the backend called directly, and a streamed call's first chunk.

    .venv/bin/python -m benchmarks.serve.serve_overhead
        # --requests N, --repeat R, --skip-model, --skip-overhead

1. Overhead. A scripted async backend answers every decision at once with the same action, so
   what is measured is the server alone: reading and checking the request, translating the
   conversation, the route schema, the parser, writing the reply, and HTTP on loopback. The
   baseline is the same routed request awaited on the same backend in-process, as a client
   that called the backend directly would. The server runs in a process of its own (uvicorn,
   one worker), the client is ``httpx.AsyncClient``; both are timed at 1 and at 100 requests in
   flight, side by side in one run. "per request" is wall time over requests (at 100 in flight
   a request's own latency is mostly its wait behind the other 99); the overhead is the
   difference of the two per-request times, the client's HTTP included. "server CPU" is the
   server process's own CPU time over the requests it served: the proxy's cost alone.
2. First chunk. The embedded default model behind the server (in this process, its event loop
   shared with the client) decides under
   ``tool_choice: "required"``, asked whole and streamed in turn (the order swapped each round,
   so the prompt cache favours neither). The first chunk is the one carrying the call's name;
   its time is set against the whole decision's.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common.corpus import SERVE_TOOLS as TOOLS
from benchmarks.common.servers import serving

MESSAGES: list[Any] = [
    {"role": "system", "content": "Answer from the notes."},
    {"role": "user", "content": "What does the latch on the storage-room door do?"},
]
ACTION = '{"tool":"search","arguments":{"query":"latch"}}'
BODY = {"model": "scripted", "messages": MESSAGES, "tools": TOOLS}


def scripted_backend() -> Any:
    from toolrouting import AsyncScriptedBackend

    return AsyncScriptedBackend(itertools.repeat(ACTION, 2_000_000))


def serve_scripted() -> None:
    """The server process: the scripted backend on a free port, which the first stdout line names."""
    import socket

    import uvicorn

    from toolrouting._serve import serve_app, server_config

    # IPPROTO_TCP named, so that asyncio sets TCP_NODELAY (see servers.serving).
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(socket.SOMAXCONN)
    port = listener.getsockname()[1]
    print(port, flush=True)
    config = server_config(serve_app(scripted_backend()), host="127.0.0.1", port=port)
    uvicorn.Server(config).run(sockets=[listener])


async def timed(requests: int, in_flight: int, one: Callable[[], Awaitable[object]]) -> float:
    """Seconds per request, wall time over ``requests`` made ``in_flight`` at a time."""
    left = iter(range(requests))

    async def worker() -> None:
        for _ in left:
            await one()

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return (time.perf_counter() - start) / requests


def cpu_seconds(pid: int) -> float:
    """User and system CPU a process has used (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


async def overhead(url: str, requests: int, repeat: int, server: int) -> None:
    from toolrouting import route_schema, routed_backend
    from toolrouting._loop import instructed

    backend = scripted_backend()
    direct = routed_backend(backend, route_schema(TOOLS), 512)
    sent = instructed(MESSAGES, True, TOOLS)
    limits = httpx.Limits(max_connections=200, max_keepalive_connections=200)
    async with httpx.AsyncClient(base_url=url, limits=limits, timeout=60) as client:

        async def proxied() -> None:
            response = await client.post("/chat/completions", json=BODY)
            assert response.json()["choices"][0]["finish_reason"] == "tool_calls"

        async def called() -> None:
            await direct.complete(sent)

        await timed(200, 10, proxied)  # warm-up: connections, caches
        await timed(200, 10, called)
        print("in flight  direct/request  proxied/request  overhead/request  server CPU/request")
        for in_flight in (1, 100):
            directs, proxies, cpus = [], [], []
            for _ in range(repeat):
                directs.append(await timed(requests, in_flight, called))
                before = cpu_seconds(server)
                proxies.append(await timed(requests, in_flight, proxied))
                cpus.append((cpu_seconds(server) - before) / requests)
            d, p, c = statistics.median(directs), statistics.median(proxies), statistics.median(cpus)
            print(
                f"{in_flight:9d}  {d * 1e3:12.3f}ms  {p * 1e3:13.3f}ms  {(p - d) * 1e3:14.3f}ms  "
                f"{c * 1e3:16.3f}ms"
            )


async def first_chunk(repeat: int) -> None:
    from toolrouting import AsyncEmbeddedLlama, EmbeddedLlama, Settings, default_model_path
    from toolrouting._serve import serve_app

    settings = Settings(temperature=0.0, max_tokens=256)
    backend = AsyncEmbeddedLlama(EmbeddedLlama(default_model_path(), settings=settings, n_threads=2))
    body = {**BODY, "model": "smollm2", "tool_choice": "required"}
    wholes, firsts, streams = [], [], []
    async with serving(serve_app(backend)) as url, httpx.AsyncClient(base_url=url, timeout=120) as client:
        await client.post("/chat/completions", json=body)  # the prompt's first evaluation, not timed

        async def whole() -> None:
            start = time.perf_counter()
            reply = (await client.post("/chat/completions", json=body)).json()
            assert reply["choices"][0]["finish_reason"] == "tool_calls"
            wholes.append(time.perf_counter() - start)

        async def streamed() -> None:
            start, first = time.perf_counter(), None
            async with client.stream("POST", "/chat/completions", json={**body, "stream": True}) as response:
                async for line in response.aiter_lines():
                    if first is None and line.startswith("data: {") and '"tool_calls"' in line:
                        first = time.perf_counter() - start
                        delta = json.loads(line[6:])["choices"][0]["delta"]
                        assert delta["tool_calls"][0]["function"]["name"] in ("search", "read")
            assert first is not None
            firsts.append(first)
            streams.append(time.perf_counter() - start)

        for round in range(repeat):
            for ask in (whole, streamed) if round % 2 == 0 else (streamed, whole):
                await ask()
    await backend.aclose()
    w, f, s = statistics.median(wholes), statistics.median(firsts), statistics.median(streams)
    print(f"\nstreamed tool call, embedded model, medians of {repeat}:")
    print("whole decision  first chunk  streamed to the end  first/whole")
    print(f"{w:13.3f}s  {f:10.3f}s  {s:18.3f}s  {f / w:11.3f}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serve-scripted", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--skip-model", action="store_true")
    parser.add_argument("--skip-overhead", action="store_true")
    args = parser.parse_args()
    if args.serve_scripted:
        serve_scripted()
        return
    if args.skip_overhead:
        asyncio.run(first_chunk(max(args.repeat, 5)))
        return
    server = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.serve.serve_overhead", "--serve-scripted"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        asyncio.run(overhead(f"http://127.0.0.1:{port}/v1", args.requests, args.repeat, server.pid))
    finally:
        server.terminate()
        server.wait()
    if not args.skip_model:
        asyncio.run(first_chunk(max(args.repeat, 5)))


if __name__ == "__main__":
    main()
