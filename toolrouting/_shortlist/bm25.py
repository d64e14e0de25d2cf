"""The default ranker: BM25 over each tool's name, description and parameters, on SQLite FTS5.

An in-memory FTS5 table of the catalogue (three columns: the name's words, the description's,
the parameters' names, descriptions and values), stemmed by FTS5's ``porter`` tokenizer, scores
every tool against the query's words (stop words left out) with FTS5's ``bm25()``.
sqlite3 is in the standard library and the demo's store already relies on FTS5. At 1,009
tools a call took 135 ms on a loaded two-core machine, most of it the catalogue check and the
walk over the tools' texts, against 153 to 200 ms for ``bm25s``, ``rank_bm25`` and a
pure-Python BM25 over the same words (docs/benchmarks/catalogues.md, "Large catalogues: the shortlist").
:func:`bm25_scores` builds the table for one query and drops it; a :class:`Bm25Table` is kept
and asked again by the ranker that indexes each catalogue once (``ranker``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from .._catalogue_checks import CheckedTool, checked_catalogue
from .._limits import SHORTLIST_QUERY_TERMS
from .terms import query_terms, tool_text

__all__ = ["BM25_WEIGHTS", "Bm25Table", "bm25_scores", "checked_bm25_scores"]

#: FTS5's ``bm25()`` weights of the name, the description and the parameters: the fields
#: count alike.
BM25_WEIGHTS = (1.0, 1.0, 1.0)

_TABLE = "CREATE VIRTUAL TABLE tools USING fts5(name, description, parameters, tokenize='porter unicode61')"


def bm25_scores(tools: Sequence[Mapping[str, Any]], query: str) -> list[float]:
    """A :class:`Ranker`: each tool's BM25 score against ``query``, in catalogue order, higher is
    better, ``0.0`` for a tool that shares no word with it.

    The catalogue is checked first (:class:`CatalogueError` for a bad one). Each call builds
    the index anew; :class:`IndexedRanker` keeps it.
    """
    return checked_bm25_scores(checked_catalogue(tools), query)


def checked_bm25_scores(tools: Sequence[CheckedTool], query: str) -> list[float]:
    """:func:`bm25_scores` of a catalogue already checked."""
    _check_query(query)
    if not query_terms(query) or not tools:
        return [0.0] * len(tools)
    table = Bm25Table(tools)
    try:
        return table.scores(query)
    finally:
        table.close()


def _check_query(query: object) -> None:
    if not isinstance(query, str):
        raise TypeError(f"a query is a str, not {type(query).__name__}")


class Bm25Table:
    """A checked catalogue's FTS5 table, built once and asked any number of queries, from any
    thread (one at a time: the connection is the table's own)."""

    def __init__(self, tools: Sequence[CheckedTool]) -> None:
        self.count = len(tools)
        self._lock = threading.Lock()
        self._connection = sqlite3.connect(":memory:", check_same_thread=False)
        texts = [tool_text(tool) for tool in tools]
        self._connection.execute(_TABLE)
        self._connection.executemany(
            "INSERT INTO tools(rowid, name, description, parameters) VALUES (?, ?, ?, ?)",
            [(row, text.name, text.description, text.parameters) for row, text in enumerate(texts)],
        )

    def scores(self, query: str) -> list[float]:
        """Each tool's BM25 score against ``query``, in catalogue order (``0.0``: no word shared)."""
        _check_query(query)
        words = query_terms(query)[:SHORTLIST_QUERY_TERMS]
        scores = [0.0] * self.count
        if not words or not self.count:
            return scores
        # The words hold only letters and digits, so quoting makes each a plain term, never syntax.
        match = " OR ".join(f'"{word}"' for word in words)
        with self._lock:
            found = self._connection.execute(
                "SELECT rowid, bm25(tools, ?, ?, ?) FROM tools WHERE tools MATCH ?", (*BM25_WEIGHTS, match)
            ).fetchall()
        for row, score in found:
            scores[row] = -score  # FTS5's bm25() is lower for a better match
        return scores

    def close(self) -> None:
        with self._lock:
            self._connection.close()
