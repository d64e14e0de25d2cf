"""What the compiler answers: a compiled grammar and the notes on where it differs from its schema."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["GrammarNote", "RouteGrammar"]


@dataclass(frozen=True)
class GrammarNote:
    """Where the grammar differs from the schema: what it accepts more (or less) than JSON Schema does."""

    pointer: str
    """The JSON pointer of the schema object concerned, ``""`` for the root."""
    keyword: str
    """The keyword at fault, ``""`` for the schema object as a whole."""
    effect: str
    """``ignores`` (not enforced: wider), ``unbounded`` (a count past llama.cpp's limit: wider),
    ``lowers`` (a minimum count past the limit: wider), ``treats as anyOf`` (wider),
    ``forbids extra keys`` (narrower), ``bounds`` (a count the schema left open, given its
    default bound by ``bounded``: narrower), ``narrows`` (a number past 308 digits written
    whole, as no double holds it), ``exceeds the reply limit`` (bounded, yet the longest reply
    is past ``MAX_REPLY_CHARS``: the completion cap ends it)."""
    message: str


@dataclass(frozen=True)
class RouteGrammar:
    """A compiled grammar: the GBNF text (root rule ``root``), its notes, and its longest reply."""

    gbnf: str
    notes: tuple[GrammarNote, ...]
    max_bytes: int | None
    """Bytes of the longest text the grammar allows, ``None`` when unbounded. Every token a
    grammar lets through writes at least one byte, so a cap of ``max_bytes + 1`` tokens never
    cuts a reply short."""
