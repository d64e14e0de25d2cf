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
import dataclasses
import json
import os
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from typing import Any

from .._backends import ROLES, Backend, Completion, Message, Usage
from .._errors import (
    BackendError,
    BackendResponseError,
    RepairsExhaustedError,
    RetriesExhaustedError,
    TranscriptError,
)
from .._limits import (
    DEFAULT_MAX_REPAIRS,
    DEFAULT_MAX_REPEATS,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_RETRIES,
    DEFAULT_ROUTING_CAP,
    MAX_RETRY_AFTER,
    RETRY_BACKOFF_BASE,
    RETRY_BACKOFF_MAX,
)
from .._names import NONE_TOOL, tool_name_problem
from .._parse import Route, parse_route
from .._provider import ToolOutput, ToolProvider
from .._result_messages import routed_call_id, routed_result_header, routed_result_text, split_routed_result
from .._route_schema import route_schema, route_tool_names
from .._routed_backend import can_route, routed_backend, routing_cap
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
from .feedback import (
    ANSWER_PROMPT,
    bad_tool_output,
    is_repair_message,
    limit_notice,
    repair_message,
    tool_exception,
    truncated_problem,
)
from .result import Action, LimitName, RoundUsage, RunResult
from .transcript import TranscriptRead, TranscriptWriter, read_transcript

__all__ = ["RoutingLoop"]


@dataclasses.dataclass
class _Run:
    """The mutable state of one run; everything in it can be derived again from the transcript."""

    messages: list[Message]
    writer: TranscriptWriter | None = None
    round: int = 1
    repairs: int = 0
    """Refused replies so far in this round."""
    runs: dict[str, int] = dataclasses.field(default_factory=dict)
    """Times each call (tool and canonical arguments) has run."""
    limited: LimitName | None = None
    done: bool = False
    actions: list[Action] = dataclasses.field(default_factory=list)
    usage: dict[int, tuple[int, int, int]] = dataclasses.field(default_factory=dict)
    answer_prompted: bool = False
    answer: str | None = None
    answer_usage: Usage | None = None
    torn_line: str | None = None
    replayed_calls: list[tuple[str, dict[str, Any], ToolOutput]] = dataclasses.field(default_factory=list)
    """On resume: the calls the transcript shows were run, with what they answered."""


class RoutingLoop:
    """Runs a retrieval phase: every round one routed action, until the model answers ``none``.

    Each round reads the provider's catalogue again, so a provider may narrow it as the run
    goes. With ``answer=True`` the original backend, with its own settings, is then asked
    for a final answer. ``transcript`` names a JSON Lines file that receives every message as
    it is committed, which :meth:`resume` can continue from. ``sleep`` waits between retries.

    A provider whose state grows with its calls (ids handed out, say) may have a method
    ``restore(calls)``: on resume it receives the ``(tool, arguments, ToolOutput)`` of every
    call the transcript shows was run, in order, before the first new round.
    """

    def __init__(
        self,
        backend: Backend,
        provider: ToolProvider,
        *,
        cap: int = DEFAULT_ROUTING_CAP,
        max_rounds: int = DEFAULT_MAX_ROUNDS,
        max_repairs: int = DEFAULT_MAX_REPAIRS,
        max_repeats: int = DEFAULT_MAX_REPEATS,
        retries: int = DEFAULT_RETRIES,
        answer: bool = False,
        on_event: Callable[[Event], object] | None = None,
        transcript: str | os.PathLike[str] | None = None,
        sleep: Callable[[float], object] = time.sleep,
    ) -> None:
        if not can_route(backend):
            routing_cap(backend, 1)  # raises the TypeError that says what is missing
        if not isinstance(provider, ToolProvider):
            raise TypeError(
                f"{type(provider).__name__} is not a tool provider: it needs tools_for_llm() and call()"
            )
        _check_count("cap", cap, 1)
        _check_count("max_rounds", max_rounds, 1)
        _check_count("max_repairs", max_repairs, 0)
        _check_count("max_repeats", max_repeats, 0)
        _check_count("retries", retries, 0)
        self.backend = backend
        self.provider = provider
        self.cap = cap
        self.max_rounds = max_rounds
        self.max_repairs = max_repairs
        self.max_repeats = max_repeats
        self.retries = retries
        self.answer = answer
        self.on_event = on_event
        self.transcript = None if transcript is None else os.fspath(transcript)
        self._sleep = sleep

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
        run, pending = self._replay(read.messages)
        run.torn_line = read.torn_line
        return self._observed(self._resumed(self.transcript, read, run, pending))

    def _fresh(self, conversation: list[Message]) -> Iterator[Event]:
        run = _Run(messages=[])
        if self.transcript is not None:
            run.writer = TranscriptWriter(self.transcript)
        try:
            # One commit: a transcript holding only part of the caller's messages could not be resumed.
            _commit(run, *conversation)
            yield from self._steps(run, None)
        finally:
            if run.writer is not None:
                run.writer.close()

    def _resumed(self, path: str, read: TranscriptRead, run: _Run, pending: str | None) -> Iterator[Event]:
        restore = getattr(self.provider, "restore", None)
        if callable(restore):
            restore(tuple(run.replayed_calls))
        # The torn line goes before anything is appended, or the next line would join it.
        if read.torn_line is not None:
            try:
                os.truncate(path, read.committed_bytes)
            except OSError as error:
                raise TranscriptError(path, 0, f"cannot drop its torn last line ({error})") from error
        run.writer = TranscriptWriter(path, append=True)
        try:
            yield Resumed(len(read.messages), run.round, run.torn_line)
            yield from self._steps(run, pending)
        finally:
            run.writer.close()

    def _observed(self, events: Iterator[Event]) -> Iterator[Event]:
        for event in events:
            if self.on_event is not None:
                self.on_event(event)
            yield event

    def _steps(self, run: _Run, pending: str | None) -> Iterator[Event]:
        while not run.done:
            tools = [] if run.limited else self.provider.tools_for_llm()
            schema = route_schema(tools)
            names = route_tool_names(tools)
            cap = routing_cap(self.backend, self.cap)
            if pending is None:
                yield RoundStarted(run.round, (*names, NONE_TOOL))
                request = routed_backend(self.backend, schema, cap)
                completion = yield from self._complete(run, request, run.messages)
                _add_usage(run, run.round, completion.usage)
                text, truncated, committed = completion.text, completion.truncated, False
            else:
                # A reply committed before a resume: judged again, as it was never answered.
                text, truncated, committed, pending = pending, False, True, None
            yield from self._judge(run, tools, names, text, truncated, cap, committed)
        if self.answer and run.answer is None:
            if not run.answer_prompted:
                _commit(run, Message(role="user", content=ANSWER_PROMPT))
                run.answer_prompted = True
            completion = yield from self._complete(run, self.backend, run.messages)
            run.answer, run.answer_usage = completion.text, completion.usage
            _commit(run, Message(role="assistant", content=completion.text))
        yield RunFinished(
            RunResult(
                messages=tuple(run.messages),
                actions=tuple(run.actions),
                answer=run.answer,
                usage=tuple(
                    RoundUsage(round=r, requests=n, usage=Usage(prompt_tokens=p, completion_tokens=c))
                    for r, (n, p, c) in sorted(run.usage.items())
                ),
                answer_usage=run.answer_usage,
                reason=run.limited or "handoff",
                torn_line=run.torn_line,
            )
        )

    def _judge(
        self,
        run: _Run,
        tools: list[dict[str, Any]],
        names: list[str],
        text: str,
        truncated: bool,
        cap: int,
        committed: bool,
    ) -> Iterator[Event]:
        """Commit a reply and answer it: a repair, a handoff, a limit notice or the tool's result."""
        route = parse_route(text, names)
        if truncated or not route.ok:
            problem = truncated_problem(cap) if truncated else str(route.error)
            refused = [] if committed else [Message(role="assistant", content=text)]
            if run.repairs >= self.max_repairs:
                # A reply cut at the cap is not committed: on resume, where nothing would show
                # it was cut, a complete-looking action could be judged valid and run.
                _commit(run, *([] if truncated else refused))
                raise RepairsExhaustedError(run.round, problem, self.max_repairs)
            run.repairs += 1
            # The refusal and its repair are one commit: a refused reply left unanswered is judged
            # again on resume, where a valid action cut at the cap no longer shows it was cut.
            _commit(run, *refused, Message(role="user", content=repair_message(problem, tools)))
            yield RepairRequested(run.round, run.repairs, problem)
            return
        action = _action(run.round, route)
        if not committed:
            _commit(run, Message(role="assistant", content=action.text))
        run.actions.append(action)
        yield ActionChosen(action.round, action.tool, action.arguments, action.text)
        if action.tool == NONE_TOOL:
            run.done = True
            return
        call_id = routed_call_id(run.round)
        limit, runs = self._limit(run, route)
        if limit is not None:
            run.limited = limit
            value = self.max_rounds if limit == "max_rounds" else self.max_repeats
            notice = limit_notice(limit, value, runs)
            _commit(run, _result_message(action.tool, call_id, notice, True))
            yield LimitReached(run.round, limit, action.tool, call_id, notice)
        else:
            run.runs[_call_key(route)] = runs + 1
            content, is_error = self._call(action.tool, action.arguments or {})
            _commit(run, _result_message(action.tool, call_id, content, is_error))
            yield ToolResult(run.round, action.tool, call_id, content, is_error)
        run.round += 1
        run.repairs = 0

    def _limit(self, run: _Run, route: Route) -> tuple[LimitName | None, int]:
        """The limit this accepted action trips, if any, and how often the same call has run."""
        runs = run.runs.get(_call_key(route), 0)
        if run.round > self.max_rounds:
            return "max_rounds", runs
        if runs > self.max_repeats:
            return "max_repeats", runs
        return None, runs

    def _call(self, tool: str, arguments: dict[str, Any]) -> tuple[str, bool]:
        try:
            # A copy: the provider may keep or change its arguments without touching the record.
            output = self.provider.call(tool, copy.deepcopy(arguments))
        except Exception as error:  # a failing tool is reported to the model, and the run goes on
            return tool_exception(error), True
        if not isinstance(output, ToolOutput) or not isinstance(output.content, str):
            return bad_tool_output(output), True
        return output.content, output.is_error

    def _complete(
        self, run: _Run, backend: Backend, messages: Sequence[Message]
    ) -> Generator[Event, None, Completion]:
        """One request, retried with backoff while the error is retryable and the budget lasts."""
        attempt = 0
        while True:
            try:
                completion: Completion = backend.complete(list(messages))
            except BackendError as error:
                if not error.retryable:
                    raise
                reason = f"{type(error).__name__}: {error}"
                if attempt >= self.retries:
                    raise RetriesExhaustedError(
                        run.round, attempt + 1, f"{reason} (retries={self.retries} exhausted)"
                    ) from error
                if error.retry_after is not None and error.retry_after > MAX_RETRY_AFTER:
                    raise RetriesExhaustedError(
                        run.round,
                        attempt + 1,
                        f"{reason} (the server asks to wait {error.retry_after:g} s, "
                        f"over MAX_RETRY_AFTER of {MAX_RETRY_AFTER:g} s)",
                    ) from error
                delay = error.retry_after
                if delay is None:
                    delay = min(RETRY_BACKOFF_BASE * 2**attempt, RETRY_BACKOFF_MAX)
                attempt += 1
                yield RetryScheduled(run.round, attempt, delay, reason)
                self._sleep(delay)
                continue
            if not isinstance(completion.text, str):
                # Committed as it is, it would make a transcript that cannot be read back.
                raise BackendResponseError(
                    f"{type(backend).__name__}.complete() returned text of type "
                    f"{type(completion.text).__name__}; a completion's text is a str"
                )
            return completion

    def _replay(self, messages: tuple[Message, ...]) -> tuple[_Run, str | None]:
        """The state of the run a transcript records, and its unanswered last reply if any.

        The caller's conversation ends with a user message and the loop's own messages
        follow it; the earliest such split wins, so a conversation that itself ends in a
        run of this loop is continued rather than restarted.
        """
        for start in range(1, len(messages) + 1):
            if messages[start - 1]["role"] == "user":
                replayed = self._replay_from(messages, start)
                if replayed is not None:
                    return replayed
        raise TranscriptError(
            str(self.transcript), 0, "it does not hold a routing run (a user message, then the loop's own)"
        )

    def _replay_from(self, messages: tuple[Message, ...], start: int) -> tuple[_Run, str | None] | None:
        run = _Run(messages=list(messages))
        index = start
        while index < len(messages):
            reply = messages[index]
            if reply["role"] != "assistant":
                return None
            handoff = parse_route(reply["content"], ())
            rest = messages[index + 1 :]
            if handoff.ok and _ends_run(rest):
                run.actions.append(_action(run.round, handoff))
                run.done = True
                run.answer_prompted = bool(rest)
                run.answer = rest[1]["content"] if len(rest) == 2 else None
                return run, None
            if not rest:
                return run, reply["content"]
            following = rest[0]
            if following["role"] != "user":
                return None
            content = following["content"]
            replayed = None if handoff.ok else self._replayed_action(run, reply["content"], content)
            if replayed is not None:
                route, output = replayed
                run.actions.append(_action(run.round, route))
                limit, runs = self._limit(run, route)
                if limit is not None:
                    run.limited = limit
                else:
                    run.runs[_call_key(route)] = runs + 1
                    run.replayed_calls.append((str(route.tool), route.arguments or {}, output))
                run.round += 1
                run.repairs = 0
            elif is_repair_message(content):
                run.repairs += 1
            else:
                return None
            index += 2
        return run, None

    def _replayed_action(self, run: _Run, reply: str, result: str) -> tuple[Route, ToolOutput] | None:
        """The action ``reply`` and its output when ``result`` answers it in this round, else ``None``."""
        split = split_routed_result(result)
        if split is None:
            return None
        try:
            tool = json.loads(reply).get("tool")
        except (ValueError, AttributeError, RecursionError):
            return None
        if not isinstance(tool, str) or tool == NONE_TOOL or tool_name_problem(tool) is not None:
            return None
        route = parse_route(reply, (tool,))
        call_id = routed_call_id(run.round)
        headers = {routed_result_header(tool, call_id, is_error=flag): flag for flag in (False, True)}
        if not route.ok or route.text != reply or split[0] not in headers:
            return None
        return route, ToolOutput(split[1], is_error=headers[split[0]])


def _ends_run(rest: Sequence[Message]) -> bool:
    """Whether the messages after a handoff are what the loop writes after one: nothing, or the
    answer prompt and perhaps the answer."""
    if not rest:
        return True
    prompted = rest[0]["role"] == "user" and rest[0]["content"] == ANSWER_PROMPT
    return prompted and (len(rest) == 1 or (len(rest) == 2 and rest[1]["role"] == "assistant"))


def _result_message(tool: str, call_id: str, content: str, is_error: bool) -> Message:
    return Message(role="user", content=routed_result_text(tool, call_id, content, is_error=is_error))


def _action(round: int, route: Route) -> Action:
    if route.tool is None or route.text is None:
        raise AssertionError("only an accepted route becomes an action")  # pragma: no cover
    return Action(round=round, tool=route.tool, arguments=route.arguments, text=route.text)


def _call_key(route: Route) -> str:
    """A call's identity for the repeat limit: the tool and its arguments in canonical JSON."""
    call = [route.tool, route.arguments]
    return json.dumps(call, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _commit(run: _Run, *messages: Message) -> None:
    # On disk first: a message is part of the run only once the transcript holds it.
    if run.writer is not None and messages:
        run.writer.append(*messages)
    run.messages.extend(messages)


def _add_usage(run: _Run, round: int, usage: Usage) -> None:
    requests, prompt, completion = run.usage.get(round, (0, 0, 0))
    run.usage[round] = (requests + 1, prompt + usage.prompt_tokens, completion + usage.completion_tokens)


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


def _check_count(name: str, value: object, least: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise ValueError(f"{name} must be an integer of at least {least}, not {value!r}")
