"""benchmarks/quality/versus_native.py's scoring and chart: what it counts, on replies of the shapes it reads.

The benchmark itself drives real servers and models; these check that a reply is scored as
its docstring says. The cases are benchmarks/common/corpus.py's and the scoring and the chart
benchmarks/common/scoring.py's, two of the modules of benchmarks/ a test may import; the benchmark
itself is run as a program. The chat-completion
bodies below are written out by hand in the shape llama-server and llama-cpp-python return (a
fake, by design: the scoring is a pure function of that shape, and no test may depend on which
tool a model picks).
"""

from __future__ import annotations

import json
import subprocess
import sys
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

import pytest
from support.model import TEST_THREADS
from support.paths import ROOT

from benchmarks.common import scoring
from benchmarks.common.corpus import load_cases, load_catalogue
from toolrouting import default_model_path

#: The benchmark, run as a user runs it.
VERSUS_NATIVE = "benchmarks.quality.versus_native"

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


def _read(body: dict[str, Any]) -> scoring.Reply:
    return scoring.native_reply(body, NAMES, 1.5, 256)


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
    case = next(case for case in load_cases() if case.id == "teb-TC-01")
    tools = load_catalogue(case.catalogue)
    right = scoring.score(scoring.Reply("get_weather", {"location": "Berlin"}), case, tools)
    assert (right["arguments_valid"], right["arguments_right"]) == (True, True)
    invalid = scoring.score(scoring.Reply("get_weather", {"location": 4}), case, tools)
    assert (invalid["arguments_valid"], invalid["arguments_right"]) == (False, False)
    none = scoring.score(scoring.Reply(None), case, tools)
    assert (none["arguments_valid"], none["arguments_right"]) == (None, None)
    malformed = scoring.Reply("get_weather", {"location": "Berlin"}, malformed="arguments that do not parse")
    assert scoring.score(malformed, case, tools)["arguments_valid"] is None


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
    summary = scoring.summary(records)
    assert (summary["right_tool"], summary["none"]) == ([2, 4], [1, 2])
    assert summary["balanced_accuracy_pct"] == 50.0
    assert summary["malformed"] == 2


GROUPS = [("way one", "9 tokens"), ("way <two>", "-")]
SERIES: list[tuple[str, list[float | None]]] = [("right", [50.0, None]), ("none", [100.0, 0.0])]


def test_the_chart_is_svg_with_a_bar_for_each_measured_value() -> None:
    svg = scoring.bar_chart(
        "a & b",
        [("way one", "9 tokens"), ("way <two>", "-")],
        [("right", [50.0, None]), ("none", [100.0, 0.0])],
    )
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("x") == str(scoring.LABEL_WIDTH)]
    assert [float(r.get("width", "")) for r in bars] == [
        scoring.PLOT_WIDTH * 0.5,
        scoring.PLOT_WIDTH * 1.0,
        0.0,
    ]
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "not measured" in texts
    assert "a & b" in texts
    assert "way <two>" in texts
    assert svg == scoring.bar_chart(
        "a & b",
        [("way one", "9 tokens"), ("way <two>", "-")],
        [("right", [50.0, None]), ("none", [100.0, 0.0])],
    )


def test_the_line_chart_draws_a_point_for_each_measured_value_on_a_scale_from_zero() -> None:
    panels: list[tuple[str, list[tuple[str, list[float | None]]]]] = [
        ("tokens <median>", [("full", [500.0, 1800.0, 900.0]), ("K=8", [None, 700.0, 650.0])]),
        ("seconds", [("full", [2.0, 8.0, 4.0]), ("K=8", [None, 3.0, 3.0])]),
    ]
    svg = scoring.line_chart("cost & size", "tools", ["7", "27", "107"], panels)
    root = ElementTree.fromstring(svg)
    assert root.tag == f"{SVG}svg"
    assert len(list(root.iter(f"{SVG}polyline"))) == 4
    points = [(float(c.get("cx", "")), float(c.get("cy", ""))) for c in root.iter(f"{SVG}circle")]
    assert len(points) == 10  # a point a measured value, none for None
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert {"cost & size", "tokens <median>", "1,800", "2.0", "2000", "10"} <= set(texts)
    # The tokens on a scale to 2,000 over the panel's 200 pixels: 500 and 1,800 stand 130 apart.
    heights = [y for _, y in points[:5]]
    assert max(heights) - min(heights) == pytest.approx(200 * (1800 - 500) / 2000, abs=0.2)
    assert svg == scoring.line_chart("cost & size", "tools", ["7", "27", "107"], panels)


@pytest.mark.model
def test_the_benchmark_runs_every_in_process_way_on_a_real_model(tmp_path: Path) -> None:
    """The whole run on the default model, in-process both ways: a result, a table and a chart,
    whatever the model chose."""
    out, svg = tmp_path / "result.json", tmp_path / "chart.svg"
    argv = ["--model", str(default_model_path()), "--limit", "2", "--demo", "1"]
    argv += ["--threads", str(TEST_THREADS), "--ways", "embedded-routed,embedded-native"]
    argv += ["--out", str(out), "--chart", str(svg)]
    done = subprocess.run(
        [sys.executable, "-m", VERSUS_NATIVE, *argv], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "| embedded-routed |" in done.stdout
    result = json.loads(out.read_text(encoding="utf-8"))
    assert result["cases"] == 2
    cases = [record["case"] for record in result["ways"]["embedded-routed"]["records"]]
    for way in ("embedded-routed", "embedded-native"):
        data = result["ways"][way]
        assert [record["case"] for record in data["records"]] == cases
        assert data["summary"]["decisions"] == 2
        assert len(data["demo"]) == 1
    routed = result["ways"]["embedded-routed"]["records"]
    assert all(record["malformed"] is None for record in routed if not record["runaway"])  # the grammar's
    assert ElementTree.fromstring(svg.read_text(encoding="utf-8")).tag == f"{SVG}svg"
    again = scoring.merged([result, result])
    assert again["ways"].keys() == result["ways"].keys()


def test_a_run_and_the_rest_of_it_join_case_by_case() -> None:
    """``--from-json`` joins a stopped run and its rest (``--skip``): each case once, from the
    first run that measured it, and the summary counted again over the joined cases."""

    def result(cases: list[str], tool: str | None) -> dict[str, Any]:
        records = [_record(["none"], tool) | {"case": case} for case in cases]
        way = {"records": records, "summary": scoring.summary(records), "demo": []}
        return {"model": "m.gguf", "cap": 256, "cases": len(cases), "command": "c", "ways": {"w": way}}

    joined = scoring.merged([result(["a", "b"], None), result(["b", "c"], "x")])
    assert joined["cases"] == 3
    records = joined["ways"]["w"]["records"]
    assert [(r["case"], r["tool"]) for r in records] == [("a", None), ("b", None), ("c", "x")]
    assert joined["ways"]["w"]["summary"]["none"] == [2, 3]
