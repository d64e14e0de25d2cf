"""The routing loop: one routed action a round, each result fed back, until the model hands off.

A *round* is one action slot: it begins with a routing request and ends when a reply is
accepted. A refused reply that is repaired stays in its round, so the repaired action keeps
the round's number, and the call id ``routed_call_id(round)`` stays a pure function of the
round: the n-th accepted action of a run is always answered under ``route-n``.

Every accepted action other than ``none`` is answered by exactly one result message under
its call id: the tool's result, a ``Tool error`` when the tool raised, or a ``Tool error``
notice when the action tripped a limit and was not run.
"""

from __future__ import annotations

import copy
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

from .._backends import ROLES, Backend, Message, Usage
from .._errors import RepairsExhaustedError, TranscriptError
from .._limits import DEFAULT_RETRIES, DEFAULT_ROUTING_CAP
from .._names import NONE_TOOL
from .._parse import parse_route
from .._provider import RestorableToolProvider, ToolOutput, ToolProvider
from .._result_messages import routed_call_id, routed_result_text
from .._route_schema import route_schema, route_tool_names
from .._routed_backend import can_route, routed_backend, routing_cap
from .answer import answer_request
from .events import (
    ActionChosen,
    Event,
    LimitReached,
    RepairRequested,
    Resumed,
    RoundStarted,
    RunFinished,
    ToolReturned,
)
from .feedback import (
    bad_tool_output,
    limit_notice,
    repair_message,
    tool_exception,
    truncated_problem,
)
from .instructions import Instructions, checked_instructions, instructed
from .replay import replayed
from .result import RoundUsage, RunResult
from .retries import RetryPolicy, complete
from .run_limits import RunLimits, check_count
from .state import RunState, accepted_action, call_key, commit, tripped_limit
from .transcript import TranscriptRead, TranscriptWriter, read_transcript

__all__ = ["RoutingLoop"]


class RoutingLoop:
    """Runs a retrieval phase: every round one routed action, until the model answers ``none``.

    Each round reads the provider's catalogue again, so a provider may narrow it as the run
    goes. ``instructions`` is what the model is told first, in a system message (see
    :mod:`.instructions`): ``True`` renders the run-start catalogue, a string is sent as it is,
    ``False`` sends the caller's messages alone. ``thought=N`` gives every routed reply a
    reasoning slot of at most ``N`` characters before ``tool`` (see :func:`route_schema`). With
    ``answer=True`` the original backend, with its own settings, is then asked for a final
    answer, from the question and the tool results alone (see :mod:`.answer`). ``transcript``
    names a JSON Lines file that receives every message as it is committed, which
    :meth:`resume` can continue from (sending the instructions it holds, never rendering them
    again; resume with the same ``thought=``). ``sleep`` waits between retries.

    The limits are one :class:`RunLimits` (``limits=``), or its fields given one by one
    (``max_rounds=``, ``max_repairs=``, ``max_repeats=``). A provider that is a
    :class:`RestorableToolProvider` gets, on resume, every call the transcript shows was run.
    """

    def __init__(
        self,
        backend: Backend,
        provider: ToolProvider,
        *,
        cap: int = DEFAULT_ROUTING_CAP,
        limits: RunLimits | None = None,
        max_rounds: int | None = None,
        max_repairs: int | None = None,
        max_repeats: int | None = None,
        retries: int = DEFAULT_RETRIES,
        answer: bool = False,
        instructions: Instructions = True,
        thought: int | None = None,
        on_event: Callable[[Event], object] | None = None,
        transcript: str | os.PathLike[str] | None = None,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if not can_route(backend):
            raise TypeError(
                f"{type(backend).__name__} cannot route: a backend needs clone() and settings with "
                "json_schema, json_schema_name, max_tokens and clone() (see toolrouting.Backend)"
            )
        if not isinstance(provider, ToolProvider):
            raise TypeError(
                f"{type(provider).__name__} is not a tool provider: it needs tools_for_llm() and call()"
            )
        check_count("cap", cap, 1)
        self.backend = backend
        self.provider = provider
        self.cap = cap
        self.limits = _limits(limits, max_rounds=max_rounds, max_repairs=max_repairs, max_repeats=max_repeats)
        self.retry = RetryPolicy(retries=retries)
        self.answer = answer
        self.instructions = checked_instructions(instructions)
        route_schema([], thought=thought)  # refuses a bad thought= now, not in the first round
        self.thought = thought
        self.on_event = on_event
        self.transcript = None if transcript is None else os.fspath(transcript)
        self._sleep = sleep

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

    def run(self, messages: Sequence[Message]) -> RunResult:
        """Run the routing phase on ``messages`` (which end with a user message) to its end."""
        return _finish(self.iter_run(messages))

    def resume(self) -> RunResult:
        """Continue the run recorded in this loop's transcript file, and finish it."""
        return _finish(self.iter_resume())

    def iter_run(self, messages: Sequence[Message]) -> Iterator[Event]:
        """:meth:`run` as an iterator of its events; the last is :class:`RunFinished`."""
        return self._observed(self._fresh(_checked_messages(messages)))

    def iter_resume(self) -> Iterator[Event]:
        """:meth:`resume` as an iterator of its events, :class:`Resumed` first.

        The transcript is read (and a damaged one refused) at once; the file is changed only
        as the events are consumed.
        """
        if self.transcript is None:
            raise ValueError("resume() continues the file given as transcript=, and this loop has none")
        read = read_transcript(self.transcript)
        state, pending = replayed(read, self.limits, self.transcript, thought=self.thought)
        state.torn_line = read.torn_line
        return self._observed(self._resumed(self.transcript, read, state, pending))

    def _fresh(self, conversation: list[Message]) -> Iterator[Event]:
        # Rendered before the transcript is opened: a bad catalogue leaves no file half written.
        conversation = instructed(
            conversation, self.instructions, self.provider.tools_for_llm(), thought=self.thought
        )
        state = RunState(messages=[], conversation=len(conversation))
        if self.transcript is not None:
            state.writer = TranscriptWriter(self.transcript)
        try:
            # One commit, under the header: a transcript holding only part of the caller's
            # messages could not be resumed.
            commit(state, *conversation)
            yield from self._steps(state, None)
        finally:
            if state.writer is not None:
                state.writer.close()

    def _resumed(
        self, path: str, read: TranscriptRead, state: RunState, pending: str | None
    ) -> Iterator[Event]:
        if isinstance(self.provider, RestorableToolProvider):
            self.provider.restore(tuple(state.replayed_calls))
        # The torn line goes before anything is appended, or the next line would join it.
        if read.torn_line is not None:
            try:
                os.truncate(path, read.committed_bytes)
            except OSError as error:
                raise TranscriptError(path, 0, f"cannot drop its torn last line ({error})") from error
        state.writer = TranscriptWriter(path, append=True)
        try:
            yield Resumed(messages=len(read.messages), round=state.round, torn_line=state.torn_line)
            yield from self._steps(state, pending)
        finally:
            state.writer.close()

    def _observed(self, events: Iterator[Event]) -> Iterator[Event]:
        for event in events:
            if self.on_event is not None:
                self.on_event(event)
            yield event

    def _steps(self, state: RunState, pending: str | None) -> Iterator[Event]:
        while not state.done:
            tools = [] if state.limited else self.provider.tools_for_llm()
            names = route_tool_names(tools)
            cap = routing_cap(self.backend, self.cap)
            if pending is None:
                yield RoundStarted(round=state.round, choices=(*names, NONE_TOOL))
                request = routed_backend(self.backend, route_schema(tools, thought=self.thought), cap)
                completion = yield from complete(
                    request, state.messages, self.retry, state.round, self._sleep
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
                commit(state, Message(role="user", content=asked))
                state.answer_prompted = True
            # The answer request alone: the question and the results, not the run's actions.
            completion = yield from complete(
                self.backend, state.messages[-1:], self.retry, state.round, self._sleep
            )
            state.answer, state.answer_usage = completion.text, completion.usage
            commit(state, Message(role="assistant", content=completion.text))
        yield RunFinished(result=_result(state))

    def _judge(
        self,
        state: RunState,
        tools: list[dict[str, Any]],
        names: list[str],
        text: str,
        truncated: bool,
        cap: int,
        committed: bool,
    ) -> Iterator[Event]:
        """Commit a reply and answer it: a repair, a handoff, a limit notice or the tool's result."""
        route = parse_route(text, names, thought=self.thought)
        if truncated or not route.ok:
            problem = truncated_problem(cap) if truncated else str(route.error)
            refused = [] if committed else [Message(role="assistant", content=text)]
            if state.repairs >= self.limits.max_repairs:
                # A reply cut at the cap is not committed: on resume, where nothing would show
                # it was cut, a complete-looking action could be judged valid and run.
                commit(state, *([] if truncated else refused))
                raise RepairsExhaustedError(state.round, problem, self.limits.max_repairs)
            state.repairs += 1
            # The refusal and its repair are one commit: a refused reply left unanswered is judged
            # again on resume, where a valid action cut at the cap no longer shows it was cut.
            commit(state, *refused, Message(role="user", content=repair_message(problem, tools)))
            yield RepairRequested(round=state.round, attempt=state.repairs, problem=problem)
            return
        action = accepted_action(state.round, route)
        if not committed:
            commit(state, Message(role="assistant", content=action.text))
        state.actions.append(action)
        yield ActionChosen(round=action.round, tool=action.tool, arguments=action.arguments, text=action.text)
        if action.tool == NONE_TOOL:
            state.done = True
            return
        call_id = routed_call_id(state.round)
        limit, runs = tripped_limit(state, route, self.limits)
        if limit is not None:
            state.limited = limit
            notice = limit_notice(limit, self.limits.of(limit), runs)
            commit(state, _result_message(action.tool, call_id, notice, True))
            yield LimitReached(
                round=state.round, limit=limit, tool=action.tool, call_id=call_id, notice=notice
            )
        else:
            state.runs[call_key(route)] = runs + 1
            content, is_error = self._call(action.tool, action.arguments or {})
            commit(state, _result_message(action.tool, call_id, content, is_error))
            yield ToolReturned(
                round=state.round, tool=action.tool, call_id=call_id, content=content, is_error=is_error
            )
        state.next_round()

    def _call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        try:
            # A copy: the provider may keep or change its arguments without touching the record.
            output = self.provider.call(tool, copy.deepcopy(arguments))
        except Exception as error:  # a failing tool is reported to the model, and the run goes on
            return tool_exception(error), True
        if not isinstance(output, ToolOutput) or not isinstance(output.content, str):
            return bad_tool_output(output), True
        return output.content, output.is_error


def _limits(limits: RunLimits | None, **fields: int | None) -> RunLimits:
    """The run's limits: ``limits``, or a :class:`RunLimits` of the fields given one by one."""
    given = {name: value for name, value in fields.items() if value is not None}
    if limits is None:
        return RunLimits(**given)
    if not isinstance(limits, RunLimits):
        raise TypeError(f"limits= takes a RunLimits, not {type(limits).__name__}")
    if given:
        raise TypeError(f"give the limits as limits= or as {'= and '.join(given)}=, not both")
    return limits


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
        reason=state.limited or "handoff",
        torn_line=state.torn_line,
    )


def _result_message(tool: str, call_id: str, content: str, is_error: bool) -> Message:
    return Message(role="user", content=routed_result_text(tool, call_id, content, is_error=is_error))


def _finish(events: Iterator[Event]) -> RunResult:
    for event in events:
        if isinstance(event, RunFinished):
            return event.result
    raise AssertionError("a run's events end with RunFinished")  # pragma: no cover


def _checked_messages(messages: Sequence[Message]) -> list[Message]:
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
