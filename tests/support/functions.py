"""The Python functions the catalogue tests declare as tools."""

from __future__ import annotations

import enum
from typing import Any, Literal


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def search_notes(
    query: str,
    limit: int = 10,
    tags: list[str] | None = None,
    mode: Literal["fast", "deep"] = "fast",
    colour: Colour = Colour.RED,
    weights: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Search the notes
    by their words.

    Longer text that is not the description.

    Args:
        query: Words to look for.
        limit (int): At most this many
            results.
        tags: Only notes with all of these tags.

    Returns:
        The matching notes.
    """
    return [
        {"query": query, "limit": limit, "tags": tags, "mode": mode, "colour": colour, "weights": weights}
    ]


def add(a: int, b: float, /) -> float:
    """Add two numbers.

    Parameters
    ----------
    a : int
        The first.

    b : float
        The second
        number.

    Returns
    -------
    float
    """
    return a + b
