"""Whether a call's required arguments come from the conversation, and which do not.

A routed call names a tool and fills its arguments; a small model fills them whether or not the
user gave them. Grounding checks each argument the tool requires that has no ``default`` and
whose value is given, not composed (``kinds``: a closed choice, which the grammar holds to the
schema, and a command, a query or a message the model writes are not checked), against the
conversation's evidence (``evidence``): a number among the numbers it names, a date or a time
among its dates and times, a text by the share of its words the conversation holds, a list
element by element, an object by its own properties (those of them that are given).

What it cannot see: a value the model derives rightly from the conversation but that the
conversation never writes ("the past decade" is 10 years, "NYC" is "New York City", "tomorrow"
is a date, a unit converted); such an argument reads as ungrounded. And an argument the model
copied from the conversation into the wrong tool reads as grounded: grounding tells invented
values from given ones, not the right tool from the wrong one.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from .dates import moments_of, same_day
from .evidence import Evidence
from .kinds import argument_kind
from .numbers import number_of, same_number
from .words import word_share

__all__ = ["WORD_SHARE", "Grounding", "Kind", "Ungrounded", "checked_arguments", "grounding"]

Kind = Literal["number", "moment", "words"]

#: The share of a text value's words the conversation must hold for it to be grounded.
WORD_SHARE = 0.5
# How much of a value an explanation quotes.
_SHOWN = 40


@dataclasses.dataclass(frozen=True, kw_only=True)
class Ungrounded:
    """One required argument whose value the conversation does not give."""

    argument: str
    value: Any
    kind: Kind
    """What the value was read as: a number, a date or time, or words."""
    missing: str
    """What the conversation lacks: ``the number 70``, ``the words "paris"``, ``the date 2019-12-13``."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Grounding:
    """A call's arguments held against the conversation: which were checked, which are ungrounded."""

    tool: str
    checked: tuple[str, ...]
    ungrounded: tuple[Ungrounded, ...]
    composed: tuple[str, ...] = ()
    """The required arguments of the call left unchecked because the model writes them."""

    @property
    def grounded(self) -> bool:
        """Whether every checked argument is grounded (a call with none to check is)."""
        return not self.ungrounded

    @property
    def share(self) -> float:
        """The share of the checked arguments that are ungrounded (0 when none were checked)."""
        return len(self.ungrounded) / len(self.checked) if self.checked else 0.0

    def reason(self) -> str:
        """What is missing, in words the answer can use: ``get_weather needs city, which the
        conversation does not give``."""
        names = [item.argument for item in self.ungrounded]
        if not names:
            return f"{self.tool} has what it needs"
        listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
        return f"{self.tool} needs {listed}, which the conversation does not give"


def checked_arguments(parameters: Mapping[str, Any], tool: str | None = None) -> list[str]:
    """The arguments grounding checks: required, without a ``default``, not a closed choice
    (which the grammar holds to the schema), and given
    (:func:`~toolrouting._grounding.kinds.argument_kind` of each, ``tool`` the tool's name)."""
    return [name for name, kind in _required(parameters, tool) if kind == "given"]


def _required(parameters: Mapping[str, Any], tool: str | None) -> list[tuple[str, str]]:
    """Each required argument without a ``default`` that is not a closed choice, with its kind."""
    properties = parameters.get("properties")
    required = parameters.get("required")
    if not isinstance(properties, Mapping) or not isinstance(required, list):
        return []
    return [
        (name, argument_kind(name, properties[name], tool).kind)
        for name in dict.fromkeys(required)
        if isinstance(name, str)
        and isinstance(properties.get(name), Mapping)
        and "default" not in properties[name]
        and not _closed(properties[name])
    ]


def _closed(schema: Mapping[str, Any]) -> bool:
    """Whether a schema is a closed choice: an ``enum``, a ``const``, or a boolean."""
    kind = schema.get("type")
    return "enum" in schema or "const" in schema or kind == "boolean" or kind == ["boolean"]


def grounding(
    tool: str,
    arguments: Mapping[str, Any],
    parameters: Mapping[str, Any],
    evidence: Evidence,
    *,
    word_share: float = WORD_SHARE,
    by_kind: bool = True,
) -> Grounding:
    """Each checked argument of a call held against ``evidence``; an argument the call leaves
    out is not checked (nothing was invented). ``by_kind=False`` checks a composed argument too,
    as grounding did before it knew kinds (for a measurement that compares the two)."""
    properties = parameters.get("properties") or {}
    kinds = [(name, "given" if not by_kind else kind) for name, kind in _required(parameters, tool)]
    checked = tuple(name for name, kind in kinds if kind == "given" and name in arguments)
    composed = tuple(name for name, kind in kinds if kind == "composed" and name in arguments)
    missing = []
    for name in checked:
        lacks = _lacks(arguments[name], properties[name], evidence, word_share, by_kind)
        if lacks is not None:
            missing.append(Ungrounded(argument=name, value=arguments[name], kind=lacks[0], missing=lacks[1]))
    return Grounding(tool=tool, checked=checked, ungrounded=tuple(missing), composed=composed)


def _lacks(
    value: Any, schema: Any, evidence: Evidence, share: float, by_kind: bool
) -> tuple[Kind, str] | None:
    """What the conversation lacks for ``value`` to be grounded, or ``None`` when it is."""
    schema = schema if isinstance(schema, Mapping) else {}
    if value is None or isinstance(value, bool) or _closed(schema):
        return None
    if isinstance(value, (int, float)):
        return (
            None if same_number(value, set(evidence.numbers)) else ("number", f"the number {_shown(value)}")
        )
    if isinstance(value, str):
        return _text_lacks(value, evidence, share)
    if isinstance(value, Sequence):
        items = schema.get("items")
        for element in value:
            lacks = _lacks(element, items, evidence, share, by_kind)
            if lacks is not None:
                return lacks
        return None
    if isinstance(value, Mapping):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, Mapping) else {}
        for key, element in value.items():
            if (
                by_kind
                and isinstance(key, str)
                and argument_kind(key, properties.get(key)).kind == "composed"
            ):
                continue  # a property the model writes, as a top-level one
            lacks = _lacks(element, properties.get(key), evidence, share, by_kind)
            if lacks is not None:
                return lacks
    return None


def _text_lacks(value: str, evidence: Evidence, share: float) -> tuple[Kind, str] | None:
    if not value.strip():
        return None  # an empty text invents nothing
    readings = number_of(value)
    if readings:
        numbers = set(evidence.numbers)
        if any(same_number(reading, numbers) for reading in readings):
            return None
        return "number", f"the number {_shown(value)}"
    moments = moments_of(value)
    if moments is not None:
        # Each date and time written is grounded by one of its readings.
        dates = set(evidence.dates)
        if all(any(same_day(day, dates) for day in readings) for readings in moments.days) and all(
            readings & evidence.times for readings in moments.clocks
        ):
            return None
        return "moment", f"the {'date' if moments.days else 'time'} {_shown(value)}"
    found, missing = word_share(value, evidence.words, evidence.shortened, evidence.letters)
    if found >= share:
        return None
    return "words", f"the word{'s' if len(missing) > 1 else ''} {_shown(' '.join(missing))}"


def _shown(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value)
    return json.dumps(text[:_SHOWN]) if isinstance(value, str) else text[:_SHOWN]
