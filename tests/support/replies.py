"""What the tests read of a model's reply: its JSON structure apart from the strings, and a
stream's pieces against the completion that ends it."""

from __future__ import annotations

from toolrouting import Completion, TextDelta

__all__ = ["outside_strings", "whole"]


def outside_strings(text: str) -> str:
    """``text`` with every JSON string literal taken out: the structure and its whitespace."""
    kept, inside, escaped = [], False, False
    for char in text:
        if inside:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                inside = False
        elif char == '"':
            inside = True
        else:
            kept.append(char)
    return "".join(kept)


def whole(items: list[TextDelta | Completion]) -> Completion:
    """The stream's last item, once checked to be the completion of the non-empty pieces before it."""
    *pieces, last = items
    assert isinstance(last, Completion)
    assert all(isinstance(piece, TextDelta) and piece.text for piece in pieces)
    assert "".join(piece.text for piece in pieces if isinstance(piece, TextDelta)) == last.text
    return last
