"""The schemas, modes and hostile texts the grammar's tests hold every engine to."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import strategies as st

MODES = {
    "compact": {},
    "spaced": {"spaced": True},
    "bounded": {"bounded": True},
    "spaced-bounded": {"spaced": True, "bounded": True},
}


def action_text(value: Any, options: dict[str, bool]) -> str:
    separators = (", ", ": ") if options.get("spaced") else (",", ":")
    return json.dumps(value, separators=separators, ensure_ascii=False)


HOSTILE_TEXTS = [
    'say "hi"',
    "back\\slash",
    "tab\tnew\nline\r",
    "nul\x00bel\x07del\x7f",
    "]^-[#",
    "é—😀",
    "\\u0041",
    "",
]


def hostile_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            **{f"k{i} {text}": {"const": text} for i, text in enumerate(HOSTILE_TEXTS)},
            "pick": {"enum": [*HOSTILE_TEXTS, 1, 2.5, None, True, [1, "a"], {"a": "]"}]},
            "many": {"type": "array", "items": {"type": "integer"}, "maxItems": 10_000},
            "least": {"type": "array", "items": {"type": "boolean"}, "minItems": 5000},
            "long": {"type": "string", "minLength": 3000, "maxLength": 100_000},
        },
        "required": ["pick"],
        "additionalProperties": False,
    }


def deep_schema(levels: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string", "enum": ["leaf"]}
    for level in range(levels):
        schema = (
            {"type": "array", "items": schema, "maxItems": 2}
            if level % 2
            else {
                "type": "object",
                "properties": {"d": schema},
                "required": ["d"],
                "additionalProperties": False,
            }
        )
    return schema


KEYS = st.text(st.sampled_from('ab"\\é-]^ \n'), min_size=1, max_size=4)
STRINGS = st.text(st.characters(exclude_categories=["Cs"]), max_size=6)


def _leaf() -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    def string(bounds: tuple[int, int]) -> tuple[dict[str, Any], st.SearchStrategy[Any]]:
        low, high = sorted(bounds)
        return {"type": "string", "minLength": low, "maxLength": high}, st.text(
            st.characters(exclude_categories=["Cs"]), min_size=low, max_size=high
        )

    def enum(values: list[Any]) -> tuple[dict[str, Any], st.SearchStrategy[Any]]:
        return {"enum": values}, st.sampled_from(values)

    return st.one_of(
        st.tuples(st.integers(0, 4), st.integers(0, 4)).map(string),
        st.just(({"type": "integer"}, st.integers(-(10**15), 10**15))),
        st.just(({"type": "number"}, st.integers(-(10**9), 10**9).map(lambda n: n / 1000))),
        st.just(({"type": "boolean"}, st.booleans())),
        st.just(({"type": "null"}, st.none())),
        st.lists(STRINGS, min_size=1, max_size=4, unique=True).map(enum),
    )


def _node(
    children: st.SearchStrategy[Any],
) -> st.SearchStrategy[tuple[dict[str, Any], st.SearchStrategy[Any]]]:
    def array(args: tuple[tuple[dict[str, Any], Any], int, int]) -> tuple[dict[str, Any], Any]:
        (item, values), low, extra = args
        schema = {"type": "array", "items": item, "minItems": low, "maxItems": low + extra}
        return schema, st.lists(values, min_size=low, max_size=low + extra)

    def obj(
        args: tuple[list[tuple[str, tuple[dict[str, Any], Any], bool]], bool],
    ) -> tuple[dict[str, Any], Any]:
        members, _ = args
        schema = {
            "type": "object",
            "properties": {key: sub for key, (sub, _), _ in members},
            "required": [key for key, _, required in members if required],
            "additionalProperties": False,
        }
        parts = [
            st.tuples(st.just(key), values, st.just(True) if req else st.booleans())
            for key, (_, values), req in members
        ]
        return schema, st.tuples(*parts).map(
            lambda chosen: {key: value for key, value, keep in chosen if keep}
        )

    def any_of(options: list[tuple[dict[str, Any], Any]]) -> tuple[dict[str, Any], Any]:
        return {"anyOf": [schema for schema, _ in options]}, st.one_of(*[values for _, values in options])

    members = st.lists(st.tuples(KEYS, children, st.booleans()), max_size=4, unique_by=lambda m: m[0])
    return st.one_of(
        st.tuples(children, st.integers(0, 2), st.integers(0, 2)).map(array),
        st.tuples(members, st.booleans()).map(obj),
        st.lists(children, min_size=2, max_size=3).map(any_of),
    )


SCHEMAS = st.recursive(_leaf(), _node, max_leaves=8)
