"""The user message that answers a routed call, and its header, both ways."""

from __future__ import annotations

import dataclasses
import re

from ._json import shown
from ._limits import SHOWN_VALUE_CHARS
from ._names import tool_name_problem

__all__ = [
    "RoutedResult",
    "read_routed_result",
    "routed_call_id",
    "routed_result_header",
    "routed_result_text",
    "split_routed_result",
]

_HEADER = re.compile(r"Tool (result|error) for (\S+) \(call (route-[1-9][0-9]*)\):\n")
_CALL_ID = re.compile(r"route-[1-9][0-9]*")


def routed_call_id(round: int) -> str:
    """The id of the call made in ``round`` (1-based): ``route-1``, ``route-2``, ...

    One action per round makes it unique within a run and a pure function of the round,
    so a replayed run's bytes are identical to the original's.
    """
    if isinstance(round, bool) or not isinstance(round, int):
        raise TypeError(f"a round is an int, not {type(round).__name__}")
    if round < 1:
        raise ValueError(f"rounds count from 1, not {round}")
    return f"route-{round}"


def routed_result_header(tool: str, call_id: str, *, is_error: bool = False) -> str:
    """The first line of a result message: ``Tool result for TOOL (call ID):``."""
    problem = tool_name_problem(tool)
    if problem is not None:
        raise ValueError(f"cannot head a result: {problem}")
    if not isinstance(call_id, str) or not _CALL_ID.fullmatch(call_id):
        raise ValueError(
            f"a call id looks like route-N (see routed_call_id), not {shown(call_id, SHOWN_VALUE_CHARS)}"
        )
    return f"Tool {'error' if is_error else 'result'} for {tool} (call {call_id}):"


def routed_result_text(tool: str, call_id: str, content: str, *, is_error: bool = False) -> str:
    """The whole user message for a tool's result: the header, a newline, the content."""
    if not isinstance(content, str):
        raise TypeError(f"a tool's content is text; render it first (got {type(content).__name__})")
    return f"{routed_result_header(tool, call_id, is_error=is_error)}\n{content}"


@dataclasses.dataclass(frozen=True, kw_only=True)
class RoutedResult:
    """A result message read back: its header's parts and its content."""

    header: str
    tool: str
    call_id: str
    is_error: bool
    content: str


def read_routed_result(text: str) -> RoutedResult | None:
    """A result message's parts, or ``None`` for any other text.

    Only what :func:`routed_result_header` writes, then a newline, is recognised; header-like
    lines inside the content stay content.
    """
    if not isinstance(text, str):
        return None
    match = _HEADER.match(text)
    if match is None or tool_name_problem(match.group(2)) is not None:
        return None
    return RoutedResult(
        header=match.group(0)[:-1],
        tool=match.group(2),
        call_id=match.group(3),
        is_error=match.group(1) == "error",
        content=text[match.end() :],
    )


def split_routed_result(text: str) -> tuple[str, str] | None:
    """``(header, content)`` of a result message, or ``None`` for any other text (see
    :func:`read_routed_result`)."""
    result = read_routed_result(text)
    return None if result is None else (result.header, result.content)
