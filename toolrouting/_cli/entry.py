"""``main(argv)``: a command line in, an exit status out (see ``exits``).

Library errors become one line ``ErrorType: message`` on stderr and exit status 1, usage
errors exit 2, Ctrl-C exits 130. Every error line passes ``redact``, so no API key is shown.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from .._errors import ToolRoutingError
from .arguments import UsageError
from .exits import FAILED, INTERRUPTED, USAGE
from .parser import build_parser
from .server import redact

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (``sys.argv[1:]`` when ``None``) and return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # argparse exits on --help and --version (0) and on usage errors (2)
        return exit.code if isinstance(exit.code, int) else USAGE
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return USAGE
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except UsageError as error:
        print(redact(f"toolrouting {args.command}: error: {error}", args), file=sys.stderr)
        return USAGE
    except ToolRoutingError as error:
        print(redact(f"{type(error).__name__}: {error}", args), file=sys.stderr)
        return FAILED
    except KeyboardInterrupt:
        print("toolrouting: interrupted", file=sys.stderr)
        return INTERRUPTED
