"""What every subcommand shares: the usage error, argument types, the embedded model's decoding
options, and stdin and files as text."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from .._limits import EMBEDDED_PROMPT_CACHE_DIR_MB

__all__ = [
    "Subparsers",
    "UsageError",
    "add_decoding_options",
    "file_text",
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


def file_text(path: str, option: str) -> str:
    """The UTF-8 text of the file ``option`` names; a usage error that says why where it cannot be read."""
    try:
        with open(path, encoding="utf-8") as file:
            return file.read()
    except FileNotFoundError:
        raise UsageError(f"{option} {path}: no such file") from None
    except UnicodeDecodeError as error:
        raise UsageError(f"{option} {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot be read ({error.strerror})") from None


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


def add_decoding_options(parser: argparse.ArgumentParser) -> None:
    """``--grammar``, ``--decoding``, ``--threads``, ``--ctx-size``, ``--prompt-cache-mb``,
    ``--prompt-cache-dir``, ``--prompt-cache-dir-mb``, ``--chat-template`` and ``--repack``: how a
    model decodes a request."""
    parser.add_argument(
        "--grammar",
        choices=("ours", "server"),
        default="ours",
        help="where a grammar is taken (embedded, llama.cpp, llama-cpp-python, koboldcpp): our compact "
        "grammar of the route, or the schema for the server to convert (default: %(default)s)",
    )
    parser.add_argument(
        "--decoding",
        choices=("forced", "grammar"),
        help="how the embedded model decodes a routed request: forced tokens evaluated in a batch with "
        "llguidance, or llama.cpp's grammar sampler token by token (default: forced)",
    )
    parser.add_argument(
        "--threads",
        type=positive,
        metavar="N",
        help="threads of the embedded model (default: llama-cpp-python's, half the cores)",
    )
    parser.add_argument(
        "--ctx-size",
        type=positive,
        metavar="N",
        help="the embedded model's context in tokens, which prompt and reply share (default: the "
        "model's trained context, capped where its KV cache would take over a quarter of the free memory)",
    )
    parser.add_argument(
        "--prompt-cache-mb",
        type=whole_number,
        metavar="N",
        help="megabytes of prompt states the embedded model keeps, so that a prompt that starts as an "
        "earlier one evaluates only the rest (0 keeps none; default: four whole contexts' states, "
        "within a quarter of the free memory)",
    )
    parser.add_argument(
        "--prompt-cache-dir",
        metavar="DIR",
        help="a folder where the embedded model keeps its prompt states on disk too, so that a restart or "
        "another process sharing it starts warm: an agent's next session pays only its new tokens",
    )
    parser.add_argument(
        "--prompt-cache-dir-mb",
        type=positive,
        metavar="N",
        help="megabytes of prompt states kept in --prompt-cache-dir, least recently used out "
        f"(default: {EMBEDDED_PROMPT_CACHE_DIR_MB})",
    )
    parser.add_argument(
        "--chat-template",
        metavar="FILE",
        help="a Jinja chat template for the embedded model in place of its GGUF's own; one with <think> "
        "tags lets it reason in them when a request asks for reasoning",
    )
    parser.add_argument(
        "--repack",
        action=argparse.BooleanOptionalAction,
        help="whether llama.cpp repacks the embedded model's weights for this CPU's vector units "
        "(default: on, except where llama.cpp uses Intel AMX, whose kernels crash on the first decode)",
    )
