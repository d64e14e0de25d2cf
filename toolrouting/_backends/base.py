"""The backend seam: one method over a conversation, plus the settings it carries.

:class:`Backend` is the seam, a protocol any object may meet, and :class:`AsyncBackend` the same
seam for asyncio code; :class:`BaseBackend` and :class:`AsyncBaseBackend` are what the shipped
backends share so that none of them restates it. A backend that can stream also meets
:class:`StreamingBackend` (or :class:`AsyncStreamingBackend`): its ``stream`` yields
:class:`TextDelta` pieces and ends with the whole :class:`Completion`.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from typing import Any, ClassVar, Literal, Protocol, Self, TypedDict, cast, runtime_checkable

from .._json import is_count, quoted
from .._limits import MAX_CAUSE_QUOTE
from .._settings import Settings

__all__ = [
    "ROLES",
    "AsyncBackend",
    "AsyncBaseBackend",
    "AsyncStreamingBackend",
    "Backend",
    "BaseBackend",
    "Completion",
    "Message",
    "StreamingBackend",
    "TextDelta",
    "Usage",
    "chat_usage",
    "is_truncated",
    "quoted_cause",
    "reported_count",
    "wire_text",
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
    cached_tokens: int = 0
    """Of ``prompt_tokens``, those the backend did not evaluate because its prompt cache held them:
    the embedded model's prompt cache, or a server's ``prompt_tokens_details.cached_tokens``.
    0 where the backend does not say."""

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
    """True when generation stopped at the completion cap: the text may be cut mid-action.

    The one truncation rule: a completion is cut when ``truncated`` is set or ``finish_reason``
    is ``"length"``, so one made with only the finish reason reads ``truncated=True``, and an
    inconsistent one (cut by one field, whole by the other) counts as cut."""
    raw: Mapping[str, Any] | None = None
    """The server's decoded response body, for what this object does not carry."""
    reasoning: str | None = None
    """What the model reasoned in its own syntax (its chat template's ``<think>`` tags) before
    ``text``, ``None`` where it was not asked to: only a backend cloned with ``reasoning_budget``
    writes one."""

    def __post_init__(self) -> None:
        # Every reader (both loops, the answer request, a stream's last item, a tracer) reads
        # this one field, so the rule is applied once, where a completion is made.
        if self.finish_reason == "length" and self.truncated is False:
            object.__setattr__(self, "truncated", True)


@dataclasses.dataclass(frozen=True)
class TextDelta:
    """A piece of a streamed reply, in order; the stream's last item is the whole :class:`Completion`."""

    text: str
    reasoning: bool = False
    """Whether the piece is of the model's reasoning (:attr:`Completion.reasoning`), not its reply."""


def is_truncated(finish_reason: str | None, completion_tokens: int, cap: int | None) -> bool:
    """Whether a completion stopped at its cap: said so, or used the whole cap."""
    if finish_reason == "length":
        return True
    return cap is not None and completion_tokens >= cap


def reported_count(value: object) -> int:
    """A token count as a server reported it, 0 where it gave none or nonsense."""
    return cast("int", value) if is_count(value) else 0


def chat_usage(usage: Mapping[str, Any]) -> Usage:
    """A chat completion's ``usage`` object as a :class:`Usage`: its counts, and the cached part
    of the prompt where the server gives ``prompt_tokens_details.cached_tokens`` (OpenAI,
    llama-server, vLLM), never more than the prompt."""
    prompt = reported_count(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details")
    cached = reported_count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=reported_count(usage.get("completion_tokens")),
        cached_tokens=min(cached, prompt),
    )


def quoted_cause(cause: object) -> str:
    """Another library's message (or a path) in ours: quoted, at most ``MAX_CAUSE_QUOTE`` characters."""
    return quoted(str(cause), MAX_CAUSE_QUOTE)


#: A lone surrogate: a str may hold one (a tool's output, a server's ``"\\ud800"``), UTF-8 cannot.
_SURROGATE = re.compile("[\ud800-\udfff]")


def wire_text(text: str) -> str:
    """``text`` as it is sent to a model: each lone surrogate replaced by U+FFFD, so it is valid UTF-8.

    The one rule for what a backend is sent; the transcript keeps the text as it was.
    """
    return _SURROGATE.sub("\ufffd", text)


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
class StreamingBackend(Backend, Protocol):
    """A :class:`Backend` that can also hand its reply over piece by piece.

    ``stream`` yields :class:`TextDelta` pieces as they are generated, then the whole
    :class:`Completion` (text equal to the pieces joined, usage, finish reason, truncated) as
    its last item, so a caller never sends a second request. Read it to the end or close it
    (``contextlib.closing``): an open stream holds the request (and an in-process model).
    """

    def stream(self, messages: Sequence[Message]) -> Iterator[TextDelta | Completion]: ...


@runtime_checkable
class AsyncBackend(Protocol):
    """A chat model behind one coroutine: :class:`Backend` for asyncio code and :class:`AsyncRoutingLoop`.

    ``settings`` and ``clone(**changes)`` are as on :class:`Backend` (a clone is made without
    I/O, so ``clone`` stays synchronous); ``complete`` is awaited, and cancelling it abandons
    the request; ``aclose`` frees what the backend owns. The protocol asks no more, so a small
    backend of one's own qualifies; the shipped ones (on :class:`AsyncBaseBackend`) also work
    with ``async with``.
    """

    @property
    def settings(self) -> Settings: ...

    def clone(self, **changes: Any) -> Self: ...

    async def complete(self, messages: Sequence[Message]) -> Completion: ...

    async def aclose(self) -> None: ...


@runtime_checkable
class AsyncStreamingBackend(AsyncBackend, Protocol):
    """An :class:`AsyncBackend` whose ``stream`` is an async iterator, with the same promise as
    :class:`StreamingBackend`'s; close one left early with ``contextlib.aclosing``."""

    def stream(self, messages: Sequence[Message]) -> AsyncIterator[TextDelta | Completion]: ...


class _Configured:
    """The part both base classes share: ``settings``, checked clones, and who owns what a clone shares."""

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

    def _retire(self) -> bool:
        """Mark this backend closed; whether it must now free what it owns (its first close, as owner)."""
        if self._closed:
            return False
        self._closed = True
        return self._owner


class BaseBackend(_Configured):
    """What the shipped backends share: ``settings``, checked clones, ``close()``, ``with``.

    A subclass lists the keyword arguments its ``clone`` takes in ``clone_keys`` and writes
    ``complete``. A clone is a shallow copy that shares what the original owns (a loaded
    model, a connection pool, a script) without owning it: ``close()`` on a clone retires
    only the clone, on the original it also frees the shared resource (``_release``). A
    backend of your own need not subclass this: :class:`Backend` is the seam.
    """

    def close(self) -> None:
        """Retire this backend; on the one that made the shared resource, free it for every clone."""
        if self._retire():
            self._release()

    def _release(self) -> None:
        """Free what this backend owns and its clones share; the owner's first ``close()`` calls it."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class AsyncBaseBackend(_Configured):
    """:class:`BaseBackend` for asyncio code: the same settings and clones, ``aclose()`` and ``async with``.

    A subclass writes ``async def complete`` and frees what it owns in ``_arelease``, which
    the owner's first ``aclose()`` awaits; a clone's ``aclose()`` retires only the clone.
    """

    async def aclose(self) -> None:
        """Retire this backend; on the one that made the shared resource, free it for every clone."""
        if self._retire():
            await self._arelease()

    async def _arelease(self) -> None:
        """Free what this backend owns and its clones share; the owner's first ``aclose()`` awaits it."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()


def _checked_settings(settings: object) -> Settings:
    if not isinstance(settings, Settings):
        raise TypeError(f"settings is a toolrouting.Settings, not {type(settings).__name__}")
    return settings
