"""The HTTP backend of a command: the options that name its server, its API key, what a 401 means.

The key comes from ``--api-key``, else ``TOOLROUTING_API_KEY``, else ``OPENAI_API_KEY`` (the
variable OpenAI's own clients read, so a shell set up for them works unchanged). It goes only
into the ``Authorization`` header: every line the command line prints passes :func:`redact`,
so a server that echoes the key in an error body does not put it on the screen.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
from collections.abc import Iterator

from .._backends import DIALECTS
from .._errors import BackendHTTPError
from .._redact import redacted

__all__ = ["KEY_VARIABLES", "ApiKey", "add_http_backend_options", "api_key", "explained_refusal", "redact"]

#: The environment variables read for the key when ``--api-key`` is absent, in this order.
KEY_VARIABLES = ("TOOLROUTING_API_KEY", "OPENAI_API_KEY")


@dataclasses.dataclass(frozen=True, kw_only=True)
class ApiKey:
    """A key and where it came from, so an error can name the source without showing the key."""

    value: str = dataclasses.field(repr=False)
    source: str


def add_http_backend_options(parser: argparse.ArgumentParser, *, required: bool = False) -> None:
    """``--base-url``, ``--dialect`` and ``--api-key``, as every command that talks to a model server
    takes them."""
    parser.add_argument(
        "--base-url",
        metavar="URL",
        required=required,
        help="an OpenAI-compatible server (http://host:port/v1)" + ("" if required else " instead"),
    )
    parser.add_argument(
        "--dialect",
        choices=DIALECTS,
        default="openai",
        help="how that server wants the schema (default: %(default)s)",
    )
    parser.add_argument(
        "--api-key",
        metavar="KEY",
        help=f"the server's API key, sent as Authorization: Bearer (default: ${KEY_VARIABLES[0]}, then "
        f"${KEY_VARIABLES[1]}); the variables keep it out of the process list",
    )


def api_key(args: argparse.Namespace) -> ApiKey | None:
    """The key for this command line: the flag, then the environment; an empty value counts as none."""
    if args.api_key:
        return ApiKey(value=args.api_key, source="--api-key")
    for name in KEY_VARIABLES:
        value = os.environ.get(name, "")
        if value:
            return ApiKey(value=value, source=name)
    return None


def redact(text: str, args: argparse.Namespace) -> str:
    """``text`` with every key this command line could send replaced by ``[api key hidden]``."""
    keys = [getattr(args, "api_key", None) or "", *(os.environ.get(name, "") for name in KEY_VARIABLES)]
    return redacted(text, keys)


@contextlib.contextmanager
def explained_refusal(key: ApiKey | None) -> Iterator[None]:
    """Adds to a 401 or 403 which key was sent, or how to send one, since the server cannot say."""
    try:
        yield
    except BackendHTTPError as error:
        if error.status not in (401, 403):
            raise
        if key is None:
            hint = (
                f"no API key was sent: pass --api-key KEY or set {KEY_VARIABLES[0]} (or {KEY_VARIABLES[1]})"
            )
        else:
            hint = f"the key from {key.source} was refused: check it, or pass another with --api-key KEY"
        raise BackendHTTPError(
            error.status, error.url, error.body, f"{error}; {hint}", retry_after=error.retry_after
        ) from error
