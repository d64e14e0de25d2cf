"""The shortlist: the K tools ranked best for a conversation, in catalogue order, deterministic."""

from __future__ import annotations

import copy
import json
from collections.abc import Mapping, Sequence
from typing import Any

import pytest
from support.hostile_catalogues import HOSTILE

import toolrouting
from toolrouting import CatalogueError, IndexedRanker, Ranker, bm25_scores, shortlist, shortlist_query
from toolrouting._shortlist import query_terms, terms


def _tool(name: str, description: str = "", **properties: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": description,
            "parameters": {"type": "object", "properties": properties},
        },
    }


CATALOGUE = [
    _tool("get_weather", "The current weather for a city.", city={"type": "string"}),
    _tool("send_email", "Send an email to one address.", to={"type": "string"}, body={"type": "string"}),
    _tool("search_files", "Find files whose name holds some words.", query={"type": "string"}),
    _tool("git_status", "Shows the working tree status", repo_path={"type": "string"}),
    _tool(
        "convert_units",
        "Convert a quantity.",
        unit={"type": "string", "description": "The target unit.", "enum": ["celsius", "fahrenheit"]},
    ),
]


def _names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def test_names_are_read_as_words_at_underscores_dots_dashes_and_case_changes() -> None:
    assert list(terms("git_diff_unstaged")) == ["git", "diff", "unstaged"]
    assert list(terms("fs.readFile")) == ["fs", "read", "file"]
    assert list(terms("get-HTTPStatus mp3Player")) == ["get", "http", "status", "mp3", "player"]
    assert list(terms("time__get_current_time")) == ["time", "get", "current", "time"]
    assert query_terms("What is the weather, the weather in Köln?") == ["what", "weather", "köln"]


#: BM25 unindexed, and indexed: the same scores, so every BM25 guarantee holds for both.
BM25_RANKERS = [
    pytest.param(bm25_scores, id="bm25_scores"),
    pytest.param(IndexedRanker(semantic=False), id="indexed"),
]


@pytest.mark.parametrize("bm25", BM25_RANKERS)
def test_a_tool_is_found_by_the_words_of_its_name_description_and_parameters(bm25: Ranker) -> None:
    def best(query: str) -> list[str]:
        return _names(shortlist(CATALOGUE, query, 1, ranker=bm25))

    assert best("weather in Paris") == ["get_weather"]
    assert best("What is the HTTP status of my working tree?") == ["git_status"]
    assert best("my RepoPath please") == ["git_status"]  # a parameter's name
    assert best("in Fahrenheit") == ["convert_units"]  # an enum value
    assert best("the target unit") == ["convert_units"]  # a parameter's text
    assert best("emails") == ["send_email"]  # stemmed


@pytest.mark.parametrize("bm25", BM25_RANKERS)
def test_the_kept_tools_come_in_catalogue_order_and_are_the_callers_declarations(bm25: Ranker) -> None:
    kept = shortlist(CATALOGUE, "status of the email I sent about the weather", 3, ranker=bm25)
    assert _names(kept) == ["get_weather", "send_email", "git_status"]
    assert all(any(tool is given for given in CATALOGUE) for tool in kept)
    for tool in shortlist(CATALOGUE, "status of the email I sent about the weather", 3):  # the default's
        assert any(tool is given for given in CATALOGUE)


@pytest.mark.parametrize("bm25", BM25_RANKERS)
def test_ranking_is_deterministic_and_ties_go_to_the_earlier_tool(bm25: Ranker) -> None:
    scores = bm25(CATALOGUE, "weather email")
    assert (
        scores == bm25(copy.deepcopy(CATALOGUE), "weather email") == bm25_scores(CATALOGUE, "weather email")
    )
    assert _names(shortlist(CATALOGUE, "nothing here matches", 2, ranker=bm25)) == [
        "get_weather",
        "send_email",
    ]
    twins = [_tool(f"twin_{i}", "Read the notes.") for i in range(6)]
    assert _names(shortlist(twins, "read notes", 3, ranker=bm25)) == ["twin_0", "twin_1", "twin_2"]
    assert _names(shortlist(list(reversed(twins)), "read notes", 3, ranker=bm25)) == [
        "twin_5",
        "twin_4",
        "twin_3",
    ]


def test_a_tool_sharing_no_word_scores_zero_and_a_matching_one_more() -> None:
    scores = bm25_scores(CATALOGUE, "weather")
    assert scores[0] > 0
    assert scores[1:] == [0.0] * 4
    assert bm25_scores(CATALOGUE, "") == [0.0] * 5
    assert bm25_scores(CATALOGUE, "the and of") == [0.0] * 5  # stop words alone


def test_a_catalogue_no_larger_than_k_comes_back_whole_and_unchanged() -> None:
    before = json.dumps(CATALOGUE)

    def refuse(tools: Sequence[Mapping[str, Any]], query: str) -> list[float]:
        raise AssertionError("no ranker is asked when every tool is kept")

    for k in (5, 6, 1000):
        kept = shortlist(CATALOGUE, "anything", k, ranker=refuse)
        assert kept == CATALOGUE
        assert all(a is b for a, b in zip(kept, CATALOGUE, strict=True))
    assert shortlist([], "anything", 8) == []
    assert json.dumps(CATALOGUE) == before


def test_a_replaced_ranker_is_used() -> None:
    asked: list[tuple[int, str]] = []

    def last_first(tools: Sequence[Mapping[str, Any]], query: str) -> list[float]:
        asked.append((len(tools), query))
        return [float(i) for i in range(len(tools))]

    ranker: Ranker = last_first
    assert _names(shortlist(CATALOGUE, "weather", 2, ranker=ranker)) == ["git_status", "convert_units"]
    assert asked == [(5, "weather")]


@pytest.mark.parametrize(
    ("scores", "error", "message"),
    [
        ([1.0, 2.0], ValueError, "5 tools, 2 scores"),
        ([1.0, 2.0, float("nan"), 0.0, 0.0], TypeError, "float nan"),
        ([1.0, 2.0, "3", 0.0, 0.0], TypeError, "str '3'"),
        ([True] * 5, TypeError, "bool True"),
        ("12345", TypeError, "not str"),
        (None, TypeError, "not NoneType"),
    ],
)
def test_a_ranker_that_answers_badly_is_a_clear_error(
    scores: Any, error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        shortlist(CATALOGUE, "weather", 2, ranker=lambda tools, query: scores)


@pytest.mark.parametrize(
    ("k", "error", "message"),
    [
        (0, ValueError, "at least 1, not 0"),
        (-3, ValueError, "at least 1, not -3"),
        (2.0, TypeError, "an int, not float"),
        (True, TypeError, "an int, not bool"),
        ("8", TypeError, "an int, not str"),
        (None, TypeError, "an int, not NoneType"),
    ],
)
def test_a_bad_k_is_a_clear_error(k: Any, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        shortlist(CATALOGUE, "weather", k)


def test_the_query_is_the_question_and_the_results_read_not_the_instructions_nor_the_routes() -> None:
    messages = [
        {"role": "system", "content": "You route. get_weather send_email"},
        {"role": "user", "content": "Is it raining in Oslo?"},
        {"role": "assistant", "content": '{"tool": "search_files", "arguments": {"query": "oslo"}}'},
        {"role": "user", "content": "Tool result for search_files (call route-1):\noslo-forecast.txt"},
        {"role": "tool", "content": "umbrella advised"},
    ]
    assert shortlist_query(messages) == "Is it raining in Oslo?\noslo-forecast.txt\numbrella advised"
    # "forecast" is nowhere else
    assert _names(shortlist(CATALOGUE, messages, 1, ranker=bm25_scores)) == ["get_weather"]
    assert shortlist_query([]) == ""


@pytest.mark.parametrize(
    ("messages", "message"),
    [
        ("hello", "a list of messages, not str"),
        ({"role": "user"}, "a list of messages, not dict"),
        ([["user", "hi"]], "message 0 is a mapping"),
        (
            [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
            "message 0's content is text, not list",
        ),
    ],
)
def test_a_conversation_of_the_wrong_shape_is_a_clear_error(messages: Any, message: str) -> None:
    with pytest.raises(TypeError, match=message):
        shortlist_query(messages)


def test_a_bad_catalogue_is_the_catalogue_error_of_the_checks() -> None:
    with pytest.raises(CatalogueError, match="used twice"):
        shortlist([CATALOGUE[0], CATALOGUE[0], CATALOGUE[1]], "weather", 1)
    with pytest.raises(CatalogueError):
        bm25_scores([{"type": "function"}], "weather")


@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_catalogues_are_ranked_or_refused_by_the_catalogue_checks(name: str) -> None:
    """Each hostile catalogue, beside two plain tools and with K below its size, so the ranker
    runs: a shortlist, or the checks' CatalogueError, never another exception."""
    _, build = HOSTILE[name]
    hostile = build()
    tools = [*hostile, *CATALOGUE[:2]] if isinstance(hostile, list) else hostile
    try:
        kept = shortlist(tools, "weather t x p1 a", 1)
    except CatalogueError:
        return
    assert len(kept) == 1
    assert kept[0] in tools


def test_the_shortlist_names_are_exported_at_the_top() -> None:
    for name in ("IndexedRanker", "Ranker", "bm25_scores", "default_ranker", "shortlist", "shortlist_query"):
        assert name in toolrouting.__all__
