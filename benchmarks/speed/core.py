"""The routing core against its baselines, side by side in one run.

    .venv/bin/python -m benchmarks.speed.core

parse_route against bare json.loads and against json.loads plus a reused jsonschema
validator, for a 60-byte action and one with 10 KB of arguments; route_schema for 10, 100
and 1,000 tools. Ratios, not absolute times, are what carries from machine to machine.
"""

from __future__ import annotations

import functools
import json
import time
import timeit
from collections.abc import Callable
from typing import Any

from jsonschema import Draft202012Validator

from toolrouting import parse_route, route_schema, route_tool_names


def catalogue(size: int) -> list[dict[str, Any]]:
    return [
        {
            "type": "function",
            "function": {
                "name": f"tool_{i}",
                "description": f"Tool number {i}.",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}},
                    "required": ["query"],
                },
            },
        }
        for i in range(size)
    ]


def per_call(fn: Callable[[], object], repeat: int = 7) -> float:
    """CPU seconds per call, the best of ``repeat`` runs: CPU time and the minimum, since the
    machines are shared and other work only ever adds to a run's time."""
    timer = timeit.Timer(fn, timer=time.process_time)
    number, _ = timer.autorange()
    return min(t / number for t in timer.repeat(repeat, number))


def main() -> None:
    tools = catalogue(10)
    names = route_tool_names(tools)
    validator = Draft202012Validator(route_schema(tools))
    small = '{"tool":"tool_3","arguments":{"query":"the latch on the door"}}'
    large = json.dumps({"tool": "tool_3", "arguments": {"query": "x" * 10_000, "limit": 5}})

    def validated(text: str) -> None:
        validator.validate(json.loads(text))

    print(f"parse_route ({len(small)}-byte and {len(large) // 1000} KB actions, 10-tool catalogue)")
    columns = ("reply", "json.loads", "parse_route", "loads+jsonschema", "vs loads", "jsonschema/ours")
    print("{:>10} {:>12} {:>12} {:>17} {:>9} {:>16}".format(*columns))
    for label, text in (("60 B", small), ("10 KB", large)):
        assert parse_route(text, names).ok
        bare = per_call(functools.partial(json.loads, text))
        ours = per_call(functools.partial(parse_route, text, names))
        schema = per_call(functools.partial(validated, text))
        print(
            f"{label:>10} {bare * 1e6:>10.2f}us {ours * 1e6:>10.2f}us {schema * 1e6:>15.2f}us"
            f" {ours / bare:>8.2f}x {schema / ours:>15.1f}x"
        )

    print("\nroute_schema, beside json.loads of its own output (the cost of building that many objects)")
    print(
        "{:>10} {:>12} {:>12} {:>14} {:>10} {:>10}".format(
            "tools", "route_schema", "per tool", "loads(output)", "ratio", "bytes"
        )
    )
    for size in (10, 100, 1000):
        tools = catalogue(size)
        output = json.dumps(route_schema(tools))
        seconds = per_call(functools.partial(route_schema, tools), repeat=5)
        floor = per_call(functools.partial(json.loads, output), repeat=5)
        print(
            f"{size:>10} {seconds * 1e3:>10.3f}ms {seconds / size * 1e6:>10.2f}us {floor * 1e3:>12.3f}ms"
            f" {seconds / floor:>9.1f}x {len(output):>10}"
        )


if __name__ == "__main__":
    main()
