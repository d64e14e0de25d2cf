"""The loop with ``abstain="grounding"``: a decision whose arguments the conversation does not give
is not run, and the run ends as after a handoff, saying why.

Through both drivers (the ``driver`` fixture) on the scripted backend, whose record holds every
request: the tools called, the transcript committed, the events given, the answer request sent.
A run over several rounds grounds its later calls in the results of the earlier ones, and a run
killed at any byte resumes to the bytes of the run left alone. A real model's run (a model test)
makes no call whose arguments the conversation does not give.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from support.drivers import Driver

from toolrouting import (
    Abstained,
    ActionChosen,
    Event,
    ScriptedBackend,
    ScriptedRequest,
    ToolOutput,
    ToolReturned,
    conversation_evidence,
    grounding,
    read_transcript,
)
from toolrouting._loop.abstention_notice import ABSTAINED_LEAD
from toolrouting._loop.answer_request import ABSTAINED_ASK


def _tool(name: str, **properties: Any) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties, "required": list(properties)}
    return {"type": "function", "function": {"name": name, "description": f"{name}.", "parameters": schema}}


WEATHER = _tool("get_weather", city={"type": "string"}, days={"type": "integer"})
SEARCH = _tool("search_orders", query={"type": "string"})
READ = _tool("read_order", id={"type": "string"})
REASON = "get_weather needs city, which the conversation does not give"


class Desk:
    """Three tools; every call is recorded. A search lists the ids of two orders."""

    def __init__(self) -> None:
        self.called: list[tuple[str, dict[str, Any]]] = []

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [WEATHER, SEARCH, READ]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        self.called.append((name, arguments))
        if name == "search_orders":
            return ToolOutput('{"orders": [{"id": "A-1042"}, {"id": "B-7"}]}')
        return ToolOutput(f"{name}: done")


def _ask(question: str) -> list[Any]:
    return [{"role": "user", "content": question}]


def test_a_call_the_conversation_cannot_fill_is_not_run_and_the_answer_says_why(
    driver: Driver, tmp_path: Path
) -> None:
    desk = Desk()
    backend = ScriptedBackend(['{"tool":"get_weather","arguments":{"city":"Paris","days":3}}', "Which city?"])
    events: list[Event] = []
    transcript = tmp_path / "run.jsonl"
    loop = driver.loop(
        backend, desk, abstain="grounding", answer=True, on_event=events.append, transcript=transcript
    )
    result = loop.run(_ask("Will it rain over the next 3 days?"))
    assert desk.called == []  # the call was not made
    assert result.reason == "abstained"
    assert result.abstained == REASON  # days is given (3), city is not
    assert [action.tool for action in result.actions] == ["get_weather"]
    assert [type(e) for e in events if isinstance(e, (ActionChosen, Abstained, ToolReturned))] == [
        ActionChosen,
        Abstained,
    ]
    [abstained] = [e for e in events if isinstance(e, Abstained)]
    assert abstained == Abstained(round=1, tool="get_weather", arguments=("city",), reason=REASON)
    # The reply as written, its notice after it in one commit, the answer request that says why.
    *_, reply, notice, asked, answer = read_transcript(transcript).messages
    assert reply["content"] == '{"tool":"get_weather","arguments":{"city":"Paris","days":3}}'
    assert notice == {"role": "user", "content": f"{ABSTAINED_LEAD}{REASON}."}
    assert f"{ABSTAINED_LEAD}{REASON}. {ABSTAINED_ASK}" in asked["content"]
    assert backend.requests[-1].messages[-1] == asked
    assert answer == {"role": "assistant", "content": "Which city?"}
    assert '"commit":2' in transcript.read_text().splitlines()[-4]  # reply and notice: one commit


def test_a_grounded_call_runs_and_off_never_abstains(driver: Driver) -> None:
    grounded = '{"tool":"get_weather","arguments":{"city":"Paris","days":3}}'
    desk = Desk()
    result = driver.loop(ScriptedBackend([grounded, '{"tool":"none"}']), desk, abstain="grounding").run(
        _ask("Weather in Paris for 3 days?")
    )
    assert (result.reason, result.abstained, desk.called) == (
        "handoff",
        None,
        [("get_weather", {"city": "Paris", "days": 3})],
    )
    desk = Desk()
    result = driver.loop(ScriptedBackend([grounded, '{"tool":"none"}']), desk).run(_ask("Will it rain?"))
    assert (result.reason, len(desk.called)) == ("handoff", 1)  # abstain="off", the default


def test_a_later_call_is_grounded_by_what_an_earlier_result_listed(driver: Driver) -> None:
    # The id a search listed grounds the read; an id no result listed does not.
    search = '{"tool":"search_orders","arguments":{"query":"blue lamp"}}'
    listed = '{"tool":"read_order","arguments":{"id":"A-1042"}}'
    invented = '{"tool":"read_order","arguments":{"id":"C-9"}}'
    desk = Desk()
    result = driver.loop(ScriptedBackend([search, listed, '{"tool":"none"}']), desk, abstain="grounding").run(
        _ask("Where is my order of a blue lamp?")
    )
    assert [name for name, _ in desk.called] == ["search_orders", "read_order"]
    assert result.reason == "handoff"
    desk = Desk()
    result = driver.loop(ScriptedBackend([search, invented]), desk, abstain="grounding").run(
        _ask("Where is my order of a blue lamp?")
    )
    assert [name for name, _ in desk.called] == ["search_orders"]
    assert result.abstained == "read_order needs id, which the conversation does not give"


def test_the_instructions_and_the_repairs_ground_nothing(driver: Driver) -> None:
    # The catalogue the loop renders names every tool and argument, and a repair lists them
    # again: neither is the conversation's, so "city" and "days" stay ungrounded.
    city = _tool("get_weather", city={"type": "string", "description": "a city such as Paris"})
    backend = ScriptedBackend(["not json", '{"tool":"get_weather","arguments":{"city":"Paris"}}'])

    class One(Desk):
        def tools_for_llm(self) -> list[dict[str, Any]]:
            return [city]

    result = driver.loop(backend, One(), abstain="grounding").run(
        [{"role": "system", "content": "Be brief."}, *_ask("Will it rain?")]
    )
    assert "Paris" in backend.requests[0].messages[0]["content"]  # the instructions name it
    assert result.reason == "abstained"
    assert result.abstained == "get_weather needs city, which the conversation does not give"


def test_the_callers_system_text_grounds(driver: Driver) -> None:
    result = driver.loop(
        ScriptedBackend(['{"tool":"get_weather","arguments":{"city":"Oslo","days":1}}', '{"tool":"none"}']),
        Desk(),
        abstain="grounding",
    ).run([{"role": "system", "content": "The user lives in Oslo."}, *_ask("Weather for one day?")])
    assert result.reason == "handoff"


def test_a_bad_policy_is_refused_when_the_loop_is_made(driver: Driver) -> None:
    with pytest.raises(ValueError, match="abstain is one of 'off', 'grounding', not 'always'"):
        driver.loop(ScriptedBackend(), Desk(), abstain="always")


def _model(request: ScriptedRequest) -> str:
    """The reply depends only on the conversation: a search, then a call it cannot fill."""
    if request.settings.json_schema is None:
        return "Which city do you mean?"
    searched = any("Tool result for search_orders" in m["content"] for m in request.messages)
    if not searched:
        return '{"tool":"search_orders","arguments":{"query":"lamp"}}'
    return '{"tool":"get_weather","arguments":{"city":"Lyon","days":2}}'


def test_a_run_killed_at_any_byte_resumes_to_the_bytes_of_the_run_left_alone(
    driver: Driver, tmp_path: Path
) -> None:
    whole = tmp_path / "whole.jsonl"
    options: dict[str, Any] = {"abstain": "grounding", "answer": True}
    question = _ask("Where is my lamp order, and will it rain for 2 days?")
    driver.loop(ScriptedBackend([_model] * 4), Desk(), transcript=whole, **options).run(question)
    data = whole.read_bytes()
    assert ABSTAINED_LEAD.encode() in data
    header_and_question = len(b"".join(data.splitlines(keepends=True)[:3]))
    killed = tmp_path / "killed.jsonl"
    for cut in range(header_and_question, len(data), 7):
        killed.write_bytes(data[:cut])
        result = driver.loop(ScriptedBackend([_model] * 4), Desk(), transcript=killed, **options).resume()
        assert killed.read_bytes() == data, f"resumed from byte {cut}"
        assert result.reason == "abstained"
        assert result.abstained == REASON


@pytest.mark.model
def test_a_real_model_makes_no_call_the_conversation_cannot_fill(driver: Driver, tmp_path: Path) -> None:
    # Whatever the model decides, every call that runs under abstain="grounding" has each
    # checked argument in the conversation, a decision that does not is recorded as an
    # abstention, and the run resumes from its transcript as it ended.
    from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS

    from toolrouting import EmbeddedLlama, Settings

    desk = Desk()
    events: list[Event] = []
    question = _ask("Will it rain tomorrow? And find my order of a blue lamp.")
    path = tmp_path / "run.jsonl"
    with EmbeddedLlama(
        settings=Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED), n_threads=TEST_THREADS
    ) as model:
        result = driver.loop(
            model, desk, abstain="grounding", max_rounds=4, transcript=path, on_event=events.append
        ).run(question)
    evidence = conversation_evidence(result.messages[1:])
    tools = {tool["function"]["name"]: tool["function"]["parameters"] for tool in desk.tools_for_llm()}
    for name, arguments in desk.called:
        assert grounding(name, arguments, tools[name], evidence).grounded, (name, arguments)
    held = [e for e in events if isinstance(e, Abstained)]
    assert (result.reason == "abstained") == bool(held)
    assert read_transcript(path).messages == result.messages


def test_a_trace_says_the_run_abstained_and_why(driver: Driver) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolrouting import RunTracer

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = RunTracer(tracer_provider=provider)
    backend = ScriptedBackend(['{"tool":"get_weather","arguments":{"city":"Paris","days":3}}'])
    with tracer:
        driver.loop(backend, Desk(), abstain="grounding", on_event=tracer).run(_ask("Rain for 3 days?"))
    spans = exporter.get_finished_spans()
    provider.shutdown()
    [run] = [span for span in spans if span.name.startswith("invoke_agent")]
    assert run.attributes is not None
    assert run.attributes["toolrouting.run.reason"] == "abstained"
    assert run.attributes["toolrouting.abstained.tool"] == "get_weather"
    assert run.attributes["toolrouting.abstained.reason"] == REASON
    assert not [span for span in spans if span.name.startswith("execute_tool")]  # no call ran
