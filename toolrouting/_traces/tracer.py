"""A routing run as OpenTelemetry spans read from its events: the run, each request, each tool call.

The names and attributes follow OpenTelemetry's semantic conventions for generative AI
(development status, as of the 1.45 API): the run is an ``invoke_agent`` span, each request
(a routed decision, or the final answer) a ``chat`` span, each tool call an ``execute_tool``
span, both under the run's. Nothing is sent unless the application has configured a tracer
provider: the API alone records nothing.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.metadata
import time
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self

from .._limits import SPAN_STATUS_CHARS
from .._loop import (
    Abstained,
    ActionChosen,
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

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

__all__ = ["AGENT_NAME", "INSTRUMENTATION_NAME", "RunTracer"]

#: The instrumentation scope the spans are recorded under.
INSTRUMENTATION_NAME = "toolrouting"

#: ``gen_ai.agent.name`` of a run's span.
AGENT_NAME = "toolrouting"


@dataclasses.dataclass
class _Open:
    """What is open in the run being traced: its span, the round's start, the tool call's start."""

    run: Span
    owned: bool
    """Whether the tracer started the run's span from an event, and so ends it at ``RunFinished``."""
    request_started: int | None = None
    shortlist: dict[str, Any] = dataclasses.field(default_factory=dict)
    """The routed request's shortlist attributes (offered names, catalogue size), with ``shortlist=``."""
    retries: list[RetryScheduled] = dataclasses.field(default_factory=list)
    reply: ReplyReceived | None = None
    tool_started: int | None = None
    input_tokens: int = 0
    output_tokens: int = 0


class RunTracer:
    """Traces one routing run at a time: pass it as ``on_event``, and wrap the run in ``with`` it.

    ``with tracer: loop.run(messages)`` opens the run's span first, so a failed run's span
    ends with the error; without ``with`` the span opens at the run's first event and ends at
    ``RunFinished``. ``tracer_provider`` is OpenTelemetry's (the global one when ``None``);
    ``attributes`` are added to the run's span (a question's id, a user's). It needs the
    ``traces`` extra: ``pip install 'toolrouting[traces]'``.
    """

    def __init__(
        self,
        *,
        tracer_provider: TracerProvider | None = None,
        attributes: Mapping[str, str | int | float | bool] | None = None,
    ) -> None:
        try:
            from opentelemetry import trace
        except ImportError as error:
            raise ImportError(
                "RunTracer needs the OpenTelemetry API: pip install 'toolrouting[traces]'"
            ) from error
        self._trace = trace
        self._tracer: Tracer = trace.get_tracer(INSTRUMENTATION_NAME, _version(), tracer_provider)
        self._attributes = dict(attributes or {})
        self._open: _Open | None = None
        self._scope: contextlib.ExitStack | None = None

    def __enter__(self) -> Self:
        if self._open is not None:
            raise RuntimeError("a RunTracer traces one run at a time; make one for each run in flight")
        self._open = _Open(run=self._run_span(), owned=False)
        self._scope = contextlib.ExitStack()
        self._scope.enter_context(self._trace.use_span(self._open.run, end_on_exit=False))
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        if self._scope is not None:
            self._scope.close()
            self._scope = None
        state, self._open = self._open, None
        if state is None:
            return
        if error is not None:
            self._end_request(state, error=error)
            _failed(state.run, error)
        state.run.end()

    def __call__(self, event: Event) -> None:
        if self._open is None:
            self._open = _Open(run=self._run_span(), owned=True)
        state = self._open
        if isinstance(event, Resumed):
            state.run.set_attributes(
                {"toolrouting.resumed": True, "toolrouting.resumed_at_round": event.round}
            )
        elif isinstance(event, RoundStarted):
            state.request_started, state.retries, state.reply = time.time_ns(), [], None
            state.shortlist = _shortlist_attributes(event)
        elif isinstance(event, RetryScheduled):
            state.retries.append(event)
        elif isinstance(event, ReplyReceived):
            state.input_tokens += event.usage.prompt_tokens
            state.output_tokens += event.usage.completion_tokens
            if event.routed:
                state.reply = event
            else:  # the final answer: no round starts it, so its span goes back by its duration
                self._request_span(state, event, time.time_ns() - int(event.seconds * 1e9), {}).end()
        elif isinstance(event, (ActionChosen, RepairRequested)):
            self._end_request(state, decision=event)
            if isinstance(event, ActionChosen) and event.tool != "none":
                state.tool_started = time.time_ns()
        elif isinstance(event, ToolReturned):
            self._tool_span(state, event)
        elif isinstance(event, LimitReached):
            state.tool_started = None  # the call was not run: there is no tool span
        elif isinstance(event, Abstained):
            state.tool_started = None  # nor here, and the run says why
            state.run.set_attributes(
                {"toolrouting.abstained.tool": event.tool, "toolrouting.abstained.reason": event.reason}
            )
        elif isinstance(event, RunFinished):
            self._finished(state, event)

    def _run_span(self) -> Span:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            **self._attributes,
        }
        return self._tracer.start_span(f"invoke_agent {AGENT_NAME}", attributes=attributes)

    def _end_request(
        self,
        state: _Open,
        *,
        decision: ActionChosen | RepairRequested | None = None,
        error: BaseException | None = None,
    ) -> None:
        """End the routed request in flight: with the decision the reply became, or the error it met."""
        if state.request_started is None:
            return  # a reply committed before a resume is judged again without a request
        extra: dict[str, Any] = dict(state.shortlist)
        if isinstance(decision, ActionChosen):
            extra.update({"toolrouting.round": decision.round, "toolrouting.action": decision.tool})
        elif isinstance(decision, RepairRequested):
            extra.update({"toolrouting.round": decision.round, "toolrouting.repair": decision.problem})
        span = self._request_span(state, state.reply, state.request_started, extra)
        for retry in state.retries:
            span.add_event(
                "retry", {"toolrouting.retry.error": retry.error, "toolrouting.retry.delay": retry.delay}
            )
        if error is not None:
            _failed(span, error)
        span.end()
        state.request_started, state.retries, state.reply = None, [], None

    def _request_span(
        self, state: _Open, reply: ReplyReceived | None, started: int, extra: dict[str, Any]
    ) -> Span:
        model = reply.model if reply is not None else None
        attributes: dict[str, Any] = {"gen_ai.operation.name": "chat", **extra}
        if reply is not None:
            attributes.update(_reply_attributes(reply))
        name = f"chat {model}" if model else "chat"
        context = self._trace.set_span_in_context(state.run)
        return self._tracer.start_span(
            name, context=context, kind=self._trace.SpanKind.CLIENT, attributes=attributes, start_time=started
        )

    def _tool_span(self, state: _Open, event: ToolReturned) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.call.id": event.call_id,
            "gen_ai.tool.type": "function",
            "toolrouting.round": event.round,
        }
        span = self._tracer.start_span(
            f"execute_tool {event.tool}",
            context=self._trace.set_span_in_context(state.run),
            kind=self._trace.SpanKind.INTERNAL,
            attributes=attributes,
            start_time=state.tool_started or time.time_ns(),
        )
        if event.is_error:
            span.set_attribute("error.type", "tool_error")
            status = event.content[:SPAN_STATUS_CHARS]
            span.set_status(self._trace.Status(self._trace.StatusCode.ERROR, status))
        span.end()
        state.tool_started = None

    def _finished(self, state: _Open, event: RunFinished) -> None:
        result = event.result
        state.run.set_attributes(
            {
                "toolrouting.run.reason": result.reason,
                "toolrouting.run.rounds": result.rounds,
                "gen_ai.usage.input_tokens": state.input_tokens,
                "gen_ai.usage.output_tokens": state.output_tokens,
            }
        )
        if state.owned:
            state.run.end()
            self._open = None


def _shortlist_attributes(event: RoundStarted) -> dict[str, Any]:
    """What a routed request's span says of its shortlist: the tools offered (``none`` aside) and
    how many the catalogue held; nothing without ``shortlist=``."""
    if event.catalogue is None:
        return {}
    return {
        "toolrouting.shortlist.offered": [name for name in event.choices if name != "none"],
        "toolrouting.shortlist.catalogue": event.catalogue,
    }


def _reply_attributes(reply: ReplyReceived) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.usage.input_tokens": reply.usage.prompt_tokens,
        "gen_ai.usage.output_tokens": reply.usage.completion_tokens,
        "toolrouting.routed": reply.routed,
        "toolrouting.truncated": reply.truncated,
    }
    if reply.model is not None:
        attributes["gen_ai.request.model"] = reply.model
    if reply.response_model is not None:
        attributes["gen_ai.response.model"] = reply.response_model
    if reply.finish_reason is not None:
        attributes["gen_ai.response.finish_reasons"] = [reply.finish_reason]
    return attributes


def _version() -> str | None:
    """This package's version, for the spans' instrumentation scope; ``None`` from a bare checkout."""
    try:
        return importlib.metadata.version("toolrouting")
    except importlib.metadata.PackageNotFoundError:
        return None


def _failed(span: Span, error: BaseException) -> None:
    from opentelemetry.trace import Status, StatusCode

    span.record_exception(error)
    span.set_attribute("error.type", type(error).__name__)
    span.set_status(Status(StatusCode.ERROR, f"{type(error).__name__}: {error}"))
