"""The default model's tokenizer alone, and servers on loopback.

- a GGUF's tokenizer without its weights (``Tokenizer``);
- llama.cpp's ``llama-server`` and ``python -m llama_cpp.server`` serving a model on a free
  loopback port (``local_server``), or any command that listens on one (``started``, with
  ``answers`` to say when it has started), and the process that serves it (``server_pid``);
- ``toolrouting serve``'s app served by uvicorn in this event loop (``serving``);
- the 0.5B measurement model (``measurement_model``), and an agent's long system prompt cut from
  the project's docs (``system_prompt``).

Importing it loads no model and imports neither llama_cpp nor anything of tests/.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import tempfile
import time
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any, Literal

import httpx

from benchmarks.common.llama import LLAMA_CPP_SERVER

ROOT = Path(__file__).resolve().parents[2]
FETCH = ROOT / "scripts" / "fetch-measurement-model.sh"


class Tokenizer:
    """A GGUF's tokenizer alone (no weights): how many tokens a text is in the tokenizer's own split."""

    def __init__(self, model: Path) -> None:
        import llama_cpp

        self.model = llama_cpp.Llama(model_path=str(model), vocab_only=True, verbose=False)

    def count(self, text: str) -> int:
        return len(self.model.tokenize(text.encode("utf-8"), add_bos=False, special=False))


ServerKind = Literal["llama-server", "llama_cpp.server"]

#: Seconds a server gets to load its model and answer.
SERVER_START_LIMIT = 300.0


def llama_server_binary() -> Path:
    """Where scripts/build-llama-server.sh caches llama.cpp's ``llama-server`` (it honours the
    same variables: ``LLAMA_SERVER_CACHE``, else ``XDG_CACHE_HOME``)."""
    cache = os.environ.get("LLAMA_SERVER_CACHE") or str(
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "toolrouting"
        / "llama-server-11434"
    )
    return Path(cache) / "llama-server"


@contextmanager
def local_server(
    kind: ServerKind,
    model: Path,
    threads: int,
    ctx: int,
    *,
    slots: int = 1,
    extra: Sequence[str] = (),
    binary: Path | None = None,
) -> Iterator[str]:
    """``kind`` serving ``model`` on a free loopback port: its base URL (no ``/v1``) once it
    answers, until the block ends. ``llama-server`` is ``binary`` or the cached build, with
    ``slots`` parallel slots sharing ``ctx`` tokens of context and ``extra`` options
    (``--jinja``); ``llama_cpp.server`` serves one request at a time."""
    if kind == "llama-server":

        def command(port: int) -> list[str]:
            return [
                str(binary or llama_server_binary()), "--model", str(model), "--host", "127.0.0.1",
                "--port", str(port), "--ctx-size", str(ctx), "--parallel", str(slots),
                "--threads", str(threads), "--threads-batch", str(threads), "--no-webui", *extra,
            ]  # fmt: skip

        ready = "/health"
    else:

        def command(port: int) -> list[str]:
            return [
                *LLAMA_CPP_SERVER, "--model", str(model), "--host", "127.0.0.1",
                "--port", str(port), "--n_ctx", str(ctx), "--n_threads", str(threads),
                "--n_threads_batch", str(threads),
            ]  # fmt: skip

        ready = "/v1/models"
    with started(kind, command, lambda url: answers(url + ready)) as url:
        yield url


@contextmanager
def started(what: str, command: Callable[[int], list[str]], ready: Callable[[str], bool]) -> Iterator[str]:
    """``command(port)`` run on a free loopback port: its base URL once ``ready(url)``, until the
    block ends (then asked to stop, and killed if it has not within 15 s)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(
            command(port),
            stdout=log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "OMP_WAIT_POLICY": "passive"},
        )
        try:
            deadline = time.monotonic() + SERVER_START_LIMIT
            while process.poll() is None and not ready(url):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if process.poll() is not None or not ready(url):
                log.seek(0)
                said = log.read().decode("utf-8", "replace")[-2000:]
                raise SystemExit(f"{what} did not start within {SERVER_START_LIMIT:g} s:\n{said}")
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def server_pid(url: str) -> str | None:
    """The pid of the process whose command line serves ``url``'s port (``--port N``)."""
    port = url.rsplit(":", 1)[1].encode()
    for path in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            words = path.read_bytes().split(b"\0")
        except OSError:
            continue
        if b"--port" in words and port in words:
            return path.parent.name
    return None


def answers(url: str) -> bool:
    """Whether ``url`` answers a GET with 200 (a server that has started)."""
    try:
        return httpx.get(url, timeout=2.0).status_code == 200
    except httpx.TransportError:
        return False


@asynccontextmanager
async def serving(app: Any) -> AsyncIterator[str]:
    """``app`` (``toolrouting serve``'s Starlette app) served by uvicorn on a free loopback port, in
    this event loop: its base URL (``.../v1``) until the block ends."""
    import uvicorn

    from toolrouting._serve import server_config

    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without
    # it every keep-alive request waits 40 ms on a delayed ACK.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(socket.SOMAXCONN)
    port = listener.getsockname()[1]
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port))
    task = asyncio.create_task(server.serve(sockets=[listener]))
    while not server.started:
        if task.done():
            task.result()  # raises what stopped it
            raise RuntimeError("the server stopped before it started")
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        await task
        listener.close()


def measurement_model() -> Path:
    """The 0.5B measurement model's file, fetched once by scripts/fetch-measurement-model.sh."""
    done = subprocess.run(["sh", str(FETCH)], capture_output=True, text=True, check=True)
    return Path(done.stdout.strip().splitlines()[-1])


def system_prompt(model: Path, tokens: int) -> str:
    """The project's docs, in their files' order, cut at ``tokens`` of the model's tokens."""
    llama = Tokenizer(model).model
    text = "\n\n".join(path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md")))
    split = llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)
    return str(llama.detokenize(split[:tokens]).decode("utf-8", errors="ignore"))
