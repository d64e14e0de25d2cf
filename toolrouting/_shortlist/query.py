"""The query a shortlist is ranked against: what the user asked and what the tools answered."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._result_messages import read_routed_result

__all__ = ["shortlist_query"]

#: The roles whose messages a query reads: the user's, which carry the question and, in a routed
#: run, the result messages; and ``tool``, a result in the chat completions shape.
QUERY_ROLES = frozenset({"user", "tool"})


def shortlist_query(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of a conversation that a shortlist ranks tools by: each user message and tool
    result, in order, one a line.

    The system message (the catalogue itself, or the caller's rules) and the assistant's
    replies (the routes already chosen) are left out. A result message's header
    (``Tool result for NAME (call route-N):``) is dropped and its content kept, so a tool
    already called is not ranked up by its own name.
    """
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise TypeError(f"a conversation is a list of messages, not {type(messages).__name__}")
    lines = []
    for index, message in enumerate(messages):
        if not isinstance(message, Mapping):
            raise TypeError(
                f"message {index} is a mapping with a role and content, not {type(message).__name__}"
            )
        if message.get("role") not in QUERY_ROLES:
            continue
        content = message.get("content")
        if not isinstance(content, str):
            raise TypeError(f"message {index}'s content is text, not {type(content).__name__}")
        result = read_routed_result(content)
        lines.append(content if result is None else result.content)
    return "\n".join(lines)
