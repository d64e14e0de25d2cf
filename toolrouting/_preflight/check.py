"""The preflight: what a grammar compiler will do with a JSON schema, before a server compiles it.

Servers turn the route schema into a grammar with one of a few compilers, and each
departs from JSON Schema in its own way: it ignores a keyword, refuses one, treats
``oneOf`` as ``anyOf``, fixes the order of properties, or decides on its own whether an
object may carry keys ``properties`` does not list. :func:`preflight` names each such
place by its JSON pointer. Every rule cites the compiler's documentation or source; the
rules for llama.cpp, llguidance and outlines are tested on the compilers themselves
(tests/preflight/test_preflight_llama_cpp.py, tests/preflight/test_preflight_llguidance.py and
tests/preflight/test_preflight_outlines.py), those for xgrammar are from its documentation.

Severity: ``error`` the compiler refuses the schema (no grammar: the request fails, or a
server such as KoboldCpp generates unconstrained); ``warning`` the grammar accepts values
the schema forbids or refuses values it allows; ``info`` a difference of form (key order,
whitespace) or a default that narrows what the model may write.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from .._json import plain, shown
from .._limits import MAX_CAUSE_QUOTE, SHOWN_VALUE_CHARS
from .findings import TARGETS, Finding
from .llama_cpp import LLAMA_CPP
from .llguidance import LLGUIDANCE
from .outlines import OUTLINES
from .route_grammar import route_grammar_findings
from .rules import CompilerRules, NodeFindings, subschemas
from .xgrammar import XGRAMMAR

__all__ = ["preflight"]

_RULES: dict[str, CompilerRules] = {
    "llama.cpp": LLAMA_CPP,
    "llguidance": LLGUIDANCE,
    "xgrammar": XGRAMMAR,
    "outlines": OUTLINES,
}


def preflight(schema: Mapping[str, Any], target: str) -> list[Finding]:
    """What ``target`` (one of :data:`TARGETS`) will do with ``schema``, in document order.

    ``schema`` is any JSON schema; for a catalogue, pass ``route_schema(tools)`` so that
    the pointers are the ones the server sees.
    """
    rules = _RULES.get(target)
    if rules is None and target != "toolrouting":
        named = shown(target, SHOWN_VALUE_CHARS)
        raise ValueError(f"unknown preflight target {named}; the targets are {', '.join(TARGETS)}")
    if not isinstance(schema, Mapping):
        raise TypeError(f"a schema is a mapping, not {type(schema).__name__}")
    # A plain JSON copy: string keys, lists and dicts only, as the rules expect.
    try:
        schema = json.loads(json.dumps(plain(schema), allow_nan=False))
    except (TypeError, ValueError, RecursionError) as error:
        raise ValueError(f"the schema is not JSON ({str(error)[:MAX_CAUSE_QUOTE]})") from None
    if rules is None:
        return route_grammar_findings(schema)
    findings = rules.whole(schema)
    for pointer, node in subschemas(schema):
        found = NodeFindings(pointer, rules.source)
        if isinstance(node, Mapping):
            rules.each(node, found)
        elif isinstance(node, bool) and rules.boolean is not None:
            rules.boolean(found)
        findings.extend(found.findings)
    return findings
