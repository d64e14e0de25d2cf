"""A preflight: what a grammar compiler will do with a JSON schema, before a server compiles it.

Servers turn the route schema into a grammar with one of a few compilers, and each
departs from JSON Schema in its own way: it ignores a keyword, refuses one, treats
``oneOf`` as ``anyOf``, fixes the order of properties, or decides on its own whether an
object may carry keys ``properties`` does not list. :func:`preflight` names each such
place by its JSON pointer. Every rule cites the compiler's documentation or source; the
rules for llama.cpp, llguidance and outlines are tested on the compilers themselves
(tests/test_preflight.py), those for xgrammar are from its documentation.

Severity: ``error`` the compiler refuses the schema (no grammar: the request fails, or a
server such as KoboldCpp generates unconstrained); ``warning`` the grammar accepts values
the schema forbids or refuses values it allows; ``info`` a difference of form (key order,
whitespace) or a default that narrows what the model may write.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Literal

from .._json import plain, pointer_token

__all__ = ["TARGETS", "Finding", "Severity", "Target", "format_findings", "preflight"]

Target = Literal["llama.cpp", "llguidance", "xgrammar", "outlines"]
Severity = Literal["error", "warning", "info"]

#: The compilers :func:`preflight` knows, by the name its ``target`` takes.
TARGETS: tuple[Target, ...] = ("llama.cpp", "llguidance", "xgrammar", "outlines")


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """One place where a compiler departs from the schema."""

    pointer: str
    """JSON pointer (RFC 6901) of the schema object the finding is about; ``""`` is the root."""
    keyword: str
    """The keyword at fault (``oneOf``, ``format``, ...), or ``""`` for the schema as a whole."""
    effect: str
    """What the compiler does, in a few words: ``ignores``, ``refuses``, ``treats as anyOf``, ..."""
    severity: Severity
    message: str
    """A sentence: what happens to generated values, and what to change."""
    source: str
    """Where the rule comes from: a file in the compiler's repository."""


def preflight(schema: Mapping[str, Any], target: str) -> list[Finding]:
    """What ``target`` (one of :data:`TARGETS`) will do with ``schema``, in document order.

    ``schema`` is any JSON schema; for a catalogue, pass ``route_schema(tools)`` so that
    the pointers are the ones the server sees.
    """
    rules = _RULES.get(target)
    if rules is None:
        raise ValueError(f"unknown preflight target {target!r:.40}; the targets are {', '.join(TARGETS)}")
    if not isinstance(schema, Mapping):
        raise TypeError(f"a schema is a mapping, not {type(schema).__name__}")
    # A plain JSON copy: string keys, lists and dicts only, as the rules below expect.
    try:
        schema = json.loads(json.dumps(plain(schema), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueError(f"the schema is not JSON ({str(error)[:120]})") from None
    findings: list[Finding] = []
    whole, each = rules
    findings.extend(whole(schema))
    for pointer, node in _subschemas(schema, ""):
        findings.extend(each(node, pointer))
    return findings


def format_findings(findings: list[Finding]) -> str:
    """One line per finding, ``severity pointer keyword: message [source]``; a line saying none."""
    if not findings:
        return "no findings: the compiler follows this schema as written"
    return "\n".join(
        f"{f.severity} {f.pointer or '/'} {f.keyword or '(schema)'}: {f.message} [{f.source}]"
        for f in findings
    )


# --- walking a schema -------------------------------------------------------------------

_ONE_SCHEMA = (
    "additionalProperties",
    "items",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "additionalItems",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")
_SCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems", "items")
_ANNOTATIONS = frozenset(
    {"title", "description", "default", "examples", "$comment", "$schema", "$id", "deprecated", "readOnly"}
    | {"writeOnly", "$defs", "definitions", "$anchor", "contentMediaType", "contentEncoding"}
)
_JSON_TYPES = frozenset({"string", "number", "integer", "boolean", "array", "object", "null"})


def _subschemas(node: Any, pointer: str) -> Iterator[tuple[str, Any]]:
    """Every schema in ``node`` (itself first), with its pointer; boolean ones in maps and lists too."""
    yield pointer, node
    if not isinstance(node, Mapping):
        return
    for key, value in node.items():
        if key in _ONE_SCHEMA and isinstance(
            value, Mapping
        ):  # "additionalProperties": false is no schema here
            yield from _subschemas(value, f"{pointer}/{pointer_token(key)}")
        elif key in _SCHEMA_MAPS and isinstance(value, Mapping):
            for name, item in value.items():
                yield from _subschemas(item, f"{pointer}/{pointer_token(key)}/{pointer_token(str(name))}")
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            for index, item in enumerate(value):
                yield from _subschemas(item, f"{pointer}/{pointer_token(key)}/{index}")


def _types(node: Mapping[str, Any]) -> set[str]:
    kind = node.get("type")
    if isinstance(kind, str):
        return {kind}
    return {k for k in kind if isinstance(k, str)} if isinstance(kind, list) else set()


def _is_object(node: Mapping[str, Any]) -> bool:
    return isinstance(node.get("properties"), dict) and (not _types(node) or "object" in _types(node))


def _required(node: Mapping[str, Any]) -> list[str]:
    """The names ``required`` lists; anything else there is not a name."""
    required = node.get("required")
    return [name for name in required if isinstance(name, str)] if isinstance(required, list) else []


def _required_out_of_order(node: Mapping[str, Any]) -> bool:
    """Whether an optional property comes before a required one in ``properties``."""
    required = set(_required(node))
    seen_optional = False
    for name in node["properties"]:
        if name not in required:
            seen_optional = True
        elif seen_optional:
            return True
    return False


def _anchored(pattern: str) -> bool:
    return pattern.startswith("^") and pattern.endswith("$")


_LOOKAROUND = re.compile(r"\(\?<?[=!]")


# --- the rules ----------------------------------------------------------------------------
# Each target has a whole-schema rule (behaviour that holds everywhere, reported once at the
# root) and a per-node rule. A finding's ``source`` is the file the rule is read from.

_Rule = Callable[[Any, str], list[Finding]]
_Whole = Callable[[Mapping[str, Any]], list[Finding]]

# The three documents llama.cpp's converter is described by: the grammar README lists its
# limits; json-schema-to-grammar.cpp (llama-server) and llama-cpp-python's Python port of
# it (llama_cpp/llama_grammar.py, the converter of LlamaGrammar.from_json_schema and of
# llama-cpp-python's server) do the work.
_LLAMA_README = "ggml-org/llama.cpp grammars/README.md"
_LLAMA_CPP = "ggml-org/llama.cpp common/json-schema-to-grammar.cpp"
_LLAMA_PY = "abetlen/llama-cpp-python llama_cpp/llama_grammar.py"

# grammars/README.md, "known limitations" and "unlikely to be implemented": skipped silently.
_LLAMA_SKIPPED = frozenset(
    {"not", "if", "then", "else", "dependentSchemas", "dependentRequired", "dependencies", "uniqueItems"}
    | {"contains", "minContains", "maxContains", "patternProperties", "propertyNames", "minProperties"}
    | {"maxProperties", "multipleOf", "unevaluatedProperties", "unevaluatedItems", "additionalItems"}
)
# The formats with a grammar rule (STRING_FORMAT_RULES, and uuid); others are plain strings.
_LLAMA_FORMATS = frozenset({"date", "time", "date-time", "uuid", "uuid1", "uuid2", "uuid3", "uuid4", "uuid5"})
# The keywords the Python port's visit() dispatches on; a schema with none of them (and not
# empty) fails its final assertion, "Unrecognized schema".
_LLAMA_DISPATCH = frozenset(
    {"$ref", "oneOf", "anyOf", "const", "enum", "properties", "additionalProperties", "allOf", "items"}
    | {"prefixItems", "pattern", "format", "type"}
)
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _llama_whole(schema: Mapping[str, Any]) -> list[Finding]:
    # _build_object_rule(): one fixed sequence of keys per object. Its whitespace is bounded
    # (README: `space ::= | " " | "\n" [ \t]{0,20}`), so there is no whitespace finding.
    return [
        Finding(
            "",
            "properties",
            "fixes property order",
            "info",
            "every object's keys are written in one order: the required ones, then the others, "
            "each in the order of properties",
            _LLAMA_CPP,
        )
    ]


def _llama(node: Any, pointer: str) -> list[Finding]:
    out: list[Finding] = []

    def add(keyword: str, effect: str, severity: Severity, message: str, source: str) -> None:
        out.append(Finding(pointer, keyword, effect, severity, message, source))

    if isinstance(node, bool):
        # llama_grammar.py visit() calls schema.get(): a boolean schema raises AttributeError.
        add(
            "",
            "refuses",
            "error",
            'llama-cpp-python\'s converter fails on a boolean schema; write {} or {"not": {}}',
            _LLAMA_PY,
        )
        return out
    if not isinstance(node, Mapping):
        return out
    if not node:
        # llama_grammar.py visit(): `len(schema) == 0` takes the "object" primitive.
        add(
            "",
            "narrows",
            "warning",
            "llama-cpp-python reads {} as any object, not any value; give a type",
            _LLAMA_PY,
        )
    keys = set(node)
    for keyword in sorted(keys & _LLAMA_SKIPPED):
        # README: "Unsupported features are skipped silently."
        add(
            keyword,
            "ignores",
            "warning",
            f"{keyword} is skipped silently: the grammar accepts values it forbids",
            _LLAMA_README,
        )
    if "oneOf" in node:
        # visit(): `schema.contains("oneOf") || schema.contains("anyOf")` builds one union rule.
        add(
            "oneOf",
            "treats as anyOf",
            "warning",
            "oneOf becomes anyOf: a value matching two alternatives is accepted",
            _LLAMA_CPP,
        )
    union = next((key for key in ("$ref", "oneOf", "anyOf") if key in node), None)
    if union is not None:
        # visit() returns on $ref, then on anyOf/oneOf, before it reads any other keyword
        # (README: "Can't mix properties w/ anyOf / oneOf in the same type", issue #7703).
        for keyword in sorted(keys - _ANNOTATIONS - {union, "type"} - _LLAMA_SKIPPED):
            add(
                keyword,
                "ignores",
                "warning",
                f"{keyword} beside {union} is ignored; move it into each alternative",
                _LLAMA_CPP,
            )
    ref = node.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        # README: "Remote $refs not supported in the C++ version"; the Python port refuses to fetch.
        add(
            "$ref",
            "refuses",
            "error",
            f"the remote $ref {ref[:60]!r} is not fetched; inline it under $defs",
            _LLAMA_README,
        )
    elif isinstance(ref, str) and ("~0" in ref or "~1" in ref):
        # llama_grammar.py resolve_refs() looks up each pointer segment without unescaping it.
        add(
            "$ref",
            "refuses",
            "error",
            "llama-cpp-python cannot resolve a $ref with ~0 or ~1; rename the definition",
            _LLAMA_PY,
        )
    if node and not keys & _LLAMA_DISPATCH:
        # llama_grammar.py visit(): `assert schema_type in PRIMITIVE_RULES, "Unrecognized schema"`;
        # json-schema-to-grammar.cpp reads the same schema as any value.
        add(
            "",
            "refuses",
            "error",
            "llama-cpp-python refuses a schema with no type (llama-server reads it as any value); add a type",
            _LLAMA_PY,
        )
    if isinstance(node.get("type"), str) and node["type"] not in _JSON_TYPES:
        add("type", "refuses", "error", f"{node['type'][:40]!r} is not a JSON type", _LLAMA_PY)
    if _is_object(node) and union is None:
        if "additionalProperties" not in node:
            # README: "additionalProperties defaults to false".
            add(
                "additionalProperties",
                "forbids extra keys",
                "info",
                "extra keys are refused though the schema allows them; set additionalProperties to say so",
                _LLAMA_README,
            )
        if _required_out_of_order(node):
            # _build_object_rule(): required properties first, then optional ones, each in properties order.
            add(
                "properties",
                "reorders",
                "info",
                "required properties are written first, then the optional ones",
                _LLAMA_CPP,
            )
        missing = [name for name in _required(node) if name not in node["properties"]]
        if missing:
            # _build_object_rule() builds key rules from properties only.
            add(
                "required",
                "ignores",
                "warning",
                f"required {missing[0]!r:.40} is not in properties: it is never written",
                _LLAMA_CPP,
            )
    if "allOf" in node and union is None:
        # llama_grammar.py visit(): allOf is read as an object merging its branches' properties.
        add(
            "allOf",
            "approximates",
            "warning",
            "allOf is merged as an object of its branches' properties; other keywords are lost",
            _LLAMA_PY,
        )
    pattern = node.get("pattern")
    if isinstance(pattern, str) and not _anchored(pattern):
        # _visit_pattern(): "not anchored with '^' and '$'" — the C++ converter accepts any
        # string; the Python port asserts.
        add(
            "pattern",
            "refuses",
            "error",
            "llama-cpp-python refuses an unanchored pattern (llama-server ignores it); wrap it in ^...$",
            _LLAMA_PY,
        )
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt not in _LLAMA_FORMATS and "pattern" not in node:
        add(
            "format",
            "ignores",
            "warning",
            f"format {fmt[:40]!r} has no grammar rule: any string is accepted",
            _LLAMA_README,
        )
    if "number" in _types(node) or "integer" in _types(node):
        for keyword in _BOUNDS:
            if keyword in node:
                # README: bounds "only supported for integer"; llama_grammar.py: "TODO: support minimum...".
                add(
                    keyword,
                    "ignores",
                    "warning",
                    f"{keyword} is not enforced by llama-cpp-python (llama-server enforces it on integers)"
                    if _types(node) == {"integer"}
                    else f"{keyword} is not enforced on numbers",
                    _LLAMA_README,
                )
    if "prefixItems" in node:
        add(
            "prefixItems",
            "approximates",
            "warning",
            "prefixItems is broken in llama.cpp's converter; use items",
            _LLAMA_README,
        )
    return out


_LLG_DOC = "guidance-ai/llguidance docs/json_schema.md"
_LLG_API = "guidance-ai/llguidance python/llguidance/_lib.pyi"
# Refused with "Unimplemented keys: [...]" (checked on llguidance 1.9).
_LLG_UNIMPLEMENTED = frozenset(
    {"not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains", "dependencies"}
    | {"dependentRequired", "dependentSchemas", "propertyNames", "unevaluatedProperties", "unevaluatedItems"}
    | {"$dynamicRef"}
)
# docs/json_schema.md, String features: `format`, with the formats it names; others are refused.
_LLG_FORMATS = frozenset(
    {"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid", "uri"}
)


def _llg_whole(schema: Mapping[str, Any]) -> list[Finding]:
    out = [
        Finding(
            "",
            "properties",
            "fixes property order",
            "info",
            "every object's keys are written in the order of its properties",
            _LLG_DOC,
        ),
    ]
    out.append(
        # JsonCompileOptions json_allow_general_unicode_escapes (default false): \uXXXX only
        # for characters that have no other spelling (controls); checked on llguidance 1.9.
        Finding(
            "",
            "",
            "refuses \\u escapes",
            "info",
            "strings carry printable characters as UTF-8: a \\uXXXX escape of one is refused",
            _LLG_API,
        )
    )
    if "x-guidance" not in schema:
        out.append(
            Finding(
                "",
                "x-guidance",
                "allows any whitespace",
                "info",
                "any whitespace is allowed between tokens; set x-guidance whitespace_flexible false "
                "or a bounded whitespace_pattern",
                _LLG_DOC,
            )
        )
    return out


def _llguidance(node: Any, pointer: str) -> list[Finding]:
    out: list[Finding] = []
    if not isinstance(node, Mapping):
        return out

    def add(keyword: str, effect: str, severity: Severity, message: str) -> None:
        out.append(Finding(pointer, keyword, effect, severity, message, _LLG_DOC))

    keys = set(node)
    unimplemented = sorted(keys & _LLG_UNIMPLEMENTED)
    for keyword in unimplemented:
        add(keyword, "refuses", "error", f"{keyword} is not implemented: the schema is refused")
    if "oneOf" in node:
        add(
            "oneOf",
            "refuses unless disjoint",
            "warning",
            "oneOf compiles only when its alternatives are provably disjoint; use anyOf "
            "(or x-guidance coerce_one_of)",
        )
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt not in _LLG_FORMATS:
        add("format", "refuses", "error", f"format {fmt[:40]!r} is unknown: the schema is refused")
    pattern = node.get("pattern")
    if isinstance(pattern, str) and _LOOKAROUND.search(pattern):
        add("pattern", "refuses", "error", "look-around in a pattern is not supported: the schema is refused")
    ref = node.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        add("$ref", "refuses", "error", f"the remote $ref {ref[:60]!r} is not fetched; inline it under $defs")
    if isinstance(node.get("type"), str) and node["type"] not in _JSON_TYPES:
        add("type", "refuses", "error", f"{node['type'][:40]!r} is not a JSON type")
    if ("minProperties" in node or "maxProperties" in node) and set(
        node["properties"] if isinstance(node.get("properties"), dict) else ()
    ) - set(_required(node)):
        add(
            "minProperties" if "minProperties" in node else "maxProperties",
            "refuses",
            "error",
            "min/maxProperties are supported only when every property is required",
        )
    patterns = node.get("patternProperties")
    if isinstance(patterns, Mapping) and len(patterns) > 1:
        add(
            "patternProperties",
            "refuses unless disjoint",
            "warning",
            "patternProperties compile only when their patterns are disjoint",
        )
    if _is_object(node) and "additionalProperties" not in node:
        add(
            "additionalProperties",
            "allows extra keys",
            "info",
            "keys beyond properties are allowed, as the schema says; additionalProperties false stops it",
        )
    return out


_XG_DOC = "mlc-ai/xgrammar docs/xgrammar_features/json_schema.md"
_XG_API = "mlc-ai/xgrammar python/xgrammar/grammar.py"
# Keywords its documentation lists nowhere (docs/xgrammar_features/json_schema.md).
_XG_UNLISTED = frozenset(
    {"not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains", "dependencies"}
    | {"dependentRequired", "dependentSchemas", "multipleOf"}
)
_XG_FORMATS = frozenset(
    {"date", "time", "date-time", "duration", "email", "ipv4", "ipv6", "hostname", "uuid", "uri"}
    | {"uri-reference", "uri-template", "json-pointer", "relative-json-pointer"}
)


def _xg_whole(schema: Mapping[str, Any]) -> list[Finding]:
    return [
        Finding(
            "",
            "properties",
            "fixes property order",
            "info",
            "every object's keys are written in the order of its properties",
            "mlc-ai/xgrammar cpp/json_schema_converter.cc",
        ),
        Finding(
            "",
            "",
            "allows any whitespace",
            "info",
            "Grammar.from_json_schema allows any whitespace by default (any_whitespace=True)",
            _XG_API,
        ),
    ]


def _xgrammar(node: Any, pointer: str) -> list[Finding]:
    out: list[Finding] = []
    if not isinstance(node, Mapping):
        return out

    def add(keyword: str, effect: str, severity: Severity, message: str, source: str = _XG_DOC) -> None:
        out.append(Finding(pointer, keyword, effect, severity, message, source))

    keys = set(node)
    for keyword in sorted(keys & _XG_UNLISTED):
        add(keyword, "unsupported", "warning", f"{keyword} is not among the keywords xgrammar supports")
    if "oneOf" in node:
        add(
            "oneOf",
            "treats as anyOf",
            "warning",
            "oneOf is regarded as anyOf: a value matching two alternatives is accepted",
        )
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) > 1:
        add("allOf", "refuses", "error", "allOf supports only one schema; merge the branches")
    fmt = node.get("format")
    if isinstance(fmt, str) and fmt not in _XG_FORMATS:
        add(
            "format",
            "unsupported",
            "warning",
            f"format {fmt[:40]!r} is not among the formats xgrammar supports",
        )
    pattern = node.get("pattern")
    if isinstance(pattern, str) and _LOOKAROUND.search(pattern):
        add("pattern", "ignores", "warning", "look-around assertions in a pattern are ignored")
    ref = node.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#"):
        add("$ref", "refuses", "error", f"only internal $refs are supported, not {ref[:60]!r}")
    if isinstance(node.get("type"), str) and node["type"] not in _JSON_TYPES:
        add("type", "refuses", "error", f"{node['type'][:40]!r} is not a JSON type")
    for keyword in ("patternProperties", "propertyNames"):
        if keyword in node and ("properties" in node or "required" in node):
            add(keyword, "ignores", "warning", f"{keyword} is ignored beside properties or required")
    if _is_object(node) and "additionalProperties" not in node:
        add(
            "additionalProperties",
            "forbids extra keys",
            "info",
            "strict_mode (the default) refuses keys beyond properties though the schema allows them",
            _XG_API,
        )
    return out


_OUTLINES = "dottxt-ai/outlines-core src/json_schema/parsing.rs"
# Parser::to_regex() tries these in this order and uses the first present; the rest are ignored.
_OUTLINES_DISPATCH = ("properties", "allOf", "anyOf", "oneOf", "prefixItems", "enum", "const", "$ref", "type")
# types.rs FormatType: the formats with a regex; parse_string_type() refuses the others.
_OUTLINES_FORMATS = frozenset({"date-time", "date", "time", "uuid", "uri", "email"})
_OUTLINES_IGNORED = frozenset(
    {"not", "if", "then", "else", "uniqueItems", "contains", "minContains", "maxContains", "dependencies"}
    | {"dependentRequired", "dependentSchemas", "propertyNames", "patternProperties", "multipleOf"}
    | {"unevaluatedProperties", "unevaluatedItems", *_BOUNDS}
)


def _outlines_whole(schema: Mapping[str, Any]) -> list[Finding]:
    return [
        Finding(
            "",
            "properties",
            "fixes property order",
            "info",
            "every object's keys are written in the order of its properties",
            _OUTLINES,
        ),
    ]


def _outlines(node: Any, pointer: str) -> list[Finding]:
    out: list[Finding] = []
    if not isinstance(node, Mapping):
        return out

    def add(keyword: str, effect: str, severity: Severity, message: str) -> None:
        out.append(Finding(pointer, keyword, effect, severity, message, _OUTLINES))

    keys = set(node)
    chosen = next((key for key in _OUTLINES_DISPATCH if key in node), None)
    if node and chosen is None:
        add(
            "",
            "refuses",
            "error",
            "a schema with no type (nor properties, anyOf, enum, ...) is refused; add a type",
        )
        return out
    if chosen is not None and chosen != "type":
        later = _OUTLINES_DISPATCH[_OUTLINES_DISPATCH.index(chosen) + 1 : -1]
        for keyword in sorted(keys & set(later)):
            add(
                keyword,
                "ignores",
                "warning",
                f"{keyword} beside {chosen} is ignored; move it into one schema",
            )
    for keyword in sorted(keys & _OUTLINES_IGNORED):
        add(
            keyword, "ignores", "warning", f"{keyword} is not enforced: the grammar accepts values it forbids"
        )
    if "oneOf" in node and chosen == "oneOf":
        add(
            "oneOf",
            "treats as anyOf",
            "warning",
            "oneOf becomes an alternation: a value matching two alternatives is accepted",
        )
    if isinstance(node.get("allOf"), list) and len(node["allOf"]) > 1 and chosen == "allOf":
        add(
            "allOf",
            "concatenates",
            "error",
            "allOf joins its branches' patterns one after another: no JSON value fits; merge them",
        )
    ref = node.get("$ref")
    if isinstance(ref, str) and not ref.startswith("#") and chosen == "$ref":
        add("$ref", "refuses", "error", f"external references are not supported: {ref[:60]!r}")
    elif isinstance(ref, str) and chosen == "$ref" and pointer.startswith(ref[1:] + "/"):
        add(
            "$ref",
            "truncates recursion",
            "warning",
            "a recursive $ref is followed 3 levels deep; deeper values are refused",
        )
    if isinstance(node.get("type"), str) and node["type"] not in _JSON_TYPES:
        add("type", "refuses", "error", f"{node['type'][:40]!r} is not a JSON type")
    if chosen == "properties":
        if (
            isinstance(node.get("additionalProperties"), (Mapping, bool))
            and node["additionalProperties"] is not False
        ):
            add(
                "additionalProperties",
                "ignores",
                "warning",
                "additionalProperties beside properties is ignored: extra keys are refused",
            )
        elif "additionalProperties" not in node:
            add(
                "additionalProperties",
                "forbids extra keys",
                "info",
                "keys beyond properties are refused though the schema allows them",
            )
        missing = [name for name in _required(node) if name not in node["properties"]]
        if missing:
            add(
                "required",
                "ignores",
                "warning",
                f"required {missing[0]!r:.40} is not in properties: it is never written",
            )
    if "string" in _types(node) and chosen == "type":
        sized = "minLength" in node or "maxLength" in node
        pattern = node.get("pattern")
        if isinstance(pattern, str) and sized:
            add("pattern", "ignores", "warning", "pattern beside minLength/maxLength is ignored")
        elif isinstance(pattern, str) and not _anchored(pattern):
            add("pattern", "anchors", "warning", "an unanchored pattern must match the whole string")
        fmt = node.get("format")
        if isinstance(fmt, str) and not sized and pattern is None and fmt not in _OUTLINES_FORMATS:
            add("format", "refuses", "error", f"format {fmt[:40]!r} is not supported: the schema is refused")
    return out


_RULES: dict[str, tuple[_Whole, _Rule]] = {
    "llama.cpp": (_llama_whole, _llama),
    "llguidance": (_llg_whole, _llguidance),
    "xgrammar": (_xg_whole, _xgrammar),
    "outlines": (_outlines_whole, _outlines),
}
