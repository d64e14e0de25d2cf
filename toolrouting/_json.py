"""The JSON toolbox every part shares: plain copies, JSON pointers, one tree walk, bounded quotes."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

__all__ = ["is_count", "json_type", "plain", "pointer_token", "quoted", "shown", "walk"]


def plain(value: Any) -> Any:
    """A copy made of dicts and lists: a schema held in a read-only mapping still goes on the wire."""
    if isinstance(value, Mapping):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item) for item in value]
    return value


def pointer_token(key: str) -> str:
    """``key`` as one JSON-pointer reference token (RFC 6901): ``~`` and ``/`` escaped."""
    return key.replace("~", "~0").replace("/", "~1")


def walk(value: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    """Every value in a JSON tree with its JSON pointer, parents before children, in document order."""
    stack: list[tuple[str, Any]] = [(pointer, value)]
    while stack:
        at, node = stack.pop()
        yield at, node
        if isinstance(node, Mapping):
            children = [(f"{at}/{pointer_token(str(key))}", item) for key, item in node.items()]
        elif isinstance(node, list):
            children = [(f"{at}/{index}", item) for index, item in enumerate(node)]
        else:
            continue
        stack.extend(reversed(children))


def quoted(text: str, width: int, start: int = 0) -> str:
    """At most ``width`` characters of ``text`` from ``start``, JSON-quoted and printable, ``…`` when cut."""
    snippet = text[start : start + width]
    printable = snippet.encode("utf-8", "backslashreplace").decode("utf-8")
    more = "…" if len(text) > start + width else ""
    return json.dumps(printable, ensure_ascii=False) + more


def shown(value: object, width: int) -> str:
    """At most ``width`` characters of ``value``'s repr; a huge int or a broken ``__repr__`` never raises."""
    try:
        return f"{value!r}"[:width]
    except Exception:
        return f"a {type(value).__name__}"


def is_count(value: object, least: int = 0) -> bool:
    """Whether ``value`` is an ``int`` (never a ``bool``) of at least ``least``."""
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def json_type(value: object) -> str:
    """The JSON type name of a decoded JSON value, for messages that say what a server sent instead."""
    names = {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}
    return names.get(type(value), "number")
