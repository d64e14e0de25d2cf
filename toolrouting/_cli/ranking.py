"""``--shortlist K`` and ``--ranker``, as ``run``, ``batch`` and ``serve`` take them: the K tools
ranked best are offered, ranked by BM25 alone unless ``--ranker hybrid`` asks for the meaning of
the words beside it (the ``semantic`` extra)."""

from __future__ import annotations

import argparse

from .._shortlist import IndexedRanker, default_ranker
from .arguments import UsageError, positive

__all__ = ["RANKERS", "add_shortlist_options", "ranked_by", "ranker_of"]

#: What ``--ranker`` takes.
RANKERS = ("bm25", "hybrid")


def add_shortlist_options(parser: argparse.ArgumentParser, *, offered: str) -> None:
    """Register ``--shortlist K`` (its help ``offered``) and ``--ranker``."""
    parser.add_argument("--shortlist", type=positive, metavar="K", help=offered)
    parser.add_argument(
        "--ranker",
        choices=RANKERS,
        help="what ranks a --shortlist, each catalogue indexed once: bm25, the words alone, or hybrid, "
        "the meaning of the words beside BM25 (the semantic extra); among bm25's K the model chose "
        "the right tool more often (default: bm25)",
    )


def ranker_of(args: argparse.Namespace) -> IndexedRanker | None:
    """The ranker ``--ranker`` names (``None`` and ``bm25``: the process's default, BM25 alone),
    ``None`` without ``--shortlist``, or a usage error that says why not."""
    name: str | None = args.ranker
    if name is not None and args.shortlist is None:
        raise UsageError("--ranker ranks the tools of --shortlist K; give --shortlist too")
    if args.shortlist is None:
        return None
    if name != "hybrid":
        return default_ranker()
    try:
        return IndexedRanker(semantic=True)
    except ImportError as error:
        raise UsageError(f"--ranker hybrid: {error}") from None


def ranked_by(shortlist: int, ranker: IndexedRanker | None) -> str:
    """What a request's shortlist offers and what ranks it."""
    offered = f"a request of more than {shortlist} tools is offered the {shortlist} ranked best"
    if ranker is not None and ranker.semantic:
        return f"{offered} by the meaning of its words and BM25"
    return f"{offered} by BM25 alone"
