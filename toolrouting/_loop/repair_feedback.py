"""The repair feedback: the user message that answers a reply that is no valid action.

It names what was wrong and lists every valid shape; resuming a transcript recognises a repair
by its first and last words (:func:`is_repair_message`), so they are worded here once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._limits import REPAIR_SHAPE_ARGUMENTS
from .._names import NONE_TOOL

__all__ = ["REPAIR_LEAD", "is_repair_message", "repair_message", "truncated_problem"]

#: How every repair message begins; resuming a transcript recognises repairs by it.
REPAIR_LEAD = "Your last reply is not a valid action: "

_HANDOFF = json.dumps({"tool": NONE_TOOL})


def repair_message(
    problem: str, tools: Sequence[Mapping[str, Any]], *, thought: bool = False, max_calls: int = 1
) -> str:
    """The user message that answers a refused reply: what was wrong, then every valid shape
    (with the ``"thought"`` the route demands first, when it has one), and with ``max_calls``
    above 1 that an array of tool calls is one too."""
    lead = '"thought": "...", ' if thought else ""
    shapes = ["{" + lead + _shape(tool)[1:] for tool in tools]
    shapes.append("{" + lead + f"{_HANDOFF[1:]} when no tool call is needed")
    lines = "\n".join(shapes)
    several = (
        f"Or, to make 2 to {max_calls} tool calls at once, a JSON array of those calls, without none.\n"
        if max_calls > 1 and tools
        else ""
    )
    return (
        f"{REPAIR_LEAD}{problem}.\n"
        f"Reply with exactly one JSON object and nothing else, one of:\n{lines}\n"
        f"{several}Fix the reply and try again."
    )


def is_repair_message(text: str) -> bool:
    """Whether ``text`` is a message :func:`repair_message` wrote."""
    return text.startswith(REPAIR_LEAD) and text.endswith("Fix the reply and try again.")


def truncated_problem(cap: int) -> str:
    """The problem of a reply cut off at its completion cap, which is never dispatched."""
    return f"it was cut off at the completion cap of {cap} tokens before the action was complete"


def _shape(tool: Mapping[str, Any]) -> str:
    function = tool["function"]
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    arguments = ", ".join(f"{json.dumps(name)}: ..." for name in list(properties)[:REPAIR_SHAPE_ARGUMENTS])
    return f'{{"tool": {json.dumps(function["name"])}, "arguments": {{{arguments}}}}}'
