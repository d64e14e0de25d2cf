"""What the preflight's compilers share: the walk over a schema's subschemas, and the rules
that hold for most of them (remote ``$ref``, a type that is not a JSON type, ``oneOf`` read
as ``anyOf``, a default for ``additionalProperties``, a fixed property order), each written
once and worded by the compiler that applies it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from .._json import pointer_token
from .._limits import SHOWN_REF_CHARS, SHOWN_VALUE_CHARS
from .._metaschema import JSON_TYPES, ONE_SCHEMA, SCHEMA_LISTS, SCHEMA_MAPS
from .findings import Finding, Severity

__all__ = [
    "ANNOTATIONS",
    "BOUNDS",
    "IN_PROPERTIES_ORDER",
    "CompilerRules",
    "NodeFindings",
    "anchored",
    "is_object",
    "property_order",
    "required_names",
    "required_out_of_order",
    "subschemas",
    "types_of",
    "whole_note",
]

# The places the metaschema check walks, less contentSchema (an annotation: no compiler builds
# a grammar from it), plus draft 2019's tuple form, which the compilers still read: items as a
# list of schemas, and additionalItems.
_ONE_SCHEMA = (ONE_SCHEMA - {"contentSchema"}) | {"additionalItems"}
_SCHEMA_LISTS = SCHEMA_LISTS | {"items"}

#: Keywords that describe a schema without constraining its values.
ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "$schema", "$id", "deprecated", "readOnly"}
    | {"writeOnly", "$defs", "definitions", "$anchor", "contentMediaType", "contentEncoding"}
)
#: The numeric bounds, in the order a finding lists them.
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")
# A look-ahead or look-behind in a regular expression.
_LOOKAROUND = re.compile(r"\(\?<?[=!]")
#: The whole-schema note of a compiler that writes each object's keys in ``properties`` order.
IN_PROPERTIES_ORDER = "every object's keys are written in the order of its properties"


def subschemas(node: Any, pointer: str = "") -> Iterator[tuple[str, Any]]:
    """Every schema in ``node`` (itself first), with its pointer; boolean ones in maps and lists too."""
    yield pointer, node
    if not isinstance(node, Mapping):
        return
    for key, value in node.items():
        if key in _ONE_SCHEMA and isinstance(
            value, Mapping
        ):  # "additionalProperties": false is no schema here
            yield from subschemas(value, f"{pointer}/{pointer_token(key)}")
        elif key in SCHEMA_MAPS and isinstance(value, Mapping):
            for name, item in value.items():
                yield from subschemas(item, f"{pointer}/{pointer_token(key)}/{pointer_token(str(name))}")
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for index, item in enumerate(value):
                yield from subschemas(item, f"{pointer}/{pointer_token(key)}/{index}")


def types_of(node: Mapping[str, Any]) -> set[str]:
    """The type names ``type`` gives, as a set; empty when it gives none."""
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    return {k for k in kind if isinstance(k, str)} if isinstance(kind, list) else set()


def is_object(node: Mapping[str, Any]) -> bool:
    """Whether ``node`` describes an object by its ``properties``."""
    return isinstance(node.get("properties"), dict) and (not types_of(node) or "object" in types_of(node))


def required_names(node: Mapping[str, Any]) -> list[str]:
    """The names ``required`` lists; anything else there is not a name."""
    required = node.get("required")
    return [name for name in required if isinstance(name, str)] if isinstance(required, list) else []


def required_out_of_order(node: Mapping[str, Any]) -> bool:
    """Whether an optional property comes before a required one in ``properties``."""
    required = set(required_names(node))
    seen_optional = False
    for name in node["properties"]:
        if name not in required:
            seen_optional = True
        elif seen_optional:
            return True
    return False


def anchored(pattern: str) -> bool:
    """Whether ``pattern`` is anchored at both ends."""
    return pattern.startswith("^") and pattern.endswith("$")


def whole_note(keyword: str, effect: str, message: str, source: str) -> Finding:
    """A note on the whole schema: behaviour that holds everywhere, reported once at the root."""
    return Finding(
        pointer="", keyword=keyword, effect=effect, severity="info", message=message, source=source
    )


def property_order(source: str, message: str = IN_PROPERTIES_ORDER) -> Finding:
    """The whole-schema note of a compiler that fixes the order of every object's keys."""
    return whole_note("properties", "fixes property order", message, source)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CompilerRules:
    """One compiler's rules: what holds for every schema, and what one schema object meets."""

    source: str
    """The file a finding cites unless its rule names another."""
    whole: Callable[[Mapping[str, Any]], list[Finding]]
    """Findings about the whole schema, reported once at the root."""
    each: Callable[[Mapping[str, Any], NodeFindings], None]
    """The rules for one schema object, adding to its findings."""
    boolean: Callable[[NodeFindings], None] | None = None
    """The rule for ``true`` or ``false`` where a schema goes, when the compiler has one."""


class NodeFindings:
    """The findings on one schema object, in the order its compiler's rules add them."""

    def __init__(self, pointer: str, source: str) -> None:
        self.pointer = pointer
        self.source = source  # the file a finding cites unless it names another
        self.findings: list[Finding] = []

    def add(self, keyword: str, effect: str, severity: Severity, message: str, source: str = "") -> None:
        """One finding on this object."""
        self.findings.append(
            Finding(
                pointer=self.pointer,
                keyword=keyword,
                effect=effect,
                severity=severity,
                message=message,
                source=source or self.source,
            )
        )

    def keywords_in(
        self, node: Mapping[str, Any], keywords: frozenset[str], effect: str, severity: Severity, message: str
    ) -> None:
        """A finding for each of ``keywords`` in ``node``, sorted; ``message`` names it as ``{keyword}``."""
        for keyword in sorted(node.keys() & keywords):
            self.add(keyword, effect, severity, message.format(keyword=keyword))

    def remote_ref(self, node: Mapping[str, Any], message: str, source: str = "") -> bool:
        """A ``$ref`` to another document, which no compiler fetches; ``message`` quotes it as ``{ref}``."""
        ref = node.get("$ref")
        if not isinstance(ref, str) or ref.startswith("#"):
            return False
        self.add("$ref", "refuses", "error", message.format(ref=repr(ref[:SHOWN_REF_CHARS])), source)
        return True

    def unknown_type(self, node: Mapping[str, Any], source: str = "") -> None:
        """A ``type`` that names no JSON type."""
        kind = node.get("type")
        if isinstance(kind, str) and kind not in JSON_TYPES:
            self.add("type", "refuses", "error", f"{kind[:SHOWN_VALUE_CHARS]!r} is not a JSON type", source)

    def one_of_as_any_of(self, node: Mapping[str, Any], message: str, source: str = "") -> None:
        """``oneOf`` compiled as ``anyOf``: a value matching two alternatives gets through."""
        if "oneOf" in node:
            self.add("oneOf", "treats as anyOf", "warning", message, source)

    def unset_additional_properties(
        self, node: Mapping[str, Any], effect: str, message: str, source: str = ""
    ) -> None:
        """The compiler's own default for an object that leaves ``additionalProperties`` unset."""
        if "additionalProperties" not in node:
            self.add("additionalProperties", effect, "info", message, source)

    def unknown_format(
        self, node: Mapping[str, Any], formats: frozenset[str], effect: str, severity: Severity, message: str
    ) -> None:
        """A ``format`` the compiler has no rule for; ``message`` quotes it as ``{format}``."""
        fmt = node.get("format")
        if isinstance(fmt, str) and fmt not in formats:
            self.add("format", effect, severity, message.format(format=repr(fmt[:SHOWN_VALUE_CHARS])))

    def lookaround(self, node: Mapping[str, Any], effect: str, severity: Severity, message: str) -> None:
        """A look-ahead or look-behind in ``pattern``, which a grammar cannot express."""
        pattern = node.get("pattern")
        if isinstance(pattern, str) and _LOOKAROUND.search(pattern):
            self.add("pattern", effect, severity, message)

    def required_not_in_properties(self, node: Mapping[str, Any], source: str = "") -> None:
        """A ``required`` name the compiler never writes, since it builds keys from ``properties``."""
        properties = node.get("properties")
        if not isinstance(properties, Mapping):
            return  # not a JSON Schema object of properties: nothing a compiler could build keys from
        missing = [name for name in required_names(node) if name not in properties]
        if missing:
            self.add(
                "required",
                "ignores",
                "warning",
                f"required {missing[0]!r:.{SHOWN_VALUE_CHARS}} is not in properties: it is never written",
                source,
            )
