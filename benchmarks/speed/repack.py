"""What turning llama.cpp's weight repacking off costs, in tokens a second, where repacking is safe.

    .venv/bin/python -m benchmarks.speed.repack [--model PATH.gguf] [--rounds 5] [--threads 2]

The embedded backend turns repacking off where llama.cpp's build uses Intel AMX, whose kernels
crash (docs/embedded.md, "Weight repacking and Intel AMX"). Where it is safe, repacking puts the
weights in the AVX2/AVX-512 layouts of ``CPU_REPACK``; this measures what giving that up would
cost. It runs the llama-server that ``make test`` builds (scripts/build-llama-server.sh: built
without AMX, x86-64-v3), once as it starts by default and once with ``--no-repack``, the same
switch as ``use_extra_bufts``, taking turns round by round so both see the same machine. Each
round sends one prompt of about 600 tokens (evaluated whole: ``cache_prompt`` off) and decodes 64
tokens greedily (``ignore_eos``), and reads llama-server's own timings. It prints the medians of
each way and their ratios.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common.servers import llama_server_binary, local_server
from toolrouting._backends import default_model_path

PROMPT = " ".join(
    f"Note {i}: the storage-room latch was checked on day {i} and found sound." for i in range(40)
)

WAYS = {"repack on (default)": (), "--no-repack": ("--no-repack",)}


def _round(url: str) -> tuple[float, float]:
    """Prompt and decode tokens a second of one request, as llama-server times them."""
    body: dict[str, Any] = {
        "prompt": PROMPT,
        "n_predict": 64,
        "temperature": 0,
        "ignore_eos": True,
        "cache_prompt": False,
    }
    reply = httpx.post(f"{url}/completion", json=body, timeout=600).json()
    timings = reply["timings"]
    return float(timings["prompt_per_second"]), float(timings["predicted_per_second"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded default model)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    model: Path = args.model or default_model_path()
    results: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
    with contextlib.ExitStack() as stack:
        urls = {
            way: stack.enter_context(local_server("llama-server", model, args.threads, 2048, extra=extra))
            for way, extra in WAYS.items()
        }
        for url in urls.values():
            _round(url)  # a warm-up each: pages the weights in
        for _ in range(args.rounds):
            for way, url in urls.items():
                results[way].append(_round(url))
    print(
        f"model: {model.name}, {args.rounds} rounds, {args.threads} threads, "
        f"llama-server {llama_server_binary()}"
    )
    print(f"{'way':<22}{'prompt tok/s':>14}{'decode tok/s':>14}")
    medians = {}
    for way, rounds in results.items():
        prompt = statistics.median(r[0] for r in rounds)
        decode = statistics.median(r[1] for r in rounds)
        medians[way] = (prompt, decode)
        print(f"{way:<22}{prompt:>14.1f}{decode:>14.1f}")
    (on_prompt, on_decode), (off_prompt, off_decode) = medians.values()
    print(
        f"--no-repack / default: prompt {off_prompt / on_prompt:.2f}x, decode {off_decode / on_decode:.2f}x"
    )


if __name__ == "__main__":
    main()
