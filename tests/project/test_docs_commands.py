"""Every shell line of README.md and docs/ runs as written in a test, or is left out by a rule
that says why.

Each block of lines a reader follows runs here as a session (tests/support/docs_commands.py):
its lines in order through ``bash -c`` in a fresh working folder, with a HOME of its own and
``toolrouting`` the entry point beside the running Python, under a hard limit each; an
``export`` reaches the lines after it; ``toolrouting serve`` and ``llama-server`` start on a free
port, answer a real request, and run until the block's next of their kind or its end (serve is
then stopped as Ctrl-C stops it, and must end with the status for that). What each command
guarantees is checked (an exit status, a transcript of JSON lines, one result per question, a
schema with its ``none``, the parsed action, the served model listed), never which tool a
model picks. A page's placeholders are put in place by
:data:`PLACEHOLDERS`, one table: a file of the placeholder's name in the working folder, or the
text put in its place; the page's addresses (``http://127.0.0.1:8000``, ``:8080``,
``gpu-node``) are replaced by those of the servers the test starts, and every serve line's port
by a free one (``--port 0``, added where a line has none, in place of the default 8000).
README.md's Claude Code line runs through tests/support/agent_clis.py's ``run_claude`` (a
HOME of its own, telemetry off) with Claude Code's own ``--max-turns 2`` after it, and ends
at exit 0 or at that bound; the default model may otherwise call tools until its context fills.

The other lines are run by another test (:data:`RUN_ELSEWHERE`) or left out by a rule of
:data:`NOT_RUN`, with the reason; a line in none of the three fails here, named with its page.
"""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.docs import ShellLine, pip_installs, shell_lines
from support.docs_commands import KEY, QUESTION, Session, StandIn
from support.paths import ROOT
from support.think_templates import OPENS_REASONING

from toolrouting._backends import default_model_path

LINES = shell_lines()

#: The questions file the pages' batches read: the demo's question, and one for the time server.
QUESTIONS = (
    f'{{"id": "q1", "question": "{QUESTION}"}}\n{{"id": "q2", "question": "What time is it in Tokyo?"}}\n'
)
#: The file README.md's Claude Code recipe asks about.
NOTES = "The code word is heliotrope.\n"


def _linked(target: Callable[[], Path]) -> StandIn:
    def put(session: Session, name: str) -> str:
        if not (session.folder / name).exists():
            (session.folder / name).symlink_to(target())
        return name

    return put


def _written(text: str) -> StandIn:
    def put(session: Session, name: str) -> str:
        (session.folder / name).write_text(text, encoding="utf-8")
        return name

    return put


def _copied(source: Path) -> StandIn:
    def put(session: Session, name: str) -> str:
        shutil.copyfile(source, session.folder / name)
        return name

    return put


def _llama_server(session: Session, name: str) -> str:
    return session.llama_url()


def _serve(session: Session, name: str) -> str:
    return session.serve_url()


#: Each placeholder of the lines run here, and what stands in for it.
PLACEHOLDERS: dict[str, StandIn] = {
    # A GGUF of the reader's: the default model's (toolrouting._backends.default_model_path()).
    "PATH.gguf": _linked(default_model_path),
    "model.gguf": _linked(default_model_path),
    # A tool catalogue: the sample one of mcp-server-time's tools.
    "CATALOGUE.json": _copied(ROOT / "tests" / "catalogues" / "mcp" / "mcp-server-time.json"),
    # The reader's questions: two the test writes.
    "questions.jsonl": _written(QUESTIONS),
    # The file README.md's Claude Code line asks about: a note the test writes.
    "notes.txt": _written(NOTES),
    # A template with reasoning tags: the default model's own, its generation prompt opening
    # <think> (tests/support/think_templates.py).
    "think.jinja": _written(OPENS_REASONING),
    # A llama-server: the block's own where a line started one, else the cached binary that
    # `make llama-server` builds, on the default model (tests/support/llama_server.py).
    "http://127.0.0.1:8080": _llama_server,
    # A GPU node's vLLM or SGLang: the same llama-server (the model's name it ignores).
    "http://gpu-node:8000": _llama_server,
    "http://gpu-node:30000": _llama_server,
    # toolrouting serve: the block's own, else one on the default model requiring KEY.
    "http://127.0.0.1:8000": _serve,
    # A question: the demo's.
    '"..."': f'"{QUESTION}"',
    # A server's key: the one that serve requires.
    "TOOLROUTING_API_KEY=...": f"TOOLROUTING_API_KEY={KEY}",
    # uvx fetches the time server from PyPI; the venv has it (mcp.md's own install line).
    "uvx mcp-server-time": "mcp-server-time",
}

#: The agent CLIs' lines of docs/serve.md, which their tests run as the page has them.
CLAUDE_CODE = (
    "ANTHROPIC_BASE_URL=http://127.0.0.1:8000 ANTHROPIC_API_KEY=unused "
    'claude -p "What is the weather in Paris?"'
)
CODEX = 'TOOLROUTING_SERVE_KEY=unused codex exec "What is the weather in Paris?"'

#: The lines another test runs, and that test (the elsewhere-test below checks each runs these).
RUN_ELSEWHERE = {
    "pip install '.[serve,embedded]'": "tests/project/test_install.py",
    "toolrouting fetch-model": "tests/project/test_install.py",
    "make run": ".ci/run",
    "make test": ".ci/run",
    CLAUDE_CODE: "tests/serve/test_serve_agent_clis.py",
    CODEX: "tests/serve/test_serve_agent_clis.py",
    # Every other install, in one clean venv, as the pages have them.
    **{line.bare: "tests/project/test_docs_installs.py" for line in pip_installs()},
}

BENCHMARK = (
    "a benchmark's reproduction command: minutes to hours, some on the 470 MB measurement model; "
    "checked by its own parser in tests/project/test_docs_benchmarks.py"
)

#: The lines no test runs, by a rule over ``PAGE: LINE``, and why.
NOT_RUN: list[tuple[str, str]] = [
    (r"docs/benchmarks/.*", BENCHMARK),
    (r"(?!docs/benchmarks/).*-m benchmarks\..*", BENCHMARK),
    (
        r".*: (vllm serve|python -m sglang\.launch_server) .*",
        "a serving engine of a GPU node the suite lacks (vLLM, SGLang); the batch line after it runs "
        "against a llama-server",
    ),
    (
        r".*: toolrouting serve --model qwen3-0\.6b\.gguf .*",
        "a model the suite lacks (Qwen3-0.6B, its own template's tags); the line after it runs the "
        "same path on the default model under a template with tags",
    ),
    (r"docs/development\.md: make lock .*", "resolves the pins afresh from PyPI: the network, and minutes"),
    (
        r"docs/development\.md: (for seed |TOOLROUTING_TEST_SEED=|done; done).*",
        "the model tests ten times over (five seeds, one and two threads; about 12 minutes): the "
        "suite runs them once",
    ),
]

#: The commands a session here runs (tests/support/docs_commands.py), by program and verb.
RUNNABLE = {"export", "claude", "llama-server"}
TOOLROUTING_VERBS = {"run", "batch", "serve", "models", "schema", "parse", "preflight"}


def _left(line: ShellLine) -> list[str]:
    """What claims ``line`` besides this module: the test that runs it, the rules that leave it out."""
    claims = [RUN_ELSEWHERE[line.bare]] if line.bare in RUN_ELSEWHERE else []
    where = f"{line.page}: {line.text} "
    return claims + [reason for rule, reason in NOT_RUN if re.fullmatch(rule, where)]


def _runs_here(line: ShellLine) -> bool:
    if _left(line) or not line.commands():
        return False
    words = line.commands()[0]
    return words[0] in RUNNABLE or (
        words[0] == "toolrouting" and len(words) > 1 and words[1] in TOOLROUTING_VERBS
    )


# Every line claimed, once.


def test_every_shell_line_is_run_or_left_out_by_a_rule() -> None:
    claims = {line: _left(line) + (["here"] if _runs_here(line) else []) for line in LINES}
    assert [f"{line.page}: {line.text}" for line, by in claims.items() if not by] == []
    assert {f"{line.page}: {line.text}": by for line, by in claims.items() if len(by) > 1} == {}
    assert all(any(re.fullmatch(rule, f"{line.page}: {line.text} ") for line in LINES) for rule, _ in NOT_RUN)
    assert set(RUN_ELSEWHERE) <= {line.bare for line in LINES}
    used = {
        placeholder
        for line in LINES
        if _runs_here(line)
        for placeholder in PLACEHOLDERS
        if placeholder in line.text
    }
    assert used == set(PLACEHOLDERS)


def test_the_lines_run_elsewhere_are_run_there_as_written() -> None:
    from support.agent_clis import documented

    assert all((ROOT / path).is_file() for path in RUN_ELSEWHERE.values())
    # test_install.py reads these lines from README.md, asserts they are there, and runs them.
    install = (ROOT / "tests" / "project" / "test_install.py").read_text(encoding="utf-8")
    assert all(
        f'"{line}"' in install for line, path in RUN_ELSEWHERE.items() if path.endswith("test_install.py")
    )
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    commands = [line for line in ci if line and not line.startswith(("#", "set ", "cd "))]
    assert commands == [line for line, path in RUN_ELSEWHERE.items() if path == ".ci/run"]
    # The CLIs' tests run docs/serve.md's blocks as the page has them.
    clis = [line for line, path in RUN_ELSEWHERE.items() if path.endswith("agent_clis.py")]
    assert clis == [documented("Claude Code")["sh"].strip(), documented("Codex")["sh"].strip()]
    source = (ROOT / "tests" / "serve" / "test_serve_agent_clis.py").read_text(encoding="utf-8")
    assert "run_claude(" in source
    assert "run_codex(" in source


# The blocks, run.

BLOCKS = sorted({(line.page, line.block) for line in LINES if _runs_here(line)})


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    from support.llama_server import running_llama_server

    with running_llama_server(tmp_path_factory.mktemp("llama-server")) as url:
        yield url


@pytest.mark.model
@pytest.mark.parametrize(("page", "block"), BLOCKS, ids=[f"{page}#{block}" for page, block in BLOCKS])
def test_the_block_runs_as_written(
    page: str, block: int, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    session = Session(tmp_path, PLACEHOLDERS, lambda: str(request.getfixturevalue("llama_server")))
    try:
        for line in LINES:
            if (line.page, line.block) == (page, block) and _runs_here(line):
                session.run(line)
    finally:
        session.close()
