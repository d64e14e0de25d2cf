"""The second signal: how well a question fits the chosen tool against the other tools and ``none``.

The arithmetic of :func:`fit_of_scores` (rank, the best other tool, the margin), and
:func:`tool_fit` over a real ranker's index (BM25, whose scores are the same on every machine):
the tool a question names fits it best, a look-alike chosen in its place has a negative margin,
and a question no tool answers fits ``none`` as well as or better than any tool. What is
asserted is the ranker's arithmetic on fixed texts, never a model's choice.
"""

from __future__ import annotations

from typing import Any

import pytest

from toolrouting import CatalogueError
from toolrouting._shortlist import NONE_TEXT, IndexedRanker, fit_of_scores, tool_fit


def _tool(name: str, description: str, **properties: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {"type": "function", "function": {"name": name, "description": description, "parameters": schema}}


AREAS = [
    _tool("circle_area", "The area of a circle from its radius.", radius={"type": "number"}),
    _tool("triangle_area", "The area of a triangle from its base and height.", base={"type": "number"}),
    _tool("get_weather", "The weather forecast for a city.", city={"type": "string"}),
]
BM25 = IndexedRanker(semantic=False)


def test_the_margin_is_the_chosen_score_less_the_best_of_the_others_and_none() -> None:
    fit = fit_of_scores(["a", "b", "c"], [2.0, 5.0, 1.0], "a", 0.5)
    assert (fit.rank, fit.best_other, fit.best_other_score, fit.margin) == (2, "b", 5.0, -3.0)
    fit = fit_of_scores(["a", "b"], [4.0, 1.0], "a", 3.0)
    assert (fit.rank, fit.margin) == (1, 1.0)  # none is the nearest rival
    alone = fit_of_scores(["a"], [1.0], "a", 3.0)
    assert (alone.rank, alone.best_other, alone.margin) == (1, None, -2.0)
    assert fit_of_scores(["a", "b"], [1.0, 1.0], "b", 0.0).rank == 1  # a tie goes to the chosen


def test_bad_arguments_are_refused_naming_what_is_wrong() -> None:
    with pytest.raises(ValueError, match="one score a tool"):
        fit_of_scores(["a"], [1.0, 2.0], "a", 0.0)
    with pytest.raises(ValueError, match="'x' is not in the catalogue"):
        fit_of_scores(["a"], [1.0], "x", 0.0)
    with pytest.raises(ValueError, match="not in the catalogue"):
        tool_fit(AREAS, "circle", "nope", ranker=BM25)
    with pytest.raises(CatalogueError):
        tool_fit([{"type": "function", "function": {"name": ""}}], "circle", "x", ranker=BM25)


def test_the_tool_a_question_names_fits_best_and_a_look_alike_has_a_negative_margin() -> None:
    question = "What is the area of a circle of radius 5?"
    right = tool_fit(AREAS, question, "circle_area", ranker=BM25)
    wrong = tool_fit(AREAS, question, "triangle_area", ranker=BM25)
    assert (right.rank, right.best_other) == (1, "triangle_area")
    assert right.margin > 0
    assert (wrong.rank, wrong.best_other) == (2, "circle_area")
    assert wrong.margin < 0


def test_a_question_no_tool_answers_fits_none_as_well_as_the_tool() -> None:
    chat = tool_fit(AREAS, "What is your opinion of modern art? Any advice?", "get_weather", ranker=BM25)
    assert chat.score == 0.0  # it shares no word with the tool
    assert chat.none_score > 0.0  # and words with answering directly
    assert chat.margin < 0
    asked = tool_fit(
        AREAS, "Will it rain in Paris? The weather forecast, please.", "get_weather", ranker=BM25
    )
    assert asked.margin > 0
    assert asked.score > asked.none_score


def test_none_joins_the_catalogue_under_a_name_no_tool_holds() -> None:
    clash = [*AREAS, _tool("answer_without_a_tool", "Send a fax.", number={"type": "string"})]
    fit = tool_fit(clash, "Send a fax to this number", "answer_without_a_tool", ranker=BM25)
    assert (fit.tool, fit.rank) == ("answer_without_a_tool", 1)
    assert "without calling a tool" in NONE_TEXT


def test_the_default_ranker_and_a_replaced_one_are_asked_alike() -> None:
    seen: list[int] = []

    def flat(tools: Any, query: str, /) -> list[float]:
        seen.append(len(tools))
        return [1.0] * len(tools)

    fit = tool_fit(AREAS, "anything", "circle_area", ranker=flat)
    assert (seen, fit.rank, fit.margin) == ([4], 1, 0.0)  # the three tools and none
    assert tool_fit(AREAS, "circle radius", "circle_area").rank == 1  # the process's default ranker
