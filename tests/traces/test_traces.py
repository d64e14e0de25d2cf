"""RunTracer: a run's spans, their nesting, attributes and error status, read back from an in-memory exporter.

The plumbing tests drive the loop, through both drivers of the step machine, with a fake model
(ScriptedBackend, which names no model); ``test_a_traced_run_against_a_real_server`` drives the
llama_cpp.server fixture, whose answers name the model that wrote them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any, Protocol

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode
from opentelemetry.util.types import Attributes
from support.catalogues import NONE, QUESTION, lookup, tool
from support.drivers import DRIVERS, Driver
from support.model import TEST_SEED, TEST_TEMPERATURE, guaranteed_cap

from toolrouting import (
    BackendConnectError,
    BatchQuestion,
    Event,
    RepairsExhaustedError,
    RetriesExhaustedError,
    RoutingLoop,
    RunTracer,
    ScriptedBackend,
    ScriptedRequest,
    ToolOutput,
    ToolReturned,
    route_schema,
    run_batch,
)

EXPLODE = '{"tool": "explode", "arguments": {}}'


class Tools:
    """``lookup`` answers, ``explode`` raises: a tool that fails, reported to the model."""

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool("lookup", word={"type": "string", "enum": ["latch", "door"]}), tool("explode")]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        if name == "explode":
            raise RuntimeError("the tool blew up")
        return ToolOutput(f"The {arguments['word']} holds the door.")


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


@pytest.fixture
def provider(exporter: InMemorySpanExporter) -> Iterator[TracerProvider]:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield provider
    provider.shutdown()


def _loop(replies: list[Any], tracer: RunTracer, driver: Driver = DRIVERS["sync"], **options: Any) -> Any:
    """The loop of ``driver`` (both drive the one step machine, so both give the same spans)."""
    return driver.loop(ScriptedBackend(replies), Tools(), on_event=tracer, sleep=lambda _: None, **options)


class _Attributed(Protocol):
    @property
    def attributes(self) -> Attributes: ...


def attributes(recorded: _Attributed) -> Mapping[str, Any]:
    """A finished span's or event's attributes, which the SDK types as possibly absent."""
    assert recorded.attributes is not None
    return recorded.attributes


def start(span: ReadableSpan) -> int:
    """When a finished span started, in nanoseconds (the SDK types it as possibly absent)."""
    assert span.start_time is not None
    return span.start_time


def end(span: ReadableSpan) -> int:
    """When a finished span ended, in nanoseconds (the SDK types it as possibly absent)."""
    assert span.end_time is not None
    return span.end_time


def _by_name(spans: tuple[ReadableSpan, ...]) -> dict[str, list[ReadableSpan]]:
    named: dict[str, list[ReadableSpan]] = {}
    for span in spans:
        named.setdefault(span.name, []).append(span)
    return named


@pytest.mark.parametrize("driver", DRIVERS.values(), ids=DRIVERS)
def test_a_run_is_one_span_with_a_span_per_request_and_per_tool_call_under_it(
    provider: TracerProvider, exporter: InMemorySpanExporter, driver: Driver
) -> None:
    tracer = RunTracer(tracer_provider=provider, attributes={"toolrouting.question": "q1"})
    replies = ["hm", BackendConnectError("reset"), lookup("latch"), EXPLODE, NONE, "The latch holds it."]
    with tracer:
        result = _loop(replies, tracer, driver, answer=True).run(QUESTION)

    spans = exporter.get_finished_spans()
    named = _by_name(spans)
    assert sorted(named) == [
        "chat",
        "execute_tool explode",
        "execute_tool lookup",
        "invoke_agent toolrouting",
    ]
    (run,) = named["invoke_agent toolrouting"]
    assert run.parent is None
    for span in spans:
        if span is not run:  # every request and every call nests under the run
            assert span.parent is not None
            assert span.parent.span_id == run.context.span_id
            assert span.context.trace_id == run.context.trace_id
            assert start(run) <= start(span) <= end(span) <= end(run)

    assert attributes(run)["gen_ai.operation.name"] == "invoke_agent"
    assert attributes(run)["gen_ai.agent.name"] == "toolrouting"
    assert attributes(run)["toolrouting.question"] == "q1"
    assert attributes(run)["toolrouting.run.reason"] == result.reason
    assert attributes(run)["toolrouting.run.rounds"] == result.rounds
    usage = [*(u.usage for u in result.usage), result.answer_usage]
    assert attributes(run)["gen_ai.usage.input_tokens"] == sum(u.prompt_tokens for u in usage if u)
    assert attributes(run)["gen_ai.usage.output_tokens"] == sum(u.completion_tokens for u in usage if u)
    assert run.status.status_code == StatusCode.UNSET

    # One chat span per answered request: the refused reply, the three accepted ones, the answer.
    chats = sorted(named["chat"], key=start)
    assert len(chats) == 5
    for span in chats:
        assert span.kind == SpanKind.CLIENT
        assert attributes(span)["gen_ai.operation.name"] == "chat"
        assert attributes(span)["gen_ai.response.finish_reasons"] == ("stop",)
        assert "gen_ai.request.model" not in attributes(span)  # the fake names no model
    assert attributes(chats[0])["toolrouting.repair"] == "the reply is not a JSON object"
    assert [attributes(span).get("toolrouting.action") for span in chats[1:4]] == [
        "lookup",
        "explode",
        "none",
    ]
    assert [attributes(span)["toolrouting.routed"] for span in chats] == [True] * 4 + [False]
    assert attributes(chats[1])["gen_ai.usage.output_tokens"] == len(lookup("latch").split())
    (retry,) = chats[1].events  # the reset request was retried inside the request's span
    assert retry.name == "retry"
    assert attributes(retry)["toolrouting.retry.error"] == "BackendConnectError: reset"

    (found,) = named["execute_tool lookup"]
    assert attributes(found)["gen_ai.operation.name"] == "execute_tool"
    assert attributes(found)["gen_ai.tool.name"] == "lookup"
    assert attributes(found)["gen_ai.tool.call.id"] == "route-1"
    assert found.status.status_code == StatusCode.UNSET
    (exploded,) = named["execute_tool explode"]
    assert exploded.status.status_code == StatusCode.ERROR
    assert attributes(exploded)["error.type"] == "tool_error"
    assert "the tool blew up" in (exploded.status.description or "")


@pytest.mark.parametrize("driver", DRIVERS.values(), ids=DRIVERS)
@pytest.mark.parametrize(
    ("replies", "options", "error"),
    [
        (["hm"], {"max_repairs": 0}, RepairsExhaustedError),
        ([BackendConnectError("refused")] * 2, {"retries": 1}, RetriesExhaustedError),
    ],
)
def test_a_failed_run_ends_its_spans_with_the_error(
    provider: TracerProvider,
    exporter: InMemorySpanExporter,
    replies: list[Any],
    options: dict[str, Any],
    error: type[Exception],
    driver: Driver,
) -> None:
    tracer = RunTracer(tracer_provider=provider)
    with pytest.raises(error), tracer:
        _loop(replies, tracer, driver, **options).run(QUESTION)

    named = _by_name(exporter.get_finished_spans())
    (run,) = named["invoke_agent toolrouting"]
    assert run.status.status_code == StatusCode.ERROR
    assert attributes(run)["error.type"] == error.__name__
    assert [event.name for event in run.events] == ["exception"]
    (request,) = named["chat"]  # the request the run failed in
    assert request.status.status_code == StatusCode.ERROR
    assert request.parent is not None
    assert request.parent.span_id == run.context.span_id


def test_without_with_the_run_span_opens_at_the_first_event_and_ends_with_the_run(
    provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    tracer = RunTracer(tracer_provider=provider)
    _loop([lookup("door"), NONE], tracer).run(QUESTION)
    _loop([NONE], tracer).run(QUESTION)  # the same tracer, a second run after the first

    runs = [span for span in exporter.get_finished_spans() if span.name.startswith("invoke_agent")]
    assert len(runs) == 2
    assert runs[0].context.trace_id != runs[1].context.trace_id
    assert len(exporter.get_finished_spans()) == 2 + 3 + 1  # two runs, three requests, one call


def test_a_resumed_run_says_so(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    path = tmp_path / "run.jsonl"
    with pytest.raises(RetriesExhaustedError):
        RoutingLoop(
            ScriptedBackend([lookup("latch"), BackendConnectError("down")]),
            Tools(),
            transcript=path,
            retries=0,
        ).run(QUESTION)
    tracer = RunTracer(tracer_provider=provider)
    with tracer:
        RoutingLoop(ScriptedBackend([NONE]), Tools(), transcript=path, on_event=tracer).resume()

    (run,) = [span for span in exporter.get_finished_spans() if span.name.startswith("invoke_agent")]
    assert attributes(run)["toolrouting.resumed"] is True
    assert attributes(run)["toolrouting.resumed_at_round"] == 2


@pytest.mark.parametrize("driver", DRIVERS.values(), ids=DRIVERS)
def test_a_shortlisted_request_says_what_it_offered_out_of_how_many(
    provider: TracerProvider, exporter: InMemorySpanExporter, driver: Driver
) -> None:
    tracer = RunTracer(tracer_provider=provider)
    with tracer:
        # lookup ranks first for "latch" (its enum): explode, not offered, is refused.
        _loop([EXPLODE, lookup("latch"), NONE], tracer, driver, shortlist=1).run(QUESTION)
    chats = [span for span in exporter.get_finished_spans() if span.name == "chat"]
    assert [attributes(span)["toolrouting.shortlist.offered"] for span in chats] == [("lookup",)] * 3
    assert attributes(chats[0])["toolrouting.repair"] == 'the tool "explode" is not one of the offered tools'
    assert {attributes(span)["toolrouting.shortlist.catalogue"] for span in chats} == {2}
    exporter.clear()
    with tracer:
        _loop([NONE], tracer, driver).run(QUESTION)  # without a shortlist: no such attributes
    (chat,) = [span for span in exporter.get_finished_spans() if span.name == "chat"]
    assert not [key for key in attributes(chat) if key.startswith("toolrouting.shortlist")]


def test_nothing_is_recorded_unless_a_tracer_provider_is_configured() -> None:
    tracer = RunTracer()  # the global provider, which no test configures: OpenTelemetry's no-op one
    with tracer:
        result = _loop([lookup("latch"), NONE], tracer).run(QUESTION)
    assert result.reason == "handoff"


def test_one_tracer_traces_one_run_at_a_time(provider: TracerProvider) -> None:
    tracer = RunTracer(tracer_provider=provider)
    with tracer, pytest.raises(RuntimeError, match="one run at a time"), tracer:
        pass


def test_without_opentelemetry_the_tracer_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry", None)
    with pytest.raises(ImportError, match=r"pip install 'toolrouting\[traces\]'"):
        RunTracer()


@pytest.mark.model
def test_a_traced_run_against_a_real_server(
    llama_cpp_server: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    from toolrouting import OpenAICompatible, Settings

    lookup_tool = Tools().tools_for_llm()[0]
    cap = guaranteed_cap(route_schema([lookup_tool]))
    settings = Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED, max_tokens=cap)

    class Lookup(Tools):
        def tools_for_llm(self) -> list[dict[str, Any]]:
            return [lookup_tool]

    tracer = RunTracer(tracer_provider=provider)
    events: list[Event] = []

    def observe(event: Event) -> None:
        events.append(event)
        tracer(event)

    with (
        OpenAICompatible(
            f"{llama_cpp_server}/v1", model="smollm2", dialect="llama-cpp-python", settings=settings
        ) as backend,
        tracer,
    ):
        result = RoutingLoop(backend, Lookup(), cap=cap, max_rounds=2, on_event=observe).run(QUESTION)

    named = _by_name(exporter.get_finished_spans())
    (run,) = named["invoke_agent toolrouting"]
    assert attributes(run)["toolrouting.run.reason"] == result.reason
    chats = named["chat smollm2"]
    assert len(chats) == sum(item.requests for item in result.usage)
    for span in chats:
        assert attributes(span)["gen_ai.request.model"] == "smollm2"
        assert isinstance(attributes(span)["gen_ai.response.model"], str)
        assert attributes(span)["gen_ai.usage.input_tokens"] > 0
        assert attributes(span)["gen_ai.usage.output_tokens"] > 0
        assert attributes(span)["gen_ai.response.finish_reasons"][0] in ("stop", "length")
        assert span.parent is not None
        assert span.parent.span_id == run.context.span_id
    calls = [event for event in events if isinstance(event, ToolReturned)]  # a call a limit stopped has none
    assert len(named.get("execute_tool lookup", [])) == len(calls)


def test_a_batch_traces_each_run_on_its_own(
    provider: TracerProvider, exporter: InMemorySpanExporter, tmp_path: Path
) -> None:
    questions = [BatchQuestion(id=f"q{n}", messages=tuple(QUESTION)) for n in range(4)]

    def model(request: ScriptedRequest) -> str:
        done = any(m["content"].startswith("Tool result") for m in request.messages)
        return NONE if done else lookup("latch")

    run_batch(
        questions,
        tmp_path / "out",
        backend=ScriptedBackend([model] * 8),
        tools=Tools,
        concurrency=2,
        trace=lambda question: RunTracer(
            tracer_provider=provider, attributes={"toolrouting.question": question.id}
        ),
    )

    spans = exporter.get_finished_spans()
    runs = {
        attributes(span)["toolrouting.question"]: span
        for span in spans
        if span.name.startswith("invoke_agent")
    }
    assert sorted(runs) == ["q0", "q1", "q2", "q3"]
    for id, run in runs.items():
        children = [
            span for span in spans if span.parent is not None and span.parent.span_id == run.context.span_id
        ]
        assert sorted(span.name for span in children) == ["chat", "chat", "execute_tool lookup"], id
