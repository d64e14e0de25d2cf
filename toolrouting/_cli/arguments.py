"""What every subcommand shares: the usage error, argument types, and stdin as text."""

from __future__ import annotations

import argparse
import sys
from typing import Any

__all__ = ["Subparsers", "UsageError", "non_negative", "positive", "stdin_text"]

Subparsers = Any  # argparse's _SubParsersAction is private


class UsageError(Exception):
    """A command line that cannot be carried out as given (a missing file, bad JSON): exit status 2."""


def positive(text: str) -> int:
    """An argument that is a whole number of at least 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def non_negative(text: str) -> float:
    """An argument that is a finite number of zero or more."""
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of zero or more")
    return value


def stdin_text(*, errors: str) -> str:
    """All of stdin, decoded as UTF-8 with ``errors`` (``strict`` or ``surrogateescape``)."""
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text stream put in its place (a test's StringIO)
        return sys.stdin.read()
    try:
        return bytes(raw.read()).decode("utf-8", errors)
    except UnicodeDecodeError as error:
        raise UsageError(f"stdin is not UTF-8 text ({error.reason} at byte {error.start})") from None
