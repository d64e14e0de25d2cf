"""The demo memory store: real SQLite with FTS5, its narrowing catalogue, and hostile queries."""

from __future__ import annotations

import concurrent.futures
import json
import re
import sqlite3
from pathlib import Path

import jsonschema
import pytest
from hypothesis import given
from hypothesis import strategies as st

from toolrouting import route_schema
from toolrouting._errors import MemoryStoreError
from toolrouting._limits import (
    MEMORY_QUERY_CHARS,
    MEMORY_SEARCH_RESULTS,
    MEMORY_TITLES_LISTED,
    SHOWN_NAME_CHARS,
    SHOWN_VALUE_CHARS,
)
from toolrouting._provider import RestorableToolProvider, ToolOutput, ToolProvider
from toolrouting.demo.store import MemoryStore, sample_notes

QUESTION = "What does the latch on the storage-room door do?"


def _records(output: ToolOutput) -> list[dict[str, str]]:
    assert not output.is_error, output.content
    records: list[dict[str, str]] = json.loads(output.content)["records"]
    return records


def test_the_sample_notes_answer_the_sample_question() -> None:
    notes = sample_notes()
    assert 5 <= len(notes) <= 8
    with MemoryStore.sample() as store:
        assert isinstance(store, ToolProvider)
        assert isinstance(store, RestorableToolProvider)  # its catalogue grows with its calls
        found = store.search(QUESTION)
        assert found[0] == ("M4", "The storage-room latch")
        (note,) = store.read(["M4"])
        assert "locks the door by itself" in note[2]


def test_search_lists_ids_and_titles_and_read_returns_the_text() -> None:
    store = MemoryStore.sample()
    records = _records(store.call("memory_search", {"query": "latch"}))
    assert records == [{"id": "M4", "title": "The storage-room latch"}]
    read = _records(store.call("memory_read", {"ids": ["M4"]}))
    assert read[0]["id"] == "M4"
    assert read[0]["text"].startswith("The latch on the storage-room door is a spring latch")


def test_search_stems_and_ranks_and_bounds_its_results() -> None:
    store = MemoryStore.sample()
    assert store.search("latches")[0][0] == "M4"  # porter stemming
    assert len(store.search("the a on of to and is it")) <= MEMORY_SEARCH_RESULTS
    assert [id for id, _ in store.search("radio_check channel")][:1] == ["M3"]


def test_memory_read_is_offered_only_after_a_search_and_only_with_listed_ids() -> None:
    store = MemoryStore.sample()
    assert [t["function"]["name"] for t in store.tools_for_llm()] == ["memory_search"]
    store.call("memory_search", {"query": "nothing matches zzzz"})
    assert len(store.tools_for_llm()) == 1  # an empty search hands out nothing
    store.call("memory_search", {"query": "key"})
    store.call("memory_search", {"query": "latch"})
    tools = store.tools_for_llm()
    assert [t["function"]["name"] for t in tools] == ["memory_read"]  # read what was found first
    ids = tools[0]["function"]["parameters"]["properties"]["ids"]
    assert ids["items"]["enum"] == list(store.listed)
    assert "M4" in store.listed
    assert len(set(store.listed)) == len(store.listed)
    # The narrowed catalogue is a valid schema whose grammar admits exactly the listed ids.
    schema = route_schema(tools)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"tool": "memory_read", "arguments": {"ids": ["M4"]}})
    assert not validator.is_valid({"tool": "memory_read", "arguments": {"ids": ["M99"]}})
    assert not validator.is_valid({"tool": "memory_read", "arguments": {"ids": []}})
    fresh = jsonschema.Draft202012Validator(route_schema(MemoryStore.sample().tools_for_llm()))
    assert fresh.is_valid({"tool": "memory_search", "arguments": {"query": "x" * MEMORY_QUERY_CHARS}})
    assert not fresh.is_valid(
        {"tool": "memory_search", "arguments": {"query": "x" * (MEMORY_QUERY_CHARS + 1)}}
    )


def test_search_comes_back_once_every_listed_note_was_read() -> None:
    store = MemoryStore.sample()
    store.call("memory_search", {"query": "latch"})
    assert [t["function"]["name"] for t in store.tools_for_llm()] == ["memory_read"]
    assert not store.call("memory_read", {"ids": list(store.listed)}).is_error
    assert [t["function"]["name"] for t in store.tools_for_llm()] == ["memory_search", "memory_read"]
    store.call("memory_search", {"query": "key"})
    names = [t["function"]["name"] for t in store.tools_for_llm()]
    assert names == (["memory_read"] if len(store.listed) > 1 else ["memory_search", "memory_read"])


def test_restore_lists_and_opens_again() -> None:
    first = MemoryStore.sample()
    search = first.call("memory_search", {"query": "latch"})
    read = first.call("memory_read", {"ids": list(first.listed)})
    resumed = MemoryStore.sample()
    resumed.restore([("memory_search", {"query": "latch"}, search)])
    assert [t["function"]["name"] for t in resumed.tools_for_llm()] == ["memory_read"]
    resumed.restore([("memory_read", {"ids": list(first.listed)}, read)])
    assert resumed.tools_for_llm() == first.tools_for_llm()


#: Every note holds the word "and", and the latch note the word "door".
EVERY_NOTE = ["M4", "M5", "M3", "M2", "M1"]


@pytest.mark.parametrize(
    ("query", "found"),
    [
        ('latch"', ["M4"]),
        ("latch AND", EVERY_NOTE),  # "and" as a word, not FTS5's operator
        ("NEAR(latch door", ["M4"]),
        ("*", []),
        ("title:latch", ["M4"]),  # the words "title" and "latch", not a column filter
        ('"unbalanced', []),
        ("OR OR OR", []),  # no note has the word "or"; as syntax it would be an error
        ("^latch", ["M4"]),
        ("latch -door", ["M4"]),  # "door" is a word to match, not one to exclude
        ("", []),
        ("   ", []),
        ("!!!", []),
        ("\x00", []),
        ("ü" * 200, []),
        ("word " * 500, []),
    ],
)
def test_fts5_syntax_in_a_query_is_only_text(query: str, found: list[str]) -> None:
    store = MemoryStore.sample()
    records = _records(store.call("memory_search", {"query": query}))
    assert [record["id"] for record in records] == found
    # The same as searching for the query's words alone: the syntax around them adds nothing.
    words = " ".join(re.findall(r"[^\W_]+", query))
    assert [id for id, _ in store.search(words)] == found


@given(st.text(max_size=200))
def test_no_query_crashes_the_search(query: str) -> None:
    store = MemoryStore.sample()
    records = _records(store.call("memory_search", {"query": query}))
    assert len(records) <= MEMORY_SEARCH_RESULTS


@pytest.mark.parametrize(
    ("name", "arguments", "expected"),
    [
        ("memory_search", {}, "memory_search takes"),
        ("memory_search", {"query": 3}, "memory_search takes"),
        ("memory_search", {"query": "x", "limit": 9}, "memory_search takes"),
        ("memory_read", {"ids": []}, "memory_read takes"),
        ("memory_read", {"ids": "M1"}, "memory_read takes"),
        ("memory_read", {"ids": ["M1", "M404"]}, 'no note has the id "M404"'),
        ("memory_read", {"ids": [{"id": "M1"}]}, "no note has the id"),
        ("memory_write", {}, 'there is no tool "memory_write"'),
    ],
)
def test_bad_arguments_are_tool_errors(name: str, arguments: dict[str, object], expected: str) -> None:
    # A server that ignores the schema lets such arguments through; the store answers, never raises.
    output = MemoryStore.sample().call(name, arguments)
    assert output.is_error
    assert expected in output.content


def test_what_the_model_sent_is_quoted_bounded_in_a_tool_error() -> None:
    store = MemoryStore.sample()
    unknown = store.call("memory_write" + "x" * 500, {}).content
    assert unknown == f"there is no tool {json.dumps('memory_write' + 'x' * (SHOWN_NAME_CHARS - 12))}… here"
    ids = ["M404", "Z" * 500, 7, None, "M9", "M10"]
    missing = store.call("memory_read", {"ids": ids}).content
    long_id = json.dumps("Z" * SHOWN_VALUE_CHARS) + "…"
    assert missing == f'no note has the id "M404", {long_id}, 7, None, "M9"; use the ids memory_search lists'


def test_a_database_file_keeps_its_notes(tmp_path: Path) -> None:
    path = tmp_path / "notes.sqlite"
    with MemoryStore(path) as store:
        ids = store.add_many([("Boots", "Dry them by the stove."), ("Ash", "Empty the box.")])
        assert ids == ["M1", "M2"]
    with MemoryStore(path) as again:
        assert again.add("Wood", "Stack it under the eaves.") == "M3"
        assert again.search("stove boots")[0] == ("M1", "Boots")


def test_a_folder_of_notes_is_indexed_by_file_name(tmp_path: Path) -> None:
    (tmp_path / "b.md").write_text("# Second\nThe pump primes itself.\n", encoding="utf-8")
    (tmp_path / "a.txt").write_text("First\nThe gate sticks in frost.\n", encoding="utf-8")
    (tmp_path / "skip.json").write_text("{}", encoding="utf-8")
    store = MemoryStore.from_folder(tmp_path)
    assert sorted(store.search("pump gate")) == [("M1", "First"), ("M2", "Second")]
    assert store.read(["M2"]) == [("M2", "Second", "The pump primes itself.")]


def test_unusable_paths_are_memory_store_errors(tmp_path: Path) -> None:
    not_a_db = tmp_path / "notes.txt"
    not_a_db.write_text("just text, not SQLite", encoding="utf-8")
    with pytest.raises(MemoryStoreError, match="is not a memory database"):
        MemoryStore(not_a_db)
    other = tmp_path / "other.sqlite"
    with sqlite3.connect(other) as db:
        db.execute("CREATE TABLE memories (x)")
    with pytest.raises(MemoryStoreError, match="is not a memory database"):
        MemoryStore(other)
    with pytest.raises(MemoryStoreError, match=r"no \.txt or \.md files"):
        MemoryStore.from_folder(_empty(tmp_path))
    with pytest.raises(MemoryStoreError, match="is not a folder"):
        MemoryStore.from_folder(tmp_path / "missing")


def _empty(root: Path) -> Path:
    folder = root / "empty"
    folder.mkdir()
    return folder


def test_a_store_is_used_from_threads_other_than_the_one_that_made_it() -> None:
    """The async loop calls a sync provider in worker threads: the store answers there too,
    and calls from many threads at once each get their whole answer."""
    with MemoryStore.sample() as store:
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            outputs = list(pool.map(lambda _: store.call("memory_search", {"query": "latch"}), range(64)))
        assert len({output.content for output in outputs}) == 1
        assert not outputs[0].is_error
        assert json.loads(outputs[0].content)["records"]


def _offer(store: MemoryStore) -> list[str] | None:
    """The titles the store's memory_read offers, ``None`` when it offers no read by title."""
    for tool in store.tools_for_llm():
        title = tool["function"]["parameters"]["properties"].get("title")
        if title is not None:
            return list(title["enum"])
    return None


def test_a_small_store_with_titles_offers_its_notes_by_title_until_one_is_read() -> None:
    store = MemoryStore.sample(titles=True)
    titles = [title for title, _ in sample_notes()]
    assert [t["function"]["name"] for t in store.tools_for_llm()] == ["memory_read"]  # no search
    assert _offer(store) == titles
    schema = route_schema(store.tools_for_llm())
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    assert validator.is_valid({"tool": "memory_read", "arguments": {"title": "The storage-room latch"}})
    assert not validator.is_valid({"tool": "memory_read", "arguments": {"title": "TITLE"}})
    (record,) = _records(store.call("memory_read", {"title": "The storage-room latch"}))
    assert record["id"] == "M4"
    assert "locks the door by itself" in record["text"]
    assert store.tools_for_llm() == []  # a note was read: only the handoff is left
    assert not store.call("memory_read", {"title": "The wood stove"}).is_error  # called anyway, it reads


def test_reading_by_title_refuses_what_is_not_a_listed_title() -> None:
    store = MemoryStore.sample(titles=True)
    unknown = store.call("memory_read", {"title": "TITLE"})
    assert unknown.is_error
    assert 'no note has the title "TITLE"' in unknown.content
    for arguments in ({"title": 4}, {"title": "The wood stove", "ids": ["M5"]}):
        output = store.call("memory_read", arguments)
        assert output.is_error
        assert 'memory_read takes {"title": "a title"}' in output.content
    assert _offer(store) == [title for title, _ in sample_notes()]  # nothing was read


def test_a_store_too_large_to_list_is_searched_whatever_titles_says(tmp_path: Path) -> None:
    for number in range(MEMORY_TITLES_LISTED + 1):
        (tmp_path / f"note{number:02d}.md").write_text(f"# Note {number}\nbody {number}\n", encoding="utf-8")
    store = MemoryStore.from_folder(tmp_path, titles=True)
    assert store.listed_titles() is None
    assert [t["function"]["name"] for t in store.tools_for_llm()] == ["memory_search"]
    (tmp_path / "note00.md").unlink()
    small = MemoryStore.from_folder(tmp_path, titles=True)
    assert _offer(small) == [f"Note {number}" for number in range(1, MEMORY_TITLES_LISTED + 1)]
    assert MemoryStore.from_folder(tmp_path).listed_titles() is None  # titles are asked for


def test_restore_reads_the_titles_again() -> None:
    first = MemoryStore.sample(titles=True)
    output = first.call("memory_read", {"title": "The wood stove"})
    resumed = MemoryStore.sample(titles=True)
    resumed.restore([("memory_read", {"title": "The wood stove"}, output)])
    assert resumed.tools_for_llm() == first.tools_for_llm()
    failed = ToolOutput("no note has the title", is_error=True)
    resumed.restore([("memory_read", {"title": "The water filter"}, failed)])
    assert resumed.tools_for_llm() == first.tools_for_llm()  # a failed read read nothing
