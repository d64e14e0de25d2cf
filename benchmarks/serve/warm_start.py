"""A session that starts warm: an agent CLI's first turn after serve restarts, with its prompt states on disk.

An agent CLI (Claude Code, Codex) opens every session with the same system prompt and tools,
about 4,300 prompt tokens for Claude Code, and on a CPU that prefix is what its first turn costs.
Here ``toolrouting serve`` runs the embedded model with ``--prompt-cache-dir`` (the app of
``serve_app`` over ``EmbeddedLlama(prompt_cache_dir=...)`` in this process, on a loopback port),
and the official Anthropic SDK sends an agent-like first request through the Messages API: a
system prompt (the project's docs cut at ``--system-tokens`` of the model's tokens) and the
``--tools`` first tools of the 52-tool catalogue ``teb-large``, under ``tool_choice: any`` (a
first turn that calls a tool, as Claude Code's first ``Read`` does: one decision, no answer).

Three turns, each on a server started afresh (the model loaded again, no state in memory):

- ``cold``: session 1's first request, over an empty folder;
- ``warm``: serve stopped and started again over the same folder; session 2's first request
  (the same system prompt and tools, another user text);
- ``control``: session 2's first request over an empty folder, cold: what the warm turn would
  have cost without the folder.

Prints one Markdown table: seconds, prompt tokens, those evaluated and those read from disk, the
files and bytes the folder holds, and the warm turn's seconds against the cold ones (the target
is at most 0.15). The three run in one process, one after the other, on the same shared cores,
so compare the ratio, not the seconds across runs.

    python -m benchmarks.serve.warm_start --model PATH [--threads 2] [--system-tokens 2350] [--tools 52]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anthropic

from benchmarks.common.corpus import ROOT
from benchmarks.common.servers import measurement_model, serving, system_prompt
from toolrouting import AsyncEmbeddedLlama, EmbeddedLlama, Settings, default_model_path
from toolrouting._serve import serve_app

CATALOGUE = "benchmarks/cases/catalogues/teb-large.json"
#: The context of every server: the agent's first prompt and its reply, with room.
N_CTX = 8192
SESSIONS = {
    "first": "Read the file notes.txt in this directory and tell me the code word it contains.",
    "second": "List the files in this directory and say which one was changed last.",
}


def tools(count: int) -> list[dict[str, Any]]:
    """The catalogue's first ``count`` tools, as the Messages API takes them."""
    catalogue = json.loads((ROOT / CATALOGUE).read_text(encoding="utf-8"))["tools"][:count]
    return [
        {
            "name": entry["function"]["name"],
            "description": entry["function"].get("description", ""),
            "input_schema": entry["function"].get("parameters", {"type": "object"}),
        }
        for entry in catalogue
    ]


async def first_turn(url: str, system: str, offered: list[dict[str, Any]], text: str) -> dict[str, Any]:
    root = url.removesuffix("/v1")
    client = anthropic.AsyncAnthropic(base_url=root, api_key="unused", max_retries=0, timeout=3600)
    async with client:
        started = time.perf_counter()
        request: dict[str, Any] = {
            "system": system,
            "tools": offered,
            "tool_choice": {"type": "any"},
            "messages": [{"role": "user", "content": text}],
        }
        reply = await client.messages.create(model="m", max_tokens=256, **request)
        seconds = time.perf_counter() - started
    called = [block.name for block in reply.content if block.type == "tool_use"]
    return {"seconds": seconds, "prompt": reply.usage.input_tokens, "called": called}


def turn(model: Path, args: argparse.Namespace, folder: Path, session: str) -> dict[str, Any]:
    """One first turn on a server started afresh over ``folder``, stopped after it."""
    system = system_prompt(model, args.system_tokens)
    offered = tools(args.tools)
    settings = Settings(temperature=0.0)
    threads = args.threads
    inner = EmbeddedLlama(model, n_ctx=N_CTX, n_threads=threads, settings=settings, prompt_cache_dir=folder)

    async def serve_one() -> dict[str, Any]:
        async with serving(serve_app(AsyncEmbeddedLlama(inner), owned=True)) as url:
            return await first_turn(url, system, offered, SESSIONS[session])

    row = asyncio.run(serve_one())  # serve stopped: the backend closed, its states written
    info = inner.prompt_cache_info()
    files = sorted(folder.glob("*.state"))
    return row | {
        "evaluated": info.evaluated_tokens,
        "from_disk": info.restored_tokens if info.disk_restored else 0,
        "files": len(files),
        "mib": sum(path.stat().st_size for path in files) / 2**20,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded default model)")
    parser.add_argument("--measurement-model", action="store_true", help="the 0.5B measurement model")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--system-tokens", type=int, default=2350)
    parser.add_argument("--tools", type=int, default=52)
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    model = args.model or (measurement_model() if args.measurement_model else default_model_path())
    with tempfile.TemporaryDirectory() as states, tempfile.TemporaryDirectory() as empty:
        rows = {
            "cold": turn(model, args, Path(states), "first"),
            "warm": turn(model, args, Path(states), "second"),
            "control": turn(model, args, Path(empty), "second"),
        }
    offered = f"{args.system_tokens:,} system tokens and {args.tools} tools"
    print(f"{model.name}, {args.threads} threads, {offered}\n")
    print("| turn | seconds | prompt tokens | evaluated | read from disk | files (MiB) | called |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, row in rows.items():
        print(
            f"| {name} | {row['seconds']:.2f} s | {row['prompt']:,} | {row['evaluated']:,} | "
            f"{row['from_disk']:,} | {row['files']} ({row['mib']:,.1f}) | {', '.join(row['called'])} |"
        )
    warm = rows["warm"]["seconds"]
    print(
        f"\nwarm / cold: {warm / rows['cold']['seconds']:.3f}; "
        f"warm / control: {warm / rows['control']['seconds']:.3f} (target: at most 0.15)"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
