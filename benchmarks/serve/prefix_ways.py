"""The two earlier measurements of ``prefix_cache.py``, on the default model: the loop's rounds and
two clients of serve over llama-server.

``run-start``: what keeping the run-start instructions saves when the catalogue narrows. The demo
store narrows its catalogue every round (``memory_search`` alone, then ``memory_read`` alone,
then ``memory_search`` again). A run of four rounds is recorded with the scripted backend; its
routing requests are then sent to the real model in order, two ways:

- ``run-start``: what ``RoutingLoop`` sends, the instructions rendered once from the run-start
  catalogue, so each request extends the one before it;
- ``re-rendered``: the same requests with the system message rendered again from each round's
  catalogue, as a loop that "says what is offered now" in the system message would.

Each request is capped at one completion token, so the time is the prompt's; the model decodes
with llama.cpp's grammar sampler (``forced_tokens=False``), which evaluates the prompt before that
token, where forced tokens would stop at the cap before evaluating anything. The model keeps no
prompt state (``prompt_cache_mb=0``): it evaluates only what follows what its one context holds,
as a server's one slot does. A different prompt is sent before each pass so no pass starts warm.
Prints one Markdown table: seconds per round, median over the repeats.

``clients``: how much of each request llama-server finds in its prompt cache, a conversation going
through serve. llama.cpp's own ``llama-server`` serves the default model; ``toolrouting serve``
runs over it (dialect ``llama.cpp``) in this process, and the official SDK drives a conversation
of N decisions under ``tool_choice: "required"``, each tool call answered by a tool message.
For every request llama-server reports how many prompt tokens it took from its cache
(``timings.cache_n``) and how many it evaluated (``timings.prompt_n``). Two clients, side by
side: one sends each call back as the server wrote it (``verbatim``); the other re-serialises the
arguments (``json.dumps``, spaced), as a client that parses them and writes them again does.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import time
from typing import Any

import httpx
import openai

from benchmarks.common.corpus import SERVE_TOOLS
from benchmarks.common.servers import local_server, serving
from toolrouting import (
    AsyncOpenAICompatible,
    EmbeddedLlama,
    Message,
    RoutingLoop,
    ScriptedBackend,
    Settings,
    catalogue_prompt,
    default_model_path,
    route_schema,
    routed_backend,
)
from toolrouting._loop import INSTRUCTIONS_SEPARATOR
from toolrouting._serve import serve_app
from toolrouting.demo import SEARCH_PROMPT, MemoryStore

__all__ = ["clients", "run_start"]

QUESTION = "What does the latch on the storage-room door do?"
ACTIONS = [
    '{"tool": "memory_search", "arguments": {"query": "latch"}}',
    '{"tool": "memory_read", "arguments": {"ids": ["M4"]}}',
    '{"tool": "memory_search", "arguments": {"query": "brass key"}}',
    '{"tool": "none"}',
]
RESULTS = {
    "search": "M1: the latch on the storage-room door",
    "read": "The latch keeps the door shut in a draught.",
}


# --- run-start ---


def recorded() -> list[tuple[list[Message], list[dict[str, object]]]]:
    """Each routing request of the run and the catalogue it offered."""
    backend = ScriptedBackend(ACTIONS)
    catalogues = []
    with MemoryStore.sample() as store:
        original = store.tools_for_llm

        def watched() -> list[dict[str, object]]:
            tools = original()
            catalogues.append(tools)
            return tools

        store.tools_for_llm = watched  # type: ignore[method-assign]
        RoutingLoop(backend, store).run(
            [{"role": "system", "content": SEARCH_PROMPT}, {"role": "user", "content": QUESTION}]
        )
    # The first catalogue read renders the instructions; each round reads it again.
    return [(list(r.messages), tools) for r, tools in zip(backend.requests, catalogues[1:], strict=True)]


def re_rendered(messages: list[Message], tools: list[dict[str, object]]) -> list[Message]:
    system = catalogue_prompt(tools) + INSTRUCTIONS_SEPARATOR + SEARCH_PROMPT
    return [Message(role="system", content=system), *messages[1:]]


def run_start(args: argparse.Namespace) -> None:
    rounds = recorded()
    variants = {
        "run-start": [messages for messages, _ in rounds],
        "re-rendered": [re_rendered(messages, tools) for messages, tools in rounds],
    }
    seconds: dict[str, list[list[float]]] = {name: [[] for _ in rounds] for name in variants}
    tokens: dict[str, list[int]] = {name: [] for name in variants}
    # The grammar sampler: it evaluates the whole prompt before its first token, where forced tokens
    # stop at a 1-token cap before the model is run (the forced {"tool":" is more than one token).
    settings = Settings(temperature=0.0, seed=0)
    with EmbeddedLlama(
        args.model, n_threads=args.threads, settings=settings, forced_tokens=False, prompt_cache_mb=0
    ) as model:
        for _ in range(args.repeats):
            for name, requests in variants.items():
                model.complete([{"role": "user", "content": "Say hello."}])  # a cold start for each pass
                for index, (messages, (_, tools)) in enumerate(zip(requests, rounds, strict=True)):
                    routed = routed_backend(model, route_schema(tools), 1)
                    started = time.perf_counter()
                    completion = routed.complete(messages)
                    seconds[name][index].append(time.perf_counter() - started)
                    if len(tokens[name]) < len(rounds):
                        tokens[name].append(completion.usage.prompt_tokens)
        model_name = model.model_path.name
    print(f"{model_name}, the demo run's {len(rounds)} routing requests, median of {args.repeats} passes\n")
    print("| instructions | " + " | ".join(f"round {i + 1}" for i in range(len(rounds))) + " | all rounds |")
    print("|---|" + "---:|" * (len(rounds) + 1))
    for name in variants:
        medians = [statistics.median(values) for values in seconds[name]]
        cells = " | ".join(f"{m:.2f} s ({t} tok)" for m, t in zip(medians, tokens[name], strict=True))
        print(f"| {name} | {cells} | {sum(medians):.2f} s |")


# --- clients ---


async def client_conversation(
    url: str, steps: int, verbatim: bool, timings: list[dict[str, Any]]
) -> list[tuple[int, int]]:
    """``(prompt tokens, of them from the cache)`` of each decision of one conversation."""
    messages: list[Any] = [
        {"role": "user", "content": f"{QUESTION} ({'verbatim' if verbatim else 'rewritten'})"}
    ]
    seen: list[tuple[int, int]] = []
    async with openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0) as client:
        for _ in range(steps):
            timings.clear()
            reply = await client.chat.completions.create(
                model="m", messages=messages, tools=SERVE_TOOLS, tool_choice="required", temperature=0
            )
            [timing] = timings
            seen.append((timing["prompt_n"] + timing["cache_n"], timing["cache_n"]))
            message = reply.choices[0].message.model_dump(exclude_none=True)
            call = message["tool_calls"][0]
            if not verbatim:
                call["function"]["arguments"] = json.dumps(json.loads(call["function"]["arguments"]))
            messages += [
                message,
                {"role": "tool", "tool_call_id": call["id"], "content": RESULTS[call["function"]["name"]]},
            ]
    return seen


async def measure_clients(upstream: str, steps: int) -> None:
    timings: list[dict[str, Any]] = []

    async def read_timings(response: httpx.Response) -> None:
        await response.aread()  # kept: the backend reads the same content after this hook
        timings.append(json.loads(response.content).get("timings", {}))

    async with httpx.AsyncClient(event_hooks={"response": [read_timings]}) as http:
        backend = AsyncOpenAICompatible(
            f"{upstream}/v1",
            model="default",
            dialect="llama.cpp",
            settings=Settings(temperature=0.0),
            http_client=http,
        )
        try:
            async with serving(serve_app(backend)) as url:
                print("client      decision  prompt tokens  from the cache  share")
                for verbatim in (True, False):
                    seen = await client_conversation(url, steps, verbatim, timings)
                    for step, (prompt, cached) in enumerate(seen, 1):
                        name = "verbatim" if verbatim else "rewritten"
                        print(f"{name:10s}  {step:8d}  {prompt:13d}  {cached:14d}  {cached / prompt:5.0%}")
        finally:
            await backend.aclose()


def clients(args: argparse.Namespace) -> None:
    with local_server("llama-server", default_model_path(), 2, 2048) as upstream:
        asyncio.run(measure_clients(upstream, args.steps))
