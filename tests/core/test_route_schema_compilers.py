"""Route schemas of realistic catalogues, proven on the real compilers and on parse_route.

Each catalogue in tests/catalogues/ (and a 200-tool one built here) becomes a route schema
that llama.cpp's converter and llguidance both compile; its valid actions are accepted by
both grammars and by parse_route, and the actions no route allows are refused by all three.
Where a grammar and parse_route legitimately differ, a test below names the difference and
checks that the preflight reports it.
"""

from __future__ import annotations

import json

import pytest
from support.compilers import LlamaCpp, Llguidance
from support.corpus import CASES, _invalid

from toolrouting import Finding, parse_route, preflight, route_schema, route_tool_names


@pytest.mark.parametrize("case", CASES)
def test_compiles_under_llguidance(case: str, llguidance: Llguidance) -> None:
    assert llguidance.error(route_schema(CASES[case][0])) is None


@pytest.mark.model
@pytest.mark.parametrize("case", CASES)
def test_compiles_under_llama_cpp(case: str, llama: LlamaCpp) -> None:
    assert llama.error(route_schema(CASES[case][0])) is None


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("target", ["llama.cpp", "llguidance"])
def test_preflight_finds_no_refusal_where_the_compiler_compiles(case: str, target: str) -> None:
    refusals = [f for f in preflight(route_schema(CASES[case][0]), target) if f.severity == "error"]
    assert refusals == []


@pytest.mark.parametrize("case", CASES)
def test_valid_actions_accepted_by_parse_route_and_llguidance(case: str, llguidance: Llguidance) -> None:
    tools, valid = CASES[case]
    schema, names = route_schema(tools), route_tool_names(tools)
    for action in valid:
        assert parse_route(action, names).ok, action
        assert llguidance.accepts(schema, action), action


@pytest.mark.model
@pytest.mark.parametrize("case", CASES)
def test_valid_actions_accepted_by_llama_cpp(case: str, llama: LlamaCpp) -> None:
    tools, valid = CASES[case]
    schema = route_schema(tools)
    for action in valid:
        assert llama.accepts(schema, action), action


@pytest.mark.parametrize("case", CASES)
def test_invalid_actions_refused_by_parse_route_and_llguidance(case: str, llguidance: Llguidance) -> None:
    tools, valid = CASES[case]
    schema, names = route_schema(tools), route_tool_names(tools)
    for why, action in _invalid(tools, valid).items():
        assert not parse_route(action, names).ok, why
        assert not llguidance.accepts(schema, action), why


@pytest.mark.model
@pytest.mark.parametrize("case", CASES)
def test_invalid_actions_refused_by_llama_cpp(case: str, llama: LlamaCpp) -> None:
    tools, valid = CASES[case]
    schema = route_schema(tools)
    for why, action in _invalid(tools, valid).items():
        assert not llama.accepts(schema, action), why


# --- the differences, each named -----------------------------------------------------------


def _at(findings: list[Finding], pointer: str, keyword: str) -> list[Finding]:
    return [f for f in findings if f.pointer == pointer and f.keyword == keyword]


@pytest.mark.model
def test_difference_grammars_fix_key_order_parse_route_ignores_it(
    llguidance: Llguidance, llama: LlamaCpp
) -> None:
    tools, _ = CASES["filesystem"]
    schema = route_schema(tools)
    reordered = '{"arguments":{"path":"."},"tool":"list_directory"}'
    assert parse_route(reordered, route_tool_names(tools)).ok
    assert not llguidance.accepts(schema, reordered)
    assert not llama.accepts(schema, reordered)
    for target in ("llguidance", "llama.cpp"):
        assert _at(preflight(schema, target), "", "properties"), target


@pytest.mark.model
def test_difference_grammars_enforce_each_tools_parameters(llguidance: Llguidance, llama: LlamaCpp) -> None:
    # parse_route takes only the tool names: checking arguments is the tool's business.
    tools, _ = CASES["issue_tracker"]
    schema = route_schema(tools)
    for action in (
        '{"tool":"get_issue","arguments":{}}',  # a required argument missing
        '{"tool":"get_issue","arguments":{"number":"42"}}',  # a string for an integer
        '{"tool":"create_issue","arguments":{"title":"x","priority":"whenever"}}',  # not in the enum
    ):
        assert parse_route(action, route_tool_names(tools)).ok, action
        assert not llguidance.accepts(schema, action), action
        assert not llama.accepts(schema, action), action


@pytest.mark.model
def test_difference_extra_argument_keys_where_additional_properties_is_unset(
    llguidance: Llguidance, llama: LlamaCpp
) -> None:
    tools, _ = CASES["issue_tracker"]
    schema = route_schema(tools)
    index = route_tool_names(tools).index("comment_on_issue")
    pointer = f"/anyOf/{index}/properties/arguments"
    extra = '{"tool":"comment_on_issue","arguments":{"number":7,"body":"ok","urgent":true}}'
    assert llguidance.accepts(schema, extra)  # JSON Schema's own default: extra keys allowed
    assert not llama.accepts(schema, extra)  # llama.cpp: additionalProperties defaults to false
    assert (
        _at(preflight(schema, "llguidance"), pointer, "additionalProperties")[0].effect == "allows extra keys"
    )
    assert (
        _at(preflight(schema, "llama.cpp"), pointer, "additionalProperties")[0].effect == "forbids extra keys"
    )


@pytest.mark.model
@pytest.mark.parametrize(
    ("action", "path", "keyword"),
    [
        (
            '{"tool":"create_event","arguments":{"title":"t","start":"2026-12-01T09:00:00Z",'
            '"end":"2026-12-01T10:00:00Z","attendees":[{"email":"not an email"}]}}',
            "properties/attendees/items/properties/email",
            "format",
        ),
        (
            '{"tool":"search_email","arguments":{"query":"q","max_results":5000}}',
            "properties/max_results",
            "maximum",
        ),
    ],
)
def test_difference_llama_cpp_skips_keywords_llguidance_enforces(
    action: str, path: str, keyword: str, llguidance: Llguidance, llama: LlamaCpp
) -> None:
    tools, _ = CASES["calendar_email"]
    schema = route_schema(tools)
    index = route_tool_names(tools).index(json.loads(action)["tool"])
    assert llama.accepts(schema, action)
    assert not llguidance.accepts(schema, action)
    findings = _at(preflight(schema, "llama.cpp"), f"/anyOf/{index}/properties/arguments/{path}", keyword)
    assert findings
    assert findings[0].effect == "ignores"
    assert findings[0].severity == "warning"


@pytest.mark.model
def test_difference_whitespace(llguidance: Llguidance, llama: LlamaCpp) -> None:
    tools, _ = CASES["filesystem"]
    schema = route_schema(tools)
    spaced = '{"tool":\n\n    "none"}'
    assert parse_route(spaced, route_tool_names(tools)).ok
    assert llguidance.accepts(schema, spaced)  # any whitespace by default
    assert not llama.accepts(schema, spaced)  # a bounded run of whitespace
    assert [f.effect for f in preflight(schema, "llguidance") if f.keyword == "x-guidance"] == [
        "allows any whitespace"
    ]


@pytest.mark.model
def test_difference_unicode_escapes(llguidance: Llguidance, llama: LlamaCpp) -> None:
    tools, _ = CASES["issue_tracker"]
    schema = route_schema(tools)
    escaped = '{"tool":"comment_on_issue","arguments":{"number":7,"body":"1.2 \\u2014 thanks"}}'
    assert parse_route(escaped, route_tool_names(tools)).ok
    assert llama.accepts(schema, escaped)
    assert not llguidance.accepts(schema, escaped)  # it wants the character itself, as UTF-8
    assert [f.effect for f in preflight(schema, "llguidance") if "escape" in f.effect] == [
        "refuses \\u escapes"
    ]


@pytest.mark.model
def test_difference_llama_cpp_writes_required_properties_first(
    llguidance: Llguidance, llama: LlamaCpp
) -> None:
    # create_issue lists title, body, labels, priority, assignees and requires title and priority.
    tools, _ = CASES["issue_tracker"]
    schema = route_schema(tools)
    in_properties_order = '{"tool":"create_issue","arguments":{"title":"t","body":"b","priority":"low"}}'
    required_first = '{"tool":"create_issue","arguments":{"title":"t","priority":"low","body":"b"}}'
    for action in (in_properties_order, required_first):
        assert parse_route(action, route_tool_names(tools)).ok
    assert llguidance.accepts(schema, in_properties_order)
    assert not llguidance.accepts(schema, required_first)
    assert llama.accepts(schema, required_first)
    assert not llama.accepts(schema, in_properties_order)
    reorders = _at(preflight(schema, "llama.cpp"), "/anyOf/0/properties/arguments", "properties")
    assert reorders[0].effect == "reorders"
