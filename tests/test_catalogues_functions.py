"""Tools from Python callables: declarations from signatures and docstrings, and the provider."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime
import enum
import importlib.util
import json
import threading
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Optional

import pytest
from jsonschema import Draft202012Validator

from toolrouting import (
    AsyncRoutingLoop,
    AsyncScriptedBackend,
    AsyncToolProvider,
    CatalogueError,
    FunctionTools,
    Message,
    RoutingLoop,
    ScriptedBackend,
    ToolOutput,
    ToolProvider,
    function_tool,
    route_schema,
    split_routed_result,
)


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


def search_notes(
    query: str,
    limit: int = 10,
    tags: list[str] | None = None,
    mode: Literal["fast", "deep"] = "fast",
    colour: Colour = Colour.RED,
    weights: dict[str, float] | None = None,
) -> list[dict[str, Any]]:
    """Search the notes
    by their words.

    Longer text that is not the description.

    Args:
        query: Words to look for.
        limit (int): At most this many
            results.
        tags: Only notes with all of these tags.

    Returns:
        The matching notes.
    """
    return [
        {"query": query, "limit": limit, "tags": tags, "mode": mode, "colour": colour, "weights": weights}
    ]


def add(a: int, b: float, /) -> float:
    """Add two numbers.

    Parameters
    ----------
    a : int
        The first.

    b : float
        The second
        number.

    Returns
    -------
    float
    """
    return a + b


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


def test_arguments_are_converted_to_the_hinted_types() -> None:
    seen: list[Any] = []

    def take(c: Colour, s: set[int], t: tuple[str, ...], x: float, o: int | None = None) -> str:
        seen.extend([c, s, t, x, o])
        return "ok"

    assert FunctionTools(take).call("take", {"c": "blue", "s": [1, 2, 1], "t": ["a"], "x": 2}) == ToolOutput(
        content="ok"
    )
    assert seen == [Colour.BLUE, {1, 2}, ("a",), 2.0, None]
    assert isinstance(seen[3], float)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "missing argument 'query'"),
        ({"query": "q", "lmit": 3}, "unknown argument 'lmit'"),
        ({"query": 3}, "query should be a string, not an integer"),
        ({"query": "q", "limit": True}, "limit should be an integer, not a boolean"),
        ({"query": "q", "limit": 2.5}, "limit should be an integer, not a number"),
        ({"query": "q", "mode": "slow"}, "mode is a string, not one of ['fast', 'deep']"),
        ({"query": "q", "colour": "green"}, "colour is a string, not one of ['red', 'blue']"),
        ({"query": "q", "tags": "door"}, "tags is a string, which fits none of"),
        ({"query": "q", "tags": ["door", 3]}, "fits none of"),
        ({"query": "q", "weights": {"a": "heavy"}}, "fits none of"),
    ],
)
def test_arguments_that_do_not_fit_are_an_error_result(arguments: dict[str, Any], message: str) -> None:
    output = FunctionTools(search_notes).call("search_notes", arguments)
    assert output.is_error
    assert output.content.startswith("the arguments do not fit search_notes: ")
    assert message in output.content


def test_an_exception_is_a_short_error_result() -> None:
    def explode(path: str) -> str:
        raise OSError(f"cannot read {path}: " + "x" * 2000)

    output = FunctionTools(explode).call("explode", {"path": "/a"})
    assert output.is_error
    assert output.content.startswith("OSError: cannot read /a: xxx")
    assert len(output.content) == 500


def test_an_unknown_tool_is_an_error_result() -> None:
    output = FunctionTools(search_notes, add).call("delete_all", {})
    assert output == ToolOutput(
        content="there is no tool named 'delete_all'; the tools are: search_notes, add", is_error=True
    )


def test_return_values_are_rendered() -> None:
    @dataclasses.dataclass
    class Note:
        id: str
        when: datetime.date

    def note() -> Note:
        return Note("M1", datetime.date(2026, 11, 30))

    def nothing() -> None:
        return None

    def text() -> str:
        return "plain ünïcode"

    def unrenderable() -> object:
        return object()

    tools = FunctionTools(note, nothing, text, unrenderable)
    assert tools.call("note", {}) == ToolOutput(content='{"id":"M1","when":"2026-11-30"}')
    assert tools.call("nothing", {}) == ToolOutput(content="null")
    assert tools.call("text", {}) == ToolOutput(content="plain ünïcode")
    bad = tools.call("unrenderable", {})
    assert bad.is_error
    assert "not JSON" in bad.content


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


# --- async tools -------------------------------------------------------------------------


async def fetch_note(id: str) -> dict[str, str]:
    """Fetch one note by its id.

    Args:
        id: The note's id, as a search listed it.
    """
    await asyncio.sleep(0)
    if id == "M0":
        raise LookupError("no note M0")
    return {"id": id, "thread": threading.current_thread().name}


def where_am_i() -> str:
    """The thread a plain tool runs in."""
    return threading.current_thread().name


def test_an_async_tool_is_declared_like_a_plain_one() -> None:
    (declared,) = FunctionTools(fetch_note).tools_for_llm()
    assert declared["function"]["parameters"]["properties"]["id"] == {
        "description": "The note's id, as a search listed it.",
        "type": "string",
    }
    assert isinstance(FunctionTools(fetch_note), AsyncToolProvider)
    assert isinstance(FunctionTools(fetch_note), ToolProvider)


def test_acall_awaits_an_async_tool_and_runs_a_plain_one_in_a_worker_thread() -> None:
    tools = FunctionTools(fetch_note, where_am_i)

    async def main() -> list[ToolOutput]:
        return [
            await tools.acall("fetch_note", {"id": "M4"}),
            await tools.acall("fetch_note", {"id": "M0"}),
            await tools.acall("where_am_i", {}),
            await tools.acall("fetch_note", {"id": 4}),
            await tools.acall("nothing", {}),
        ]

    fetched, failed, thread, mismatch, unknown = asyncio.run(main())
    assert json.loads(fetched.content) == {"id": "M4", "thread": threading.current_thread().name}
    assert failed == ToolOutput("LookupError: no note M0", is_error=True)
    assert thread.content != threading.current_thread().name  # not on the event loop's thread
    assert mismatch.is_error
    assert "the arguments do not fit fetch_note" in mismatch.content
    assert unknown.is_error


def test_call_runs_an_async_tool_on_a_loop_of_its_own_and_refuses_inside_one() -> None:
    tools = FunctionTools(fetch_note)
    assert json.loads(tools.call("fetch_note", {"id": "M4"}).content)["id"] == "M4"
    assert tools.call("fetch_note", {"id": "M0"}) == ToolOutput("LookupError: no note M0", is_error=True)

    async def inside() -> ToolOutput:
        return tools.call("fetch_note", {"id": "M4"})

    refused = asyncio.run(inside())
    assert refused.is_error
    assert "fetch_note is async and this thread runs an event loop: await acall()" in refused.content


def test_async_tools_in_both_loops() -> None:
    replies = ['{"tool": "fetch_note", "arguments": {"id": "M4"}}', '{"tool": "none"}']
    question: list[Message] = [{"role": "user", "content": "What does M4 say?"}]
    synced = RoutingLoop(ScriptedBackend(replies), FunctionTools(fetch_note)).run(question)
    awaited = asyncio.run(
        AsyncRoutingLoop(AsyncScriptedBackend(replies), FunctionTools(fetch_note)).run(question)
    )
    assert synced.actions == awaited.actions
    # The same result, but for the thread each ran in: its own loop's, and the caller's loop's.
    # (messages[0] is the loop's instructions, then the question and the action.)
    assert json.loads(split_routed_result(awaited.messages[3]["content"])[1])["thread"] == "MainThread"  # type: ignore[index]
