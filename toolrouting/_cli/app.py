"""The command line, ``toolrouting run``, ``schema``, ``parse`` and ``preflight``, as ``main(argv)``.

Each subcommand is one ``_add_*`` function that registers its parser and sets its
``handler``; a new subcommand is one more such function in ``SUBCOMMANDS``. Library errors
become one line ``ErrorType: message`` on stderr and exit status 1; usage errors exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TextIO

from .._backends import DIALECTS, Backend
from .._catalogue import ToolSpec
from .._catalogues import tools_from
from .._errors import ToolRoutingError
from .._limits import DEFAULT_MAX_ROUNDS, DEFAULT_ROUTING_CAP
from .._loop import (
    ActionChosen,
    Event,
    LimitReached,
    RepairRequested,
    Resumed,
    RetryScheduled,
    RoundStarted,
    RoutingLoop,
    RunResult,
    ToolResult,
)
from .._parse import parse_route
from .._preflight import TARGETS, format_findings, preflight
from .._route_schema import route_schema, route_tool_names
from .._settings import Settings
from ..demo import SYSTEM_PROMPT, MemoryStore

__all__ = ["SUBCOMMANDS", "build_parser", "help_texts", "main"]

#: The final answer's budget unless --answer-tokens names another: a few paragraphs, so a
#: model that rambles (free text has no grammar to end it) stops in seconds, not minutes.
DEFAULT_ANSWER_TOKENS = 256

#: Characters of a tool's result shown on one progress line.
_PREVIEW_CHARS = 100

Subparsers = Any  # argparse's _SubParsersAction is private


class _UsageError(Exception):
    """A command line that cannot be carried out as given (a missing file, bad JSON): exit status 2."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line on ``argv`` (``sys.argv[1:]`` when ``None``) and return the exit status."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit:  # argparse exits on --help (0) and on usage errors (2)
        return exit.code if isinstance(exit.code, int) else 2
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return 2
    handler: Callable[[argparse.Namespace], int] = args.handler
    try:
        return handler(args)
    except _UsageError as error:
        print(f"toolrouting {args.command}: error: {error}", file=sys.stderr)
        return 2
    except ToolRoutingError as error:
        print(f"{type(error).__name__}: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("toolrouting: interrupted", file=sys.stderr)
        return 130


def build_parser() -> argparse.ArgumentParser:
    """The whole command line's parser, every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="toolrouting",
        description="Every turn of a tool-using model as one grammar-constrained choice out of a closed set "
        "of actions.",
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


def _add_run(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "run",
        help="answer a question with a routing run over a memory store",
        description="Run a retrieval phase on QUESTION: each round the model chooses one action "
        "(memory_search, memory_read or none) under a grammar, the tool runs, and its result goes "
        "back, until the model answers none. Progress goes to stderr as it happens; the outcome goes "
        "to stdout. With no options it uses the embedded default model (SmolLM2-135M-Instruct) and "
        "the demo notes.",
    )
    parser.add_argument("question", nargs="?", metavar="QUESTION", help="the question to answer")
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="a GGUF file for the embedded model, or with --base-url the server's model name",
    )
    parser.add_argument(
        "--base-url", metavar="URL", help="an OpenAI-compatible server (http://host:port/v1) instead"
    )
    parser.add_argument(
        "--dialect",
        choices=DIALECTS,
        default="openai",
        help="how that server wants the schema (default: %(default)s)",
    )
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="a memory database this store made, or a folder of .txt/.md notes (default: the demo notes)",
    )
    parser.add_argument(
        "--cap",
        type=_positive,
        default=DEFAULT_ROUTING_CAP,
        metavar="N",
        help="completion cap of every routing request in tokens; the lower of this and --answer-tokens "
        "applies (default: %(default)s)",
    )
    parser.add_argument(
        "--max-rounds",
        type=_positive,
        default=DEFAULT_MAX_ROUNDS,
        metavar="N",
        help="rounds before the model is told to hand off (default: %(default)s)",
    )
    parser.add_argument("--answer", action="store_true", help="after the handoff, ask for a final answer")
    parser.add_argument(
        "--answer-tokens",
        type=_positive,
        default=DEFAULT_ANSWER_TOKENS,
        metavar="N",
        help="the backend's own completion budget, which the final answer gets; a routing cap only "
        "ever lowers it (default: %(default)s)",
    )
    parser.add_argument(
        "--transcript", metavar="PATH", help="write every message to PATH as JSON Lines, as it is committed"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in --transcript instead of starting one"
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON document")
    parser.add_argument(
        "--temperature",
        type=_non_negative,
        default=0.0,
        metavar="T",
        help="sampling temperature of the routed decisions and the answer (default: %(default)s, greedy)",
    )
    parser.add_argument("--top-p", type=_non_negative, metavar="P", help="nucleus sampling of every request")
    parser.add_argument("--seed", type=int, metavar="N", help="sampling seed of every request")
    parser.add_argument(
        "--threads",
        type=_positive,
        metavar="N",
        help="threads of the embedded model (default: llama-cpp-python's, half the cores)",
    )
    parser.set_defaults(handler=_run)


def _add_schema(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "schema",
        help="print the route schema of a tool catalogue",
        description="Print the route schema (one anyOf alternative per tool, then none) of CATALOGUE, "
        "a JSON file holding a list of tools (OpenAI, Responses, Anthropic, MCP or bare function "
        'declarations) or an object with a "tools" list.',
    )
    parser.add_argument("catalogue", metavar="CATALOGUE.json")
    parser.set_defaults(handler=_schema)


def _add_parse(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "parse",
        help="check a model's reply against a tool catalogue",
        description="Parse REPLY (stdin when absent) as an action offered by CATALOGUE and print the "
        "result as JSON. Exit status 0 when the action is accepted, 1 when it is refused.",
    )
    parser.add_argument("catalogue", metavar="CATALOGUE.json")
    parser.add_argument("reply", nargs="?", metavar="REPLY")
    parser.set_defaults(handler=_parse)


def _add_preflight(subparsers: Subparsers) -> None:
    parser = subparsers.add_parser(
        "preflight",
        help="list what a grammar compiler will ignore or refuse in a catalogue's route schema",
        description="Check the route schema of CATALOGUE against what TARGET's JSON-schema compiler "
        "does with it: keywords it ignores or refuses, key orders it imposes, extra keys it allows. "
        "Exit status 1 when it would refuse the schema, 0 otherwise.",
    )
    parser.add_argument("catalogue", metavar="CATALOGUE.json")
    parser.add_argument("--target", choices=TARGETS, default="llama.cpp", help="the grammar compiler")
    parser.set_defaults(handler=_preflight)


#: The subcommands, in the order ``--help`` lists them.
SUBCOMMANDS: list[Callable[[Subparsers], None]] = [_add_run, _add_schema, _add_parse, _add_preflight]


def _run(args: argparse.Namespace) -> int:
    if args.resume and not args.transcript:
        raise _UsageError("--resume continues a run from --transcript PATH; name the file")
    if args.resume and args.question:
        raise _UsageError("--resume takes no QUESTION: the transcript holds the conversation")
    if not args.resume and not args.question:
        raise _UsageError('the question is missing: toolrouting run "What does the latch do?"')
    store = _store(args.db)
    with store, _backend(args) as backend:
        loop = RoutingLoop(
            backend,
            store,
            cap=args.cap,
            max_rounds=args.max_rounds,
            answer=args.answer,
            on_event=_Progress(sys.stderr),
            transcript=args.transcript,
        )
        if args.resume:
            result = loop.resume()
        else:
            result = loop.run(
                [
                    {"role": "system", "content": SYSTEM_PROMPT},
                    {"role": "user", "content": args.question},
                ]
            )
    _print_outcome(result, as_json=args.json)
    return 0


def _store(db: str | None) -> MemoryStore:
    if db is None:
        return MemoryStore.sample()
    path = Path(db)
    if path.is_dir():
        return MemoryStore.from_folder(path)
    if not path.is_file():
        raise _UsageError(f"--db {db}: no such database file or folder of notes")
    return MemoryStore(path)


def _backend(args: argparse.Namespace) -> Backend:
    # Both backends are imported here: the HTTP one needs no llama.cpp, the embedded one no server.
    settings = Settings(
        max_tokens=args.answer_tokens, temperature=args.temperature, top_p=args.top_p, seed=args.seed
    )
    if args.base_url:
        if args.threads is not None:
            raise _UsageError("--threads sets the embedded model's threads; a server sets its own")
        from .._backends import OpenAICompatible

        try:
            return OpenAICompatible(args.base_url, model=args.model, dialect=args.dialect, settings=settings)
        except ValueError as error:
            raise _UsageError(str(error)) from error
    from .._backends import EmbeddedLlama, default_model_path

    model = args.model or str(default_model_path())
    print(f"toolrouting: loading {model}", file=sys.stderr)
    return EmbeddedLlama(model, settings=settings, n_threads=args.threads)


class _Progress:
    """Shows a run's events as they happen, one short line each."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def __call__(self, event: Event) -> None:
        line = self._line(event)
        if line is not None:
            print(line, file=self.stream, flush=True)

    def _line(self, event: Event) -> str | None:
        if isinstance(event, Resumed):
            torn = f"; dropped a torn last line {json.dumps(event.torn_line)}" if event.torn_line else ""
            return f"resumed at round {event.round} after {event.messages} messages{torn}"
        if isinstance(event, RoundStarted):
            return f"round {event.round}: {' | '.join(event.choices)}"
        if isinstance(event, RetryScheduled):
            return f"  retry {event.attempt} in {event.delay:g} s after {event.error}"
        if isinstance(event, RepairRequested):
            return f"  repair {event.attempt}: {event.problem}"
        if isinstance(event, ActionChosen):
            shown = "" if event.arguments is None else json.dumps(event.arguments, ensure_ascii=False)
            return f"  -> {event.tool} {_preview(shown)}".rstrip()
        if isinstance(event, ToolResult):
            return f"  <- {'error: ' if event.is_error else ''}{_preview(event.content)}"
        if isinstance(event, LimitReached):
            return f"  limit {event.limit}: the {event.tool} call was not run; only none is offered now"
        return None


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= _PREVIEW_CHARS else flat[: _PREVIEW_CHARS - 1] + "…"


def _print_outcome(result: RunResult, *, as_json: bool) -> None:
    if as_json:
        print(json.dumps(result.as_dict(), ensure_ascii=False, indent=2))
        return
    calls = sum(1 for action in result.actions if action.tool != "none")
    rounds = "round" if result.rounds == 1 else "rounds"
    print(f"ended: {result.reason} after {result.rounds} {rounds}, {calls} tool call{'s' * (calls != 1)}")
    if result.answer is not None:
        print(result.answer.strip())


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(route_schema(_catalogue(args.catalogue)), ensure_ascii=False, indent=2))
    return 0


def _parse(args: argparse.Namespace) -> int:
    tools = _catalogue(args.catalogue)
    reply = args.reply if args.reply is not None else _stdin_text()
    route = parse_route(reply, route_tool_names(tools))
    print(json.dumps(route.as_dict(), ensure_ascii=False))
    return 0 if route.ok else 1


def _preflight(args: argparse.Namespace) -> int:
    findings = preflight(route_schema(_catalogue(args.catalogue)), args.target)
    print(format_findings(findings))
    return 1 if any(finding.severity == "error" for finding in findings) else 0


def _stdin_text() -> str:
    # Bytes that are not UTF-8 become lone surrogates, which parse_route refuses by name.
    raw = getattr(sys.stdin, "buffer", None)
    return sys.stdin.read() if raw is None else raw.read().decode("utf-8", "surrogateescape")


def _catalogue(path: str) -> list[ToolSpec]:
    try:
        value = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise _UsageError(f"cannot read {path}: {error.strerror or error}") from error
    except (UnicodeDecodeError, ValueError) as error:
        raise _UsageError(f"{path} is not JSON: {error}") from error
    except RecursionError:
        raise _UsageError(f"{path} nests too deeply to be a catalogue") from None
    if isinstance(value, dict) and isinstance(value.get("tools"), list):
        value = value["tools"]
    if not isinstance(value, list):
        raise _UsageError(
            f'{path} holds no catalogue: a JSON list of tools, or an object with a "tools" list'
        )
    # OpenAI, Responses, Anthropic, MCP or bare declarations; a bad entry is a CatalogueError.
    return tools_from(value)


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def _non_negative(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 <= value < float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of zero or more")
    return value
