"""toolrouting serve on loopback: a real uvicorn server in a thread, on a free port, for real clients."""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import re
import socket
import sys
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import uvicorn
from starlette.applications import Starlette

from toolrouting._serve import server_config

if TYPE_CHECKING:
    import openai

    from toolrouting import AsyncScriptedBackend

__all__ = [
    "BARE_READ",
    "BARE_SEARCH",
    "READ",
    "SEARCH",
    "TOOLS",
    "drained",
    "page_snippets",
    "served",
    "served_embedded",
    "served_scripted",
    "served_to_sdk",
]

#: The small notes catalogue the serve tests and benchmarks route over: a bounded search and a read
#: by one of three ids (benchmarks/cases/catalogues/serve-notes.json, which the benchmarks read too).
TOOLS: list[Any] = json.loads(
    (
        Path(__file__).resolve().parents[2] / "benchmarks" / "cases" / "catalogues" / "serve-notes.json"
    ).read_text(encoding="utf-8")
)
SEARCH, READ = TOOLS

#: The least a catalogue holds, for the app's own tests: a search with a free query, and a read
#: that takes no arguments.
BARE_SEARCH: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "search",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}
BARE_READ: dict[str, Any] = {
    "type": "function",
    "function": {"name": "read", "parameters": {"type": "object", "properties": {}}},
}


@contextlib.contextmanager
def served(app: Starlette) -> Iterator[str]:
    """Serve ``app`` on 127.0.0.1 until the block ends; yields the base URL clients take (``.../v1``)."""
    # IPPROTO_TCP named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and without
    # it every keep-alive request waits 40 ms on a delayed ACK.
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    listener.bind(("127.0.0.1", 0))
    listener.listen(socket.SOMAXCONN)
    port = listener.getsockname()[1]
    server = uvicorn.Server(server_config(app, host="127.0.0.1", port=port))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listener]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        server.should_exit = True
        thread.join(30)
        listener.close()


@contextlib.contextmanager
def served_scripted(model: str = "scripted") -> Iterator[tuple[AsyncScriptedBackend, str]]:
    """A server over an empty scripted backend named ``model``: the backend, to enqueue replies
    and read requests, and the base URL clients take (``.../v1``)."""
    from toolrouting import AsyncScriptedBackend
    from toolrouting._serve import serve_app

    backend = AsyncScriptedBackend()
    with served(serve_app(backend, model=model)) as url:
        yield backend, url


def released_snippet(namespace: dict[str, Any]) -> None:
    """Drop what a doc snippet ran in ``namespace`` made, as a script's end would: its clients
    (and their connections, the Agents SDK's process-wide one too) are collected now, and the
    loop a framework's ``run_sync`` left as the thread's is closed, so none is collected in a
    later test, which would fail for it."""
    namespace.clear()
    # The Agents SDK's snippet sets its process-wide client; the public setter takes no None.
    shared = sys.modules.get("agents.models._openai_shared")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ResourceWarning)
        warnings.simplefilter("ignore", DeprecationWarning)
        if shared is not None:
            shared.set_default_openai_client(None)
        try:
            loop = asyncio.get_event_loop_policy().get_event_loop()
        except RuntimeError:  # none is set
            loop = None
        if loop is not None:
            asyncio.set_event_loop(None)
            loop.close()
        gc.collect()


def page_snippets(heading: str) -> tuple[str, dict[str, str]]:
    """The Python snippets of docs/serve.md's section ``heading`` (``## ...``): those before its
    first subsection, and each subsection's (``### TITLE``) by its title, each joined."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "serve.md").read_text(encoding="utf-8")
    start = text.index(f"\n{heading}\n")
    end = text.index("\n## ", start + 1)
    first, *rest = re.split(r"^### (.+)$", text[start:end], flags=re.MULTILINE)

    def code(chunk: str) -> str:
        return "\n".join(re.findall(r"^```python\n(.*?)^```$", chunk, flags=re.MULTILINE | re.DOTALL))

    return code(first), {title: code(chunk) for title, chunk in zip(rest[::2], rest[1::2], strict=True)}


@contextlib.contextmanager
def served_to_sdk(model: str, **options: Any) -> Iterator[tuple[AsyncScriptedBackend, openai.OpenAI]]:
    """A server over an empty scripted backend named ``model`` (``options`` go to ``serve_app``),
    and the openai SDK on loopback to it, without retries: the backend, to enqueue replies and
    read requests, and the client."""
    import openai

    from toolrouting import AsyncScriptedBackend
    from toolrouting._serve import serve_app

    backend = AsyncScriptedBackend()
    with (
        served(serve_app(backend, model=model, **options)) as url,
        openai.OpenAI(base_url=url, api_key="unused", max_retries=0) as client,
    ):
        yield backend, client


@contextlib.contextmanager
def served_embedded(*, path: Path | None = None, **options: Any) -> Iterator[str]:
    """The embedded default model (or the GGUF at ``path``) served on loopback under the model
    tests' seed, temperature and threads (``options`` go to ``serve_app``); yields the base URL
    clients take (``.../v1``)."""
    import anyio

    from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS
    from toolrouting import AsyncEmbeddedLlama, EmbeddedLlama, Settings, default_model_path
    from toolrouting._serve import serve_app

    settings = Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED, max_tokens=256)
    backend = AsyncEmbeddedLlama(
        EmbeddedLlama(path or default_model_path(), settings=settings, n_threads=TEST_THREADS)
    )
    try:
        with served(serve_app(backend, **options)) as url:
            yield url
    finally:
        anyio.run(backend.aclose)


@contextlib.contextmanager
def drained(backend: AsyncScriptedBackend) -> Iterator[AsyncScriptedBackend]:
    """A module's scripted backend for one test: its requests cleared before, and every reply the
    test gave it asked by the end."""
    backend.requests.clear()
    yield backend
    assert backend.pending == 0, "a scripted reply was left unasked"
