"""The backend seam: one method over a conversation, plus the settings it carries."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal, Protocol, Self, TypedDict, runtime_checkable

from .._settings import Settings

__all__ = ["ROLES", "Backend", "Completion", "Message", "Usage", "is_truncated"]


class Message(TypedDict):
    """One chat message on the wire."""

    role: Literal["system", "user", "assistant"]
    content: str


#: The roles a :class:`Message` may have.
ROLES = ("system", "user", "assistant")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Usage:
    """Tokens a completion consumed, as the backend reported them (0 when it did not)."""

    prompt_tokens: int = 0
    completion_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclasses.dataclass(frozen=True, kw_only=True)
class Completion:
    """What a backend answered to one request."""

    text: str
    finish_reason: str | None = None
    """The server's reason (``stop``, ``length``, ...), ``None`` where it gave none."""
    usage: Usage = dataclasses.field(default_factory=Usage)
    truncated: bool = False
    """True when generation stopped at the completion cap: the text may be cut mid-action."""
    raw: Mapping[str, Any] | None = None
    """The server's decoded response body, for what this object does not carry."""


def is_truncated(finish_reason: str | None, completion_tokens: int, max_tokens: int | None) -> bool:
    """Whether a completion stopped at its cap: said so, or used the whole budget."""
    if finish_reason == "length":
        return True
    return max_tokens is not None and completion_tokens >= max_tokens


@runtime_checkable
class Backend(Protocol):
    """A chat model behind one method.

    ``clone(**changes)`` returns a backend with those attributes replaced (``settings``
    above all) and leaves this one untouched; ``complete`` reads ``settings`` at request
    time, so a clone's schema and cap never reach the original.
    """

    @property
    def settings(self) -> Settings: ...

    def clone(self, **changes: Any) -> Self: ...

    def complete(self, messages: Sequence[Message]) -> Completion: ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc_info: object) -> None: ...
