"""The snippets of docs/serve.md's "Agent frameworks" run against serve over the scripted backend.

The section's setup (the model and ``BASE_URL``) runs first, then a subsection's snippets, each as
written with the test server's address put in place of the page's ``http://127.0.0.1:8000``. Each
ends with ``note``, the framework's typed value, which must be the one the scripted backend
answered: so a snippet that names a class, a setting or an argument the framework no longer takes
fails here.
"""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from typing import Any

import pytest
from support.paths import ROOT
from support.serve import page_snippets, released_snippet, served_scripted

from toolrouting import AsyncScriptedBackend

PAGE = ROOT / "docs" / "serve.md"
HEADING = "## Agent frameworks"
ANSWER = '{"title":"A latch","stars":4}'
CALL = '{"tool":"search","arguments":{"query":"latch"}}'
#: Where the page's snippets say toolrouting serve listens.
ADDRESS = "http://127.0.0.1:8000"

#: What the scripted backend answers each subsection's requests with, in order, and how many
#: typed values its snippet builds.
SCRIPTS: dict[str, tuple[list[str], int]] = {
    "LangChain": ([ANSWER, '{"tool":"Note","arguments":' + ANSWER + "}"], 2),
    "LangGraph": (
        ['{"tool":"search","arguments":{"query":"latch"}}', '{"tool":"none"}', "It holds.", ANSWER],
        1,
    ),
    "LangChain's create_agent": (
        [CALL, '{"tool":"Note","arguments":' + ANSWER + "}", CALL, '{"tool":"none","answer":' + ANSWER + "}"],
        2,
    ),
    "OpenAI Agents SDK": ([ANSWER, ANSWER], 2),
    "pydantic-ai": ([ANSWER], 1),
    "instructor": ([ANSWER], 1),
}
#: The subsections whose framework is not in the dev extra (docs/serve.md says why).
OPTIONAL = {"instructor": "instructor"}


PREAMBLE, SNIPPETS = page_snippets(HEADING)


@pytest.fixture(scope="module")
def scripted() -> Iterator[tuple[AsyncScriptedBackend, str]]:
    with served_scripted() as both:
        yield both


def test_every_subsection_has_a_snippet_and_a_script() -> None:
    assert "BASE_URL" in PREAMBLE
    assert "class Note" in PREAMBLE
    assert set(SNIPPETS) == set(SCRIPTS)
    assert all(SNIPPETS.values())


@pytest.mark.parametrize("title", SCRIPTS)
def test_the_snippet_runs_through_serve(scripted: tuple[AsyncScriptedBackend, str], title: str) -> None:
    if title in OPTIONAL:
        pytest.importorskip(OPTIONAL[title])
    backend, url = scripted
    backend.requests.clear()
    replies, values = SCRIPTS[title]
    backend.enqueue(*replies)
    namespace: dict[str, Any] = {"__name__": f"docs_serve_{title}"}
    root = url.removesuffix("/v1")
    exec(compile(PREAMBLE.replace(ADDRESS, root), f"{PAGE.name}: {HEADING}", "exec"), namespace)
    with warnings.catch_warnings():
        # LangGraph 1 warns that its prebuilt agent moved; the page says so.
        warnings.filterwarnings("ignore", message="create_react_agent has been moved")
        exec(compile(SNIPPETS[title].replace(ADDRESS, root), f"{PAGE.name}: {title}", "exec"), namespace)
    note_type = namespace["Note"]
    built = [value for value in namespace.values() if isinstance(value, note_type)]
    assert namespace["note"] in built
    assert all(value.model_dump() == note_type.model_validate_json(ANSWER).model_dump() for value in built)
    assert len(built) == values
    released_snippet(namespace)
    assert backend.pending == 0
