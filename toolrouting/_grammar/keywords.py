"""What our grammar compiler does with each JSON Schema keyword: the types, and what it ignores or refuses."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["ANY", "ASSERTIONS", "IGNORED", "IMPLIES", "REFUSED", "TYPES", "json_kinds", "same_value"]

TYPES = ("null", "boolean", "object", "array", "string", "number", "integer")
ANY = frozenset(TYPES)
# Keywords that imply a type when a schema names none (what every grammar compiler does).
IMPLIES = {
    "object": {"properties", "required", "additionalProperties", "minProperties", "maxProperties"},
    "array": {"items", "minItems", "maxItems", "uniqueItems", "contains"},
    "string": {"minLength", "maxLength", "pattern", "format"},
    "number": {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf"},
}
# Keywords we do not enforce: the grammar accepts values they would refuse.
IGNORED = {
    "format": "any string in the length bounds is accepted",
    "pattern": "any string in the length bounds is accepted",
    "multipleOf": "any number is accepted",
    "uniqueItems": "repeated items are accepted",
    "contains": "arrays are checked item by item only",
    "minContains": "arrays are checked item by item only",
    "maxContains": "arrays are checked item by item only",
    "not": "values it excludes are accepted",
    "if": "the conditional schemas are not applied",
    "then": "the conditional schemas are not applied",
    "else": "the conditional schemas are not applied",
    "dependentRequired": "keys are independent of each other",
    "dependentSchemas": "keys are independent of each other",
    "dependencies": "keys are independent of each other",
    "propertyNames": "any key is accepted",
    "unevaluatedItems": "it is not applied",
    "unevaluatedProperties": "it is not applied",
    "additionalItems": "it is not applied",
}
REFUSED = {
    "prefixItems": "a tuple of positional items is not compiled",
    "$dynamicRef": "dynamic references are not resolved",
    "$recursiveRef": "dynamic references are not resolved",
}
ASSERTIONS = (
    {"type", "enum", "const", "$ref", "allOf", "anyOf", "oneOf", "properties", "required"}
    | {"additionalProperties", "patternProperties", "items", "minItems", "maxItems", "minLength"}
    | {"maxLength", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minProperties"}
    | {"maxProperties"}
    | set(IGNORED)
    | set(REFUSED)
)


def same_value(left: Any, right: Any) -> bool:
    """Whether two JSON values are equal as JSON (key order aside)."""
    return json.dumps(left, sort_keys=True) == json.dumps(right, sort_keys=True)


def json_kinds(value: Any) -> set[str]:
    """The JSON Schema types a JSON value has (1.0 is an integer too)."""
    if value is None:
        return {"null"}
    if isinstance(value, bool):
        return {"boolean"}
    if isinstance(value, int) or (isinstance(value, float) and value.is_integer()):
        return {"integer", "number"}
    if isinstance(value, float):
        return {"number"}
    if isinstance(value, str):
        return {"string"}
    return {"array"} if isinstance(value, list) else {"object"}
