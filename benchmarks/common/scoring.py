"""A way's decisions scored as records, summed, and charted.

- a decision as a ``Reply``; a chat completion's tool call read as one (``native_reply``);
- a case's record (``score``), a way's figures over its records (``summary``), and the records
  of a stopped run joined with the rest of it (``merged``; versus_native.py's ``--from-json``);
- a grouped bar chart as SVG (``bar_chart``), and lines of several panels (``line_chart``).

A module of benchmarks/ a test may import (tests/project/test_architecture.py), for
tests/benchmarks/test_benchmarks_versus_native.py checks the scoring and the chart: importing it
loads no model and imports nothing of tests/, and jsonschema is imported only when a case is
scored.
"""

from __future__ import annotations

import json
import math
import statistics
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape

from benchmarks.common.corpus import Case, arguments_pass


@dataclass
class Reply:
    """One decision: ``tool`` is ``None`` when the reply called no tool."""

    tool: str | None
    arguments: dict[str, Any] | None = None
    malformed: str | None = None
    truncated: bool = False
    prompt_tokens: int = 0
    completion_tokens: int = 0
    seconds: float = 0.0
    text: str = ""


def native_reply(body: dict[str, Any], names: Sequence[str], seconds: float, cap: int) -> Reply:
    """A native chat completion read as a decision: its first tool call, or none.

    It ran away when it stopped at its cap, or wrote as many tokens as the cap allows: the
    ``chatml-function-calling`` handler leaves its inner completions uncapped."""
    choice = body["choices"][0]
    message = choice.get("message") or {}
    usage = body.get("usage") or {}
    completion_tokens = int(usage.get("completion_tokens") or 0)
    reply = Reply(
        tool=None,
        truncated=choice.get("finish_reason") == "length" or completion_tokens >= cap,
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=completion_tokens,
        seconds=seconds,
        text=message.get("content") or "",
    )
    calls = message.get("tool_calls") or []
    if not calls:
        return reply
    function = calls[0].get("function") or {}
    reply.tool = str(function.get("name"))
    reply.text = json.dumps(calls, ensure_ascii=False)
    if reply.tool not in names:
        reply.malformed = f"a tool not in the catalogue: {reply.tool[:40]!r}"
        return reply
    raw = function.get("arguments")
    try:
        arguments = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        reply.malformed = "arguments that do not parse as JSON"
        return reply
    if not isinstance(arguments, dict):
        reply.malformed = "arguments that are not a JSON object"
        return reply
    reply.arguments = arguments
    return reply


def score(reply: Reply, case: Case, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """One case's record: what the way chose and how it scores."""
    import jsonschema

    record: dict[str, Any] = {
        "case": case.id,
        "expect": case.expect,
        "tool": reply.tool,
        "malformed": reply.malformed,
        "runaway": reply.truncated,
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "seconds": round(reply.seconds, 3),
        "text": reply.text[:300],
        "arguments_valid": None,
        "arguments_right": None,
    }
    parameters = {t["function"]["name"]: t["function"].get("parameters") or {} for t in tools}
    if reply.malformed is None and reply.tool in parameters and reply.arguments is not None:
        schema = parameters[reply.tool]
        validator = jsonschema.validators.validator_for(schema)(schema)
        record["arguments_valid"] = validator.is_valid(reply.arguments)
        if reply.tool in case.expect and case.arguments:
            record["arguments_right"] = arguments_pass(case.arguments, reply.arguments)
    return record


def summary(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """A way's figures over its records: the two rates and their mean, arguments, tokens, seconds."""
    tool_cases = [r for r in records if r["expect"] != ["none"]]
    none_cases = [r for r in records if r["expect"] == ["none"]]
    right_tool = sum(r["malformed"] is None and r["tool"] in r["expect"] for r in tool_cases)
    right_none = sum(r["malformed"] is None and r["tool"] is None for r in none_cases)
    valid = [r["arguments_valid"] for r in records if r["arguments_valid"] is not None]
    right = [r["arguments_right"] for r in records if r["arguments_right"] is not None]

    def percent(part: int, whole: int) -> float | None:
        return round(100.0 * part / whole, 1) if whole else None

    def median(key: str) -> float | None:
        return statistics.median(r[key] for r in records) if records else None

    tool_rate, none_rate = percent(right_tool, len(tool_cases)), percent(right_none, len(none_cases))
    rates = [rate for rate in (tool_rate, none_rate) if rate is not None]
    seconds = median("seconds")
    return {
        "decisions": len(records),
        "right_tool": [right_tool, len(tool_cases)],
        "right_tool_pct": tool_rate,
        "none": [right_none, len(none_cases)],
        "none_pct": none_rate,
        "balanced_accuracy_pct": round(statistics.mean(rates), 1) if rates else None,
        "arguments_valid": [sum(valid), len(valid)],
        "arguments_valid_pct": percent(sum(valid), len(valid)),
        "arguments_right": [sum(right), len(right)],
        "malformed": sum(r["malformed"] is not None for r in records),
        "runaways": sum(r["runaway"] for r in records),
        "median_prompt_tokens": median("prompt_tokens"),
        "median_completion_tokens": median("completion_tokens"),
        "median_seconds": None if seconds is None else round(seconds, 2),
    }


def merged(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """One result of several runs on the same model and cap: each way's decisions joined case by
    case (a case measured twice counts from the first run that measured it, so a run and the
    rest of it after a stop make one), and its demo runs from the first run that measured them;
    the commands are kept, one a line."""
    first = results[0]
    for other in results[1:]:
        if (other["model"], other["cap"]) != (first["model"], first["cap"]):
            sys.exit("--from-json: the results are not of the same model and cap")
    ways: dict[str, Any] = {}
    cases: set[str] = set()
    for result in results:
        for way, data in result["ways"].items():
            into = ways.setdefault(way, {"records": [], "demo": []})
            seen = {record["case"] for record in into["records"]}
            into["records"] += [record for record in data["records"] if record["case"] not in seen]
            cases |= {record["case"] for record in data["records"]}
            if data.get("demo") and not into["demo"]:
                into["demo"], into["demo_summary"] = data["demo"], data["demo_summary"]
    for data in ways.values():
        if data["records"]:
            data["summary"] = summary(data["records"])
    commands = "\n".join(result["command"] for result in results)
    seconds = sum(result.get("seconds", 0) for result in results)
    return {**first, "cases": len(cases), "ways": ways, "command": commands, "seconds": seconds}


# --- a grouped bar chart ---

#: Colours from the Okabe-Ito palette, told apart with colour blindness too.
COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
#: Where the bars start (the labels' width) and how long a bar of 100% is, in pixels.
LABEL_WIDTH = 190
PLOT_WIDTH = 360
_BAR = 14
_GAP = 4
_GROUP_GAP = 14
_TOP = 58


def _chart_head(width: int, height: int, title: str, names: Sequence[str]) -> list[str]:
    """An SVG chart's opening: its frame, white ground and title, then a legend of ``names``,
    a colour each (``COLOURS`` in turn); both charts begin so."""
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="8" y="18" font-size="14" font-weight="bold">{escape(title)}</text>',
    ]
    x = 8
    for index, name in enumerate(names):
        colour = COLOURS[index % len(COLOURS)]
        out.append(f'<rect x="{x}" y="30" width="10" height="10" fill="{colour}"/>')
        out.append(f'<text x="{x + 14}" y="39">{escape(name)}</text>')
        x += 22 + 7 * len(name)
    return out


def bar_chart(
    title: str, groups: Sequence[tuple[str, str]], series: Sequence[tuple[str, Sequence[float | None]]]
) -> str:
    """SVG of ``series`` (name, one percentage per group, ``None`` for not measured) over
    ``groups`` (label, a second line such as the tokens and seconds): one group of horizontal
    bars a row, each labelled with its value, and a legend; byte-stable for the same input."""
    per_group = len(series) * (_BAR + _GAP) + _GROUP_GAP
    height = _TOP + len(groups) * per_group + 16
    width = LABEL_WIDTH + PLOT_WIDTH + 70
    out = _chart_head(width, height, title, [name for name, _ in series])
    for tick in (0, 50, 100):
        tx = LABEL_WIDTH + PLOT_WIDTH * tick / 100
        out.append(f'<line x1="{tx:.1f}" y1="{_TOP - 6}" x2="{tx:.1f}" y2="{height - 12}" stroke="#dddddd"/>')
        out.append(f'<text x="{tx:.1f}" y="{height - 2}" text-anchor="middle" fill="#666666">{tick}%</text>')
    for row, (label, note) in enumerate(groups):
        top = _TOP + row * per_group
        middle = top + len(series) * (_BAR + _GAP) / 2
        out.append(
            f'<text x="{LABEL_WIDTH - 8}" y="{middle - 2:.1f}" text-anchor="end">{escape(label)}</text>'
        )
        out.append(
            f'<text x="{LABEL_WIDTH - 8}" y="{middle + 12:.1f}" text-anchor="end" fill="#666666" '
            f'font-size="10">{escape(note)}</text>'
        )
        for index, (_, values) in enumerate(series):
            value = values[row]
            y = top + index * (_BAR + _GAP)
            if value is None:
                out.append(
                    f'<text x="{LABEL_WIDTH + 4}" y="{y + _BAR - 3}" fill="#666666">not measured</text>'
                )
                continue
            length = PLOT_WIDTH * max(0.0, min(value, 100.0)) / 100
            colour = COLOURS[index % len(COLOURS)]
            out.append(
                f'<rect x="{LABEL_WIDTH}" y="{y}" width="{length:.1f}" height="{_BAR}" fill="{colour}"/>'
            )
            out.append(f'<text x="{LABEL_WIDTH + length + 4:.1f}" y="{y + _BAR - 3}">{value:.0f}%</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


# --- a line chart of several panels ---

_PANEL_WIDTH = 330
_PANEL_HEIGHT = 200
_PANEL_LEFT = 60
_PANEL_GAP = 40
_ROW_GAP = 70


def _nice_top(value: float) -> float:
    """The smallest of 1, 2 or 5 times a power of ten at or above ``value``."""
    if value <= 0:
        return 1.0
    power = 10.0 ** math.floor(math.log10(value))
    return next(step * power for step in (1, 2, 5, 10) if step * power >= value)


def line_chart(
    title: str,
    x_title: str,
    x_labels: Sequence[str],
    panels: Sequence[tuple[str, Sequence[tuple[str, Sequence[float | None]]]]],
    columns: int = 2,
) -> str:
    """SVG of ``panels``, ``columns`` a row (a title each, and series: a name, one value per x
    label, ``None`` where not measured), each a line of points over the same categorical x axis,
    its y axis from 0, a line through each run of measured values, the points labelled with their
    values (the first two series' above them, the others' below), one legend; byte-stable for the
    same input."""
    across = max(1, min(columns, len(panels)))
    rows = -(-len(panels) // across)
    width = _PANEL_LEFT + across * (_PANEL_WIDTH + _PANEL_GAP)
    height = _TOP + rows * (_PANEL_HEIGHT + _ROW_GAP)
    out = _chart_head(width, height, title, [name for name, _ in (panels[0][1] if panels else [])])
    step = _PANEL_WIDTH / max(len(x_labels), 1)
    for number, (panel_title, series) in enumerate(panels):
        left = _PANEL_LEFT + number % across * (_PANEL_WIDTH + _PANEL_GAP)
        top = _TOP + 20 + number // across * (_PANEL_HEIGHT + _ROW_GAP)
        peak = _nice_top(max((v for _, values in series for v in values if v is not None), default=1.0))
        middle = left + _PANEL_WIDTH / 2
        out.append(f'<text x="{middle:.1f}" y="{top - 10}" text-anchor="middle">{escape(panel_title)}</text>')
        for tick in (0.0, 0.5, 1.0):
            y = top + _PANEL_HEIGHT * (1 - tick)
            out.append(
                f'<line x1="{left}" y1="{y:.1f}" x2="{left + _PANEL_WIDTH}" y2="{y:.1f}" stroke="#dddddd"/>'
            )
            out.append(
                f'<text x="{left - 4}" y="{y + 4:.1f}" text-anchor="end" '
                f'fill="#666666">{peak * tick:g}</text>'
            )
        for index, label in enumerate(x_labels):
            lx = left + step * (index + 0.5)
            out.append(
                f'<text x="{lx:.1f}" y="{top + _PANEL_HEIGHT + 16}" text-anchor="middle" '
                f'fill="#666666">{escape(label)}</text>'
            )
        out.append(
            f'<text x="{middle:.1f}" y="{top + _PANEL_HEIGHT + 34}" text-anchor="middle" '
            f'fill="#666666" font-size="10">{escape(x_title)}</text>'
        )
        for index, (_, values) in enumerate(series):
            colour = COLOURS[index % len(COLOURS)]
            at = [
                (left + step * (i + 0.5), None if v is None else top + _PANEL_HEIGHT * (1 - v / peak), v)
                for i, v in enumerate(values)
            ]
            points = [(px, py, v) for px, py, v in at if py is not None and v is not None]
            # A line through each run of measured values: broken where one is not measured.
            runs = " ".join(f"{px:.1f},{py:.1f}" if py is not None else "|" for px, py, _ in at).split("|")
            for run in (run.strip() for run in runs):
                if " " in run:
                    out.append(f'<polyline points="{run}" fill="none" stroke="{colour}" stroke-width="2"/>')
            for px, py, value in points:
                out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>')
                shown = f"{value:,.0f}" if abs(value) >= 10 else f"{value:.1f}"
                ly = py - 6 if index < 2 else py + 14  # the third and later series labelled below
                out.append(
                    f'<text x="{px:.1f}" y="{ly:.1f}" text-anchor="middle" font-size="10" '
                    f'fill="{colour}">{shown}</text>'
                )
    out.append("</svg>")
    return "\n".join(out) + "\n"
