"""The tool seam: a catalogue to offer and one method to call a tool by name."""

from __future__ import annotations

import dataclasses
from typing import Any, Protocol, runtime_checkable

__all__ = ["ToolOutput", "ToolProvider"]


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
