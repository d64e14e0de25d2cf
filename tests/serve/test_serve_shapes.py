"""The typed wire shapes are what the server writes: every body and every event of the recorded
exchanges (tests/serve_recorded/, a few hundred on the three fronts) fits the ``TypedDict`` of its
front's ``shapes`` module, or the shared ``errors.ErrorBody``, with every key it carries declared
there and every required key present.

mypy holds the writers to the shapes where they build them; this holds the shapes to the bytes
actually served, so a shape that says less or more than the wire fails here.
"""

from __future__ import annotations

import json
import re
import types
from typing import Any, Literal, NotRequired, Union, get_args, get_origin, get_type_hints, is_typeddict

import pytest
from support.paths import TESTS

from toolrouting._serve.chat.shapes import ChatCompletion, ChatCompletionChunk
from toolrouting._serve.error_replies import ErrorBody
from toolrouting._serve.messages import shapes as messages
from toolrouting._serve.responses import shapes as responses

RECORDED = TESTS / "serve_recorded"


def _misfits(value: object, shape: Any, at: str = "") -> list[str]:
    """Where ``value`` (decoded JSON) does not fit ``shape``, each as a path and why; ``[]`` when it fits."""
    origin, args = get_origin(shape), get_args(shape)
    if shape is Any or shape is object:
        return []
    if shape is None or shape is type(None):
        return [] if value is None else [f"{at}: {value!r} is not null"]
    if origin is Literal:
        return [] if any(value == arg and type(value) is type(arg) for arg in args) else [f"{at}: {value!r}"]
    if origin in (Union, types.UnionType):
        tries = [_misfits(value, arg, at) for arg in args]
        return [] if [] in tries else [f"{at}: fits none of {shape}: {min(tries, key=len)}"]
    if origin is list:
        if not isinstance(value, list):
            return [f"{at}: {value!r} is not a list"]
        items = enumerate(value)
        return [wrong for index, item in items for wrong in _misfits(item, args[0], f"{at}[{index}]")]
    if origin is dict:
        return [] if isinstance(value, dict) else [f"{at}: {value!r} is not an object"]
    if is_typeddict(shape):
        return _object_misfits(value, shape, at)
    kinds = (int, float) if shape is float else (shape,)
    if (isinstance(value, bool) and shape is not bool) or not isinstance(value, kinds):
        return [f"{at}: {value!r} is not {shape.__name__}"]
    return []


def _object_misfits(value: object, shape: Any, at: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{at}: {value!r} is not an object ({shape.__name__})"]
    hints = get_type_hints(shape, include_extras=True)
    wrong = [f"{at}.{key}: not in {shape.__name__}" for key in value if key not in hints]
    for key, hint in hints.items():
        optional = get_origin(hint) is NotRequired or not shape.__total__
        inner = get_args(hint)[0] if get_origin(hint) is NotRequired else hint
        if key not in value:
            wrong += [] if optional else [f"{at}.{key}: missing ({shape.__name__})"]
        else:
            wrong += _misfits(value[key], inner, f"{at}.{key}")
    return wrong


def _decoded(text: str) -> Any:
    """A recorded body's JSON, its normalised timestamps (``<time>``) read as numbers."""
    return json.loads(re.sub(r":<time>", ":0", text))


def _shape(front: str, request: str, status: int, streamed: bool, body: Any) -> Any:
    """The shape a recorded body is written in: by its front, its request, its status and whether it
    is a stream's event."""
    method, path = request.split(" ", 1)
    if front == "messages" and path.startswith("/v1/messages"):
        if status != 200 or body.get("type") == "error":
            return messages.MessagesError
        if streamed:
            return messages.StreamEvent
        return messages.TokenCount if path.endswith("/count_tokens") else messages.Message
    if status != 200 or list(body) == ["error"]:  # an answer's error, or a chat stream's last event
        return ErrorBody
    if path.startswith("/v1/chat/completions"):
        return ChatCompletionChunk if streamed else ChatCompletion
    if path.startswith("/v1/responses"):
        if streamed:
            return responses.StreamEvent
        return responses.DeletedResponse if method == "DELETE" else responses.ResponseObject
    return None  # /health and /v1/models: no API's shape


def _bodies(front: str) -> list[tuple[str, str, Any, Any]]:
    """``(case, request, shape, body)`` of every body and event the front's recorded cases hold."""
    cases = json.loads((RECORDED / f"{front}.json").read_text(encoding="utf-8"))
    found = []
    for name, case in cases.items():
        for exchange in case["exchanges"]:
            streamed = any(value.startswith("text/event-stream") for _, value in exchange["headers"])
            for part in exchange["body"]:
                text = part.rpartition("data: ")[2].strip() if streamed else part
                if streamed and text == "[DONE]":
                    continue
                body = _decoded(text)
                shape = _shape(front, exchange["request"], exchange["status"], streamed, body)
                if shape is not None:
                    found.append((name, exchange["request"], shape, body))
    return found


@pytest.mark.parametrize("front", ["chat", "responses", "messages"])
def test_every_recorded_body_fits_its_shape(front: str) -> None:
    bodies = _bodies(front)
    assert len(bodies) > 90  # every case has at least one body with a shape
    misfits = {
        f"{name}: {request}": wrong
        for name, request, shape, body in bodies
        if (wrong := _misfits(body, shape))
    }
    assert misfits == {}


def test_a_body_that_strays_from_its_shape_is_caught() -> None:
    """The check can fail: a key the shape does not declare, a required key missing, a value of
    another type, and a literal the shape does not allow are each named by their path."""
    usage = {"input_tokens": 1, "cache_read_input_tokens": 0, "output_tokens": 2}
    assert _misfits(usage, messages.MessagesUsage) == []
    assert _misfits(usage | {"extra": 1}, messages.MessagesUsage) == [".extra: not in MessagesUsage"]
    assert _misfits({"input_tokens": 1, "output_tokens": 2}, messages.MessagesUsage) == [
        ".cache_read_input_tokens: missing (MessagesUsage)"
    ]
    assert _misfits(usage | {"output_tokens": True}, messages.MessagesUsage) == [
        ".output_tokens: True is not int"
    ]
    stop = {"type": "message_delta", "delta": {"stop_reason": "done", "stop_sequence": None}, "usage": usage}
    assert _misfits(stop, messages.MessageDeltaEvent) != []
    ended = stop | {"delta": {"stop_reason": "end_turn", "stop_sequence": None}}
    assert _misfits(ended, messages.StreamEvent) == []
