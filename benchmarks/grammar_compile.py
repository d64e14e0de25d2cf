"""Grammar compile time: our compiler against llama.cpp's converters, for 10, 100 and 1,000 tools.

Run: OMP_WAIT_POLICY=passive .venv/bin/python benchmarks/grammar_compile.py [--sizes 10,100,1000] [--runs 5]

The route schemas are benchmarks/compile.py's (the test corpus in tests/catalogues/, cycled and
renamed). Each figure is the median of ``--runs``:

- ours, cold: ``route_grammar(schema, bounded=True)`` on a schema it has not seen (each run adds
  a different ``$comment``, which the grammar ignores, so the cache never answers);
- ours, cached: the same schema again, as a loop's next round asks for it;
- llama-cpp-python's converter (``LlamaGrammar.from_json_schema``), the Python port of llama.cpp's
  that llama_cpp.server and the embedded backend's ``grammar="server"`` run on every new schema;
- llama.cpp parsing each GBNF over the default model's vocabulary, as a sampler does on each
  request (``llama_sampler_init_grammar``), once the embedded backend's check (``check_gbnf``)
  has passed it, untimed, so a grammar llama.cpp would refuse or crash on stops the run first;
- with the cached llama-server running: a whole request with ``max_tokens`` 1, the schema for
  its C++ converter against our GBNF, so the difference is its conversion (the prompt is the same).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from compile import ROOT, Compilers, corpus_tools

sys.path.insert(0, str(ROOT / "tests"))

import httpx
from support.llama_server import llama_server_binary, start_llama_server, wait_until_healthy

from toolrouting import default_model_path, route_grammar, route_schema


def median_ms(action: Callable[[int], object], runs: int) -> float:
    times = []
    for run in range(runs):
        start = time.perf_counter()
        action(run)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def fresh(schema: dict[str, Any], run: int) -> dict[str, Any]:
    return {"$comment": f"run {run} {time.time_ns()}", **schema}


def server_ms(url: str, body: dict[str, Any], runs: int) -> float:
    def post(_: int) -> None:
        answer = httpx.post(f"{url}/v1/chat/completions", json=body, timeout=600)
        answer.raise_for_status()

    return median_ms(post, runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10,100,1000")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args(argv)
    compilers = Compilers()
    url = process = None
    work = Path(tempfile.mkdtemp())
    if llama_server_binary().is_file():
        process, url = start_llama_server(default_model_path(), args.threads, work / "server.log")
        problem = wait_until_healthy(process, url, work / "server.log")
        if problem:
            raise SystemExit(problem)
    else:
        print(f"no llama-server at {llama_server_binary()}: its columns are left out\n")
    print(
        "| tools | schema bytes | our GBNF bytes | llama.cpp's GBNF bytes | ours, cold ms | ours, cached ms "
        "| llama-cpp-python converter ms | llama.cpp parses ours ms | llama.cpp parses its own ms "
        "| llama-server request, schema ms | llama-server request, our GBNF ms |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    try:
        for size in (int(s) for s in args.sizes.split(",")):
            schema = route_schema(corpus_tools(size))
            text = json.dumps(schema, separators=(",", ":"))
            # Both pass the embedded backend's check once before llama.cpp's parser is timed on them.
            ours = compilers.check(route_grammar(schema, bounded=True).gbnf)
            theirs = compilers.check(compilers.gbnf(text))
            runs = max(1, args.runs if size < 1000 else args.runs // 2)
            cold = lambda run, schema=schema: route_grammar(fresh(schema, run), bounded=True)  # noqa: E731
            cached = lambda _, schema=schema: route_grammar(schema, bounded=True)  # noqa: E731
            row = [
                str(size),
                f"{len(text.encode()):,}",
                f"{len(ours.encode()):,}",
                f"{len(theirs.encode()):,}",
                f"{median_ms(cold, runs):.1f}",
                f"{median_ms(cached, runs):.2f}",
                f"{median_ms(lambda _, text=text: compilers.gbnf(text), runs):.1f}",
                f"{median_ms(lambda _, ours=ours: compilers.parse_gbnf(ours), runs):.1f}",
                f"{median_ms(lambda _, theirs=theirs: compilers.parse_gbnf(theirs), runs):.1f}",
            ]
            if url is not None:
                request = {"messages": [{"role": "user", "content": "Hi."}], "max_tokens": 1}
                with_schema = {**request, "response_format": {"type": "json_object", "schema": schema}}
                row.append(f"{server_ms(url, with_schema, runs):.0f}")
                row.append(f"{server_ms(url, {**request, 'grammar': ours}, runs):.0f}")
            else:
                row += ["-", "-"]
            print("| " + " | ".join(row) + " |", flush=True)
    finally:
        if process is not None:
            process.terminate()
            process.wait(timeout=15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
