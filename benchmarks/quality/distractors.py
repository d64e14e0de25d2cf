"""The decision cases hidden among distractors: the seeded draw the shortlist benchmarks share.

Each decision case keeps its own tools and gets N distractors, drawn with a seed of its own
(``SEED:CASE-ID``) from every other scenario's catalogue and the real MCP catalogues in
tests/catalogues/mcp: each distinct declaration once (``pool``), none named like one of the
case's own tools. A distractor keeps its name unless two in the pool share it; then it is
namespaced by its source as ``MCPTools`` does (``teb-tc70__send_email``). Past the pool the
draw takes the pool again as a second instance of each source (``teb-tc70-2__...``). The N
distractors of a size are the first N of the larger ones (``distractors``), and the case's
own tools stand at seeded places among them (``hidden``); ``hidden_catalogues`` makes every
size's catalogue of every case. shortlist.py measures the ranker on them, shortlist_decisions.py
the model's decisions.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from benchmarks.common.corpus import ROOT, Case, load_catalogue

MCP_CORPUS = sorted((ROOT / "tests" / "catalogues" / "mcp").glob("*.json"))

Tool = dict[str, Any]


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
            prefix = Path(source).stem + ("" if instance == 1 else f"-{instance}")
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


def hidden_catalogues(
    cases: Sequence[Case], everything: Sequence[tuple[str, Tool]], sizes: Sequence[int], seed: int
) -> tuple[dict[str, list[Tool]], dict[int, dict[str, list[Tool]]]]:
    """Each case's distractors in draw order (as many as the largest size), and each size's
    catalogue of each case (size 0 first: the case's own tools alone)."""
    draws = {case.id: distractors(case, everything, max(sizes), seed) for case in cases}
    catalogues = {
        size: {case.id: hidden(case, draws[case.id][:size], seed) for case in cases} for size in [0, *sizes]
    }
    return draws, catalogues
