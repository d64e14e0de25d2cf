"""Large catalogues, the model's decisions: the full catalogue against the shortlist, one run.

Run: .venv/bin/python -m benchmarks.quality.shortlist_decisions  [--model PATH.gguf] [--limit N]
         [--sizes 20,50,100,300] [--ks 8,4] [--bm25] [--no-full] [--seed 0] [--threads N]
         [--out result.json] [--chart chart.svg] [--from-json result.json]

The decision cases (``--limit`` of them spread over the set, as decisions.py picks them) are
hidden among 20, 50, 100 and 300 distractors, the draw shortlist.py measures the ranker on
(distractors.py). Each case is asked one routed decision, ``RoutingLoop``'s first action with
the loop's defaults (native_ways.py's ``Routed``), per way, all ways of a case in turn:

- ``own``: the case's own tools alone, no distractors;
- ``full``: the whole catalogue of a size, what ``RoutingLoop`` sends (``catalogue_prompt``
  under its default budget, and the route grammar of every tool);
- ``K=8`` (each of ``--ks``): ``shortlist(tools, shortlist_query(messages), K, ranker=R)``, what
  the first round of ``RoutingLoop(shortlist=K, ranker=R)`` offers, R the hybrid of meanings and
  BM25 (``IndexedRanker(semantic=True)``, the semantic extra), the default ranker before;
- ``K=8 BM25`` (with ``--bm25``): the same with ``ranker=bm25_scores``, which scores as the
  default ranker does now (docs/benchmarks/catalogues.md, "The default ranker, chosen by
  decisions").

``--no-full`` leaves the full catalogue out (its prompt is the dearest at 300 distractors), for
a run that compares rankers only.

Without ``--model`` it measures the default model. Greedy, seed ``--seed``. Scored as
versus_native.py scores a way (scoring.py): the right tool where one is expected, ``none``
where none is, recall (the expected tool among those offered), prompt tokens and seconds per
decision (medians), cap hits. Then the ratios against ``full``, and the ``none`` evidence: the
rule "offer ``none`` alone when no tool's BM25 score reaches T", T fitted on the even cases
(by id) to the best sum of the two rates of the rule applied to the model's outcomes, scored
on the odd ones against the model alone. Writes the records as JSON (``--out``, after every
case, so a stopped run keeps what it measured; cases run in an order whose every prefix is
spread over the set), a chart of a decision's prompt tokens and seconds against catalogue size
(``--chart``), and prints Markdown tables; ``--from-json`` renders those of a saved result.
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import Case, load_cases, spread
from benchmarks.common.scoring import line_chart, score, summary
from benchmarks.quality.distractors import Tool, hidden_catalogues, pool
from benchmarks.quality.native_ways import Routed
from toolrouting import (
    DEFAULT_ROUTING_CAP,
    EmbeddedLlama,
    IndexedRanker,
    Ranker,
    Settings,
    bm25_scores,
    shortlist,
    shortlist_query,
)

#: Room for the largest full catalogue (about 3,000 tokens under the default budget) beside a
#: conversation.
N_CTX = 8192
Record = dict[str, Any]


def run_order(cases: Sequence[Case]) -> list[Case]:
    """``cases`` in the order of their indices' bit-reversal: every prefix is spread over the set."""
    bits = max(1, (len(cases) - 1).bit_length())
    keys = {index: int(f"{index:0{bits}b}"[::-1], 2) for index in range(len(cases))}
    return [cases[index] for index in sorted(keys, key=keys.__getitem__)]


def offered(way: str, tools: list[Tool], case: Case) -> list[Tool]:
    """What the way offers of a size's catalogue."""
    if way.startswith("K="):
        k, _, ranker = way[2:].partition(" ")
        return shortlist(tools, shortlist_query(case.messages), int(k), ranker=way_ranker(ranker))
    return tools


def way_ranker(name: str) -> Ranker:
    """The ranker of a way by the word after its K: none is the hybrid, one a process; BM25 is
    ``bm25_scores``."""
    return bm25_scores if name == "BM25" else _hybrid()


@functools.cache
def _hybrid() -> IndexedRanker:
    return IndexedRanker(semantic=True)


def measure(args: argparse.Namespace, out: Path) -> dict[str, Any]:
    every = load_cases()
    cases = spread(every, args.limit)
    everything = pool(every)
    _, catalogues = hidden_catalogues(cases, everything, args.sizes, args.seed)
    shortlists = [*(f"K={k}" for k in args.ks), *(f"K={k} BM25" for k in args.ks if args.bm25)]
    ways = shortlists if args.no_full else ["full", *shortlists]
    settings = Settings(temperature=0.0, seed=args.seed)
    result: dict[str, Any] = {
        "command": " ".join(sys.argv),
        "machine": f"{os.cpu_count()} cores, Python {platform.python_version()}",
        "cases": len(cases),
        "seed": args.seed,
        "threads": args.threads,
        "sizes": args.sizes,
        "ways": ways,
        "ranker": repr(_hybrid()),
        "cap": DEFAULT_ROUTING_CAP,
        "tools": {
            str(size): statistics.mean(len(by_case[c.id]) for c in cases)
            for size, by_case in catalogues.items()
        },
        # The best BM25 score of each case over each size's full catalogue: the none evidence.
        "best": {
            str(size): {
                c.id: max(bm25_scores(by_case[c.id], shortlist_query(c.messages)), default=0.0) for c in cases
            }
            for size, by_case in catalogues.items()
        },
        "records": [],
    }
    started = time.perf_counter()
    with EmbeddedLlama(
        args.model, n_ctx=N_CTX, n_threads=args.threads, settings=settings, seed=args.seed
    ) as backend:
        result["model"] = backend.model_path.name
        routed = Routed(backend, DEFAULT_ROUTING_CAP)
        for case in run_order(cases):
            asked = [(0, "own")] + [(size, way) for size in args.sizes for way in ways]
            for size, way in asked:
                tools = offered(way, catalogues[size][case.id], case)
                record = score(routed.decide(tools, case.messages), case, tools)
                names = {tool["function"]["name"] for tool in tools}
                record.update(size=size, way=way, offered=len(tools), recalled=bool(names & set(case.expect)))
                result["records"].append(record)
                print(f"{size} {way} {case.id}: {record['tool']} ({record['seconds']} s)", file=sys.stderr)
            result["seconds"] = round(time.perf_counter() - started)
            save(result, out)
    return result


def save(result: dict[str, Any], out: Path) -> None:
    """Write ``result`` whole or not at all: a reader never sees a half-written file."""
    partial = out.with_name(out.name + ".partial")
    partial.write_text(json.dumps(result, indent=1, ensure_ascii=False), encoding="utf-8")
    os.replace(partial, out)


def complete(result: Mapping[str, Any]) -> list[Record]:
    """The records of the cases every way answered (a stopped run's last case may be partial)."""
    per_case = 1 + len(result["sizes"]) * len(result["ways"])
    counts: dict[str, int] = {}
    for record in result["records"]:
        counts[record["case"]] = counts.get(record["case"], 0) + 1
    return [r for r in result["records"] if counts[r["case"]] == per_case]


def groups(result: Mapping[str, Any]) -> dict[tuple[int, str], list[Record]]:
    """The records by (size, way), in the order the tables show them."""
    found: dict[tuple[int, str], list[Record]] = {(0, "own"): []}
    for size in result["sizes"]:
        for way in result["ways"]:
            found[(size, way)] = []
    for record in complete(result):
        found[(record["size"], record["way"])].append(record)
    return found


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}% ({part}/{whole})" if whole else "-"


def outcomes_table(result: Mapping[str, Any]) -> str:
    rows = [
        "| distractors | way | tools offered, mean | recall | right tool (tool expected) "
        "| `none` (none expected) | balanced accuracy | prompt tokens, median "
        "| seconds per decision, median | cap hits | malformed |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for (size, way), records in groups(result).items():
        s = summary(records)
        tool_cases = [r for r in records if r["expect"] != ["none"]]
        recalled = sum(r["recalled"] for r in tool_cases)
        rows.append(
            f"| {size} | {way} | {statistics.mean(r['offered'] for r in records):.0f} "
            f"| {_pct(recalled, len(tool_cases))} | {_pct(*s['right_tool'])} | {_pct(*s['none'])} "
            f"| {s['balanced_accuracy_pct']}% | {s['median_prompt_tokens']:g} | {s['median_seconds']:.2f} "
            f"| {s['runaways']} | {s['malformed']} |"
        )
    return "\n".join(rows)


def ratios_table(result: Mapping[str, Any]) -> str:
    """Each shortlist against ``full`` of its size, and its right tool against ``own``'s."""
    found = groups(result)
    own = summary(found[(0, "own")])["right_tool_pct"]
    rows = [
        "| distractors | way | prompt tokens / full | seconds / full | right tool, points against own "
        "| against full |",
        "|---:|---|---:|---:|---:|---:|",
    ]
    if "full" not in result["ways"]:
        return "(no full catalogue asked: --no-full)"
    for size in result["sizes"]:
        full = summary(found[(size, "full")])
        for way in result["ways"]:
            s = summary(found[(size, way)])
            rows.append(
                f"| {size} | {way} | {s['median_prompt_tokens'] / full['median_prompt_tokens']:.2f}× "
                f"| {s['median_seconds'] / full['median_seconds']:.2f}× "
                f"| {s['right_tool_pct'] - own:+.1f} | {s['right_tool_pct'] - full['right_tool_pct']:+.1f} |"
            )
    return "\n".join(rows)


# --- the none evidence ---


def _right(record: Record, best: float, threshold: float) -> bool:
    """Whether the decision is right under the rule: ``none`` alone below ``threshold``."""
    if best < threshold:
        return bool(record["expect"] == ["none"])
    if record["expect"] == ["none"]:
        return record["malformed"] is None and record["tool"] is None
    return record["malformed"] is None and record["tool"] in record["expect"]


def _rates(
    records: Sequence[Record], best: Mapping[str, float], threshold: float
) -> tuple[int, int, int, int]:
    """``none`` right, none cases, right tool, tool cases."""
    none = [r for r in records if r["expect"] == ["none"]]
    tool = [r for r in records if r["expect"] != ["none"]]
    return (
        sum(_right(r, best[r["case"]], threshold) for r in none),
        len(none),
        sum(_right(r, best[r["case"]], threshold) for r in tool),
        len(tool),
    )


def fitted(records: Sequence[Record], best: Mapping[str, float]) -> float:
    """The threshold of the best sum of the two rates on ``records`` (0: no rule), the lowest of ties."""

    def balanced(threshold: float) -> float:
        right_none, nones, right_tool, tools = _rates(records, best, threshold)
        return right_none / max(nones, 1) + right_tool / max(tools, 1)

    candidates = sorted({0.0, *(best[r["case"]] for r in records)} | {math.inf})
    return max(candidates, key=lambda t: (balanced(t), -t))


def none_table(result: Mapping[str, Any]) -> str:
    rows = [
        "| distractors | way | threshold (fitted on even cases) | `none`, odd cases: model alone "
        "| with the rule | right tool, odd cases: model alone | with the rule |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    order = sorted({r["case"] for r in complete(result)})
    even, odd = set(order[0::2]), set(order[1::2])
    for (size, way), records in groups(result).items():
        best = result["best"][str(size)]
        threshold = fitted([r for r in records if r["case"] in even], best)
        held = [r for r in records if r["case"] in odd]
        alone, rule = _rates(held, best, 0.0), _rates(held, best, threshold)
        rows.append(
            f"| {size} | {way} | {threshold:.3g} | {_pct(*alone[:2])} | {_pct(*rule[:2])} "
            f"| {_pct(*alone[2:])} | {_pct(*rule[2:])} |"
        )
    return "\n".join(rows)


def chart(results: Sequence[Mapping[str, Any]]) -> str:
    """Each result's prompt tokens and seconds per decision (medians) against the catalogue's
    size, a row a result, a line a way, over the sizes of the first."""
    sizes = [0, *results[0]["sizes"]]
    labels = ["0 (own)", *(str(size) for size in sizes[1:])]
    panels = []
    for result in results:
        found = groups(result)
        model = re.sub(r"-?[0-9a-f]{64}|\.gguf$|-[Ii]nstruct.*$", "", result["model"])
        for key, name in (("median_prompt_tokens", "prompt tokens"), ("median_seconds", "seconds")):
            series = []
            for way in results[0]["ways"]:
                shown = "full catalogue" if way == "full" else f"shortlist, {way}"
                values = [summary(found[(0, "own")])[key] if way == "full" else None]
                values += [
                    summary(found[(size, way)])[key] if (size, way) in found else None for size in sizes[1:]
                ]
                series.append((shown, values))
            cases = len(found[(0, "own")])
            panels.append((f"{model} ({cases} cases): {name}", series))
    title = "A decision's cost against the catalogue's size, medians: the full catalogue and the shortlist"
    return line_chart(title, "distractors beside the case's own tools", labels, panels)


def _numbers(text: str) -> list[int]:
    return [int(part) for part in text.split(",") if part.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", help="a GGUF file (default: the embedded default model)")
    parser.add_argument("--limit", type=int, help="this many cases, spread evenly over the set")
    parser.add_argument("--sizes", type=_numbers, default=[20, 50, 100, 300], help="distractor counts")
    parser.add_argument("--ks", type=_numbers, default=[8, 4], help="shortlist sizes, comma-separated")
    parser.add_argument("--bm25", action="store_true", help="each K again, ranked by BM25 alone")
    parser.add_argument(
        "--no-full", action="store_true", help="only the shortlists and own tools, no full catalogue"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int)
    parser.add_argument("--out", type=Path, default=Path("shortlist_decisions.json"))
    parser.add_argument("--chart", type=Path, help="write the cost chart (SVG) here")
    parser.add_argument(
        "--from-json", type=Path, nargs="+", help="render the tables of saved results, and one chart of them"
    )
    args = parser.parse_args(argv)
    if args.from_json:
        results = [json.loads(path.read_text(encoding="utf-8")) for path in args.from_json]
    else:
        results = [measure(args, args.out)]
    if args.chart:
        args.chart.write_text(chart(results), encoding="utf-8")
    for result in results:
        per_case = 1 + len(result["sizes"]) * len(result["ways"])
        print(
            f"{result['model']}, {len(complete(result)) // per_case} of {result['cases']} cases, greedy, "
            f"seed {result['seed']}, {result['threads']} threads, routing cap {result['cap']}, "
            f"{result['machine']}, {result.get('seconds', '?')} s in all, "
            f"shortlists by {result.get('ranker', 'BM25')}\n"
        )
        print(outcomes_table(result), ratios_table(result), none_table(result), sep="\n\n", end="\n\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
