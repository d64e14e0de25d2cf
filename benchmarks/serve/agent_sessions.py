"""Whole agent sessions: Claude Code and Codex, as they ship, through ``toolrouting serve --model``.

Each CLI runs small tasks that need its own tools (read a file and report a fact, list a
folder, find a word across files, count lines, compare two files), each in a fresh temporary
folder holding the files this script writes, with a HOME of its own. ``toolrouting serve``
runs as a user starts it, a process of its own with ``--log-json`` and a fresh
``--prompt-cache-dir`` for each CLI, so each CLI's first request is cold and the rest may find
their prefix in the prompt cache. Every figure comes from serve's request log
(docs/serve-reference.md, "The request log"): its ``api``, ``tools``, ``decision``, token
counts and seconds.

The CLIs are configured as docs/serve.md's "Clients as they ship" says, with what keeps them
hermetic (as tests/support/agent_clis.py does): Claude Code with
``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` and ``--max-turns``, Codex with analytics and
plugins off, in a git repository, on its read-only sandbox. scripts/agent-clis.sh installs them.

Reported per CLI: tasks finished (a loose check: the CLI's printed answer holds the expected
fact, whatever else it says), requests per task, seconds per turn cold (less than half the
prompt from the cache) and warm, prompt tokens per request and those from the cache, and where
the time goes: tool calls (a decision that calls), answers (a decision of ``none``, with the
answer written), abstentions, and the CLI's side requests (no tools: titles, quota checks;
``count_tokens``; ``models``). These describe the model: nothing here is gated.

    python -m benchmarks.serve.agent_sessions [--measurement-model | --model PATH] [--clis claude,codex]
        [--tasks N] [--abstain grounding] [--shortlist K] [--ctx-size 16384] [--timeout 240] [--json FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common.corpus import ROOT
from benchmarks.common.servers import measurement_model
from toolrouting import default_model_path

#: Each task: its name, the files written into its folder, the question, and the fact its answer holds.
TASKS: list[tuple[str, dict[str, str], str, str]] = [
    (
        "read a fact",
        {"notes.txt": "Meeting notes.\nThe code word is PELICAN.\nBring snacks.\n"},
        "Read the file notes.txt in this directory and tell me the code word it contains.",
        "pelican",
    ),
    (
        "list a folder",
        {"alpha.txt": "a\n", "bravo.md": "b\n", "inventory.csv": "item,count\nbolt,4\n"},
        "List the files in this directory and tell me which one is a CSV file.",
        "inventory",
    ),
    (
        "find a word",
        {
            "north.txt": "The river runs cold here.\n",
            "south.txt": "Our ship sailed to Zanzibar in May.\n",
            "east.txt": "Mountains and snow.\n",
        },
        "Which file in this directory mentions Zanzibar? Give the file name.",
        "south",
    ),
    (
        "count lines",
        {"fruits.txt": "apple\nbanana\ncherry\ndate\nelderberry\nfig\ngrape\n"},
        "How many lines does the file fruits.txt in this directory have?",
        "7",
    ),
    (
        "compare two files",
        {"red.txt": "The red box weighs 12 kg.\n", "blue.txt": "The blue box weighs 30 kg.\n"},
        "Read red.txt and blue.txt in this directory. Which box is heavier, red or blue?",
        "blue",
    ),
]
CLIS = ("claude", "codex")
HERMETIC_CODEX = "\n[analytics]\nenabled = false\n\n[features]\nplugins = false\n"
SERVE_START_LIMIT = 600.0


class Serve:
    """``toolrouting serve`` as a process, its stderr drained by a thread: the request log's
    JSON objects in ``records``, every other line in ``lines``."""

    def __init__(self, argv: list[str]) -> None:
        self.records: list[dict[str, Any]] = []
        self.lines: list[str] = []
        self.url = ""
        self.started = threading.Event()
        self.process = subprocess.Popen(
            argv,
            cwd=ROOT,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "OMP_WAIT_POLICY": "passive"},
        )
        self.thread = threading.Thread(target=self._drain, daemon=True)
        self.thread.start()
        if not self.started.wait(SERVE_START_LIMIT) or not self.url:
            self.stop()
            raise RuntimeError("serve did not start:\n" + "".join(self.lines[-20:]))

    def _drain(self) -> None:
        assert self.process.stderr is not None
        for line in self.process.stderr:
            if line.startswith("{"):
                self.records.append(json.loads(line))
                continue
            self.lines.append(line)
            served = re.fullmatch(r"toolrouting: serving (http://\S+/v1)\n", line)
            if served:
                self.url = served.group(1)
                self.started.set()
        self.started.set()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.thread.join(10)


@contextmanager
def serving(model: Path, args: argparse.Namespace, states: Path) -> Iterator[Serve]:
    argv = [sys.executable, "-m", "toolrouting", "serve", "--model", str(model), "--port", "0", "--log-json"]
    argv += [
        "--threads",
        str(args.threads),
        "--ctx-size",
        str(args.ctx_size),
        "--prompt-cache-dir",
        str(states),
    ]
    if args.abstain:
        argv += ["--abstain", args.abstain]
    if args.shortlist:
        argv += ["--shortlist", str(args.shortlist)]
    serve = Serve(argv)
    try:
        yield serve
    finally:
        serve.stop()


def clis() -> dict[str, Path]:
    done = subprocess.run(
        ["sh", str(ROOT / "scripts" / "agent-clis.sh")], capture_output=True, text=True, check=True
    )
    return {name: Path(path) for name, path in (line.split(" ", 1) for line in done.stdout.splitlines())}


def run_cli(
    cli: str, binary: Path, url: str, model_name: str, task: str, folder: Path, args: argparse.Namespace
) -> Any:
    """One session: the CLI asked ``task`` in ``folder``, to its end or the timeout."""
    home = folder.parent / "home"
    home.mkdir()
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
    if cli == "claude":
        environment |= {
            "ANTHROPIC_BASE_URL": url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": "unused",
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
        }
        argv = [str(binary), "-p", task, "--max-turns", str(args.max_turns)]
    else:
        config = (
            f'model = "{model_name}"\nmodel_provider = "toolrouting"\n\n[model_providers.toolrouting]\n'
            f'name = "toolrouting serve"\nbase_url = "{url}"\nwire_api = "responses"\n'
            f'env_key = "TOOLROUTING_SERVE_KEY"\n{HERMETIC_CODEX}'
        )
        (home / ".codex").mkdir()
        (home / ".codex" / "config.toml").write_text(config, encoding="utf-8")
        environment["TOOLROUTING_SERVE_KEY"] = "unused"
        subprocess.run(["git", "init", "-q", str(folder)], check=True, env=environment)
        argv = [str(binary), "exec", task]
    started = time.perf_counter()
    try:
        done = subprocess.run(
            argv,
            cwd=folder,
            env=environment,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=args.timeout,
            check=False,
        )
        code, out = done.returncode, done.stdout
    except subprocess.TimeoutExpired as stopped:
        code, out = (
            None,
            (stopped.stdout or b"").decode("utf-8", "replace")
            if isinstance(stopped.stdout, bytes)
            else (stopped.stdout or ""),
        )
    return code, out, time.perf_counter() - started


def kind(record: dict[str, Any]) -> str:
    """Where a request's time goes: ``call``, ``answer``, ``abstained``, ``side``, ``refused``, or
    ``left`` (a 499: the client left before the last byte)."""
    if record["status"] == 499:  # the client left before the last byte (it gave up, or was stopped)
        return "left"
    if record["status"] >= 400:
        return "refused"
    if record["api"] not in ("messages", "responses", "chat") or not record["tools"]:
        return "side"
    return {"call": "call", "none": "answer", "abstained": "abstained"}.get(record["decision"], "side")


def session(cli: str, binary: Path, model: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory() as states, serving(model, args, Path(states)) as serve:
        name = httpx.get(f"{serve.url}/models").json()["data"][0]["id"]
        for title, files, task, fact in TASKS[: args.tasks]:
            with tempfile.TemporaryDirectory() as scratch:
                folder = Path(scratch) / "work"
                folder.mkdir()
                for file, text in files.items():
                    (folder / file).write_text(text, encoding="utf-8")
                before = len(serve.records)
                code, out, seconds = run_cli(cli, binary, serve.url, name, task, folder, args)
                time.sleep(1.0)  # the last request's line follows its last byte
                records = serve.records[before:]
            rows.append(
                {
                    "cli": cli,
                    "task": title,
                    "exit": code,
                    "seconds": seconds,
                    "finished": fact in out.lower(),
                    "printed": out.strip()[-300:],
                    "records": [r | {"kind": kind(r)} for r in records],
                }
            )
            print(
                f"{cli} {title}: exit {code}, {seconds:.0f} s, {len(records)} requests, "
                f"finished {rows[-1]['finished']}: {out.strip()[-120:]!r}",
                file=sys.stderr,
                flush=True,
            )
    return rows


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.1f}" if values else "–"


def report(rows: list[dict[str, Any]]) -> None:
    for record in (record for row in rows for record in row["records"]):
        record["kind"] = kind(record)
    print(
        "| CLI | tasks finished | requests per task | turn s cold | turn s warm | prompt tokens per turn"
        " | from cache | s in calls | s in answers | s abstained | s in side requests | s left (499)"
        " | refused |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for cli in dict.fromkeys(row["cli"] for row in rows):
        mine = [row for row in rows if row["cli"] == cli]
        records = [r for row in mine for r in row["records"]]
        turns = [r for r in records if r["kind"] in ("call", "answer", "abstained")]
        cold = [r["seconds"] for r in turns if (r["cached_tokens"] or 0) < (r["prompt_tokens"] or 0) / 2]
        warm = [r["seconds"] for r in turns if (r["cached_tokens"] or 0) >= (r["prompt_tokens"] or 0) / 2]
        spent = {
            k: sum(r["seconds"] for r in records if r["kind"] == k)
            for k in ("call", "answer", "abstained", "side", "left")
        }
        prompt = sum(r["prompt_tokens"] or 0 for r in turns)
        cached = sum(r["cached_tokens"] or 0 for r in turns)
        finished = sum(row["finished"] for row in mine)
        print(
            f"| {cli} | {finished}/{len(mine)} | {len(records) / len(mine):.1f} | "
            f"{_median(cold)} ({len(cold)}) | {_median(warm)} ({len(warm)}) | "
            f"{prompt / max(len(turns), 1):,.0f} | {cached / max(prompt, 1):.0%} | {spent['call']:.0f} | "
            f"{spent['answer']:.0f} | {spent['abstained']:.0f} | {spent['side']:.0f} | {spent['left']:.0f} | "
            f"{sum(r['kind'] == 'refused' for r in records)} |"
        )
    print(
        "\n| CLI | task | exit | seconds | requests (calls, answers, abstained, side) | called | finished |"
    )
    print("|---|---|---:|---:|---|---|---|")
    for row in rows:
        count = {
            k: sum(r["kind"] == k for r in row["records"]) for k in ("call", "answer", "abstained", "side")
        }
        called = ", ".join(c for r in row["records"] for c in r["calls"]) or "–"
        print(
            f"| {row['cli']} | {row['task']} | {row['exit']} | {row['seconds']:.0f} | {len(row['records'])} "
            f"({count['call']}, {count['answer']}, {count['abstained']}, {count['side']}) | {called} | "
            f"{'yes' if row['finished'] else 'no'} |"
        )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--model", type=Path, help="a GGUF file (default: the embedded default model)")
    parser.add_argument("--measurement-model", action="store_true", help="the 0.5B measurement model")
    parser.add_argument("--clis", default=",".join(CLIS), help="claude, codex or both (default: both)")
    parser.add_argument(
        "--tasks", type=int, default=len(TASKS), help=f"the first N tasks (default: {len(TASKS)})"
    )
    parser.add_argument("--abstain", choices=["off", "grounding"], help="serve's --abstain")
    parser.add_argument("--shortlist", type=int, help="serve's --shortlist K")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--ctx-size", type=int, default=16384)
    parser.add_argument("--max-turns", type=int, default=8, help="Claude Code's --max-turns (default: 8)")
    parser.add_argument(
        "--timeout", type=float, default=240.0, help="seconds a session may take (default: 240)"
    )
    parser.add_argument("--json", help="also write every session and its request log here")
    parser.add_argument(
        "--report", type=Path, help="print the tables of an earlier run's --json, run nothing"
    )
    args = parser.parse_args(argv)
    if args.report:
        report(json.loads(args.report.read_text(encoding="utf-8")))
        return 0
    model = args.model or (measurement_model() if args.measurement_model else default_model_path())
    binaries = clis()
    rows = [row for cli in args.clis.split(",") for row in session(cli, binaries[cli], model, args)]
    options = f"--abstain {args.abstain or 'off'}" + (
        f", --shortlist {args.shortlist}" if args.shortlist else ""
    )
    print(f"{model.name}, {args.threads} threads, --ctx-size {args.ctx_size}, {options}\n")
    report(rows)
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
