"""The grammar against the parser at length: the figures docs/reliability.md reports.

    nice -n 10 .venv/bin/python fuzz/grammar_campaign.py 400

draws the given number of replies (default 400) from each grammar mode (compact, spaced,
bounded) of every catalogue in the corpora and every hostile catalogue that becomes a route
(tests/support/differential.py, the same code ``make test`` runs with 8), confirms every one
with llguidance, hands each to parse_route, rewrites the first ones in the reverse direction's
ways, runs every hostile catalogue in a process of its own, and prints the tables. The exit
status is 1 when parse_route refused a reply the grammar allows, when the walk wrote a text the
grammar does not derive, or when a hostile catalogue ended in anything but a route or our error.
"""

from __future__ import annotations

import sys
import time
from collections import Counter
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(_ROOT / "tests"), str(_ROOT)]

from support.differential import (  # noqa: E402
    NARROWINGS,
    Figures,
    GrammarCheck,
    corpus,
    forward,
    hostile_outcome,
    reverse,
)
from support.hostile_catalogues import HOSTILE  # noqa: E402

__all__ = ["main"]

#: Replies of each grammar rewritten in the reverse direction's ways.
REVERSED = 40


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    replies = int(args[0]) if args else 400
    started = time.perf_counter()
    check = GrammarCheck()
    figures = Figures()
    catalogues = corpus()
    sources = Counter(name.split("/")[0] for name in catalogues)
    for name, tools in catalogues.items():
        drawn = forward(tools, name, figures, replies=replies, seed=22, check=check)
        reverse(tools, name, drawn[:REVERSED], figures, check)
    seconds = time.perf_counter() - started
    print(f"grammar against parser: {replies} replies per grammar, seed 22, {seconds:.0f} s\n")
    print(
        "| catalogues | grammars | replies | characters | confirmed by llguidance | not derived | refused |"
    )
    print("|---|---|---|---|---|---|---|")
    print(
        f"| {figures.catalogues} ({', '.join(f'{n} {s}' for s, n in sorted(sources.items()))}) "
        f"| {figures.grammars} | {figures.replies:,} | {figures.characters:,} | {figures.confirmed:,} "
        f"| {len(figures.not_derived)} | {len(figures.refused)} |"
    )
    print(
        f"\nreplies with a key repeated in an object whose keys are free (accepted, the last value "
        f"kept): {figures.repeated_keys:,} of {figures.replies:,} "
        f"({100 * figures.repeated_keys / max(figures.replies, 1):.2f}%)"
    )
    for label, error, text in figures.refused[:10]:
        print(f"  REFUSED {label}: {error} {text[:120]!r}")
    for label, text in figures.not_derived[:10]:
        print(f"  NOT DERIVED {label}: {text[:120]!r}")
    print("\n| reverse: valid replies rewritten | the grammar refuses | judgement |")
    print("|---|---|---|")
    for way, (_, judgement) in NARROWINGS.items():
        print(f"| {way} | {figures.narrowed.get(way, 0):,} | {judgement} |")
    print(f"| equivalent rewrites (escapes) | {len(figures.unequal)} | must be 0 |")
    print("\n| hostile catalogue | family | outcome | seconds | peak memory |")
    print("|---|---|---|---|---|")
    crashed = 0
    for name, (family, _) in HOSTILE.items():
        outcome = hostile_outcome(name, 120, 2 * 1024**3)
        crashed += outcome.get("type") == "crash"
        verdict = "route" if outcome["ok"] else f"{outcome['type']}: {outcome['message'][:90]}"
        print(
            f"| {name} | {family} | {verdict} | {outcome.get('seconds', float('nan')):.2f} "
            f"| {outcome.get('peak_kib', 0) / 1024:.0f} MiB |"
        )
    failed = figures.refused or figures.not_derived or figures.unequal or crashed
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
