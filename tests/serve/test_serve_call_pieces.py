"""A streamed decision handed out as tool-call pieces (``_serve/call_pieces.py``), without a
socket: the call's head as soon as one offered name alone fits, its arguments as written."""

from __future__ import annotations

from toolrouting._serve import (
    arguments_text,
)
from toolrouting._serve.chat.writer import delta_body
from toolrouting._serve.core.call_pieces import CallStream
from toolrouting._serve.core.exchange import ToolCall


def test_a_streamed_call_hands_out_its_head_first_and_its_arguments_as_written() -> None:
    reply = '{"tool":"search","arguments":{"query":"the {latch}"}}'
    stream = CallStream(["search", "read"], "route-1", spaced=False)
    pieces = [piece for char in reply for piece in stream.feed(char)]
    arguments = arguments_text(reply, "search", {"query": "the {latch}"}, spaced=False)
    pieces += stream.finish(ToolCall(id="route-1", name="search", arguments=arguments))
    deltas = [delta_body(piece) for piece in pieces]
    head = deltas[0]["tool_calls"][0]
    assert (head["index"], head["id"], head["type"], head["function"]["name"]) == (
        0,
        "route-1",
        "function",
        "search",
    )
    assert "".join(d["tool_calls"][0]["function"]["arguments"] for d in deltas) == arguments
    assert len(deltas) > 3  # the arguments came in pieces, not at the end


def test_a_streamed_call_is_named_as_soon_as_one_offered_name_alone_fits() -> None:
    stream = CallStream(["search", "read", "reader"], "route-1", spaced=False)
    assert stream.feed('{"tool":"re') == []  # read, reader
    assert stream.feed("ad") == []  # read or reader still
    [head] = map(delta_body, stream.feed('er"'))
    assert head["tool_calls"][0]["function"]["name"] == "reader"
    other = CallStream(["search", "read"], "route-1", spaced=False)
    assert other.feed('{"tool":"n') == []  # none is an action too: no call yet
    [named] = map(delta_body, CallStream(["search", "read"], "route-1", spaced=False).feed('{"tool":"s'))
    assert named["tool_calls"][0]["function"]["name"] == "search"
