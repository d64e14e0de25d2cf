"""A docstring read for a tool: its first paragraph, and what a parameter section says of each parameter.

Google style (``Args:`` and indented ``name (type): text``) and NumPy style (``Parameters``
over a rule of dashes, then ``name : type`` with the text indented below) are read;
anything else leaves the parameters undescribed.
"""

from __future__ import annotations

import dataclasses
import re

__all__ = ["Docstring", "parse_docstring"]

_PARAMETER_HEADERS = ("Args", "Arguments", "Parameters", "Params")
_SECTION = re.compile(r"^(Args|Arguments|Parameters|Params|Returns?|Raises|Yields|Examples?|Notes?)\s*:?\s*$")
_GOOGLE_ITEM = re.compile(r"^(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_NUMPY_ITEM = re.compile(r"^(\w+)\s*(?::.*)?$")


@dataclasses.dataclass(frozen=True, kw_only=True)
class Docstring:
    """What a tool's declaration takes from its function's docstring."""

    summary: str
    """The first paragraph as one line: the tool's description; ``""`` when there is none."""
    parameters: dict[str, str]
    """Each described parameter's text, by name."""


def parse_docstring(doc: str) -> Docstring:
    """The first paragraph as one line, and the parameter descriptions of an Args section."""
    lines = doc.splitlines()
    summary: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()):
            break
        summary.append(line.strip())
    return Docstring(summary=" ".join(summary), parameters=_parameter_notes(lines))


def _parameter_notes(lines: list[str]) -> dict[str, str]:
    starts = [i for i, line in enumerate(lines) if line.strip().rstrip(":") in _PARAMETER_HEADERS]
    if not starts:
        return {}
    numpy = starts[0] + 1 < len(lines) and _is_rule(lines[starts[0] + 1])
    body = lines[starts[0] + (2 if numpy else 1) :]
    notes: dict[str, str] = {}
    base: int | None = None
    current: str | None = None
    for position, line in enumerate(body):
        text = line.strip()
        if not text:
            continue  # NumPy style puts blank lines between entries
        indent = len(line) - len(line.lstrip())
        base = indent if base is None else base
        next_is_rule = position + 1 < len(body) and _is_rule(body[position + 1])
        if indent < base or next_is_rule:
            break  # the section ends at a dedent (Google) or the next underlined header (NumPy)
        if indent == base:
            match = (_NUMPY_ITEM if numpy else _GOOGLE_ITEM).match(text)
            if match is None:
                break
            current = match.group(1).lstrip("*")
            notes[current] = "" if numpy else match.group(2).strip()
        elif current is not None:
            notes[current] = f"{notes[current]} {text}".strip()
    return {name: text for name, text in notes.items() if text}


def _is_rule(line: str) -> bool:
    return len(line.strip()) >= 3 and set(line.strip()) == {"-"}
