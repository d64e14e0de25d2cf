"""Resource bounds of parse_route on hostile replies: time and peak memory, one row per reply.

    .venv/bin/python benchmarks/bounds.py

Time is the best of three runs; peak memory is traced (tracemalloc) in a separate run, and
counts what parse_route allocates, not the reply itself.
"""

from __future__ import annotations

import sys
import time
import tracemalloc
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from toolrouting import MAX_REPLY_CHARS, parse_route

__all__ = ["NAMES", "cases", "main"]

NAMES = ("t",)
MB = 1_000_000


def _action(arguments: str) -> str:
    return '{"tool":"t","arguments":' + arguments + "}"


def _fill(make: Callable[[int], str], budget: int) -> str:
    """The longest ``make(n)`` within ``budget`` characters (``make`` grows with ``n``)."""
    low, high = 0, budget
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if len(make(middle)) <= budget else (low, middle - 1)
    return make(low)


def cases() -> list[tuple[str, str, bool]]:
    """(what, reply, whether parse_route accepts it) for each hostile reply."""
    limit = MAX_REPLY_CHARS
    return [
        ("10 MB string argument", _action('{"s":"' + "x" * (10 * MB) + '"}'), False),
        ("10 MB of brackets", "[" * (5 * MB) + "]" * (5 * MB), False),
        ("1,000,000 open brackets", "[" * MB, False),
        ("1,000,000 nested brackets in arguments", _action("[" * MB + "]" * MB), False),
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


def _seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        parse_route(text, NAMES)
        best = min(best, time.perf_counter() - start)
    return best


def _peak_bytes(text: str) -> int:
    tracemalloc.start()
    try:
        parse_route(text, NAMES)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    print(f"parse_route on hostile replies (limit MAX_REPLY_CHARS = {MAX_REPLY_CHARS:,})\n")
    print(f"| {'reply':<40} | {'characters':>12} | {'ok':<5} | {'time':>9} | {'peak memory':>11} | error")
    print(f"|{'-' * 42}|{'-' * 14}|{'-' * 7}|{'-' * 11}|{'-' * 13}|------")
    for what, text, _ in cases():
        route = parse_route(text, NAMES)
        seconds, peak = _seconds(text), _peak_bytes(text)
        error = (route.error or "")[:48]
        print(
            f"| {what:<40} | {len(text):>12,} | {route.ok!s:<5} | {seconds * 1000:>6.1f} ms"
            f" | {peak / 2**20:>7.1f} MiB | {error}"
        )


if __name__ == "__main__":
    main()
