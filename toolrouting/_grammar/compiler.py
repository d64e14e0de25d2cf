"""Our own route grammar: a JSON schema compiled to compact GBNF that llama.cpp's parser accepts.

The rules (docs/grammar.md has them with their reasons): an object's keys are written in
``properties`` order, each optional one present or not (``tool`` first, as the route schema
lists it); keys ``properties`` does not list are never written; no whitespace at all (or one
space after ``:`` and ``,``); numbers have bounded digits. What cannot be expressed exactly is
widened and noted (``format``, ``pattern``, ``minimum`` ...) or refused with a GrammarError.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any

from .._errors import GrammarError
from .._json import is_count, plain, pointer_token, shown
from .._limits import (
    BOUNDED_VALUE_DEPTH,
    GRAMMAR_CACHE_SIZE,
    GRAMMAR_MAX_DEPTH,
    MAX_REPLY_CHARS,
    SHOWN_VALUE_CHARS,
)
from .._route_schema import route_separators
from .compiled import GrammarNote, RouteGrammar
from .gbnf_tree import Alt, Expr, Grammar, Lit, Ref, Seq
from .keywords import ASSERTIONS, IGNORED, IMPLIES, REFUSED, TYPES, json_kinds, same_value
from .values import Values, is_whole

__all__ = ["GrammarNote", "RouteGrammar", "route_grammar"]


def route_grammar(
    schema: Mapping[str, Any] | bool, *, spaced: bool = False, bounded: bool = False
) -> RouteGrammar:
    """The GBNF grammar of the values ``schema`` allows, written compactly (see docs/grammar.md).

    ``spaced`` puts one space after each ``:`` and ``,``; ``bounded`` gives every string, array
    and free object the schema leaves unbounded the named default bounds
    (``BOUNDED_STRING_CHARS``, ``BOUNDED_ARRAY_ITEMS``, ``BOUNDED_VALUE_DEPTH``), so the longest
    reply is finite unless the schema recurses. Equal schemas give equal bytes, and the last
    ``GRAMMAR_CACHE_SIZE`` grammars are kept (keyed on the schema's compact JSON text, key
    order as given), so a loop's repeated rounds compile once. Raises :class:`GrammarError`
    (with the JSON pointer) for what it refuses.
    """
    try:
        try:  # plain dicts and lists, as a route schema is: no copy needed to key the cache
            text = json.dumps(schema, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
        except TypeError:  # a read-only mapping somewhere: copied into dicts first
            text = json.dumps(plain(schema), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except (TypeError, ValueError, RecursionError) as error:
        raise GrammarError(f"the schema is not JSON ({str(error)[:SHOWN_VALUE_CHARS]})") from None
    return _compiled(text, spaced, bounded)


@functools.lru_cache(maxsize=GRAMMAR_CACHE_SIZE)
def _compiled(schema_text: str, spaced: bool, bounded: bool) -> RouteGrammar:
    compiler = _Compiler(json.loads(schema_text), spaced=spaced, bounded=bounded)
    try:
        top = compiler.value(compiler.root, "", "route", 0)
    except RecursionError:
        raise GrammarError("the schema nests too deeply to compile") from None
    if top is None:
        raise GrammarError("no JSON value satisfies the schema", "")
    compiler.grammar.define("root", Ref(top))
    longest = compiler.grammar.max_bytes()
    if bounded and longest is not None and longest > MAX_REPLY_CHARS:
        # Bounds that multiply (arrays of arrays of long strings) bound nothing a cap can use.
        characters = compiler.grammar.max_bytes(characters=True)
        if characters is not None and characters > MAX_REPLY_CHARS:
            compiler.note(
                "",
                "",
                "exceeds the reply limit",
                f"the longest reply has {characters:,} characters, past parse_route's limit of "
                f"{MAX_REPLY_CHARS:,}: the completion cap, not the grammar, ends a reply that long",
            )
    return RouteGrammar(compiler.grammar.text(), tuple(compiler.notes.values()), longest)


class _Compiler:
    def __init__(self, root: Any, *, spaced: bool, bounded: bool) -> None:
        self.root = root
        self.bounded = bounded
        self.grammar = Grammar()
        self.notes: dict[tuple[str, str], GrammarNote] = {}
        self.comma, self.colon = route_separators(spaced)
        self.values = Values(self.grammar, colon=self.colon, comma=self.comma, bounded=bounded)
        self._refs: dict[tuple[str, frozenset[str] | None], str] = {}
        # $refs being expanded since the last bracket: meeting one again is left recursion.
        self._head: set[str] = set()

    def note(self, at: str, keyword: str, effect: str, message: str) -> None:
        self.notes.setdefault((at, keyword), GrammarNote(at, keyword, effect, message))

    def fail(self, at: str, keyword: str, message: str) -> GrammarError:
        where = f"{at or '/'} {keyword}".rstrip()
        return GrammarError(f"{where}: {message}", at)

    def value(
        self, schema: Any, at: str, hint: str, depth: int, types: frozenset[str] | None = None
    ) -> str | None:
        """The rule for ``schema``'s values, or ``None`` when no value satisfies it."""
        if depth > GRAMMAR_MAX_DEPTH:
            raise self.fail(at, "", f"the schema nests deeper than {GRAMMAR_MAX_DEPTH} levels")
        if schema is True or schema == {}:
            return self.anything(at) if types is None else self._each({}, at, hint, depth, types)
        if schema is False:
            return None
        if not isinstance(schema, dict):
            raise self.fail(
                at, "", f"a schema is an object or a boolean, not {shown(schema, SHOWN_VALUE_CHARS)}"
            )
        for keyword, why in REFUSED.items():
            if keyword in schema:
                raise self.fail(at, keyword, why)
        if isinstance(schema.get("items"), list):
            raise self.fail(at, "items", "a tuple of positional items is not compiled")
        for keyword in sorted(set(schema) & set(IGNORED)):
            self.note(at, keyword, "ignores", f"{keyword} is not enforced: {IGNORED[keyword]}")
        if "$ref" in schema:
            self._beside(schema, at, "$ref", ignore=True)
            return self.ref(schema["$ref"], at, hint, depth, types)
        if "allOf" in schema:
            branches = schema["allOf"]
            if not (isinstance(branches, list) and len(branches) == 1) or self._beside(schema, at, "allOf"):
                raise self.fail(at, "allOf", "only an allOf of one schema, alone, is compiled")
            return self.value(branches[0], f"{at}/allOf/0", hint, depth + 1, types)
        for keyword in ("anyOf", "oneOf"):
            if keyword in schema:
                return self.alternatives(schema, keyword, at, hint, depth, self._types(schema, at, types))
        allowed = self._types(schema, at, types)
        if "enum" in schema or "const" in schema:
            return self.constants(schema, at, hint, allowed)
        if allowed is None:
            implied = {kind for kind, keys in IMPLIES.items() if schema.keys() & keys}
            if not implied:
                return self.anything(at)
            allowed = frozenset(implied | ({"integer"} if "number" in implied else set()))
        return self._each(schema, at, hint, depth, allowed)

    def anything(self, at: str) -> str:
        if self.bounded:
            self.note(
                at, "", "bounds", f"any JSON value, at most {BOUNDED_VALUE_DEPTH} deep (bounded decisions)"
            )
        return self.values.anything()

    def _each(
        self, schema: dict[str, Any], at: str, hint: str, depth: int, allowed: frozenset[str]
    ) -> str | None:
        options: list[str] = []
        for kind in TYPES:
            if kind not in allowed or (kind == "integer" and "number" in allowed):
                continue
            if kind == "object":
                rule = self.object(schema, at, hint, depth)
            elif kind == "array":
                rule = self.array(schema, at, hint, depth)
            elif kind == "string":
                rule = self.string(schema, at)
            elif kind in ("number", "integer"):
                rule = self.values.number(schema, at, integer=kind == "integer", note=self.note)
            else:
                rule = self.values.scalar(kind)
            if rule is not None:
                options.append(rule)
        if not options:
            return None
        return (
            options[0] if len(options) == 1 else self.grammar.rule(hint, Alt(tuple(Ref(o) for o in options)))
        )

    def _types(self, schema: dict[str, Any], at: str, outer: frozenset[str] | None) -> frozenset[str] | None:
        if "type" not in schema:
            return outer
        named = schema["type"]
        names = named if isinstance(named, list) else [named]
        if not names or not all(isinstance(name, str) and name in TYPES for name in names):
            raise self.fail(
                at, "type", f"not a JSON type (or list of them): {shown(named, SHOWN_VALUE_CHARS)}"
            )
        kinds = frozenset(names) | ({"integer"} if "number" in names else set())
        return kinds if outer is None else kinds & outer

    def _beside(self, schema: dict[str, Any], at: str, keyword: str, *, ignore: bool = False) -> list[str]:
        others = sorted((schema.keys() & ASSERTIONS) - {keyword} - set(IGNORED))
        if ignore and others:
            self.note(
                at, keyword, "ignores", f"keywords beside {keyword} are not applied: {', '.join(others)}"
            )
        return others

    def ref(self, target: Any, at: str, hint: str, depth: int, types: frozenset[str] | None) -> str | None:
        if not isinstance(target, str) or not target.startswith("#"):
            raise self.fail(at, "$ref", f"only local references (#/...) are resolved: {shown(target, 80)}")
        pointer = target[1:]
        if pointer and not pointer.startswith("/"):
            raise self.fail(at, "$ref", f"anchors are not resolved: {shown(target, 80)}")
        key = (pointer, types)
        if pointer in self._head:
            raise self.fail(at, "$ref", "a cycle of references that writes nothing before it repeats")
        if key in self._refs:
            return self._refs[key]
        schema = self.root
        for token in pointer.split("/")[1:]:
            token = token.replace("~1", "/").replace("~0", "~")
            if isinstance(schema, dict) and token in schema:
                schema = schema[token]
            elif isinstance(schema, list) and token.isdigit() and int(token) < len(schema):
                schema = schema[int(token)]
            else:
                raise self.fail(at, "$ref", f"{shown(target, 80)} does not resolve")
        name = self._refs[key] = self.grammar.reserve(pointer.rsplit("/", 1)[-1] or "root-schema")
        self._head.add(pointer)
        body = self.value(schema, pointer, name, depth + 1, types)
        self._head.discard(pointer)
        if body is None:
            raise self.fail(pointer, "", "no JSON value satisfies the referenced schema")
        self.grammar.define(name, Ref(body))
        return name

    def alternatives(
        self,
        schema: dict[str, Any],
        keyword: str,
        at: str,
        hint: str,
        depth: int,
        types: frozenset[str] | None,
    ) -> str | None:
        branches = schema[keyword]
        if not isinstance(branches, list) or not branches:
            raise self.fail(at, keyword, "is not a non-empty list of schemas")
        others = [k for k in self._beside(schema, at, keyword) if k != "type"]
        if others:
            raise self.fail(at, others[0], f"keywords beside {keyword} are not compiled")
        if keyword == "oneOf":
            self.note(at, keyword, "treats as anyOf", "a value that fits two branches is accepted too")
        rules: list[str] = []
        for index, branch in enumerate(branches):
            rule = self.value(branch, f"{at}/{keyword}/{index}", f"{hint}-{index}", depth + 1, types)
            if rule is not None and rule not in rules:
                rules.append(rule)
        if not rules:
            return None
        return rules[0] if len(rules) == 1 else self.grammar.rule(hint, Alt(tuple(Ref(r) for r in rules)))

    def constants(
        self, schema: dict[str, Any], at: str, hint: str, types: frozenset[str] | None
    ) -> str | None:
        values = schema["enum"] if "enum" in schema else [schema["const"]]
        if not isinstance(values, list):
            raise self.fail(at, "enum", "is not a list")
        if "const" in schema and "enum" in schema:
            values = [v for v in values if same_value(v, schema["const"])]
        ignored = [
            k
            for k in self._beside(schema, at, "enum" if "enum" in schema else "const")
            if k not in ("type", "const", "enum")
        ]
        if ignored:
            self.note(
                at, ignored[0], "ignores", f"beside enum or const, {', '.join(ignored)} are not applied"
            )
        texts: list[str] = []
        for value in values:
            if types is not None and not (json_kinds(value) & types):
                continue
            try:
                text = json.dumps(
                    value, ensure_ascii=False, allow_nan=False, separators=(self.comma, self.colon)
                )
                text.encode("utf-8")
            except (ValueError, TypeError, UnicodeEncodeError):
                raise self.fail(
                    at,
                    "enum" if "enum" in schema else "const",
                    f"{shown(value, 40)} cannot be written as JSON text",
                ) from None
            if text not in texts:
                texts.append(text)
        if not texts:
            return None
        body: Expr = Lit(texts[0]) if len(texts) == 1 else Alt(tuple(Lit(t) for t in texts))
        return self.grammar.rule(f"{hint}-value" if len(texts) > 1 else "const", body)

    def string(self, schema: dict[str, Any], at: str) -> str | None:
        bounds = self.counts(schema, at, "minLength", "maxLength")
        return None if bounds is None else self.values.string(*bounds)

    def counts(
        self, schema: dict[str, Any], at: str, low_key: str, high_key: str
    ) -> tuple[int, int | None] | None:
        """``(low, high)`` of two count keywords, within llama.cpp's limit; ``None`` if unsatisfiable."""
        low, high = schema.get(low_key, 0), schema.get(high_key)
        for key, count in ((low_key, low), (high_key, high)):
            if count is not None and not is_count(count) and not is_whole(count):
                raise self.fail(at, key, f"is not a non-negative integer: {shown(count, SHOWN_VALUE_CHARS)}")
        return self.values.counts(
            int(low), None if high is None else int(high), at, low_key, high_key, self.note
        )

    def array(self, schema: dict[str, Any], at: str, hint: str, depth: int) -> str | None:
        bounds = self.counts(schema, at, "minItems", "maxItems")
        if bounds is None:
            return None
        items = schema.get("items", True)
        saved, self._head = self._head, set()
        item = self.value(items, f"{at}/items", f"{hint}-item", depth + 1)
        self._head = saved
        if item is None:
            return self.grammar.rule("empty-array", Lit("[]")) if bounds[0] == 0 else None
        return self.values.listing(f"{hint}-array" if hint else "array", "[", Ref(item), "]", *bounds)

    def object(self, schema: dict[str, Any], at: str, hint: str, depth: int) -> str | None:
        properties = schema.get("properties")
        required = schema.get("required", [])
        extra = schema.get("additionalProperties")
        if properties is not None and not isinstance(properties, dict):
            raise self.fail(at, "properties", "is not an object of schemas")
        if not (isinstance(required, list) and all(isinstance(key, str) for key in required)):
            raise self.fail(at, "required", "is not a list of strings")
        tool = (properties or {}).get("tool")
        if isinstance(tool, dict) and isinstance(tool.get("const"), str):
            hint = tool["const"]  # a route alternative: its rules are named after the tool
        saved, self._head = self._head, set()
        try:
            if properties is None and extra is not False and not required:
                if "patternProperties" in schema:
                    self.note(
                        at,
                        "patternProperties",
                        "ignores",
                        "keys are checked against additionalProperties only",
                    )
                bounds = self.counts(schema, at, "minProperties", "maxProperties")
                value = self.value(
                    True if extra is None else extra, f"{at}/additionalProperties", f"{hint}-value", depth + 1
                )
                if bounds is None or (value is None and bounds[0] > 0):
                    return None
                if value is None:
                    return self.grammar.rule("empty-object", Lit("{}"))
                member = self.grammar.rule(
                    f"{hint}-member", Seq((Ref(self.values.free_string()), Lit(self.colon), Ref(value)))
                )
                return self.values.listing(f"{hint}-object", "{", Ref(member), "}", *bounds)
            return self.declared(schema, properties or {}, required, extra, at, hint, depth)
        finally:
            self._head = saved

    def declared(
        self,
        schema: dict[str, Any],
        properties: dict[str, Any],
        required: list[str],
        extra: Any,
        at: str,
        hint: str,
        depth: int,
    ) -> str | None:
        if extra is not False:
            self.note(
                at,
                "additionalProperties",
                "forbids extra keys",
                "keys properties does not list are never written",
            )
        for keyword in ("minProperties", "maxProperties", "patternProperties"):
            if keyword in schema:
                self.note(at, keyword, "ignores", f"{keyword} is not applied beside properties")
        members: list[tuple[Expr, bool]] = []
        wanted = set(required)
        listed = [(key, sub, f"{at}/properties/{pointer_token(key)}") for key, sub in properties.items()]
        # dict.fromkeys: a key required twice is still written once.
        listed += [
            (key, True if extra in (None, True) else extra, f"{at}/additionalProperties")
            for key in dict.fromkeys(required)
            if key not in properties
        ]
        if extra is False and any(key not in properties for key in required):
            return None
        for key, sub, where in listed:
            rule = self.value(sub, where, f"{hint}-{key}", depth + 1)
            if rule is None:
                if key in wanted:
                    return None
                continue
            key_text = json.dumps(key, ensure_ascii=False) + self.colon
            members.append((Seq((Lit(key_text), Ref(rule))), key in wanted))
        return self.grammar.rule(hint or "object", self.values.members(hint or "object", members))
