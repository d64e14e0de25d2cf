"""What a preflight reports: one finding per place a compiler departs from a schema."""

from __future__ import annotations

import dataclasses
from typing import Literal

__all__ = ["TARGETS", "Finding", "Severity", "Target", "format_findings"]

Target = Literal["llama.cpp", "llguidance", "xgrammar", "outlines", "toolrouting"]
Severity = Literal["error", "warning", "info"]

#: The compilers :func:`preflight` knows, by the name its ``target`` takes; ``toolrouting`` is our
#: own (:func:`~toolrouting.route_grammar`, as the backends send it by default).
TARGETS: tuple[Target, ...] = ("llama.cpp", "llguidance", "xgrammar", "outlines", "toolrouting")


@dataclasses.dataclass(frozen=True, slots=True, kw_only=True)
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


def format_findings(findings: list[Finding]) -> str:
    """One line per finding, ``severity pointer keyword: message [source]``; a line saying none."""
    if not findings:
        return "no findings: the compiler follows this schema as written"
    return "\n".join(
        f"{f.severity} {f.pointer or '/'} {f.keyword or '(schema)'}: {f.message} [{f.source}]"
        for f in findings
    )
