"""The strict parser: a model's reply checked against the actions it was offered."""

from __future__ import annotations

import dataclasses
import json
import math
import re
import sys
from collections.abc import Collection
from typing import Any

from ._json import quoted
from ._limits import MAX_REPLY_CHARS, MAX_REPLY_QUOTE
from ._names import NONE_TOOL

__all__ = ["NOT_AN_OBJECT", "Route", "parse_route", "quote_reply"]

#: The error of a reply that is not a JSON object at all (prose, an array, nothing).
NOT_AN_OBJECT = "the reply is not a JSON object"


@dataclasses.dataclass(frozen=True, slots=True)
class Route:
    """The parser's verdict on one reply: what :func:`parse_route` made of it, accepted or refused.

    Accepted (``ok``): ``tool``, the trimmed ``text`` and, for a tool other than
    ``none``, its ``arguments``; ``thought`` when the route has a reasoning slot; for ``none``
    under a route whose ``none`` holds the answer, the ``answer``'s JSON text as written. Refused:
    ``error`` alone. Its shape is the specification's parse-route result (:meth:`as_dict`).
    A routing loop records an accepted route as its round's ``Action`` (``Action.from_route``).
    """

    ok: bool
    tool: str | None = None
    arguments: dict[str, Any] | None = None
    text: str | None = None
    error: str | None = None
    thought: str | None = None
    answer: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The specification's hash shape: the keys that have a value, no ``None``s."""
        return {f.name: v for f in dataclasses.fields(self) if (v := getattr(self, f.name)) is not None}


class _Refusal(Exception):
    """A reply the decoder hooks refuse; its message is the error."""


def quote_reply(text: str, start: int = 0) -> str:
    """At most ``MAX_REPLY_QUOTE`` characters of model output from ``start``, quoted and printable."""
    return quoted(text, MAX_REPLY_QUOTE, start)


class _Repeated(Exception):
    """An object with a repeated key: decoded again, the slow way, to see which object it was."""


def _unique_object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise _Repeated
    return obj


def _repeated_key(pairs: list[tuple[str, Any]]) -> str | None:
    seen: set[str] = set()
    for key, _ in pairs:
        if key in seen:
            return key
        seen.add(key)
    return None


def _decode_repeating(trimmed: str) -> tuple[Any, int]:
    """Decode a reply with a repeated key: refused in the action itself, the last value kept below it.

    An object whose keys are free (a map, an untyped value) may repeat a key under any
    grammar, since no context-free grammar can forbid it; JSON.parse and Python's json keep
    the last value, and so does this. The action's own keys are fixed by every route
    grammar, so a repeat there is a reply no grammar constrained.
    """
    outermost: list[str | None] = [None]
    # Gone from the arguments, but written in the reply: a lone surrogate there still refuses it,
    # as a number too large to be finite does (parse_float sees every literal).
    replaced: list[Any] = []

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        # The outermost object closes last: what the last call saw is the action's own.
        outermost[0] = _repeated_key(pairs) if len(obj) != len(pairs) else None
        if outermost[0] is not None:
            replaced.extend(item for key, item in pairs if obj[key] is not item)
        return obj

    decoder = json.JSONDecoder(
        object_pairs_hook=pairs_hook, parse_constant=_refuse_constant, parse_float=_finite_float
    )
    value, end = decoder.raw_decode(trimmed)
    if outermost[0] is not None:
        raise _Refusal(f"the reply repeats the key {quote_reply(outermost[0])}")
    problem = _lone_surrogate(replaced)
    if problem is not None:
        raise _Refusal(problem)
    return value, end


def _refuse_constant(literal: str) -> Any:
    raise _Refusal(f"the reply uses {literal}, which is not JSON")


def _finite_float(literal: str) -> float:
    number = float(literal)
    if math.isinf(number):
        raise _Refusal(f"the reply has a number too large to be finite: {quote_reply(literal)}")
    return number


_SCANNER = json.JSONDecoder()
_DECODER = json.JSONDecoder(
    object_pairs_hook=_unique_object, parse_constant=_refuse_constant, parse_float=_finite_float
)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")
#: RFC 8259's insignificant whitespace. str.strip() would also drop NBSP, U+2028, U+3000 and
#: \x1c-\x1f, which no JSON text may carry: stripping them would be a repair.
_JSON_WHITESPACE = " \t\n\r"


def parse_route(
    text: str, names: Collection[str], *, thought: int | None = None, answer: bool = False
) -> Route:
    """Check a reply against the offered tool ``names``; never raises.

    The whole trimmed reply must be one JSON object (RFC 7493 I-JSON: no lone surrogates,
    no non-finite numbers, no repeated key in the action itself) whose ``tool`` is
    ``"none"`` alone, or one of ``names`` with exactly an object of ``arguments`` beside it.
    Inside the arguments a repeated key keeps its last value, as JSON.parse does: where a
    schema leaves keys free, no grammar can forbid a repeat (docs/grammar.md). With ``thought`` (the
    route schema's reasoning slot, ``route_schema(tools, thought=N)``), a ``"thought"``
    string of at most that many characters is required beside them. With ``answer`` (the
    route whose ``none`` holds the answer, ``route_schema(tools, answer_schema=S)``), ``none``
    requires an ``"answer"`` beside it, any JSON value (the grammar holds it to ``S``), given
    back as its text in the reply (``Route.answer``). Nothing is repaired.
    """
    try:
        if not isinstance(text, str):
            return _refused(f"the reply is not text but {type(text).__name__}")
        if len(text) > MAX_REPLY_CHARS:
            return _refused(f"the reply has {len(text)} characters, over the limit of {MAX_REPLY_CHARS}")
        trimmed = text.strip(_JSON_WHITESPACE)
        if not trimmed.startswith("{"):
            return _refused(NOT_AN_OBJECT)
        try:
            try:
                value, end = _DECODER.raw_decode(trimmed)
            except _Repeated:
                value, end = _decode_repeating(trimmed)
        except _Refusal as refusal:
            return _refused(str(refusal))
        except json.JSONDecodeError as error:
            return _not_json(error, trimmed)
        except ValueError as error:
            if "digits" not in str(error):
                raise
            # As with 1e999, nothing downstream could write such a number back out: json.dumps,
            # str() and the transcript all stop at the interpreter's limit.
            return _refused(
                f"the reply has an integer of more than {sys.get_int_max_str_digits()} digits, which "
                "Python cannot write back out (see sys.set_int_max_str_digits)"
            )
        if end != len(trimmed):
            return _refused(f"the reply has text after the JSON object: {quote_reply(trimmed, end)}")
        # "\\" first: a one-character search is memchr, far faster than searching for "\\u".
        if not trimmed.isascii() or ("\\" in trimmed and _SURROGATE_ESCAPE.search(trimmed)):
            problem = _lone_surrogate(value)
            if problem is not None:
                return _refused(problem)
        return _check_action(value, trimmed, names, thought, answer)
    except RecursionError:
        return _refused("the reply nests too deeply to decode")
    except Exception as error:  # the promise is "never raises": a bug becomes a refusal
        return _refused(f"the reply could not be checked ({type(error).__name__})")


def _refused(error: str) -> Route:
    return Route(ok=False, error=error)


def _not_json(error: json.JSONDecodeError, trimmed: str) -> Route:
    window = max(0, error.pos - MAX_REPLY_QUOTE // 2)
    return _refused(
        f"the reply is not valid JSON: {error.msg} (character {error.pos}): {quote_reply(trimmed, window)}"
    )


_new = object.__new__
_set = object.__setattr__


def _accepted(
    tool: str, arguments: dict[str, Any] | None, text: str, thought: str | None, answer: str | None = None
) -> Route:
    # The hot path: filling the slots directly is twice as fast as the dataclass __init__.
    route: Route = _new(Route)
    _set(route, "ok", True)
    _set(route, "tool", tool)
    _set(route, "arguments", arguments)
    _set(route, "text", text)
    _set(route, "error", None)
    _set(route, "thought", thought)
    _set(route, "answer", answer)
    return route


def _lone_surrogate(value: Any) -> str | None:
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str):
            try:
                item.encode("utf-8")
            except UnicodeEncodeError as error:
                snippet = quote_reply(item, max(0, error.start - 8))
                return f"the reply has a string with a lone surrogate: {snippet}"
    return None


def _check_action(
    value: dict[str, Any], trimmed: str, names: Collection[str], thought: int | None, answer: bool
) -> Route:
    reasoning = None
    if thought is not None:
        if "thought" not in value:
            return _refused('the reply has no "thought" key')
        reasoning = value["thought"]
        if not isinstance(reasoning, str):
            return _refused('the "thought" value is not a string')
        if len(reasoning) > thought:
            return _refused(f'the "thought" has {len(reasoning)} characters, over its limit of {thought}')
        value = {key: item for key, item in value.items() if key != "thought"}
    if "tool" not in value:
        return _refused('the reply has no "tool" key')
    tool = value["tool"]
    if not isinstance(tool, str) or not tool:
        return _refused('the "tool" value is not a non-empty string')
    if tool == NONE_TOOL:
        if answer and "answer" not in value:
            return _refused('the "none" action has no "answer"')
        if len(value) != 1 + answer:
            allowed = {"tool", "answer"} if answer else {"tool"}
            return _refused(f'the "none" action carries other keys: {_keys(value, allowed)}')
        return _accepted(NONE_TOOL, None, trimmed, reasoning, _answer_text(trimmed) if answer else None)
    if tool not in names:
        return _refused(f"the tool {quote_reply(tool)} is not one of the offered tools")
    if len(value) != 2 or "arguments" not in value:
        extra = _keys(value, {"tool", "arguments"})
        if extra:
            return _refused(
                f'the action for {quote_reply(tool)} has keys besides "tool" and "arguments": {extra}'
            )
        return _refused(f'the action for {quote_reply(tool)} has no "arguments"')
    arguments = value["arguments"]
    if not isinstance(arguments, dict):
        return _refused(f'the "arguments" of {quote_reply(tool)} are not a JSON object')
    return _accepted(tool, arguments, trimmed, reasoning)


def _answer_text(trimmed: str) -> str:
    """The text of the top-level ``"answer"`` value of an object already decoded and checked."""
    at = _skip(trimmed, 1)
    while True:
        key, at = _SCANNER.raw_decode(trimmed, at)
        at = _skip(trimmed, _skip(trimmed, at) + 1)  # past the colon
        end: int = _SCANNER.raw_decode(trimmed, at)[1]
        if key == "answer":
            return trimmed[at:end]
        at = _skip(trimmed, _skip(trimmed, end) + 1)  # past the comma


def _skip(text: str, at: int) -> int:
    while at < len(text) and text[at] in _JSON_WHITESPACE:
        at += 1
    return at


def _keys(value: dict[str, Any], allowed: set[str]) -> str:
    """The keys beyond ``allowed``, quoted together so the quote stays within its bound."""
    extra = [key for key in value if key not in allowed]
    return quote_reply(", ".join(extra)) if extra else ""
