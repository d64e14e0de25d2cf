"""Catalogue fuzzing: any catalogue gives a valid, writable JSON Schema or a CatalogueError naming the entry.

Good declarations come first, then one fuzzed one, so the only right index for an error is the
fuzzed entry's. Fuzzing wrecks the declaration at any depth: non-mappings, wrong types, huge or
forging names, names equal under case and Unicode normalisation, non-JSON values, cycles, depth.
"""

from __future__ import annotations

import copy
import decimal
import json
import math
import re
import unicodedata
import warnings
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator, FormatChecker
from support.catalogues import declared, fold
from support.ecma import regress_accepts

from toolrouting import CatalogueError, route_schema, route_tool_names
from toolrouting._metaschema import schema_problem


def _ecma_262(pattern: object) -> bool:
    """The documented verdict on a pattern (jsonschema's own asks Python's re): valid with ECMA-262's
    u flag, accepted; valid in neither mode, refused; valid only without it (Annex B), as re says."""
    if not isinstance(pattern, str) or regress_accepts(pattern, "u"):
        return True
    if not regress_accepts(pattern, ""):
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            re.compile(pattern)
    except re.error:
        return False
    return True


_FORMATS = FormatChecker(formats=())
_FORMATS.checks("regex")(_ecma_262)
#: What check_schema applies: the metaschema, with its "regex" format asserted (as ECMA-262's).
METASCHEMA = Draft202012Validator(Draft202012Validator.META_SCHEMA, format_checker=_FORMATS)


class Unprintable:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


def cycle() -> dict[str, Any]:
    node: dict[str, Any] = {"type": "object"}
    node["properties"] = {"self": node}
    return node


def deep(levels: int) -> dict[str, Any]:
    node: dict[str, Any] = {"type": "string"}
    for _ in range(levels):
        node = {"type": "object", "properties": {"a": node}}
    return node


JUNK: list[Any] = [
    None, True, False, 0, -1, 1.5, 2.0, -0.0, 10**5000, math.nan, math.inf, -math.inf, "", "x", "(", "[a-",
    "\ud800", "a\udc00b", b"bytes", bytearray(b"x"), {1, 2}, frozenset(), (1, 2), [], [1, "a"], ["a", "a"],
    {}, {"a": 1}, {1: "a"}, {("t",): 1}, {None: 1}, decimal.Decimal("1.5"), object(),
    "x" * 10_000, {"type": "object"}, {"type": "string"}, {"$ref": "#/nowhere"}, ["string", "string"],
    ["object", "null"], "object", "function", "strin", -5, 3.25, "#frag", "a#b", {"a": [1]},
]  # fmt: skip

KEYWORDS = [
    "type", "properties", "required", "items", "prefixItems", "additionalProperties", "anyOf", "oneOf",
    "allOf", "not", "enum", "const", "minimum", "maximum", "multipleOf", "minLength", "maxLength", "pattern",
    "patternProperties", "$defs", "definitions", "$ref", "$id", "$anchor", "format", "description", "title",
    "uniqueItems", "minItems", "dependentRequired", "dependencies", "default", "examples", "if", "then",
    "propertyNames", "unevaluatedProperties", "$vocabulary", "contentSchema", "deprecated",
]  # fmt: skip


def leaf_schemas() -> st.SearchStrategy[dict[str, Any]]:
    return st.sampled_from(
        [
            {"type": "string", "maxLength": 40},
            {"type": "integer", "minimum": 0},
            {"type": "number", "exclusiveMaximum": 1.5},
            {"type": "boolean"},
            {"enum": ["a", 1, None]},
            {"type": "array", "items": {"type": "string"}, "minItems": 1, "uniqueItems": True},
            {"type": "string", "pattern": "^[A-Z][0-9]+$"},
            {"anyOf": [{"type": "string"}, {"type": "null"}]},
            {"$ref": "#/$defs/code"},
        ]
    )


@st.composite
def good_parameters(draw: st.DrawFn) -> dict[str, Any]:
    names = draw(st.lists(st.text(min_size=1, max_size=8), max_size=4, unique=True))
    properties = {name: copy.deepcopy(draw(leaf_schemas())) for name in names}
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if bool(names) and draw(st.booleans()):
        schema["required"] = names[: draw(st.integers(1, len(names)))]
    schema["additionalProperties"] = draw(st.booleans())
    schema["$defs"] = {"code": {"type": "string", "pattern": "^M[0-9]+$"}}
    return schema


NAME_CHARS = st.characters(categories=["L", "N", "M", "P", "S"])
GOOD_NAME = st.text(NAME_CHARS, min_size=1, max_size=12).filter(lambda n: fold(n) != "none")


@st.composite
def good_tool(draw: st.DrawFn, name: str) -> dict[str, Any]:
    function: dict[str, Any] = {"name": name}
    if draw(st.booleans()):
        function["description"] = draw(st.text(max_size=30))
    if draw(st.booleans()):
        function["parameters"] = draw(good_parameters())
    return {"type": "function", "function": function}


def _containers(value: Any) -> list[tuple[Any, ...]]:
    """Paths to the dicts and lists inside ``value``, each once and at most 12 deep (junk has cycles)."""
    found: list[tuple[Any, ...]] = []
    seen: set[int] = set()
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack:
        node, path = stack.pop()
        if id(node) in seen or len(path) > 12:
            continue
        seen.add(id(node))
        found.append(path)
        items = node.items() if isinstance(node, dict) else enumerate(node)
        stack.extend((item, (*path, key)) for key, item in items if isinstance(item, (dict, list)))
    return found


@st.composite
def wrecked(draw: st.DrawFn, tool: dict[str, Any], taken: list[str]) -> Any:
    """``tool`` with one to three things broken, at any depth."""
    tool = copy.deepcopy(tool)
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(JUNK))
    for _ in range(draw(st.integers(1, 3))):
        paths = _containers(tool)
        path = draw(st.sampled_from(paths))
        node: Any = tool
        for step in path:
            node = node[step]
        junk = draw(
            st.one_of(
                st.sampled_from(JUNK),
                st.sampled_from(
                    [
                        cycle(),
                        deep(70),
                        deep(30),
                        {"type": "object", "properties": 5},
                        {"type": ["object"] * 2},
                    ]
                ),
                st.sampled_from([variant for n in taken for variant in (n, n.upper(), n.title())]),
                st.sampled_from(taken).map(lambda n: unicodedata.normalize("NFKD", n)),
                st.sampled_from(["None", "NONE", "ｎｏｎｅ", "none", "a b", "a\nb", "a\u200bb", "a\u2028b"]),
                st.sampled_from(["Tool result for x (call route-1):", "x):\nTool", "(call", "é", "e\u0301"]),
                st.sampled_from(["ﬁnd", "find", "Ⅸ", "IX", "ß", "SS", "x" * 5000]),
            )
        )
        junk = copy.deepcopy(junk)  # the JUNK objects are shared by every example
        if isinstance(node, dict):
            key = draw(st.sampled_from([*node, *KEYWORDS, "name", "function", "parameters"]))
            if draw(st.integers(0, 5)) == 0 and node:
                del node[draw(st.sampled_from(list(node)))]
            else:
                node[key] = junk
        elif node:
            node[draw(st.integers(0, len(node) - 1))] = junk
        else:
            node.append(junk)
    return tool


@st.composite
def catalogues(draw: st.DrawFn) -> tuple[list[Any], int]:
    names = draw(st.lists(GOOD_NAME, max_size=4, unique_by=fold))
    good = [draw(good_tool(name)) for name in names]
    base = draw(good_tool(draw(GOOD_NAME)))
    return [*good, draw(wrecked(base, names or ["t"]))], len(good)


def check(catalogue: list[Any], fuzzed: int) -> None:
    """A valid schema that json.dumps writes, or a CatalogueError naming entry ``fuzzed``; nothing else."""
    try:
        schema = route_schema(catalogue)
    except CatalogueError as caught:
        refused(caught, catalogue, fuzzed)
        return
    Draft202012Validator.check_schema(schema)
    written = json.dumps(schema, allow_nan=False)
    json.dumps(schema, ensure_ascii=False).encode("utf-8")  # no lone surrogates either
    assert json.dumps(route_schema(catalogue), allow_nan=False) == written
    assert len(route_tool_names(catalogue)) == len(catalogue)


def refused(error: CatalogueError, catalogue: list[Any], fuzzed: int) -> None:
    assert error.index == fuzzed, error
    assert error.reason
    assert f"entry {fuzzed}" in str(error)
    assert len(str(error)) <= 600, str(error)[:600]
    with pytest.raises(CatalogueError) as again:
        route_tool_names(catalogue)
    assert (again.value.index, again.value.reason) == (error.index, error.reason)


@given(catalogues())
@example(
    ([{"type": "function", "function": {"name": "t", "parameters": {"type": "object", "properties": 5}}}], 0)
)
@example(
    (
        [
            {
                "type": "function",
                "function": {"name": "t", "parameters": {"type": "object", "maximum": 10**5000}},
            }
        ],
        0,
    )
)
@example(([{"type": 10**5000}], 0))
@example(([{"type": "function", "function": {"name": "t", "parameters": {"type": "object", 1: 2}}}], 0))
@example(([{"type": "function", "function": {"name": "t", "description": "\ud800"}}], 0))
@example(([{"type": "function", "function": {"name": "x" * 100_000, "description": 1}}], 0))
@example(
    (
        [
            declared("Search"),
            declared("search"),
        ],
        1,
    )
)
@example(
    (
        [
            declared("é"),
            declared("e\u0301"),
        ],
        1,
    )
)
@example(([declared("None")], 0))
def test_any_catalogue_gives_a_valid_schema_or_names_the_entry(case: tuple[list[Any], int]) -> None:
    check(*case)


@given(
    st.lists(st.sampled_from(JUNK) | st.builds(dict) | st.just({"type": "function"}), min_size=1, max_size=4)
)
def test_junk_entries_are_refused_at_the_first(entries: list[Any]) -> None:
    check(entries, 0)


def test_values_without_a_repr_are_named_by_type() -> None:
    # (Outside hypothesis, which reprs its examples.)
    cases: list[tuple[dict[str, Any], str]] = [
        ({"type": Unprintable()}, "type is a Unprintable"),
        ({"type": 10**5000}, "type is a int"),
        ({"type": "function", "function": {"name": "t", "parameters": {"type": "object", Unprintable(): 1}}},
         "not a string: a Unprintable"),
    ]  # fmt: skip
    for entry, reason in cases:
        with pytest.raises(CatalogueError, match=reason):
            route_schema([entry])


def test_names_equal_under_case_and_normalisation_are_one_name() -> None:
    pairs = [("Search", "search"), ("é", "e\u0301"), ("ﬁnd", "find"), ("Ⅸ", "IX"), ("straße", "STRASSE")]
    for first, second in pairs:
        catalogue = [declared(n) for n in (first, second)]
        with pytest.raises(CatalogueError, match="case and Unicode normalisation") as caught:
            route_schema(catalogue)
        assert caught.value.index == 1
    for name in ("None", "NONE", "ｎｏｎｅ"):
        with pytest.raises(CatalogueError, match="handoff") as caught:
            route_schema([declared(name)])
        assert caught.value.index == 0


def test_invalid_parameter_schemas_are_refused_with_the_keyword() -> None:
    cases: dict[str, dict[str, Any]] = {
        "/parameters/properties is not an object of schemas": {"properties": 5},
        "/parameters/properties/a is not a schema": {"properties": {"a": 5}},
        "/parameters/required lists a name twice": {"required": ["a", "a"]},
        "/parameters/items/type lists a type twice": {"items": {"type": ["string", "string"]}},
        "/parameters/items/minLength is not a non-negative integer": {"items": {"minLength": -1}},
        "/parameters/anyOf is not a non-empty array of schemas": {"anyOf": []},
        "/parameters/pattern is not a regular expression": {"pattern": "("},
        "/parameters/$id is not a URI without a fragment": {"$id": "a#b"},
    }
    for reason, broken in cases.items():
        parameters = {"type": "object", **broken}
        with pytest.raises(CatalogueError) as caught:
            route_schema([{"type": "function", "function": {"name": "t", "parameters": parameters}}])
        assert reason in caught.value.reason
        assert not METASCHEMA.is_valid(parameters)


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5) | st.floats(allow_nan=False),
        lambda c: st.lists(c, max_size=3) | st.dictionaries(st.sampled_from(KEYWORDS), c, max_size=3),
    )
)
def test_the_metaschema_check_agrees_with_jsonschema(schema: Any) -> None:
    # Everything the 2020-12 metaschema refuses, schema_problem refuses, and nothing more.
    assert (schema_problem(schema) is None) == METASCHEMA.is_valid(schema), schema_problem(schema)
