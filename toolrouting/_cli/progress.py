"""What ``toolrouting run`` shows as a run goes: each event as a short line, the answer as it streams."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TextIO

from .._limits import PROGRESS_PREVIEW_CHARS
from .._loop import (
    Abstained,
    ActionChosen,
    AnswerDelta,
    Event,
    LimitReached,
    RepairRequested,
    Resumed,
    RetryScheduled,
    RoundStarted,
    ToolReturned,
)

__all__ = ["AnswerPrinter", "Progress"]


class Progress:
    """Shows a run's events on ``stream``, each line passed through ``clean`` (which hides secrets)."""

    def __init__(self, stream: TextIO, clean: Callable[[str], str]) -> None:
        self.stream = stream
        self.clean = clean

    def __call__(self, event: Event) -> None:
        line = _line(event)
        if line is not None:
            print(self.clean(line), file=self.stream, flush=True)


class AnswerPrinter:
    """The final answer on ``stream`` piece by piece as it streams, stripped as a whole answer is.

    Blanks are held back until text follows them, so none leads or trails the answer. A
    retried answer starts again on a line of its own; :meth:`close` ends the answer's line.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self._shown = False
        self._blanks = ""

    def __call__(self, event: Event) -> None:
        if isinstance(event, AnswerDelta):
            text = (self._blanks if self._shown else "") + event.text
            shown = text if self._shown else text.lstrip()
            kept = shown.rstrip()
            self._blanks = shown[len(kept) :]
            if kept:
                self.stream.write(kept)
                self.stream.flush()
                self._shown = True
        elif isinstance(event, RetryScheduled) and self._shown:
            self.close()

    def close(self) -> None:
        if self._shown:
            self.stream.write("\n")
            self.stream.flush()
        self._shown, self._blanks = False, ""


def _line(event: Event) -> str | None:
    if isinstance(event, Resumed):
        torn = f"; dropped a torn end {json.dumps(event.torn_line)}" if event.torn_line else ""
        return f"resumed at round {event.round} after {event.messages} messages{torn}"
    if isinstance(event, RoundStarted):
        narrowed = event.catalogue is not None and event.catalogue > len(event.choices) - 1
        shortlisted = f" (shortlisted from {event.catalogue} tools)" if narrowed else ""
        return f"round {event.round}: {' | '.join(event.choices)}{shortlisted}"
    if isinstance(event, RetryScheduled):
        return f"  retry {event.attempt} in {event.delay:g} s after {event.error}"
    if isinstance(event, RepairRequested):
        return f"  repair {event.attempt}: {event.problem}"
    if isinstance(event, ActionChosen):
        shown = "" if event.arguments is None else json.dumps(event.arguments, ensure_ascii=False)
        return f"  -> {event.tool} {_preview(shown)}".rstrip()
    if isinstance(event, ToolReturned):
        return f"  <- {'error: ' if event.is_error else ''}{_preview(event.content)}"
    if isinstance(event, LimitReached):
        return f"  limit {event.limit}: the {event.tool} call was not run; only none is offered now"
    if isinstance(event, Abstained):
        return f"  abstained: {event.reason}; the call was not run"
    return None


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PROGRESS_PREVIEW_CHARS else flat[: PROGRESS_PREVIEW_CHARS - 1] + "…"
