"""What a conversation gives a call's arguments: its words, numbers, dates and times, read once.

The evidence is what the user and the caller said, and what earlier tools answered: the user's
turns, the caller's system text, and the results of the calls so far (their content, the
header that names the tool and the call left out). Never the catalogue or the loop's own
instructions, which name every tool's parameters and would ground anything; never the model's
own earlier actions, whose arguments are what is being checked.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

from .._result_messages import read_routed_result
from .dates import Clock, Day, dates_in, times_in
from .numbers import numbers_in
from .words import heads, squashed, words

__all__ = ["Evidence", "conversation_evidence"]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Evidence:
    """The texts a call's arguments are checked against, read into what a value is compared with."""

    words: frozenset[str]
    """The stems of every word (``words.words``)."""
    shortened: frozenset[str]
    """The first letters of every word (``words.heads``), for a value that abbreviates one."""
    letters: str
    """Every letter and digit run together, for a word the texts split ("New York" for "newyork")."""
    numbers: frozenset[float]
    dates: frozenset[Day]
    times: frozenset[Clock]

    @classmethod
    def of(cls, texts: Iterable[str]) -> Evidence:
        """The evidence of ``texts``, each read alone (no word, number or date spans two)."""
        found_words: set[str] = set()
        shortened: set[str] = set()
        letters, numbers, dates, times = [], set(), set(), set()
        for text in texts:
            found_words.update(words(text))
            shortened.update(heads(text))
            letters.append(squashed(text))
            numbers.update(numbers_in(text))
            dates.update(dates_in(text))
            times.update(times_in(text))
        return cls(
            words=frozenset(found_words),
            shortened=frozenset(shortened),
            letters=" ".join(letters),
            numbers=frozenset(numbers),
            dates=frozenset(dates),
            times=frozenset(times),
        )


def conversation_evidence(messages: Iterable[Mapping[str, Any]]) -> Evidence:
    """The evidence of a run's conversation (the module's docstring): its system and user
    messages, a result message's content without its header, a ``tool`` message's content.

    The caller leaves out what is not the conversation's: the loop's instructions and its repair
    messages, which list the catalogue.
    """
    texts = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, str) or message.get("role") not in ("system", "user", "tool"):
            continue
        result = read_routed_result(content)
        texts.append(content if result is None else result.content)
    return Evidence.of(texts)
