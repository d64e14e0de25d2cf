"""The Python snippets of docs/serve.md's "Clients as they ship" run against serve over the
scripted backend, each as written, with the names the section says it gives them: ``BASE_URL``
(the server's ``/v1``), ``ROOT`` (the server's root), ``TOOLS`` (the notes catalogue) and
``search`` (its tool as a function). A snippet that names a class, a setting or an argument
its client no longer takes fails here; the two CLIs' commands are run by tests/serve/test_serve_agent_clis.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.paths import ROOT
from support.serve import TOOLS, page_snippets, released_snippet, served_scripted

from toolrouting import AsyncScriptedBackend

PAGE = ROOT / "docs" / "serve.md"
HEADING = "## Clients as they ship"
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


_, SNIPPETS = page_snippets(HEADING)


def search(query: str) -> str:
    """Search the notes for a word."""
    return "M1: the latch keeps the storage-room door shut."


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    with served_scripted() as both:
        yield both


def test_every_subsection_has_a_snippet_and_a_script() -> None:
    assert set(SNIPPETS) == set(SCRIPTS) | OTHERS
    assert all(SNIPPETS[title] for title in SCRIPTS)
    assert not any(SNIPPETS[title] for title in OTHERS)


@pytest.mark.parametrize("title", SCRIPTS)
def test_the_snippet_runs_through_serve(scripted: tuple[AsyncScriptedBackend, str], title: str) -> None:
    backend, url = scripted
    backend.requests.clear()
    replies, name, expected = SCRIPTS[title]
    backend.enqueue(*replies)
    namespace: dict[str, Any] = {
        "__name__": f"docs_serve_{title}",
        "BASE_URL": url,
        "ROOT": url.removesuffix("/v1"),
        "TOOLS": TOOLS,
        "search": search,
    }
    exec(compile(SNIPPETS[title], f"{PAGE.name}: {title}", "exec"), namespace)
    assert namespace[name] == expected
    released_snippet(namespace)
    assert backend.pending == 0
