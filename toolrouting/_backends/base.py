"""The backend seam: one method over a conversation, plus the settings it carries.

:class:`Backend` is the seam, a protocol any object may meet; :class:`BaseBackend` is what the
shipped backends share so that none of them restates it.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal, Protocol, Self, TypedDict, runtime_checkable

from .._settings import Settings

__all__ = [
    "ROLES",
    "AsyncBackend",
    "Backend",
    "BaseBackend",
    "Completion",
    "Message",
    "Usage",
    "is_truncated",
]


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


def is_truncated(finish_reason: str | None, completion_tokens: int, cap: int | None) -> bool:
    """Whether a completion stopped at its cap: said so, or used the whole cap."""
    if finish_reason == "length":
        return True
    return cap is not None and completion_tokens >= cap


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


@runtime_checkable
class AsyncBackend(Protocol):
    """A chat model behind one coroutine, for :class:`AsyncRoutingLoop`.

    ``settings`` and ``clone(**changes)`` are as on :class:`Backend` (a clone is made without
    I/O, so ``clone`` stays synchronous); ``complete`` is awaited, and cancelling it abandons
    the request; ``aclose`` frees what the backend owns.
    """

    @property
    def settings(self) -> Settings: ...

    def clone(self, **changes: Any) -> Self: ...

    async def complete(self, messages: Sequence[Message]) -> Completion: ...

    async def aclose(self) -> None: ...


class BaseBackend:
    """What the shipped backends share: ``settings``, checked clones, ``close()``, ``with``.

    A subclass lists the keyword arguments its ``clone`` takes in ``clone_keys`` and writes
    ``complete``. A clone is a shallow copy that shares what the original owns (a loaded
    model, a connection pool, a script) without owning it: ``close()`` on a clone retires
    only the clone, on the original it also frees the shared resource (``_release``). A
    backend of your own need not subclass this: :class:`Backend` is the seam.
    """

    #: The keyword arguments ``clone`` takes; anything else is a TypeError that lists these.
    clone_keys: ClassVar[frozenset[str]] = frozenset({"settings"})

    def __init__(self, settings: Settings | None = None, *, owner: bool = True) -> None:
        self._settings = _checked_settings(Settings() if settings is None else settings)
        self._owner = owner
        self._closed = False

    @property
    def settings(self) -> Settings:
        return self._settings

    def clone(self, **changes: Any) -> Self:
        """A backend with ``changes`` applied that shares this one's resources; this one is untouched."""
        unknown = set(changes) - self.clone_keys
        if unknown:
            takes = ", ".join(sorted(self.clone_keys))
            only = "only " if len(self.clone_keys) == 1 else ""
            raise TypeError(
                f"{type(self).__name__}.clone takes {only}{takes}, not {', '.join(sorted(unknown))}"
            )
        if "settings" in changes:
            _checked_settings(changes["settings"])
        return self._clone(changes)

    def _clone(self, changes: Mapping[str, Any]) -> Self:
        """The clone itself; ``changes`` are checked against ``clone_keys`` already."""
        twin = copy.copy(self)
        twin._settings = changes.get("settings", self._settings)
        twin._owner = False
        twin._closed = False
        return twin

    def close(self) -> None:
        """Retire this backend; on the one that made the shared resource, free it for every clone."""
        if self._closed:
            return
        self._closed = True
        if self._owner:
            self._release()

    def _release(self) -> None:
        """Free what this backend owns and its clones share; the owner's first ``close()`` calls it."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _checked_settings(settings: object) -> Settings:
    if not isinstance(settings, Settings):
        raise TypeError(f"settings is a toolrouting.Settings, not {type(settings).__name__}")
    return settings
