"""Resource bounds of parse_route on hostile replies: time and peak memory, one row per reply.

    .venv/bin/python -m benchmarks.speed.bounds

Time is the best of three runs; peak memory is traced (tracemalloc) in a separate run, and
counts what parse_route allocates, not the reply itself. The replies are hostile.py's
(tests/core/test_parse_bounds.py asserts how parse_route answers each).
"""

from __future__ import annotations

import time
import tracemalloc

from benchmarks.common.hostile import HOSTILE_NAMES, hostile_replies
from toolrouting import MAX_REPLY_CHARS, parse_route

__all__ = ["main"]


def _seconds(text: str) -> float:
    best = float("inf")
    for _ in range(3):
        start = time.perf_counter()
        parse_route(text, HOSTILE_NAMES)
        best = min(best, time.perf_counter() - start)
    return best


def _peak_bytes(text: str) -> int:
    tracemalloc.start()
    try:
        parse_route(text, HOSTILE_NAMES)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def main() -> None:
    print(f"parse_route on hostile replies (limit MAX_REPLY_CHARS = {MAX_REPLY_CHARS:,})\n")
    print(f"| {'reply':<40} | {'characters':>12} | {'ok':<5} | {'time':>9} | {'peak memory':>11} | error")
    print(f"|{'-' * 42}|{'-' * 14}|{'-' * 7}|{'-' * 11}|{'-' * 13}|------")
    for what, text, _ in hostile_replies():
        route = parse_route(text, HOSTILE_NAMES)
        seconds, peak = _seconds(text), _peak_bytes(text)
        error = (route.error or "")[:48]
        print(
            f"| {what:<40} | {len(text):>12,} | {route.ok!s:<5} | {seconds * 1000:>6.1f} ms"
            f" | {peak / 2**20:>7.1f} MiB | {error}"
        )


if __name__ == "__main__":
    main()
