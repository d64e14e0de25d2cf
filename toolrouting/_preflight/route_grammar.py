"""Our own route grammar as a preflight target: the notes ``route_grammar`` makes, as findings.

The grammar the ``llama.cpp``, ``llama-cpp-python`` and ``koboldcpp`` dialects and the embedded
backend send by default (``Settings(grammar="ours", bounded=True)``) is compiled here the same
way, so the findings are what those requests will do: what it widens (``ignores``,
``unbounded``, ``lowers``, ``treats as anyOf``), what it narrows (``forbids extra keys``,
``narrows``), each string or array the schema left unbounded that bounded decisions bound
(``bounds``), and bounds that multiply past parse_route's limit (``exceeds the reply limit``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._errors import GrammarError
from .._grammar import route_grammar
from .findings import Finding, Severity

__all__ = ["route_grammar_findings"]

_SOURCE = "toolrouting/_grammar docs/grammar.md"
#: Narrowing notes are defaults of form; every other note lets through what the schema forbids.
_SEVERITY: dict[str, Severity] = {
    "forbids extra keys": "info",
    "bounds": "info",
    # The completion cap ends such a reply long before; a cut reply is repaired, never run.
    "exceeds the reply limit": "info",
}


def route_grammar_findings(schema: Mapping[str, Any]) -> list[Finding]:
    """The whole-schema rules of our grammar, then one finding per note (or the refusal)."""
    findings = [
        Finding(
            pointer="",
            keyword="",
            effect="fixes property order",
            severity="info",
            message="every object's keys are written in the order of properties (tool first in a "
            "route), with no whitespace between tokens",
            source=_SOURCE,
        )
    ]
    try:
        grammar = route_grammar(schema, bounded=True)
    except GrammarError as error:
        findings.append(
            Finding(
                pointer=error.pointer,
                keyword="",
                effect="refuses",
                severity="error",
                message=f"{error.reason}; Settings(grammar='server') sends the schema for the server "
                "to convert instead",
                source=_SOURCE,
            )
        )
        return findings
    findings.extend(
        Finding(
            pointer=note.pointer,
            keyword=note.keyword,
            effect=note.effect,
            severity=_SEVERITY.get(note.effect, "warning"),
            message=note.message,
            source=_SOURCE,
        )
        for note in grammar.notes
    )
    return findings
