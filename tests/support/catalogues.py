"""The conversation and the small catalogues the tests share, and the replies that act on them."""

from __future__ import annotations

import json
import unicodedata
from typing import Any

from toolrouting import Message, ToolProvider

__all__ = ["NONE", "QUESTION", "SEARCH_PARAMETERS", "declared", "fold", "lookup", "tool", "tool_names"]

#: The caller's conversation every loop test routes: a system message, then the question.
QUESTION: list[Message] = [
    {"role": "system", "content": "Answer from the notes."},
    {"role": "user", "content": "What does the latch on the storage-room door do?"},
]

#: The handoff reply.
NONE = '{"tool": "none"}'


def tool(name: str, **properties: Any) -> dict[str, Any]:
    """An OpenAI-shaped tool whose object parameters are ``properties``, all required, no others."""
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {
                "type": "object",
                "properties": properties,
                "required": list(properties),
                "additionalProperties": False,
            },
        },
    }


def tool_names(provider: ToolProvider) -> list[str]:
    """The names of the tools ``provider`` offers now, in its order."""
    return [tool["function"]["name"] for tool in provider.tools_for_llm()]


def fold(name: str) -> str:
    """A tool name as names are compared: two names that fold alike are one name."""
    return unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold())


def lookup(word: str) -> str:
    """The model's reply that calls ``lookup`` for ``word``."""
    return json.dumps({"tool": "lookup", "arguments": {"word": word}})


#: The parameters of a search tool: one required string, ``query``.
SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string"}},
    "required": ["query"],
}


def declared(name: Any, description: Any = None, parameters: Any = None) -> dict[str, Any]:
    """A tools-for-llm declaration of only the fields given; a name alone offers a tool taking any object."""
    function: dict[str, Any] = {"name": name}
    if description is not None:
        function["description"] = description
    if parameters is not None:
        function["parameters"] = parameters
    return {"type": "function", "function": function}
