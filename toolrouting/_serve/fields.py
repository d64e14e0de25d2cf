"""What every front's request reader shares: what a JSON value is called in an error, a
sampling number read by its field's name, and the text of a list of content parts."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .._errors import ChatRequestError
from .._json import shown
from .._limits import SHOWN_VALUE_CHARS

__all__ = ["json_kind", "number_field", "parts_text", "shown_value"]

_JSON_KINDS = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "an array"}


def json_kind(value: object) -> str:
    """What a JSON value is, as an error shows it (``an array``, ``null``)."""
    if value is None:
        return "null"
    return "an object" if isinstance(value, Mapping) else _JSON_KINDS.get(type(value), type(value).__name__)


def shown_value(value: object) -> str:
    """A value quoted in an error, at most ``SHOWN_VALUE_CHARS`` of it."""
    return shown(value, SHOWN_VALUE_CHARS)


def number_field(body: Mapping[str, Any], name: str, most: float) -> float | None:
    """``body[name]`` as a sampling number between 0 and ``most`` (``temperature``, ``top_p``),
    ``None`` when absent; anything else is refused by its name. Every front reads them so."""
    value = body.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ChatRequestError(f"{name} is a number, not {shown_value(value)}", name)
    if not 0 <= value <= most:
        raise ChatRequestError(f"{name} is between 0 and {most:g}, not {shown_value(value)}", name)
    return float(value)


def parts_text(value: object, at: str, kinds: tuple[str, ...]) -> str:
    """The text of a list of content parts (``at`` is where it is): parts of the ``kinds`` that
    carry a ``text``, and ``refusal`` parts; any other part is refused by its index."""
    if not isinstance(value, list):
        raise ChatRequestError(f"content is a string or a list of text parts, not {json_kind(value)}", at)
    texts = []
    for index, part in enumerate(value):
        kind = part.get("type") if isinstance(part, Mapping) else None
        key = "refusal" if kind == "refusal" else "text"
        if kind not in (*kinds, "refusal"):
            raise ChatRequestError(
                f"a content part of type {shown_value(kind)} is not supported: only text is served",
                f"{at}[{index}]",
                code="unsupported_content",
            )
        text = part.get(key)
        if not isinstance(text, str):
            raise ChatRequestError(f"a {kind} part carries its {key} as a string", f"{at}[{index}].{key}")
        texts.append(text)
    return "".join(texts)
