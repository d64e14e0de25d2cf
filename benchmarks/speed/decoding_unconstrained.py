"""Routed decisions against the backend's own budget, with no schema.

``unconstrained [--decoding forced|grammar]``: on the embedded default model, each of 8 fixed
prompts asked twice with the same conversation: through ``routed_backend`` (the route schema,
cap 512) and through the backend itself (no schema, its own budget of 1024 tokens). The
median and worst case of each, and the share of replies ``parse_route`` accepts. The
backend decodes a schema with forced tokens (its default) or llama.cpp's grammar sampler.

A way of decoding.py (``python -m benchmarks.speed.decoding unconstrained``).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import statistics
from collections.abc import Sequence

from benchmarks.common.corpus import MEMORY_TOOLS
from benchmarks.speed.decoding_core import ROUTING_CAP, routed, timed
from toolrouting import (
    Backend,
    EmbeddedLlama,
    Message,
    Settings,
    parse_route,
    route_tool_names,
    routing_cap,
)

OWN_BUDGET = 1024


#: The catalogue of the prompts: a search and a read of memories, unbounded.
NOTES_CATALOGUE = MEMORY_TOOLS
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

Row = tuple[int, float, bool, bool, str]


def conversation(prompt: str) -> list[Message]:
    lines = [
        "You choose the next action for the user's request. Answer with one JSON object and nothing else:",
        '{"tool": NAME, "arguments": {...}} to call a tool, or {"tool": "none"} when no tool is needed.',
        "Tools:",
    ]
    for tool in NOTES_CATALOGUE:
        function = tool["function"]
        lines.append(
            f"- {function['name']}: {function['description']} Arguments: {json.dumps(function['parameters'])}"
        )
    return [{"role": "system", "content": "\n".join(lines)}, {"role": "user", "content": prompt}]


def prompt_rows(backend: Backend, names: Sequence[str]) -> list[Row]:
    """Per prompt: tokens, seconds, accepted by parse_route, truncated, the action or the reply's start."""
    rows = []
    for prompt in PROMPTS:
        seconds, completion = timed(functools.partial(backend.complete, conversation(prompt)))
        route = parse_route(completion.text, names)
        shown = (
            route.tool if route.ok and route.tool else json.dumps(completion.text[:36]).replace("|", "\\|")
        )
        rows.append((completion.usage.completion_tokens, seconds, route.ok, completion.truncated, shown))
    return rows


def row_summary(rows: list[Row]) -> list[str]:
    tokens = [row[0] for row in rows]
    seconds = [row[1] for row in rows]
    return [
        f"{statistics.median(tokens):g}",
        f"{max(tokens)}",
        f"{statistics.median(seconds):.2f}",
        f"{max(seconds):.2f}",
        f"{sum(row[2] for row in rows)}/{len(rows)}",
        f"{sum(row[3] for row in rows)}/{len(rows)}",
    ]


def unconstrained(args: argparse.Namespace) -> None:
    names = route_tool_names(NOTES_CATALOGUE)
    forced = args.decoding == "forced"
    with EmbeddedLlama(settings=Settings(max_tokens=OWN_BUDGET), forced_tokens=forced) as backend:
        constrained = routed(backend, NOTES_CATALOGUE, routing_cap(backend, ROUTING_CAP))
        # Loads pages and compiles the grammar outside the timings.
        constrained.complete(conversation("warm-up"))
        routed_rows = prompt_rows(constrained, names)
        free_rows = prompt_rows(backend, names)
        model = backend.model_path.name
    labels = [
        "completion tokens, median",
        "completion tokens, worst",
        "seconds per decision, median",
        "seconds per decision, worst",
        "replies parse_route accepts",
        "replies stopped at the cap",
    ]
    decoder = "forced tokens" if forced else "grammar sampler"
    print(
        f"{model}, {decoder}, {len(PROMPTS)} prompts, catalogue {', '.join(names)}, {os.cpu_count()} cores\n"
    )
    print(f"| | routed (schema, cap {ROUTING_CAP}) | unconstrained (no schema, budget {OWN_BUDGET}) |")
    print("|---|---:|---:|")
    for label, routed_cell, free_cell in zip(
        labels, row_summary(routed_rows), row_summary(free_rows), strict=True
    ):
        print(f"| {label} | {routed_cell} | {free_cell} |")
    print("\n| prompt | routed: tokens, action | unconstrained: tokens, reply begins |")
    print("|---|---|---|")
    for prompt, routed_row, free_row in zip(PROMPTS, routed_rows, free_rows, strict=True):
        print(f"| {prompt[:48]} | {routed_row[0]}, {routed_row[4]} | {free_row[0]}, {free_row[4]} |")
