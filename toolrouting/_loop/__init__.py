"""The routing loop: rounds of one routed decision and one tool call, until the handoff.

``machine`` is the step machine, the rounds as a generator of ``effects`` that does no I/O;
``run`` drives it by blocking calls (:class:`RoutingLoop`), ``async_run`` by awaiting them
(:class:`AsyncRoutingLoop`); ``options`` are the keyword options both take, defined once;
``state`` is what a run holds as it goes; ``offer`` is a round's offer with ``shortlist=K``;
``run_limits`` bounds it (``repeated_tools``, the repeat limit's rule, is offered to a server
that sees a conversation another loop runs); ``requests`` makes every request the machine sends,
retried as its ``RetryPolicy`` says, and ``tool_calls`` runs and answers a round's calls (a call
refused or failed with an error result); ``transcript_format`` is the JSON Lines record a run
can resume from, which ``transcript_writer`` writes under ``transcript_lock``'s lock and
``transcript_reader`` reads back, and ``replay`` rebuilds a run's state from it; ``events`` are
what a caller watches; ``abstaining`` holds a decision against the conversation with
``abstain=``, and ``abstention_notice`` words the message that records one it turned into
``none``. The loop's own texts to the model are three: the ``system_instructions`` (the
catalogue in the system message), the ``repair_feedback`` (what answers a reply that is no valid
action) and the ``answer_request`` (after the handoff); ``result`` is what a finished run
returns. ``instructed``, ``answer_request`` and ``answer_conversation`` (all the answer is asked
with) are offered to parts that send what a run would send without running one;
``earlier_answer_request``, ``EARLIER_ANSWER_PROMPT`` and ``INSTRUCTIONS_SEPARATOR`` to the
benchmarks that set the loop's texts against earlier ones.
"""

from .answer_request import EARLIER_ANSWER_PROMPT, answer_conversation, answer_request, earlier_answer_request
from .async_run import AsyncRoutingLoop
from .events import (
    Abstained,
    ActionChosen,
    AnswerDelta,
    DecisionDelta,
    Event,
    LimitReached,
    RepairRequested,
    ReplyReceived,
    Resumed,
    RetryScheduled,
    RoundStarted,
    RunFinished,
    ToolReturned,
)
from .options import AbstainPolicy, LoopOptions, Ranker
from .result import Action, EndReason, LimitName, RoundUsage, RunResult
from .run import RoutingLoop
from .run_limits import RunLimits
from .state import repeated_tools
from .system_instructions import INSTRUCTIONS_SEPARATOR, THOUGHT_NOTE, instructed
from .transcript_reader import RecordedOffer, TranscriptRead, read_transcript

__all__ = [
    "EARLIER_ANSWER_PROMPT",
    "INSTRUCTIONS_SEPARATOR",
    "THOUGHT_NOTE",
    "AbstainPolicy",
    "Abstained",
    "Action",
    "ActionChosen",
    "AnswerDelta",
    "AsyncRoutingLoop",
    "DecisionDelta",
    "EndReason",
    "Event",
    "LimitName",
    "LimitReached",
    "LoopOptions",
    "Ranker",
    "RecordedOffer",
    "RepairRequested",
    "ReplyReceived",
    "Resumed",
    "RetryScheduled",
    "RoundStarted",
    "RoundUsage",
    "RoutingLoop",
    "RunFinished",
    "RunLimits",
    "RunResult",
    "ToolReturned",
    "TranscriptRead",
    "answer_conversation",
    "answer_request",
    "earlier_answer_request",
    "instructed",
    "read_transcript",
    "repeated_tools",
]
