"""Grounding: a required argument is grounded when the conversation gives its value, however written.

One test per rule of normalisation (numbers and number words, magnitudes, dates and times,
case and punctuation, lists element by element, texts by their words), which arguments are
checked, what counts as the conversation, when the ``grounding`` policy abstains (half of a
call's checked arguments ungrounded), and what grounding cannot see: values a model derives
rightly that the conversation never writes.
"""

from __future__ import annotations

import datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from toolrouting._grounding import (
    ABSTAIN_SHARE,
    Evidence,
    abstention,
    checked_arguments,
    conversation_evidence,
    grounding,
)

_NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen"
_NUMBER_WORDS += " fifteen sixteen seventeen eighteen nineteen"
_ONES = _NUMBER_WORDS.split(" ")
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def _spelled(number: int) -> str:
    """``number`` in English words, as a user writes it: "three hundred and six", "twenty-five"."""
    if number < 20:
        return _ONES[number]
    if number < 100:
        tens, ones = divmod(number, 10)
        return _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")
    for size, word in ((1_000_000, "million"), (1_000, "thousand"), (100, "hundred")):
        if number >= size:
            high, low = divmod(number, size)
            rest = "" if not low else (" and " if low < 100 else " ") + _spelled(low)
            return f"{_spelled(high)} {word}{rest}"
    raise AssertionError(number)


def _grounded(value: Any, text: str, schema: dict[str, Any] | None = None) -> bool:
    """Whether ``value``, the one required argument of a tool, is grounded by a user's ``text``."""
    parameters = {"type": "object", "properties": {"x": schema or {}}, "required": ["x"]}
    evidence = conversation_evidence([{"role": "user", "content": text}])
    return grounding("tool", {"x": value}, parameters, evidence).grounded


# Numbers and number words.


@given(st.integers(min_value=0, max_value=10**9))
def test_a_number_in_digits_grounds_the_same_number(number: int) -> None:
    assert _grounded(number, f"Make it {number} please.")
    assert _grounded(number, f"Make it {number:,} please.")  # with thousands separators
    assert _grounded(float(number), f"Make it {number}.")
    assert not _grounded(number + 1, f"Make it {number} please.")


@given(st.integers(min_value=0, max_value=999_999_999))
def test_a_number_in_words_grounds_the_number(number: int) -> None:
    assert _grounded(number, f"I need {_spelled(number)} of them.")
    assert _grounded(str(number), f"I need {_spelled(number)} of them.")


def test_number_words_alone_and_in_ordinals() -> None:
    assert _grounded(12, "Buy a dozen eggs.")
    assert _grounded(0.5, "Take half of it.")
    assert _grounded(3, "The third item.")
    assert _grounded(21, "On the 21st.")
    assert not _grounded(7, "three and four")  # two numbers, not their sum


def test_a_sign_is_the_models_reading_and_a_fraction_matches_to_its_last_digits() -> None:
    assert _grounded(-5, "Solve 3x^2 - 2x - 5 = 0.")
    assert _grounded(0.1 + 0.2, "Add 0.3 to it.")


# Magnitudes and percentages.


@given(st.integers(min_value=1, max_value=999), st.sampled_from([("k", 10**3), ("M", 10**6), ("B", 10**9)]))
def test_a_magnitude_grounds_the_number_it_stands_for(mantissa: int, suffix: tuple[str, int]) -> None:
    letter, scale = suffix
    assert _grounded(mantissa * scale, f"A budget of ${mantissa}{letter}.")
    assert _grounded(mantissa * scale, f"A budget of {mantissa}{letter}.")
    assert _grounded(f"${mantissa}{letter}", f"A budget of {mantissa}{letter}.")


def test_magnitudes_in_words_and_percentages() -> None:
    assert _grounded(1_500_000, "about 1.5 million people")
    assert _grounded(1_000_000, "Invest $1M in it.")
    assert _grounded(2000, "Two thousand steps.")
    assert _grounded(0.05, "at 5% interest")
    assert _grounded(5, "at 5% interest")
    assert not _grounded(5000, "5 km away")  # "k" is no magnitude inside a unit


# Dates and times.

_FORMS = (
    "{d:%B} {d.day}, {d.year}",
    "{d.day} {d:%B} {d.year}",
    "{d:%b} {d.day} {d.year}",
    "{d:%Y-%m-%d}",
    "{d.month}/{d.day}/{d.year}",
    "the {d.day}th of {d:%B}, {d.year}",
)


@given(
    st.dates(min_value=datetime.date(1900, 1, 1), max_value=datetime.date(2100, 12, 31)),
    st.sampled_from(_FORMS),
)
def test_a_date_in_a_common_form_grounds_the_same_day(day: datetime.date, form: str) -> None:
    text = f"What happened on {form.format(d=day)}?"
    assert _grounded(day.isoformat(), text)
    assert _grounded(f"{day.isoformat()}T00:00:00Z", text)
    assert _grounded(f"{day:%B} {day.day}, {day.year}", text)
    other = day + datetime.timedelta(days=1)
    assert not _grounded(other.isoformat(), text)


def test_a_date_in_digits_is_read_both_ways_and_a_month_may_run_into_its_day() -> None:
    assert _grounded("10/12/2022", "starting from 10th December 2022")  # day first
    assert _grounded("12/10/2022", "starting from 10th December 2022")  # month first
    assert _grounded("2022-03-11", "at closing March.11, 2022")


def test_a_date_without_its_year_grounds_any_year_and_a_month_grounds_no_day() -> None:
    assert _grounded("2019-12-13", "Book it for December 13.")
    assert _grounded("2019-12", "Book it for December 13, 2019.")  # less precise: grounded
    assert not _grounded("2019-12-13", "Book it for December 2019.")  # a day never named


@given(st.integers(min_value=0, max_value=23), st.integers(min_value=0, max_value=59))
def test_a_time_in_twelve_or_twenty_four_hours_grounds_the_same_time(hour: int, minute: int) -> None:
    half = "am" if hour < 12 else "pm"
    twelve = hour % 12 or 12
    assert _grounded(f"{hour:02d}:{minute:02d}", f"Meet at {twelve}:{minute:02d} {half}.")
    assert _grounded(f"{hour:02d}:{minute:02d}:00", f"Meet at {hour}:{minute:02d}.")
    later = (hour + 1) % 24
    assert not _grounded(f"{later:02d}:{minute:02d}", f"Meet at {twelve}:{minute:02d} {half}.")


def test_named_times() -> None:
    assert _grounded("12:00", "Lunch at noon.")
    assert _grounded("15:00", "at 3pm")


# Case and punctuation.

_PLACE = ["sao", "paulo", "new", "york", "grand", "canyon", "eiffel", "tower"]


@given(
    st.lists(st.sampled_from(_PLACE), min_size=1, max_size=4),
    st.sampled_from([" ", "-", "_", ", ", ". "]),
    st.randoms(),
)
def test_case_accents_and_punctuation_do_not_matter(words: list[str], separator: str, rng: Any) -> None:
    written = separator.join("".join(c.upper() if rng.random() < 0.5 else c for c in w) for w in words)
    assert _grounded(written, f"Tell me about {' '.join(words)}!")
    assert _grounded(" ".join(words).title(), f"Tell me about {written}!")


def test_accents_plurals_and_identifiers() -> None:
    assert _grounded("Sao Paulo", "What is the weather in São Paulo?")
    assert _grounded("apple stock", "Show me Apple's stocks")
    assert _grounded("city", "Which cities are near?")
    assert _grounded("firstName", "Sort by first name.")
    assert _grounded("newyork", "Flights to New York")  # one word for two


def test_word_forms_meet() -> None:
    assert _grounded("detailed", "Give me detail information.")
    assert _grounded("baking", "What can I bake?")
    assert _grounded("stopped", "Which trains stop here?")


def test_an_abbreviation_and_a_longer_form_are_grounded_by_the_word() -> None:
    assert _grounded("EUR", "Convert 150 euros.")
    assert _grounded("info", "Give me information on it.")
    assert _grounded("Germany", "Key events in German history")
    assert not _grounded("eu", "Convert 150 euros.")  # two letters would begin any long text's words
    assert not _grounded("Gerald", "Key events in German history")


def test_an_initialism_is_grounded_by_the_words_it_stands_for() -> None:
    assert _grounded(["email", "ssn"], "Remove their email addresses and social security numbers.")
    assert _grounded("NYC", "Flights to New York City")
    assert _grounded("USA", "the United States of America")  # stop words passed over
    assert not _grounded("SF", "San Francisco")  # two letters would be found in any long text


# Lists element by element, and objects by their properties.


@given(st.lists(st.integers(min_value=0, max_value=10_000), min_size=1, max_size=6))
def test_a_list_is_grounded_element_by_element(numbers: list[int]) -> None:
    text = f"Point A({','.join(map(str, numbers))})"
    schema = {"type": "array", "items": {"type": "integer"}}
    assert _grounded(numbers, text, schema)
    assert not _grounded([*numbers, 10_001], text, schema)


def test_a_list_of_texts_and_an_object() -> None:
    assert _grounded(
        ["Paris", "Rome"], "Compare Paris and Rome.", {"type": "array", "items": {"type": "string"}}
    )
    assert not _grounded(["Paris", "Berlin"], "Compare Paris and Rome.")
    place = {"type": "object", "properties": {"city": {"type": "string"}, "metric": {"type": "boolean"}}}
    assert _grounded({"city": "Paris", "metric": True}, "Weather in Paris", place)
    assert not _grounded({"city": "Lyon", "metric": True}, "Weather in Paris", place)


# Texts by their words.


def test_a_text_is_grounded_by_the_share_of_its_words_the_conversation_holds() -> None:
    assert _grounded("San Francisco, CA", "Weather in San Francisco")  # 2 of 3 words
    assert not _grounded("Los Angeles, CA", "Weather in San Francisco")
    assert _grounded("the", "the")  # a value of stop words alone is compared as it is
    assert _grounded("", "anything")  # an empty text invents nothing


def test_formulas_meet_the_question_letter_by_letter_and_digit_by_digit() -> None:
    assert _grounded("3x**2 + 2x - 1", "Find the derivative of 3x^2 + 2x - 1.")


# Which arguments are checked.


def test_only_required_arguments_without_a_default_and_not_a_closed_choice_are_checked() -> None:
    parameters = {
        "type": "object",
        "properties": {
            "city": {"type": "string"},
            "days": {"type": "integer", "default": 3},
            "unit": {"type": "string", "enum": ["c", "f"]},
            "kind": {"const": "daily"},
            "hourly": {"type": "boolean"},
            "note": {"type": "string"},
        },
        "required": ["city", "days", "unit", "kind", "hourly"],
    }
    assert checked_arguments(parameters) == ["city"]
    found = grounding(
        "get_weather", {"days": 9, "unit": "f", "kind": "daily", "hourly": True}, parameters, Evidence.of([])
    )
    assert found.checked == ()  # an argument left out invented nothing
    assert found.grounded
    assert checked_arguments({"type": "object"}) == []


def test_the_reason_names_the_tool_and_what_is_missing() -> None:
    parameters = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city", "days"],
    }
    evidence = conversation_evidence([{"role": "user", "content": "Will it rain?"}])
    found = grounding("get_weather", {"city": "Paris", "days": 3}, parameters, evidence)
    assert [item.argument for item in found.ungrounded] == ["city", "days"]
    assert [item.kind for item in found.ungrounded] == ["words", "number"]
    assert found.share == 1.0
    assert found.reason() == "get_weather needs city and days, which the conversation does not give"
    assert found.ungrounded[1].missing == "the number 3"


# When the policy abstains.


def test_grounding_abstains_when_half_of_a_calls_checked_arguments_are_ungrounded() -> None:
    parameters = {
        "type": "object",
        "properties": {name: {"type": "string"} for name in ("origin", "destination", "airline")},
        "required": ["origin", "destination", "airline"],
    }
    evidence = conversation_evidence([{"role": "user", "content": "A flight from Oslo to Rome, please."}])

    def held(**arguments: str) -> tuple[str, ...] | None:
        found = abstention("grounding", [("book", arguments, parameters)], evidence)
        assert abstention("off", [("book", arguments, parameters)], evidence) is None
        return None if found is None else found.arguments

    assert ABSTAIN_SHARE == 0.5
    assert held(origin="Oslo", destination="Rome", airline="SAS") is None  # one of three
    assert held(origin="Oslo", destination="Paris", airline="SAS") == ("destination", "airline")
    assert held(origin="Bergen") == ("origin",)  # one of one checked: the arguments left out are not
    assert held() is None  # nothing filled, nothing invented
    one = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    calls = [("book", {"origin": "Oslo"}, parameters), ("get_weather", {"city": "Lima"}, one)]
    found = abstention("grounding", calls, evidence)
    assert found is not None
    assert (found.tool, found.reason) == (
        "get_weather",
        "get_weather needs city, which the conversation does not give",
    )


# What counts as the conversation.


def test_the_evidence_is_the_users_and_the_system_and_the_results_never_the_models_actions() -> None:
    messages = [
        {"role": "system", "content": "The user lives in Oslo."},
        {"role": "user", "content": "Find my orders."},
        {"role": "assistant", "content": '{"tool":"search","arguments":{"query":"Bergen"}}'},
        {"role": "user", "content": 'Tool result for search (call route-7):\n{"ids":["A17","B22"]}'},
    ]
    evidence = conversation_evidence(messages)
    assert _in(evidence, "Oslo")
    assert _in(evidence, "A17")
    assert _in(evidence, "orders")
    assert not _in(evidence, "Bergen")  # the model's own earlier argument
    assert 7 not in evidence.numbers  # the result's header, call route-7, is not the result


def test_ids_a_search_listed_ground_the_next_call() -> None:
    parameters = {
        "type": "object",
        "properties": {"ids": {"type": "array", "items": {"type": "string"}}},
        "required": ["ids"],
    }
    asked = [{"role": "user", "content": "Read the note on the latch."}]
    listed = [
        *asked,
        {
            "role": "user",
            "content": 'Tool result for memory_search (call route-1):\n{"records":[{"id":"M4"}]}',
        },
    ]
    assert not grounding("memory_read", {"ids": ["M4"]}, parameters, conversation_evidence(asked)).grounded
    assert grounding("memory_read", {"ids": ["M4"]}, parameters, conversation_evidence(listed)).grounded


def _in(evidence: Evidence, text: str) -> bool:
    return grounding("t", {"x": text}, {"properties": {"x": {}}, "required": ["x"]}, evidence).grounded


# What grounding cannot see: values a model derives rightly, which the conversation never writes.


def test_derived_values_read_as_ungrounded() -> None:
    assert not _grounded(10, "Sales over the past decade")  # 10 years
    assert not _grounded("New York City", "Weather in NYC")  # an abbreviation expanded
    assert not _grounded("2024-05-02", "Remind me tomorrow")  # a relative date
    assert not _grounded(5000, "5 km away", {"type": "integer", "description": "metres"})  # a unit converted


def test_a_given_value_in_the_wrong_tool_reads_as_grounded() -> None:
    # The question names a base and a height; a body-mass tool filled with them invents nothing.
    assert _grounded(10, "The area of a triangle with base 10 and height 5")
