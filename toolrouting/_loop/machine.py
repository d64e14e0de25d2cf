"""The step machine: the loop's logic as a generator of effects, with no I/O of its own.

A run is a generator: it yields an :mod:`effects` value (ask this backend, call this tool,
commit these messages, wait, emit this event) and is sent the answer back. The two drivers,
:class:`RoutingLoop` (``run``) and :class:`AsyncRoutingLoop` (``async_run``), perform the
effects, one by blocking calls and one by awaiting, so repairs, limits, retries, events,
transcripts and resume are one code path in both. A run stopped between two effects (a
cancelled task, Ctrl-C) has committed exactly the messages whose :class:`Commit` returned.

A *round* is one action slot: it begins with a routing request and ends when a reply is
accepted. A refused reply that is repaired stays in its round, so the repaired action keeps
the round's number, and the call id ``routed_call_id(round)`` stays a pure function of the
round: the n-th accepted action of a run is always answered under ``route-n``.

With ``max_calls=K`` a decision may make up to ``K`` calls (an array, ``parse_routes``): they
are the round's actions, in the order written, and the call ids go on counting calls across
the run, so the n-th call of a run is still ``route-n`` (one call a round makes it the round).
The decision is committed before its calls run, and their results after them, in one commit,
in the order of the calls: a kill leaves the decision answered whole or not at all, and an
unanswered one is judged and run again on resume, as a one-call round's action is.

Every accepted action other than ``none`` is answered by exactly one result message under
its call id: the tool's result, a ``Tool error`` when the tool raised, or a ``Tool error``
notice when the action tripped a limit and was not run.

With ``shortlist=K`` each round offers the tools ``offer`` chooses as the round begins, recorded
in the transcript (:class:`CommitOffer`) before its first request, so a resumed round offers
what the run offered.
"""

from __future__ import annotations

import abc
import functools
import os
from collections.abc import Callable, Generator, Mapping, Sequence
from typing import Any

from .._backends import ROLES, Message, Usage
from .._errors import RepairsExhaustedError
from .._grounding import checked_policy
from .._limits import DEFAULT_RETRIES, DEFAULT_ROUTING_CAP
from .._names import NONE_TOOL
from .._parse_calls import parse_routes
from .._route_schema import route_schema, route_tool_names
from .._routed_backend import can_route, routed_backend, routing_cap
from .._shortlist import shortlist
from .abstaining import abstained_decision
from .abstention_notice import abstention_notice
from .answer_request import answer_conversation, answer_request
from .effects import CommitOffer, Effect, Emit
from .events import (
    Abstained,
    ActionChosen,
    AnswerDelta,
    DecisionDelta,
    RepairRequested,
    Resumed,
    RoundStarted,
    RunFinished,
)
from .offer import checked_shortlist, offer_effects
from .options import LoopOptions, checked_names, limits_of
from .repair_feedback import repair_message, truncated_problem
from .replay import resume_point
from .requests import RetryPolicy, complete
from .result import Action, RoundUsage, RunResult
from .run_limits import check_count
from .state import RunState
from .system_instructions import checked_instructions, instructed
from .tool_calls import commit, one_call, several_calls
from .transcript_format import OFFERS_VERSION, TRANSCRIPT_VERSION
from .transcript_writer import TranscriptWriter, drop_torn_line

__all__ = ["StepMachine", "Steps", "checked_messages"]

#: A run as the machine gives it: effects out, their answers in, nothing returned at the end.
Steps = Generator[Effect, Any, None]


class StepMachine(abc.ABC):
    """A routing loop's settings and its step machine, which both drivers share.

    ``__init__`` reads a driver's :class:`LoopOptions`, the one place that gives their defaults,
    into attributes. Each run reads ``backend``, ``provider``, ``cap``, ``limits``, ``retry`` and
    ``answer`` as they are when it starts. A driver subclasses it to say which providers it can call and how
    the effects are performed.
    """

    def __init__(self, backend: Any, provider: Any, options: LoopOptions) -> None:
        checked_names(type(self).__name__, options)
        if not can_route(backend):
            raise TypeError(
                f"{type(backend).__name__} cannot route: a backend needs clone() and settings with "
                "json_schema, json_schema_name, max_tokens and clone() (see toolrouting.Backend)"
            )
        self._check_provider(provider)
        cap = options.get("cap", DEFAULT_ROUTING_CAP)
        check_count("cap", cap, 1)
        self.backend = backend
        self.provider = provider
        self.cap = cap
        self.limits = limits_of(options)
        self.retry = RetryPolicy(retries=options.get("retries", DEFAULT_RETRIES))
        self.answer = options.get("answer", False)
        streamed = {
            "stream_answer": options.get("stream_answer"),
            "stream_decisions": options.get("stream_decisions"),
        }
        for option, asked in streamed.items():
            if asked and not callable(getattr(backend, "stream", None)):
                raise TypeError(
                    f"{option}=True asks with the backend's stream(), and {type(backend).__name__} has none"
                )
        self.stream_answer = bool(streamed["stream_answer"])
        self.stream_decisions = bool(streamed["stream_decisions"])
        self.instructions = checked_instructions(options.get("instructions", True))
        thought = options.get("thought")
        max_calls = options.get("max_calls", 1)
        # Refuses a bad thought= or max_calls= now, not in the first round.
        route_schema([], thought=thought, max_calls=max_calls)
        self.thought = thought
        self.max_calls = max_calls
        self.abstain = checked_policy(options.get("abstain", "off"))
        self.shortlist, self.ranker = checked_shortlist(options.get("shortlist"), options.get("ranker"))
        self.on_event = options.get("on_event")
        transcript = options.get("transcript")
        self.transcript = None if transcript is None else os.fspath(transcript)

    @abc.abstractmethod
    def _check_provider(self, provider: object) -> None:
        """Refuse a provider this driver cannot call, with a TypeError that says what it needs."""

    @property
    def max_rounds(self) -> int:
        return self.limits.max_rounds

    @property
    def max_repairs(self) -> int:
        return self.limits.max_repairs

    @property
    def max_repeats(self) -> int:
        return self.limits.max_repeats

    @property
    def retries(self) -> int:
        return self.retry.retries

    def _fresh(self, conversation: list[Message]) -> Steps:
        # The instructions are rendered once, from the run-start catalogue (with shortlist=, round
        # 1's offer), and committed with the caller's messages: every round and every resume
        # sends these bytes.
        catalogue = self.provider.tools_for_llm()
        offered = catalogue
        if self.shortlist is not None:
            offered = shortlist(catalogue, conversation, self.shortlist, ranker=self.ranker)
        conversation = instructed(
            conversation, self.instructions, offered, thought=self.thought, max_calls=self.max_calls
        )
        state = RunState(messages=[], conversation=len(conversation), round_start=len(conversation))
        # One commit, under the header: a transcript holding only part of the caller's
        # messages could not be resumed.
        yield from commit(state, *conversation)
        if self.shortlist is not None:
            state.offered, state.catalogue, state.records_offers = offered, len(catalogue), True
            yield CommitOffer(tuple(route_tool_names(offered)), len(catalogue))
        yield from self._steps(state, None)

    def _writer(self) -> Callable[[], TranscriptWriter] | None:
        """What opens (and locks) a fresh run's transcript, when it starts; ``None`` without one."""
        path = self.transcript
        if path is None:
            return None
        # A run with shortlist= records its offers, which only version 4 holds.
        version = TRANSCRIPT_VERSION if self.shortlist is None else OFFERS_VERSION
        return functools.partial(TranscriptWriter, path, version=version)

    def _resume_start(self) -> tuple[Callable[[], Steps], TranscriptWriter]:
        """Lock the transcript, read it (a damaged one is refused here), and what resumes it.

        The lock comes before the read: a file read while another writer still appends to it
        would be resumed from a state that is already gone.
        """
        if self.transcript is None:
            raise ValueError("resume() continues the file given as transcript=, and this loop has none")
        writer = TranscriptWriter(self.transcript, append=True)
        try:
            read, state, pending = resume_point(
                self.transcript, self.limits, thought=self.thought, max_calls=self.max_calls
            )
        except BaseException:
            writer.close()
            raise
        writer.version = read.version  # a resumed file goes on in its own format
        state.records_offers = self.shortlist is not None and read.version >= OFFERS_VERSION

        def steps() -> Steps:
            # The torn end goes before anything is appended, or the next line would join it.
            drop_torn_line(writer, read)
            return self._resumed(len(read.messages), state, pending)

        return steps, writer

    def _resumed(self, messages: int, state: RunState, pending: str | None) -> Steps:
        restore = getattr(self.provider, "restore", None)
        if callable(restore):  # a RestorableToolProvider, sync or async
            restore(tuple(state.replayed_calls))
        yield Emit(Resumed(messages=messages, round=state.round, torn_line=state.torn_line))
        yield from self._steps(state, pending)

    def _steps(self, state: RunState, pending: str | None) -> Steps:
        while not state.done:
            tools, catalogue = yield from offer_effects(
                state, self.provider, self.shortlist, self.ranker, self.transcript
            )
            names = route_tool_names(tools)
            cap = routing_cap(self.backend, self.cap)
            if pending is None:
                yield Emit(RoundStarted(round=state.round, choices=(*names, NONE_TOOL), catalogue=catalogue))
                schema = route_schema(tools, thought=self.thought, max_calls=self.max_calls)
                request = routed_backend(self.backend, schema, cap)
                # A streamed decision is handed out as it comes, and parsed only once whole.
                piece = functools.partial(_decision_delta, state.round) if self.stream_decisions else None
                completion = yield from complete(
                    request, state.messages, self.retry, state.round, piece=piece
                )
                state.add_usage(completion.usage)
                text, truncated, committed = completion.text, completion.truncated, False
            else:
                # A reply committed before a resume: judged again, as it was never answered.
                text, truncated, committed, pending = pending, False, True, None
            yield from self._judge(state, tools, names, text, truncated, cap, committed)
        if self.answer and state.answer is None:
            if not state.answer_prompted:
                asked = answer_request(state.messages, state.conversation)
                yield from commit(state, Message(role="user", content=asked))
                state.answer_prompted = True
            # The caller's context and the answer request: the question and the results, not
            # the run's actions. The answer is committed only once whole: a stream cut short
            # commits nothing, and resume asks again.
            sent = answer_conversation(
                state.messages,
                state.conversation,
                instructions=self.instructions,
                asked=state.messages[-1]["content"],
            )
            completion = yield from complete(
                self.backend,
                sent,
                self.retry,
                state.round,
                piece=_answer_delta if self.stream_answer else None,
            )
            state.answer, state.answer_usage = completion.text, completion.usage
            yield from commit(state, Message(role="assistant", content=completion.text))
        yield Emit(RunFinished(result=_result(state)))

    def _judge(
        self,
        state: RunState,
        tools: list[dict[str, Any]],
        names: list[str],
        text: str,
        truncated: bool,
        cap: int,
        committed: bool,
    ) -> Steps:
        """Commit a reply and answer it: a repair, a handoff, a limit notice or the tool's result."""
        routes = parse_routes(text, names, max_calls=self.max_calls, thought=self.thought)
        if truncated or not routes.ok:
            problem = truncated_problem(cap) if truncated else str(routes.error)
            refused = [] if committed else [Message(role="assistant", content=text)]
            if state.repairs >= self.limits.max_repairs:
                # A reply cut at the cap is not committed: on resume, where nothing would show
                # it was cut, a complete-looking action could be judged valid and run.
                yield from commit(state, *([] if truncated else refused))
                raise RepairsExhaustedError(
                    state.round, problem, self.limits.max_repairs, truncated=truncated
                )
            state.repairs += 1
            # The refusal and its repair are one commit: a refused reply left unanswered is judged
            # again on resume, where a valid action cut at the cap no longer shows it was cut.
            yield from commit(
                state,
                *refused,
                Message(
                    role="user",
                    content=repair_message(
                        problem, tools, thought=self.thought is not None, max_calls=self.max_calls
                    ),
                ),
            )
            yield Emit(RepairRequested(round=state.round, attempt=state.repairs, problem=problem))
            return
        actions = [Action.from_route(state.round, call) for call in routes.calls]
        held = abstained_decision(
            self.abstain, actions, tools, state.messages, state.conversation, self.instructions
        )
        # An abstained decision's notice is committed with the reply, so a kill never leaves one
        # without the other (a reply committed before a resume gets its notice alone).
        notice = [] if held is None else [Message(role="user", content=abstention_notice(held.reason))]
        reply = [] if committed else [Message(role="assistant", content=str(routes.text))]
        yield from commit(state, *reply, *notice)
        state.actions.extend(actions)
        for action in actions:
            yield Emit(
                ActionChosen(
                    round=action.round, tool=action.tool, arguments=action.arguments, text=action.text
                )
            )
        if held is not None:
            state.done, state.abstained = True, held.reason
            yield Emit(
                Abstained(round=state.round, tool=held.tool, arguments=held.arguments, reason=held.reason)
            )
            return
        if actions[0].tool == NONE_TOOL:
            state.done = True
            return
        if len(actions) == 1:
            yield from one_call(state, actions[0], self.limits)
        else:
            yield from several_calls(state, actions, self.limits)
        state.next_round(len(state.messages))


def _decision_delta(round: int, text: str) -> DecisionDelta:
    return DecisionDelta(round=round, text=text)


def _answer_delta(text: str) -> AnswerDelta:
    return AnswerDelta(text=text)


def _result(state: RunState) -> RunResult:
    return RunResult(
        messages=tuple(state.messages),
        actions=tuple(state.actions),
        answer=state.answer,
        usage=tuple(
            RoundUsage(round=r, requests=n, usage=Usage(prompt_tokens=p, completion_tokens=c))
            for r, (n, p, c) in sorted(state.usage.items())
        ),
        answer_usage=state.answer_usage,
        reason=state.limited or ("abstained" if state.abstained is not None else "handoff"),
        abstained=state.abstained,
        torn_line=state.torn_line,
    )


def checked_messages(messages: Sequence[Message]) -> list[Message]:
    """The caller's messages as plain :class:`Message` dicts; bad ones are refused, named by index."""
    if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Sequence):
        raise TypeError(f"messages are a sequence of message dicts, not {type(messages).__name__}")
    checked: list[Message] = []
    for index, message in enumerate(messages):
        if (
            not isinstance(message, Mapping)
            or message.get("role") not in ROLES
            or not isinstance(message.get("content"), str)
        ):
            raise ValueError(
                f"message {index} is not {{'role': 'system'|'user'|'assistant', 'content': str}}"
            )
        checked.append(Message(role=message["role"], content=message["content"]))
    if not checked or checked[-1]["role"] != "user":
        raise ValueError("a routing run answers a user: the messages must end with a user message")
    return checked
