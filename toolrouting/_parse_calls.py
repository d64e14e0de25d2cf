"""The strict parser of a reply of up to K calls: one action, as parse_route reads it, or an array of them."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Collection
from typing import Any

from ._limits import MAX_REPLY_CHARS
from ._names import NONE_TOOL
from ._parse import NOT_AN_OBJECT, Route, parse_route, quote_reply

__all__ = ["Routes", "parse_routes"]

#: RFC 8259's insignificant whitespace, as parse_route trims it: nothing else is skipped.
_WHITESPACE = " \t\n\r"
# Finds where each call ends; parse_route then reads each call's own text, strictly.
_SCANNER = json.JSONDecoder()


@dataclasses.dataclass(frozen=True, slots=True)
class Routes:
    """What :func:`parse_routes` made of a reply.

    Accepted (``ok``): ``calls``, one accepted :class:`Route` per call in the order written,
    each with the exact ``text`` of its action, and the trimmed ``text`` of the whole reply; a
    reply of ``none`` is that one call alone. Refused: ``error`` alone.
    """

    ok: bool
    calls: tuple[Route, ...] = ()
    text: str | None = None
    error: str | None = None

    def as_dict(self) -> dict[str, Any]:
        """The keys that have a value, each call as :meth:`Route.as_dict` writes it."""
        shown: dict[str, Any] = {"ok": self.ok}
        if self.calls:
            shown["calls"] = [call.as_dict() for call in self.calls]
        shown.update({key: value for key in ("text", "error") if (value := getattr(self, key)) is not None})
        return shown


def parse_routes(
    text: str,
    names: Collection[str],
    *,
    max_calls: int = 1,
    thought: int | None = None,
    answer: bool = False,
) -> Routes:
    """Check a reply of up to ``max_calls`` calls against the offered tool ``names``; never raises.

    A reply is one action, read exactly as :func:`parse_route` reads it (at ``max_calls=1``
    this is all it takes, and the answer is parse_route's), or, with ``max_calls`` above 1, a
    JSON array of 2 to ``max_calls`` tool actions, each one read by parse_route from its own
    text: ``route_schema(tools, max_calls=K)``'s shape. Refused besides what parse_route
    refuses in any call: an empty array, an array of one call (one call is its object alone),
    more than ``max_calls`` calls, and ``none`` among calls (a handoff stands alone). Two equal
    calls are accepted: no grammar of the route can forbid them, and a tool may be meant to
    run twice; the loop's repeat limit counts them. An error about one call names it (``call 2``)
    and the character of the reply where it starts. Only a ``max_calls`` that is not a
    positive integer raises (``TypeError``, ``ValueError``): that is the caller's, not the reply's.
    ``answer`` is parse_route's: a ``none`` that holds the answer (``Route.answer``).
    """
    if isinstance(max_calls, bool) or not isinstance(max_calls, int):
        raise TypeError(f"max_calls= is a number of calls, not {type(max_calls).__name__}")
    if max_calls < 1:
        raise ValueError(f"max_calls= is at least 1 call, not {max_calls}")
    try:
        trimmed = text.strip(_WHITESPACE) if isinstance(text, str) and len(text) <= MAX_REPLY_CHARS else ""
        if max_calls == 1 or not trimmed.startswith("["):
            return _one(parse_route(text, names, thought=thought, answer=answer), max_calls)
        return _array(trimmed, names, max_calls, thought)
    except Exception as error:  # never raises, as parse_route: a bug becomes a refusal
        return _refused(f"the reply could not be checked ({type(error).__name__})")


def _refused(error: str) -> Routes:
    return Routes(ok=False, error=error)


def _one(route: Route, max_calls: int) -> Routes:
    if route.ok:
        return Routes(ok=True, calls=(route,), text=route.text)
    if max_calls > 1 and route.error == NOT_AN_OBJECT:
        many = "2" if max_calls == 2 else f"2 to {max_calls}"
        return _refused(f"the reply is neither a JSON object nor an array of {many} of them")
    return _refused(str(route.error))


def _skip(trimmed: str, at: int) -> int:
    while at < len(trimmed) and trimmed[at] in _WHITESPACE:
        at += 1
    return at


def _array(trimmed: str, names: Collection[str], max_calls: int, thought: int | None) -> Routes:
    """An array of calls: each call's end found by a plain decoder, its text read by parse_route."""
    calls: list[Route] = []
    at = _skip(trimmed, 1)
    if trimmed.startswith("]", at):
        return _refused(
            'the reply is an empty array: a decision makes one call or more, or is {"tool":"none"}'
        )
    while True:
        if len(calls) == max_calls:
            return _refused(f"the reply goes on past {max_calls} calls, its limit (max_calls={max_calls})")
        number = len(calls) + 1
        end = _end_of_call(trimmed, at)
        route = parse_route(trimmed[at:end] if end is not None else trimmed[at:], names, thought=thought)
        if not route.ok:
            return _refused(_call_error(number, at, str(route.error)))
        if route.tool == NONE_TOOL:
            return _refused(
                f'call {number} (at character {at}) is "none", which stands alone: '
                "a reply that calls tools has no none among them"
            )
        calls.append(route)
        assert end is not None  # parse_route accepted the call, so the decoder found its end
        at = _skip(trimmed, end)
        if trimmed.startswith(",", at):
            at = _skip(trimmed, at + 1)
            continue
        if not trimmed.startswith("]", at):
            if at == len(trimmed):
                return _refused(f"the reply ends inside its array, after call {number}")
            return _refused(
                f"the reply's array goes on after call {number} without a comma: {quote_reply(trimmed, at)}"
            )
        break
    if at + 1 != len(trimmed):
        return _refused(f"the reply has text after the JSON array: {quote_reply(trimmed, at + 1)}")
    if len(calls) == 1:
        return _refused("the reply is an array of one call: one call is written as its object alone")
    return Routes(ok=True, calls=tuple(calls), text=trimmed)


def _end_of_call(trimmed: str, at: int) -> int | None:
    """Where the JSON value starting at ``at`` ends; ``None`` when none does (parse_route says why)."""
    try:
        end: int = _SCANNER.raw_decode(trimmed, at)[1]
    except (ValueError, RecursionError):  # not JSON, past Python's digit limit, or too deep
        return None
    return end


def _call_error(number: int, at: int, error: str) -> str:
    """parse_route's error about one call as that call's: "the reply has" becomes "call 2 ... has"."""
    where = f"call {number} (at character {at})"
    head = "the reply "
    return f"{where} {error[len(head) :]}" if error.startswith(head) else f"{where}: {error}"
