"""The Python snippets of docs/serve.md's "Clients as they ship" run against serve over the
scripted backend, each as a reader runs it: the section's setup (the server's address, the
``search`` tool as ``TOOLS`` and as a function), then the snippet, with the test server's address
put in place of the page's ``http://127.0.0.1:8000``. A snippet that names a class, a setting or
an argument its client no longer takes, or a name the setup does not define, fails here; the
two CLIs' commands are run by tests/serve/test_serve_agent_clis.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.paths import ROOT
from support.serve import page_snippets, released_snippet, served_scripted

from toolrouting import AsyncScriptedBackend

PAGE = ROOT / "docs" / "serve.md"
HEADING = "## Clients as they ship"
#: Where the page's snippets say toolrouting serve listens.
ADDRESS = "http://127.0.0.1:8000"
CALL = '{"tool":"search","arguments":{"query":"latch"}}'
NONE = '{"tool":"none"}'
ANSWER = "The latch holds the storage-room door shut."
#: One tool loop: the call, the decision after its result, the answer.
LOOP = [CALL, NONE, ANSWER]

#: What the scripted backend answers each subsection's requests with, in order, and what the
#: snippet's last value (its name, then the value) must be.
SCRIPTS: dict[str, tuple[list[str], str, Any]] = {
    "The openai SDK": ([CALL, CALL], "calls", ["search", "search"]),
    "The anthropic SDK": ([CALL], "calls", ["search"]),
    "The OpenAI Agents SDK": (LOOP, "answer", ANSWER),
    "pydantic-ai": (LOOP * 3, "answers", [ANSWER] * 3),
    "LangChain": (LOOP * 3, "answers", [ANSWER] * 3),
}
#: The subsections whose snippet is not Python (the CLIs', run by tests/serve/test_serve_agent_clis.py) or
#: not run at all (an editor's configuration).
OTHERS = {"Claude Code", "Codex", "Continue"}


SETUP, SNIPPETS = page_snippets(HEADING)


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    with served_scripted() as both:
        yield both


def test_every_subsection_has_a_snippet_and_a_script() -> None:
    assert all(f"{name} =" in SETUP for name in ("BASE_URL", "ROOT", "TOOLS"))
    assert "def search" in SETUP
    assert set(SNIPPETS) == set(SCRIPTS) | OTHERS
    assert all(SNIPPETS[title] for title in SCRIPTS)
    assert not any(SNIPPETS[title] for title in OTHERS)


@pytest.mark.parametrize("title", SCRIPTS)
def test_the_snippet_runs_through_serve(scripted: tuple[AsyncScriptedBackend, str], title: str) -> None:
    backend, url = scripted
    backend.requests.clear()
    replies, name, expected = SCRIPTS[title]
    backend.enqueue(*replies)
    namespace: dict[str, Any] = {"__name__": f"docs_serve_{title}"}
    for part, code in (("setup", SETUP), (title, SNIPPETS[title])):
        served = code.replace(ADDRESS, url.removesuffix("/v1"))
        exec(compile(served, f"{PAGE.name}: {part}", "exec"), namespace)
    assert namespace[name] == expected
    released_snippet(namespace)
    assert backend.pending == 0
