"""benchmarks/versus_native.py's scoring and chart: what it counts, on replies of the shapes it reads.

The benchmark itself drives real servers and models; these check that a reply is scored as
its docstring says. The chat-completion bodies below are written out by hand in the shape
llama-server and llama-cpp-python return (a fake, by design: the scoring is a pure function
of that shape, and no test may depend on which tool a model picks).
"""

from __future__ import annotations

import json
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from support.model import TEST_THREADS

from toolrouting import ScriptedBackend, catalogue_prompt, default_model_path, route_choices

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
try:
    import chart
    import decisions
    import native_ways
    import routed_ideas
    import versus_native
finally:
    sys.path.pop(0)

SVG = "{http://www.w3.org/2000/svg}"
NAMES = ["get_weather", "get_stock_price"]


def _body(message: dict[str, Any], finish: str = "stop", completion_tokens: int = 12) -> dict[str, Any]:
    usage = {"prompt_tokens": 300, "completion_tokens": completion_tokens}
    return {"choices": [{"message": message, "finish_reason": finish}], "usage": usage}


def _call(name: str, arguments: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "tool_calls": [{"id": "c1", "function": {"name": name, "arguments": arguments}}],
    }


def _read(body: dict[str, Any]) -> native_ways.Reply:
    return native_ways.native_reply(body, NAMES, 1.5, 256)


def test_a_native_reply_is_its_first_tool_call_or_none() -> None:
    called = _read(_body(_call("get_weather", '{"location": "Berlin"}')))
    assert (called.tool, called.arguments, called.malformed, called.truncated) == (
        "get_weather",
        {"location": "Berlin"},
        None,
        False,
    )
    assert (called.prompt_tokens, called.completion_tokens, called.seconds) == (300, 12, 1.5)
    prose = _read(_body({"role": "assistant", "content": '```json\n{"name": "x"}```'}))
    assert (prose.tool, prose.malformed) == (None, None)  # no tool_calls: no call, whatever the text
    assert prose.text.startswith("```json")
    unknown = _read(_body(_call("get_time", "{}")))
    assert unknown.malformed == "a tool not in the catalogue: 'get_time'"
    broken = _read(_body(_call("get_weather", '{"location": ')))
    assert broken.malformed == "arguments that do not parse as JSON"
    listed = _read(_body(_call("get_weather", "[1]")))
    assert listed.malformed == "arguments that are not a JSON object"
    cut = _read(_body({"role": "assistant", "content": "..."}, finish="length"))
    assert cut.truncated
    uncapped = _read(_body(_call("get_weather", "{}"), completion_tokens=256))
    assert uncapped.truncated  # a handler that ignores max_tokens ran as far as the cap allows


def test_a_case_is_scored_on_its_tool_and_arguments() -> None:
    case = next(case for case in decisions.load_cases() if case.id == "teb-TC-01")
    tools = decisions.load_catalogue(case.catalogue)
    right = versus_native.score(native_ways.Reply("get_weather", {"location": "Berlin"}), case, tools)
    assert (right["arguments_valid"], right["arguments_right"]) == (True, True)
    invalid = versus_native.score(native_ways.Reply("get_weather", {"location": 4}), case, tools)
    assert (invalid["arguments_valid"], invalid["arguments_right"]) == (False, False)
    none = versus_native.score(native_ways.Reply(None), case, tools)
    assert (none["arguments_valid"], none["arguments_right"]) == (None, None)
    malformed = native_ways.Reply(
        "get_weather", {"location": "Berlin"}, malformed="arguments that do not parse"
    )
    assert versus_native.score(malformed, case, tools)["arguments_valid"] is None


def _record(expect: list[str], tool: str | None, malformed: str | None = None) -> dict[str, Any]:
    return {
        "expect": expect,
        "tool": tool,
        "malformed": malformed,
        "runaway": False,
        "arguments_valid": None,
        "arguments_right": None,
        "prompt_tokens": 10,
        "completion_tokens": 5,
        "seconds": 1.0,
    }


def test_balanced_accuracy_is_the_mean_of_the_two_rates() -> None:
    records = [
        _record(["a"], "a"),
        _record(["a"], "b"),
        _record(["a", "b"], "b"),
        _record(["a"], "a", malformed="a tool not in the catalogue"),  # a malformed reply is never right
        _record(["none"], None),
        _record(["none"], None, malformed="arguments that do not parse as JSON"),
    ]
    summary = versus_native.summary(records)
    assert (summary["right_tool"], summary["none"]) == ([2, 4], [1, 2])
    assert summary["balanced_accuracy_pct"] == 50.0
    assert summary["malformed"] == 2


CATALOGUE: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]},
        },
    }
    for name in NAMES
]
ASKED: list[Any] = [{"role": "user", "content": "What is the weather in Oslo?"}]


@pytest.mark.parametrize("name", sorted(routed_ideas.VARIANTS))
def test_each_idea_on_the_instructions_keeps_every_tool_and_the_sentence_on_none(name: str) -> None:
    default = catalogue_prompt(CATALOGUE)
    text = routed_ideas.VARIANTS[name](CATALOGUE)
    assert text != default
    listed = default[: default.index(routed_ideas.REPLY_FORMAT)].strip().splitlines()
    assert all(line in text.splitlines() for line in listed)
    assert 'Reply {"tool": "none"} when no tool' in text


def test_a_two_step_no_is_none_without_a_second_request() -> None:
    """A scripted backend (a fake, by design): which requests the two steps send and how their
    replies are counted is our code's, whatever a model would answer."""
    backend = ScriptedBackend(['{"answer":"no"}'])
    reply = routed_ideas.TwoStep(backend, 64).decide(CATALOGUE, ASKED)
    assert (reply.tool, reply.malformed, len(backend.requests)) == (None, None, 1)
    asked = backend.requests[0]
    assert asked.settings.json_schema == routed_ideas.YES_NO_SCHEMA
    assert asked.settings.max_tokens == routed_ideas.YES_NO_CAP
    assert asked.messages[0]["content"].endswith(routed_ideas.QUESTION)


def test_a_two_step_yes_asks_for_a_tool_with_none_not_offered() -> None:
    backend = ScriptedBackend(['{"answer":"yes"}', '{"tool":"get_weather","arguments":{"q":"Oslo"}}'])
    reply = routed_ideas.TwoStep(backend, 64).decide(CATALOGUE, ASKED)
    assert (reply.tool, reply.arguments, reply.malformed) == ("get_weather", {"q": "Oslo"}, None)
    second = backend.requests[1]
    offered = [alt["properties"]["tool"]["const"] for alt in second.settings.json_schema["anyOf"]]
    assert offered == route_choices(CATALOGUE)[:-1]
    assert second.messages[0]["content"] == catalogue_prompt(CATALOGUE)


GROUPS = [("way one", "9 tokens"), ("way <two>", "-")]
SERIES: list[tuple[str, list[float | None]]] = [("right", [50.0, None]), ("none", [100.0, 0.0])]


def test_the_chart_is_svg_with_a_bar_for_each_measured_value() -> None:
    svg = chart.bar_chart(
        "a & b",
        [("way one", "9 tokens"), ("way <two>", "-")],
        [("right", [50.0, None]), ("none", [100.0, 0.0])],
    )
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("x") == str(chart._LABEL)]
    assert [float(r.get("width", "")) for r in bars] == [chart._PLOT * 0.5, chart._PLOT * 1.0, 0.0]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "not measured" in texts
    assert "a & b" in texts
    assert "way <two>" in texts
    assert svg == chart.bar_chart(
        "a & b",
        [("way one", "9 tokens"), ("way <two>", "-")],
        [("right", [50.0, None]), ("none", [100.0, 0.0])],
    )


@pytest.mark.model
def test_the_benchmark_runs_every_in_process_way_on_a_real_model(tmp_path: Path) -> None:
    """The whole run on the default model, in-process both ways: a result, a table and a chart,
    whatever the model chose."""
    out, svg = tmp_path / "result.json", tmp_path / "chart.svg"
    argv = ["--model", str(default_model_path()), "--limit", "2", "--demo", "1"]
    argv += [
        "--threads",
        str(TEST_THREADS),
        "--ways",
        "embedded-routed,embedded-native,embedded-routed-scored",
        "--out",
        str(out),
        "--chart",
        str(svg),
    ]
    assert versus_native.main(argv) == 0
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["cases"] == 2
    cases = [record["case"] for record in result["ways"]["embedded-routed"]["records"]]
    for way in ("embedded-routed", "embedded-native"):
        data = result["ways"][way]
        assert [record["case"] for record in data["records"]] == cases
        assert data["summary"]["decisions"] == 2
        assert len(data["demo"]) == 1
    scored = result["ways"]["embedded-routed-scored"]["records"]
    assert [record["case"] for record in scored] == cases
    assert all(set(record["detail"]["scores"]) >= {"none"} for record in scored)
    routed = result["ways"]["embedded-routed"]["records"]
    assert all(record["malformed"] is None for record in routed if not record["runaway"])  # the grammar's
    assert ElementTree.fromstring(svg.read_text(encoding="utf-8")).tag == f"{SVG}svg"
    again = versus_native.merged([result, result])
    assert again["ways"].keys() == result["ways"].keys()


def _scored(expect: list[str], none: float, best: str | None, best_score: float | None) -> dict[str, Any]:
    return {"expect": expect, "detail": {"none": none, "best": best, "best_score": best_score}}


def test_the_none_bias_is_fit_on_one_half_and_applied_to_the_other() -> None:
    """``calibrated`` fits the bias on the even-numbered cases only: records whose margins would
    pull a bias fit on all of them elsewhere sit at odd places and do not move it."""
    records = [
        _scored(["a"], -5.0, "a", -6.0),  # fit: right only with a bias below -1
        _scored(["none"], -1.0, "a", -9.0),  # held out
        _scored(["none"], -3.0, "a", -6.0),  # fit: none at any bias above -3
        _scored(["a"], -1.0, "a", -20.0),  # held out: right only with a bias below -19
    ]
    result = routed_ideas.calibrated(records)
    assert (result["fit_cases"], result["held_cases"]) == (2, 2)
    assert -3.0 < result["bias"] < -1.0
    assert result["fit_balanced_accuracy_pct"] == 100.0
    assert result["held_balanced_accuracy_pct"] == 50.0  # the held-out tool case stays wrong
    assert result["held_balanced_accuracy_at_0_pct"] == 50.0


@pytest.mark.model
def test_a_scored_choice_is_each_actions_whole_likelihood_on_the_real_model() -> None:
    """The scored way's trie walk (each inner node evaluated once, on a context it shares with
    its siblings) gives every action the log-probability a fresh, whole evaluation of that
    action's tokens gives; the choice is the best tool only when it beats ``none``; a chosen
    tool's arguments come from the grammar."""
    import llama_cpp
    import numpy

    from toolrouting import EmbeddedLlama, Settings

    catalogue = [
        *CATALOGUE,
        {"type": "function", "function": {"name": "get_weather_alerts", "description": "Alerts."}},
    ]
    settings = Settings(temperature=0.0, max_tokens=64)
    with EmbeddedLlama(n_threads=TEST_THREADS, settings=settings) as backend:
        way = routed_ideas.Scored(backend, 64)
        reply = way.decide(catalogue, ASKED)
        shared, paths = way.paths(routed_ideas.instructed(ASKED, True, catalogue), route_choices(catalogue))
    scores = reply.detail["scores"]
    assert list(scores) == route_choices(catalogue)
    # The reference evaluates each path alone, from an empty context: the shared prefix as one
    # batch, then its own tokens one at a time, as the walk does (the same arithmetic, so a
    # slip in which context a node is evaluated on shows, where batch shapes alone would not).
    reference = llama_cpp.Llama(str(default_model_path()), n_ctx=4096, n_threads=TEST_THREADS, verbose=False)

    def logprobs() -> Any:
        pointer = llama_cpp.llama_get_logits_ith(reference.ctx, -1)
        row = numpy.ctypeslib.as_array(pointer, shape=(reference.n_vocab(),)).astype(numpy.float64)
        top = row.max()
        return row - (top + numpy.log(numpy.exp(row - top).sum()))

    try:
        for name, path in paths.items():
            reference.reset()
            reference.eval(path[:shared])
            total = 0.0
            for token in path[shared:]:
                total += float(logprobs()[token])
                reference.eval([token])
            assert scores[name] == pytest.approx(total, abs=1e-3), name
    finally:
        reference.close()
    best = max([*NAMES, "get_weather_alerts"], key=scores.__getitem__)
    assert reply.tool == (best if scores[best] > scores["none"] else None)
    if reply.tool is not None and not reply.truncated:
        assert reply.malformed is None
        assert isinstance(reply.arguments, dict)


def test_a_run_and_the_rest_of_it_join_case_by_case() -> None:
    """``--from-json`` joins a stopped run and its rest (``--skip``): each case once, from the
    first run that measured it, and the summary counted again over the joined cases."""

    def result(cases: list[str], tool: str | None) -> dict[str, Any]:
        records = [_record(["none"], tool) | {"case": case} for case in cases]
        way = {"records": records, "summary": versus_native.summary(records), "demo": []}
        return {"model": "m.gguf", "cap": 256, "cases": len(cases), "command": "c", "ways": {"w": way}}

    joined = versus_native.merged([result(["a", "b"], None), result(["b", "c"], "x")])
    assert joined["cases"] == 3
    records = joined["ways"]["w"]["records"]
    assert [(r["case"], r["tool"]) for r in records] == [("a", None), ("b", None), ("c", "x")]
    assert joined["ways"]["w"]["summary"]["none"] == [2, 3]
