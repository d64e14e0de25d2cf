"""Each preflight rule, checked against the compiler it describes where that compiler runs here.

A case names a schema, the finding the preflight must report (pointer, keyword, severity)
and how the compiler proves it: ``refuses`` (it will not compile the schema), ``differs``
(on the witness value, its grammar and JSON Schema disagree) or ``agrees`` (it follows the
schema where other compilers do not). xgrammar installs torch, so its rules are checked
against its documentation only.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Literal

import pytest
from jsonschema import Draft202012Validator
from support.compilers import LlamaCpp, Llguidance, Outlines

from toolrouting import TARGETS, Finding, format_findings, preflight
from toolrouting._limits import OUTLINES_MAX_STRING_BOUND
from toolrouting._metaschema import ONE_SCHEMA, SCHEMA_LISTS, SCHEMA_MAPS

STRING: dict[str, Any] = {"type": "string"}
OBJECT_A: dict[str, Any] = {"type": "object", "properties": {"a": STRING}}


@dataclasses.dataclass(frozen=True)
class Case:
    id: str
    schema: dict[str, Any]
    pointer: str
    keyword: str
    severity: Literal["error", "warning", "info"]
    check: Literal["refuses", "differs", "agrees"]
    witness: str | None = None


def _valid(schema: dict[str, Any], witness: str) -> bool:
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    valid: bool = validator.is_valid(json.loads(witness))
    return valid


def _reported(case: Case, target: str) -> Finding:
    findings = preflight(case.schema, target)
    matching = [f for f in findings if f.pointer == case.pointer and f.keyword == case.keyword]
    assert matching, f"no finding at {case.pointer!r} {case.keyword!r}:\n{format_findings(findings)}"
    # A keyword may carry a whole-schema note too (properties: the key order) beside the finding.
    severe = [f for f in matching if f.severity == case.severity]
    assert severe, f"{case.keyword!r} at {case.pointer!r} is not {case.severity}: {matching}"
    return severe[0]


def _proven(case: Case, compiler: Any) -> None:
    error = compiler.error(case.schema)
    if case.check == "refuses":
        assert error is not None, "the compiler took the schema"
        return
    assert error is None, error
    assert case.witness is not None
    valid = _valid(case.schema, case.witness)
    accepted = compiler.accepts(case.schema, case.witness)
    if case.check == "differs":
        assert accepted != valid, f"the compiler agrees with JSON Schema on {case.witness} ({valid})"
    else:
        assert accepted == valid


LLAMA_CASES = [
    Case(
        "skips uniqueItems",
        {"type": "object", "properties": {"t": {"type": "array", "items": STRING, "uniqueItems": True}}},
        "/properties/t",
        "uniqueItems",
        "warning",
        "differs",
        '{"t":["a","a"]}',
    ),
    Case(
        "oneOf as anyOf",
        {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "",
        "oneOf",
        "warning",
        "differs",
        "1",
    ),
    Case(
        "enum beside anyOf",
        {"anyOf": [{"type": "integer"}, {"type": "string"}], "enum": [1, "a"]},
        "",
        "enum",
        "warning",
        "differs",
        "2",
    ),
    Case("extra keys forbidden", OBJECT_A, "", "additionalProperties", "info", "differs", '{"a":"x","b":1}'),
    Case(
        "required first",
        {
            "type": "object",
            "properties": {"a": STRING, "b": STRING},
            "required": ["b"],
            "additionalProperties": False,
        },
        "",
        "properties",
        "info",
        "differs",
        '{"a":"x","b":"y"}',
    ),
    Case(
        "required not in properties",
        {**OBJECT_A, "required": ["a", "z"]},
        "",
        "required",
        "warning",
        "differs",
        '{"a":"x"}',
    ),
    Case(
        "allOf merged as an object",
        {"type": "object", "properties": {"v": {"allOf": [STRING, {"minLength": 2}]}}, "required": ["v"]},
        "/properties/v",
        "allOf",
        "warning",
        "differs",
        '{"v":"ab"}',
    ),
    Case("unanchored pattern", {"type": "string", "pattern": "a+"}, "", "pattern", "error", "refuses"),
    Case(
        "email format skipped",
        {"type": "string", "format": "email"},
        "",
        "format",
        "warning",
        "differs",
        '"nope"',
    ),
    Case(
        "number maximum skipped", {"type": "number", "maximum": 5}, "", "maximum", "warning", "differs", "6"
    ),
    Case(
        "integer minimum skipped", {"type": "integer", "minimum": 1}, "", "minimum", "warning", "differs", "0"
    ),
    Case(
        "prefixItems as a fixed tuple",
        {"type": "array", "prefixItems": [STRING, {"type": "integer"}]},
        "",
        "prefixItems",
        "warning",
        "differs",
        '["a"]',
    ),
    Case("remote $ref", {"$ref": "https://example.com/s.json"}, "", "$ref", "error", "refuses"),
    Case(
        "escaped $ref",
        {"$defs": {"a/b": STRING}, "$ref": "#/$defs/a~1b"},
        "",
        "$ref",
        "error",
        "refuses",
    ),
    Case(
        "no type",
        {"type": "object", "properties": {"v": {"description": "any value"}}},
        "/properties/v",
        "",
        "error",
        "refuses",
    ),
    Case(
        "{} as any object",
        {"type": "object", "properties": {"v": {}}, "required": ["v"]},
        "/properties/v",
        "",
        "warning",
        "differs",
        '{"v":1}',
    ),
    Case(
        "boolean schema",
        {"type": "object", "properties": {"v": True}},
        "/properties/v",
        "",
        "error",
        "refuses",
    ),
    Case("unknown type", {"type": "strng"}, "", "type", "error", "refuses"),
    # llama-cpp-python escapes only [\r\n"] in json.dumps's text (excel-mcp-server's enum ["\""]).
    Case("quote in an enum", {"enum": ['"', "'"]}, "", "enum", "error", "refuses"),
    Case("backspace in a const", {"const": "a\bb"}, "", "const", "error", "refuses"),
    Case("form feed in an object const", {"const": {"k": "\f"}}, "", "const", "error", "refuses"),
    Case(
        "quote in a property name",
        {"type": "object", "properties": {'say "hi"': STRING}},
        "",
        "properties",
        "error",
        "refuses",
    ),
    Case("backslash in an enum", {"enum": ["a\\b", "c"]}, "", "enum", "warning", "differs", '"a\\\\b"'),
    Case("tab in a const", {"const": "a\tb"}, "", "const", "warning", "differs", '"a\\tb"'),
    Case("emoji in an enum", {"enum": ["\U0001f600"]}, "", "enum", "warning", "differs", '"\U0001f600"'),
    # One nested optional group per optional repeat; llama.cpp refuses a group of 2000 rules.
    Case(
        "1001 optional items",
        {"type": "array", "items": STRING, "maxItems": 1001},
        "",
        "maxItems",
        "error",
        "refuses",
    ),
    Case(
        "1001 optional items in a property",
        {"type": "object", "properties": {"arr": {"type": "array", "items": OBJECT_A, "maxItems": 1001}}},
        "/properties/arr",
        "maxItems",
        "error",
        "refuses",
    ),
    Case(
        "1001 optional objects",
        {"type": "array", "items": OBJECT_A, "minItems": 1, "maxItems": 1002},
        "",
        "maxItems",
        "error",
        "refuses",
    ),
    Case(
        "1001 optional characters",
        {"type": "string", "minLength": 5, "maxLength": 1006},
        "",
        "maxLength",
        "error",
        "refuses",
    ),
]

LLGUIDANCE_CASES = [
    *(
        Case(f"refuses {keyword}", {**schema, keyword: value}, "", keyword, "error", "refuses")
        for keyword, schema, value in [
            ("not", STRING, {"const": "x"}),
            ("uniqueItems", {"type": "array"}, True),
            ("contains", {"type": "array"}, STRING),
            ("if", OBJECT_A, {"required": ["a"]}),
            ("dependentRequired", OBJECT_A, {"a": ["b"]}),
            ("propertyNames", {"type": "object"}, {"pattern": "^a"}),
            ("unevaluatedProperties", OBJECT_A, False),
        ]
    ),
    Case(
        "overlapping oneOf",
        {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "",
        "oneOf",
        "warning",
        "refuses",
    ),
    Case("unknown format", {"type": "string", "format": "uri-reference"}, "", "format", "error", "refuses"),
    Case("look-around", {"type": "string", "pattern": "^(?=a)a+$"}, "", "pattern", "error", "refuses"),
    Case("remote $ref", {"$ref": "https://example.com/s.json"}, "", "$ref", "error", "refuses"),
    Case("unknown type", {"type": "strng"}, "", "type", "error", "refuses"),
    Case(
        "minProperties with optional properties",
        {"type": "object", "properties": {"a": STRING, "b": STRING}, "minProperties": 1},
        "",
        "minProperties",
        "error",
        "refuses",
    ),
    Case(
        "overlapping patternProperties",
        {"type": "object", "patternProperties": {"^a": STRING, "^ab": STRING}},
        "",
        "patternProperties",
        "warning",
        "refuses",
    ),
    Case("extra keys allowed", OBJECT_A, "", "additionalProperties", "info", "agrees", '{"a":"x","b":1}'),
    Case(
        "property order",
        {"type": "object", "properties": {"a": STRING, "b": STRING}},
        "",
        "properties",
        "info",
        "differs",
        '{"b":"y","a":"x"}',
    ),
    Case("any whitespace", OBJECT_A, "", "x-guidance", "info", "agrees", '{\n\n      "a"  :  "x"\n}'),
    Case("\\u escapes", STRING, "", "", "info", "differs", '"\\u0041"'),
]

OUTLINES_CASES = [
    Case("no type", {"description": "anything"}, "", "", "error", "refuses"),
    Case(
        "allOf beside properties",
        {
            "properties": {"a": {"type": "integer"}},
            "required": ["a"],
            "allOf": [{"properties": {"a": {"const": 1}}}],
        },
        "",
        "allOf",
        "warning",
        "differs",
        '{"a":2}',
    ),
    Case(
        "uniqueItems ignored",
        {"type": "array", "items": STRING, "uniqueItems": True},
        "",
        "uniqueItems",
        "warning",
        "differs",
        '["a","a"]',
    ),
    Case("minimum ignored", {"type": "integer", "minimum": 1}, "", "minimum", "warning", "differs", "0"),
    Case(
        "oneOf as anyOf",
        {"oneOf": [{"type": "integer"}, {"type": "number"}]},
        "",
        "oneOf",
        "warning",
        "differs",
        "1",
    ),
    Case(
        "allOf concatenated",
        {
            "allOf": [
                {"type": "object", "properties": {"a": STRING}},
                {"type": "object", "properties": {"b": STRING}},
            ]
        },
        "",
        "allOf",
        "error",
        "differs",
        '{"a":"x"}',
    ),
    Case("remote $ref", {"$ref": "https://example.com/s.json"}, "", "$ref", "error", "refuses"),
    Case(
        "recursion truncated",
        {"$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}}}, "$ref": "#/$defs/n"},
        "/$defs/n/properties/k",
        "$ref",
        "warning",
        "differs",
        '{"k":{"k":{"k":{"k":{"k":{"k":{}}}}}}}',
    ),
    Case(
        "additionalProperties true ignored",
        {**OBJECT_A, "additionalProperties": True},
        "",
        "additionalProperties",
        "warning",
        "differs",
        '{"a":"x","b":"y"}',
    ),
    Case("extra keys forbidden", OBJECT_A, "", "additionalProperties", "info", "differs", '{"a":"x","b":1}'),
    Case(
        "required not in properties",
        {**OBJECT_A, "required": ["a", "z"]},
        "",
        "required",
        "warning",
        "differs",
        '{"a":"x"}',
    ),
    Case(
        "pattern beside a length",
        {"type": "string", "minLength": 1, "pattern": "^a+$"},
        "",
        "pattern",
        "warning",
        "differs",
        '"b"',
    ),
    Case(
        "unanchored pattern", {"type": "string", "pattern": "a"}, "", "pattern", "warning", "differs", '"bab"'
    ),
    Case("unknown format", {"type": "string", "format": "hostname"}, "", "format", "error", "refuses"),
    Case(
        "format beside minLength",
        {"type": "string", "format": "date", "minLength": 1},
        "",
        "format",
        "warning",
        "differs",
        '"x"',
    ),
    Case(
        "format beside pattern",
        {"type": "string", "format": "date", "pattern": "^x$"},
        "",
        "format",
        "warning",
        "differs",
        '"x"',
    ),
    Case("unknown type", {"type": "strng"}, "", "type", "error", "refuses"),
    Case(
        "property order",
        {"type": "object", "properties": {"a": STRING, "b": STRING}},
        "",
        "properties",
        "info",
        "differs",
        '{"b":"y","a":"x"}',
    ),
]

XGRAMMAR_CASES = [
    Case("oneOf as anyOf", {"oneOf": [STRING, {"type": "integer"}]}, "", "oneOf", "warning", "differs"),
    Case("allOf of two", {"allOf": [OBJECT_A, OBJECT_A]}, "", "allOf", "error", "refuses"),
    Case("not unsupported", {**STRING, "not": {"const": "x"}}, "", "not", "warning", "differs"),
    Case("format unknown", {**STRING, "format": "regex"}, "", "format", "warning", "differs"),
    Case("look-around ignored", {**STRING, "pattern": "^(?!x)"}, "", "pattern", "warning", "differs"),
    Case("remote $ref", {"$ref": "https://example.com/s.json"}, "", "$ref", "error", "refuses"),
    Case(
        "patternProperties beside properties",
        {**OBJECT_A, "patternProperties": {"^x": STRING}},
        "",
        "patternProperties",
        "warning",
        "differs",
    ),
    Case("strict mode", OBJECT_A, "", "additionalProperties", "info", "differs"),
    Case("whitespace", OBJECT_A, "", "", "info", "agrees"),
]


@pytest.fixture(scope="module")
def outlines() -> Outlines:
    return Outlines()


@pytest.mark.model
@pytest.mark.parametrize("case", LLAMA_CASES, ids=lambda c: c.id)
def test_llama_cpp_rule(case: Case, llama: LlamaCpp) -> None:
    _reported(case, "llama.cpp")
    _proven(case, llama)


@pytest.mark.parametrize("case", LLGUIDANCE_CASES, ids=lambda c: c.id)
def test_llguidance_rule(case: Case, llguidance: Llguidance) -> None:
    _reported(case, "llguidance")
    _proven(case, llguidance)


@pytest.mark.parametrize("case", OUTLINES_CASES, ids=lambda c: c.id)
def test_outlines_rule(case: Case, outlines: Outlines) -> None:
    _reported(case, "outlines")
    _proven(case, outlines)


@pytest.mark.parametrize("case", XGRAMMAR_CASES, ids=lambda c: c.id)
def test_xgrammar_rule_from_its_documentation(case: Case) -> None:
    assert _reported(case, "xgrammar").source.startswith("mlc-ai/xgrammar ")


@pytest.mark.model
@pytest.mark.parametrize(
    "schema",
    [
        {"type": "array", "items": STRING, "maxItems": 1000},
        {"type": "object", "properties": {"arr": {"type": "array", "items": OBJECT_A, "maxItems": 1000}}},
        {"type": "string", "minLength": 1, "maxLength": 1001},
        {"enum": ["it's", "a/b", "é", "\u2028", "\x7f"]},
    ],
)
def test_llama_cpp_takes_what_its_rules_let_through(schema: dict[str, Any], llama: LlamaCpp) -> None:
    assert [f for f in preflight(schema, "llama.cpp") if f.severity == "error"] == []
    assert llama.error(schema) is None


def test_outlines_index_of_a_long_string_bound_does_not_fit(outlines: Outlines) -> None:
    # outlines-core builds its index from the regex when a model decodes: time and memory grow
    # exponentially with a string's length bound. Built in a subprocess under 1 GiB and 60 s.
    limit = OUTLINES_MAX_STRING_BOUND
    assert outlines.index_fits({"type": "string", "maxLength": 8}, 2**30, 60)
    too_long = {"type": "string", "maxLength": limit + 4}
    assert _reported(Case("bound", too_long, "", "maxLength", "error", "refuses"), "outlines")
    assert not outlines.index_fits(too_long, 2**30, 60)
    assert not [
        f for f in preflight({"type": "string", "maxLength": limit}, "outlines") if f.severity == "error"
    ]


CLEAN = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "minLength": 1},
        "limit": {"type": "integer"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
    },
    "required": ["query", "limit"],
    "additionalProperties": False,
}


@pytest.mark.parametrize("target", TARGETS)
def test_a_plain_schema_has_only_whole_schema_notes(target: str) -> None:
    # Bounded decisions name each string and array they bound (our grammar's "bounds" notes).
    findings = [f for f in preflight(CLEAN, target) if f.effect != "bounds"]
    assert findings
    assert {(f.pointer, f.severity) for f in findings} == {("", "info")}


@pytest.mark.model
def test_a_plain_schema_compiles_everywhere_here(
    llama: LlamaCpp, llguidance: Llguidance, outlines: Outlines
) -> None:
    for compiler in (llama, llguidance, outlines):
        assert compiler.error(CLEAN) is None, compiler.name


def test_pointers_escape_keys_and_reach_every_subschema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "a/b~c": {"type": "array", "items": {"anyOf": [{"type": "string", "format": "email"}]}}
        },
        "$defs": {"d": {"type": "integer", "maximum": 3}},
    }
    pointers = {(f.pointer, f.keyword) for f in preflight(schema, "llama.cpp")}
    assert ("/properties/a~1b~0c/items/anyOf/0", "format") in pointers
    assert ("/$defs/d", "maximum") in pointers


def test_every_finding_cites_its_source() -> None:
    for target in TARGETS:
        for case in [*LLAMA_CASES, *LLGUIDANCE_CASES, *OUTLINES_CASES, *XGRAMMAR_CASES]:
            for finding in preflight(case.schema, target):
                assert finding.source.split()[0].count("/") == 1, finding  # owner/repository path
                assert finding.message
                assert finding.effect


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize(
    "schema",
    [{"properties": 5, "required": ["a"]}, {"required": 5}, {"items": 5}, {"anyOf": 5}, {"type": 5}],
)
def test_a_malformed_schema_gets_findings_never_a_crash(schema: dict[str, object], target: str) -> None:
    assert all(finding.message for finding in preflight(schema, target))


def test_unknown_target_names_the_targets() -> None:
    with pytest.raises(ValueError, match=r"llama\.cpp, llguidance, xgrammar, outlines"):
        preflight(CLEAN, "vllm")


def test_format_findings_one_line_each() -> None:
    findings = preflight({"type": "string", "format": "email", "pattern": "a"}, "llama.cpp")
    text = format_findings(findings)
    assert len(text.splitlines()) == len(findings)
    assert text.splitlines()[-1].startswith("error / pattern: llama-cpp-python refuses an unanchored pattern")
    assert format_findings([]) == "no findings: the compiler follows this schema as written"


def test_findings_are_frozen_and_keyword_only() -> None:
    finding = preflight(CLEAN, "llguidance")[0]
    with pytest.raises(dataclasses.FrozenInstanceError):
        finding.severity = "error"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Finding("", "", "ignores", "info", "a message", "a/b c")  # type: ignore[call-arg]


def test_the_walk_reaches_the_metaschema_places_but_contentschema_and_the_tuple_forms() -> None:
    email = {"type": "string", "format": "email"}
    schema: dict[str, Any] = {"type": "object"}
    expected = set()
    for keyword in sorted(ONE_SCHEMA | {"additionalItems"}):
        schema[keyword] = email
        expected.add(f"/{keyword}")
    for keyword in sorted(SCHEMA_LISTS):
        schema[keyword] = [email]
        expected.add(f"/{keyword}/0")
    for keyword in sorted(SCHEMA_MAPS):
        schema[keyword] = {"k": email}
        expected.add(f"/{keyword}/k")
    expected.discard("/contentSchema")  # an annotation: no compiler builds a grammar from it
    reached = {f.pointer for f in preflight(schema, "llama.cpp") if f.keyword == "format"}
    assert reached == expected
    tuple_form = {"type": "array", "items": [email, email]}
    assert {f.pointer for f in preflight(tuple_form, "llama.cpp") if f.keyword == "format"} == {
        "/items/0",
        "/items/1",
    }


def test_our_grammar_reports_its_widenings_and_what_it_bounds() -> None:
    schema = {
        "type": "object",
        "properties": {"when": {"type": "string", "format": "date"}, "ids": {"type": "array"}},
        "additionalProperties": False,
    }
    found = {(f.pointer, f.keyword, f.effect, f.severity) for f in preflight(schema, "toolrouting")}
    assert found == {
        ("", "", "fixes property order", "info"),
        # 16 items of 16 items of 16 strings of 256 escaped characters: past MAX_REPLY_CHARS.
        ("", "", "exceeds the reply limit", "info"),
        ("/properties/when", "format", "ignores", "warning"),
        ("/properties/when", "maxLength", "bounds", "info"),
        ("/properties/ids", "maxItems", "bounds", "info"),
        ("/properties/ids/items", "", "bounds", "info"),
    }


def test_our_grammar_reports_a_refusal_as_an_error() -> None:
    findings = preflight({"type": "array", "prefixItems": [{"type": "string"}]}, "toolrouting")
    assert [(f.pointer, f.effect, f.severity) for f in findings][1:] == [("", "refuses", "error")]
    assert "grammar='server'" in findings[1].message
