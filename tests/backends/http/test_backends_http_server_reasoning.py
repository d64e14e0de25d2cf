"""Reasoning in the model's own tags on llama.cpp's ``llama-server``: ``served_reasoning_tags``,
``OpenAICompatible(reasoning_tags=...)`` and ``clone(reasoning_budget=N)``, on the real server.

The cached ``llama-server`` runs the default model under a template with ``<think>`` tags
(``support.think_templates``, given with ``--chat-template-file``). Each test asserts what the
code guarantees whatever the model writes: the thought is at most ``N`` tokens as the server
counted them and holds no close tag, the reply keeps its grammar, the prompt the server completed
holds the thought closed between the tags right before the reply, and each failure is an error
that names the request.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

import anyio
import openai
import pytest
from support.llama_server import running_llama_server
from support.model import TEST_SEED, TEST_TEMPERATURE
from support.processes import ROOT, stop
from support.serve import TOOLS, served
from support.think_templates import ASKED, STRIPS_REASONING, THINK, WEATHER, reasoned_then_routed

from toolrouting import (
    AsyncOpenAICompatible,
    BackendConnectError,
    BackendResponseError,
    Completion,
    Message,
    OpenAICompatible,
    Settings,
    TextDelta,
    route_schema,
    served_reasoning_tags,
)
from toolrouting._serve import serve_app

pytestmark = pytest.mark.model

SETTINGS = Settings(temperature=TEST_TEMPERATURE, seed=TEST_SEED, max_tokens=160)


@pytest.fixture(scope="module")
def reasoning_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The cached llama-server with the default model under a template with ``<think>`` tags."""
    folder = tmp_path_factory.mktemp("reasoning_server")
    template = folder / "think.jinja"
    template.write_text(STRIPS_REASONING, encoding="utf-8")
    with running_llama_server(folder, ["--jinja", "--chat-template-file", str(template)]) as url:
        yield url


def test_the_servers_template_names_its_tags(reasoning_server: str, llama_server: str) -> None:
    assert served_reasoning_tags(reasoning_server) == THINK
    assert served_reasoning_tags(f"{reasoning_server}/v1") == THINK
    assert served_reasoning_tags(llama_server) is None  # the GGUF's own template has none


def held_to_its_grammar_after_its_thought(reply: Completion, budget: int) -> None:
    """What every reply reasoned first guarantees, the server's prompt its context."""
    assert reply.raw is not None
    reasoned_then_routed(reply, budget, reply.raw["prompt"] + reply.text)


@pytest.mark.parametrize("grammar", ["ours", "server"])
@pytest.mark.parametrize("budget", [1, 24])
def test_a_thought_within_its_budget_then_the_route_under_its_grammar(
    reasoning_server: str, grammar: Any, budget: int
) -> None:
    routed = SETTINGS.clone(json_schema=route_schema(WEATHER), grammar=grammar)
    with OpenAICompatible(reasoning_server, dialect="llama.cpp", reasoning_tags=THINK) as backend:
        reasoned = backend.clone(settings=routed, reasoning_budget=budget)
        held_to_its_grammar_after_its_thought(reasoned.complete(ASKED), budget)
        *pieces, last = reasoned.stream(ASKED)
    assert isinstance(last, Completion)
    held_to_its_grammar_after_its_thought(last, budget)
    deltas: list[Any] = pieces
    assert all(isinstance(piece, TextDelta) for piece in deltas)
    assert "".join(piece.text for piece in deltas if piece.reasoning) == last.reasoning
    assert "".join(piece.text for piece in deltas if not piece.reasoning) == last.text


def test_the_async_backend_reasons_alike(reasoning_server: str) -> None:
    async def asked() -> tuple[Completion, list[TextDelta | Completion]]:
        async with AsyncOpenAICompatible(
            reasoning_server, dialect="llama.cpp", reasoning_tags=THINK
        ) as backend:
            reasoned = backend.clone(
                settings=SETTINGS.clone(json_schema=route_schema(WEATHER)), reasoning_budget=8
            )
            assert reasoned.reasoning_budget == 8
            return await reasoned.complete(ASKED), [item async for item in reasoned.stream(ASKED)]

    whole, items = anyio.run(asked)
    held_to_its_grammar_after_its_thought(whole, 8)
    last = items[-1]
    assert isinstance(last, Completion)
    held_to_its_grammar_after_its_thought(last, 8)


def test_a_reasoning_budget_is_refused_by_name_where_it_cannot_be_served(llama_cpp_server: str) -> None:
    with pytest.raises(ValueError, match=r"reasoning_tags needs dialect='llama\.cpp', not 'openai'"):
        OpenAICompatible(llama_cpp_server, reasoning_tags=THINK)
    with OpenAICompatible(llama_cpp_server, dialect="llama.cpp") as plain:
        with pytest.raises(
            ValueError, match=r"has none \(no <think> and </think>\); give one with reasoning_tags="
        ):
            plain.clone(reasoning_budget=8)
        with pytest.raises(ValueError, match="reasoning_budget is the most tokens of a thought"):
            plain.clone(reasoning_tags=THINK, reasoning_budget=0)
        # llama-cpp-python's server has no /apply-template: the 404 is named, with what to do.
        reasoned = plain.clone(reasoning_tags=THINK, reasoning_budget=8)
        with pytest.raises(
            BackendResponseError, match=r"/apply-template answered HTTP 404: .*leave reasoning_tags"
        ):
            reasoned.complete(ASKED)
    with pytest.raises(BackendConnectError, match=r"could not get http://127\.0\.0\.1:9/props"):
        served_reasoning_tags("http://127.0.0.1:9", timeout=5)


class Recorded(AsyncOpenAICompatible):
    """The HTTP backend, recording each completion a clone with ``reasoning_budget`` returned."""

    replies: ClassVar[list[Completion]] = []

    async def complete(self, messages: Sequence[Message]) -> Completion:
        reply = await super().complete(messages)
        if self.reasoning_budget is not None:
            Recorded.replies.append(reply)
        return reply


def test_serve_spends_a_requests_reasoning_in_the_servers_tags(reasoning_server: str) -> None:
    Recorded.replies.clear()
    backend = Recorded(reasoning_server, dialect="llama.cpp", settings=SETTINGS, reasoning_tags=THINK)
    # owned: the server closes the backend's client in the event loop that used it.
    with (
        served(serve_app(backend, owned=True)) as url,
        openai.OpenAI(base_url=url, api_key="unused") as client,
    ):
        reply = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Find the latch"}], tools=TOOLS,
            tool_choice="required", reasoning_effort="minimal",
        )  # fmt: skip
    [decided] = Recorded.replies
    assert decided.raw is not None
    assert decided.raw["reasoning_tokens"] <= 32  # the budget of "minimal"
    assert getattr(reply.choices[0].message, "reasoning_content", None) == decided.reasoning
    assert reply.choices[0].finish_reason == "tool_calls"


def _serve_lines(upstream: str) -> list[str]:
    """What ``toolrouting serve --dialect llama.cpp`` says on stderr before it serves."""
    process = subprocess.Popen(
        [sys.executable, "-m", "toolrouting", "serve", "--base-url", upstream, "--dialect", "llama.cpp",
         "--model", "m", "--port", "0"],
        cwd=ROOT, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stderr is not None
    lines: list[str] = []
    try:
        while not (line := process.stderr.readline()).startswith("toolrouting: serving") and line:
            lines.append(line)
        assert re.fullmatch(r"toolrouting: serving http://127\.0\.0\.1:\d+/v1\n", line), line
    finally:
        stop(process, 10)  # type: ignore[arg-type]
        process.stderr.close()
    return lines


def test_the_command_line_reads_the_servers_tags_or_says_why_not(reasoning_server: str) -> None:
    assert _serve_lines(reasoning_server) == [
        "toolrouting: the server's chat template reasons between <think> and </think>: "
        "a request's reasoning goes there\n"
    ]
    [said] = _serve_lines("http://127.0.0.1:9/v1")
    assert said.startswith("toolrouting: the server's chat template could not be read (could not get")
    assert said.endswith("a request's reasoning goes in the route's thought slot\n")


def test_a_path_of_one_segment_is_on_the_servers_root() -> None:
    from toolrouting._backends.endpoint import endpoint_url

    for base in ("http://h:1", "http://h:1/", "http://h:1/v1", "http://h:1/props"):
        assert endpoint_url(base, "/props") == "http://h:1/props"
