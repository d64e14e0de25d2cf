"""What a routed decision costs to decode: tokens and seconds, four ways of measuring it.

Run: OMP_WAIT_POLICY=passive .venv/bin/python -m benchmarks.speed.decoding WAY [options]

- ``unconstrained [--decoding forced|grammar]``: routed decisions against the backend's own
  budget with no schema, on 8 fixed prompts (``decoding_unconstrained.py``);
- ``grammars [--limit 12] [--threads 2] [--backends embedded,llama_cpp.server,llama-server]``:
  the server's grammar against ours on each backend, in tokens over the compact action
  (``decoding_grammars.py``);
- ``free [--demo 4] [--repeats 3] [--threads 2] [--model PATH.gguf]``: each decoder against
  free decoding of as many tokens as its reply (``decoding_free.py``);
- ``decoders [--limit N] [--threads 2] [--model PATH.gguf] [--skip-demo] [--skip-cases]``:
  forced tokens against the grammar sampler on the decision cases and the demo questions
  (``decoding_decoders.py``).

Greedy (temperature 0, seed 0) throughout; the decision cases are decisions.py's
(benchmarks/cases/*.jsonl), with ``catalogue_prompt(tools)`` as the system message.

Each way's module says what it measures; what they share is ``decoding_core.py``.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from benchmarks.common.ways import run_way
from benchmarks.speed.decoding_decoders import decoders
from benchmarks.speed.decoding_free import free_decoding
from benchmarks.speed.decoding_grammars import BACKENDS, grammars
from benchmarks.speed.decoding_unconstrained import unconstrained


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ways = parser.add_subparsers(dest="way", required=True, metavar="WAY")
    way = ways.add_parser("unconstrained", help="routed against no schema and the backend's own budget")
    way.add_argument("--decoding", choices=("forced", "grammar"), default="forced")
    way.set_defaults(run=unconstrained)
    way = ways.add_parser("grammars", help="the server's grammar against ours, on each backend")
    way.add_argument("--limit", type=int, default=12)
    way.add_argument("--threads", type=int, default=2)
    way.add_argument("--backends", default=",".join(BACKENDS))
    way.set_defaults(run=grammars)
    way = ways.add_parser("free", help="each decoder against free decoding of its reply's length")
    way.add_argument("--demo", type=int, default=4, help="cases over the demo catalogue (of 17)")
    way.add_argument("--repeats", type=int, default=3)
    way.add_argument("--threads", type=int, default=2)
    way.add_argument("--model", type=Path)
    way.set_defaults(run=free_decoding)
    way = ways.add_parser("decoders", help="forced tokens against the grammar sampler, cases and demo runs")
    way.add_argument("--limit", type=int, help="this many decision cases, spread evenly over the set")
    way.add_argument("--threads", type=int, default=2)
    way.add_argument("--model", type=Path)
    way.add_argument("--skip-demo", action="store_true")
    way.add_argument("--skip-cases", action="store_true")
    way.set_defaults(run=decoders)
    return run_way(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
