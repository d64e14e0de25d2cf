"""Grounding scored offline on a BFCL run's recorded decisions: each rule's abstentions, fit on one half.

    .venv/bin/python benchmarks/bfcl_grounding.py RUN.json [RUN.json ...]   # records of benchmarks/bfcl.py

A run of benchmarks/bfcl.py records every case's calls as the server made them, with the tools
it was sent and the question. Here each call is held against the question (``grounding``) and
every rule of abstention is applied to the same decisions: an abstained call becomes no call,
which the leaderboard scores right on ``irrelevance`` and wrong on a category with answers.

- **The signal alone**: a call is bad when the checker fails it (a call on ``irrelevance``, a
  wrong call elsewhere); grounding's precision and recall at telling the bad from the right.
- **The rules**: abstain when any checked argument is ungrounded (``any``), when all are
  (``all``), when half are (``half``), or only for numbers and dates (``numbers``) or only for
  words (``words``); each at several shares of a text's words (``WORD_SHARE``).
- **Fit and held out**: a rule is chosen on the even-numbered cases of each category (the most
  irrelevance right with simple and multiple each within ``--within`` points of the run as it
  was), and reported on the odd-numbered ones.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolrouting._grounding import Evidence, Grounding, conversation_evidence, grounding

Record = dict[str, Any]
Rule = Callable[[Grounding], bool]

RULES: dict[str, Rule] = {
    "any": lambda found: bool(found.ungrounded),
    "all": lambda found: bool(found.checked) and len(found.ungrounded) == len(found.checked),
    "half": lambda found: bool(found.checked) and found.share >= 0.5,
    "numbers": lambda found: any(item.kind != "words" for item in found.ungrounded),
    "words": lambda found: any(item.kind == "words" for item in found.ungrounded),
}
SHARES = (0.25, 0.5, 0.75, 1.0)
SCORED = ("irrelevance", "simple_python", "multiple")


@dataclass(frozen=True)
class Decision:
    """One case: its half, its category, whether it made a call, was right, and what grounding found."""

    id: str
    category: str
    even: bool
    called: bool
    right: bool
    groundings: tuple[Grounding, ...]


def groundings(record: Record, share: float, evidence: Evidence | None = None) -> tuple[Grounding, ...]:
    """Each call of a record held against its question."""
    evidence = evidence or conversation_evidence(record["question"])
    tools = {tool["function"]["name"]: tool["function"] for tool in record["tools"]}
    found = []
    for call in record.get("calls") or []:
        try:
            arguments = json.loads(call["arguments"] or "{}")
        except ValueError:
            arguments = {}
        parameters = tools.get(call["name"], {}).get("parameters", {})
        if isinstance(arguments, dict):
            found.append(grounding(call["name"], arguments, parameters, evidence, word_share=share))
    return tuple(found)


def decisions(records: Sequence[Record], share: float) -> list[Decision]:
    made = []
    for record in records:
        if record.get("outcome") != "answered" or record["category"] not in SCORED:
            continue
        index = int(record["id"].rsplit("_", 1)[1])
        made.append(
            Decision(
                id=record["id"],
                category=record["category"],
                even=index % 2 == 0,
                called=bool(record.get("calls")),
                right=bool(record["valid"]),
                groundings=groundings(record, share),
            )
        )
    return made


def right_under(decision: Decision, rule: Rule | None) -> bool:
    """Whether the case is right once ``rule`` has abstained where it would (``None``: as run)."""
    if rule is None or not decision.called or not any(rule(found) for found in decision.groundings):
        return decision.right
    return decision.category == "irrelevance"


def rates(made: Sequence[Decision], rule: Rule | None) -> dict[str, tuple[int, int]]:
    """``(right, cases)`` a category under ``rule``."""
    return {
        category: (
            sum(right_under(d, rule) for d in made if d.category == category),
            sum(d.category == category for d in made),
        )
        for category in SCORED
    }


def percent(right: int, cases: int) -> float:
    return 100 * right / cases if cases else 0.0


def signal(made: Sequence[Decision], rule: Rule) -> str:
    """Precision and recall of ``rule`` at flagging bad calls, among the calls made."""
    calls = [d for d in made if d.called]
    flagged = [d for d in calls if any(rule(found) for found in d.groundings)]
    bad = [d for d in calls if not d.right]
    hits = [d for d in flagged if not d.right]
    precision = percent(len(hits), len(flagged))
    recall = percent(len(hits), len(bad))
    by = {c: sum(d.category == c for d in flagged) for c in SCORED}
    bad_by = {c: sum(d.category == c for d in bad) for c in SCORED}
    right_flagged = {c: sum(d.category == c and d.right for d in flagged) for c in SCORED}
    return (
        f"precision {precision:.1f}% ({len(hits)}/{len(flagged)}), "
        f"recall {recall:.1f}% ({len(hits)}/{len(bad)}); "
        + ", ".join(
            f"{c}: {by[c]} flagged, {right_flagged[c]} of them right, {bad_by[c]} bad" for c in SCORED
        )
    )


def table(by_share: dict[float, list[Decision]], within: float) -> tuple[str, list[str]]:
    """Every rule and share on both halves, and the one chosen on the even half."""
    made = by_share[SHARES[0]]
    base = {half: rates([d for d in made if d.even == half], None) for half in (True, False)}
    lines = [
        "| rule | word share | irrelevance (fit) | simple (fit) | multiple (fit) "
        "| irrelevance (held out) | simple (held out) | multiple (held out) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]

    def row(name: str, share: float | None, got: dict[bool, dict[str, tuple[int, int]]]) -> str:
        cells = [
            f"{percent(*got[half][c]):.1f}% ({got[half][c][0]}/{got[half][c][1]})"
            for half in (True, False)
            for c in SCORED
        ]
        return f"| {name} | {'-' if share is None else share} | " + " | ".join(cells) + " |"

    lines.append(row("off", None, base))
    best: tuple[float, str] | None = None
    for share in SHARES:
        made_at = by_share[share]
        for name, rule in RULES.items():
            got = {half: rates([d for d in made_at if d.even == half], rule) for half in (True, False)}
            lines.append(row(name, share, got))
            fit, off = got[True], base[True]
            holds = all(percent(*off[c]) - percent(*fit[c]) <= within for c in SCORED[1:])
            if holds and (best is None or percent(*fit["irrelevance"]) > best[0]):
                best = (percent(*fit["irrelevance"]), f"{name} at word share {share}")
    return ("none holds" if best is None else best[1]), lines


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("runs", nargs="+", type=Path, help="records of benchmarks/bfcl.py")
    parser.add_argument("--within", type=float, default=3.0, help="points simple and multiple may lose (3)")
    parser.add_argument("--show", action="store_true", help="list the fit half's flagged right calls")
    args = parser.parse_args(argv)
    for path in args.runs:
        run = json.loads(path.read_text())
        records = run["records"]
        by_share = {share: decisions(records, share) for share in SHARES}
        print(f"## {path.name}: {Path(run['settings']['model']).name}, {len(records)} cases\n")
        made = by_share[0.5]
        for name, rule in RULES.items():
            print(f"- signal `{name}` (word share 0.5): {signal(made, rule)}")
        chosen, lines = table(by_share, args.within)
        print()
        print("\n".join(lines))
        print(f"\nchosen on the even half: {chosen}\n")
        if args.show:
            for d in made:
                if d.even and d.called and d.right and any(RULES["any"](g) for g in d.groundings):
                    missing = [(u.argument, u.missing) for g in d.groundings for u in g.ungrounded]
                    print(f"  right but flagged: {d.id}: {missing}")
                if d.even and d.called and not d.right and not any(RULES["any"](g) for g in d.groundings):
                    print(f"  bad, not flagged: {d.id}: {[(g.tool, g.checked) for g in d.groundings]}")


if __name__ == "__main__":
    main()
