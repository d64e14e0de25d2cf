"""What a script of several ways shares: the way its command line names, run (``decoding.py
WAY``, ``compile.py WAY``)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence


def run_way(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Run the way ``argv`` names: a subcommand of ``parser`` whose ``run`` default takes the
    parsed options."""
    args = parser.parse_args(argv)
    args.run(args)
    return 0
