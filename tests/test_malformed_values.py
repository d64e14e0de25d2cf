"""Malformed and extreme values given to backends, catalogue adapters, tools and preflight: each
ends in the documented error, never a crash.

httpx.MockTransport is a named fake here: it plays a server answering in ways no local
server can be made to (a schema-typed list, a 100,000-character key, an absurd date).
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from toolrouting import (
    TARGETS,
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    CatalogueError,
    Finding,
    FunctionTools,
    OpenAICompatible,
    Settings,
    preflight,
    tools_from,
    tools_from_declarations,
    tools_from_openai,
)
from toolrouting._loop.tool_calls import tool_exception

HI = [{"role": "user", "content": "hi"}]


def _backend(response: httpx.Response, **settings: Any) -> OpenAICompatible:
    client = httpx.Client(transport=httpx.MockTransport(lambda request: response))
    return OpenAICompatible("http://127.0.0.1:1", settings=Settings(**settings), http_client=client)


def _completion(text: str) -> httpx.Response:
    body = {"choices": [{"message": {"content": text}, "finish_reason": "stop"}]}
    return httpx.Response(200, json=body)


def test_a_schema_whose_type_is_a_list_is_checked_like_any_json() -> None:
    backend = _backend(_completion('{"a": 1}'), json_schema={"type": ["object", "null"]})
    assert backend.complete(HI).text == '{"a": 1}'  # type: ignore[arg-type]


def test_an_absurd_retry_after_date_is_unreadable_not_a_crash() -> None:
    headers = {"Retry-After": "Mon, 01 Jan 10000000000000000000 00:00:00 GMT"}
    with pytest.raises(BackendHTTPError) as caught:
        _backend(httpx.Response(503, headers=headers, text="busy")).complete(HI)  # type: ignore[arg-type]
    assert caught.value.retry_after is None


def test_a_body_with_huge_keys_is_quoted_within_bounds() -> None:
    with pytest.raises(BackendResponseError) as caught:
        _backend(httpx.Response(200, json={"x" * 100_000: 1})).complete(HI)  # type: ignore[arg-type]
    assert len(str(caught.value)) < 1_000


def _nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object"}
    for _ in range(depth):
        schema = {"type": "object", "properties": {"x": schema}}
    copied: dict[str, Any] = json.loads(json.dumps(schema))
    return copied


def test_deep_parameters_are_copied_or_refused_by_every_adapter() -> None:
    deep = _nested(120)  # 240 levels of JSON: within MAX_SCHEMA_NESTING
    openai = [{"type": "function", "function": {"name": "f", "parameters": deep}}]
    assert tools_from_openai(openai)[0]["function"]["parameters"] == deep
    deeper = [{"type": "function", "function": {"name": "f", "parameters": _nested(250)}}]
    with pytest.raises(CatalogueError, match="past 256 levels of JSON at /parameters/properties/x"):
        tools_from_openai(deeper)
    self_referencing: dict[str, Any] = {"type": "object", "properties": {}}
    self_referencing["properties"]["x"] = self_referencing
    with pytest.raises(CatalogueError, match="nest too deeply"):
        tools_from_declarations([{"name": "f", "parameters": self_referencing}])


@pytest.mark.parametrize(
    "catalogue",
    [
        [{"type": "function", "function": {"name": 10**5000, "description": 5}}],
        [{"type": 10**5000, "name": "a"}],
        [{10**5000: 1}],
    ],
)
def test_values_python_cannot_print_are_named_not_raised(catalogue: list[Any]) -> None:
    with pytest.raises(CatalogueError) as caught:
        tools_from(catalogue)
    assert caught.value.index == 0


class Unprintable(Exception):
    def __str__(self) -> str:
        raise RuntimeError("no words")


def test_a_tool_exception_that_cannot_print_itself_is_still_reported() -> None:
    assert (
        tool_exception(Unprintable()) == "the tool failed: Unprintable: (its message could not be rendered)"
    )
    assert len(tool_exception(ValueError("x" * 10_000))) < 600


def scale(x: float) -> float:
    """Scale a number."""
    return x * 2


def tags(t: set[Any]) -> int:
    """Count tags."""
    return len(t)


def broken() -> None:
    """Fail without words."""
    raise Unprintable()


def test_arguments_that_do_not_fit_are_error_results() -> None:
    tools = FunctionTools(scale, tags, broken)
    assert tools.call("scale", {"x": 10**400}).is_error
    assert tools.call("tags", {"t": [[1]]}).is_error
    output = tools.call("broken", {})
    assert output.is_error
    assert "could not be rendered" in output.content


@pytest.mark.parametrize(
    "settings",
    [{"temperature": float("nan")}, {"json_schema": {"type": "object", "enum": {1, 2}}}],
)
def test_a_request_json_cannot_carry_is_a_backend_error(settings: dict[str, Any]) -> None:
    with pytest.raises(BackendError, match="cannot be written as JSON"):
        _backend(_completion("{}"), **settings).complete(HI)  # type: ignore[arg-type]


def test_an_api_key_that_cannot_be_a_header_is_refused_up_front() -> None:
    with pytest.raises(ValueError, match="printable ASCII"):
        OpenAICompatible("http://127.0.0.1:1", api_key="clé")


def test_a_closed_backend_says_so() -> None:
    backend = OpenAICompatible("http://127.0.0.1:1")
    backend.close()
    with pytest.raises(BackendError, match="client is closed"):
        backend.complete(HI)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "schema",
    [
        {"properties": 5},
        {"type": "object", "properties": None},
        {"type": "object", "properties": {"a": {}}, "required": 5},
        {"type": "object", "properties": {"a": {}}, "required": [["a"]], "minProperties": 1},
        {"anyOf": [{}], 1: {}},
    ],
)
def test_preflight_reads_malformed_schemas_without_crashing(schema: dict[Any, Any]) -> None:
    for target in TARGETS:
        assert all(isinstance(finding, Finding) for finding in preflight(schema, target))
