"""Abstention scored offline on a BFCL run's decisions: grounding and the model's doubt, fit on one half.

    .venv/bin/python -m benchmarks.quality.bfcl_grounding RUN.json [--signals SIGNALS.json]

A run of benchmarks/quality/bfcl.py records every case's calls as the server made them, with the tools
it was sent and the question. Here every policy of abstention is applied to the same decisions:
an abstained call becomes no call, which the leaderboard scores right on ``irrelevance`` and
wrong on a category with answers.

- **Grounding** (``toolrouting._grounding``): each call held against the question. The rules:
  abstain when any checked argument is ungrounded (``any``), when all are (``all``), when half
  are (``half``), only for numbers and dates (``numbers``) or only for words (``words``); each
  at several shares of a text's words (``WORD_SHARE``).
- **The model's doubt** (``--signals``, from benchmarks/quality/bfcl_margin.py): abstain when the margin
  of the chosen tool over ``none`` is below a threshold (``margin``; ``calibrated``, less the
  same margin for a content-free question), or when an argument's first token is more uncertain
  than one (``entropy``, the largest of a call's arguments); alone, and beside grounding's rule
  (either abstains).
- **The question's fit to the chosen tool** (``fit``, ``toolrouting._shortlist.tool_fit``): the
  chosen tool's ranker score less the best of the other tools' and ``none``'s, from the
  ranker's index alone (``--fit-ranker``); abstain when it is below a threshold, alone and
  beside grounding's rule. Computed here from each record's tools, question and first call.
- **Fit and held out**: every choice (a rule, a share, a threshold) is made on the even-numbered
  cases of each category, as the most irrelevance right with simple and multiple each within
  ``--within`` points of the run as it was, and reported on the odd-numbered ones.
- **Each signal alone**: its precision and recall at telling a bad call (a call on
  ``irrelevance``, a wrong call elsewhere) from a right one, on the held-out half.
"""

from __future__ import annotations

import argparse
import itertools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from toolrouting._grounding import Grounding, conversation_evidence, grounding
from toolrouting._shortlist import IndexedRanker, Ranker, shortlist_query, tool_fit

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
#: Each signal of the model's doubt, and whether a call is doubted below a threshold or above it.
SIGNALS = {"margin": "below", "calibrated": "below", "entropy": "above", "fit": "below"}


@dataclass(frozen=True)
class Decision:
    """One case: its half, its category, whether it called and was right, and what was found of it."""

    id: str
    category: str
    even: bool
    called: bool
    right: bool
    groundings: dict[float, tuple[Grounding, ...]]
    """Each call held against the question, at each share of a text's words."""
    every: tuple[Grounding, ...]
    """Each call held against the question at the shipped share, composed arguments checked too."""
    signals: dict[str, float]


Policy = Callable[[Decision], bool]
"""Whether a policy abstains on a decision that made a call."""


def groundings(record: Record, share: float, by_kind: bool = True) -> tuple[Grounding, ...]:
    """Each call of a record held against its question (``by_kind=False``: every required
    argument checked, composed ones too, as before grounding knew kinds)."""
    evidence = conversation_evidence(record["question"])
    tools = {tool["function"]["name"]: tool["function"] for tool in record["tools"]}
    found = []
    for call in record.get("calls") or []:
        try:
            arguments = json.loads(call["arguments"] or "{}")
        except ValueError:
            arguments = {}
        parameters = tools.get(call["name"], {}).get("parameters", {})
        if isinstance(arguments, dict):
            found.append(
                grounding(call["name"], arguments, parameters, evidence, word_share=share, by_kind=by_kind)
            )
    return tuple(found)


def _signals(scored: dict[str, Any] | None) -> dict[str, float]:
    if scored is None:
        return {}
    scores, free, chosen = scored["scores"], scored["content_free"], scored["chosen"]
    found = {
        "margin": scores[chosen] - scores["none"],
        "calibrated": (scores[chosen] - free[chosen]) - (scores["none"] - free["none"]),
    }
    if scored["entropies"]:
        found["entropy"] = max(scored["entropies"].values())
    return found


def fit_margin(record: Record, ranker: Ranker) -> float | None:
    """How well the record's question fits its first call's tool, against the other tools and
    ``none`` (``ToolFit.margin``); ``None`` for a record without a call."""
    calls = record.get("calls") or []
    tools = (
        [tool for tool in record["tools"] if tool["function"]["name"] == calls[0]["name"]] if calls else []
    )
    if not tools:
        return None
    return tool_fit(
        record["tools"], shortlist_query(record["question"]), calls[0]["name"], ranker=ranker
    ).margin


def decisions(
    records: Sequence[Record], signals: dict[str, Any], ranker: Ranker | None = None
) -> list[Decision]:
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
                groundings={share: groundings(record, share) for share in SHARES},
                every=groundings(record, 0.5, by_kind=False),
                signals=_signals(signals.get(record["id"])) if record.get("calls") else {},
            )
        )
        margin = fit_margin(record, ranker) if ranker is not None else None
        if margin is not None:
            made[-1].signals["fit"] = margin
    return made


def ruled(rule: str, share: float) -> Policy:
    return lambda d: any(RULES[rule](found) for found in d.groundings[share])


def doubted(signal: str, threshold: float) -> Policy:
    if SIGNALS[signal] == "below":
        return lambda d: signal in d.signals and d.signals[signal] < threshold
    return lambda d: signal in d.signals and d.signals[signal] > threshold


def before_kinds(decision: Decision) -> bool:
    """The shipped rule as it was before kinds: half of a call's required arguments, composed
    ones too, ungrounded."""
    return any(RULES["half"](found) for found in decision.every)


def either(first: Policy, second: Policy) -> Policy:
    return lambda d: first(d) or second(d)


def right_under(decision: Decision, policy: Policy | None) -> bool:
    """Whether the case is right once ``policy`` has abstained where it would (``None``: as run)."""
    if policy is None or not decision.called or not policy(decision):
        return decision.right
    return decision.category == "irrelevance"


def rates(made: Sequence[Decision], policy: Policy | None) -> dict[str, tuple[int, int]]:
    """``(right, cases)`` a category under ``policy``."""
    return {
        category: (
            sum(right_under(d, policy) for d in made if d.category == category),
            sum(d.category == category for d in made),
        )
        for category in SCORED
    }


def percent(right: int, cases: int) -> float:
    return 100 * right / cases if cases else 0.0


def holds(got: dict[str, tuple[int, int]], off: dict[str, tuple[int, int]], within: float) -> bool:
    """Whether simple and multiple are each within ``within`` points of the run as it was."""
    return all(percent(*off[c]) - percent(*got[c]) <= within + 1e-9 for c in SCORED[1:])


def best(made: Sequence[Decision], policies: dict[str, Policy], within: float) -> str | None:
    """The policy with the most irrelevance right on the even half that holds the other two."""
    fit = [d for d in made if d.even]
    off = rates(fit, None)
    found: tuple[tuple[int, int], str] | None = None
    for name, policy in policies.items():
        got = rates(fit, policy)
        # The most irrelevance right; of those, the most right on the other two.
        score = (got["irrelevance"][0], got["simple_python"][0] + got["multiple"][0])
        if holds(got, off, within) and (found is None or score > found[0]):
            found = (score, name)
    return None if found is None else found[1]


def thresholds(made: Sequence[Decision], signal: str) -> list[float]:
    """Every threshold that tells the fit half's values apart: the midpoints between them, and one
    past each end (never doubted, always doubted)."""
    values = sorted({d.signals[signal] for d in made if d.even and signal in d.signals})
    if not values:
        return []
    return [values[0] - 1, *((low + high) / 2 for low, high in itertools.pairwise(values)), values[-1] + 1]


def precision_recall(made: Sequence[Decision], policy: Policy) -> str:
    """How well ``policy`` tells a bad call from a right one, among the calls made."""
    calls = [d for d in made if d.called]
    flagged = [d for d in calls if policy(d)]
    hits = sum(not d.right for d in flagged)
    bad = sum(not d.right for d in calls)
    wrongly = {c: sum(d.category == c and d.right for d in flagged) for c in SCORED[1:]}
    return (
        f"precision {percent(hits, len(flagged)):.1f}% ({hits}/{len(flagged)}), "
        f"recall {percent(hits, bad):.1f}% ({hits}/{bad}); right calls flagged: "
        + ", ".join(f"{c} {n}" for c, n in wrongly.items())
    )


def row(name: str, made: Sequence[Decision], policy: Policy | None) -> str:
    cells = []
    for half in (True, False):
        got = rates([d for d in made if d.even == half], policy)
        cells += [f"{percent(*got[c]):.1f}% ({got[c][0]}/{got[c][1]})" for c in SCORED]
    return f"| {name} | " + " | ".join(cells) + " |"


HEADER = [
    "| policy | irrelevance (fit) | simple (fit) | multiple (fit) "
    "| irrelevance (held out) | simple (held out) | multiple (held out) |",
    "|---|---:|---:|---:|---:|---:|---:|",
]


def report(made: Sequence[Decision], within: float) -> list[str]:
    """The tables of one run: every policy on both halves, what was chosen, and each signal alone."""
    held = [d for d in made if not d.even]
    lines = [*HEADER, row("off", made, None)]
    lines.append(row("grounding `half`, every argument checked (before kinds)", made, before_kinds))
    grounded = {
        f"grounding `{rule}`, word share {share}": ruled(rule, share) for share in SHARES for rule in RULES
    }
    lines += [row(name, made, policy) for name, policy in grounded.items()]
    chosen = best(made, grounded, within)
    alone = [
        f"- {name} alone: {precision_recall(held, policy)}"
        for name, policy in grounded.items()
        if "0.5" in name
    ]
    if chosen is not None:
        lines.append(row(f"**chosen: {chosen}**", made, grounded[chosen]))
    for signal in SIGNALS:
        if not any(signal in d.signals for d in made):
            continue
        cuts = {f"{signal} {SIGNALS[signal]} {t:.3g}": doubted(signal, t) for t in thresholds(made, signal)}
        fitted = best(made, cuts, within)
        if fitted is not None:
            lines.append(row(f"{fitted} (fit)", made, cuts[fitted]))
            alone.append(f"- {fitted} alone: {precision_recall(held, cuts[fitted])}")
        beside = {
            f"{rule} or {name}": either(grounded[rule], policy)
            for rule in grounded
            if "0.5" in rule
            for name, policy in cuts.items()
        }
        paired = best(made, beside, within)
        if paired is not None:
            lines.append(row(f"{paired} (fit)", made, beside[paired]))
    return [*lines, "", "Each signal alone, on the held-out half:", "", *alone]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("run", type=Path, help="records of benchmarks/quality/bfcl.py")
    parser.add_argument("--signals", type=Path, help="the signals of benchmarks/quality/bfcl_margin.py")
    parser.add_argument("--way", help="the way whose records are scored (default: the run's first)")
    parser.add_argument("--within", type=float, default=3.0, help="points simple and multiple may lose (3)")
    parser.add_argument("--show", action="store_true", help="list the fit half's misjudged calls")
    parser.add_argument(
        "--fit-ranker",
        choices=("hybrid", "bm25", "off"),
        default="off",
        help="the ranker of the question's fit to the chosen tool (off: not scored)",
    )
    args = parser.parse_args(argv)
    run = json.loads(args.run.read_text())
    signals = json.loads(args.signals.read_text()) if args.signals else {}
    way = args.way or next(iter(run["settings"].get("ways", {"serve": None})))
    ranker = None if args.fit_ranker == "off" else IndexedRanker(semantic=args.fit_ranker == "hybrid")
    made = decisions([r for r in run["records"] if r.get("way", "serve") == way], signals, ranker)
    print(f"## {args.run.name}, {way}: {Path(run['settings']['model']).name}, {len(made)} cases\n")
    print("\n".join(report(made, args.within)))
    if args.show:
        for d in made:
            flagged = any(RULES["any"](g) for g in d.groundings[0.5])
            if d.even and d.called and d.right and flagged:
                missing = [(u.argument, u.missing) for g in d.groundings[0.5] for u in g.ungrounded]
                print(f"  right but flagged: {d.id}: {missing}")
            if d.even and d.called and not d.right and not flagged:
                print(f"  bad, not flagged: {d.id}: {[(g.tool, g.checked) for g in d.groundings[0.5]]}")


if __name__ == "__main__":
    main()
