"""The numbers a text names, however it writes them: digits, words, magnitudes, percentages.

Every reading a text allows is kept, since the question is only whether a value is among
them: "3,400" is 3400, and 3 and 400 (a list written without spaces); "5m" is 5 and 5,000,000
(metres or millions); "5%" is 5 and 0.05; "-5" is 5 as well (a sign is often the model's
reading of "minus" or of a formula, and a number's size is what a user gives). A reading too
many can only take an invented number for a given one, never the other way round.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator

__all__ = ["number_of", "numbers_in", "same_number"]

_UNITS = {
    "zero": 0, "one": 1, "two": 2, "three": 3,
    "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11,
    "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17,
    "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30, "forty": 40, "fifty": 50,
    "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
}  # fmt: skip
# Words that stand for a number alone, never inside a longer one ("a dozen" is 12, "a" alone is not 1).
_ALONE = {
    "dozen": 12,
    "half": 0.5,
    "quarter": 0.25,
    "twice": 2,
    "thrice": 3,
    "once": 1,
    "double": 2,
    "triple": 3,
}
_ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
    "eighth": 8, "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13,
    "fifteenth": 15, "twentieth": 20, "thirtieth": 30, "hundredth": 100,
}  # fmt: skip
_SCALES = {
    "hundred": 100, "thousand": 1_000, "k": 1_000, "grand": 1_000, "million": 1_000_000,
    "mil": 1_000_000, "mn": 1_000_000, "m": 1_000_000, "billion": 1_000_000_000, "bn": 1_000_000_000,
    "b": 1_000_000_000, "trillion": 1_000_000_000_000, "t": 1_000_000_000_000,
}  # fmt: skip
# One number in digits: thousands separated by commas (or not), a fraction, an exponent; then a
# magnitude ("1.5k", "$2 million", "3M") or a percent sign, if one follows.
_DIGITS = re.compile(
    r"(?<![\w.])[-+−]?(?:\d{1,3}(?:,\d{3}(?!\d))+|\d+)?(?:\.\d+)?(?<=\d)(?:[eE][-+]?\d+)?"
    r"(?:\s?(?P<scale>hundred|thousand|million|billion|trillion|grand|mil|mn|bn|[kKmMbBtT])\b)?"
    r"(?P<percent>\s?(?:%|percent\b|per cent\b))?"
)
_WORD = re.compile(r"[a-z]+")
_INTEGER_PART = re.compile(r"\d+")
_BIG = {word: _SCALES[word] for word in ("thousand", "million", "billion", "trillion")}
# Ordinals and decades in digits: "21st", "3rd", "1990s".
_SUFFIXED = re.compile(r"\b(\d+)(?:st|nd|rd|th|s)\b")


def numbers_in(text: str) -> set[float]:
    """Every number ``text`` names, in every reading it allows (the module's docstring)."""
    found: set[float] = set()
    for match in _DIGITS.finditer(text):
        found.update(_readings(match))
    for match in _SUFFIXED.finditer(text):
        found.add(float(match.group(1)))
    found.update(_worded(text.lower()))
    return found


def _readings(match: re.Match[str], *, lists: bool = True) -> Iterator[float]:
    written = match.group(0)
    core = written
    for piece in ("scale", "percent"):
        if match.group(piece):
            core = core[: match.start(piece) - match.start()]
    core = core.strip().replace("−", "-").lstrip("+-")
    value = float(core.replace(",", ""))
    yield value
    if lists and "," in core:  # "3,400" may be a list of 3 and 400
        for part in _INTEGER_PART.findall(core):
            yield float(part)
    scale = match.group("scale")
    if scale:
        yield value * _SCALES[scale.lower()]
    if match.group("percent"):
        yield value / 100


def _worded(text: str) -> Iterator[float]:
    """Numbers written in words: "twenty-five", "three hundred and six", "a dozen", "two million"."""
    words = _WORD.findall(text.replace("-", " "))
    total, current, started, previous = 0.0, 0.0, False, ""
    for index, word in enumerate([*words, ""]):
        following = words[index + 1] if index + 1 < len(words) else ""
        if word in _UNITS and not (previous in _UNITS and not _joins(previous, word)):
            current += _UNITS[word]
        elif word in ("a", "an") and not started and (following in _SCALES or following == "dozen"):
            current = 1.0
        elif word == "hundred" and started:
            current = (current or 1.0) * 100
        elif word in _BIG and started:
            total += (current or 1.0) * _BIG[word]
            current = 0.0
        elif word == "dozen" and started:
            current = (current or 1.0) * 12
        elif word == "and" and started and previous in _SCALES and following in _UNITS:
            pass
        else:
            if started:
                yield total + current
            total, current, started = 0.0, 0.0, False
            if word in _UNITS:  # a second number right after one: "five five"
                current, started, previous = float(_UNITS[word]), True, word
                continue
            if word in _ALONE:
                yield float(_ALONE[word])
            elif word in _ORDINALS:
                yield float(_ORDINALS[word])
            elif word in _SCALES and len(word) > 2:
                yield float(_SCALES[word])  # "hundreds", "thousands": the scale alone
            previous = word
            continue
        started, previous = True, word


def _joins(previous: str, word: str) -> bool:
    """Whether two number words in a row are one number: a ten then a unit ("twenty five")."""
    return _UNITS[previous] >= 20 and _UNITS[previous] % 10 == 0 and 0 < _UNITS[word] < 10


def number_of(text: str) -> set[float]:
    """The readings of a whole value that is a number ("42", "$1M", "1,000", "two", "5%"); empty
    for any other text."""
    stripped = text.strip().lstrip("$€£¥").strip()
    match = _DIGITS.fullmatch(stripped)
    if match is not None:
        return set(_readings(match, lists=False))
    words = _WORD.findall(stripped.lower().replace("-", " "))
    if words and " ".join(words) == re.sub(r"[\s-]+", " ", stripped.lower()):
        worded = list(_worded(stripped.lower()))
        if len(worded) == 1:
            return set(worded)
    return set()


def same_number(value: float, given: set[float]) -> bool:
    """Whether ``value`` is one of ``given``, its size read as a user gives it: the sign left aside,
    and to the last few digits of a float."""
    size = abs(value)
    return any(math.isclose(size, abs(number), rel_tol=1e-12, abs_tol=1e-12) for number in given)
