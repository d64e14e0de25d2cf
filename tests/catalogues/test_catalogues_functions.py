"""Tools from Python callables: declarations from signatures and docstrings, and the provider."""

from __future__ import annotations

import datetime
import importlib.util
import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Optional

import pytest
from jsonschema import Draft202012Validator
from support.functions import add, search_notes

from toolrouting import (
    CatalogueError,
    FunctionTools,
    ToolOutput,
    ToolProvider,
    function_tool,
    route_schema,
)


def test_declaration_from_signature_hints_and_docstring() -> None:
    assert function_tool(search_notes) == {
        "type": "function",
        "function": {
            "name": "search_notes",
            "description": "Search the notes by their words.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"description": "Words to look for.", "type": "string"},
                    "limit": {"description": "At most this many results.", "type": "integer", "default": 10},
                    "tags": {
                        "description": "Only notes with all of these tags.",
                        "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                        "default": None,
                    },
                    "mode": {"type": "string", "enum": ["fast", "deep"], "default": "fast"},
                    "colour": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                    "weights": {
                        "anyOf": [
                            {"type": "object", "additionalProperties": {"type": "number"}},
                            {"type": "null"},
                        ],
                        "default": None,
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }


def test_numpy_style_parameters_and_positional_only_parameters() -> None:
    parameters = function_tool(add)["function"]["parameters"]
    assert parameters["properties"] == {
        "a": {"description": "The first.", "type": "integer"},
        "b": {"description": "The second number.", "type": "number"},
    }
    assert FunctionTools(add).call("add", {"a": 1, "b": 2}) == ToolOutput(content="3.0")


def test_more_hints() -> None:
    def f(  # type: ignore[no-untyped-def]
        a: Optional[int],  # noqa: UP045 (the spelling under test)
        b: Annotated[str, "what b is"],
        c: Sequence[bool],
        d: tuple[str, ...],
        e: set[int],
        g: Literal[1, 2],
        h: Literal["x", 1],
        i: dict,  # type: ignore[type-arg]
        j: Any,
        k=3,
    ) -> None:
        pass

    properties = function_tool(f)["function"]["parameters"]["properties"]
    assert properties == {
        "a": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "b": {"description": "what b is", "type": "string"},
        "c": {"type": "array", "items": {"type": "boolean"}},
        "d": {"type": "array", "items": {"type": "string"}},
        "e": {"type": "array", "items": {"type": "integer"}},
        "g": {"type": "integer", "enum": [1, 2]},
        "h": {"enum": ["x", 1]},
        "i": {"type": "object"},
        "j": {},
        "k": {"default": 3},
    }


def test_every_declaration_is_a_valid_schema_and_routes() -> None:
    tools = FunctionTools(search_notes, add).tools_for_llm()
    for tool in tools:
        Draft202012Validator.check_schema(tool["function"]["parameters"])
    assert [a["properties"]["tool"]["const"] for a in route_schema(tools)["anyOf"]] == [
        "search_notes",
        "add",
        "none",
    ]


def test_the_three_line_provider() -> None:
    tools = FunctionTools(search_notes, add)
    assert isinstance(tools, ToolProvider)
    output = tools.call("search_notes", {"query": "latch", "colour": "blue", "tags": ["door"]})
    assert output == ToolOutput(
        content='[{"query":"latch","limit":10,"tags":["door"],"mode":"fast","colour":"blue","weights":null}]'
    )


def test_catalogue_is_reread_fresh_each_time() -> None:
    tools = FunctionTools(search_notes)
    first = tools.tools_for_llm()
    first[0]["function"]["name"] = "changed"
    assert tools.tools_for_llm()[0]["function"]["name"] == "search_notes"


def test_name_override() -> None:
    assert function_tool(search_notes, name="notes.search")["function"]["name"] == "notes.search"


def _varargs(*items: str) -> None:
    pass


def _kwargs(**options: str) -> None:
    pass


def _tuple(pair: tuple[int, str]) -> None:
    pass


def _int_keys(table: dict[int, str]) -> None:
    pass


def _unknown(when: datetime.datetime) -> None:
    pass


def none() -> None:
    pass


@pytest.mark.parametrize(
    ("functions", "index", "reason"),
    [
        ((search_notes, _varargs), 1, "takes *items; a tool takes named parameters only"),
        ((_kwargs,), 0, "takes *options"),
        ((_tuple,), 0, "fixed-length tuple"),
        ((_int_keys,), 0, "str keys"),
        ((_unknown,), 0, "parameter 'when' of _unknown: datetime.datetime has no JSON schema here"),
        ((search_notes, search_notes), 1, "used twice"),
        ((none,), 0, "indistinguishable from the handoff"),
        (("search",), 0, "callable, not str"),
    ],
)
def test_refusals_name_the_function(functions: tuple[Any, ...], index: int, reason: str) -> None:
    with pytest.raises(CatalogueError) as caught:
        FunctionTools(*functions)
    assert caught.value.index == index
    assert reason in caught.value.reason


def test_pydantic_models_as_parameters() -> None:
    pytest.importorskip("pydantic")
    from support.pydantic_models import register

    tools = FunctionTools(register)
    parameters = tools.tools_for_llm()[0]["function"]["parameters"]
    assert parameters["properties"]["customer"]["title"] == "Customer"
    assert parameters["properties"]["customer"]["properties"]["address"] == {"$ref": "#/$defs/Address"}
    assert set(parameters["$defs"]) == {"Address"}
    schema = route_schema(tools.tools_for_llm())
    assert set(schema["$defs"]) == {"register.Address"}
    assert json.dumps(schema).count('"#/$defs/register.Address"') == 1

    # Validated into the model (its default filled in), and the model rendered back as JSON.
    output = tools.call("register", {"customer": {"name": "Ana", "address": {"city": "York"}}})
    assert output == ToolOutput(content='{"name":"Ana","address":{"city":"York","country":"GB"}}')
    refused = tools.call("register", {"customer": {"name": "Ana"}})
    assert refused.is_error
    assert "customer.address: Field required" in refused.content


def test_declarations_compile_under_llguidance() -> None:
    from support.compilers import Llguidance

    functions: list[Any] = [search_notes, add]
    if importlib.util.find_spec("pydantic") is not None:
        from support.pydantic_models import register

        functions.append(register)
    assert Llguidance().error(route_schema(FunctionTools(*functions).tools_for_llm())) is None
