"""Resource bounds: parse_route answers every hostile reply as it should and never raises.

The replies are benchmarks/common/hostile.py's (10 MB, a million brackets, a megabyte of escapes,
digits or whitespace); benchmarks/speed/bounds.py measures their time and peak memory.
"""

from __future__ import annotations

import pytest

from benchmarks.common.hostile import HOSTILE_NAMES, hostile_replies
from toolrouting import MAX_REPLY_CHARS, parse_route

CASES = hostile_replies()


@pytest.mark.parametrize(("what", "text", "ok"), CASES, ids=[what for what, _, _ in CASES])
def test_hostile_reply_is_answered(what: str, text: str, ok: bool) -> None:
    route = parse_route(text, HOSTILE_NAMES)
    assert route.ok is ok, route.error
    if len(text) > MAX_REPLY_CHARS:
        assert route.error == f"the reply has {len(text)} characters, over the limit of {MAX_REPLY_CHARS}"
    if not ok:
        assert route.error is not None
        assert not route.error.startswith("the reply could not be checked")


def test_a_reply_at_the_limit_is_decoded_and_one_over_is_not() -> None:
    head = '{"tool":"t","arguments":{"s":"'
    at_limit = head + "x" * (MAX_REPLY_CHARS - len(head) - 3) + '"}}'
    assert len(at_limit) == MAX_REPLY_CHARS
    assert parse_route(at_limit, ["t"]).ok
    over = " " + at_limit
    assert parse_route(over, ["t"]).error == (
        f"the reply has {MAX_REPLY_CHARS + 1} characters, over the limit of {MAX_REPLY_CHARS}"
    )
