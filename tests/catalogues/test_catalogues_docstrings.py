"""Docstrings read for a tool: the first paragraph, and each style's parameter section."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from toolrouting._catalogues.docstrings import Docstring, parse_docstring


def test_google_style_with_types_continuations_and_stars() -> None:
    doc = inspect.cleandoc(
        """Search the notes
        by their words.

        More text, not the description.

        Args:
            query (str): Words to look for.
            limit: At most this many
                results.
            **filters: Field equals value.
            silent:

        Returns:
            The matching notes.
        """
    )
    assert parse_docstring(doc) == Docstring(
        summary="Search the notes by their words.",
        parameters={
            "query": "Words to look for.",
            "limit": "At most this many results.",
            "filters": "Field equals value.",
        },
    )


def test_numpy_style_ends_at_the_next_underlined_header() -> None:
    doc = inspect.cleandoc(
        """Add two numbers.

        Parameters
        ----------
        a : int
            The first.

        b : float
            The second
            number.

        Returns
        -------
        float
            Not a parameter.
        """
    )
    assert parse_docstring(doc).parameters == {"a": "The first.", "b": "The second number."}


@pytest.mark.parametrize(
    ("doc", "summary"),
    [
        ("", ""),
        ("One line.", "One line."),
        ("Args:\n    a: first.", ""),
        ("Stops at a section.\nReturns:\n    x", "Stops at a section."),
    ],
)
def test_the_summary_is_the_first_paragraph_up_to_a_section(doc: str, summary: str) -> None:
    assert parse_docstring(doc).summary == summary


def test_a_docstring_without_a_parameter_section_describes_no_parameter() -> None:
    assert parse_docstring("Do it.\n\n    a: not a section, only text.").parameters == {}


def test_a_parse_is_a_frozen_keyword_only_value() -> None:
    parsed = parse_docstring("Do it.")
    with pytest.raises(dataclasses.FrozenInstanceError):
        parsed.summary = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        Docstring("x", {})  # type: ignore[call-arg]
