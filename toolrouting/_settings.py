"""Request settings: what a backend sends with every completion."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ._json import is_count

__all__ = ["Settings"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings:
    """The sampling settings and the structured-output schema of a backend.

    Frozen: change one with :meth:`clone`, which leaves this one as it was.
    """

    max_tokens: int | None = None
    """The completion cap in tokens; ``None`` leaves it to the server."""
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    seed: int | None = None
    stop: tuple[str, ...] = ()
    json_schema: Mapping[str, Any] | None = None
    """A JSON schema every reply must follow; ``None`` sends no schema at all."""
    json_schema_name: str = "response"
    """The name servers that want one (OpenAI's ``json_schema.name``) get."""
    json_schema_strict: bool = False
    """OpenAI's ``strict``: off, since it demands exhaustive ``required`` and narrows providers."""

    def __post_init__(self) -> None:
        if self.max_tokens is not None and not is_count(self.max_tokens, 1):
            raise ValueError(f"max_tokens must be a positive integer or None, not {self.max_tokens!r}")
        if isinstance(self.stop, str):
            raise TypeError("stop takes a sequence of strings; wrap a single one: stop=('\\n',)")
        object.__setattr__(self, "stop", tuple(self.stop))

    def clone(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)
