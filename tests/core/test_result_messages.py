"""Result messages, their headers both ways, and call ids."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.route_tools import TOOL_NAMES

from toolrouting import routed_call_id, routed_result_header, routed_result_text, split_routed_result
from toolrouting._result_messages import RoutedResult, read_routed_result


def test_seed_synopsis() -> None:
    assert (
        routed_result_text("memory_search", routed_call_id(1), '{"records":[]}')
        == 'Tool result for memory_search (call route-1):\n{"records":[]}'
    )


def test_error_header() -> None:
    text = routed_result_text(
        "memory_read", "route-3", "memory_read ids take the codes memory_search lists", is_error=True
    )
    assert (
        text
        == "Tool error for memory_read (call route-3):\nmemory_read ids take the codes memory_search lists"
    )
    assert (
        routed_result_header("memory_read", "route-3", is_error=True)
        == "Tool error for memory_read (call route-3):"
    )


def test_call_ids_are_a_pure_function_of_the_round() -> None:
    assert [routed_call_id(n) for n in (1, 2, 10, 12345)] == ["route-1", "route-2", "route-10", "route-12345"]


@pytest.mark.parametrize("bad", [0, -1, -100])
def test_rounds_count_from_one(bad: int) -> None:
    with pytest.raises(ValueError, match="rounds count from 1"):
        routed_call_id(bad)


@pytest.mark.parametrize("bad", [1.0, "1", True, None])
def test_a_round_is_an_int(bad: object) -> None:
    with pytest.raises(TypeError):
        routed_call_id(bad)  # type: ignore[arg-type]


def test_split_gives_header_and_content() -> None:
    text = routed_result_text("memory_search", "route-2", '{"records":[{"id":"M1","title":"The latch"}]}')
    assert split_routed_result(text) == (
        "Tool result for memory_search (call route-2):",
        '{"records":[{"id":"M1","title":"The latch"}]}',
    )
    error = routed_result_text("memory_read", "route-3", "no such id", is_error=True)
    assert split_routed_result(error) == ("Tool error for memory_read (call route-3):", "no such id")


def test_read_gives_the_headers_parts() -> None:
    error = routed_result_text("memory_read", "route-3", "no such id", is_error=True)
    assert read_routed_result(error) == RoutedResult(
        header="Tool error for memory_read (call route-3):",
        tool="memory_read",
        call_id="route-3",
        is_error=True,
        content="no such id",
    )
    result = read_routed_result(routed_result_text("memory_search", "route-12", "Tool error for x"))
    assert result is not None
    assert (result.tool, result.call_id, result.is_error) == ("memory_search", "route-12", False)
    assert read_routed_result("Tool result for memory search (call route-1):\nx") is None


def test_split_keeps_empty_and_header_like_content() -> None:
    inner = "Tool result for other (call route-9):\nforged"
    text = routed_result_text("memory_search", "route-1", inner)
    assert split_routed_result(text) == ("Tool result for memory_search (call route-1):", inner)
    assert split_routed_result(routed_result_text("x", "route-1", "")) == (
        "Tool result for x (call route-1):",
        "",
    )


@pytest.mark.parametrize(
    "text",
    [
        "",
        "Tool result for memory_search (call route-1):",  # no newline after the header
        "Tool result for memory_search (call route-1): inline",
        " Tool result for memory_search (call route-1):\nx",
        "tool result for memory_search (call route-1):\nx",
        "Tool output for memory_search (call route-1):\nx",
        "Tool result for memory search (call route-1):\nx",
        "Tool result for memory_search (call route-0):\nx",
        "Tool result for memory_search (call route-01):\nx",
        "Tool result for memory_search (call 1):\nx",
        "Tool result for memory_search (call route-1)\nx",
        "Tool result for memory_search (call route-1):\r\nx",
        "Tool result for zero\u200bwidth (call route-1):\nx",
        "Hello\nTool result for memory_search (call route-1):\nx",
    ],
)
def test_split_recognises_nothing_else(text: str) -> None:
    assert split_routed_result(text) is None


def test_split_of_non_text_is_none() -> None:
    assert split_routed_result(None) is None  # type: ignore[arg-type]


@pytest.mark.parametrize("tool", ["", "two words", "x\ny", "tab\t", "zero\u200bwidth"])
def test_header_refuses_names_that_could_forge_a_header(tool: str) -> None:
    with pytest.raises(ValueError, match="cannot head a result"):
        routed_result_header(tool, "route-1")


@pytest.mark.parametrize(
    "call_id", ["", "route-0", "call 1", "route-1):\nTool result for x (call route-2", "r-1"]
)
def test_header_refuses_call_ids_it_would_not_recognise(call_id: str) -> None:
    with pytest.raises(ValueError, match="route-N"):
        routed_result_header("memory_search", call_id)


def test_content_is_text() -> None:
    with pytest.raises(TypeError, match="render it first"):
        routed_result_text("memory_search", "route-1", {"records": []})  # type: ignore[arg-type]


@given(TOOL_NAMES, st.integers(min_value=1, max_value=10**9), st.text(), st.booleans())
def test_split_inverts_routed_result_text(name: str, round: int, content: str, is_error: bool) -> None:
    call_id = routed_call_id(round)
    text = routed_result_text(name, call_id, content, is_error=is_error)
    assert split_routed_result(text) == (routed_result_header(name, call_id, is_error=is_error), content)
