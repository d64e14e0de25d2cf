"""The shortlist: a large catalogue narrowed to the K tools ranked best for the conversation.

``terms`` is the one tokeniser of tool texts and queries, and what a tool is ranked by
(``tool_text``); ``query`` reads a conversation as the query (``shortlist_query``); ``bm25``
is the default ranker, BM25 on SQLite FTS5 (``bm25_scores``); ``shortlist`` holds the
:class:`Ranker` seam and :func:`shortlist`, which keeps the best K in catalogue order.
``terms``, ``query_terms`` and ``tool_text`` are offered to the benchmarks that set other BM25s against the
default over the same words.
"""

from .bm25 import BM25_WEIGHTS, bm25_scores
from .query import shortlist_query
from .shortlist import Ranker, shortlist
from .terms import QUERY_STOPWORDS, ToolText, query_terms, terms, tool_text

__all__ = [
    "BM25_WEIGHTS",
    "QUERY_STOPWORDS",
    "Ranker",
    "ToolText",
    "bm25_scores",
    "query_terms",
    "shortlist",
    "shortlist_query",
    "terms",
    "tool_text",
]
