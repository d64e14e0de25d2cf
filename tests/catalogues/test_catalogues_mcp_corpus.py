"""Real published MCP catalogues (tests/catalogues/mcp/) through the documented path.

Each catalogue is a ``tools/list`` result dumped from a server installed from PyPI (the README
there names them). Every one goes through ``tools_from``, ``route_schema`` and ``preflight`` for
every target; the compilers installed here compile each tool, and every refusal of one is one
the preflight predicts; the embedded backend compiles each catalogue without crashing.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.compilers import LlamaCpp, Llguidance, Outlines
from support.model import TEST_THREADS
from support.paths import TESTS

from toolrouting import TARGETS, preflight, route_schema, tools_from

CORPUS = TESTS / "catalogues" / "mcp"
CATALOGUES = sorted(CORPUS.glob("*.json"))
# The tool counts the README lists: a dump that lost tools fails here.
TOOLS = {
    "arxiv-mcp-server": 19,
    "duckduckgo-mcp-server": 3,
    "excel-mcp-server": 46,
    "mcp-server-calculator": 1,
    "mcp-server-duckdb": 1,
    "mcp-server-fetch": 1,
    "mcp-server-git": 12,
    "mcp-server-time": 2,
    "mcp-shell-server": 1,
}


def _tools(path: Path) -> list[dict[str, Any]]:
    return tools_from(json.loads(path.read_text(encoding="utf-8")))  # type: ignore[return-value]


def test_the_corpus_is_the_one_the_readme_lists() -> None:
    assert {path.stem: len(_tools(path)) for path in CATALOGUES} == TOOLS
    readme = (CORPUS / "README.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in readme for name in TOOLS)


@pytest.mark.parametrize("path", CATALOGUES, ids=lambda p: p.stem)
def test_every_catalogue_keeps_its_parameters_and_gets_a_preflight(path: Path) -> None:
    published = json.loads(path.read_text(encoding="utf-8"))["tools"]
    tools = _tools(path)
    assert [tool["function"].get("parameters") for tool in tools] == [t["inputSchema"] for t in published]
    schema = route_schema(tools)
    for target in TARGETS:
        assert all(finding.message for finding in preflight(schema, target))


def _each_tool() -> list[tuple[str, dict[str, Any]]]:
    return [(f"{p.stem}:{t['function']['name']}", route_schema([t])) for p in CATALOGUES for t in _tools(p)]


def _predicted(schema: dict[str, Any], target: str) -> bool:
    return any(finding.severity == "error" for finding in preflight(schema, target))


@pytest.mark.model
def test_preflight_predicts_every_llama_cpp_refusal(llama: LlamaCpp) -> None:
    refused = {name: error for name, schema in _each_tool() if (error := llama.error(schema))}
    assert {name for name in refused if not _predicted(dict(_each_tool())[name], "llama.cpp")} == set()
    # What excel-mcp-server 2.2.2 publishes: an enum holding '"', and maxItems 10000.
    assert {"excel-mcp-server:transform_range", "excel-mcp-server:add_slicer"} <= set(refused)


@pytest.mark.parametrize("compiler", [Llguidance, Outlines], ids=["llguidance", "outlines"])
def test_preflight_predicts_every_refusal_of_the_other_compilers(compiler: Any) -> None:
    checked = compiler()
    missed = [
        (name, error)
        for name, schema in _each_tool()
        if (error := checked.error(schema)) and not _predicted(schema, checked.name)
    ]
    assert missed == []


@pytest.mark.model
@pytest.mark.parametrize(
    ("forced", "grammar", "target"),
    [
        (False, "server", "llama.cpp"),
        (False, "ours", "toolrouting"),
        (True, "server", "llguidance"),
        (True, "ours", "toolrouting"),
    ],
    ids=["sampler-server", "sampler-ours", "forced-server", "forced-ours"],
)
def test_the_embedded_backend_compiles_every_catalogue_without_crashing(
    forced: bool, grammar: str, target: str
) -> None:
    # A fresh process, so that a crash fails this test instead of killing pytest. Each catalogue's
    # route is compiled and one token sampled under it: a grammar, or a GrammarError, never a signal.
    # The preflight for the grammar in use (llama-cpp-python's converter, llguidance's compiler,
    # or ours, which either decoder takes) predicts which.
    code = (
        "import json, sys\n"
        "from toolrouting import GrammarError, Settings, route_schema, tools_from\n"
        "from toolrouting._backends.embedded.backend import EmbeddedLlama\n"
        f"backend = EmbeddedLlama(n_ctx=512, n_threads={TEST_THREADS}, forced_tokens={forced})\n"
        "for path in sys.argv[1:]:\n"
        "    schema = route_schema(tools_from(json.load(open(path, encoding='utf-8'))))\n"
        f"    settings = Settings(json_schema=schema, max_tokens=1, grammar={grammar!r})\n"
        "    clone = backend.clone(settings=settings)\n"
        "    try:\n"
        "        clone.complete([{'role': 'user', 'content': 'hi'}])\n"
        "        print('grammar')\n"
        "    except GrammarError:\n"
        "        print('GrammarError')\n"
    )
    paths = [str(path) for path in CATALOGUES]
    result = subprocess.run([sys.executable, "-c", code, *paths], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr[-2000:]
    outcomes = dict(zip((path.stem for path in CATALOGUES), result.stdout.split(), strict=True))
    for name, outcome in outcomes.items():
        predicted = _predicted(route_schema(_tools(CORPUS / f"{name}.json")), target)
        assert (outcome == "GrammarError") == predicted, name
