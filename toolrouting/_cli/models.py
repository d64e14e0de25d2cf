"""``toolrouting models``: the models a server offers, for ``--model`` to name one."""

from __future__ import annotations

import argparse
import json

from .._backends import list_models
from .arguments import Subparsers, UsageError
from .exits import DONE
from .http_backend import add_http_backend_options, api_key, explained_refusal

__all__ = ["add_models"]


def add_models(subparsers: Subparsers) -> None:
    """Register ``models``: the names a server offers."""
    parser = subparsers.add_parser(
        "models",
        help="list the models a server offers",
        description="List the models the server at --base-url offers, one name per line, as --model "
        "takes them: its /v1/models, or /api/tags for the ollama dialect.",
    )
    add_http_backend_options(parser, required=True)
    parser.add_argument("--json", action="store_true", help="print the names as one JSON list")
    parser.set_defaults(handler=_models)


def _models(args: argparse.Namespace) -> int:
    key = api_key(args)
    try:
        with explained_refusal(key):
            names = list_models(
                args.base_url, dialect=args.dialect, api_key=None if key is None else key.value
            )
    except ValueError as error:  # a base URL that is not one, a key no header can carry
        raise UsageError(str(error)) from error
    if args.json:
        print(json.dumps(list(names), ensure_ascii=False))
    else:
        for name in names:
            print(_one_line(name))
    return DONE


def _one_line(name: str) -> str:
    """``name`` on one line: a server's control characters (a newline above all) written as escapes."""
    if name.isprintable():
        return name
    return "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in name)
