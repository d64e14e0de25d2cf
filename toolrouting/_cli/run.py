"""``toolrouting run``: a routing run over the demo store or real tools, on the embedded model or a server.

Progress goes to stderr as it happens (none with ``--quiet``); the outcome goes to stdout. The
tools (``--mcp``, ``--mcp-config``, ``--tools``, ...) are the ``tools`` module's.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from .._backends import AsyncBackend, Backend, Message, ReasoningTags
from .._grounding import ABSTAIN_POLICIES
from .._limits import (
    DEFAULT_ANSWER_TOKENS,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_ROUTING_CAP,
    EMBEDDED_PROMPT_CACHE_DIR_MB,
)
from .._loop import Event, RoutingLoop, RunResult
from .._provider import ToolProvider
from .._settings import Settings
from ..demo import MemoryStore, demo_prompt
from .arguments import (
    Subparsers,
    UsageError,
    add_decoding_options,
    file_text,
    non_negative,
    positive,
    stdin_text,
)
from .exits import DONE
from .http_backend import add_http_backend_options, api_key, explained_refusal, redact
from .progress import AnswerPrinter, Progress
from .ranking import add_shortlist_options, ranker_of
from .tools import add_tool_options, run_tools, uses_tools

if TYPE_CHECKING:
    from .._backends import EmbeddedLlama

__all__ = [
    "add_model_options",
    "add_run",
    "async_model_backend",
    "demo_store",
    "model_backend",
    "system_prompt",
]

#: The server backend a command makes: the sync one, or the async one.
_Served = TypeVar("_Served", bound=Backend | AsyncBackend)


def add_run(subparsers: Subparsers) -> None:
    """Register ``run`` and its options."""
    parser = subparsers.add_parser(
        "run",
        help="answer a question with a routing run over the demo notes, MCP servers or Python tools",
        description="Run a retrieval phase on QUESTION: each round the model chooses one action "
        "(a tool, or none; with --max-calls K, up to K tool calls) under a grammar, each tool runs, and "
        "its result goes back, until the model "
        "answers none. Progress goes to stderr as it happens; the outcome goes to stdout. With no "
        "options it uses the embedded default model (SmolLM2-135M-Instruct) and the demo notes "
        "(memory_read, by title); --mcp, --mcp-config and --tools offer real tools instead.",
    )
    parser.add_argument(
        "question",
        nargs="?",
        metavar="QUESTION",
        help="the question to answer; - reads it from stdin, as does none when stdin is not a terminal",
    )
    add_model_options(parser)
    parser.add_argument(
        "--transcript", metavar="PATH", help="write every message to PATH as JSON Lines, as it is committed"
    )
    parser.add_argument(
        "--resume", action="store_true", help="continue the run in --transcript instead of starting one"
    )
    parser.add_argument("--json", action="store_true", help="print the outcome as one JSON document")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    add_tool_options(parser)
    parser.set_defaults(handler=_run)


def add_model_options(parser: argparse.ArgumentParser) -> None:
    """The model, its server and sampling, the prompt and the limits, as ``run`` and ``batch`` take them."""
    parser.add_argument(
        "--model",
        metavar="MODEL",
        help="a GGUF file for the embedded model, or with --base-url the server's model name "
        "(toolrouting models lists them)",
    )
    add_http_backend_options(parser)
    parser.add_argument(
        "--db",
        metavar="PATH",
        help="a memory database this store made, or a folder of .txt/.md notes (default: the demo notes)",
    )
    system = parser.add_mutually_exclusive_group()
    system.add_argument(
        "--system",
        metavar="TEXT",
        help="instructions added to the system message, after the tools' descriptions",
    )
    system.add_argument("--system-file", metavar="PATH", help="the same, read from a UTF-8 file")
    parser.add_argument(
        "--cap",
        type=positive,
        default=DEFAULT_ROUTING_CAP,
        metavar="N",
        help="completion cap of every routing request in tokens; the lower of this and --answer-tokens "
        "applies (default: %(default)s)",
    )
    parser.add_argument(
        "--max-rounds",
        type=positive,
        default=DEFAULT_MAX_ROUNDS,
        metavar="N",
        help="rounds before the model is told to hand off (default: %(default)s)",
    )
    parser.add_argument(
        "--max-calls",
        type=positive,
        default=1,
        metavar="K",
        help="tool calls one decision may make, run in order, each answered on its own; --max-rounds "
        "then counts calls (default: %(default)s)",
    )
    add_shortlist_options(
        parser,
        offered="offer each round only the K tools ranked best for the question and the results read, "
        "and the tools the run has called, when the tools are more than K (default: every tool)",
    )
    parser.add_argument(
        "--abstain",
        choices=ABSTAIN_POLICIES,
        default="off",
        help="grounding: a decision whose required arguments the conversation does not give is not "
        "run, and the answer says what was missing (default: %(default)s)",
    )
    parser.add_argument("--answer", action="store_true", help="after the handoff, ask for a final answer")
    parser.add_argument(
        "--answer-tokens",
        type=positive,
        default=DEFAULT_ANSWER_TOKENS,
        metavar="N",
        help="the backend's own completion cap, which the final answer gets; a routing cap only ever "
        "lowers it (default: %(default)s)",
    )
    parser.add_argument(
        "--temperature",
        type=non_negative,
        default=0.0,
        metavar="T",
        help="sampling temperature of the routed decisions and the answer (default: %(default)s, greedy)",
    )
    parser.add_argument("--top-p", type=non_negative, metavar="P", help="nucleus sampling of every request")
    parser.add_argument("--seed", type=int, metavar="N", help="sampling seed of every request")
    add_decoding_options(parser)


def _run(args: argparse.Namespace) -> int:
    if args.resume:
        _check_resume(args)
    messages = None if args.resume else _messages(args)
    ranker = ranker_of(args)  # a --ranker without --shortlist is refused before the model loads
    progress = None if args.quiet else Progress(sys.stderr, functools.partial(redact, args=args))
    with contextlib.ExitStack() as stack:
        if uses_tools(args):
            # A quiet run hides the servers' own logs too; otherwise they are theirs to show.
            errlog = stack.enter_context(open(os.devnull, "w")) if args.quiet else sys.stderr
            tools: ToolProvider = stack.enter_context(run_tools(args, errlog=errlog))
        else:
            tools = stack.enter_context(demo_store(args.db))
        stack.enter_context(explained_refusal(api_key(args)))
        backend = stack.enter_context(model_backend(args))
        # The answer streams to stdout as it comes, but for --json, whose outcome is one document.
        streamed = AnswerPrinter(sys.stdout) if args.answer and not args.json else None
        loop = RoutingLoop(
            backend,
            tools,
            cap=args.cap,
            max_rounds=args.max_rounds,
            max_calls=args.max_calls,
            shortlist=args.shortlist,
            ranker=ranker,
            abstain=args.abstain,
            answer=args.answer,
            stream_answer=streamed is not None,
            on_event=_both(progress, streamed),
            transcript=args.transcript,
        )
        result = loop.resume() if messages is None else loop.run(messages)
    if streamed is not None:
        streamed.close()
    _print_outcome(result, as_json=args.json, answer_shown=streamed is not None)
    return DONE


def _both(*observers: Callable[[Event], object] | None) -> Callable[[Event], None]:
    def observe(event: Event) -> None:
        for observer in observers:
            if observer is not None:
                observer(event)

    return observe


def _check_resume(args: argparse.Namespace) -> None:
    if not args.transcript:
        raise UsageError("--resume continues a run from --transcript PATH; name the file")
    if args.question is not None:
        raise UsageError("--resume takes no QUESTION: the transcript holds the conversation")
    if args.system is not None or args.system_file is not None:
        raise UsageError("--resume takes no --system or --system-file: the transcript holds the prompt")
    if not os.path.isfile(args.transcript):
        raise UsageError(f"--resume --transcript {args.transcript}: no such transcript file to continue")


def _messages(args: argparse.Namespace) -> list[Message]:
    """What the model is told at the start, after the loop's instructions: the system prompt, the question."""
    system = system_prompt(args)
    question: list[Message] = [{"role": "user", "content": _question(args)}]
    return question if system is None else [{"role": "system", "content": system}, *question]


def system_prompt(args: argparse.Namespace) -> str | None:
    """The demo's note for its store (none over other tools) with the caller's ``--system``
    additions, if any.

    The loop puts the tools' descriptions in front of it (its instructions).
    """
    parts = []
    if not uses_tools(args):
        with demo_store(args.db) as store:
            parts.append(demo_prompt(store))
    extra = args.system if args.system_file is None else _read_text(args.system_file, "--system-file")
    if extra is not None:
        if not extra.strip():
            raise UsageError("--system adds nothing: give it the instructions to add to the prompt")
        parts.append(extra.strip())
    return "\n\n".join(parts) or None


def _question(args: argparse.Namespace) -> str:
    question = args.question
    if question == "-" or (question is None and sys.stdin is not None and not sys.stdin.isatty()):
        question = stdin_text(errors="strict").strip()
    if not question:
        raise UsageError('the question is missing: toolrouting run "What does the latch do?"')
    return str(question)


def _read_text(path: str, option: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8")
    except OSError as error:
        raise UsageError(f"{option} {path}: cannot read it ({error.strerror or error})") from error
    except UnicodeDecodeError as error:
        raise UsageError(f"{option} {path}: not UTF-8 text ({error.reason} at byte {error.start})") from None


def demo_store(db: str | None) -> MemoryStore:
    """The demo notes store: the sample notes, or ``--db``'s database or folder of notes, each
    offering its notes by title when it is small enough to list them."""
    if db is None:
        return MemoryStore.sample(titles=True)
    path = Path(db)
    if path.is_dir():
        return MemoryStore.from_folder(path, titles=True)
    if not path.is_file():
        raise UsageError(f"--db {db}: no such database file or folder of notes")
    return MemoryStore(path, titles=True)


def model_backend(args: argparse.Namespace) -> Backend:
    """The backend the options name: a server with ``--base-url``, else the embedded model."""
    # Both backends are imported here: the HTTP one needs no llama.cpp, the embedded one no server.
    if args.base_url:
        from .._backends import OpenAICompatible

        return _server_backend(args, OpenAICompatible)
    return _embedded_backend(args)


def async_model_backend(
    args: argparse.Namespace, reasoning_tags: ReasoningTags | None = None
) -> AsyncBackend:
    """:func:`model_backend` for the async loop: the server's requests on ``httpx.AsyncClient`` (with
    the ``reasoning_tags`` its model reasons between, read from llama-server), or the embedded
    model taking its turns in a worker thread."""
    if args.base_url:
        from .._backends import AsyncOpenAICompatible

        return _server_backend(args, AsyncOpenAICompatible, reasoning_tags=reasoning_tags)
    from .._backends import AsyncEmbeddedLlama

    return AsyncEmbeddedLlama(_embedded_backend(args))


def _settings(args: argparse.Namespace) -> Settings:
    return Settings(
        max_tokens=args.answer_tokens,
        temperature=args.temperature,
        top_p=args.top_p,
        seed=args.seed,
        grammar=args.grammar,
    )


def _server_backend(args: argparse.Namespace, kind: Callable[..., _Served], **more: object) -> _Served:
    if args.threads is not None:
        raise UsageError("--threads sets the embedded model's threads; a server sets its own")
    if args.decoding is not None:
        raise UsageError("--decoding sets how the embedded model decodes; a server decodes its own way")
    if args.prompt_cache_mb is not None:
        raise UsageError("--prompt-cache-mb sets the embedded model's prompt cache; a server keeps its own")
    if args.ctx_size is not None:
        raise UsageError(
            "--ctx-size sets the embedded model's context; a server sets its own (llama-server -c)"
        )
    if args.prompt_cache_dir is not None or args.prompt_cache_dir_mb is not None:
        option = "--prompt-cache-dir" if args.prompt_cache_dir is not None else "--prompt-cache-dir-mb"
        raise UsageError(f"{option} keeps the embedded model's prompt states on disk; a server keeps its own")
    if args.chat_template is not None:
        raise UsageError("--chat-template sets the embedded model's template; a server applies its own")
    key = api_key(args)
    try:
        return kind(
            args.base_url,
            model=args.model,
            api_key=None if key is None else key.value,
            dialect=args.dialect,
            settings=_settings(args),
            **more,
        )
    except ValueError as error:
        # The backend names its own argument, model=; on the command line it is --model.
        missing = args.model is None and "model=" in str(error)
        hint = "; name one with --model (toolrouting models lists them)" if missing else ""
        raise UsageError(f"{error}{hint}") from error


def _embedded_backend(args: argparse.Namespace) -> EmbeddedLlama:
    if args.api_key is not None:
        raise UsageError("--api-key is for a server named with --base-url; the embedded model needs none")
    from .._backends import EmbeddedLlama, default_model_path

    if args.model is not None and not os.path.isfile(args.model):
        raise UsageError(
            f"--model {args.model}: no such GGUF file (with --base-url it names a server's model)"
        )
    model = args.model or str(default_model_path())
    if not args.quiet:
        print(f"toolrouting: loading {model}", file=sys.stderr)
    forced = args.decoding != "grammar"
    template = None if args.chat_template is None else file_text(args.chat_template, "--chat-template")
    folder = args.prompt_cache_dir
    if folder is None and args.prompt_cache_dir_mb is not None:
        raise UsageError("--prompt-cache-dir-mb bounds the folder --prompt-cache-dir names; name that folder")
    if folder is not None and os.path.exists(folder) and not os.path.isdir(folder):
        raise UsageError(f"--prompt-cache-dir {folder}: a file, not a folder for the prompt states")
    backend = EmbeddedLlama(
        model,
        settings=_settings(args),
        n_threads=args.threads,
        forced_tokens=forced,
        prompt_cache_mb=args.prompt_cache_mb,
        chat_template=template,
        repack=args.repack,
        n_ctx=args.ctx_size,
        prompt_cache_dir=folder,
        prompt_cache_dir_mb=args.prompt_cache_dir_mb or EMBEDDED_PROMPT_CACHE_DIR_MB,
    )
    if not args.quiet:
        print(f"toolrouting: {backend.repack.line()}", file=sys.stderr)
        print(f"toolrouting: {backend.context.line()}", file=sys.stderr)
    return backend


def _print_outcome(result: RunResult, *, as_json: bool, answer_shown: bool = False) -> None:
    if as_json:
        print(json.dumps(result.as_dict(), ensure_ascii=False, indent=2))
        return
    calls = sum(1 for action in result.actions if action.tool != "none")
    if result.abstained is not None:  # the last decision's calls were not run
        calls -= sum(1 for action in result.actions if action.round == result.rounds)
    rounds = "round" if result.rounds == 1 else "rounds"
    print(f"ended: {result.reason} after {result.rounds} {rounds}, {calls} tool call{'s' * (calls != 1)}")
    if result.answer is not None and not answer_shown:
        print(result.answer.strip())
