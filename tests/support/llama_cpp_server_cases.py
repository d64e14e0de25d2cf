"""The questions and caps the tests ask a real ``python -m llama_cpp.server`` with, sync and async."""

from __future__ import annotations

from typing import Any

from support.model import guaranteed_cap
from toolrouting import route_schema, route_tool_names
from toolrouting._backends.base import Message

TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "search",
            "description": "Search the documentation for a phrase.",
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
            "name": "read_file",
            "description": "Read a file of the project by its path.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "maxLength": 40}},
                "required": ["path"],
            },
        },
    },
]
NAMES = route_tool_names(TOOLS)
SYSTEM: Message = {
    "role": "system",
    "content": "Choose the next action: call search or read_file, or answer none when no tool is needed.",
}
PROMPTS = [
    "Search the documentation for llama grammars.",
    "Read the file README.md.",
    "Hello! How are you today?",
]
#: The routing cap in these tests: one token more than the longest action the grammar allows.
ROUTE_CAP = guaranteed_cap(route_schema(TOOLS))
#: The backend's own cap, which routing clones must not change.
OWN_CAP = 48


def ask(prompt: str) -> list[Message]:
    return [SYSTEM, {"role": "user", "content": prompt}]
