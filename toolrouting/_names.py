"""What a tool name may be: the one rule the catalogue and the result header share."""

from __future__ import annotations

import unicodedata

from ._limits import SHOWN_NAME_CHARS

__all__ = ["NONE_TOOL", "tool_name_problem"]

#: The action that calls no tool and ends the routing phase.
NONE_TOOL = "none"


def tool_name_problem(name: object) -> str | None:
    """Why ``name`` cannot name a tool, or ``None`` when it can.

    Whitespace, control and format characters are refused: a name holding them could
    write a line that reads as another call's result header.
    """
    if not isinstance(name, str):
        return f"the name is not a string but {type(name).__name__}"
    if not name.strip():
        return "the name is blank"
    if name.isascii() and name.isprintable() and " " not in name:
        return None  # the common case, decided in C
    for position, char in enumerate(name):
        category = unicodedata.category(char)
        if char.isspace() or category[0] in "CZ":
            return (
                f"the name {ascii(name)[:SHOWN_NAME_CHARS]} has a whitespace or control character "
                f"(U+{ord(char):04X}) at position {position}"
            )
    return None
