"""The two halves of the type-hint mapping agree: a value fits a hint's schema exactly when it converts."""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Annotated, Any, Literal, Optional

import pytest
from hypothesis import given
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from toolrouting._catalogues.type_schema import Mismatch, converted, schema_of


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


HINTS: list[Any] = [
    str,
    int,
    float,
    bool,
    None,
    Any,
    list[int],
    tuple[str, ...],
    set[int],
    Sequence[bool],
    dict[str, float],
    Optional[int],  # noqa: UP045 (the spelling under test)
    int | str,
    Literal[1, 2],
    Literal["x", 1, True],
    Colour,
    Annotated[list[str] | None, "tags"],
    dict[str, list[int | None]],
]

# A float with no fraction is an integer to JSON Schema but a float to the conversion, and
# an int past a float's range is a number the conversion cannot make a float; a grammar
# writes neither for these hints, so the values leave them out.
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
    | st.sampled_from(["red", "blue", "x", ""])
    | st.text(max_size=4)
)
values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3),
    max_leaves=8,
)


VALIDATORS = [(hint, Draft202012Validator(schema_of(hint, {}))) for hint in HINTS]


@given(value=values)
def test_a_value_converts_exactly_when_the_schema_takes_it(value: Any) -> None:
    for hint, validator in VALIDATORS:
        valid = validator.is_valid(value)
        try:
            converted(value, hint, "v")
        except Mismatch:
            assert not valid, f"{value!r} fits the schema of {hint!r} but does not convert"
        else:
            assert valid, f"{value!r} converts to {hint!r} but the schema refuses it"


def test_conversion_gives_the_hinted_python_types() -> None:
    assert converted([1, 2, 1], set[int], "v") == {1, 2}
    assert converted(["a"], tuple[str, ...], "v") == ("a",)
    assert converted(2, float, "v") == 2.0
    assert type(converted(2, float, "v")) is float
    assert converted("blue", Colour, "v") is Colour.BLUE


def test_a_mismatch_names_the_place_and_the_kind_never_the_value() -> None:
    with pytest.raises(Mismatch, match=r"^v\.k\[1\] should be an integer, not a string$"):
        converted({"k": [1, "secret"]}, dict[str, list[int]], "v")


@pytest.mark.parametrize(
    ("hint", "reason"),
    [
        (tuple[int, str], "fixed-length tuple"),
        (dict[int, str], "str keys"),
        (complex, "builtins.complex has no JSON schema here"),
        (Literal[b"x"], "values JSON cannot carry"),
    ],
)
def test_hints_without_a_schema_say_what_to_use(hint: Any, reason: str) -> None:
    with pytest.raises(TypeError, match=reason):
        schema_of(hint, {})
