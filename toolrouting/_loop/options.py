"""The loop's keyword options, defined once: both drivers take them, the step machine reads them.

:class:`RoutingLoop` and :class:`AsyncRoutingLoop` take ``**options: Unpack[LoopOptions]``
beside what is a driver's own (``sleep``, and the async driver's ``sync_tools``), so a type
checker checks every option by name and type at the call, and the step machine's
``__init__`` is the one place that reads them and gives their defaults.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import TypedDict

from .._grounding import AbstainPolicy
from .._shortlist import Ranker
from .events import Event
from .run_limits import RunLimits
from .system_instructions import Instructions

__all__ = ["AbstainPolicy", "LoopOptions", "Ranker", "checked_names", "limits_of"]


class LoopOptions(TypedDict, total=False):
    """The keyword options both routing loops take; any may be left out, for its default."""

    cap: int
    """The routing requests' completion cap, lowered to the backend's own (``DEFAULT_ROUTING_CAP``)."""
    limits: RunLimits | None
    """The run's limits as one value; or give its fields one by one, not both (``RunLimits()``)."""
    max_rounds: int | None
    """:attr:`RunLimits.max_rounds`, given alone."""
    max_repairs: int | None
    """:attr:`RunLimits.max_repairs`, given alone."""
    max_repeats: int | None
    """:attr:`RunLimits.max_repeats`, given alone."""
    retries: int
    """Retries of a request that failed retryably (``DEFAULT_RETRIES``)."""
    answer: bool
    """Ask the original backend for a final answer after the handoff (``False``)."""
    instructions: Instructions
    """What the model is told first: ``True`` renders the catalogue, a string is sent as it is,
    ``False`` sends the caller's messages alone (``True``)."""
    max_calls: int
    """The most tool calls one routed decision may make, run in order and each answered by its
    own result message (``1``: one action a round; docs/loop.md, "Several calls a decision")."""
    shortlist: int | None
    """Offer each round only the K tools ranked best for the conversation so far, and the tools
    the run has called, when the catalogue holds more than K (``None``: every tool; docs/loop.md,
    "The shortlist")."""
    ranker: Ranker | None
    """What ranks the tools for ``shortlist=`` (``None``: :func:`bm25_scores`, BM25 on SQLite FTS5)."""
    abstain: AbstainPolicy
    """Turn a decision whose arguments the conversation does not give into ``none``, whose answer
    says what was missing: ``"off"`` or ``"grounding"`` (``"off"``; docs/loop.md, "Abstention")."""
    thought: int | None
    """A reasoning slot of at most this many characters before ``tool`` (``None``: none)."""
    stream_answer: bool
    """Ask for the answer with the backend's ``stream()``, as :class:`AnswerDelta` events (``False``)."""
    stream_decisions: bool
    """Stream each routed decision, as :class:`DecisionDelta` events (``False``)."""
    on_event: Callable[[Event], object] | None
    """Called with each event as it happens (``None``)."""
    transcript: str | os.PathLike[str] | None
    """The JSON Lines file every committed message is written to, which ``resume()`` continues (``None``)."""


def checked_names(loop: str, options: LoopOptions) -> None:
    """Refuse a keyword no loop takes, as Python refuses one a signature does not name."""
    for name in options:
        if name not in LoopOptions.__optional_keys__:
            raise TypeError(f"{loop}.__init__() got an unexpected keyword argument {name!r}")


def limits_of(options: LoopOptions) -> RunLimits:
    """The run's limits: ``limits=``, or a :class:`RunLimits` of the fields given one by one."""
    fields = {
        "max_rounds": options.get("max_rounds"),
        "max_repairs": options.get("max_repairs"),
        "max_repeats": options.get("max_repeats"),
    }
    given = {name: value for name, value in fields.items() if value is not None}
    limits = options.get("limits")
    if limits is None:
        return RunLimits(**given)
    if not isinstance(limits, RunLimits):
        raise TypeError(f"limits= takes a RunLimits, not {type(limits).__name__}")
    if given:
        raise TypeError(f"give the limits as limits= or as {'= and '.join(given)}=, not both")
    return limits
