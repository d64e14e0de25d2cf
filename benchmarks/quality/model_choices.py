"""What the model chooses, measured across seeds and thread counts rather than asserted in tests.

Run: .venv/bin/python -m benchmarks.quality.model_choices  (about 5 minutes on 2 cores)

The grammar fixes the shape of a routed reply; which action a model writes, and whether it
ends before a cap, differ with the sampling seed, the thread count and the CPU. The tests
assert only the guarantees; this measures the rest on the embedded default model, for
seeds 0 to 4 and 1 and 2 threads, sampling at temperature 0.8 (as the tests do) and greedy:

1. Six routing requests, each under a catalogue that leaves its strings and arrays unbounded
   at a cap of 64 tokens (what a test once assumed to be enough), and under the same catalogue
   with ``maxLength``/``maxItems`` at a cap its grammar cannot reach (512 for these bounds):
   how many replies run to the cap, and which actions are chosen.
2. The demo run (``RoutingLoop`` over the sample notes, the README's question): how it ends,
   after how many rounds, and which tools it called.
"""

from __future__ import annotations

import collections
import copy
import sys
from typing import Any

from benchmarks.common.corpus import MEMORY_TOOLS, openai_tool
from toolrouting import (
    EmbeddedLlama,
    Message,
    RoutingLoop,
    Settings,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting.demo import SEARCH_PROMPT, MemoryStore

SEEDS = range(5)
THREADS = (1, 2)
TEMPERATURES = (0.8, 0.0)
UNBOUNDED_CAP = 64
BOUNDED_CAP = 512
QUESTION = "What does the latch on the storage-room door do?"


UNBOUNDED = [
    *MEMORY_TOOLS,
    openai_tool("weather_lookup", "Today's weather in a city.", {"city": {"type": "string"}}),
]


def _bounded(tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    bounded = copy.deepcopy(tools)
    for tool in bounded:
        for value in tool["function"]["parameters"]["properties"].values():
            if value["type"] == "string":
                value["maxLength"] = 40
            else:
                value["maxItems"] = 4
                value["items"]["maxLength"] = 8
    return bounded


REQUESTS = [
    "What did I write about the latch on the storage-room door?",
    "Open memories M1 and M3.",
    "Thanks, that is all I needed.",
    "Is it raining in Lisbon?",
    "Read every memory you have, one by one.",
    "Search for everything about the generator, the stove and the radio.",
]


def _conversation(tools: list[dict[str, Any]], prompt: str) -> list[Message]:
    lines = ['Choose the next action: one JSON object, a tool call or {"tool": "none"}.', "Tools:"]
    lines += [f"- {t['function']['name']}: {t['function']['description']}" for t in tools]
    return [{"role": "system", "content": "\n".join(lines)}, {"role": "user", "content": prompt}]


def decisions(
    backend: EmbeddedLlama, tools: list[dict[str, Any]], cap: int
) -> tuple[int, int, collections.Counter[str]]:
    """Replies that ran to the cap, replies in all, and the actions chosen (``cut`` for a cut reply)."""
    routed = routed_backend(backend, route_schema(tools), cap)
    names = route_tool_names(tools)
    cut, chosen = 0, collections.Counter[str]()
    for prompt in REQUESTS:
        completion = routed.complete(_conversation(tools, prompt))
        route = parse_route(completion.text, names)
        cut += completion.truncated
        chosen[route.tool if route.ok and route.tool else "cut"] += 1
    return cut, len(REQUESTS), chosen


def demo_run(backend: EmbeddedLlama) -> str:
    conversation: list[Message] = [
        {"role": "system", "content": SEARCH_PROMPT},
        {"role": "user", "content": QUESTION},
    ]
    with MemoryStore.sample() as store:
        result = RoutingLoop(backend, store, cap=BOUNDED_CAP).run(conversation)
    tools = " ".join(action.tool for action in result.actions)
    return f"{result.reason} after {result.rounds} rounds: {tools}"


def main() -> int:
    print("| temperature | seed | threads | unbounded, cap 64: cut | bounded, cap 512: cut | demo run |")
    print("|---:|---:|---:|---:|---:|---|")
    totals: dict[str, collections.Counter[str]] = {
        "unbounded": collections.Counter(),
        "bounded": collections.Counter(),
    }
    ends: collections.Counter[str] = collections.Counter()
    for temperature in TEMPERATURES:
        for threads in THREADS:
            for seed in SEEDS if temperature else SEEDS[:1]:
                settings = Settings(max_tokens=BOUNDED_CAP, temperature=temperature, seed=seed)
                with EmbeddedLlama(settings=settings, n_threads=threads, seed=seed) as backend:
                    loose = decisions(backend, UNBOUNDED, UNBOUNDED_CAP)
                    tight = decisions(backend, _bounded(UNBOUNDED), BOUNDED_CAP)
                    demo = demo_run(backend)
                totals["unbounded"].update(loose[2])
                totals["bounded"].update(tight[2])
                ends[demo.split()[0]] += 1
                print(
                    f"| {temperature:g} | {seed} | {threads} | {loose[0]}/{loose[1]} | {tight[0]}/{tight[1]} "
                    f"| {demo} |",
                    flush=True,
                )
    print()
    for kind, counts in totals.items():
        print(f"{kind} actions: " + ", ".join(f"{tool} {count}" for tool, count in counts.most_common()))
    print("demo ends: " + ", ".join(f"{reason} {count}" for reason, count in ends.most_common()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
