"""Arguments by kind on real catalogues: how many required arguments are given, how many composed.

    .venv/bin/python -m benchmarks.quality.argument_kinds [--bfcl-data DIR] [--only NAME ...] [--list]

Every required argument without a ``default`` is classed by ``toolrouting.argument_kind`` (the
rule grounding checks by, docs/loop.md "What is checked"), on the catalogues agents and
benchmarks send:

- **The agent CLIs' (``agents``)**: Claude Code and Codex as scripts/agent-clis.sh installs
  them, each run once through ``toolrouting serve`` on a recording upstream that answers every
  decision with ``none``; the catalogue is read back from the route schema serve sent (each
  alternative's tool, description and parameters), so nothing of the CLIs is stored.
- **MCP's reference servers' (``mcp``)**: mcp-server-time and mcp-server-git (the dev extra),
  started over stdio as the tests start them, git on a fresh repository.
- **The public benchmark's (``bfcl``)**: the function docs of bfcl-eval's categories, read from
  its data folder (``--bfcl-data``; by default the scratch venv's, scripts/bfcl-venv.sh), each
  tool and argument counted once however many cases repeat it.

It prints a table (a catalogue, its tools, its required arguments, given, composed) and, with
``--list``, every argument's kind and the reason; by default only the composed ones.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import glob
import http.server
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from toolrouting import ArgumentClass, MCPTools, argument_kind

ROOT = Path(__file__).resolve().parents[2]
#: The BFCL categories read: the three abstention was measured on, then the live ones.
BFCL_CATEGORIES = ("irrelevance", "simple_python", "multiple", "live_simple", "live_multiple")
#: A tool as classed here: its name, its description, its parameters schema.
Tool = tuple[str, str | None, dict[str, Any]]
_MODEL = "toolrouting-kinds"
_CLI_TIMEOUT = 300


def classed(tools: Sequence[Tool]) -> list[tuple[str, str, ArgumentClass]]:
    """Each tool's required arguments without a ``default``, with their kind, each pair once."""
    found: dict[tuple[str, str], ArgumentClass] = {}
    for name, _, parameters in tools:
        properties = parameters.get("properties") if isinstance(parameters, dict) else None
        required = parameters.get("required") if isinstance(parameters, dict) else None
        if not isinstance(properties, dict) or not isinstance(required, list):
            continue
        for argument in required:
            schema = properties.get(argument)
            if isinstance(schema, dict) and "default" not in schema:
                found[(name, argument)] = argument_kind(argument, schema, name)
    return [(tool, argument, kind) for (tool, argument), kind in found.items()]


def bfcl_catalogues(data: Path) -> dict[str, list[Tool]]:
    """Each category's function docs, every case's functions together."""
    catalogues = {}
    for category in BFCL_CATEGORIES:
        path = data / f"BFCL_v4_{category}.json"
        tools = []
        for line in path.read_text(encoding="utf-8").splitlines():
            for function in json.loads(line)["function"]:
                tools.append((function["name"], function.get("description"), function.get("parameters", {})))
        catalogues[f"BFCL {category}"] = tools
    return catalogues


def bfcl_cases_touched(data: Path) -> list[str]:
    """Per category, the cases whose offered functions hold a composed required argument: the
    only cases where grounding by kind can decide otherwise than grounding of every argument."""
    lines = []
    for category in BFCL_CATEGORIES:
        entries = [json.loads(line) for line in (data / f"BFCL_v4_{category}.json").read_text().splitlines()]
        touched = [
            entry["id"]
            for entry in entries
            if any(
                kind.kind == "composed"
                for _, _, kind in classed(
                    [(f["name"], f.get("description"), f.get("parameters", {})) for f in entry["function"]]
                )
            )
        ]
        lines.append(f"- BFCL {category}: {len(touched)} of {len(entries)} cases offer a composed argument")
    return lines


def _wire_tools(offered: Sequence[dict[str, Any]]) -> list[Tool]:
    return [
        (
            tool["function"]["name"],
            tool["function"].get("description"),
            tool["function"].get("parameters", {}),
        )
        for tool in offered
    ]


def mcp_catalogues() -> dict[str, list[Tool]]:
    """mcp-server-time's and mcp-server-git's tools, as ``MCPTools`` offers them."""
    found = {}
    time = shlex.join([sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"])
    with MCPTools(time) as tools:
        found["mcp-server-time"] = _wire_tools(tools.tools_for_llm())
    with tempfile.TemporaryDirectory() as folder:
        subprocess.run(["git", "init", "-q", folder], check=True)
        git = shlex.join([sys.executable, "-m", "mcp_server_git", "--repository", folder])
        with MCPTools(git) as tools:
            found["mcp-server-git"] = _wire_tools(tools.tools_for_llm())
    return found


class _Upstream(http.server.ThreadingHTTPServer):
    """A chat-completions upstream on loopback that keeps every route schema it was sent."""

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Recorder)
        self.schemas: list[dict[str, Any]] = []


class _Recorder(http.server.BaseHTTPRequestHandler):
    """Answers a routed decision with ``none`` and anything else with a word, keeping the
    decision's route schema on the server."""

    server: _Upstream

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))) or b"{}")
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema")
        routed = isinstance(schema, dict) and isinstance(schema.get("anyOf"), list)
        if routed:
            self.server.schemas.append(schema)
        content = '{"tool":"none"}' if routed else "Done."
        reply = {
            "id": "kinds",
            "object": "chat.completion",
            "created": 0,
            "model": _MODEL,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the requests are what is recorded, not logged."""


@contextlib.contextmanager
def _served() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """``toolrouting serve`` over a recording upstream: its base URL and the schemas recorded."""
    upstream = _Upstream()
    schemas = upstream.schemas
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{upstream.server_address[1]}/v1"
    serve = [
        sys.executable,
        "-m",
        "toolrouting",
        "serve",
        "--base-url",
        base,
        "--model",
        _MODEL,
        "--port",
        "0",
    ]
    process = subprocess.Popen(
        serve, stderr=subprocess.PIPE, text=True, env={**os.environ, "OPENAI_API_KEY": ""}
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        served = re.fullmatch(r"toolrouting: serving (http://127\.0\.0\.1:\d+/v1)\n", line)
        if served is None:
            raise RuntimeError(f"toolrouting serve did not start: {line!r}")
        yield served.group(1), schemas
    finally:
        process.terminate()
        process.wait(10)
        upstream.shutdown()


def _route_tools(schema: dict[str, Any]) -> list[Tool]:
    """The catalogue a route schema was made of: each alternative's tool, description, parameters."""
    tools = []
    for alternative in schema["anyOf"]:
        properties = alternative.get("properties", {})
        name = properties.get("tool", {}).get("const")
        if isinstance(name, str) and name != "none":
            tools.append((name, alternative.get("description"), properties.get("arguments", {})))
    return tools


def agent_catalogues() -> dict[str, list[Tool]]:
    """Claude Code's and Codex's catalogues, as they send them through serve."""
    done = subprocess.run(
        ["sh", str(ROOT / "scripts" / "agent-clis.sh")], capture_output=True, text=True, check=True
    )
    paths = dict(line.split(" ", 1) for line in done.stdout.splitlines())
    found = {}
    for name, version in (("claude", "Claude Code 2.1.332"), ("codex", "Codex 0.171.0")):
        with tempfile.TemporaryDirectory() as folder, _served() as (url, schemas):
            home, work = Path(folder) / "home", Path(folder) / "work"
            home.mkdir()
            work.mkdir()
            env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(home), "LANG": "C.UTF-8"}
            if name == "claude":
                env |= {
                    "ANTHROPIC_BASE_URL": url.removesuffix("/v1"),
                    "ANTHROPIC_API_KEY": "unused",
                    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
                }
                argv = [paths[name], "-p", "What is in this folder?"]
            else:
                (home / ".codex").mkdir()
                (home / ".codex" / "config.toml").write_text(_codex_config(url), encoding="utf-8")
                subprocess.run(["git", "init", "-q", str(work)], check=True)
                env |= {"TOOLROUTING_SERVE_KEY": "unused"}
                argv = [paths[name], "exec", "What is in this folder?"]
            subprocess.run(
                argv, cwd=work, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=_CLI_TIMEOUT
            )
            if not schemas:
                raise RuntimeError(f"{version} sent no routed decision through serve")
            found[version] = _route_tools(schemas[0])
    return found


def _codex_config(url: str) -> str:
    """docs/serve.md's Codex configuration, pointed at ``url``, its telemetry and plugins off."""
    return (
        f'model = "{_MODEL}"\nmodel_provider = "toolrouting"\n\n[model_providers.toolrouting]\n'
        f'name = "toolrouting serve"\nbase_url = "{url}"\nwire_api = "responses"\n'
        'env_key = "TOOLROUTING_SERVE_KEY"\n\n[analytics]\nenabled = false\n\n[features]\nplugins = false\n'
    )


def _bfcl_data() -> Path | None:
    found = glob.glob("/tmp/bfclvenv/lib/python*/site-packages/bfcl_eval/data")
    return Path(found[0]) if found else None


def report(catalogues: dict[str, list[Tool]], listed: bool) -> list[str]:
    lines = ["| catalogue | tools | required arguments | given | composed |", "|---|---:|---:|---:|---:|"]
    notes = []
    for name, tools in catalogues.items():
        kinds = classed(tools)
        counts = collections.Counter(kind.kind for _, _, kind in kinds)
        lines.append(
            f"| {name} | {len({tool for tool, _, _ in tools})} | {len(kinds)} "
            f"| {counts['given']} | {counts['composed']} |"
        )
        shown = [item for item in kinds if listed or item[2].kind == "composed"]
        notes += [f"\n{name}:"] + [
            f"  {tool}.{arg}: {kind.kind} ({kind.reason})" for tool, arg, kind in shown
        ]
    return [*lines, *notes]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--bfcl-data", type=Path, default=_bfcl_data(), help="bfcl_eval's data folder")
    parser.add_argument(
        "--only", nargs="*", choices=("agents", "mcp", "bfcl"), default=("agents", "mcp", "bfcl")
    )
    parser.add_argument("--list", action="store_true", help="every argument's kind, not only the composed")
    args = parser.parse_args(argv)
    catalogues: dict[str, list[Tool]] = {}
    if "agents" in args.only:
        catalogues |= agent_catalogues()
    if "mcp" in args.only:
        catalogues |= mcp_catalogues()
    if "bfcl" in args.only:
        if args.bfcl_data is None:
            parser.error("no bfcl_eval data folder: run scripts/bfcl-venv.sh, or give --bfcl-data")
        catalogues |= bfcl_catalogues(args.bfcl_data)
    print("\n".join(report(catalogues, args.list)))
    if "bfcl" in args.only:
        print("\n" + "\n".join(bfcl_cases_touched(args.bfcl_data)))


if __name__ == "__main__":
    main()
