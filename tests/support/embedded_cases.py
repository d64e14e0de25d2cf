"""The embedded backend's cases on the real default model, shared by its tests: the requests, the
conversation, the sampling and the model loaded once for a module."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS
from toolrouting import Message, Settings
from toolrouting._backends.embedded.backend import EmbeddedLlama

MEMORY: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "memory_search",
            "description": "Search the memories for a phrase.",
            "parameters": {
                "type": "object",
                "properties": {"query": {"type": "string", "maxLength": 40}},
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
                "properties": {
                    "ids": {"type": "array", "items": {"type": "string", "maxLength": 8}, "maxItems": 4}
                },
                "required": ["ids"],
            },
        },
    },
]

TRAVEL: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "weather_lookup",
            "description": "Today's weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "maxLength": 40}},
                "required": ["city"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "unit_convert",
            "description": "Convert a quantity between units.",
            "parameters": {
                "type": "object",
                "properties": {
                    "value": {"type": "number"},
                    "from_unit": {"type": "string", "enum": ["km", "mi", "kg", "lb"]},
                    "to_unit": {"type": "string", "enum": ["km", "mi", "kg", "lb"]},
                },
                "required": ["value", "from_unit", "to_unit"],
            },
        },
    },
    {"type": "function", "function": {"name": "clock", "description": "The current time."}},
]

REQUESTS = [
    (MEMORY, "What did I write about the latch on the storage-room door?"),
    (MEMORY, "Open memories M1 and M3."),
    (MEMORY, "Thanks, that is all I needed."),
    (TRAVEL, "Is it raining in Lisbon?"),
    (TRAVEL, "How many miles is 42 km?"),
    (TRAVEL, "What time is it?"),
]


def conversation(tools: Sequence[Mapping[str, Any]], prompt: str) -> list[Message]:
    """The routing request: the action format and the tools, then the user's words."""
    lines = [
        "You choose the next action for the user's request. Answer with one JSON object and nothing else:",
        '{"tool": NAME, "arguments": {...}} to call a tool, or {"tool": "none"} when no tool is needed.',
        "Tools:",
    ]
    for tool in tools:
        function = tool["function"]
        parameters = json.dumps(function.get("parameters", {}))
        lines.append(f"- {function['name']}: {function.get('description', '')} Arguments: {parameters}")
    return [{"role": "system", "content": "\n".join(lines)}, {"role": "user", "content": prompt}]


#: What every model in this module samples with (see tests/support/model.py).
SAMPLING_CAP = 128
SAMPLING = Settings(max_tokens=SAMPLING_CAP, temperature=TEST_TEMPERATURE, seed=TEST_SEED)


def load(settings: Settings = SAMPLING) -> EmbeddedLlama:
    return EmbeddedLlama(settings=settings, n_threads=TEST_THREADS, seed=TEST_SEED, forced_tokens=False)


@pytest.fixture(scope="module")
def backend() -> Iterator[EmbeddedLlama]:
    with load() as loaded:
        yield loaded
