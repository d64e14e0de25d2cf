"""Coverage-guided differential fuzzing of parse_route against the reference oracle (atheris).

Each input is one reply: its bytes decoded as UTF-8 (encoded surrogates pass through, invalid
bytes become lone surrogates), checked with the names below. A disagreement, a parser that
raised inside, an over-long or unencodable error is a crash, which libFuzzer saves.

Long campaign (new inputs go to the first folder; fuzz/corpus stays as committed)::

    mkdir -p /tmp/route-corpus
    nice -n 10 .venv/bin/python fuzz/fuzz_parse_route.py -max_total_time=3600 \\
        -print_final_stats=1 /tmp/route-corpus fuzz/corpus
"""

from __future__ import annotations

import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(_ROOT / "tests"), str(_ROOT)]

import atheris  # noqa: E402

with atheris.instrument_imports(include=["toolrouting", "support.route_oracle"]):
    from support.route_oracle import disagreement

__all__ = ["NAMES", "reply_of", "test_one_input"]

#: Offered tools: ASCII, names equal to the action's own keys, non-ASCII, combining marks.
NAMES = ("memory_search", "memory_read", "t", "tool", "arguments", "é", "日本", "x\u0301")


def reply_of(data: bytes) -> str:
    """The reply an input stands for."""
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape")


def test_one_input(data: bytes) -> None:
    """libFuzzer's entry point: raise on any disagreement."""
    problem = disagreement(reply_of(data), NAMES)
    if problem is not None:
        raise AssertionError(problem)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
