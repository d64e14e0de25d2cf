"""Catalogue adapters: every source shape to tools-for-llm, in order, copied, and refused by index."""

from __future__ import annotations

import copy
import json
from typing import Any

import pydantic
import pytest
from jsonschema import Draft202012Validator
from support.catalogues import SEARCH_PARAMETERS, declared
from support.paths import TESTS

from toolrouting import (
    CatalogueError,
    route_schema,
    route_tool_names,
    tools_from,
    tools_from_anthropic,
    tools_from_declarations,
    tools_from_mcp,
    tools_from_openai,
    tools_from_responses,
)

EXPECTED = [declared("search", "Search notes.", SEARCH_PARAMETERS), declared("ping")]

OPENAI = copy.deepcopy(EXPECTED)
RESPONSES = [
    {
        "type": "function",
        "name": "search",
        "description": "Search notes.",
        "parameters": SEARCH_PARAMETERS,
        "strict": False,
    },
    {"type": "function", "name": "ping"},
]
MCP: list[dict[str, Any]] = [
    {"name": "search", "title": "Search", "description": "Search notes.", "inputSchema": SEARCH_PARAMETERS},
    {"name": "ping"},
]
ANTHROPIC = [
    {
        "name": "search",
        "description": "Search notes.",
        "input_schema": SEARCH_PARAMETERS,
        "cache_control": {"type": "ephemeral"},
    },
    {"type": "custom", "name": "ping"},
]
DECLARATIONS = [
    {"name": "search", "description": "Search notes.", "parameters": SEARCH_PARAMETERS},
    {"name": "ping"},
]

SHAPES = {
    "openai": (tools_from_openai, OPENAI),
    "responses": (tools_from_responses, RESPONSES),
    "anthropic": (tools_from_anthropic, ANTHROPIC),
    "declarations": (tools_from_declarations, DECLARATIONS),
}


@pytest.mark.parametrize("shape", SHAPES)
def test_each_shape_becomes_tools_for_llm(shape: str) -> None:
    convert, source = SHAPES[shape]
    assert convert(source) == EXPECTED
    assert tools_from(source) == EXPECTED


def test_mcp_keeps_description_and_falls_back_to_title() -> None:
    assert tools_from_mcp(MCP) == EXPECTED
    titled = tools_from_mcp([{"name": "ls", "title": "List a directory", "inputSchema": {"type": "object"}}])
    assert titled[0]["function"]["description"] == "List a directory"


def test_mcp_takes_a_whole_tools_list_result() -> None:
    result = {"tools": MCP, "nextCursor": "abc"}
    assert tools_from_mcp(result) == EXPECTED
    assert tools_from(result) == EXPECTED


def test_a_list_may_mix_shapes_and_keeps_their_order() -> None:
    mixed = [
        MCP[1],
        RESPONSES[0],
        {"name": "c", "input_schema": {"type": "object"}},
        declared("d"),
        {"name": "e", "parameters": SEARCH_PARAMETERS},
    ]
    assert route_tool_names(tools_from(mixed)) == ["ping", "search", "c", "d", "e"]


def test_parameters_are_copied_not_shared() -> None:
    source = copy.deepcopy(MCP)
    tools = tools_from_mcp(source)
    tools[0]["function"]["parameters"]["properties"]["query"]["type"] = "integer"
    assert source[0]["inputSchema"]["properties"]["query"]["type"] == "string"


def test_declarations_lower_capitalised_types_and_take_parameters_json_schema() -> None:
    gemini: list[dict[str, Any]] = [
        {"name": "a", "parameters": {"type": "OBJECT", "properties": {"n": {"type": "INTEGER"}}}},
        {"name": "b", "parametersJsonSchema": SEARCH_PARAMETERS},
    ]
    tools = tools_from_declarations(gemini)
    assert tools[0]["function"]["parameters"] == {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert tools[1]["function"]["parameters"] == SEARCH_PARAMETERS
    assert gemini[0]["parameters"]["type"] == "OBJECT"  # the source is untouched


def test_every_corpus_catalogue_converts_and_builds_a_route() -> None:
    for path in sorted((TESTS / "catalogues").glob("*.json")):
        data = json.loads(path.read_text())
        assert len(route_schema(tools_from(data))["anyOf"]) == len(data["tools"]) + 1, path.name


REFUSED: list[tuple[Any, Any, int, str]] = [
    (tools_from_openai, [OPENAI[0], {"type": "function", "name": "flat"}], 1, '"function": {...}'),
    (tools_from_openai, [OPENAI[0], {"type": "function", "function": {}}], 1, "has no name"),
    (tools_from_responses, [RESPONSES[0], {"type": "function"}], 1, "Responses tool"),
    (tools_from_mcp, [MCP[0], {"inputSchema": SEARCH_PARAMETERS}], 1, "MCP tool has no name"),
    (tools_from_mcp, [MCP[0], {"name": "bad", "inputSchema": {"type": "string"}}], 1, "not an object schema"),
    (tools_from_anthropic, [{"type": "web_search_20250305", "name": "web_search"}], 0, "server tool"),
    (tools_from_anthropic, [{"description": "x"}], 0, "Anthropic tool has no name"),
    (tools_from_declarations, [{"description": "x"}], 0, "declaration has no name"),
    (tools_from_declarations, [DECLARATIONS[0], DECLARATIONS[0]], 1, "used twice (first by entry 0)"),
    (tools_from_declarations, [{"name": "none"}], 0, "indistinguishable from the handoff"),
    (tools_from_declarations, [{"name": "a", "description": 3}], 0, "description"),
    (tools_from_declarations, [{"name": "two words"}], 0, "whitespace"),
    (tools_from, [MCP[0], "search"], 1, "mapping, not str"),
    (tools_from, [MCP[0], {"label": "x"}], 1, "not a tool in a known shape"),
    (
        tools_from,
        [{"name": "x", "parameters": {"type": "object", "default": float("nan")}}],
        0,
        "JSON cannot carry",
    ),
]


@pytest.mark.parametrize(("convert", "source", "index", "reason"), REFUSED)
def test_refusals_name_the_entry_and_the_reason(convert: Any, source: Any, index: int, reason: str) -> None:
    with pytest.raises(CatalogueError) as caught:
        convert(source)
    assert caught.value.index == index
    assert reason in caught.value.reason


@pytest.mark.parametrize("source", ["tools", {"name": "x"}, 3])
def test_a_list_is_required(source: Any) -> None:
    with pytest.raises(CatalogueError, match="sequence of tool declarations"):
        tools_from(source)


def test_route_schema_hoists_each_tools_defs_so_its_refs_resolve() -> None:
    # Inside the route, "#" is the route's root: a tool's own $defs move there, renamed TOOL.NAME.
    parameters: dict[str, Any] = {
        "type": "object",
        "properties": {
            "who": {"$ref": "#/$defs/Person"},
            "again": {"$ref": "#/properties/who"},
            "example": {"type": "object", "default": {"$ref": "#/not/a/reference"}},
        },
        "$defs": {"Person": {"type": "object", "properties": {"boss": {"$ref": "#/$defs/Person"}}}},
    }
    schema = route_schema(tools_from([{"name": "a/b", "parameters": parameters}]))
    arguments = schema["anyOf"][0]["properties"]["arguments"]
    assert "$defs" not in arguments
    assert schema["$defs"] == {
        "a/b.Person": {"type": "object", "properties": {"boss": {"$ref": "#/$defs/a~1b.Person"}}}
    }
    assert arguments["properties"]["who"] == {"$ref": "#/$defs/a~1b.Person"}
    assert arguments["properties"]["again"] == {"$ref": "#/anyOf/0/properties/arguments/properties/who"}
    assert arguments["properties"]["example"]["default"] == {"$ref": "#/not/a/reference"}
    assert parameters["$defs"]["Person"]["properties"]["boss"] == {"$ref": "#/$defs/Person"}  # untouched
    Draft202012Validator(schema).validate({"tool": "a/b", "arguments": {"who": {"boss": {}}}})


class SdkTool(pydantic.BaseModel):
    """A stand-in for the MCP SDK's ``Tool`` (2.x): snake_case fields, the protocol's names as aliases."""

    model_config = pydantic.ConfigDict(populate_by_name=True)
    name: str
    title: str | None = None
    description: str | None = None
    input_schema: dict[str, Any] = pydantic.Field(alias="inputSchema")
    output_schema: dict[str, Any] | None = pydantic.Field(default=None, alias="outputSchema")


class SdkResult(pydantic.BaseModel):
    """A stand-in for the SDK's ``ListToolsResult``."""

    model_config = pydantic.ConfigDict(populate_by_name=True)
    tools: list[SdkTool]
    next_cursor: str | None = pydantic.Field(default=None, alias="nextCursor")


SDK_RESULT = SdkResult(
    tools=[
        SdkTool(name="search", title="Search", description="Search notes.", input_schema=SEARCH_PARAMETERS),
        SdkTool(name="ping", input_schema={"type": "object"}),
    ]
)
PING_WITH_EMPTY_OBJECT = [EXPECTED[0], declared("ping", parameters={"type": "object"})]


@pytest.mark.parametrize("convert", [tools_from, tools_from_mcp])
def test_the_sdks_objects_are_read_by_alias(convert: Any) -> None:
    assert convert(SDK_RESULT) == PING_WITH_EMPTY_OBJECT
    assert convert(SDK_RESULT.tools) == PING_WITH_EMPTY_OBJECT


@pytest.mark.parametrize("convert", [tools_from, tools_from_mcp])
@pytest.mark.parametrize("exclude_none", [False, True])
def test_the_sdks_snake_case_dump_keeps_the_parameters(convert: Any, exclude_none: bool) -> None:
    dumped = SDK_RESULT.model_dump(exclude_none=exclude_none)  # no by_alias: input_schema
    assert "input_schema" in dumped["tools"][0]
    assert convert(dumped) == PING_WITH_EMPTY_OBJECT


@pytest.mark.parametrize("convert", [tools_from, tools_from_mcp])
def test_a_saved_json_rpc_response_is_unwrapped(convert: Any) -> None:
    response = {"jsonrpc": "2.0", "id": 2, "result": {"tools": MCP, "nextCursor": None}}
    assert convert(response) == EXPECTED
    assert convert(json.loads(json.dumps(response))) == EXPECTED
    with pytest.raises(TypeError, match=r"JSON-RPC response is an error \('Method not found'\)"):
        convert({"jsonrpc": "2.0", "id": 2, "error": {"code": -32601, "message": "Method not found"}})


def test_the_real_sdk_objects_when_installed() -> None:
    types = pytest.importorskip("mcp.types")
    tool = types.Tool.model_validate({"name": "search", "inputSchema": SEARCH_PARAMETERS})
    result = types.ListToolsResult.model_validate({"tools": [tool.model_dump(by_alias=True)]})
    expected = [declared("search", parameters=SEARCH_PARAMETERS)]
    for source in (result, [tool], result.model_dump(), result.model_dump(by_alias=True)):
        assert tools_from(source) == expected
        assert tools_from_mcp(source) == expected


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
