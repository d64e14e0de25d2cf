"""Every snippet of README.md and docs/ runs as written, or is checked where it cannot run here.

The doctests (``>>>``) run in tests/project/test_docs.py. The other Python snippets are whole scripts a
reader copies: each is run by a test, here or in the test a page's section names
(``RUN_ELSEWHERE``), and a snippet no test runs fails here. A snippet that talks to
``toolrouting serve`` runs against a server on loopback over the scripted backend, with its
address put in place of the page's ``http://127.0.0.1:8000``; one that loads the default model
runs it (``-m model``). The shell lines run in tests/project/test_docs_commands.py (each
block as a reader runs it, or another test named there, or left out by a rule that says why);
here each is checked besides: each ``toolrouting ...`` line parses with the command line's own
parser, each ``pip install`` names extras the package declares (from a checkout, ``'.[x]'``:
toolrouting is on no package index) and distributions the venv has, and each script and
``make`` target is in the tree. The JSON, TOML and YAML blocks parse.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import os
import re
import shlex
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.docs import PAGES, distribution, shell_lines
from support.paths import ROOT

#: Where the pages' snippets say toolrouting serve listens.
ADDRESS = "http://127.0.0.1:8000"
CALL = '{"tool":"search","arguments":{"query":"latch"}}'
ANSWER = "The latch holds the storage-room door shut."

#: The page sections whose Python snippets another test runs, and that test.
RUN_ELSEWHERE = {
    ("serve.md", "Clients as they ship"): "tests/serve/test_serve_clients_docs.py",
    ("serve.md", "Agent frameworks"): "tests/serve/chat/test_serve_chat_frameworks_docs.py",
}


def _snippets() -> dict[tuple[str, str], list[str]]:
    """The Python snippets that are no doctest, by page and the ``##`` section they are in."""
    found: dict[tuple[str, str], list[str]] = {}
    for page in PAGES:
        section = ""
        text = page.read_text(encoding="utf-8")
        for heading, block in re.findall(
            r"^## ([^\n]+)$|^```python\n(.*?)^```$", text, re.MULTILINE | re.DOTALL
        ):
            if heading:
                section = heading
            elif not block.lstrip().startswith(">>>"):
                found.setdefault((page.name, section), []).append(block)
    return found


SNIPPETS = _snippets()


def _run(code: str, name: str) -> dict[str, Any]:
    """Run one snippet as a script, as a reader does; its names afterwards."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(code, name, "exec"), namespace)
    return namespace


# Which snippets run where: each in exactly one test.

#: The snippets this file runs, by page and section: how many there are.
RUN_HERE = {
    ("serve.md", "Streams, token counts and stored responses"): 2,
    ("loop.md", "One step machine, two drivers"): 1,
    ("embedded.md", ""): 1,
    ("embedded.md", "The prompt cache"): 1,
    ("embedded.md", "Reasoning in the model's own tags"): 1,
    ("mcp.md", "In three lines of Python"): 1,
}


def test_every_python_snippet_is_run_by_a_test() -> None:
    counted = {where: len(blocks) for where, blocks in SNIPPETS.items() if where not in RUN_ELSEWHERE}
    assert counted == RUN_HERE
    assert set(RUN_ELSEWHERE) <= set(SNIPPETS)
    assert all((ROOT / test).exists() for test in RUN_ELSEWHERE.values())


# The serve pages' snippets, against a server over the scripted backend.


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[Any, str]]:
    pytest.importorskip("starlette")
    from support.serve import served_scripted

    with served_scripted() as both:
        yield both


def _served(code: str, url: str) -> str:
    return code.replace(ADDRESS, url.removesuffix("/v1"))


def test_the_messages_snippet_calls_streams_and_counts(scripted: tuple[Any, str]) -> None:
    from support.serve import released_snippet

    backend, url = scripted
    anthropic_snippet, _ = SNIPPETS["serve.md", "Streams, token counts and stored responses"]
    backend.enqueue(CALL, CALL)
    names = _run(_served(anthropic_snippet, url), "serve.md: Anthropic's Messages API")
    assert [block.name for block in names["message"].content] == ["search"]
    assert names["final"].stop_reason == "tool_use"
    assert names["counted"] > 0
    released_snippet(names)
    assert backend.pending == 0


def test_the_responses_snippet_continues_a_stored_response(scripted: tuple[Any, str]) -> None:
    from support.serve import released_snippet

    backend, url = scripted
    _, responses_snippet = SNIPPETS["serve.md", "Streams, token counts and stored responses"]
    backend.enqueue(CALL, '{"tool":"none"}', ANSWER, CALL)
    names = _run(_served(responses_snippet, url), "serve.md: OpenAI's Responses API")
    assert names["response"].output[0].name == "search"
    assert names["answer"] == ANSWER
    assert [item.type for item in names["streamed"].output] == ["function_call"]
    released_snippet(names)
    assert backend.pending == 0


# The other pages' snippets.


def test_the_async_loop_snippet_runs_a_scripted_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)  # the snippet writes its transcript, run.jsonl, where it runs
    (snippet,) = SNIPPETS["loop.md", "One step machine, two drivers"]
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        _run(snippet, "loop.md")
    assert printed.getvalue() == "handoff ['search_notes', 'none']\n"
    assert (tmp_path / "run.jsonl").exists()


@pytest.mark.model
def test_the_embedded_pages_snippets_run_on_the_default_model() -> None:
    pytest.importorskip("llama_cpp")
    from toolrouting import parse_route

    (routed,) = SNIPPETS["embedded.md", ""]
    (on_disk,) = SNIPPETS["embedded.md", "The prompt cache"]
    (tags,) = SNIPPETS["embedded.md", "Reasoning in the model's own tags"]
    # What they print is left to pytest's capture: llama.cpp's own silencing needs a real stdout.
    names = _run(routed, "embedded.md: routed")
    assert names["route"].ok  # the grammar's valid action, under a cap it cannot reach
    names = _run(on_disk, "embedded.md: prompt states on disk")
    assert names["info"].disk_restored
    assert names["info"].restored_tokens > 0
    names = _run(tags, "embedded.md: reasoning in the tags")
    assert parse_route(names["reply"].text, ["get_weather"]).ok or names["reply"].finish_reason == "length"


@pytest.mark.model
def test_the_mcp_pages_snippet_runs_the_time_server(
    monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("mcp")
    pytest.importorskip("llama_cpp")
    # The snippet starts `mcp-server-time`, the script its install line puts beside python.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    (snippet,) = SNIPPETS["mcp.md", "In three lines of Python"]
    _run(snippet, "mcp.md")
    assert capfd.readouterr().out.strip()  # the run's answer, whatever the model says


# The shell snippets: each line checked.

#: Each command of the pages' shell blocks, as words (comments and ``VAR=value`` left out), by page.
SHELL = [(Path(line.page).name, words) for line in shell_lines() for words in line.commands()]


def _parses(words: list[str]) -> str | None:
    """None where the command line's parser takes ``words``, else what it said."""
    from toolrouting._cli.parser import build_parser

    parser = build_parser()
    errors = io.StringIO()
    try:
        with contextlib.redirect_stderr(errors), contextlib.redirect_stdout(io.StringIO()):
            parser.parse_args(words)
    except SystemExit as exit:
        return None if exit.code == 0 else errors.getvalue().strip().splitlines()[-1]
    except argparse.ArgumentError as error:
        return str(error)
    return None


def test_every_toolrouting_command_line_parses() -> None:
    lines = [(page, words[1:]) for page, words in SHELL if Path(words[0]).name == "toolrouting"]
    assert len(lines) > 20  # README.md's, serve.md's, cli.md's neighbours: the reader's first commands
    wrong = {f"{page}: toolrouting {shlex.join(words)}": _parses(words) for page, words in lines}
    assert {line: error for line, error in wrong.items() if error} == {}


def test_every_pip_install_names_declared_extras_and_installed_distributions() -> None:
    """``pip install '.[x,y]'`` names extras pyproject.toml declares (``toolrouting[x]`` would ask
    a package index for a distribution that is on none: it is only for a comment, once
    toolrouting is installed); any other requirement is a distribution the venv the tests run in
    has, so the snippets after it run with what it installs."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"][
        "optional-dependencies"
    ]
    installs = [(page, words[2:]) for page, words in SHELL if words[:2] == ["pip", "install"]]
    assert installs
    wrong = []
    for page, words in installs:
        for requirement in (word for word in words if not word.startswith("-")):
            if distribution(requirement) == "toolrouting":
                wrong.append(f"{page}: {requirement}, on no package index: '.[extras]' in a checkout")
                continue
            own = re.fullmatch(r"\.\[([\w,-]+)\]", requirement)
            if own:
                wrong += [f"{page}: extra {name}" for name in own[1].split(",") if name not in extras]
                continue
            try:
                importlib.metadata.version(distribution(requirement))
            except importlib.metadata.PackageNotFoundError:
                wrong.append(f"{page}: {requirement}, not installed")
    assert wrong == []


def test_every_script_and_make_target_a_page_runs_is_in_the_tree() -> None:
    """``sh scripts/X.sh``, ``scripts/X.sh`` and ``make TARGET`` as the pages show them: the
    script is in the tree, the target in the Makefile. (``python -m benchmarks...`` lines are
    tests/project/test_docs_benchmarks.py's.)"""
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"^([\w-]+):", makefile, re.MULTILINE))
    wrong = []
    for page, words in SHELL:
        script = words[1] if words[0] in ("sh", "bash") and len(words) > 1 else words[0]
        if script.startswith("scripts/") and not (ROOT / script).is_file():
            wrong.append(f"{page}: {script}")
        if words[0] == "make":
            wrong += [
                f"{page}: make {target}"
                for target in words[1:]
                if "=" not in target and target not in targets
            ]
    assert wrong == []


def test_every_configuration_snippet_parses() -> None:
    """The JSON (a value, or one a line), TOML and YAML blocks a reader copies into a file parse."""
    import json

    yaml = pytest.importorskip("yaml")  # PyYAML, which LangChain brings into the dev venv
    wrong, languages = [], set()
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for language, body in re.findall(r"^```(json|toml|yaml)\n(.*?)^```$", text, re.MULTILINE | re.DOTALL):
            languages.add(language)
            try:
                if language == "json":
                    try:
                        json.loads(body)
                    except json.JSONDecodeError:
                        [json.loads(line) for line in body.splitlines() if line.strip()]
                elif language == "toml":
                    tomllib.loads(body)
                else:
                    yaml.safe_load(body)
            except (ValueError, yaml.YAMLError) as error:
                wrong.append(f"{page.name}: {language}: {error}")
    assert languages == {"json", "toml", "yaml"}  # Codex's config.toml and Continue's config.yaml
    assert wrong == []
