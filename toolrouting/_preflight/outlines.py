"""outlines-core's JSON-schema-to-regex converter: it reads one keyword per schema, and ignores the rest."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._limits import OUTLINES_MAX_STRING_BOUND
from .findings import Finding
from .rules import BOUNDS, CompilerRules, NodeFindings, anchored, property_order, types_of

__all__ = ["OUTLINES"]

_SOURCE = "dottxt-ai/outlines-core src/json_schema/parsing.rs"
# Parser::to_regex() tries these in this order and uses the first present; the rest are ignored.
_DISPATCH = ("properties", "allOf", "anyOf", "oneOf", "prefixItems", "enum", "const", "$ref", "type")
# types.rs FormatType: the formats with a regex; parse_string_type() refuses the others.
_FORMATS = frozenset({"date-time", "date", "time", "uuid", "uri", "email"})
_IGNORED = frozenset(
    {"not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains", "dependencies"}
    | {"dependentRequired", "dependentSchemas", "propertyNames", "patternProperties", "multipleOf"}
    | {"unevaluatedProperties", "unevaluatedItems", *BOUNDS}
)


def _whole(schema: Mapping[str, Any]) -> list[Finding]:
    return [property_order(_SOURCE)]


def _each(node: Mapping[str, Any], found: NodeFindings) -> None:
    keys = set(node)
    chosen = next((key for key in _DISPATCH if key in node), None)
    if node and chosen is None:
        found.add(
            "",
            "refuses",
            "error",
            "a schema with no type (nor properties, anyOf, enum, ...) is refused; add a type",
        )
        return
    if chosen is not None and chosen != "type":
        later = _DISPATCH[_DISPATCH.index(chosen) + 1 : -1]
        for keyword in sorted(keys & set(later)):
            found.add(
                keyword,
                "ignores",
                "warning",
                f"{keyword} beside {chosen} is ignored; move it into one schema",
            )
    found.keywords_in(
        node,
        _IGNORED,
        "ignores",
        "warning",
        "{keyword} is not enforced: the grammar accepts values it forbids",
    )
    if chosen == "oneOf":
        found.one_of_as_any_of(
            node, "oneOf becomes an alternation: a value matching two alternatives is accepted"
        )
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) > 1 and chosen == "allOf":
        found.add(
            "allOf",
            "concatenates",
            "error",
            "allOf joins its branches' patterns one after another: no JSON value fits; merge them",
        )
    if chosen == "$ref" and not found.remote_ref(node, "external references are not supported: {ref}"):
        ref = node["$ref"]
        if isinstance(ref, str) and found.pointer.startswith(ref[1:] + "/"):
            found.add(
                "$ref",
                "truncates recursion",
                "warning",
                "a recursive $ref is followed 3 levels deep; deeper values are refused",
            )
    found.unknown_type(node)
    if chosen == "properties":
        extra = node.get("additionalProperties")
        if isinstance(extra, (Mapping, bool)) and extra is not False:
            found.add(
                "additionalProperties",
                "ignores",
                "warning",
                "additionalProperties beside properties is ignored: extra keys are refused",
            )
        else:
            found.unset_additional_properties(
                node, "forbids extra keys", "keys beyond properties are refused though the schema allows them"
            )
        found.required_not_in_properties(node)
    if "string" in types_of(node) and chosen == "type":
        sized = "minLength" in node or "maxLength" in node
        pattern = node.get("pattern")
        if isinstance(pattern, str) and sized:
            found.add("pattern", "ignores", "warning", "pattern beside minLength/maxLength is ignored")
        elif isinstance(pattern, str) and not anchored(pattern):
            found.add("pattern", "anchors", "warning", "an unanchored pattern must match the whole string")
        if not sized and pattern is None:
            found.unknown_format(
                node, _FORMATS, "refuses", "error", "format {format} is not supported: the schema is refused"
            )
        elif "format" in node:
            # parse_string_type() reads minLength/maxLength, then pattern, then format: the first wins.
            beside = "pattern" if not sized else "minLength/maxLength"
            found.add("format", "ignores", "warning", f"format beside {beside} is ignored: any string fits")
        if sized and pattern is None:
            _string_bound(node, found)


def _string_bound(node: Mapping[str, Any], found: NodeFindings) -> None:
    # A bounded JSON string is ([^"\\...]|\\...){m,n}; outlines-core's index of it grows about
    # 3.5x in memory with every two characters of the bound (OUTLINES_MAX_STRING_BOUND).
    for keyword in ("maxLength", "minLength"):
        bound = node.get(keyword)
        if isinstance(bound, int) and not isinstance(bound, bool) and bound > OUTLINES_MAX_STRING_BOUND:
            found.add(
                keyword,
                "exhausts memory",
                "error",
                f"{keyword} {bound}: outlines-core's index of a string bounded past "
                f"{OUTLINES_MAX_STRING_BOUND} characters grows exponentially (20 does not build in 1 GiB "
                f"and 60 s); drop the bound or keep it at most {OUTLINES_MAX_STRING_BOUND}",
            )
            return


#: outlines-core's rules.
OUTLINES = CompilerRules(source=_SOURCE, whole=_whole, each=_each)
