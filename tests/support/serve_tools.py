"""The catalogue the serve core's tests send, in chat completions' shape."""

from __future__ import annotations

from toolrouting import FunctionTools


def search(query: str) -> str:
    """Search the notes."""
    return f"M1: a note about {query}"


def read(ids: list[str]) -> str:
    """Read notes by id."""
    return "the latch holds the door"


TOOLS = FunctionTools(search, read).tools_for_llm()
