"""How well a question fits the tool a decision chose, against the other tools and ``none``.

Grounding tells an invented value from a given one, not the right tool from the wrong one: a
question about a circle's area sent to the triangle tool, with the radius in the question,
reads as grounded. This is a second signal for that, read off the ranker's scores, so it costs
the ranking of one query against an index already built (milliseconds) and no model call:

- the chosen tool's score, and its rank among the catalogue's tools (1 when it fits best);
- the best score of any other tool, and which;
- the score of ``none``: a tool that stands for answering without a tool (:data:`NONE_TEXT`),
  ranked in the same index as the catalogue's, so that its score is on the same scale (BM25's
  word weights and the hybrid's best-score normalisation are the catalogue's);
- the margin: the chosen tool's score less the better of the two. A chosen tool that another
  tool or ``none`` outscores has a negative margin.

No loop or server reads it, and no threshold is fitted: benchmarks/quality/bfcl_grounding.py
scores it offline on recorded decisions (docs/benchmarks/abstention.md). A pure function of the
catalogue, the query and the ranker.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from .._catalogue_checks import checked_catalogue
from .ranker import default_ranker
from .shortlist import Ranker, checked_scores

__all__ = ["NONE_TEXT", "ToolFit", "fit_of_scores", "tool_fit"]

#: What ``none`` is ranked as: the description of answering without a tool, in the words a
#: question that needs no tool tends to use.
NONE_TEXT = (
    "Answer directly without calling a tool: chat, greetings, opinions, explanations, general "
    "knowledge, advice, or a question no offered tool can answer."
)
#: The name ``none`` is ranked under, made unique in the catalogue it joins.
_NONE_NAME = "answer_without_a_tool"
_NO_PARAMETERS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclasses.dataclass(frozen=True, kw_only=True)
class ToolFit:
    """How well a question fits the chosen tool, against the catalogue's other tools and ``none``."""

    tool: str
    score: float
    """The chosen tool's score against the question."""
    rank: int
    """Its place among the catalogue's tools by score, 1 when none scores higher (ties go to it)."""
    best_other: str | None
    """The other tool that scores best (``None`` in a catalogue of one tool)."""
    best_other_score: float
    none_score: float
    """The score of answering without a tool (:data:`NONE_TEXT`)."""

    @property
    def margin(self) -> float:
        """The chosen tool's score less the better of the best other tool's and ``none``'s."""
        return self.score - max(self.best_other_score, self.none_score)


def fit_of_scores(names: Sequence[str], scores: Sequence[float], chosen: str, none_score: float) -> ToolFit:
    """The fit of ``chosen`` from each tool's score (``names`` and ``scores`` in one order) and
    ``none``'s; ``chosen`` must be one of ``names``."""
    if len(names) != len(scores):
        raise ValueError(f"one score a tool: {len(names)} tools, {len(scores)} scores")
    if chosen not in names:
        raise ValueError(f"the chosen tool {chosen!r} is not in the catalogue"[:200])
    at = names.index(chosen)
    score = float(scores[at])
    others = [
        (float(value), name)
        for index, (name, value) in enumerate(zip(names, scores, strict=True))
        if index != at
    ]
    best = max(others, key=lambda item: item[0], default=None)
    return ToolFit(
        tool=chosen,
        score=score,
        rank=1 + sum(value > score for value, _ in others),
        best_other=None if best is None else best[1],
        best_other_score=float("-inf") if best is None else best[0],
        none_score=float(none_score),
    )


def tool_fit(
    tools: Sequence[Mapping[str, Any]], query: str, chosen: str, *, ranker: Ranker | None = None
) -> ToolFit:
    """How well ``query`` (a question, or :func:`shortlist_query` of a conversation) fits the
    tool ``chosen`` of ``tools``, ranked by ``ranker`` (default: the process's
    :func:`default_ranker`) over the catalogue with ``none`` added as one more tool. The
    catalogue is checked (:class:`CatalogueError` for a bad one)."""
    names = [tool.name for tool in checked_catalogue(tools)]
    none_name = _NONE_NAME
    while none_name in names:
        none_name += "_"
    with_none = [
        *tools,
        {
            "type": "function",
            "function": {"name": none_name, "description": NONE_TEXT, "parameters": _NO_PARAMETERS},
        },
    ]
    rank = ranker or default_ranker()
    scores = checked_scores(rank(with_none, query), len(with_none))
    return fit_of_scores(names, scores[:-1], chosen, scores[-1])
