"""The demo memory store: notes in SQLite with FTS5 search, offered as memory_search and memory_read.

The catalogue narrows as a run goes. Before any search has handed out an id,
``memory_read`` is not offered at all: an ``enum`` with no members is refused by most
grammar compilers, and with nothing to read the model has only ``memory_search`` and
``none`` to choose from. Once searches have listed records, ``memory_read``'s ``ids`` take
an ``enum`` of exactly the ids listed so far, so the grammar keeps the model from
inventing one. While a search has listed notes that no read has opened yet, ``memory_search``
is left out: the model reads what it found (or hands off) before it searches again, which
keeps a small model from repeating one search until the repeat limit ends the run.

With ``titles=True`` a store small enough to list (at most ``MEMORY_TITLES_LISTED`` notes)
offers its notes by title instead: ``memory_read`` from the first round, its ``title`` an
``enum`` of every title, and no search; once a note is read, only the handoff is left. A small
model cannot write a query that finds anything (it copies words from its instructions:
"none", "TITLE"), but it can choose among titles, and the grammar holds it to the ones that
exist. One read, because each demo note answers its own questions, and a small model offered
more reads reads every note (SmolLM2-135M did in 12 runs of 12), which buries the note that
answers in the answer request. A larger store is searched as above whatever ``titles`` says.
The demo (``toolrouting run``) lists its titles.
"""

from __future__ import annotations

import importlib.resources
import json
import os
import re
import sqlite3
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Self

from .._errors import MemoryStoreError
from .._json import quoted, shown
from .._limits import (
    MEMORY_MISSING_IDS_SHOWN,
    MEMORY_QUERY_CHARS,
    MEMORY_QUERY_TERMS,
    MEMORY_SEARCH_RESULTS,
    MEMORY_TITLES_LISTED,
    SHOWN_NAME_CHARS,
    SHOWN_VALUE_CHARS,
)
from .._provider import RecordedCall, ToolOutput

__all__ = ["MemoryStore", "sample_notes"]

#: The file types a folder of notes is indexed from.
NOTE_SUFFIXES = (".txt", ".md")
_SCHEMA = (
    "CREATE VIRTUAL TABLE IF NOT EXISTS memories USING fts5(id UNINDEXED, title, body, tokenize='porter')"
)
# Letters and digits: underscores split too, so "radio_check" looks for "radio" and "check".
_TERM = re.compile(r"[^\W_]+")


def sample_notes() -> list[tuple[str, str]]:
    """The demo's notes (title, body), shipped as package data, in file-name order."""
    folder = importlib.resources.files("toolrouting.demo").joinpath("data")
    files = sorted((item for item in folder.iterdir() if item.name.endswith(NOTE_SUFFIXES)), key=str)
    return [_note(item.read_text(encoding="utf-8")) for item in files]


def _search_tool() -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "memory_search",
            "description": "Search the notes for words; lists the ids and titles of matching notes.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "A few words to look for.",
                        "minLength": 1,
                        "maxLength": MEMORY_QUERY_CHARS,
                    }
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        },
    }


def _title_tool(titles: Sequence[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": "memory_read",
            "description": "Read the note with this title: its full text.",
            "parameters": {
                "type": "object",
                "properties": {"title": {"type": "string", "enum": list(titles)}},
                "required": ["title"],
                "additionalProperties": False,
            },
        },
    }


class MemoryStore:
    """Notes with short ids (``M1``, ``M2``, ...) in an SQLite database, searched with FTS5.

    ``path`` is a database file (created when missing) or ``":memory:"``. As a tool
    provider it remembers the ids its searches have listed, which narrow ``memory_read``.
    ``titles=True`` offers the notes of a small store by title instead (see the module).

    A store may be used from any thread, one call at a time (a lock sees to it): the async
    loop calls a sync provider in a worker thread, not the thread that made it, and a
    cancelled run's call may still be under way in its thread when the store is closed.
    """

    def __init__(self, path: str | os.PathLike[str] = ":memory:", *, titles: bool = False) -> None:
        self.path = os.fspath(path)
        self.titles = titles
        try:
            self._db = sqlite3.connect(self.path, check_same_thread=False)
            self._db.execute(_SCHEMA)
            self._db.execute("SELECT id, title, body FROM memories LIMIT 1").fetchall()
        except sqlite3.Error as error:
            raise MemoryStoreError(
                f"{self.path} is not a memory database ({error}); point at a database this store made, "
                "or at a folder of .txt or .md notes"
            ) from error
        self._listed: list[str] = []
        self._opened: set[str] = set()
        self._read_titles: set[str] = set()
        self._lock = threading.RLock()

    @classmethod
    def sample(cls, *, titles: bool = False) -> Self:
        """An in-memory store of the demo's sample notes."""
        store = cls(titles=titles)
        store.add_many(sample_notes())
        return store

    @classmethod
    def from_folder(
        cls,
        folder: str | os.PathLike[str],
        path: str | os.PathLike[str] = ":memory:",
        *,
        titles: bool = False,
    ) -> Self:
        """A store of every ``.txt`` and ``.md`` file in ``folder`` (title: the first line), by file name."""
        root = Path(folder)
        if not root.is_dir():
            raise MemoryStoreError(f"{root} is not a folder of notes")
        try:
            files = sorted(p for p in root.iterdir() if p.suffix in NOTE_SUFFIXES and p.is_file())
        except OSError as error:
            raise MemoryStoreError(f"{root} cannot be listed ({error})") from error
        if not files:
            raise MemoryStoreError(f"{root} has no .txt or .md files to index")
        notes = []
        for file in files:
            try:
                notes.append(_note(file.read_text(encoding="utf-8")))
            except (OSError, UnicodeDecodeError) as error:
                raise MemoryStoreError(f"{file} cannot be read as UTF-8 text ({error})") from error
        store = cls(path, titles=titles)
        store.add_many(notes)
        return store

    def add(self, title: str, body: str) -> str:
        """Store one note and return its id."""
        return self.add_many([(title, body)])[0]

    def add_many(self, notes: Iterable[tuple[str, str]]) -> list[str]:
        """Store notes in order, in one transaction, and return their ids."""
        ids = []
        with self._lock, self._db:
            (last,) = self._db.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()
            for offset, (title, body) in enumerate(notes, start=1):
                ids.append(f"M{last + offset}")
                self._db.execute(
                    "INSERT INTO memories (rowid, id, title, body) VALUES (?, ?, ?, ?)",
                    (last + offset, ids[-1], title, body),
                )
        return ids

    def search(self, query: str) -> list[tuple[str, str]]:
        """``(id, title)`` of the best matches for any word of ``query``, best first.

        The words are quoted, so FTS5 syntax in a model's query (``AND``, ``"``, ``*``,
        ``NEAR(``) is only ever text to match.
        """
        terms = _TERM.findall(query)[:MEMORY_QUERY_TERMS]
        if not terms:
            return []
        match = " OR ".join(f'"{term}"' for term in terms)
        with self._lock:
            rows = self._db.execute(
                "SELECT id, title FROM memories WHERE memories MATCH ? "
                "ORDER BY bm25(memories), rowid LIMIT ?",
                (match, MEMORY_SEARCH_RESULTS),
            ).fetchall()
        return [(str(id), str(title)) for id, title in rows]

    def read(self, ids: Iterable[str]) -> list[tuple[str, str, str]]:
        """``(id, title, body)`` of the notes with these ids, in the order asked; unknown ids are skipped."""
        found = []
        for id in ids:
            with self._lock:
                row = self._db.execute("SELECT id, title, body FROM memories WHERE id = ?", (id,)).fetchone()
            if row is not None:
                found.append((str(row[0]), str(row[1]), str(row[2])))
        return found

    @property
    def listed(self) -> tuple[str, ...]:
        """The ids searches have handed out so far, in the order first listed."""
        return tuple(self._listed)

    def listed_titles(self) -> list[str] | None:
        """Every note's title, once each, in order, when this store offers its notes by title
        (``titles=True`` and at most ``MEMORY_TITLES_LISTED`` notes); else ``None``."""
        if not self.titles:
            return None
        with self._lock:
            rows = self._db.execute(
                "SELECT title FROM memories ORDER BY rowid LIMIT ?", (MEMORY_TITLES_LISTED + 1,)
            ).fetchall()
        if len(rows) > MEMORY_TITLES_LISTED:
            return None
        return list(dict.fromkeys(str(title) for (title,) in rows))

    def tools_for_llm(self) -> list[dict[str, Any]]:
        titles = self.listed_titles()
        if titles is not None:
            return [] if self._read_titles else [_title_tool(titles)]
        tools: list[dict[str, Any]] = []
        if set(self._listed) <= self._opened:
            tools.append(_search_tool())
        if self._listed:
            tools.append(
                {
                    "type": "function",
                    "function": {
                        "name": "memory_read",
                        "description": "Read the full text of notes, by the ids memory_search listed.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "ids": {
                                    "type": "array",
                                    "items": {"type": "string", "enum": list(self._listed)},
                                    "minItems": 1,
                                    "maxItems": len(self._listed),
                                }
                            },
                            "required": ["ids"],
                            "additionalProperties": False,
                        },
                    },
                }
            )
        return tools

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        with self._lock:
            return self._call(name, arguments)

    def _call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        # Arguments are checked here too: a server that ignores the schema lets anything through.
        if name == "memory_search":
            query = arguments.get("query")
            if set(arguments) != {"query"} or not isinstance(query, str):
                return ToolOutput('memory_search takes {"query": "a few words"}', is_error=True)
            records = self.search(query)
            for id, _ in records:
                if id not in self._listed:
                    self._listed.append(id)
            return ToolOutput(_json({"records": [{"id": id, "title": title} for id, title in records]}))
        if name == "memory_read" and "title" in arguments:
            return self._read_title(arguments)
        if name == "memory_read":
            ids = arguments.get("ids")
            if set(arguments) != {"ids"} or not isinstance(ids, list) or not ids:
                return ToolOutput(
                    'memory_read takes {"ids": ["M1", ...]}, ids that memory_search listed', is_error=True
                )
            wanted = list(dict.fromkeys(id for id in ids if isinstance(id, str)))
            notes = self.read(wanted)
            found = {note[0] for note in notes}
            self._opened.update(found)
            missing = [id for id in ids if not isinstance(id, str) or id not in found]
            if missing:
                named = ", ".join(_shown_id(id) for id in missing[:MEMORY_MISSING_IDS_SHOWN])
                return ToolOutput(
                    f"no note has the id {named}; use the ids memory_search lists", is_error=True
                )
            return ToolOutput(
                _json({"records": [{"id": id, "title": title, "text": body} for id, title, body in notes]})
            )
        return ToolOutput(f"there is no tool {quoted(name, SHOWN_NAME_CHARS)} here", is_error=True)

    def _read_title(self, arguments: dict[str, Any]) -> ToolOutput:
        title = arguments.get("title")
        if set(arguments) != {"title"} or not isinstance(title, str):
            return ToolOutput(
                'memory_read takes {"title": "a title"}, one of the titles listed', is_error=True
            )
        rows = self._db.execute(
            "SELECT id, title, body FROM memories WHERE title = ? ORDER BY rowid", (title,)
        ).fetchall()
        if not rows:
            return ToolOutput(
                f"no note has the title {quoted(title, SHOWN_VALUE_CHARS)}; use one of the titles listed",
                is_error=True,
            )
        self._read_titles.add(title)
        self._opened.update(str(row[0]) for row in rows)
        return ToolOutput(_json({"records": [{"id": id, "title": t, "text": body} for id, t, body in rows]}))

    def restore(self, calls: Sequence[RecordedCall]) -> None:
        """List and open again the ids of a resumed run's searches and reads, and the titles it
        read (a RestorableToolProvider)."""
        for name, arguments, output in calls:
            title = arguments.get("title")
            if name == "memory_read" and not output.is_error and isinstance(title, str):
                self._read_titles.add(title)
            ids = arguments.get("ids")
            if name == "memory_read" and not output.is_error and isinstance(ids, list):
                self._opened.update(id for id in ids if isinstance(id, str))
            if name != "memory_search" or output.is_error:
                continue
            try:
                records = json.loads(output.content)["records"]
                ids = [record["id"] for record in records]
            except (ValueError, TypeError, KeyError, RecursionError):
                continue  # not what this store writes: nothing to restore from it
            for id, _, _ in self.read(id for id in ids if isinstance(id, str)):
                if id not in self._listed:
                    self._listed.append(id)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _note(text: str) -> tuple[str, str]:
    """A note file's (title, body): the first non-blank line, without Markdown's ``#``, then the rest."""
    lines = text.strip().splitlines()
    if not lines:
        return ("(untitled)", "")
    return (lines[0].lstrip("#").strip() or "(untitled)", "\n".join(lines[1:]).strip())


def _shown_id(id: object) -> str:
    """An id the model sent, bounded: quoted when it is text, its repr when it is another JSON value."""
    return quoted(id, SHOWN_VALUE_CHARS) if isinstance(id, str) else shown(id, SHOWN_VALUE_CHARS)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
