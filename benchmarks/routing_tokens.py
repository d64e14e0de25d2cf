"""Tokens and latency per routing decision: routed (schema and cap) against unconstrained.

Run: .venv/bin/python benchmarks/routing_tokens.py  (EmbeddedLlama sets OMP_WAIT_POLICY=passive itself)

On the embedded default model (SmolLM2-135M-Instruct), each prompt is asked twice with the
same conversation: through ``routed_backend`` (the route schema as a grammar, cap 512), and
through the backend itself (no schema, its own budget of 1024 tokens). Prints a Markdown
table of the median and worst case of each, and the share of replies ``parse_route`` accepts.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

from toolrouting import (
    Backend,
    Message,
    Settings,
    parse_route,
    route_schema,
    route_tool_names,
    routed_backend,
    routing_cap,
)
from toolrouting._backends.embedded import EmbeddedLlama

OWN_BUDGET = 1024
ROUTING_CAP = 512

CATALOGUE: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "memory_search",
            "description": "Search the memories for a phrase.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string"}},
                "required": ["query"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "memory_read",
            "description": "Read memories by their ids.",
            "parameters": {
                "type": "object",
                "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
                "required": ["ids"],
            },
        },
    },
]

PROMPTS = [
    "What did I write about the latch on the storage-room door?",
    "Open memories M1 and M3.",
    "Find anything about the blue notebook.",
    "Read memory M7, please.",
    "Do I have notes on the garden irrigation schedule?",
    "Thanks, that is all I needed.",
    "Summarise what you know so far.",
    "Search my memories for 'quarterly report' and then read the first result.",
]


def conversation(prompt: str) -> list[Message]:
    lines = [
        "You choose the next action for the user's request. Answer with one JSON object and nothing else:",
        '{"tool": NAME, "arguments": {...}} to call a tool, or {"tool": "none"} when no tool is needed.',
        "Tools:",
    ]
    for tool in CATALOGUE:
        function = tool["function"]
        lines.append(
            f"- {function['name']}: {function['description']} Arguments: {json.dumps(function['parameters'])}"
        )
    return [{"role": "system", "content": "\n".join(lines)}, {"role": "user", "content": prompt}]


Row = tuple[int, float, bool, bool, str]


def measure(backend: Backend, names: Sequence[str]) -> list[Row]:
    """Per prompt: tokens, seconds, accepted by parse_route, truncated, the action or the reply's start."""
    rows = []
    for prompt in PROMPTS:
        started = time.perf_counter()
        completion = backend.complete(conversation(prompt))
        seconds = time.perf_counter() - started
        route = parse_route(completion.text, names)
        shown = (
            route.tool if route.ok and route.tool else json.dumps(completion.text[:36]).replace("|", "\\|")
        )
        rows.append((completion.usage.completion_tokens, seconds, route.ok, completion.truncated, shown))
    return rows


def summary(rows: list[Row]) -> list[str]:
    tokens = [row[0] for row in rows]
    seconds = [row[1] for row in rows]
    accepted = sum(row[2] for row in rows)
    truncated = sum(row[3] for row in rows)
    return [
        f"{statistics.median(tokens):g}",
        f"{max(tokens)}",
        f"{statistics.median(seconds):.2f}",
        f"{max(seconds):.2f}",
        f"{accepted}/{len(rows)}",
        f"{truncated}/{len(rows)}",
    ]


def main() -> int:
    names = route_tool_names(CATALOGUE)
    with EmbeddedLlama(settings=Settings(max_tokens=OWN_BUDGET)) as backend:
        routed = routed_backend(backend, route_schema(CATALOGUE), routing_cap(backend, ROUTING_CAP))
        routed.complete(conversation("warm-up"))  # loads pages and compiles the grammar outside the timings
        routed_rows = measure(routed, names)
        free_rows = measure(backend, names)
        model = backend.model_path.name
    labels = [
        "completion tokens, median",
        "completion tokens, worst",
        "seconds per decision, median",
        "seconds per decision, worst",
        "replies parse_route accepts",
        "replies stopped at the cap",
    ]
    print(f"{model}, {len(PROMPTS)} prompts, catalogue {', '.join(names)}, {os.cpu_count()} cores\n")
    print(f"| | routed (schema, cap {ROUTING_CAP}) | unconstrained (no schema, budget {OWN_BUDGET}) |")
    print("|---|---:|---:|")
    for label, routed_cell, free_cell in zip(labels, summary(routed_rows), summary(free_rows), strict=True):
        print(f"| {label} | {routed_cell} | {free_cell} |")
    print("\n| prompt | routed: tokens, action | unconstrained: tokens, reply begins |")
    print("|---|---|---|")
    for prompt, routed_row, free_row in zip(PROMPTS, routed_rows, free_rows, strict=True):
        print(f"| {prompt[:48]} | {routed_row[0]}, {routed_row[4]} | {free_row[0]}, {free_row[4]} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
