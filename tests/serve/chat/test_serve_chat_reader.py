"""The chat completions front's reader (``_serve/chat/reader.py``) and the body decoder, without a
socket: a body read into the core's request, or a bad field refused by its path."""

from __future__ import annotations

from typing import Any

import pytest
from support.serve_bodies import body
from support.serve_tools import TOOLS

from toolrouting import ChatRequestError
from toolrouting._limits import SERVE_MAX_BODY_BYTES
from toolrouting._serve import (
    decode_body,
    read_chat_request,
)


def refused(value: Any) -> ChatRequestError:
    with pytest.raises(ChatRequestError) as caught:
        read_chat_request(value)
    return caught.value


def test_tool_choice_defaults_to_auto_with_tools_and_to_text_without() -> None:
    assert read_chat_request(body(tools=TOOLS)).tool_choice.mode == "auto"
    assert read_chat_request(body()).tool_choice.mode == "none"


@pytest.mark.parametrize(
    ("value", "param", "code"),
    [
        ([], None, "invalid_request"),
        ({"messages": []}, "messages", "invalid_request"),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role", "unknown_role"),
        ({"messages": [{"role": "user"}]}, "messages[0].content", "invalid_request"),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
            "messages[0].content[0]",
            "unsupported_content",
        ),
        (body(n=2), "n", "unsupported_parameter"),
        (body(temperature=3), "temperature", "invalid_request"),
        (body(max_tokens=0), "max_tokens", "invalid_request"),
        (body(stop=["a", "b", "c", "d", "e"]), "stop", "invalid_request"),
        (body(stream="yes"), "stream", "invalid_request"),
        (body(tool_choice="required"), "tool_choice", "invalid_request"),
        (
            body(tools=TOOLS, tool_choice={"type": "function", "function": {"name": "nope"}}),
            None,
            "unknown_tool",
        ),
        (body(tools={"search": {}}), "tools", "invalid_request"),
    ],
)
def test_a_bad_field_is_refused_by_its_path(value: Any, param: str | None, code: str) -> None:
    error = refused(value)
    assert error.status == 400
    assert error.code == code
    if param is not None:
        assert error.param == param


def test_a_body_that_is_not_json_or_too_large_is_refused() -> None:
    with pytest.raises(ChatRequestError, match="not valid JSON"):
        decode_body(b"{bad")
    with pytest.raises(ChatRequestError, match="not valid JSON"):
        decode_body(b'{"temperature": NaN}')
    with pytest.raises(ChatRequestError) as caught:
        decode_body(b" " * (SERVE_MAX_BODY_BYTES + 1))
    assert caught.value.status == 413


def test_parallel_tool_calls_is_a_bool() -> None:
    assert read_chat_request(body()).parallel_tool_calls is True
    assert read_chat_request(body(parallel_tool_calls=False)).parallel_tool_calls is False
    error = refused(body(parallel_tool_calls="no"))
    assert (str(error), error.param) == (
        "parallel_tool_calls: parallel_tool_calls is a boolean, not a string",
        "parallel_tool_calls",
    )
