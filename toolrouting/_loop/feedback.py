"""Everything the loop itself tells the model: repairs, limits and tool failures, worded once."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from .._limits import REPAIR_SHAPE_ARGUMENTS
from .._names import NONE_TOOL
from .._provider import ToolOutput, exception_text
from .result import LimitName

__all__ = [
    "ANSWER_PROMPT",
    "EARLIER_ANSWER_PROMPT",
    "REPAIR_LEAD",
    "bad_tool_output",
    "is_repair_message",
    "limit_notice",
    "repair_message",
    "tool_exception",
    "truncated_problem",
]

#: How every repair message begins; resuming a transcript recognises repairs by it.
REPAIR_LEAD = "Your last reply is not a valid action: "

_HANDOFF = json.dumps({"tool": NONE_TOOL})

#: How the answer request after the handoff ends, after the question (see ``answer``). Without
#: it a small model answers the last tool result with one more action, in the shape it has been
#: writing.
ANSWER_PROMPT = "Answer the question in plain words, from what was found above."

#: The answer prompt of earlier versions: transcripts written before the answer request existed
#: hold it as a message of its own, and later ones end their answer request with it.
EARLIER_ANSWER_PROMPT = "Now answer the question in plain words, from the tool results above."


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


def limit_notice(limit: LimitName, value: int, runs: int = 0) -> str:
    """The content of the error result that answers an action tripping ``limit`` (set to ``value``)."""
    if limit == "max_rounds":
        why = f"this run has used all of its {value} rounds (max_rounds)"
    else:
        why = (
            f"this exact call has already run {runs} time{'s' if runs != 1 else ''}, "
            f"and max_repeats allows {value} repeat{'s' if value != 1 else ''}; its result is above"
        )
    return f"Not run: {why}. No more tools can be called: reply {_HANDOFF}."


def tool_exception(error: BaseException) -> str:
    """The content of the error result for a tool that raised."""
    return f"the tool failed: {exception_text(error)}"


def bad_tool_output(value: object) -> str:
    """The content of the error result for a tool that returned something other than a ToolOutput
    of text, or one whose ``is_error`` is not a bool."""
    if isinstance(value, ToolOutput) and not isinstance(value.content, str):
        return f"the tool returned a ToolOutput whose content is {type(value.content).__name__}, not str"
    if isinstance(value, ToolOutput):
        return f"the tool returned a ToolOutput whose is_error is {type(value.is_error).__name__}, not bool"
    return f"the tool returned {type(value).__name__}, not a ToolOutput"


def _shape(tool: Mapping[str, Any]) -> str:
    function = tool["function"]
    parameters = function.get("parameters") or {}
    properties = parameters.get("properties") or {}
    arguments = ", ".join(f"{json.dumps(name)}: ..." for name in list(properties)[:REPAIR_SHAPE_ARGUMENTS])
    return f'{{"tool": {json.dumps(function["name"])}, "arguments": {{{arguments}}}}}'
