"""xgrammar's JSON-schema converter, from its documentation (it pulls in torch, so it is not run here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .findings import Finding
from .rules import CompilerRules, NodeFindings, is_object, property_order, whole_note

__all__ = ["XGRAMMAR"]

_DOC = "mlc-ai/xgrammar docs/xgrammar_features/json_schema.md"
_API = "mlc-ai/xgrammar python/xgrammar/grammar.py"
# Keywords its documentation lists nowhere (docs/xgrammar_features/json_schema.md).
_UNLISTED = frozenset(
    {"not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains", "dependencies"}
    | {"dependentRequired", "dependentSchemas", "multipleOf"}
)
_FORMATS = frozenset(
    {"date", "time", "date-time", "duration", "email", "ipv4", "ipv6", "hostname", "uuid", "uri"}
    | {"uri-reference", "uri-template", "json-pointer", "relative-json-pointer"}
)


def _whole(schema: Mapping[str, Any]) -> list[Finding]:
    return [
        property_order("mlc-ai/xgrammar cpp/json_schema_converter.cc"),
        whole_note(
            "",
            "allows any whitespace",
            "Grammar.from_json_schema allows any whitespace by default (any_whitespace=True)",
            _API,
        ),
    ]


def _each(node: Mapping[str, Any], found: NodeFindings) -> None:
    found.keywords_in(
        node, _UNLISTED, "unsupported", "warning", "{keyword} is not among the keywords xgrammar supports"
    )
    found.one_of_as_any_of(node, "oneOf is regarded as anyOf: a value matching two alternatives is accepted")
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) > 1:
        found.add("allOf", "refuses", "error", "allOf supports only one schema; merge the branches")
    found.unknown_format(
        node, _FORMATS, "unsupported", "warning", "format {format} is not among the formats xgrammar supports"
    )
    found.lookaround(node, "ignores", "warning", "look-around assertions in a pattern are ignored")
    found.remote_ref(node, "only internal $refs are supported, not {ref}")
    found.unknown_type(node)
    for keyword in ("patternProperties", "propertyNames"):
        if keyword in node and ("properties" in node or "required" in node):
            found.add(keyword, "ignores", "warning", f"{keyword} is ignored beside properties or required")
    if is_object(node):
        found.unset_additional_properties(
            node,
            "forbids extra keys",
            "strict_mode (the default) refuses keys beyond properties though the schema allows them",
            _API,
        )


#: xgrammar's rules.
XGRAMMAR = CompilerRules(source=_DOC, whole=_whole, each=_each)
