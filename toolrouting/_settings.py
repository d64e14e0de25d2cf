"""Request settings: what a backend sends with every completion."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, Literal, get_args

from ._json import is_count

__all__ = ["GrammarChoice", "Settings"]

#: Who turns ``json_schema`` into a grammar where a backend takes a grammar: ``ours``
#: (:func:`~toolrouting.route_grammar`: compact, optionally bounded) or ``server`` (the
#: server's own converter, or llama-cpp-python's in the embedded backend).
GrammarChoice = Literal["ours", "server"]


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
    grammar: GrammarChoice = "ours"
    """Where a backend takes a GBNF grammar (the embedded model, the ``llama.cpp``,
    ``llama-cpp-python`` and ``koboldcpp`` dialects): ``ours`` sends our compact grammar of
    ``json_schema`` instead of the schema, ``server`` sends the schema for the server to convert.
    Backends that take only a schema always send the schema."""
    bounded: bool = True
    """With ``grammar="ours"``: bound every string and array the schema leaves unbounded
    (``BOUNDED_STRING_CHARS``, ``BOUNDED_ARRAY_ITEMS``), never tighter than its own bounds, so a
    decision cannot run on inside the grammar until the cap cuts it."""
    spaced: bool = False
    """With ``grammar="ours"``: one space after each ``:`` and ``,`` (as ``json.dumps`` writes),
    for a model that decides better on the JSON it was trained on; off, no whitespace at all."""

    def __post_init__(self) -> None:
        if self.max_tokens is not None and not is_count(self.max_tokens, 1):
            raise ValueError(f"max_tokens must be a positive integer or None, not {self.max_tokens!r}")
        if isinstance(self.stop, str):
            raise TypeError("stop takes a sequence of strings; wrap a single one: stop=('\\n',)")
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.grammar not in get_args(GrammarChoice):
            raise ValueError(f"grammar is 'ours' or 'server', not {self.grammar!r}")

    def clone(self, **changes: Any) -> Settings:
        """A copy with ``changes`` applied."""
        return dataclasses.replace(self, **changes)
