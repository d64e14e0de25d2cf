"""The shortlist: the K tools a ranker scores best for a conversation, in catalogue order."""

from __future__ import annotations

import heapq
import math
from collections.abc import Mapping, Sequence
from typing import Any, Protocol, TypeVar, cast

from .._catalogue_checks import checked_catalogue
from .query import shortlist_query
from .ranker import IndexedRanker, default_ranker

__all__ = ["Ranker", "checked_ranker", "checked_scores", "shortlist"]

_Tool = TypeVar("_Tool", bound=Mapping[str, Any])


class Ranker(Protocol):
    """Scores a catalogue against a query: one number a tool, in catalogue order, higher is better.

    The default is :func:`default_ranker`'s :class:`IndexedRanker`, BM25 alone (the hybrid of
    meanings and BM25 is ``IndexedRanker(semantic=True)``, with the ``semantic`` extra);
    :func:`bm25_scores` is BM25 unindexed. Any callable of this shape can replace it;
    :func:`shortlist` keeps the best K, ties going to the earlier tool.
    """

    def __call__(self, tools: Sequence[Mapping[str, Any]], query: str, /) -> Sequence[float]: ...


def checked_ranker(ranker: object, k: int | None) -> Ranker | None:
    """``ranker=`` as a loop and a server take it, beside their ``shortlist=K``: ``None``, or a
    callable given with K; anything else is a clear error."""
    if ranker is not None and not callable(ranker):
        raise TypeError(f"ranker= takes a callable (tools, query) -> scores, not {type(ranker).__name__}")
    if ranker is not None and k is None:
        raise TypeError("ranker= ranks the tools of shortlist=K; give shortlist= too")
    return cast("Ranker | None", ranker)  # a callable: its answers are checked as they come


def shortlist(
    tools: Sequence[_Tool],
    conversation: str | Sequence[Mapping[str, Any]],
    k: int,
    *,
    ranker: Ranker | None = None,
) -> list[_Tool]:
    """The ``k`` tools of ``tools`` that ``ranker`` scores best for ``conversation``, in
    catalogue order (the order the instructions and the grammar list them in).

    ``conversation`` is a query text, or a list of messages read by :func:`shortlist_query`.
    A catalogue of ``k`` tools or fewer comes back whole, the same declarations in the same
    order, and no ranker is asked. Ties go to the tool that comes first in the catalogue.
    The catalogue is checked first (:class:`CatalogueError` for a bad one; an
    :class:`IndexedRanker` checks it once, when it indexes it); ``ranker`` defaults to
    :func:`default_ranker`.
    """
    if isinstance(k, bool) or not isinstance(k, int):
        raise TypeError(f"k is the number of tools to keep, an int, not {type(k).__name__}")
    if k < 1:
        raise ValueError(f"k is the number of tools to keep, at least 1, not {k}")
    indexed = ranker is None or isinstance(ranker, IndexedRanker)
    ranked = isinstance(tools, Sequence) and not isinstance(tools, (str, bytes)) and len(tools) > k
    if not (indexed and ranked):
        checked_catalogue(tools)  # an index checks the catalogue it is built of
    query = conversation if isinstance(conversation, str) else shortlist_query(conversation)
    if len(tools) <= k:
        return list(tools)
    if ranker is None or isinstance(ranker, IndexedRanker):
        scores = (ranker or default_ranker()).index(tools).scores(query)
    else:
        scores = checked_scores(ranker(tools, query), len(tools))
    best = heapq.nsmallest(k, range(len(tools)), key=lambda index: (-scores[index], index))
    return [tools[index] for index in sorted(best)]


def checked_scores(scores: object, count: int) -> list[float]:
    """A replaced ranker's answer: one number a tool, none of them NaN, else a clear error."""
    if isinstance(scores, (str, bytes, Mapping)) or not isinstance(scores, Sequence):
        raise TypeError(f"a ranker returns a sequence of scores, not {type(scores).__name__}")
    if len(scores) != count:
        raise ValueError(f"a ranker returns one score a tool: {count} tools, {len(scores)} scores")
    checked = []
    for index, score in enumerate(scores):
        if isinstance(score, bool) or not isinstance(score, (int, float)) or math.isnan(score):
            raise TypeError(
                f"a ranker's score is a number, not {type(score).__name__} {score!r:.40} (tool {index})"
            )
        checked.append(float(score))
    return checked
