"""The shortlist: a large catalogue narrowed to the K tools ranked best for the conversation.

``terms`` is the one tokeniser of tool texts and queries, and what a tool is ranked by
(``tool_text``); ``query`` reads a conversation as the query (``shortlist_query``); ``bm25``
is BM25 on SQLite FTS5 (``bm25_scores``, and the table an index keeps); ``embeddings`` the
static word embeddings a text's meaning is read with; ``ranker`` the ranker that indexes each
catalogue once, keyed on its bytes, and ranks by words (BM25: the process's ``default_ranker``)
or on request by meaning and words (``IndexedRanker``); ``shortlist`` holds the :class:`Ranker` seam and
:func:`shortlist`, which keeps the best K in catalogue order.
``fit`` reads off the ranker's scores how well a question fits the tool a decision chose,
against the other tools and ``none`` (``tool_fit``: a second signal beside grounding, built
which no loop or server reads).
``terms``, ``query_terms`` and ``tool_text`` are offered to the benchmarks that set other
rankers against the default over the same words.
"""

from .bm25 import BM25_WEIGHTS, bm25_scores
from .embeddings import SEMANTIC_EXTRA, StaticEmbeddings, semantic_missing, static_embeddings
from .fit import NONE_TEXT, ToolFit, fit_of_scores, tool_fit
from .query import shortlist_query
from .ranker import (
    HYBRID_BM25_WEIGHT,
    INDEXED_CATALOGUES,
    IndexedRanker,
    catalogue_key,
    default_ranker,
    embedded_text,
)
from .shortlist import Ranker, checked_ranker, shortlist
from .terms import QUERY_STOPWORDS, ToolText, query_terms, terms, tool_text

__all__ = [
    "BM25_WEIGHTS",
    "HYBRID_BM25_WEIGHT",
    "INDEXED_CATALOGUES",
    "NONE_TEXT",
    "QUERY_STOPWORDS",
    "SEMANTIC_EXTRA",
    "IndexedRanker",
    "Ranker",
    "StaticEmbeddings",
    "ToolFit",
    "ToolText",
    "bm25_scores",
    "catalogue_key",
    "checked_ranker",
    "default_ranker",
    "embedded_text",
    "fit_of_scores",
    "query_terms",
    "semantic_missing",
    "shortlist",
    "shortlist_query",
    "static_embeddings",
    "terms",
    "tool_fit",
    "tool_text",
]
