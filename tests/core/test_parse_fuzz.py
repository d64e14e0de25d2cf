"""Differential fuzzing: parse_route and an independent oracle agree on every reply.

The strategies write actions and near-actions token by token (so they can repeat keys,
misspell literals and escape anything), then wrap them the ways a model or a broken server
does. CI runs the "ci" hypothesis profile; ``HYPOTHESIS_PROFILE=long`` is the long campaign.
The coverage-guided half lives in fuzz/fuzz_parse_route.py; a bounded run of it is here too.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from support.catalogues import fold
from support.paths import ROOT
from support.route_oracle import disagreement, judge

from toolrouting import parse_route

FUZZ = ROOT / "fuzz"

JSON_WS = [" ", "\t", "\n", "\r"]
#: Whitespace (or whitespace-like) that str.strip() would remove and JSON does not allow.
UNICODE_WS = ["\u00a0", "\u1680", "\u2000", "\u2028", "\u2029", "\u202f", "\u205f", "\u3000"]
UNICODE_WS += ["\ufeff", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x1f", "\x85", "\u180e"]

NUMBER_EDGES = [
    "0", "-0", "1", "-1", "0.0", "-0.0", "1.5", "1e308", "1E+2", "1e-2", "0e0",
    "1.7976931348623157e308", "1.7976931348623158e308", "1.7976931348623159e308", "-1.7976931348623159e308",
    "1e309", "-1e309", "1e99999999999999999999", "5e-324", "2.4703282292062328e-324",
    "2.4703282292062327e-324", "1e-400", "-1e-99999999999999999999", "9007199254740993",
    "-9223372036854775809", "1" + "0" * 4299, "1" + "0" * 4300, "-" + "9" * 5000, "0." + "0" * 400 + "1",
    "1" * 400 + ".5", "123456789012345678901234567890e-10",
]  # fmt: skip
NUMBER_INVALID = ["01", "1.", ".5", "+1", "1e", "--1", "0x1F", "1_000", "-", "1e+", "١", "1.e3", "0.e1"]
LITERALS = ["true", "false", "null"]
LITERALS_BAD = ["NaN", "Infinity", "-Infinity", "True", "None", "nan", "undefined", "inf"]
ESCAPES = ["\\n", '\\"', "\\\\", "\\/", "\\u0000", "\\u001f", "\\u00e9", "\\u0074", "\\uFFFF", "\\b"]
ESCAPES_SURROGATE = ["\\ud800", "\\udfff", "\\uDC00", "\\ud83d\\ude00", "\\ude00\\ud83d", "\\ud83d\\u0041"]
ESCAPES_BAD = ["\\x41", "\\U0041", "\\u12", "\\ug000", "\\'", "\\"]
RAW_BAD = ["\ud800", "\udc00", "\x00", "\x1f", "\n"]


NAME_CHARS = st.characters(categories=["L", "M", "N", "P", "S"])
NAME = st.text(NAME_CHARS, min_size=1, max_size=10).filter(lambda n: fold(n) != "none")
NAMES = st.lists(NAME, min_size=1, max_size=4, unique_by=fold)


@st.composite
def json_string(draw: st.DrawFn, base: st.SearchStrategy[str] | None = None) -> str:
    """A string token: maybe escaped character by character, maybe with a hostile piece."""
    text = draw(base if base is not None else st.text(max_size=12))
    pieces = []
    for char in text:
        if char in '"\\' or ord(char) < 0x20:
            pieces.append(json.dumps(char)[1:-1])
        elif rarely(draw, 10):
            pieces.append(f"\\u{ord(char):04x}" if ord(char) < 0x10000 else json.dumps(char)[1:-1])
        else:
            pieces.append(char)
    kind = draw(st.sampled_from([9] * 56 + [0, 1, 2, 3]))
    if kind == 0:
        pieces.insert(draw(st.integers(0, len(pieces))), draw(st.sampled_from(ESCAPES_SURROGATE)))
    elif kind == 1:
        pieces.insert(draw(st.integers(0, len(pieces))), draw(st.sampled_from(ESCAPES_BAD)))
    elif kind == 2:
        pieces.insert(draw(st.integers(0, len(pieces))), draw(st.sampled_from(RAW_BAD)))
    elif kind == 3:
        pieces.append(draw(st.sampled_from(ESCAPES)))
    return '"' + "".join(pieces) + '"'


def rarely(draw: st.DrawFn, one_in: int = 20) -> bool:
    """Most of what the strategies write is well formed, so that one defect decides the answer."""
    # sampled_from leans towards its first element, as hypothesis leans towards 0 in integers().
    return draw(st.sampled_from([False] * (one_in - 1) + [True]))


@st.composite
def number(draw: st.DrawFn) -> str:
    if rarely(draw, 30):
        return draw(st.sampled_from(NUMBER_INVALID))
    if rarely(draw, 4):
        return draw(st.sampled_from(NUMBER_EDGES))
    return draw(st.integers().map(str) | st.floats(allow_nan=False, allow_infinity=False).map(repr))


@st.composite
def literal(draw: st.DrawFn) -> str:
    return draw(st.sampled_from(LITERALS_BAD if rarely(draw, 30) else LITERALS))


def ws(draw: st.DrawFn) -> str:
    if not rarely(draw, 4):
        return ""
    spaces = JSON_WS + UNICODE_WS[:2] if rarely(draw, 30) else JSON_WS
    return "".join(draw(st.lists(st.sampled_from(spaces), max_size=3)))


def value(depth: int = 0) -> st.SearchStrategy[str]:
    scalar = st.one_of(json_string(), number(), literal())
    if depth >= 3:
        return scalar
    return st.one_of(scalar, scalar, array(depth + 1), obj(depth + 1))


@st.composite
def array(draw: st.DrawFn, depth: int) -> str:
    items = draw(st.lists(value(depth), max_size=3))
    return "[" + ws(draw) + ",".join(items) + ws(draw) + "]"


@st.composite
def obj(draw: st.DrawFn, depth: int, pairs: list[tuple[str, str]] | None = None) -> str:
    """An object token from (key token, value token) pairs; keys may repeat."""
    if pairs is None:
        keys = st.one_of(json_string(), json_string(st.sampled_from(["tool", "arguments", "a", "Tool"])))
        pairs = draw(st.lists(st.tuples(keys, value(depth)), max_size=3))
        if pairs and rarely(draw):
            pairs.append((pairs[0][0], draw(value(depth))))  # a duplicate key at this depth
    body = ",".join(f"{ws(draw)}{key}{ws(draw)}:{ws(draw)}{item}{ws(draw)}" for key, item in pairs)
    return "{" + body + "}"


def key_token(draw: st.DrawFn, key: str) -> str:
    """``key`` written plainly, escaped, or mutated the ways models get keys wrong."""
    kind = draw(st.sampled_from([9] * 38 + [0, 1]))
    if kind == 0:
        key = draw(
            st.sampled_from([key.upper(), key.capitalize(), key + " ", " " + key, key + "s", key[:-1]])
        )
    elif kind == 1:
        return '"' + "".join(f"\\u{ord(c):04X}" for c in key) + '"'  # the same key, escaped
    return json.dumps(key)


@st.composite
def action_text(draw: st.DrawFn, names: list[str]) -> str:
    """An action or a near-action: the right keys, maybe one wrong thing."""
    plain = st.sampled_from([*names, "none"] if draw(st.booleans()) else names).map(json.dumps)
    tool = draw(
        st.one_of(
            st.sampled_from(names).map(lambda n: json.dumps(n.upper())),
            st.sampled_from(names).map(lambda n: json.dumps(unicodedata.normalize("NFKD", n))),
            json_string(st.sampled_from([*names, "none", "", "None"])),
            value(2),
        )
        if rarely(draw, 5)
        else plain
    )
    arguments = draw(value(1) if rarely(draw, 10) else obj(1))
    pairs = [(key_token(draw, "tool"), tool)]
    if not rarely(draw, 10):
        pairs.append((key_token(draw, "arguments"), arguments))
    if rarely(draw, 10):
        pairs.append(
            (draw(json_string(st.sampled_from(["why", "tool", "arguments", "Tool"]))), draw(value(2)))
        )
    if draw(st.booleans()):
        pairs.reverse()
    text = draw(obj(0, pairs))
    kind = draw(st.sampled_from([9] * 28 + [0, 1]))
    if kind == 0:
        text = draw(st.sampled_from(['{"action":%s}', "[%s]", '{"tool":"none","then":%s}'])) % text
    elif kind == 1:
        inner = json.dumps({"tool": draw(st.sampled_from(names)), "arguments": {}})
        text = text.replace("{", "{" + f'"nested":{inner},', 1)
    return text


@st.composite
def wrapped(draw: st.DrawFn, body: str) -> str:
    """The body as a reply: trimmed or padded, fenced, in prose, followed by more."""
    pad = st.text(st.sampled_from(JSON_WS + UNICODE_WS if rarely(draw, 10) else JSON_WS), max_size=3)
    kind = draw(st.sampled_from([9] * 16 + [0, 1, 2, 3]))
    if kind == 0:
        body = f"```json\n{body}\n```"
    elif kind == 1:
        body = draw(st.sampled_from(["Sure! ", "Here is the action: ", "<tool>"])) + body
    elif kind == 2:
        body = body + draw(st.sampled_from([" ok", "\n\nDone.", ",", "}", "]", "\x00", "{}", "//"]))
    elif kind == 3:
        body = body + draw(pad) + body  # two objects
    return draw(pad) + body + draw(pad)


@st.composite
def replies(draw: st.DrawFn) -> tuple[str, list[str]]:
    names = draw(NAMES)
    return draw(wrapped(draw(action_text(names)))), names


def check(text: str, names: list[str]) -> None:
    problem = disagreement(text, names)
    assert problem is None, f"{problem}\nreply: {text!r:.2000}\nnames: {names!r}"


@given(replies())
@example(('\u00a0{"tool":"none"}', ["t"]))
@example(('{"tool":"none"}\u2028', ["t"]))
@example(('\ufeff{"tool":"none"}', ["t"]))
@example(('\x1c{"tool":"t","arguments":{}}\x85', ["t"]))
@example(('{"tool":"t","arguments":{"n":' + "9" * 5000 + "}}", ["t"]))
@example(('{"tool":"t","arguments":{"n":1.7976931348623159e308}}', ["t"]))
@example(('{"\\u0074ool":"\\u0074","arguments":{}}', ["t"]))
def test_actions_and_near_actions_agree(case: tuple[str, list[str]]) -> None:
    check(*case)


TOKENS = [
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    '"tool"',
    '"arguments"',
    '"none"',
    '"t"',
    '"\\ud800"',
    "1e999",
    "-0",
    "NaN",
]
TOKENS += ["true", "null", " ", "\n", "\u00a0", '"', "\\", "```", "{}", '"a"', "12345678901234567890"]


@given(st.lists(st.sampled_from(TOKENS), max_size=30).map("".join))
def test_token_soup_agrees(text: str) -> None:
    check(text, ["t"])


@given(st.text(st.characters(codec=None) | st.sampled_from(["\ud800", "\udfff", "{", "}", '"']), max_size=60))
def test_arbitrary_text_agrees(text: str) -> None:
    check(text, ["t", "tool"])


def test_trimming_is_json_whitespace_only() -> None:
    names = ["t"]
    for space in UNICODE_WS:
        assert not parse_route(space + '{"tool":"none"}', names).ok, ascii(space)
        assert not parse_route('{"tool":"none"}' + space, names).ok, ascii(space)
    route = parse_route(' \t\r\n{"tool":"none"}\n\r\t ', names)
    assert route.ok
    assert route.text == '{"tool":"none"}'
    assert judge(' {"tool":"none"}\n', names).text == route.text


def test_integers_are_values_up_to_the_digit_limit_python_can_write() -> None:
    limit = sys.get_int_max_str_digits()
    at_limit = "9" * limit
    route = parse_route('{"tool":"t","arguments":{"n":-' + at_limit + "}}", ["t"])
    assert route.ok
    assert route.arguments == {"n": -int(at_limit)}
    over = parse_route('{"tool":"t","arguments":{"n":-' + at_limit + "9}}", ["t"])
    assert not over.ok
    assert f"more than {limit} digits" in (over.error or "")
    assert judge('{"tool":"t","arguments":{"n":' + at_limit + "9}}", ["t"]).ok is False


def _harness() -> Any:
    pytest.importorskip("atheris", reason="atheris is the coverage-guided half (dev extra)")
    sys.path.insert(0, str(FUZZ))
    try:
        return importlib.import_module("fuzz_parse_route")
    finally:
        sys.path.remove(str(FUZZ))


def test_seed_corpus_agrees() -> None:
    harness = _harness()
    seeds = sorted((FUZZ / "corpus").iterdir())
    assert len(seeds) >= 20
    for seed in seeds:
        harness.test_one_input(seed.read_bytes())


def test_bounded_atheris_run(tmp_path: Path) -> None:
    pytest.importorskip("atheris", reason="atheris is the coverage-guided half (dev extra)")
    # A real libFuzzer run in a subprocess; new inputs go to tmp_path, never into fuzz/corpus.
    runs = 20_000
    result = subprocess.run(
        [
            sys.executable,
            str(FUZZ / "fuzz_parse_route.py"),
            f"-runs={runs}",
            "-seed=1",
            f"-dict={FUZZ / 'route.dict'}",
            f"-artifact_prefix={tmp_path}/",
            str(tmp_path),
            str(FUZZ / "corpus"),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert f"Done {runs} runs" in result.stderr
