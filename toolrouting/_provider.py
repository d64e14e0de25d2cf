"""The tool seam: a catalogue to offer, one method to call a tool by name, and an optional restore."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

from ._catalogue_checks import shown_name
from ._limits import MAX_TOOL_ERROR_CHARS, SHOWN_LIST_CHARS

__all__ = [
    "AsyncToolProvider",
    "RecordedCall",
    "RestorableToolProvider",
    "ToolOutput",
    "ToolProvider",
    "cut_middle",
    "exception_text",
    "shortened",
    "unknown_tool",
]


@dataclasses.dataclass(frozen=True)
class ToolOutput:
    """What a tool answered: its content as text, and whether that content reports an error.

    The content is the one positional field; the flag is keyword-only, so a call site never
    reads as a bare ``True``.
    """

    content: str
    _: dataclasses.KW_ONLY
    is_error: bool = False


#: One call a transcript shows was run: the tool's name, its arguments, what it answered.
RecordedCall = tuple[str, dict[str, Any], ToolOutput]


@runtime_checkable
class ToolProvider(Protocol):
    """The tools a routing loop may call.

    ``tools_for_llm()`` is read again before every routing request, so a provider may
    narrow its catalogue as a run goes (an ``enum`` of the ids it has handed out, say).
    """

    def tools_for_llm(self) -> list[dict[str, Any]]: ...

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput: ...


@runtime_checkable
class AsyncToolProvider(Protocol):
    """The tools an :class:`AsyncRoutingLoop` may await.

    ``acall`` is the coroutine twin of :meth:`ToolProvider.call`, under its own name so that one
    provider can serve both loops (``FunctionTools`` and ``MCPTools`` do). The catalogue read
    stays synchronous: it happens before every routing request and is a read of the provider's
    own state, which an async provider fetches in ``acall`` or when it is made.
    """

    def tools_for_llm(self) -> list[dict[str, Any]]: ...

    async def acall(self, name: str, arguments: dict[str, Any]) -> ToolOutput: ...


@runtime_checkable
class RestorableToolProvider(ToolProvider, Protocol):
    """A tool provider whose state grows with its calls (ids handed out, say).

    When a run is resumed from its transcript, ``restore(calls)`` receives every call the
    transcript shows was run, in order, before the first new round, so the provider offers
    what it offered before the interruption.
    """

    def restore(self, calls: Sequence[RecordedCall]) -> None: ...


def exception_text(error: BaseException) -> str:
    """``Type: message`` of an exception, bounded; a message that cannot be rendered is said so."""
    try:
        message = str(error)
    except Exception:  # a broken __str__ must not turn a tool's failure into the loop's
        message = "(its message could not be rendered)"
    return shortened(f"{type(error).__name__}: {message}")


def shortened(text: str) -> str:
    """``text`` cut to ``MAX_TOOL_ERROR_CHARS``: a tool's error may quote what the model sent."""
    return text if len(text) <= MAX_TOOL_ERROR_CHARS else text[: MAX_TOOL_ERROR_CHARS - 1] + "…"


def cut_middle(text: str, limit: int) -> str:
    """``text`` if it has at most ``limit`` characters, else its head and tail around a marker.

    A long result's end often holds what its start does not (a log's last lines, a list's
    count), so both are kept; the marker says how much was cut, so the model knows it is
    reading a part. The result is never longer than ``limit`` (nor than the marker, when the
    limit is too small to hold one).
    """
    if len(text) <= limit:
        return text
    cut = len(text)
    while True:  # the marker's digits depend on how much it cuts
        marker = f"\n[... {cut} characters cut ...]\n"
        keep = max(limit - len(marker), 0)
        if len(text) - keep == cut:
            break
        cut = len(text) - keep
    head = (keep + 1) // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


def unknown_tool(name: str, offered: Iterable[str]) -> ToolOutput:
    """The error result for a call of a tool no one offers: the name, and the names there are."""
    listed = ", ".join(offered)[:SHOWN_LIST_CHARS]
    return ToolOutput(f"there is no tool named {shown_name(name)}; the tools are: {listed}", is_error=True)
