"""A public benchmark's own clients, pointed at ``toolrouting serve`` or at llama-server's tool calling.

    scripts/bfcl-venv.sh    # the scratch venv: bfcl-eval without its long list of dependencies
    /tmp/bfclvenv/bin/python -m benchmarks.quality.bfcl --model MODEL.gguf --api chat \\
        --categories irrelevance,simple_python,multiple --cases 100 --out run.json \\
        --way "off=serve --abstain off" --way "grounding=serve --abstain grounding" --way native=llama-server

The Berkeley Function Calling Leaderboard (PyPI ``bfcl-eval``, Apache-2.0) ships a handler for
OpenAI's chat completions (``OpenAICompletionsHandler``) and one for its Responses API
(``OpenAIResponsesHandler``); each builds its ``openai`` client from ``OPENAI_BASE_URL`` and
``OPENAI_API_KEY``. This script starts each server under test in a process of its own, points
those two variables at it, and runs the handler's own ``inference`` on the first ``--cases``
entries of each category. Each answer is scored by the leaderboard's own evaluation: the AST
checker (``_evaluate_single_ast_entry``) for a category with answers, the relevance rule
(``_evaluate_single_relevance_entry``: no call is right) for ``irrelevance``. The multi-turn
categories (``multi_turn_base`` ...), whose calls take arguments from earlier results, are run
and scored by the leaderboard's multi-turn handler and checker (benchmarks/quality/bfcl_multi_turn.py).

Each server under test is a way (``--way NAME=KIND [OPTIONS]``), and every case is asked of
each way in turn, so their seconds are taken side by side:

- ``serve``: ``toolrouting serve`` on the embedded model, under ``--serve-python`` (the
  project's venv), with OPTIONS (``--abstain``, ``--shortlist``, ...);
- ``serve-llama``: the same in front of llama-server (the ``llama.cpp`` dialect);
- ``llama-server``: llama.cpp's server with ``--jinja``, its own tool calling from the model's
  chat template, as a user of native tool calling runs it.

Without ``--way``, one way, ``serve``, takes the options after ``--``. ``--efforts`` asks each
way at each reasoning effort in turn (benchmarks/quality/bfcl_efforts.py).
``--distractors N`` hides each case's functions among N others, drawn with a seed of the case's
own (``SEED:ID``) from every function of the three categories, none named like one of its own;
the checker still reads the case's own functions, so a distractor called is a wrong call.

Every case is saved as it is scored (``--out``, JSON: the run's settings and one record a case
and way, with the tools sent, the calls or the text, the verdict, tokens and seconds), so
abstention can be scored offline from the same decisions (benchmarks/quality/bfcl_grounding.py), and
``--resume`` goes on from a file cut short.

One module of bfcl-eval is replaced before the import: ``constants.model_config``, its table of
every model it knows, imports each vendor's SDK. The checker reads one field of it,
``underscore_to_dot``, for the model under test; the replacement holds that one entry, set as the
table sets it for OpenAI's function-calling models (``True``: a dotted function name is sent as
``math_factorial`` and read back so). Run it under the scratch venv (it imports bfcl_eval, which
the project's venv does not hold); it imports nothing of toolrouting.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shlex
import signal
import sys
import time
import types
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import median
from typing import Any

from benchmarks.common.servers import answers, local_server, started
from benchmarks.quality.bfcl_efforts import ask_effort, halves
from benchmarks.quality.bfcl_multi_turn import MULTI_TURN, brief, run_multi_turn

ROOT = Path(__file__).resolve().parents[2]
#: The registry name the checker looks the model up by; "FC": the handler's function-calling mode.
REGISTRY_NAME = "toolrouting-FC"
#: The leaderboard's default sampling temperature for its generation runs.
TEMPERATURE = 0.001
#: The categories of one function call a question, with or without a function that fits.
CATEGORIES = ("irrelevance", "simple_python", "multiple")
#: Tokens an answer in words may take (serve's ``--answer-tokens``, llama-server's ``--n-predict``):
#: the handler sends no ``max_tokens``, and a small model's answer to a question no function fits
#: can run on to the context's end. A call is far shorter.
ANSWER_CAP = 256
#: The context llama-server gives its one slot: the catalogue, the question and a reply.
CONTEXT = 8192

Record = dict[str, Any]


@dataclass(frozen=True)
class _ConfigEntry:
    """The one field of bfcl-eval's ModelConfig that its AST checker reads."""

    underscore_to_dot: bool


def _without_vendor_sdks() -> None:
    """Put a one-entry model table where bfcl-eval's own would import every vendor's SDK."""
    table = types.ModuleType("bfcl_eval.constants.model_config")
    vars(table)["MODEL_CONFIG_MAPPING"] = {REGISTRY_NAME: _ConfigEntry(underscore_to_dot=True)}
    sys.modules["bfcl_eval.constants.model_config"] = table


@dataclass(frozen=True)
class Way:
    """One server under test: its name in the records, what it is, and the options it is started with."""

    name: str
    kind: str
    options: tuple[str, ...]

    @classmethod
    def of(cls, text: str) -> Way:
        """``NAME=KIND [OPTIONS]``: KIND ``serve`` (the embedded model), ``serve-llama`` (in front
        of llama-server) or ``llama-server`` (its own tool calling); OPTIONS are the server's."""
        name, _, spec = text.partition("=")
        kind, *options = shlex.split(spec) or [""]
        if not name or kind not in KINDS:
            raise ValueError(f"a way is NAME=KIND [OPTIONS], KIND one of {', '.join(KINDS)}, not {text!r}")
        return cls(name, kind, tuple(options))


KINDS = ("serve", "serve-llama", "llama-server")


@contextlib.contextmanager
def _started(way: Way, args: argparse.Namespace) -> Iterator[str]:
    """The way's server on a free port: its base URL (``.../v1``), until the block ends."""
    if way.kind == "llama-server":
        # Its chat template's tool calling (--jinja), as a user of native tool calling runs it.
        extra = ["--jinja", "--n-predict", str(args.answer_cap), *way.options]
        with local_server("llama-server", args.model, args.threads, CONTEXT, extra=extra) as url:
            yield url + "/v1"
        return
    with contextlib.ExitStack() as stack:
        backend = ["--model", str(args.model), "--threads", str(args.threads)]
        if way.kind == "serve-llama":
            url = stack.enter_context(local_server("llama-server", args.model, args.threads, CONTEXT))
            backend = [
                "--base-url",
                url + "/v1",
                "--dialect",
                "llama.cpp",
                "--model",
                Path(args.model).name,
            ]

        def command(port: int) -> list[str]:
            return [
                args.serve_python, "-m", "toolrouting", "serve", *backend, "--port", str(port), "--quiet",
                "--answer-tokens", str(args.answer_cap), *way.options,
            ]  # fmt: skip

        served = stack.enter_context(
            started("toolrouting serve", command, lambda url: answers(url + "/health"))
        )
        yield served + "/v1"


def _handler(api: str, base_url: str) -> Any:
    """The leaderboard's handler of ``api``, its client built from the two variables a user sets."""
    os.environ["OPENAI_BASE_URL"] = base_url
    os.environ["OPENAI_API_KEY"] = "unused"
    _without_vendor_sdks()
    if api == "responses":
        from bfcl_eval.model_handler.api_inference.openai_response import (
            OpenAIResponsesHandler as Handler,
        )
    else:
        from bfcl_eval.model_handler.api_inference.openai_completion import (
            OpenAICompletionsHandler as Handler,
        )
    return Handler(
        model_name="toolrouting",
        temperature=TEMPERATURE,
        registry_name=REGISTRY_NAME,
        is_fc_model=True,
    )


def _with_distractors(entry: Record, everything: Sequence[Record], count: int, seed: int) -> Record:
    """``entry`` with ``count`` functions of other cases drawn for it, its own at seeded places."""
    if count == 0:
        return entry
    # As the handler sends them: a dot in a name is an underscore, so "a.b" is "a_b" too.
    own = {function["name"].replace(".", "_") for function in entry["function"]}
    rng = random.Random(f"{seed}:{entry['id']}")
    drawn = rng.sample([f for f in everything if f["name"].replace(".", "_") not in own], count)
    for function in entry["function"]:
        drawn.insert(rng.randrange(len(drawn) + 1), function)
    return {**entry, "function": drawn}


def _function_pool() -> list[Record]:
    """Every distinct function of the three categories, by name, in the order first met."""
    from bfcl_eval.utils import load_dataset_entry

    pool: dict[str, Record] = {}
    for category in CATEGORIES:
        for entry in load_dataset_entry(category, include_language_specific_hint=False):
            for function in entry["function"]:
                pool.setdefault(function["name"], function)
    return list(pool.values())


def _run_case(handler: Any, category: str, entry: Record, prompt: Record, answer: Record | None) -> Record:
    """One case asked and scored: what was sent and answered, and the checker's verdict."""
    import openai
    from bfcl_eval.constants.enums import Language, ReturnFormat
    from bfcl_eval.eval_checker.eval_runner import (
        _evaluate_single_ast_entry,
        _evaluate_single_relevance_entry,
    )

    record: Record = {
        "id": entry["id"],
        "category": category,
        "question": entry["question"][0],
        "tools": handler._compile_tools({}, json.loads(json.dumps(entry)))["tools"],
    }
    started_at = time.perf_counter()
    try:
        result, metadata = handler.inference(
            json.loads(json.dumps(entry)),
            include_input_log=False,
            exclude_state_log=True,
        )
    except openai.APIError as error:
        return {**record, "outcome": "error", "valid": False, "note": str(error)[:300]}
    calls = []
    if isinstance(result, list):
        for call in result:
            ((name, arguments),) = call.items()
            calls.append({"name": name, "arguments": arguments})
    if answer is None:
        verdict = _evaluate_single_relevance_entry(
            handler, entry["id"], result, prompt, REGISTRY_NAME, category
        )
    else:
        verdict = _evaluate_single_ast_entry(
            handler, entry["id"], result, answer["ground_truth"], prompt, REGISTRY_NAME, category,
            Language.PYTHON, ReturnFormat.PYTHON,
        )  # fmt: skip
    return {
        **record,
        "outcome": "answered",
        "calls": calls,
        "text": None if isinstance(result, list) else str(result),
        "valid": bool(verdict["valid"]),
        "error_type": verdict.get("error_type"),
        "input_tokens": metadata.get("input_token_count"),
        "output_tokens": metadata.get("output_token_count"),
        "seconds": round(time.perf_counter() - started_at, 3),
    }


def _cases(
    categories: Sequence[str], args: argparse.Namespace
) -> Iterator[tuple[str, Record, Record, Record | None]]:
    """``(category, entry as sent, prompt as scored, answer)`` of the first ``--cases`` of each
    category, those of ``--half`` only when one is named."""
    from bfcl_eval.utils import (
        is_relevance_or_irrelevance,
        load_dataset_entry,
        load_ground_truth_entry,
    )

    everything = _function_pool() if args.distractors else []
    for category in categories:
        # As the leaderboard runs them: generation reads the entries with the language hint,
        # evaluation reads the functions without it.
        entries = [e for e in load_dataset_entry(category)[: args.cases] if _in_half(e["id"], args.half)]
        prompts = {
            p["id"]: p
            for p in load_dataset_entry(category, include_prereq=False, include_language_specific_hint=False)
        }
        answers = (
            {}
            if is_relevance_or_irrelevance(category)
            else {a["id"]: a for a in load_ground_truth_entry(category)}
        )
        for entry in entries:
            sent = _with_distractors(entry, everything, args.distractors, args.seed)
            yield category, sent, prompts[entry["id"]], answers.get(entry["id"])


HALVES = ("fit", "held-out")  # as benchmarks/quality/bfcl_grounding.py splits them: by the id's parity


def _in_half(case: str, half: str | None) -> bool:
    return half is None or (int(case.rsplit("_", 1)[1]) % 2 == 0) == (half == "fit")


def summary(records: Sequence[Record]) -> list[str]:
    """One line a way and category: right, calls, errors, tokens and seconds."""
    lines = []
    kinds = dict.fromkeys((record.get("way", "serve"), record["category"]) for record in records)
    for way, category in kinds:
        mine = [r for r in records if r.get("way", "serve") == way and r["category"] == category]
        answered = [record for record in mine if record["outcome"] == "answered"]
        right = sum(record["valid"] for record in mine)
        called = sum(bool(record.get("calls")) for record in answered)

        def middle(field: str, among: Sequence[Record] = answered) -> str:
            values = [record[field] for record in among if record.get(field) is not None]
            return f"{median(values):g}" if values else "-"

        lines.append(
            f"{way:12} {category:14} {right}/{len(mine)} right ({100 * right / len(mine):.1f}%), "
            f"{called} with a call, {len(mine) - len(answered)} errors; median "
            f"{middle('input_tokens')} prompt + {middle('output_tokens')} completion tokens, "
            f"{middle('seconds')} s"
        )
    return lines


def main(argv: Sequence[str] | None = None) -> None:
    given = list(sys.argv[1:] if argv is None else argv)
    serve_options = given[given.index("--") + 1 :] if "--" in given else []
    given = given[: given.index("--")] if "--" in given else given
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--model", required=True, type=Path, help="the GGUF model served")
    parser.add_argument("--api", choices=("chat", "responses"), default="chat", help="the handler")
    parser.add_argument("--categories", default="simple_python", help="comma-separated")
    parser.add_argument("--cases", type=int, default=30, help="the first N of each category")
    parser.add_argument(
        "--half",
        choices=HALVES,
        help="of those, only the fit half (an even-numbered id) or the held-out half (an odd one)",
    )
    parser.add_argument(
        "--way",
        action="append",
        type=Way.of,
        help="NAME=KIND [OPTIONS], each asked every case in turn (default: serve=serve OPTIONS-AFTER---)",
    )
    parser.add_argument("--distractors", type=int, default=0, help="functions of other cases beside a case's")
    parser.add_argument(
        "--efforts", help="comma-separated reasoning efforts, each way asked at each (none, low, ...)"
    )
    parser.add_argument("--seed", type=int, default=0, help="the distractors' seed (default 0)")
    parser.add_argument(
        "--answer-cap", type=int, default=ANSWER_CAP, help=f"an answer's tokens ({ANSWER_CAP})"
    )
    parser.add_argument("--threads", type=int, default=2, help="the model's threads (default 2)")
    parser.add_argument("--out", type=Path, help="the records, JSON, written as each case is scored")
    parser.add_argument("--resume", action="store_true", help="keep --out's records and ask only the rest")
    parser.add_argument(
        "--serve-python",
        default=str(ROOT / ".venv" / "bin" / "python"),
        help="the Python that has toolrouting and its serve extra (default: the repository's .venv)",
    )
    args = parser.parse_args(given)
    ways: list[Way] = args.way or [Way("serve", "serve", tuple(serve_options))]
    # Stopped (SIGTERM), the servers it started are stopped too, as on Ctrl-C.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    categories = [name for name in args.categories.split(",") if name]
    unknown = sorted(set(categories) - set(CATEGORIES) - set(MULTI_TURN))
    if unknown:
        parser.error(f"--categories: {', '.join(unknown)} is not one of {', '.join(CATEGORIES + MULTI_TURN)}")
    settings = {
        key: str(value) if isinstance(value, Path) else value
        for key, value in vars(args).items()
        if key not in ("out", "resume", "serve_python", "way")
    }
    settings["ways"] = {way.name: [way.kind, *way.options] for way in ways}
    records: list[Record] = []
    if args.resume and args.out and args.out.exists():
        records = [r for r in json.loads(args.out.read_text())["records"] if r["outcome"] == "answered"]
    done = {(record.get("way", "serve"), record["id"]) for record in records}

    efforts = args.efforts.split(",") if args.efforts else []
    with contextlib.ExitStack() as stack:
        handlers = {}
        for way in ways:
            url = stack.enter_context(_started(way, args))
            for effort in efforts or [None]:
                handler = handlers[f"{way.name}@{effort}" if effort else way.name] = _handler(args.api, url)
                ask_effort(handler, args.api, effort or "none")
        for category, entry, prompt, answer in _cases(categories, args):
            for name, handler in handlers.items():
                if (name, entry["id"]) in done:
                    continue
                run = run_multi_turn if category in MULTI_TURN else _run_case
                record = {"way": name, **run(handler, category, entry, prompt, answer)}
                records.append(record)
                mark = "right" if record["valid"] else "wrong"
                shown = brief(record)
                seconds = record.get("seconds", "-")
                print(
                    f"{name:10} {record['id']:18} {mark:5} {seconds!s:>7} s  {shown}",
                    flush=True,
                )
                if args.out:
                    args.out.write_text(
                        json.dumps({"settings": settings, "records": records}, indent=1) + "\n"
                    )
    print()
    for line in summary(records) + (halves(records) if efforts else []):
        print(line)


if __name__ == "__main__":
    main()
