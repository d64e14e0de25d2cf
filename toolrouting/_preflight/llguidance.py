"""llguidance's JSON-schema compiler: it follows the schema or refuses it, with a few exceptions."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .findings import Finding
from .rules import CompilerRules, NodeFindings, is_object, property_order, required_names, whole_note

__all__ = ["LLGUIDANCE"]

_DOC = "guidance-ai/llguidance docs/json_schema.md"
_API = "guidance-ai/llguidance python/llguidance/_lib.pyi"
# Refused with "Unimplemented keys: [...]" (checked on llguidance 1.9).
_UNIMPLEMENTED = frozenset(
    {"not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains", "dependencies"}
    | {"dependentRequired", "dependentSchemas", "propertyNames", "unevaluatedProperties", "unevaluatedItems"}
    | {"$dynamicRef"}
)
# docs/json_schema.md, String features: `format`, with the formats it names; others are refused.
_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri"}
)


def _whole(schema: Mapping[str, Any]) -> list[Finding]:
    notes = [
        property_order(_DOC),
        # JsonCompileOptions json_allow_general_unicode_escapes (default false): \uXXXX only
        # for characters that have no other spelling (controls); checked on llguidance 1.9.
        whole_note(
            "",
            "refuses \\u escapes",
            "strings carry printable characters as UTF-8: a \\uXXXX escape of one is refused",
            _API,
        ),
    ]
    if "x-guidance" not in schema:
        message = (
            "any whitespace is allowed between tokens; set x-guidance whitespace_flexible false "
            "or a bounded whitespace_pattern"
        )
        notes.append(whole_note("x-guidance", "allows any whitespace", message, _DOC))
    return notes


def _each(node: Mapping[str, Any], found: NodeFindings) -> None:
    found.keywords_in(
        node, _UNIMPLEMENTED, "refuses", "error", "{keyword} is not implemented: the schema is refused"
    )
    if "oneOf" in node:
        found.add(
            "oneOf",
            "refuses unless disjoint",
            "warning",
            "oneOf compiles only when its alternatives are provably disjoint; use anyOf "
            "(or x-guidance coerce_one_of)",
        )
    found.unknown_format(
        node, _FORMATS, "refuses", "error", "format {format} is unknown: the schema is refused"
    )
    found.lookaround(
        node, "refuses", "error", "look-around in a pattern is not supported: the schema is refused"
    )
    found.remote_ref(node, "the remote $ref {ref} is not fetched; inline it under $defs")
    found.unknown_type(node)
    if ("minProperties" in node or "maxProperties" in node) and set(
        node["properties"] if isinstance(node.get("properties"), dict) else ()
    ) - set(required_names(node)):
        found.add(
            "minProperties" if "minProperties" in node else "maxProperties",
            "refuses",
            "error",
            "min/maxProperties are supported only when every property is required",
        )
    patterns = node.get("patternProperties")
    if isinstance(patterns, Mapping) and len(patterns) > 1:
        found.add(
            "patternProperties",
            "refuses unless disjoint",
            "warning",
            "patternProperties compile only when their patterns are disjoint",
        )
    if is_object(node):
        found.unset_additional_properties(
            node,
            "allows extra keys",
            "keys beyond properties are allowed, as the schema says; additionalProperties false stops it",
        )


#: llguidance's rules.
LLGUIDANCE = CompilerRules(source=_DOC, whole=_whole, each=_each)
