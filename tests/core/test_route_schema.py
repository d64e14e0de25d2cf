"""route_schema, route_choices and route_tool_names; the catalogue checks under them, and every refusal."""

from __future__ import annotations

import copy
import dataclasses
import json
import unicodedata
from typing import Any

import pytest
from hypothesis import assume, given
from jsonschema import Draft202012Validator
from support.catalogues import SEARCH_PARAMETERS, declared
from support.route_tools import TOOL_NAMES

from toolrouting import CatalogueError, route_choices, route_schema, route_tool_names
from toolrouting._catalogue_checks import CheckedTool, checked_catalogue

READ_PARAMS = {
    "type": "object",
    "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
    "required": ["ids"],
}
TOOLS = [
    declared("memory_search", "Search memories.", SEARCH_PARAMETERS),
    declared("memory_read", "Read memories by id.", READ_PARAMS),
]


def test_seed_synopsis_choices() -> None:
    assert route_choices(TOOLS) == ["memory_search", "memory_read", "none"]
    assert route_tool_names(TOOLS) == ["memory_search", "memory_read"]


def test_schema_is_exactly_the_specified_shape() -> None:
    assert route_schema(TOOLS) == {
        "type": "object",
        "anyOf": [
            {
                "type": "object",
                "description": "Search memories.",
                "properties": {"tool": {"const": "memory_search"}, "arguments": SEARCH_PARAMETERS},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "description": "Read memories by id.",
                "properties": {"tool": {"const": "memory_read"}, "arguments": READ_PARAMS},
                "required": ["tool", "arguments"],
                "additionalProperties": False,
            },
            {
                "type": "object",
                "properties": {"tool": {"const": "none"}},
                "required": ["tool"],
                "additionalProperties": False,
            },
        ],
    }


def test_tool_comes_first_in_properties_and_required() -> None:
    for alternative in route_schema(TOOLS)["anyOf"]:
        assert next(iter(alternative["properties"])) == "tool"
        assert alternative["required"][0] == "tool"


def test_description_only_when_the_tool_has_one() -> None:
    schema = route_schema([declared("ping")])
    assert "description" not in schema["anyOf"][0]
    assert list(schema["anyOf"][0]) == ["type", "properties", "required", "additionalProperties"]


def test_tool_without_parameters_takes_exactly_the_empty_object() -> None:
    arguments = route_schema([declared("ping")])["anyOf"][0]["properties"]["arguments"]
    assert arguments == {"type": "object", "properties": {}, "additionalProperties": False}


def test_empty_catalogue_offers_only_none() -> None:
    schema = route_schema([])
    assert [alt["properties"]["tool"]["const"] for alt in schema["anyOf"]] == ["none"]
    assert route_choices([]) == ["none"]


def test_catalogue_order_is_kept() -> None:
    names = [f"t{i}" for i in range(50)][::-1]
    schema = route_schema([declared(n) for n in names])
    assert [alt["properties"]["tool"]["const"] for alt in schema["anyOf"]] == [*names, "none"]


def test_schema_is_byte_stable() -> None:
    first = json.dumps(route_schema(TOOLS))
    assert all(json.dumps(route_schema(copy.deepcopy(TOOLS))) == first for _ in range(5))


def test_parameters_are_detached_from_the_catalogue() -> None:
    catalogue = copy.deepcopy(TOOLS)
    schema = route_schema(catalogue)
    schema["anyOf"][0]["properties"]["arguments"]["properties"]["query"]["type"] = "integer"
    catalogue[1]["function"]["parameters"]["required"].append("mutated")
    assert catalogue[0]["function"]["parameters"]["properties"]["query"]["type"] == "string"
    assert route_schema(catalogue)["anyOf"][1]["properties"]["arguments"]["required"] == ["ids", "mutated"]
    assert schema["anyOf"][1]["properties"]["arguments"]["required"] == ["ids"]
    fresh = route_schema(TOOLS)
    fresh["anyOf"][-1]["properties"]["tool"]["const"] = "x"
    assert route_schema(TOOLS)["anyOf"][-1]["properties"]["tool"]["const"] == "none"


def test_schema_is_a_valid_json_schema() -> None:
    Draft202012Validator.check_schema(route_schema(TOOLS))


@pytest.mark.parametrize(
    ("entries", "index", "reason"),
    [
        ([declared("a"), {"type": "retrieval", "function": {"name": "b"}}], 1, '"type": "function"'),
        ([{"function": {"name": "a"}}], 0, '"type": "function"'),
        ([declared("a"), "memory_search"], 1, "a mapping, not str"),
        ([{"type": "function"}], 0, 'no "function" mapping'),
        ([{"type": "function", "function": {"description": "x"}}], 0, "has no name"),
        ([declared("")], 0, "blank"),
        ([declared("   ")], 0, "blank"),
        ([declared(7)], 0, "not a string"),
        ([declared("a"), declared("b"), declared("a")], 2, "used twice (first by entry 0)"),
        ([declared("a"), declared("none")], 1, "indistinguishable from the handoff"),
        ([declared("a", parameters={"type": "array"})], 0, "not an object schema"),
        ([declared("a", parameters={"properties": {}})], 0, "not an object schema"),
        ([declared("a", parameters=["type", "object"])], 0, "not an object schema"),
        ([declared("a", parameters={"type": "object", "x": {1}})], 0, "/parameters/x is a set"),
        ([declared("a", parameters={"type": "object", "x": float("nan")})], 0, "/parameters/x is nan"),
        ([declared("a", parameters={"type": "object", 1: "x"})], 0, "key that is not a string"),
        ([declared("a", description=["x"])], 0, "description"),
        ([declared("two words")], 0, "whitespace or control character (U+0020) at position 3"),
        ([declared("tab\tname")], 0, "U+0009"),
        ([declared("line\nbreak")], 0, "U+000A"),
        ([declared("nbsp\u00a0name")], 0, "U+00A0"),
        ([declared("zero\u200bwidth")], 0, "U+200B"),
        ([declared("bidi\u202ename")], 0, "U+202E"),
    ],
)
def test_bad_catalogues_are_refused_with_index_and_reason(
    entries: list[Any], index: int, reason: str
) -> None:
    for builder in (route_schema, route_tool_names, route_choices):
        with pytest.raises(CatalogueError) as caught:
            builder(entries)
        assert caught.value.index == index
        assert reason in caught.value.reason
        assert str(caught.value).startswith(f"tool catalogue entry {index}: ")


def test_catalogue_error_is_a_value_error_and_pickles() -> None:
    import pickle

    error = CatalogueError(3, "the name is blank")
    assert isinstance(error, ValueError)
    again = pickle.loads(pickle.dumps(error))
    assert (again.index, again.reason, str(again)) == (3, "the name is blank", str(error))


def test_self_referencing_parameters_are_refused() -> None:
    parameters: dict[str, Any] = {"type": "object", "properties": {}}
    parameters["properties"]["loop"] = parameters
    with pytest.raises(CatalogueError, match="nest too deeply or refer to themselves"):
        route_schema([declared("a", parameters=parameters)])


@pytest.mark.parametrize("catalogue", [{"type": "function"}, "tools", None, 3])
def test_a_catalogue_is_a_sequence(catalogue: Any) -> None:
    with pytest.raises(CatalogueError, match="sequence of tool declarations"):
        route_schema(catalogue)


def test_non_ascii_letters_make_a_valid_name() -> None:
    assert route_tool_names([declared("récupérer_mémoire"), declared("検索")]) == [
        "récupérer_mémoire",
        "検索",
    ]


def test_checked_entries_carry_their_position_and_a_detached_copy() -> None:
    catalogue = copy.deepcopy(TOOLS)
    checked = checked_catalogue(catalogue)
    assert [(t.position, t.name, t.description) for t in checked] == [
        (0, "memory_search", "Search memories."),
        (1, "memory_read", "Read memories by id."),
    ]
    assert checked[0].parameters == SEARCH_PARAMETERS
    assert checked[0].parameters is not catalogue[0]["function"]["parameters"]
    assert checked_catalogue([declared("ping")])[0].parameters == {
        "type": "object",
        "properties": {},
        "additionalProperties": False,
    }
    with pytest.raises(dataclasses.FrozenInstanceError):
        checked[0].name = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        CheckedTool(0, "ping", None, {})  # type: ignore[call-arg]


def test_a_route_without_the_handoff_offers_the_tools_alone() -> None:
    tools = [{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}]
    schema = route_schema(tools, handoff=False)
    assert [alt["properties"]["tool"]["const"] for alt in schema["anyOf"]] == ["search"]
    assert route_schema(tools)["anyOf"][:1] == schema["anyOf"]
    with pytest.raises(ValueError, match="at least one tool"):
        route_schema([], handoff=False)


@given(TOOL_NAMES)
def test_every_valid_name_makes_a_catalogue(name: str) -> None:
    # "none" up to case and NFKC is the handoff's name, refused on purpose.
    assume(unicodedata.normalize("NFKC", unicodedata.normalize("NFKC", name).casefold()) != "none")
    assert route_tool_names([declared(name)]) == [name]
