"""Grammar compile time of route schemas, beside vLLM's tool_choice="required" schema.

For catalogues of 10, 50, 200 and 1,000 tools (the corpus in tests/catalogues/, cycled
and renamed), it builds two schemas over the same tools:

- route: ``route_schema(tools)``, an object with an ``anyOf`` alternative per tool and
  ``none``;
- vllm-required: what vLLM builds for ``tool_choice="required"``, an array with
  ``minItems: 1`` whose items are ``anyOf`` ``{name: {enum: [NAME]}, parameters}``, the
  tools' ``$defs`` hoisted to the top as vLLM does;

and times, as the median of a few runs, llama.cpp's converter (llama-cpp-python's
``LlamaGrammar.from_json_schema``, then llama.cpp parsing the GBNF over the default
model's vocabulary) and llguidance (building an ``LLMatcher`` over the same vocabulary,
then its first token mask, where it builds its lexer lazily).

Every GBNF passes the embedded backend's own check (``check_gbnf``: its nesting depth, then
llama.cpp's parser with its reason kept) once before it is timed, so a grammar llama.cpp would
refuse, or overflow its stack on, is a ``GrammarError`` here as in the backend, never a crash
of the benchmark; the timed parse is then the bare one every request pays.

    OMP_WAIT_POLICY=passive .venv/bin/python benchmarks/compile.py [--sizes 10,50,200,1000] [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolrouting import route_schema  # noqa: E402
from toolrouting._backends.embedded import default_model_path  # noqa: E402
from toolrouting._backends.grammar_check import check_gbnf, llama_grammar_source  # noqa: E402
from toolrouting._catalogues.adapters import tools_from  # noqa: E402


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
    return json.loads(json.dumps(schema).replace('"#/definitions/', '"#/$defs/'))


def median_ms(action: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        action()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


class Compilers:
    def __init__(self) -> None:
        import llama_cpp
        import llguidance
        import llguidance.llamacpp

        self.llama_cpp = llama_cpp
        self.llguidance = llguidance
        self.model = llama_cpp.Llama(model_path=str(default_model_path()), vocab_only=True, verbose=False)
        self.vocab = llama_cpp.llama_model_get_vocab(self.model._model.model)
        self.tokenizer = llguidance.llamacpp.lltokenizer_from_vocab(self.vocab)

    def gbnf(self, text: str) -> str:
        return llama_grammar_source(self.llama_cpp.LlamaGrammar.from_json_schema(text, verbose=False))[0]

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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,50,200,1000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
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
                f"{median_ms(lambda text=text: compilers.gbnf(text), runs):.1f}",
                f"{median_ms(lambda gbnf=gbnf: compilers.parse_gbnf(gbnf), runs):.1f}",
                f"{median_ms(lambda text=text: compilers.matcher(text), runs):.1f}",
                f"{median_ms(lambda text=text: compilers.first_mask(text), runs):.1f}",
            ]
            print("| " + " | ".join(row) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
