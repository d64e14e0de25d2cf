"""Grammar compile time of route schemas, two ways.

    OMP_WAIT_POLICY=passive .venv/bin/python -m benchmarks.speed.compile schemas \\
        [--sizes 10,50,200,1000] [--runs 5]
    OMP_WAIT_POLICY=passive .venv/bin/python -m benchmarks.speed.compile ours \\
        [--sizes 10,100,1000] [--runs 5] [--threads 2]

The catalogues are the corpus in tests/catalogues/, cycled and renamed. Each figure is the
median of ``--runs`` (half as many at 1,000 tools).

``schemas``: the route schema beside vLLM's ``tool_choice="required"`` schema over the same tools:

- route: ``route_schema(tools)``, an object with an ``anyOf`` alternative per tool and ``none``;
- vllm-required: what vLLM builds for ``tool_choice="required"``, an array with ``minItems: 1``
  whose items are ``anyOf`` ``{name: {enum: [NAME]}, parameters}``, the tools' ``$defs`` hoisted
  to the top as vLLM does;

each timed through llama.cpp's converter (llama-cpp-python's ``LlamaGrammar.from_json_schema``,
then llama.cpp parsing the GBNF over the default model's vocabulary) and llguidance (building an
``LLMatcher`` over the same vocabulary, then its first token mask, where it builds its lexer
lazily).

``ours``: our compiler against llama.cpp's converters:

- ours, cold: ``route_grammar(schema, bounded=True)`` on a schema it has not seen (each run adds
  a different ``$comment``, which the grammar ignores, so the cache never answers);
- ours, cached: the same schema again, as a loop's next round asks for it;
- llama-cpp-python's converter (``LlamaGrammar.from_json_schema``), the Python port of llama.cpp's
  that llama_cpp.server and the embedded backend's ``grammar="server"`` run on every new schema;
- llama.cpp parsing each GBNF over the default model's vocabulary, as a sampler does on each
  request (``llama_sampler_init_grammar``);
- with the cached llama-server running: a whole request with ``max_tokens`` 1, the schema for
  its C++ converter against our GBNF, so the difference is its conversion (the prompt is the same).

Every GBNF passes the embedded backend's own check (``check_gbnf``: its nesting depth, then
llama.cpp's parser with its reason kept) once, untimed, before it is timed, so a grammar
llama.cpp would refuse, or overflow its stack on, is a ``GrammarError`` here as in the backend,
never a crash of the benchmark; the timed parse is then the bare one every request pays.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import httpx

from benchmarks.common.corpus import ROOT
from benchmarks.common.servers import llama_server_binary, local_server
from benchmarks.common.ways import run_way
from toolrouting import default_model_path, route_grammar, route_schema, tools_from
from toolrouting._backends import check_gbnf, llama_grammar_source


def corpus_tools(count: int) -> list[dict[str, Any]]:
    """``count`` tools cycled from the test corpus, each renamed ``NAME_K``."""
    pool = [
        dict(tool)
        for path in sorted((ROOT / "tests" / "catalogues").glob("*.json"))
        for tool in tools_from(json.loads(path.read_text()))
    ]
    tools = []
    for k in range(count):
        tool = json.loads(json.dumps(pool[k % len(pool)]))
        tool["function"]["name"] = f"{tool['function']['name']}_{k}"
        tools.append(tool)
    return tools


def vllm_required_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    """vLLM's schema for tool_choice="required" (see shared WIRE.md), $defs hoisted by name."""
    alternatives = []
    definitions: dict[str, Any] = {}
    for tool in tools:
        parameters = json.loads(json.dumps(tool["function"].get("parameters", {"type": "object"})))
        for key in ("$defs", "definitions"):
            for name, subschema in parameters.pop(key, {}).items():
                definitions[name] = subschema
        alternatives.append(
            {
                "properties": {
                    "name": {"type": "string", "enum": [tool["function"]["name"]]},
                    "parameters": parameters,
                },
                "required": ["name", "parameters"],
            }
        )
    schema: dict[str, Any] = {
        "type": "array",
        "minItems": 1,
        "items": {"type": "object", "anyOf": alternatives},
    }
    if definitions:
        # vLLM hoists $defs only; "#/definitions/..." refs are rewritten here so the schema compiles.
        schema["$defs"] = definitions
    hoisted: dict[str, Any] = json.loads(json.dumps(schema).replace('"#/definitions/', '"#/$defs/'))
    return hoisted


def median_ms(action: Callable[[int], object], runs: int) -> float:
    """The median of ``runs`` timings of ``action(run)``, in milliseconds."""
    times = []
    for run in range(runs):
        start = time.perf_counter()
        action(run)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def each(action: Callable[[], object]) -> Callable[[int], object]:
    """``action`` as :func:`median_ms` times it, whatever the run."""
    return lambda _: action()


class Compilers:
    """llama.cpp's converter and parser and llguidance's compiler, over the default model's vocabulary."""

    def __init__(self) -> None:
        import llama_cpp
        import llguidance
        import llguidance.llamacpp

        self.llama_cpp: Any = llama_cpp
        self.llguidance: Any = llguidance
        self.model = llama_cpp.Llama(model_path=str(default_model_path()), vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.model.model)
        self.tokenizer = llguidance.llamacpp.lltokenizer_from_vocab(self.vocab)

    def gbnf(self, text: str) -> str:
        source: str = llama_grammar_source(self.llama_cpp.LlamaGrammar.from_json_schema(text, verbose=False))[
            0
        ]
        return source

    def check(self, gbnf: str) -> str:
        """``gbnf`` once the embedded backend's check has passed it; a ``GrammarError`` if not."""
        check_gbnf(self.llama_cpp, self.vocab, gbnf)
        return gbnf

    def parse_gbnf(self, gbnf: str) -> None:
        sampler = self.llama_cpp.llama_sampler_init_grammar(self.vocab, gbnf.encode(), b"root")
        if not sampler:
            raise RuntimeError("llama.cpp did not parse the grammar")
        self.llama_cpp.llama_sampler_free(sampler)

    def matcher(self, text: str) -> Any:
        grammar = self.llguidance.LLMatcher.grammar_from_json_schema(text)
        matcher = self.llguidance.LLMatcher(self.tokenizer, grammar, log_level=0)
        if matcher.is_error():
            raise RuntimeError(matcher.get_error())
        return matcher

    def first_mask(self, text: str) -> None:
        self.matcher(text).compute_bitmask()


def schemas_way(args: argparse.Namespace) -> None:
    compilers = Compilers()
    header = (
        "| tools | schema | schema bytes | GBNF bytes | llama.cpp convert ms | llama.cpp parse ms "
        "| llguidance compile ms | llguidance compile + first mask ms |"
    )
    print(header)
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        tools = corpus_tools(size)
        for label, schema in (("route", route_schema(tools)), ("vllm-required", vllm_required_schema(tools))):
            text = json.dumps(schema, separators=(",", ":"))
            gbnf = compilers.check(compilers.gbnf(text))
            runs = max(1, args.runs if size < 1000 else args.runs // 2)
            row = [
                str(size),
                label,
                f"{len(text.encode()):,}",
                f"{len(gbnf.encode()):,}",
                f"{median_ms(each(functools.partial(compilers.gbnf, text)), runs):.1f}",
                f"{median_ms(each(functools.partial(compilers.parse_gbnf, gbnf)), runs):.1f}",
                f"{median_ms(each(functools.partial(compilers.matcher, text)), runs):.1f}",
                f"{median_ms(each(functools.partial(compilers.first_mask, text)), runs):.1f}",
            ]
            print("| " + " | ".join(row) + " |", flush=True)


def fresh(schema: dict[str, Any], run: int) -> dict[str, Any]:
    return {"$comment": f"run {run} {time.time_ns()}", **schema}


def cold_grammar(schema: dict[str, Any], run: int) -> object:
    """Our grammar of ``schema`` as one its cache has not seen (run ``run``'s own ``$comment``)."""
    return route_grammar(fresh(schema, run), bounded=True)


def server_ms(url: str, body: dict[str, Any], runs: int) -> float:
    def post(_: int) -> None:
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=600)
        answer.raise_for_status()

    return median_ms(post, runs)


def ours_way(args: argparse.Namespace) -> None:
    compilers = Compilers()
    with contextlib.ExitStack() as stack:
        url = None
        if llama_server_binary().is_file():
            url = stack.enter_context(local_server("llama-server", default_model_path(), args.threads, 2048))
        else:
            print(f"no llama-server at {llama_server_binary()}: its columns are left out\n")
        ours_rows(compilers, args, url)


def ours_rows(compilers: Compilers, args: argparse.Namespace, url: str | None) -> None:
    print(
        "| tools | schema bytes | our GBNF bytes | llama.cpp's GBNF bytes | ours, cold ms | ours, cached ms "
        "| llama-cpp-python converter ms | llama.cpp parses ours ms | llama.cpp parses its own ms "
        "| llama-server request, schema ms | llama-server request, our GBNF ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size in (int(s) for s in args.sizes.split(",")):
        schema = route_schema(corpus_tools(size))
        text = json.dumps(schema, separators=(",", ":"))
        # Both pass the embedded backend's check once before llama.cpp's parser is timed on them.
        ours = compilers.check(route_grammar(schema, bounded=True).gbnf)
        theirs = compilers.check(compilers.gbnf(text))
        runs = max(1, args.runs if size < 1000 else args.runs // 2)
        cold = functools.partial(cold_grammar, schema)
        cached = each(functools.partial(route_grammar, schema, bounded=True))
        row = [
            str(size),
            f"{len(text.encode()):,}",
            f"{len(ours.encode()):,}",
            f"{len(theirs.encode()):,}",
            f"{median_ms(cold, runs):.1f}",
            f"{median_ms(cached, runs):.2f}",
            f"{median_ms(each(functools.partial(compilers.gbnf, text)), runs):.1f}",
            f"{median_ms(each(functools.partial(compilers.parse_gbnf, ours)), runs):.1f}",
            f"{median_ms(each(functools.partial(compilers.parse_gbnf, theirs)), runs):.1f}",
        ]
        if url is not None:
            request = {"messages": [{"role": "user", "content": "Hi."}], "max_tokens": 1}
            with_schema = {**request, "response_format": {"type": "json_object", "schema": schema}}
            row.append(f"{server_ms(url, with_schema, runs):.0f}")
            row.append(f"{server_ms(url, {**request, 'grammar': ours}, runs):.0f}")
        else:
            row += ["-", "-"]
        print("| " + " | ".join(row) + " |", flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ways = parser.add_subparsers(dest="way", required=True, metavar="WAY")
    way = ways.add_parser("schemas", help="the route schema beside vLLM's required schema")
    way.add_argument("--sizes", default="10,50,200,1000")
    way.add_argument("--runs", type=int, default=5)
    way.set_defaults(run=schemas_way)
    way = ways.add_parser("ours", help="our compiler against llama.cpp's converters and llama-server")
    way.add_argument("--sizes", default="10,100,1000")
    way.add_argument("--runs", type=int, default=5)
    way.add_argument("--threads", type=int, default=2)
    way.set_defaults(run=ours_way)
    return run_way(parser, argv)


if __name__ == "__main__":
    sys.exit(main())
