"""The corpus of realistic catalogues (tests/catalogues/ and a 200-tool one built here) and its
invalid actions, shared by the route schema's, the grammar's and the embedded backend's tests."""

from __future__ import annotations

import json
from typing import Any

from support.paths import TESTS
from toolrouting import tools_from

CATALOGUES = TESTS / "catalogues"


COPIES_IN_MANY = 200


def _compact(value: Any) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _load(name: str) -> tuple[list[dict[str, Any]], list[str]]:
    data = json.loads((CATALOGUES / f"{name}.json").read_text())
    return [dict(tool) for tool in tools_from(data)], list(data["valid"])


FILES = sorted(path.stem for path in CATALOGUES.glob("*.json"))


def _many(count: int) -> tuple[list[dict[str, Any]], list[str]]:
    """``count`` tools cycled from every catalogue, renamed ``NAME_K``; their valid actions renamed too."""
    sources = [_load(name) for name in FILES]
    pool = [tool for tools, _ in sources for tool in tools]
    tools: list[dict[str, Any]] = []
    for k in range(count):
        tool = json.loads(json.dumps(pool[k % len(pool)]))
        tool["function"]["name"] = f"{tool['function']['name']}_{k}"
        tools.append(tool)
    valid = []
    for k in (0, len(pool) - 1, count - 1):
        base = pool[k % len(pool)]["function"]["name"]
        for _, actions in sources:
            for action in actions:
                value = json.loads(action)
                if value["tool"] == base:
                    value["tool"] = f"{base}_{k}"
                    valid.append(_compact(value))
    return tools, [*valid, '{"tool":"none"}']


CASES = {name: _load(name) for name in FILES}
CASES["many_200"] = _many(COPIES_IN_MANY)


def _invalid(tools: list[dict[str, Any]], valid: list[str]) -> dict[str, str]:
    """Actions no route allows, whatever the tools' parameters."""
    action = json.loads(next(a for a in valid if json.loads(a)["tool"] != "none"))
    name = action["tool"]
    extra = {**action, "reason": "because"}
    return {
        "unknown tool": _compact({"tool": "no_such_tool", "arguments": {}}),
        "none with arguments": '{"tool":"none","arguments":{}}',
        "none with another key": '{"tool":"none","why":"done"}',
        "extra top-level key": _compact(extra),
        "arguments a string": _compact({"tool": name, "arguments": "path=/tmp"}),
        "arguments an array": _compact({"tool": name, "arguments": [1]}),
        "arguments null": _compact({"tool": name, "arguments": None}),
        "no arguments": _compact({"tool": name}),
        "prose": "Sure! Let me look that up.",
        "two actions": '{"tool":"none"}{"tool":"none"}',
    }
