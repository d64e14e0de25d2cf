"""A round's offer with ``shortlist=K``: the K tools ranked best for the conversation so far, and
the tools this run has called.

Round 1 offers ``shortlist(catalogue, messages, K, ranker=ranker)`` exactly, the caller's
messages read by ``shortlist_query``. A later round ranks the same catalogue read anew against
the question and the results read since (the run's own repair messages left out: they list
the offered tools' shapes, and would rank them up), and keeps the tools earlier rounds called
beside the K, up to ``SHORTLIST_KEPT_TOOLS`` of them, the latest called first: a search that
found nothing is tried again with other words, and a result rarely repeats its tool's own
words. The offer is in catalogue order, so instructions and a route built from it list the
tools as the catalogue does. A recorded offer (a resumed run's) is the tools it names, in its
order, whatever the ranker or the catalogue's order says now.
"""

from __future__ import annotations

from collections.abc import Generator, Sequence
from typing import Any

from .._backends import Message
from .._errors import TranscriptError
from .._limits import SHORTLIST_KEPT_TOOLS
from .._names import NONE_TOOL
from .._route_schema import route_tool_names
from .._shortlist import Ranker, checked_ranker, shortlist
from .effects import CommitOffer, Effect
from .repair_feedback import is_repair_message
from .result import Action
from .run_limits import check_count
from .state import RunState
from .transcript_reader import RecordedOffer

__all__ = ["checked_shortlist", "kept_tools", "offer_effects", "recorded_tools", "round_offer"]

_Tool = dict[str, Any]


def checked_shortlist(k: object, ranker: object) -> tuple[int | None, Ranker | None]:
    """``shortlist=`` and ``ranker=`` as a loop takes them, or a clear error: K an int of at least 1
    (or ``None``), a ranker a callable, given only with K."""
    if k is not None:
        check_count("shortlist", k, 1)
    return k, checked_ranker(ranker, k)  # type: ignore[return-value,arg-type]  # k checked above


def offer_effects(
    state: RunState, provider: Any, k: int | None, ranker: Ranker | None, path: str | None
) -> Generator[Effect, Any, tuple[list[_Tool], int | None]]:
    """The effects that choose the tools a request offers (the offer's :class:`CommitOffer`, with a
    shortlist); it returns them, and with a shortlist the catalogue's size it chose from.

    Without ``shortlist=`` (and no offer recorded) every request reads the catalogue anew, as
    the loop always did. With it, the offer is chosen as the round begins, recorded in the
    transcript before its first request (:class:`CommitOffer`), and kept through the round's
    repairs; a round whose offer the transcript records offers that, whatever the ranker says now.
    """
    if state.limited:
        return [], None
    if state.offered is None:
        recorded = state.recorded.get(state.round_start)
        if recorded is not None:
            state.offered = recorded_tools(provider.tools_for_llm(), recorded, str(path))
            state.catalogue = recorded.catalogue
        elif k is None:
            return provider.tools_for_llm(), None
        else:
            catalogue = provider.tools_for_llm()
            state.offered = round_offer(
                catalogue, state.messages, state.conversation, k, ranker=ranker, actions=state.actions
            )
            state.catalogue = len(catalogue)
            if state.records_offers:
                yield CommitOffer(tuple(route_tool_names(state.offered)), state.catalogue)
    return state.offered, state.catalogue


def kept_tools(actions: Sequence[Action]) -> list[str]:
    """The tools ``actions`` called (the handoff aside), each once, at most ``SHORTLIST_KEPT_TOOLS``
    of them, the most recently called first."""
    kept: list[str] = []
    for action in reversed(actions):
        if action.tool != NONE_TOOL and action.tool not in kept:
            kept.append(action.tool)
    return kept[:SHORTLIST_KEPT_TOOLS]


def round_offer(
    catalogue: Sequence[_Tool],
    messages: Sequence[Message],
    conversation: int,
    k: int,
    *,
    ranker: Ranker | None,
    actions: Sequence[Action],
) -> list[_Tool]:
    """What a round offers out of ``catalogue``: :func:`shortlist` of the conversation so far, and
    the tools ``actions`` called that the catalogue still holds, in catalogue order.

    ``messages`` are the run's so far, the first ``conversation`` of them the caller's (with the
    instructions); the run's own repair messages after them are not read.
    """
    read = [
        message
        for index, message in enumerate(messages)
        if index < conversation or not (message["role"] == "user" and is_repair_message(message["content"]))
    ]
    best = shortlist(catalogue, read, k, ranker=ranker)
    kept = set(kept_tools(actions))
    if len(best) == len(catalogue) or not kept:
        return best
    chosen = {id(tool) for tool in best}
    return [
        tool
        for tool, name in zip(catalogue, route_tool_names(catalogue), strict=True)
        if id(tool) in chosen or name in kept
    ]


def recorded_tools(catalogue: Sequence[_Tool], offer: RecordedOffer, path: str) -> list[_Tool]:
    """The tools ``offer`` names, in its order, as ``catalogue`` declares them now; a tool the
    catalogue no longer holds is a :class:`TranscriptError` naming it and the line."""
    declared = dict(zip(route_tool_names(catalogue), catalogue, strict=True))
    missing = [name for name in offer.offered if name not in declared]
    if missing:
        raise TranscriptError(
            path,
            offer.line,
            f"the round it records offered {missing[0]!r}, which the provider's catalogue no longer "
            "holds; resume with the tools the run was offered, or start the run again",
        )
    return [declared[name] for name in offer.offered]
