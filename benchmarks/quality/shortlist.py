"""Large catalogues: the shortlist's recall, the prompt it saves and the ranker's time, no model.

Run: .venv/bin/python -m benchmarks.quality.shortlist  [--sizes 20,50,100,300] [--ks 4,8,16] [--seed 0]
                                              [--distractors FILE] [--limit N]

Each decision case (benchmarks/cases/*.jsonl) keeps its own tools and gets N distractors
(distractors.py, the draw shortlist_decisions.py asks the model over), drawn
with a seed of its own from every other scenario's catalogue and the real MCP catalogues in
tests/catalogues/mcp: each distinct declaration once, none named like one of the case's own
tools. A distractor keeps its name unless two in the pool share it; then it is namespaced by its
source as ``MCPTools`` does (``teb-tc70__send_email``). Past the pool (146 to 217 distractors a
case) the draw takes the pool again as a second instance of each source (``teb-tc70-2__...``).
The N distractors of a size are the first N of the larger ones, and the case's own tools stand
at seeded places among them. ``--distractors FILE`` writes every case's list.

For each size (0: the case's own tools alone) it prints recall@K of the default ranker (the
share of the cases that expect a tool whose expected tool is among the K kept), the prompt
tokens of the catalogue instructions (``catalogue_prompt``, what ``RoutingLoop`` sends), full
and shortlisted, counted by the default model's tokenizer, and the shortlist's milliseconds.
Then the ``none`` evidence: the best BM25 score of a case, for the cases that expect ``none``
against those that expect a tool, a threshold fitted on half the cases and scored on the other.
The default ranker was chosen against a pure-Python BM25, ``bm25s`` and ``rank_bm25``; that
comparison left the script once it was measured (docs/benchmarks/history.md gives its figures and the
commit that holds it).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from benchmarks.common.corpus import Case, load_cases
from benchmarks.common.servers import Tokenizer
from benchmarks.quality.distractors import Tool, hidden_catalogues, pool
from toolrouting import catalogue_prompt, default_model_path
from toolrouting._shortlist import bm25_scores, shortlist, shortlist_query

#: The full catalogue's instructions without the default budget: what the tools would cost
#: were the rendering never shortened to fit.
UNBUDGETED = 10_000_000


def kept(tools: Sequence[Tool], query: str, k: int, ranker: Callable[..., Sequence[float]]) -> set[str]:
    return {tool["function"]["name"] for tool in shortlist(tools, query, k, ranker=ranker)}


def size_table(
    cases: Sequence[Case],
    catalogues: Mapping[int, Mapping[str, list[Tool]]],
    ks: Sequence[int],
    tokenizer: Tokenizer,
) -> str:
    header = (
        "| distractors | tools, mean | "
        + " | ".join(f"recall@{k}" for k in ks)
        + " | prompt tokens, full (unbudgeted) | "
        + " | ".join(f"K={k}" for k in ks)
        + f" | K={ks[len(ks) // 2]} / full (/ unbudgeted) | ms a shortlist, median (max) |"
    )
    rows = [header, "|" + "---:|" * (5 + 2 * len(ks))]
    tool_cases = [case for case in cases if case.expect != ["none"]]
    for size, by_case in catalogues.items():
        hits = dict.fromkeys(ks, 0)
        full: list[int] = []
        unbudgeted: list[int] = []
        short: dict[int, list[int]] = {k: [] for k in ks}
        seconds = []
        for case in cases:
            tools = by_case[case.id]
            query = shortlist_query(case.messages)
            full.append(tokenizer.count(catalogue_prompt(tools)))
            unbudgeted.append(tokenizer.count(catalogue_prompt(tools, max_chars=UNBUDGETED)))
            for k in ks:
                started = time.perf_counter()
                offered = shortlist(tools, query, k)
                seconds.append(time.perf_counter() - started)
                short[k].append(tokenizer.count(catalogue_prompt(offered)))
                if case.expect != ["none"]:
                    hits[k] += bool({t["function"]["name"] for t in offered} & set(case.expect))
        n = len(tool_cases)
        middle = ks[len(ks) // 2]
        rows.append(
            f"| {size} | {statistics.mean(len(t) for t in by_case.values()):.0f} | "
            + " | ".join(f"{hits[k] / n:.3f} ({hits[k]}/{n})" for k in ks)
            + f" | {statistics.mean(full):.0f} ({statistics.mean(unbudgeted):.0f}) | "
            + " | ".join(f"{statistics.mean(short[k]):.0f}" for k in ks)
            + f" | {statistics.mean(short[middle]) / statistics.mean(full):.2f}×"
            + f" ({statistics.mean(short[middle]) / statistics.mean(unbudgeted):.2f}×) | "
            + f"{1000 * statistics.median(seconds):.1f} ({1000 * max(seconds):.1f}) |"
        )
    return "\n".join(rows)


# --- the none evidence ---


def _best(tools: Sequence[Tool], query: str) -> float:
    return max(bm25_scores(tools, query), default=0.0)


def _rates(
    best: Mapping[str, float], part: Sequence[Case], threshold: float
) -> tuple[float, float, int, int, int, int]:
    """Of ``part``: the share of none cases below ``threshold``, of tool cases at or above it."""
    none = [c for c in part if c.expect == ["none"]]
    tool = [c for c in part if c.expect != ["none"]]
    low = sum(best[c.id] < threshold for c in none)
    high = sum(best[c.id] >= threshold for c in tool)
    return low / len(none), high / len(tool), low, len(none), high, len(tool)


def _quartiles(best: Mapping[str, float], part: Sequence[Case]) -> str:
    values = sorted(best[c.id] for c in part)
    q = statistics.quantiles(values, n=4)
    return f"{values[0]:.1f} / {q[0]:.1f} / {q[1]:.1f} / {q[2]:.1f} / {values[-1]:.1f}"


def none_table(cases: Sequence[Case], catalogues: Mapping[int, Mapping[str, list[Tool]]]) -> str:
    """The best score of each case, by class; a threshold fitted on the even cases, scored on the odd."""
    rows = [
        "| distractors | best score, none expected: quartiles | tool expected: quartiles "
        "| threshold (fitted on half) | none kept, other half | tool cases kept, other half |",
        "|---:|---|---|---:|---:|---:|",
    ]
    ordered = sorted(cases, key=lambda case: case.id)
    for size, by_case in catalogues.items():
        best = {case.id: _best(by_case[case.id], shortlist_query(case.messages)) for case in ordered}
        fit, held = ordered[0::2], ordered[1::2]
        candidates = sorted({0.0, *best.values(), math.inf})
        threshold = max(candidates, key=lambda t: (sum(_rates(best, fit, t)[:2]), -t))
        none_rate, tool_rate, low, nones, high, tools = _rates(best, held, threshold)
        rows.append(
            f"| {size} | {_quartiles(best, [c for c in ordered if c.expect == ['none']])} "
            f"| {_quartiles(best, [c for c in ordered if c.expect != ['none']])} | {threshold:.3g} "
            f"| {none_rate:.0%} ({low}/{nones}) | {tool_rate:.0%} ({high}/{tools}) |"
        )
    return "\n".join(rows)


def _numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--sizes", default="20,50,100,300", help="distractor counts, comma-separated")
    parser.add_argument("--ks", default="4,8,16", help="shortlist sizes, comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--limit", type=int, help="the first N cases only (a quick look)")
    parser.add_argument("--distractors", type=Path, help="write each case's distractor names here (JSON)")
    args = parser.parse_args(argv)
    sizes, ks = _numbers(args.sizes), _numbers(args.ks)
    cases = load_cases()[: args.limit]
    everything = pool(load_cases())
    draws, catalogues = hidden_catalogues(cases, everything, sizes, args.seed)
    if args.distractors:
        names = {
            case_id: [t["function"]["name"] for t in drawn[: max(sizes)]] for case_id, drawn in draws.items()
        }
        args.distractors.write_text(json.dumps(names, indent=1) + "\n", encoding="utf-8")
    expected_none = sum(case.expect == ["none"] for case in cases)
    print(
        f"{len(cases)} cases ({len(cases) - expected_none} expect a tool, {expected_none} expect none), "
        f"pool of {len(everything)} declarations, seed {args.seed}, tokens of {default_model_path().name}\n"
    )
    print(size_table(cases, catalogues, ks, Tokenizer(default_model_path())))
    print()
    print(none_table(cases, {size: catalogues[size] for size in (0, 100) if size in catalogues}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
