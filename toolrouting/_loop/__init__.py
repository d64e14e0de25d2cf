"""The routing loop: rounds of one routed decision and one tool call, until the handoff.

``run`` drives the rounds; ``transcript`` writes and reads the JSON Lines record a run can
resume from; ``events`` are what a caller watches; ``feedback`` is every text the loop itself
tells the model; ``result`` is what a finished run returns.
"""

from .events import (
    ActionChosen,
    Event,
    LimitReached,
    RepairRequested,
    Resumed,
    RetryScheduled,
    RoundStarted,
    RunFinished,
    ToolResult,
)
from .result import Action, EndReason, LimitName, RoundUsage, RunResult
from .run import RoutingLoop
from .transcript import TranscriptRead, read_transcript

__all__ = [
    "Action",
    "ActionChosen",
    "EndReason",
    "Event",
    "LimitName",
    "LimitReached",
    "RepairRequested",
    "Resumed",
    "RetryScheduled",
    "RoundStarted",
    "RoundUsage",
    "RoutingLoop",
    "RunFinished",
    "RunResult",
    "ToolResult",
    "TranscriptRead",
    "read_transcript",
]
