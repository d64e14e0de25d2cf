"""The preflight as a whole: every target's findings on a plain schema and on malformed ones, the
walk and its pointers, sources, the findings' text, and our own grammar's notes.

Each compiler's rules are checked against that compiler in a module of its own
(test_preflight_llama_cpp.py, test_preflight_llguidance.py, test_preflight_outlines.py).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from support.compilers import LlamaCpp, Llguidance, Outlines
from support.preflight_llama_cpp import LLAMA_CASES
from support.preflight_llguidance import LLGUIDANCE_CASES, XGRAMMAR_CASES
from support.preflight_outlines import OUTLINES_CASES

from toolrouting import TARGETS, Finding, format_findings, preflight
from toolrouting._metaschema import ONE_SCHEMA, SCHEMA_LISTS, SCHEMA_MAPS

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
