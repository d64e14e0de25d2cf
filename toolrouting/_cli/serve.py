"""``toolrouting serve``: OpenAI's chat completions and Responses APIs and Anthropic's Messages API
on loopback, in front of the model the options name.

The backend comes from the same options as ``toolrouting run`` (the embedded model, ``--model``,
``--base-url``, ``--dialect``, ``--api-key``). The socket is bound here, before the server
starts, so an address in use is one usage error line, and ``--port 0`` takes a free port and
says which.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import socket
import sys
from collections.abc import Callable
from pathlib import Path

from .._backends import ReasoningTags, served_reasoning_tags
from .._errors import BackendError
from .._grounding import ABSTAIN_POLICIES
from .._limits import DEFAULT_MAX_REPEATS, DEFAULT_ROUTING_CAP
from .._serve import SERVE_ANSWER_TOKENS, RequestRecord
from .arguments import Subparsers, UsageError, add_decoding_options, positive, whole_number
from .exits import DONE
from .http_backend import add_http_backend_options, api_key, redact
from .ranking import add_shortlist_options, ranked_by, ranker_of
from .run import async_model_backend

__all__ = ["KEY_VARIABLE", "SECRET_VARIABLE", "add_serve"]

#: The environment variable read for the key clients must send, when ``--require-key`` is absent.
KEY_VARIABLE = "TOOLROUTING_SERVE_KEY"
#: The environment variable read for the secret the server signs its thoughts with (a thinking
#: block's signature, a reasoning item's ``encrypted_content``): set, signatures stay valid
#: across restarts and between processes that share it; unset, each process draws its own.
SECRET_VARIABLE = "TOOLROUTING_SERVE_SECRET"


def add_serve(subparsers: Subparsers) -> None:
    """Register ``serve`` and its options."""
    parser = subparsers.add_parser(
        "serve",
        help="serve OpenAI's chat completions and Responses and Anthropic's Messages APIs, every tool "
        "decision routed",
        description="Serve POST /v1/chat/completions, POST /v1/responses (with GET and DELETE of a stored "
        "response), POST /v1/messages and /v1/messages/count_tokens (Anthropic's Messages API), "
        "GET /v1/models and GET /health. A request with tools gets one "
        "grammar-constrained decision (a tool call, or with tool_choice auto the answer); the client "
        "runs the tool and sends its result back, as with each of these APIs. With no options it serves the "
        "embedded default model (SmolLM2-135M-Instruct).",
    )
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="a GGUF file for the embedded model, or with --base-url the server's model name",
    )
    add_http_backend_options(parser)
    parser.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: %(default)s)")
    parser.add_argument(
        "--port", type=_port, default=8000, help="the port; 0 takes a free one (default: %(default)s)"
    )
    parser.add_argument(
        "--require-key",
        metavar="KEY",
        help=f"the key every /v1 request must carry, as Authorization: Bearer or x-api-key "
        f"(default: ${KEY_VARIABLE}; none when unset)",
    )
    parser.add_argument(
        "--cap",
        type=positive,
        default=DEFAULT_ROUTING_CAP,
        metavar="N",
        help="completion cap of every tool decision in tokens (default: %(default)s)",
    )
    parser.add_argument(
        "--answer-tokens",
        type=positive,
        default=SERVE_ANSWER_TOKENS,
        metavar="N",
        help="the answer's cap when a request sets no max_tokens (default: %(default)s)",
    )
    parser.add_argument(
        "--max-calls",
        type=positive,
        default=1,
        metavar="K",
        help="tool calls one decision may make unless a request asks for one (parallel_tool_calls "
        "false; disable_parallel_tool_use true on /v1/messages) (default: %(default)s)",
    )
    add_shortlist_options(
        parser,
        offered="offer a request of more than K tools only the K ranked best for its conversation "
        "(its user messages and tool results), after its tool_choice narrows them (default: every tool)",
    )
    parser.add_argument(
        "--abstain",
        choices=ABSTAIN_POLICIES,
        default="off",
        help="grounding: a decision under tool_choice auto whose required arguments the conversation "
        "does not give becomes the answer, which says what was missing (default: %(default)s)",
    )
    parser.add_argument(
        "--max-repeats",
        type=whole_number,
        default=DEFAULT_MAX_REPEATS,
        metavar="N",
        help="times one call (tool and arguments) may be made again since a conversation's question, "
        "its result there, before its tool is withheld from the decision; 0 offers each call once "
        "(default: %(default)s)",
    )
    add_decoding_options(parser)
    logged = parser.add_mutually_exclusive_group()
    logged.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="on stderr only the address served and errors: no line per request",
    )
    logged.add_argument(
        "--log-json",
        action="store_true",
        help="write the line each request gets on stderr as one JSON object (docs/serve-reference.md, "
        '"The request log")',
    )
    # What `run`'s backend options read and serve leaves to each request.
    parser.set_defaults(handler=_serve, temperature=0.0, top_p=None, seed=None)


def _port(text: str) -> int:
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0 to 65535)")
    return int(text)


def _serve(args: argparse.Namespace) -> int:
    # Imported here: the server's packages are the serve extra's, and other commands need none.
    try:
        import uvicorn  # noqa: F401  # the extra's, said as a usage error where it is missing

        from .._serve import serve_app, server_config, stopping_server
    except ImportError as error:
        raise UsageError(f"toolrouting serve needs pip install 'toolrouting[serve]' ({error})") from None
    require_key = args.require_key or os.environ.get(KEY_VARIABLE) or None
    ranker = ranker_of(args)
    listener = _listener(args.host, args.port)
    try:
        tags = _server_tags(args)
        backend = async_model_backend(args, tags)  # loads the embedded model before the event loop starts
        upstream = api_key(args)
        app = serve_app(
            backend,
            model=_model_name(args),
            cap=args.cap,
            answer_tokens=args.answer_tokens,
            require_key=require_key,
            secrets=() if upstream is None else (upstream.value,),
            owned=True,
            max_calls=args.max_calls,
            shortlist=args.shortlist,
            abstain=args.abstain,
            ranker=ranker,
            reasoning_secret=os.environ.get(SECRET_VARIABLE) or None,
            max_repeats=args.max_repeats,
            request_log=None if args.quiet else _request_log(args.log_json),
        )
        host, port = listener.getsockname()[:2]
        # uvicorn's own lines said only where they are warnings, when stderr is JSON lines or quiet.
        level = "warning" if args.quiet or args.log_json else "info"
        config = server_config(app, host=host, port=port, log_level=level)
        # Said even with --quiet: with --port 0 it is the only place the port is told.
        print(f"toolrouting: serving http://{host}:{port}/v1", file=sys.stderr, flush=True)
        if args.shortlist is not None and not args.quiet:
            print(f"toolrouting: {ranked_by(args.shortlist, ranker)}", file=sys.stderr, flush=True)
        asyncio.run(stopping_server(config).serve(sockets=[listener]))
    finally:
        listener.close()
    return DONE


def _request_log(as_json: bool) -> Callable[[RequestRecord], None]:
    """What writes each request's line on stderr: its text, or its JSON object."""

    def write(record: RequestRecord) -> None:
        line = json.dumps(record.fields(), separators=(",", ":")) if as_json else record.line()
        print(line, file=sys.stderr, flush=True)

    return write


def _server_tags(args: argparse.Namespace) -> ReasoningTags | None:
    """The reasoning tags of llama-server's chat template (``--dialect llama.cpp``), read once at the
    start, so that a request's reasoning is spent in them; ``None`` for another server, or where the
    template cannot be read (said on stderr: the route's thought slot is used instead)."""
    if not args.base_url or args.dialect != "llama.cpp":
        return None
    key = api_key(args)
    try:
        tags = served_reasoning_tags(args.base_url, api_key=None if key is None else key.value, timeout=10)
    except BackendError as error:
        said = redact(str(error), args)
        print(
            f"toolrouting: the server's chat template could not be read ({said}); a request's "
            "reasoning goes in the route's thought slot",
            file=sys.stderr,
        )
        return None
    if tags is not None and not args.quiet:
        print(
            f"toolrouting: the server's chat template reasons between {tags.open} and {tags.close}: "
            "a request's reasoning goes there",
            file=sys.stderr,
        )
    return tags


def _listener(host: str, port: int) -> socket.socket:
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        family, kind, protocol, _, address = infos[0]
        # The protocol named: asyncio sets TCP_NODELAY only on sockets whose proto says TCP, and
        # without it every keep-alive request waits 40 ms on a delayed ACK.
        listener = socket.socket(family, kind, protocol or socket.IPPROTO_TCP)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(address)
        listener.listen(socket.SOMAXCONN)
    except OSError as error:
        raise UsageError(f"cannot listen on {host}:{port} ({error.strerror or error})") from None
    return listener


def _model_name(args: argparse.Namespace) -> str:
    if args.base_url:
        return str(args.model or "toolrouting")
    if args.model:
        return Path(args.model).name
    from .._backends import default_model_path

    return default_model_path().name
