"""The hostile replies that parse_route must answer: 10 MB, a million brackets, a megabyte of
escapes, digits or whitespace (tests/core/test_parse_bounds.py asserts how it answers each, bounds.py
times them).

One of the modules of benchmarks/ the tests may import (tests/project/test_architecture.py).
"""

from __future__ import annotations

from collections.abc import Callable

from toolrouting import MAX_REPLY_CHARS

#: The catalogue every hostile reply is parsed against.
HOSTILE_NAMES = ("t",)
_MB = 1_000_000


def _action(arguments: str) -> str:
    return '{"tool":"t","arguments":' + arguments + "}"


def _fill(make: Callable[[int], str], budget: int) -> str:
    """The longest ``make(n)`` within ``budget`` characters (``make`` grows with ``n``)."""
    low, high = 0, budget
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if len(make(middle)) <= budget else (low, middle - 1)
    return make(low)


def hostile_replies() -> list[tuple[str, str, bool]]:
    """(what, reply, whether parse_route accepts it) for each hostile reply: 10 MB, a million
    brackets, a megabyte of escapes, digits or whitespace."""
    limit = MAX_REPLY_CHARS
    return [
        ("10 MB string argument", _action('{"s":"' + "x" * (10 * _MB) + '"}'), False),
        ("10 MB of brackets", "[" * (5 * _MB) + "]" * (5 * _MB), False),
        ("1,000,000 open brackets", "[" * _MB, False),
        ("1,000,000 nested brackets in arguments", _action("[" * _MB + "]" * _MB), False),
        ("nested brackets up to the limit", _fill(lambda n: _action("[" * n + "]" * n), limit), False),
        (
            "nested objects up to the limit",
            _fill(lambda n: _action('{"a":' * n + "1" + "}" * n), limit),
            False,
        ),
        ("1 MB of \\n escapes", _fill(lambda n: _action('{"s":"' + "\\n" * n + '"}'), limit), True),
        ("1 MB of \\u00e9 escapes", _fill(lambda n: _action('{"s":"' + "\\u00e9" * n + '"}'), limit), True),
        (
            "1 MB of escaped pairs",
            _fill(lambda n: _action('{"s":"' + "\\ud83d\\ude00" * n + '"}'), limit),
            True,
        ),
        ("1 MB of lone surrogates", _fill(lambda n: _action('{"s":"' + "\\ud800" * n + '"}'), limit), False),
        ("1 MB integer", _fill(lambda n: _action('{"n":' + "7" * n + "}"), limit), False),
        ("1 MB fraction", _fill(lambda n: _action('{"n":0.' + "7" * n + "}"), limit), True),
        ("1 MB exponent", _fill(lambda n: _action('{"n":1e' + "9" * n + "}"), limit), False),
        (  # decoded twice: the second time to see which object repeats (the last value counts)
            "80,000 keys, the last repeated",
            _action("{" + ",".join(f'"k{i}":1' for i in range(80_000)) + ',"k0":2}'),
            True,
        ),
        (
            "80,000 keys, then the action's own repeated",
            _action("{" + ",".join(f'"k{i}":1' for i in range(80_000)) + "}")[:-1] + ',"tool":"t"}',
            False,
        ),
        ("1 MB of whitespace", _fill(lambda n: " " * n + '{"tool":"none"}', limit), True),
        ("1 MB non-ASCII string", _fill(lambda n: _action('{"s":"' + "é" * n + '"}'), limit), True),
    ]
