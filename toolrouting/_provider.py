"""The tool seam: a catalogue to offer and one method to call a tool by name."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

from ._limits import MAX_TOOL_ERROR_CHARS

__all__ = ["ToolOutput", "ToolProvider", "exception_text", "shortened"]


@dataclasses.dataclass(frozen=True)
class ToolOutput:
    """What a tool answered: its content as text, and whether that content reports an error."""

    content: str
    is_error: bool = False


@runtime_checkable
class ToolProvider(Protocol):
    """The tools a routing loop may call.

    ``tools_for_llm()`` is read again before every routing request, so a provider may
    narrow its catalogue as a run goes (an ``enum`` of the ids it has handed out, say).
    """

    def tools_for_llm(self) -> list[dict[str, Any]]: ...

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput: ...


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
