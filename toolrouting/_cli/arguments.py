"""What every subcommand shares: the usage error, argument types, and stdin as text."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

__all__ = [
    "Subparsers",
    "UsageError",
    "non_negative",
    "non_utf8_argument",
    "positive",
    "stdin_text",
    "text_streams",
    "whole_number",
]

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


def whole_number(text: str) -> int:
    """An argument that is a whole number of zero or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of zero or more")
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
    if sys.stdin is None:  # started with stdin closed (`toolrouting run - <&-`)
        raise UsageError("stdin is closed: give the text as an argument, or open stdin")
    raw = getattr(sys.stdin, "buffer", None)
    if raw is None:  # a text stream put in its place (a test's StringIO)
        return sys.stdin.read()
    try:
        return bytes(raw.read()).decode("utf-8", errors)
    except UnicodeDecodeError as error:
        raise UsageError(f"stdin is not UTF-8 text ({error.reason} at byte {error.start})") from None


def non_utf8_argument(argv: Sequence[str]) -> str | None:
    """What is wrong with the first argument that was not UTF-8 (Python keeps its bytes as lone
    surrogates, which no server and no transcript reader takes), ``None`` when all are."""
    for number, argument in enumerate(argv, 1):
        try:
            argument.encode("utf-8")
        except UnicodeEncodeError as error:
            return f"argument {number} is not UTF-8 text (a bad byte at character {error.start})"
    return None


def text_streams() -> None:
    """Let stdout and stderr write any text: a character their encoding lacks, or a lone surrogate
    a server or a tool sent, is written as an escape instead of crashing the command."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if callable(reconfigure):
            reconfigure(errors="backslashreplace")
