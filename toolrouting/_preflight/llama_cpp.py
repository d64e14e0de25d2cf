"""llama.cpp's JSON-schema-to-grammar converter: what it skips, merges, reorders and refuses.

Three documents describe it: the grammar README lists its limits; json-schema-to-grammar.cpp
(llama-server) and llama-cpp-python's Python port of it (llama_cpp/llama_grammar.py, the
converter of LlamaGrammar.from_json_schema and of llama-cpp-python's server) do the work.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

from .._limits import LLAMA_CPP_MAX_OPTIONAL_REPEATS, SHOWN_VALUE_CHARS
from .findings import Finding
from .rules import (
    ANNOTATIONS,
    BOUNDS,
    CompilerRules,
    NodeFindings,
    anchored,
    is_object,
    property_order,
    required_out_of_order,
    types_of,
)

__all__ = ["LLAMA_CPP"]

_README = "ggml-org/llama.cpp grammars/README.md"
_CPP = "ggml-org/llama.cpp common/json-schema-to-grammar.cpp"
_PY = "abetlen/llama-cpp-python llama_cpp/llama_grammar.py"
_PARSER = "ggml-org/llama.cpp src/llama-grammar.cpp"

# llama_grammar.py writes a const, an enum value or a property name as _format_literal(json.dumps(v)),
# escaping only [\r\n"] in json.dumps's text, so each backslash json.dumps writes reaches llama.cpp's
# parser as an escape of its own (checked on 0.3.36, every character U+0000..U+007F and beyond):
# before a quote it ends the literal early, and \b and \f are escapes the parser does not know, so
# the grammar is refused; a backslash, the other control characters (\uXXXX) and characters outside the
# BMP (a surrogate pair) parse, but as another string: the value can never be written.
_REFUSED_CHARS = frozenset('"\b\f')

# grammars/README.md, "known limitations" and "unlikely to be implemented": skipped silently.
_SKIPPED = frozenset(
    {"not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies", "uniqueItems"}
    | {"contains", "minContains", "maxContains", "patternProperties", "propertyNames", "minProperties"}
    | {"maxProperties", "multipleOf", "unevaluatedProperties", "unevaluatedItems", "additionalItems"}
)
# The formats with a grammar rule (STRING_FORMAT_RULES, and uuid); others are plain strings.
_FORMATS = frozenset({"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"})
# The keywords the Python port's visit() dispatches on; a schema with none of them (and not
# empty) fails its final assertion, "Unrecognized schema".
_DISPATCH = frozenset(
    {"$ref", "oneOf", "anyOf", "const", "enum", "properties", "additionalProperties", "allOf", "items"}
    | {"prefixItems", "pattern", "format", "type"}
)


def _whole(schema: Mapping[str, Any]) -> list[Finding]:
    # _build_object_rule(): one fixed sequence of keys per object. Its whitespace is bounded
    # (README: `space ::= | " " | "\n" [ \t]{0,20}`), so there is no whitespace finding.
    return [
        property_order(
            _CPP,
            "every object's keys are written in one order: the required ones, then the others, "
            "each in the order of properties",
        )
    ]


def _boolean(found: NodeFindings) -> None:
    # llama_grammar.py visit() calls schema.get(): a boolean schema raises AttributeError.
    found.add(
        "",
        "refuses",
        "error",
        'llama-cpp-python\'s converter fails on a boolean schema; write {} or {"not": {}}',
        _PY,
    )


def _each(node: Mapping[str, Any], found: NodeFindings) -> None:
    if not node:
        # llama_grammar.py visit(): `len(schema) == 0` takes the "object" primitive.
        found.add(
            "",
            "narrows",
            "warning",
            "llama-cpp-python reads {} as any object, not any value; give a type",
            _PY,
        )
    keys = set(node)
    # README: "Unsupported features are skipped silently."
    found.keywords_in(
        node,
        _SKIPPED,
        "ignores",
        "warning",
        "{keyword} is skipped silently: the grammar accepts values it forbids",
    )
    # visit(): `schema.contains("oneOf") || schema.contains("anyOf")` builds one union rule.
    found.one_of_as_any_of(node, "oneOf becomes anyOf: a value matching two alternatives is accepted", _CPP)
    union = next((key for key in ("$ref", "oneOf", "anyOf") if key in node), None)
    if union is not None:
        # visit() returns on $ref, then on anyOf/oneOf, before it reads any other keyword
        # (README: "Can't mix properties w/ anyOf / oneOf in the same type", issue #7703).
        for keyword in sorted(keys - ANNOTATIONS - {union, "type"} - _SKIPPED):
            found.add(
                keyword,
                "ignores",
                "warning",
                f"{keyword} beside {union} is ignored; move it into each alternative",
                _CPP,
            )
    # README: "Remote $refs not supported in the C++ version"; the Python port refuses to fetch.
    if not found.remote_ref(node, "the remote $ref {ref} is not fetched; inline it under $defs"):
        ref = node.get("$ref")
        if isinstance(ref, str) and ("~0" in ref or "~1" in ref):
            # llama_grammar.py resolve_refs() looks up each pointer segment without unescaping it.
            found.add(
                "$ref",
                "refuses",
                "error",
                "llama-cpp-python cannot resolve a $ref with ~0 or ~1; rename the definition",
                _PY,
            )
    if node and not keys & _DISPATCH:
        # llama_grammar.py visit(): `assert schema_type in PRIMITIVE_RULES, "Unrecognized schema"`;
        # json-schema-to-grammar.cpp reads the same schema as any value.
        found.add(
            "",
            "refuses",
            "error",
            "llama-cpp-python refuses a schema with no type (llama-server reads it as any value); add a type",
            _PY,
        )
    found.unknown_type(node, _PY)
    if is_object(node) and union is None:
        # README: "additionalProperties defaults to false".
        found.unset_additional_properties(
            node,
            "forbids extra keys",
            "extra keys are refused though the schema allows them; set additionalProperties to say so",
        )
        if required_out_of_order(node):
            # _build_object_rule(): required properties first, then optional ones, each in properties order.
            found.add(
                "properties",
                "reorders",
                "info",
                "required properties are written first, then the optional ones",
                _CPP,
            )
        # _build_object_rule() builds key rules from properties only.
        found.required_not_in_properties(node, _CPP)
    if "allOf" in node and union is None:
        # llama_grammar.py visit(): allOf is read as an object merging its branches' properties.
        found.add(
            "allOf",
            "approximates",
            "warning",
            "allOf is merged as an object of its branches' properties; other keywords are lost",
            _PY,
        )
    pattern = node.get("pattern")
    if isinstance(pattern, str) and not anchored(pattern):
        # _visit_pattern(): "not anchored with '^' and '$'" — the C++ converter accepts any
        # string; the Python port asserts.
        found.add(
            "pattern",
            "refuses",
            "error",
            "llama-cpp-python refuses an unanchored pattern (llama-server ignores it); wrap it in ^...$",
            _PY,
        )
    if "pattern" not in node:
        found.unknown_format(
            node,
            _FORMATS,
            "ignores",
            "warning",
            "format {format} has no grammar rule: any string is accepted",
        )
    if "number" in types_of(node) or "integer" in types_of(node):
        for keyword in BOUNDS:
            if keyword in node:
                # README: bounds "only supported for integer"; llama_grammar.py: "TODO: support minimum...".
                found.add(
                    keyword,
                    "ignores",
                    "warning",
                    f"{keyword} is not enforced by llama-cpp-python (llama-server enforces it on integers)"
                    if types_of(node) == {"integer"}
                    else f"{keyword} is not enforced on numbers",
                )
    if "prefixItems" in node:
        found.add(
            "prefixItems",
            "approximates",
            "warning",
            "prefixItems is broken in llama.cpp's converter; use items",
        )
    _literals(node, found)
    _repetitions(node, found)


def _strings(value: Any) -> Iterator[str]:
    """Every string json.dumps writes for ``value``: strings, and object keys, at any depth."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield str(key)
            yield from _strings(item)


def _escaped(text: str) -> bool:
    """Whether json.dumps writes a backslash for one of ``text``'s characters."""
    return text != json.dumps(text, ensure_ascii=False)[1:-1] or any(ord(c) > 0xFFFF for c in text)


def _literals(node: Mapping[str, Any], found: NodeFindings) -> None:
    places: list[tuple[str, Any]] = [(k, node[k]) for k in ("const", "enum") if k in node]
    if isinstance(node.get("properties"), Mapping):
        places.append(("properties", list(node["properties"])))
    for keyword, value in places:
        strings = [text for text in _strings(value) if _escaped(text)]
        refused = next((text for text in strings if _REFUSED_CHARS & set(text)), None)
        what = {"properties": "a property name", "enum": "an enum value"}.get(keyword, "a const value")
        if refused is not None:
            found.add(
                keyword,
                "refuses",
                "error",
                f"{what} holding a quote, \\b or \\f ({refused!r:.{SHOWN_VALUE_CHARS}}) is escaped "
                "wrongly by llama-cpp-python's converter and llama.cpp refuses the grammar "
                "(llama-server escapes it); drop the character",
                _PY,
            )
        elif strings:
            found.add(
                keyword,
                "miswrites",
                "warning",
                f"{what} holding a backslash, a control character or a character outside the BMP "
                f"({strings[0]!r:.{SHOWN_VALUE_CHARS}}) is written as another string by llama-cpp-python's "
                "converter (llama-server escapes it): the value can never be written",
                _PY,
            )


def _repetitions(node: Mapping[str, Any], found: NodeFindings) -> None:
    # llama_grammar.py _build_repetition(): one nested optional group per optional repeat, and
    # llama.cpp refuses a group of 2000 rules (MAX_REPETITION_THRESHOLD, two rules a level).
    kind = node.get("type")
    if kind == "array" and isinstance(node.get("items"), Mapping) and "prefixItems" not in node:
        low, high = "minItems", "maxItems"
    elif kind == "string" and "pattern" not in node and not _formatted(node):
        low, high = "minLength", "maxLength"
    else:
        return
    most, least = node.get(high), node.get(low, 0)
    if not isinstance(most, int) or not isinstance(least, int) or isinstance(most, bool):
        return
    if most - max(least, 0) > LLAMA_CPP_MAX_OPTIONAL_REPEATS:
        found.add(
            high,
            "refuses",
            "error",
            f"{high} {most} leaves {most - max(least, 0)} optional repeats: llama-cpp-python nests one "
            'group per repeat and llama.cpp refuses the grammar ("exceeds sane defaults"); keep '
            f"{high} - {low} at most {LLAMA_CPP_MAX_OPTIONAL_REPEATS}",
            _PARSER,
        )


def _formatted(node: Mapping[str, Any]) -> bool:
    """Whether the converter writes ``node`` by its format (the lengths are then not read)."""
    fmt = node.get("format")
    return isinstance(fmt, str) and (fmt in _FORMATS)


#: llama.cpp's rules.
LLAMA_CPP = CompilerRules(source=_README, whole=_whole, each=_each, boolean=_boolean)
