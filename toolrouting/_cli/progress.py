"""The progress lines of ``toolrouting run``: each event of a run as one short line, as it happens."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TextIO

from .._limits import PROGRESS_PREVIEW_CHARS
from .._loop import (
    ActionChosen,
    Event,
    LimitReached,
    RepairRequested,
    Resumed,
    RetryScheduled,
    RoundStarted,
    ToolResult,
)

__all__ = ["Progress"]


class Progress:
    """Shows a run's events on ``stream``, each line passed through ``clean`` (which hides secrets)."""

    def __init__(self, stream: TextIO, clean: Callable[[str], str]) -> None:
        self.stream = stream
        self.clean = clean

    def __call__(self, event: Event) -> None:
        line = _line(event)
        if line is not None:
            print(self.clean(line), file=self.stream, flush=True)


def _line(event: Event) -> str | None:
    if isinstance(event, Resumed):
        torn = f"; dropped a torn last line {json.dumps(event.torn_line)}" if event.torn_line else ""
        return f"resumed at round {event.round} after {event.messages} messages{torn}"
    if isinstance(event, RoundStarted):
        return f"round {event.round}: {' | '.join(event.choices)}"
    if isinstance(event, RetryScheduled):
        return f"  retry {event.attempt} in {event.delay:g} s after {event.error}"
    if isinstance(event, RepairRequested):
        return f"  repair {event.attempt}: {event.problem}"
    if isinstance(event, ActionChosen):
        shown = "" if event.arguments is None else json.dumps(event.arguments, ensure_ascii=False)
        return f"  -> {event.tool} {_preview(shown)}".rstrip()
    if isinstance(event, ToolResult):
        return f"  <- {'error: ' if event.is_error else ''}{_preview(event.content)}"
    if isinstance(event, LimitReached):
        return f"  limit {event.limit}: the {event.tool} call was not run; only none is offered now"
    return None


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PROGRESS_PREVIEW_CHARS else flat[: PROGRESS_PREVIEW_CHARS - 1] + "…"
