"""Large catalogues: the shortlist's recall, the prompt it saves and the ranker's time, no model.

Run: .venv/bin/python benchmarks/shortlist.py  [--sizes 20,50,100,300] [--ks 4,8,16] [--seed 0]
                                              [--distractors FILE] [--rankers] [--limit N]

Each decision case (benchmarks/cases/*.jsonl) keeps its own tools and gets N distractors, drawn
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
``--rankers`` sets the default (SQLite FTS5) against a pure-Python BM25, ``bm25s`` and
``rank_bm25`` at 100 and 1,000 tools: build and query times (each the least of five tries,
the rankers taking turns, median over every fourth case), and recall@8. It needs the two libraries
and PyStemmer, which the project does not depend on: ``pip install bm25s rank-bm25 PyStemmer``.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from common import Case, Tokenizer, load_cases, load_catalogue

from toolrouting import catalogue_prompt, default_model_path
from toolrouting._catalogue import checked_catalogue
from toolrouting._shortlist import bm25_scores, query_terms, shortlist, shortlist_query, tool_text

ROOT = Path(__file__).resolve().parent.parent
MCP_CORPUS = sorted((ROOT / "tests" / "catalogues" / "mcp").glob("*.json"))
#: The full catalogue's instructions without the default budget: what the tools would cost
#: were the rendering never shortened to fit.
UNBUDGETED = 10_000_000

Tool = dict[str, Any]


def _stem(path: str | Path) -> str:
    return Path(path).stem


def pool(cases: Sequence[Case]) -> list[tuple[str, Tool]]:
    """Every distinct declaration of every case catalogue and MCP catalogue, with its source."""
    sources = sorted({case.catalogue for case in cases}) + [str(p.relative_to(ROOT)) for p in MCP_CORPUS]
    seen: set[str] = set()
    found = []
    for source in sources:
        for tool in load_catalogue(source):
            text = json.dumps(tool, sort_keys=True)
            if text not in seen:
                seen.add(text)
                found.append((source, tool))
    return found


def distractors(case: Case, everything: Sequence[tuple[str, Tool]], count: int, seed: int) -> list[Tool]:
    """``count`` distractors for ``case``, in draw order: the first N of them are size N's."""
    own = {tool["function"]["name"] for tool in load_catalogue(case.catalogue)}
    mine = [(source, tool) for source, tool in everything if source != case.catalogue]
    mine = [(source, tool) for source, tool in mine if tool["function"]["name"] not in own]
    names = Counter(tool["function"]["name"] for _, tool in mine)
    rng = random.Random(f"{seed}:{case.id}")
    drawn: list[Tool] = []
    instance = 1
    while len(drawn) < count:
        order = list(mine)
        rng.shuffle(order)
        for source, tool in order[: count - len(drawn)]:
            name = tool["function"]["name"]
            prefix = _stem(source) + ("" if instance == 1 else f"-{instance}")
            if names[name] > 1 or instance > 1:
                name = f"{prefix}__{name}"
            drawn.append({**tool, "function": {**tool["function"], "name": name}})
        instance += 1
    return drawn


def hidden(case: Case, drawn: Sequence[Tool], seed: int) -> list[Tool]:
    """The case's own tools at seeded places among ``drawn``."""
    tools = list(drawn)
    rng = random.Random(f"{seed}:{case.id}:{len(drawn)}")
    for tool in load_catalogue(case.catalogue):
        tools.insert(rng.randrange(len(tools) + 1), tool)
    return tools


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
        full, unbudgeted, short = [], [], {k: [] for k in ks}
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


# --- other BM25s, set against the default through the same seam ---


def _documents(tools: Sequence[Tool]) -> list[list[str]]:
    texts = [tool_text(tool) for tool in checked_catalogue(tools)]
    return [f"{t.name} {t.description} {t.parameters}".split() for t in texts]


class PurePython:
    """Okapi BM25 (k1 1.2, b 0.75, FTS5's defaults) in plain Python: one field, no stemming."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.documents = [Counter(words) for words in _documents(tools)]
        self.lengths = [sum(doc.values()) for doc in self.documents]
        self.average = statistics.mean(self.lengths) if self.lengths else 0.0
        self.frequency: Counter[str] = Counter(word for doc in self.documents for word in doc)

    def scores(self, query: str) -> list[float]:
        n = len(self.documents)
        scores = [0.0] * n
        for word in query_terms(query):
            found = self.frequency.get(word, 0)
            if not found:
                continue
            idf = math.log((n - found + 0.5) / (found + 0.5) + 1)
            for i, doc in enumerate(self.documents):
                tf = doc.get(word, 0)
                if tf:
                    norm = 1.2 * (1 - 0.75 + 0.75 * self.lengths[i] / self.average)
                    scores[i] += idf * tf * 2.2 / (tf + norm)
        return scores


class BM25S:
    """``bm25s`` (Lucene's BM25 on sparse matrices), over the same words, stemmed by PyStemmer."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        import bm25s
        import Stemmer

        self.stem = Stemmer.Stemmer("english").stemWords
        self.index = bm25s.BM25()
        self.index.index([self.stem(words) for words in _documents(tools)], show_progress=False)

    def scores(self, query: str) -> list[float]:
        words = self.stem(query_terms(query))
        return [float(s) for s in self.index.get_scores(words)]


class RankBM25:
    """``rank_bm25``'s ``BM25Okapi`` over the same words, no stemming."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        from rank_bm25 import BM25Okapi

        self.index = BM25Okapi(_documents(tools))

    def scores(self, query: str) -> list[float]:
        return [float(s) for s in self.index.get_scores(query_terms(query))]


class Default:
    """The default: ``bm25_scores`` checks the catalogue, reads it and builds its FTS5 table on
    every call, so all of its work is the query's."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.tools = tools

    def scores(self, query: str) -> list[float]:
        return bm25_scores(self.tools, query)


RANKERS = {"SQLite FTS5 (default)": Default, "pure Python": PurePython, "bm25s": BM25S, "rank_bm25": RankBM25}
#: Timings are the least of this many tries, the rankers taking turns: on a shared machine the
#: least is the one least disturbed by other work.
TRIES = 5
#: Every this many cases is timed; recall is counted on all of them.
TIMED_EVERY = 4


def _timed(make: Callable[[Sequence[Tool]], Any], tools: Sequence[Tool], query: str) -> tuple[float, float]:
    started = time.perf_counter()
    ranker = make(tools)
    built = time.perf_counter()
    ranker.scores(query)
    return built - started, time.perf_counter() - built


def rankers_table(cases: Sequence[Case], catalogues: Mapping[int, Mapping[str, list[Tool]]]) -> str:
    rows = [
        "| ranker | tools | build, ms | query, ms | build + query, ms | recall@8 |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    tool_cases = [case for case in cases if case.expect != ["none"]]
    for by_case in catalogues.values():
        timings: dict[str, list[tuple[float, float]]] = {name: [] for name in RANKERS}
        for case in tool_cases[::TIMED_EVERY]:
            tools, query = by_case[case.id], shortlist_query(case.messages)
            tries: dict[str, list[tuple[float, float]]] = {name: [] for name in RANKERS}
            for _ in range(TRIES):
                for name, make in RANKERS.items():
                    tries[name].append(_timed(make, tools, query))
            for name in RANKERS:
                timings[name].append(min(tries[name], key=sum))
        tools_mean = statistics.mean(len(by_case[c.id]) for c in tool_cases)
        for name, make in RANKERS.items():
            hits = 0
            for case in tool_cases:
                tools, query = by_case[case.id], shortlist_query(case.messages)
                scores = make(tools).scores(query)
                hits += bool(kept(tools, query, 8, lambda _t, _q, s=scores: s) & set(case.expect))
            builds, queries = (statistics.median(part) for part in zip(*timings[name], strict=True))
            total = statistics.median(b + q for b, q in timings[name])
            rows.append(
                f"| {name} | {tools_mean:.0f} | {1000 * builds:.1f} | {1000 * queries:.1f} "
                f"| {1000 * total:.1f} | {hits / len(tool_cases):.3f} ({hits}/{len(tool_cases)}) |"
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
    parser.add_argument("--rankers", action="store_true", help="set other BM25s against the default")
    args = parser.parse_args(argv)
    sizes, ks = _numbers(args.sizes), _numbers(args.ks)
    cases = load_cases()[: args.limit]
    everything = pool(load_cases())
    draws = {case.id: distractors(case, everything, max([*sizes, 1000]), args.seed) for case in cases}
    if args.distractors:
        names = {
            case_id: [t["function"]["name"] for t in drawn[: max(sizes)]] for case_id, drawn in draws.items()
        }
        args.distractors.write_text(json.dumps(names, indent=1) + "\n", encoding="utf-8")
    catalogues = {
        size: {case.id: hidden(case, draws[case.id][:size], args.seed) for case in cases}
        for size in [0, *sizes]
    }
    expected_none = sum(case.expect == ["none"] for case in cases)
    print(
        f"{len(cases)} cases ({len(cases) - expected_none} expect a tool, {expected_none} expect none), "
        f"pool of {len(everything)} declarations, seed {args.seed}, tokens of {default_model_path().name}\n"
    )
    print(size_table(cases, catalogues, ks, Tokenizer(default_model_path())))
    print()
    print(none_table(cases, {size: catalogues[size] for size in (0, 100)}))
    if args.rankers:
        large = {case.id: hidden(case, draws[case.id][:1000], args.seed) for case in cases}
        print()
        print(rankers_table(cases, {100: catalogues.get(100) or {}, 1000: large}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
