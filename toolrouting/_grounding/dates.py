"""The dates and times a text names, in the common forms a user writes and a model fills in.

A date is a day of a month, with its year when the text gives one: "December 13, 2019",
"13 Dec 2019", "the 13th of December", "2019-12-13", "12/13/2019" (and "13/12/2019": a date
in digits is read day first and month first, every reading kept). A month of a year
("December 2019", "2019-12") is a date without its day. A time is an hour and a minute:
"3pm", "3:30 p.m.", "15:30", "noon"; a time written without am or pm is read both ways.

A value is a date when the whole of it is one ("2019-12-13", "2019-12-13T15:00:00Z",
"December 13, 2019"; a date-time at midnight is its day alone); it is grounded by a date of
the text with the same month and day, and the same year unless the text gave none ("December
13" grounds "2019-12-13": the year is the model's to fill in). A value less precise than the
text ("2019-12" from "December 13, 2019") is grounded too; one more precise (a day the text
never named) is not. Relative dates ("next Friday", "tomorrow") name no day of a month, and
are not read.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterator

__all__ = ["Clock", "Day", "Moments", "dates_in", "moments_of", "same_day", "times_in"]

_MONTHS = (
    "jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
    "sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?"
)
_ORDINAL = r"(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
_NAMED = [
    # December 13, 2019 / Dec. 13th 2019 / December 13
    re.compile(
        rf"\b(?P<month>{_MONTHS})(?:\.\s*|\s+)(?P<day>\d{{1,2}}){_ORDINAL}\b(?:,?\s+{_YEAR}\b)?", re.I
    ),
    # 13 December 2019 / the 13th of December, 2019
    re.compile(
        rf"\b(?P<day>\d{{1,2}}){_ORDINAL}\s+(?:of\s+)?(?P<month>{_MONTHS})\b\.?(?:,?\s+{_YEAR}\b)?", re.I
    ),
    # December 2019
    re.compile(rf"\b(?P<month>{_MONTHS})\.?,?\s+{_YEAR}\b", re.I),
]
# 2019-12-13, 2019/12/13, 2019.12.13, and 2019-12 (a month of a year).
_ISO = re.compile(r"\b(?P<year>\d{4})([-/.])(?P<first>\d{1,2})(?:\2(?P<second>\d{1,2}))?(?!\d)")
# 12/13/2019 and 13/12/2019, 13.12.19: read month first and day first.
_NUMERIC = re.compile(r"\b(?P<first>\d{1,2})([-/.])(?P<second>\d{1,2})\2(?P<year>\d{4}|\d{2})\b")
_CLOCK = re.compile(
    r"(?:(?<=T)|(?<![\w:.]))(?P<hour>\d{1,2})(?::(?P<minute>\d{2}))?(?P<seconds>:\d{2}(?:\.\d+)?)?\s?"
    r"(?P<half>[ap]\.?m\.?(?![a-z])|o'?clock\b)?",
    re.I,
)
_NAMED_TIMES = {"noon": (12, 0), "midday": (12, 0), "midnight": (0, 0)}


@dataclasses.dataclass(frozen=True, slots=True)
class Day:
    """A day of a month, or a month alone (``day`` ``None``), with its year when one was given."""

    year: int | None
    month: int
    day: int | None


Clock = tuple[int, int]
"""A time of day: the hour (0 to 23) and the minute."""


_ABBREVIATED = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def _month(name: str) -> int:
    return _ABBREVIATED.index(name[:3].lower()) + 1


def _day(year: int | None, month: int, day: int | None) -> Day | None:
    if not 1 <= month <= 12 or (day is not None and not 1 <= day <= 31):
        return None
    return Day(year, month, day)


def _spans(text: str) -> Iterator[tuple[int, int, Day]]:
    """Every date of ``text`` in every reading, with where it was written."""
    for pattern in _NAMED:
        for match in pattern.finditer(text):
            year = match.group("year")
            found = _day(
                int(year) if year else None,
                _month(match.group("month")),
                int(match.group("day")) if "day" in pattern.groupindex else None,
            )
            if found is not None:
                yield match.start(), match.end(), found
    for match in _ISO.finditer(text):
        second = match.group("second")
        found = _day(int(match.group("year")), int(match.group("first")), int(second) if second else None)
        if found is not None:
            yield match.start(), match.end(), found
    for match in _NUMERIC.finditer(text):
        year = int(match.group("year"))
        if year < 100:
            year += 2000 if year < 50 else 1900
        first, second = int(match.group("first")), int(match.group("second"))
        for month, day in ((first, second), (second, first)):
            found = _day(year, month, day)
            if found is not None:
                yield match.start(), match.end(), found


def _clock_spans(text: str) -> Iterator[tuple[int, int, Clock]]:
    for match in _CLOCK.finditer(text):
        hour, minute, half = int(match.group("hour")), match.group("minute"), match.group("half")
        if minute is None and half is None:
            continue  # a bare number is a number, not a time
        if hour > 23 or (minute is not None and int(minute) > 59):
            continue
        end = match.end() if half else match.end("seconds" if match.group("seconds") else "minute")
        clock = hour, int(minute or 0)
        if half and half.lower().startswith("p") and hour < 12:
            yield match.start(), end, (hour + 12, clock[1])
        elif half and half.lower().startswith("a"):
            yield match.start(), end, (0 if hour == 12 else hour, clock[1])
        else:  # 24-hour, or without am or pm ("3:30", "3 o'clock"): both halves of the day
            yield match.start(), end, clock
            if hour < 12:
                yield match.start(), end, (hour + 12, clock[1])
    lowered = text.lower()
    for word, clock in _NAMED_TIMES.items():
        for match in re.finditer(rf"\b{word}\b", lowered):
            yield match.start(), match.end(), clock


def dates_in(text: str) -> set[Day]:
    """Every date ``text`` names, in every reading it allows."""
    return {day for _, _, day in _spans(text)}


def times_in(text: str) -> set[Clock]:
    """Every time of day ``text`` names, in every reading it allows."""
    return {clock for _, _, clock in _clock_spans(text)}


@dataclasses.dataclass(frozen=True)
class Moments:
    """The dates and times a value is made of: for each date or time written, every reading of it."""

    days: list[set[Day]]
    clocks: list[set[Clock]]


def moments_of(value: str) -> Moments | None:
    """The dates and times of a value that is wholly a date, a time or both ("2019-12-13",
    "2019-12-13T15:00:00Z", "3:30 PM", "December 13, 2019"), or ``None`` for any other text.

    Each date or time written is one set of readings: "10/12/2022" is October 12th or December
    10th, and "3:30" half past three in the morning or in the afternoon."""
    covered = [False] * len(value)
    days: dict[tuple[int, int], set[Day]] = {}
    clocks: dict[tuple[int, int], set[Clock]] = {}
    for start, end, day in _spans(value):
        days.setdefault((start, end), set()).add(day)
        covered[start:end] = [True] * (end - start)
    for start, end, clock in _clock_spans(value):
        if not any(covered[start:end]) or (start, end) in clocks:
            clocks.setdefault((start, end), set()).add(clock)
            covered[start:end] = [True] * (end - start)
    if days:  # a date-time's midnight is the day itself: "2019-12-13T00:00:00"
        clocks = {span: readings for span, readings in clocks.items() if (0, 0) not in readings}
    if not days and not clocks:
        return None
    rest = "".join(char for char, done in zip(value, covered, strict=True) if not done)
    # What may be left around a date and a time: separators, "T", "Z", a zone offset, "at", "on".
    if re.fullmatch(r"(?:[\s,.:T]|Z\b|[+-]\d{2}:?\d{2}|\bat\b|\bon\b|\bUTC\b)*", rest, re.I) is None:
        return None
    return Moments(days=list(days.values()), clocks=list(clocks.values()))


def same_day(value: Day, given: set[Day]) -> bool:
    """Whether a date of the text grounds ``value`` (the module's docstring)."""
    for day in given:
        if day.month != value.month:
            continue
        if value.day is not None and day.day != value.day:
            continue
        if day.year is not None and value.year is not None and day.year != value.year:
            continue
        if value.year is not None and day.year is None and day.day is None:
            continue  # "December" alone does not ground a month of a year
        return True
    return False
