"""parse_route: strict in the seed's ways and I-JSON's, never raising."""

from __future__ import annotations

import json
from typing import Any

import pytest

from toolrouting import MAX_REPLY_CHARS, Route, parse_route

NAMES = ["memory_search", "memory_read"]
NOT_AN_OBJECT = "the reply is not a JSON object"


def refused(text: str, names: Any = NAMES) -> str:
    route = parse_route(text, names)
    assert route.ok is False
    assert (route.tool, route.arguments, route.text) == (None, None, None)
    assert isinstance(route.error, str)
    return route.error


def test_seed_synopsis() -> None:
    action = parse_route('{"tool":"memory_search","arguments":{"query":"latch"}}', NAMES)
    assert action.as_dict() == {
        "ok": True,
        "tool": "memory_search",
        "arguments": {"query": "latch"},
        "text": '{"tool":"memory_search","arguments":{"query":"latch"}}',
    }
    assert parse_route('{"tool":"none"}', NAMES).as_dict() == {
        "ok": True,
        "tool": "none",
        "text": '{"tool":"none"}',
    }
    assert parse_route("Sure! Let me search.", NAMES).as_dict() == {"ok": False, "error": NOT_AN_OBJECT}


def test_route_is_frozen() -> None:
    route = parse_route('{"tool":"none"}', NAMES)
    with pytest.raises(AttributeError):
        route.ok = False  # type: ignore[misc]
    assert route == Route(ok=True, tool="none", text='{"tool":"none"}')


def test_text_is_the_trimmed_reply() -> None:
    route = parse_route('\n  {"tool": "memory_read", "arguments": {"ids": ["M1"]}}  \n', NAMES)
    assert route.text == '{"tool": "memory_read", "arguments": {"ids": ["M1"]}}'
    assert route.arguments == {"ids": ["M1"]}


def test_key_order_is_free() -> None:
    route = parse_route('{"arguments":{"query":"x"},"tool":"memory_search"}', NAMES)
    assert (route.ok, route.tool) == (True, "memory_search")


def test_large_integers_are_fine_up_to_what_python_can_write_back() -> None:
    big = "9" * 4300  # int()'s default limit of 4,300 digits
    route = parse_route('{"tool":"memory_read","arguments":{"n":-' + big + "}}", NAMES)
    assert route.ok
    assert route.arguments is not None
    assert route.arguments["n"] == -(10**4300 - 1)
    error = refused('{"tool":"memory_read","arguments":{"n":' + big + "9}}")
    assert "integer of more than 4300 digits" in error


def test_nested_arguments_and_unicode_are_kept() -> None:
    arguments = {"q": "caf\u00e9 \U0001f600", "deep": [{"a": [1, 2.5, None, True]}]}
    route = parse_route(json.dumps({"tool": "memory_search", "arguments": arguments}), NAMES)
    assert route.arguments == arguments
    escaped = parse_route('{"tool":"memory_search","arguments":{"q":"\\ud83d\\ude00"}}', NAMES)
    assert escaped.arguments == {"q": "\U0001f600"}


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "Sure! Let me search.",
        '```json\n{"tool":"none"}\n```',
        'Here it is: {"tool":"none"}',
        '["tool", "none"]',
        '"none"',
        "null",
        "42",
        "none",
    ],
)
def test_anything_not_starting_as_an_object_is_not_a_json_object(text: str) -> None:
    assert refused(text) == NOT_AN_OBJECT


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        ('{"tool":"none"} Done.', 'text after the JSON object: " Done."'),
        ('{"tool":"none"}{"tool":"none"}', "text after the JSON object"),
        ('{"tool":"none"}\n```', "text after the JSON object"),
        ('{"Tool":"none"}', 'no "tool" key'),
        ('{"TOOL":"memory_search","arguments":{}}', 'no "tool" key'),
        ('{"tool":"None"}', 'the tool "None" is not one of the offered tools'),
        ('{"tool":"Memory_Search","arguments":{}}', "is not one of the offered tools"),
        ('{"tool":"memory_write","arguments":{}}', '"memory_write" is not one of the offered tools'),
        ('{"tool":""}', 'the "tool" value is not a non-empty string'),
        ('{"tool":7}', "not a non-empty string"),
        ('{"tool":null}', "not a non-empty string"),
        ('{"tool":["none"]}', "not a non-empty string"),
        ('{"tool":"none","arguments":{}}', 'the "none" action carries other keys: "arguments"'),
        ('{"tool":"none","reason":"done"}', '"reason"'),
        ('{"tool":"memory_search"}', 'has no "arguments"'),
        ('{"tool":"memory_search","arguments":{},"why":"x"}', 'besides "tool" and "arguments": "why"'),
        ('{"tool":"memory_search","args":{}}', '"args"'),
        ('{"tool":"memory_search","arguments":"query=x"}', "are not a JSON object"),
        ('{"tool":"memory_search","arguments":["x"]}', "are not a JSON object"),
        ('{"tool":"memory_search","arguments":null}', "are not a JSON object"),
        ('{"tool":"memory_search","arguments":{"q":1e999}}', 'too large to be finite: "1e999"'),
        ('{"tool":"memory_search","arguments":{"q":[[{"x":-1E400}]]}}', "too large to be finite"),
        ('{"tool":"memory_search","arguments":{"q":NaN}}', "NaN, which is not JSON"),
        ('{"tool":"memory_search","arguments":{"q":Infinity}}', "Infinity, which is not JSON"),
        ('{"tool":"memory_search","arguments":{"q":[-Infinity]}}', "-Infinity, which is not JSON"),
        ('{"tool":"none","tool":"none"}', 'repeats the key "tool"'),
        ('{"tool":"memory_search","arguments":{},"arguments":{}}', 'repeats the key "arguments"'),
        ('{"tool":"memory_search","tool":"x","arguments":{"a":{"b":1,"b":2}}}', 'repeats the key "tool"'),
        ('{"tool":"memory_search","arguments":{"b":1,"b":2},"x":1}', '"x"'),
        ('{"tool":"memory_search","arguments":{"b":[1,1e999],"b":2}}', "too large to be finite"),
        ('{"tool":"memory_search","arguments":{"q":"\\ud800"}}', "lone surrogate"),
        ('{"tool":"memory_search","arguments":{"q":"x\\udfff"}}', "lone surrogate"),
        ('{"tool":"memory_search","arguments":{"\\udc00":1}}', "lone surrogate"),
        ('{"tool":"memory_search","arguments":{"q":"\ud800"}}', "lone surrogate"),
        ('{"tool":"memory_search","arguments":{"q":"x"}', "not valid JSON"),
        ('{"tool":"mem', "not valid JSON: Unterminated string"),
        ("{'tool':'none'}", "not valid JSON"),
        ('{"tool":"none",}', "not valid JSON"),
        ("{tool: none}", "not valid JSON"),
    ],
)
def test_malformed_replies_are_refused_with_a_named_reason(text: str, fragment: str) -> None:
    assert fragment in refused(text)


def test_a_key_repeated_inside_the_arguments_keeps_its_last_value() -> None:
    # Where a schema leaves keys free no grammar can forbid a repeat: JSON.parse's reading.
    text = '{"tool":"memory_search","arguments":{"a":{"b":1,"b":2},"q":"x","q":"y"}}'
    route = parse_route(text, NAMES)
    assert route.ok, route.error
    assert route.arguments == {"a": {"b": 2}, "q": "y"}
    assert route.text == text


@pytest.mark.parametrize(
    ("replaced", "fragment"),
    [
        ('"\\ud800"', "lone surrogate"),
        ('{"a":["\\udfff"]}', "lone surrogate"),
        ("-0.9769043e3318", "too large to be finite"),
    ],
)
def test_a_replaced_value_is_still_checked(replaced: str, fragment: str) -> None:
    # The earlier value is gone from the arguments but was written in the reply: I-JSON's
    # refusals hold for every value written, kept or not (found by the bounded atheris run).
    text = '{"tool":"memory_search","arguments":{"q":' + replaced + ',"q":"x"}}'
    assert fragment in refused(text)


def test_deep_nesting_is_refused_not_raised() -> None:
    for depth in (5_000, 190_000):
        assert "nests too deeply" in refused('{"a":' * depth)
        text = '{"tool":"memory_search","arguments":{"q":' + "[" * depth + "]" * depth + "}}"
        assert "nests too deeply" in refused(text)


def test_a_reply_over_the_limit_is_refused_before_decoding() -> None:
    text = '{"tool":"memory_search","arguments":{"q":"' + "x" * MAX_REPLY_CHARS + '"}}'
    error = refused(text)
    assert f"over the limit of {MAX_REPLY_CHARS}" in error
    assert str(len(text)) in error


def test_a_large_valid_reply_under_the_limit_is_accepted() -> None:
    arguments = {"rows": [{"id": i, "text": "y" * 80} for i in range(5_000)]}
    text = json.dumps({"tool": "memory_search", "arguments": arguments})
    assert len(text) < MAX_REPLY_CHARS
    assert parse_route(text, NAMES).arguments == arguments


@pytest.mark.parametrize(
    "text",
    [
        "x" * 10_000,
        '{"tool":"none"} ' + "y" * 10_000,
        '{"tool":"' + "z" * 10_000 + '","arguments":{}}',
        '{"' + "k" * 10_000 + '":1,"' + "k" * 10_000 + '":2}',
        '{"tool":"memory_search","arguments":{"q":' + "9" * 10_000 + "e9999}}",
        '{"tool":"memory_search","arguments":{"q":"' + "w" * 10_000,
        '{"tool":"memory_search","arguments":{"q":"' + "v" * 10_000 + '\\ud800"}}',
    ],
)
def test_errors_quote_at_most_64_characters_of_the_reply(text: str) -> None:
    error = refused(text)
    for char in "xyzkw9v":
        assert char * 65 not in error


def test_errors_never_carry_raw_control_or_surrogate_characters() -> None:
    error = refused('{"tool":"\n\t\ud800\x00","arguments":{}}')
    assert error.isprintable()
    error.encode("utf-8")


@pytest.mark.parametrize("text", [None, b'{"tool":"none"}', 7, ["x"]])
def test_non_text_is_refused_not_raised(text: Any) -> None:
    assert "not text" in refused(text)


def test_names_may_be_any_collection() -> None:
    text = '{"tool":"memory_read","arguments":{}}'
    for names in (NAMES, tuple(NAMES), set(NAMES), frozenset(NAMES), dict.fromkeys(NAMES, 1)):
        assert parse_route(text, names).ok
    assert not parse_route(text, []).ok
    assert parse_route('{"tool":"none"}', []).ok


def test_only_json_whitespace_around_the_object_is_trimmed() -> None:
    # RFC 8259 allows space, tab, CR and LF around a JSON text; a grammar writes nothing else,
    # so NBSP, U+2003 or U+3000 around the object is a reply that would need repairing.
    assert not parse_route('\u00a0\u2003{"tool":"none"}\u3000\n', NAMES).ok
    route = parse_route(' \t\r\n{"tool":"none"}\n', NAMES)
    assert (route.ok, route.text) == (True, '{"tool":"none"}')
