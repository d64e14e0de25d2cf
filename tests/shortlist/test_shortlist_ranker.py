"""The indexed ranker: each catalogue indexed once, keyed on its bytes; the default, BM25 alone
whatever is installed; the hybrid score of meanings and words on request; the static embeddings
loaded from the installed wheel without the network."""

from __future__ import annotations

import copy
import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pytest
from support.processes import offline_python
from support.ranker_indexes import indexes_built

from toolrouting import CatalogueError, IndexedRanker, bm25_scores, default_ranker, shortlist
from toolrouting._catalogue_checks import checked_catalogue
from toolrouting._shortlist import (
    HYBRID_BM25_WEIGHT,
    embedded_text,
    semantic_missing,
    static_embeddings,
)


def _tool(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": {"type": "object"}},
    }


CATALOGUE = [
    _tool("get_weather", "The current weather for a city. Takes a city name."),
    _tool("send_email", "Send an email to one address."),
    _tool("search_files", "Find files whose name holds some words."),
    _tool("git_status", "Shows the working tree status"),
    _tool("convert_units", "Convert a quantity into another unit."),
]


def _names(tools: Sequence[Mapping[str, Any]]) -> list[str]:
    return [tool["function"]["name"] for tool in tools]


def test_the_default_ranks_by_bm25_alone_though_the_semantic_extra_is_installed() -> None:
    """scripts/setup.sh installs the extra, so the hybrid tests below run; the default is BM25
    all the same, one ranker a process."""
    assert semantic_missing() is None
    ranker = default_ranker()
    assert ranker is default_ranker()
    assert not ranker.semantic
    assert ranker.fallback is None
    assert not IndexedRanker().semantic  # the constructor's default is the default ranker's
    for query in ("Is it going to rain in Lisbon? Send me the weather.", "how hot is it out there?"):
        assert ranker(CATALOGUE, query) == bm25_scores(CATALOGUE, query)
    assert _names(shortlist(CATALOGUE, "mail the files", 2)) == _names(
        shortlist(CATALOGUE, "mail the files", 2, ranker=bm25_scores)
    )


def test_the_hybrid_score_is_the_cosine_plus_the_weighted_share_of_the_best_bm25() -> None:
    ranker = IndexedRanker(semantic=True)
    query = "Is it going to rain in Lisbon? Send me the weather."
    scores = ranker(CATALOGUE, query)
    checked = checked_catalogue(CATALOGUE)
    table = static_embeddings()
    vectors = table.embed([embedded_text(tool) for tool in checked])
    cosines = vectors @ table.embed([query])[0]
    bm25 = bm25_scores(CATALOGUE, query)
    expected = [float(c) + HYBRID_BM25_WEIGHT * b / max(bm25) for c, b in zip(cosines, bm25, strict=True)]
    assert scores == pytest.approx(expected, abs=1e-6)
    assert embedded_text(checked[0]) == "get weather: The current weather for a city"  # the first sentence
    assert np.linalg.norm(vectors, axis=1) == pytest.approx([1.0] * len(CATALOGUE))


def test_a_query_that_shares_no_word_still_ranks_every_tool_by_its_meaning() -> None:
    """BM25 scores every tool 0.0 and the catalogue's order decides; the hybrid scores differ."""
    query = "how hot is it out there?"
    assert bm25_scores(CATALOGUE, query) == [0.0] * len(CATALOGUE)
    scores = IndexedRanker(semantic=True)(CATALOGUE, query)
    assert len(set(scores)) == len(CATALOGUE)
    assert all(-1.0 <= score <= 1.0 for score in scores)


def test_each_catalogue_is_indexed_once_and_a_changed_one_again() -> None:
    ranker = IndexedRanker(semantic=True)
    first = ranker.index(CATALOGUE)
    assert ranker.index(copy.deepcopy(CATALOGUE)) is first  # the same bytes, another object
    assert ranker.index(json.loads(json.dumps(CATALOGUE))) is first
    changed = copy.deepcopy(CATALOGUE)
    changed[2]["function"]["description"] = "Find files whose contents hold some words."
    second = ranker.index(changed)
    assert second is not first
    assert [tool.description for tool in second.tools][2] == "Find files whose contents hold some words."
    reordered = [CATALOGUE[1], CATALOGUE[0], *CATALOGUE[2:]]
    assert ranker.index(reordered) is not first  # scores are in catalogue order: another index
    assert ranker(reordered, "send an email")[0] == ranker(CATALOGUE, "send an email")[1]
    renamed = copy.deepcopy(CATALOGUE)
    renamed[0]["function"]["name"] = "get_forecast"
    assert ranker.index(renamed).tools[0].name == "get_forecast"


def test_the_least_recently_ranked_index_is_dropped_past_the_limit() -> None:
    ranker = IndexedRanker(semantic=False, catalogues=2)
    catalogues = [[_tool(f"tool_{n}_{i}", f"Tool {i} of {n}.") for i in range(3)] for n in range(3)]
    first = ranker.index(catalogues[0])
    ranker.index(catalogues[1])
    assert ranker.index(catalogues[0]) is first  # ranked again: now the most recent
    ranker.index(catalogues[2])  # drops catalogue 1, the least recent
    assert ranker.index(catalogues[0]) is first
    assert "2 of 2 catalogues" in repr(ranker)


def test_a_shortlist_asks_an_index_kept_and_checks_a_catalogue_only_when_it_indexes_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ranker = IndexedRanker(semantic=True)
    assert _names(shortlist(CATALOGUE, "email", 2, ranker=ranker)) == _names(
        shortlist(copy.deepcopy(CATALOGUE), "email", 2, ranker=ranker)
    )
    built = indexes_built(monkeypatch)
    for query in ("email", "files", "weather"):
        shortlist(CATALOGUE, query, 2, ranker=ranker)
    assert built == []
    shortlist([*CATALOGUE, _tool("extra", "One more.")], "email", 2, ranker=ranker)
    assert built == [6]


def test_a_bad_catalogue_is_refused_and_never_indexed() -> None:
    ranker = IndexedRanker(semantic=True)
    with pytest.raises(CatalogueError, match="used twice"):
        shortlist([CATALOGUE[0], CATALOGUE[0], CATALOGUE[1]], "weather", 1, ranker=ranker)
    with pytest.raises(CatalogueError, match="used twice"):
        ranker([CATALOGUE[0], CATALOGUE[0]], "weather")
    with pytest.raises(CatalogueError):
        ranker(
            [{"type": "function", "function": {"name": "x", "parameters": {"minimum": float("nan")}}}], "x"
        )
    with pytest.raises(CatalogueError):
        ranker("not a catalogue", "weather")  # type: ignore[arg-type]
    assert "0 of 8" in repr(ranker)
    with pytest.raises(TypeError, match="a query is a str, not bytes"):
        ranker(CATALOGUE, b"weather")  # type: ignore[arg-type]


def test_bad_options_are_clear_errors() -> None:
    with pytest.raises(TypeError, match="semantic is True, False or None, not str"):
        IndexedRanker(semantic="yes")  # type: ignore[arg-type]
    for catalogues in (0, -1, True, 2.5):
        with pytest.raises(ValueError, match="catalogues is the number of indexes kept"):
            IndexedRanker(catalogues=catalogues)  # type: ignore[arg-type]


def test_the_ranker_answers_threads_at_once_with_the_same_scores() -> None:
    ranker = IndexedRanker(semantic=True, catalogues=1)
    other = [_tool(f"other_{i}", f"Other tool {i}.") for i in range(4)]
    expected = IndexedRanker(semantic=True)(CATALOGUE, "send the weather by email")
    found: list[list[float]] = []
    failed: list[BaseException] = []

    def work() -> None:
        try:
            for _ in range(20):
                found.append(ranker(CATALOGUE, "send the weather by email"))
                ranker(other, "other")  # evicts the catalogue's index, at times mid-query
        except BaseException as error:  # pragma: no cover - reported below
            failed.append(error)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert failed == []
    assert found == [expected] * 80


#: Loads the table in a fresh interpreter with the network refused, ranks, and prints the
#: attempts refused, which must be none.
_OFFLINE = """
import sys
from toolrouting import IndexedRanker, shortlist
ranker = IndexedRanker(semantic=True)
tools = [
    {"type": "function", "function": {"name": f"tool_{i}", "description": f"Tool number {i}."}}
    for i in range(10)
]
print(len(shortlist(tools, "how hot is it in Lisbon?", 3, ranker=ranker)), ranker.semantic)
print("wordllama" in sys.modules, attempts)
"""


def test_the_table_loads_from_the_installed_wheel_with_the_network_refused() -> None:
    done = offline_python(_OFFLINE)
    assert done.returncode == 0, done.stderr
    # Three tools kept, by the hybrid; wordllama's own code never imported; no connection tried.
    assert done.stdout.splitlines() == ["3 True", "False []"]


def test_without_the_extra_none_falls_back_to_bm25_and_asking_for_meanings_names_the_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Fault injection: the extra's packages made to look uninstalled."""
    import importlib.util

    real = importlib.util.find_spec

    def hidden(name: str, *args: Any) -> Any:
        return None if name == "wordllama" else real(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", hidden)
    assert semantic_missing() == "wordllama not installed: pip install 'toolrouting[semantic]'"
    fallback = IndexedRanker(semantic=None)
    assert not fallback.semantic
    assert fallback.fallback == semantic_missing()
    assert fallback(CATALOGUE, "weather email") == bm25_scores(CATALOGUE, "weather email")
    assert "BM25" in repr(fallback)
    with pytest.raises(ImportError, match=r"pip install 'toolrouting\[semantic\]'"):
        IndexedRanker(semantic=True)
