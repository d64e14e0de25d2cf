"""Faults injected on the wire, by kind and outcome: the routing loop against a misbehaving server.

    cd tests && ../.venv/bin/python -m support.fault_table [--repeat N]

Runs the matrix of support/wire_faults.py (the same cases tests/loop/test_loop_wire_faults.py asserts)
N times against a real http.server on 127.0.0.1 and prints one row per fault kind: runs, faults
injected, requests retried, runs recovered, runs failed with the named error and a message
naming the fault, and runs whose JSON Lines transcript held exactly the committed messages.
Exits 1 if any run broke its promise.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from support.wire_faults import CASES, Outcome, run_case, summary

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1, help="runs of each case (default 1)")
    args = parser.parse_args(argv)
    outcomes: list[Outcome] = []
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as scratch:
        for _ in range(args.repeat):
            outcomes.extend(run_case(case, Path(scratch)) for case in CASES)
    seconds = time.monotonic() - started
    broken = [f"{o.kind}: {problem}" for o in outcomes for problem in o.problems]
    print(summary(outcomes))
    print(f"\n{len(outcomes)} runs in {seconds:.1f} s; promises broken: {len(broken)}")
    for problem in broken:
        print(f"  {problem}")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
