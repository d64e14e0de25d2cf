"""A reference for parse_route, written without reading its decoder: the differential fuzzers' oracle.

It decodes with plain ``json.loads`` (JSON's own four whitespace characters around the
value, nothing else), applies I-JSON's refusals with its own checks after decoding (a repeated
key only in the action's own keys: inside the arguments the last value counts), and
judges the top-level shape with ``jsonschema`` against ``route_schema`` with every tool's
arguments schema widened to ``{"type": "object"}`` (the arguments are the grammar's to
constrain; the parser takes only names).
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from jsonschema import Draft202012Validator

from support.catalogues import declared
from toolrouting import MAX_REPLY_CHARS, parse_route, route_schema

__all__ = ["JSON_WHITESPACE", "Verdict", "disagreement", "judge", "tools_for"]

#: RFC 8259 section 2: the only insignificant whitespace a JSON text has.
JSON_WHITESPACE = " \t\n\r"


@dataclass(frozen=True)
class Verdict:
    ok: bool
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    text: str | None = None
    why: str = ""


class _Duplicate(Exception):
    pass


class _Pairs:
    """Objects as JSON.parse makes them (a repeated key keeps its last value), remembering whether
    the last object closed, the outermost, repeated one: the action's own keys may not repeat."""

    def __init__(self) -> None:
        self.outermost_repeats = False
        #: The values a later repeat replaced: gone from the result, but written in the reply, so a
        #: NaN, an overflowing number or a lone surrogate among them still refuses it.
        self.replaced: list[Any] = []

    def __call__(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        keys = [key for key, _ in pairs]
        self.outermost_repeats = len(set(keys)) != len(keys)
        obj = dict(pairs)
        if self.outermost_repeats:
            self.replaced.extend(value for key, value in pairs if obj[key] is not value)
        return obj


class _Float:
    """A float literal kept as written until the whole value is checked."""

    __slots__ = ("literal",)

    def __init__(self, literal: str) -> None:
        self.literal = literal


class _Constant:
    __slots__ = ()


class _LongInt:
    """An integer past the interpreter's digit limit: valid JSON that Python cannot write back out."""

    __slots__ = ()


def _int(literal: str) -> Any:
    limit = sys.get_int_max_str_digits()
    if limit and len(literal.lstrip("-")) > limit:
        return _LongInt()
    return int(literal)


def _finish(value: Any) -> tuple[bool, Any, str]:
    """Replace float literals by floats; refuse non-finite numbers and lone surrogates."""
    if isinstance(value, _Constant):
        return False, None, "a NaN or Infinity literal"
    if isinstance(value, _LongInt):
        return False, None, "an integer too long to write back out"
    if isinstance(value, _Float):
        number = float(value.literal)
        if not math.isfinite(number):
            return False, None, "a float literal that overflows"
        return True, number, ""
    if isinstance(value, str):
        if any(0xD800 <= ord(char) <= 0xDFFF for char in value):
            return False, None, "a lone surrogate"
        return True, value, ""
    if isinstance(value, list):
        items = []
        for item in value:
            good, done, why = _finish(item)
            if not good:
                return False, None, why
            items.append(done)
        return True, items, ""
    if isinstance(value, dict):
        obj = {}
        for key, item in value.items():
            good, _, why = _finish(key)
            if not good:
                return False, None, why
            good, done, why = _finish(item)
            if not good:
                return False, None, why
            obj[key] = done
        return True, obj, ""
    return True, value, ""


def tools_for(names: Sequence[str]) -> list[dict[str, Any]]:
    """A catalogue offering ``names``, each taking any object."""
    return [declared(name) for name in names]


@lru_cache(maxsize=64)
def _validator(names: tuple[str, ...]) -> Draft202012Validator:
    schema = route_schema(tools_for(names))
    for alternative in schema["anyOf"]:
        if "arguments" in alternative["properties"]:
            alternative["properties"]["arguments"] = {"type": "object"}
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def _skeleton(value: Any) -> Any:
    """The top level as the widened schema sees it: below it only each value's JSON type counts.

    (jsonschema's messages repr every instance, and repr refuses ints over 4,300 digits.)
    """
    if not isinstance(value, dict):
        return type(value)() if isinstance(value, (dict, list, int, float, str)) else value
    kinds = {dict: {}, list: [], bool: False, int: 0, float: 0.0}
    return {
        key: item if isinstance(item, str) else kinds.get(type(item), item) for key, item in value.items()
    }


def judge(text: str, names: Sequence[str]) -> Verdict:
    """What a strict parser must make of ``text`` when ``names`` are offered."""
    if len(text) > MAX_REPLY_CHARS:
        return Verdict(False, why="over the reply limit")
    pairs = _Pairs()
    try:
        raw = json.loads(
            text,
            object_pairs_hook=pairs,
            parse_float=_Float,
            parse_int=_int,
            parse_constant=lambda _: _Constant(),
        )
        if pairs.outermost_repeats:
            raise _Duplicate
    except _Duplicate:
        return Verdict(False, why="a duplicate key")
    except RecursionError:
        return Verdict(False, why="too deep")
    except ValueError as error:
        return Verdict(False, why=f"not JSON: {error}")
    for replaced in pairs.replaced:
        good, _, why = _finish(replaced)
        if not good:
            return Verdict(False, why=why)
    good, value, why = _finish(raw)
    if not good:
        return Verdict(False, why=why)
    if not _validator(tuple(names)).is_valid(_skeleton(value)):
        return Verdict(False, why="the top-level shape is not one of the alternatives")
    trimmed = text.strip(JSON_WHITESPACE)
    if value["tool"] == "none":
        return Verdict(True, tool="none", text=trimmed)
    return Verdict(True, tool=value["tool"], arguments=value["arguments"], text=trimmed)


#: The parser's refusal when its own code raised: always a finding, never an answer.
CRASHED = "the reply could not be checked"
DEPTH_REFUSAL = "the reply nests too deeply to decode"
#: Error messages quote at most 64 characters of reply; escaping can grow them, never to a flood.
MAX_ERROR_CHARS = 1_500


def _same(left: Any, right: Any) -> bool:
    """Equal values of equal types at every depth (so 1 and 1.0, or key order, differ)."""
    stack = [(left, right)]
    while stack:
        a, b = stack.pop()
        if type(a) is not type(b):
            return False
        if isinstance(a, dict):
            if list(a) != list(b):
                return False
            stack.extend((a[key], b[key]) for key in a)
        elif isinstance(a, list):
            if len(a) != len(b):
                return False
            stack.extend(zip(a, b, strict=True))
        elif a != b:
            return False
    return True


def _nesting(text: str) -> int:
    return text.count("[") + text.count("{")


def disagreement(text: str, names: Sequence[str]) -> str | None:
    """Why parse_route and the oracle disagree on ``text``, or ``None`` when they agree.

    Near the interpreter's recursion limit json's C decoder succeeds or not by the depth of
    the caller's stack, so a depth refusal on one side of deeply bracketed text is no finding.
    """
    route = parse_route(text, names)
    verdict = judge(text, names)
    if route.ok:
        if route.error is not None or route.text is None:
            return f"an accepted route has the wrong fields: {route!r:.200}"
        route.text.encode("utf-8")
    else:
        if not isinstance(route.error, str) or route.error.startswith(CRASHED):
            return f"the parser raised inside: {route.error}"
        if len(route.error) > MAX_ERROR_CHARS:
            return f"the error has {len(route.error)} characters"
        route.error.encode("utf-8")
    if route.ok != verdict.ok:
        deep = route.error == DEPTH_REFUSAL or verdict.why == "too deep"
        if deep and _nesting(text) >= 200:
            return None
        return f"parser ok={route.ok} ({route.error}), oracle ok={verdict.ok} ({verdict.why})"
    if not route.ok:
        return None
    if route.tool != verdict.tool or route.text != verdict.text:
        return f"tool/text differ: {route.tool!r:.80} {verdict.tool!r:.80}"
    if not _same(route.arguments, verdict.arguments):
        return "the arguments differ"
    return None
