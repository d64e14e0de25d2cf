"""How much of each request llama-server finds in its prompt cache, a conversation going through serve.

    .venv/bin/python benchmarks/serve_prefix.py      # --steps N

llama.cpp's own ``llama-server`` (as scripts/build-llama-server.sh caches it) serves the default
model; ``toolrouting serve`` runs over it (dialect ``llama.cpp``) in this process, and the
official SDK drives a conversation of N decisions under ``tool_choice: "required"``, each
tool call answered by a tool message. For every request llama-server reports how many prompt
tokens it took from its cache (``timings.cache_n``) and how many it evaluated
(``timings.prompt_n``); they are read off its responses on their way into the backend.

Two clients, side by side: one sends each call back as the server wrote it (the SDK's own
message, ``verbatim``); the other re-serialises the arguments, as a client that parses them and
writes them again does (``json.dumps``, spaced). The server then renders an action that is not
what the model wrote, and the cached prefix ends at the first assistant message.
"""

from __future__ import annotations

import argparse
import asyncio
import json
from typing import Any

import httpx
import openai
from corpus import SERVE_TOOLS as TOOLS
from servers import local_server, serving

from toolrouting import AsyncOpenAICompatible, Settings, default_model_path
from toolrouting._serve import serve_app

QUESTION = "What does the latch on the storage-room door do?"
RESULTS = {
    "search": "M1: the latch on the storage-room door",
    "read": "The latch keeps the door shut in a draught.",
}


async def conversation(
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
                model="m", messages=messages, tools=TOOLS, tool_choice="required", temperature=0
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


async def measure(upstream: str, steps: int) -> None:
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
                    seen = await conversation(url, steps, verbatim, timings)
                    for step, (prompt, cached) in enumerate(seen, 1):
                        name = "verbatim" if verbatim else "rewritten"
                        print(f"{name:10s}  {step:8d}  {prompt:13d}  {cached:14d}  {cached / prompt:5.0%}")
        finally:
            await backend.aclose()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    with local_server("llama-server", default_model_path(), 2, 2048) as upstream:
        asyncio.run(measure(upstream, args.steps))


if __name__ == "__main__":
    main()
