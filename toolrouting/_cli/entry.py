"""``main(argv)``: a command line in, an exit status out (see ``exits``).

Library errors, and any other a provider, a tool or a file raises, become one line
``ErrorType: message`` on stderr and exit status 1; usage errors (a non-UTF-8 argument too)
exit 2, Ctrl-C exits 130 (saying how an interrupted run or batch goes on). Every error line
passes ``redact``, so no API key is shown; stdout and stderr write any text.
A reader that stops reading (``toolrouting schema FILE | head``) ends the command quietly,
with the status a shell gives a command ended by SIGPIPE, as ``cat`` and ``grep`` end.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Sequence

from .._errors import ToolRoutingError
from .arguments import UsageError, non_utf8_argument, text_streams
from .exits import FAILED, INTERRUPTED, PIPE_CLOSED, USAGE
from .http_backend import redact
from .parser import build_parser

__all__ = ["main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (``sys.argv[1:]`` when ``None``) and return the exit status."""
    text_streams()
    argv = sys.argv[1:] if argv is None else argv
    bad = non_utf8_argument(argv)
    if bad is not None:
        print(f"toolrouting: error: {bad}", file=sys.stderr)
        return USAGE
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
        status = handler(args)
        sys.stdout.flush()  # a closed pipe shows here, while it can still be caught
        return status
    except BrokenPipeError:
        _silence_stdout()
        return PIPE_CLOSED
    except UsageError as error:
        print(redact(f"toolrouting {args.command}: error: {error}", args), file=sys.stderr)
        return USAGE
    except ToolRoutingError as error:
        print(redact(f"{type(error).__name__}: {error}", args), file=sys.stderr)
        return FAILED
    except KeyboardInterrupt:
        print(redact(f"toolrouting: interrupted{_how_to_go_on(args)}", args), file=sys.stderr)
        return INTERRUPTED
    except BaseException as error:  # a provider's, a tool's, a file's (SystemExit too): one line
        message = " ".join(str(error).split())
        print(redact(f"{type(error).__name__}: {message}", args), file=sys.stderr)
        return FAILED


def _how_to_go_on(args: argparse.Namespace) -> str:
    """What continues an interrupted command: ``run`` from its transcript, ``batch`` started again."""
    if args.command == "run" and getattr(args, "transcript", None):
        return (
            f"; --resume --transcript {shlex.quote(args.transcript)} goes on from there "
            "(with the same model and tool options)"
        )
    if args.command == "batch":
        return "; the same command goes on where it stopped"
    return ""


def _silence_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail on the closed pipe again.

    The recipe of Python's own docs (library/signal, "Note on SIGPIPE"); a stdout without a file
    descriptor (a test's StringIO) has nothing to close.
    """
    try:
        descriptor = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, descriptor)
    os.close(devnull)
