"""What the step machine asks its driver to do: the only ways a run touches the world.

The machine (``machine``) is a generator that yields one of these and is sent back the answer:
a :class:`Request` gets the :class:`Completion`, a :class:`CallTool` gets what the provider
returned, the others get ``None``. An exception the backend or the tool raised is thrown into
the machine at the same point (``generator.throw``), where it is retried, reported to the model
or let through exactly as when the loop performed the call itself.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .._backends import Message
from .events import Event

__all__ = ["CallTool", "Commit", "Effect", "Emit", "Request", "Wait"]


@dataclasses.dataclass(frozen=True, slots=True)
class Request:
    """Ask ``backend`` (the routed clone, or the caller's own for the answer) to complete ``messages``."""

    backend: Any
    messages: list[Message]


@dataclasses.dataclass(frozen=True, slots=True)
class CallTool:
    """Call the provider's ``tool`` with ``arguments`` (a copy the provider may keep or change)."""

    tool: str
    arguments: dict[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Commit:
    """Append ``messages`` to the transcript in one write; the run holds them once this returns."""

    messages: tuple[Message, ...]


@dataclasses.dataclass(frozen=True, slots=True)
class Wait:
    """Wait ``seconds`` before a retry."""

    seconds: float


@dataclasses.dataclass(frozen=True, slots=True)
class Emit:
    """Tell the caller ``event`` (``on_event``, and the next item of ``iter_run``)."""

    event: Event


Effect = Request | CallTool | Commit | Wait | Emit
