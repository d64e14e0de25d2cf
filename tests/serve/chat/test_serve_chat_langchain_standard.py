"""LangChain's own standard chat model tests, through ``ChatOpenAI``, against toolrouting serve.

``langchain_tests``' ``ChatModelIntegrationTests`` is the suite every LangChain chat model
integration runs. Here it drives ``ChatOpenAI`` pointed at ``toolrouting serve`` over the
embedded default model on loopback (served once for the module), so it checks the server's
chat completions surface as LangChain reads it: messages, streamed chunks, usage, stop
sequences, tool calls and their histories, and ``response_format``.

Gates and figures. A standard test that asserts only what the server guarantees (a reply's
shape, a call under ``tool_choice``, an answer valid under its schema) is a gate. One that
asserts which tool the model picks or what it writes (``magic_function`` called with 3,
Chinese characters kept in an argument, the keys of a JSON-mode object, a free-text answer that
is not empty) measures the model:
it is overridden here as ``xfail(run=False)`` with that reason, LangChain's own way of setting
a standard test aside (its ``test_no_overrides_DO_NOT_OVERRIDE`` checks each one says why), so
the suite does not run it. ``benchmarks/serve/langchain_standard.py`` runs the whole class with
``--runxfail`` (the marks ignored) and counts every test, on any model.

``TOOLROUTING_STANDARD_TESTS_MODEL`` names another GGUF to serve instead of the default model
(the benchmark's ``--model``).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.language_models import BaseChatModel
from langchain_openai import ChatOpenAI
from langchain_tests.integration_tests import ChatModelIntegrationTests
from support.serve import served_embedded

from toolrouting import route_schema
from toolrouting._grammar import route_grammar

pytestmark = [
    pytest.mark.model,
    pytest.mark.anyio,
    # The openai SDK's streamed structured output carries the parsed model where its type says
    # None, and ChatOpenAI's model_dump of each chunk warns of it: the client's, whatever the server.
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
    # ChatOpenAI takes a pydantic.v1 model by function calling instead of json_schema, and says so.
    pytest.mark.filterwarnings("ignore:Received a Pydantic BaseModel V1 schema:UserWarning"),
]

#: The variable that names the GGUF served instead of the default model.
MODEL_VARIABLE = "TOOLROUTING_STANDARD_TESTS_MODEL"

#: The name the server gives its one model, and the name the client asks for.
SERVED_MODEL = "toolrouting"

#: The standard tests' answers decoded under a schema: ChatOpenAI's default ``json_schema``
#: method, ``json_mode``, and (for a pydantic.v1 model) a forced call of the schema as a tool.
UNDER_A_SCHEMA = frozenset(
    {
        "test_structured_output",
        "test_structured_output_async",
        "test_structured_output_pydantic_2_v1",
        "test_structured_output_optional_param",
        "test_json_mode",
    }
)

#: The widest of those schemas, the standard tests' joke: two strings, which our grammar bounds
#: at BOUNDED_STRING_CHARS each (an optional punchline is no longer).
JOKE: dict[str, Any] = {
    "type": "object",
    "properties": {"setup": {"type": "string"}, "punchline": {"type": "string"}},
    "required": ["setup", "punchline"],
}

#: Caps no reply under the joke's grammar can reach, as an answer or as a call of it: every token
#: writes at least one byte, so the standard tests' structured output is never cut.
SCHEMA_CAP = int(route_grammar(JOKE, bounded=True).max_bytes or 0) + 1
ROUTE_CAP = (
    int(
        route_grammar(
            route_schema([{"type": "function", "function": {"name": "Joke", "parameters": JOKE}}]),
            bounded=True,
        ).max_bytes
        or 0
    )
    + 1
)

#: The cap of a free-text answer: the standard tests ask for a greeting, two haikus at most.
TEXT_CAP = 96


#: Why the tests that assert a non-empty free-text answer are figures: without a schema the
#: answer is not constrained, and a model may end it at its first token.
EMPTY = "it asserts a non-empty answer; a free-text answer is the model's, and may end at once"


def figure(reason: str) -> pytest.MarkDecorator:
    """A standard test that measures the model: set aside in the suite, counted by the benchmark."""
    return pytest.mark.xfail(reason=f"a figure, not a gate: {reason}", run=False)


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def served_url() -> Iterator[str]:
    """toolrouting serve over the embedded model, for the whole module: the model loads once."""
    path = os.environ.get(MODEL_VARIABLE)
    with served_embedded(path=Path(path) if path else None, model=SERVED_MODEL, cap=ROUTE_CAP) as url:
        yield url


@pytest.fixture(scope="module")
async def one_event_loop(anyio_backend: str) -> None:
    """anyio's event loop held open for the module's async tests. ChatOpenAI keeps one httpx client
    per base URL across instances, and a pooled connection belongs to the loop that opened it:
    each test in a loop of its own would find the last one's connections on a closed loop. (anyio
    keeps a loop while a fixture that runs in it is alive.)"""


class TestServeThroughChatOpenAI(ChatModelIntegrationTests):
    """``ChatModelIntegrationTests`` as LangChain ships it, the model behind it toolrouting serve."""

    url = ""

    @pytest.fixture(autouse=True)
    def _served(self, served_url: str, one_event_loop: None) -> None:
        self.url = served_url

    @pytest.fixture
    def model(self, request: pytest.FixtureRequest) -> BaseChatModel:
        """LangChain's fixture, with the cap that fits the test: an answer under a schema is never cut."""
        cap = SCHEMA_CAP if request.node.originalname in UNDER_A_SCHEMA else TEXT_CAP
        extra = getattr(request, "param", None) or {}
        return ChatOpenAI(**{**self.chat_model_params, "max_tokens": cap, **extra})

    @property
    def chat_model_class(self) -> type[BaseChatModel]:
        return ChatOpenAI

    @property
    def chat_model_params(self) -> dict[str, Any]:
        return {
            "base_url": self.url,
            "api_key": "unused",
            "model": SERVED_MODEL,
            "max_tokens": TEXT_CAP,
            "max_retries": 0,  # a failure is the server's answer, not one of three
            "timeout": 600,
            "stream_usage": True,  # ChatOpenAI asks for the usage chunk itself only of OpenAI's URL
        }

    @property
    def has_tool_calling(self) -> bool:
        return True

    @property
    def has_tool_choice(self) -> bool:
        return True

    @property
    def has_structured_output(self) -> bool:
        return True

    @property
    def supports_json_mode(self) -> bool:
        return True

    @property
    def supports_model_override(self) -> bool:
        return False  # the server has one model, whatever a request names

    @property
    def returns_usage_metadata(self) -> bool:
        return True

    @figure(EMPTY)
    def test_invoke(self, model: BaseChatModel) -> None:
        super().test_invoke(model)

    @figure(EMPTY)
    def test_stream_events_v3(self, model: BaseChatModel) -> None:
        super().test_stream_events_v3(model)

    @figure(EMPTY)
    def test_batch(self, model: BaseChatModel) -> None:
        super().test_batch(model)

    @figure(EMPTY)
    def test_conversation(self, model: BaseChatModel) -> None:
        super().test_conversation(model)

    @figure(EMPTY)
    def test_double_messages_conversation(self, model: BaseChatModel) -> None:
        super().test_double_messages_conversation(model)

    @figure(EMPTY)
    def test_message_with_name(self, model: BaseChatModel) -> None:
        super().test_message_with_name(model)

    @figure(EMPTY)
    async def test_ainvoke(self, model: BaseChatModel) -> None:
        await super().test_ainvoke(model)

    @figure(EMPTY)
    async def test_astream_events_v3(self, model: BaseChatModel) -> None:
        await super().test_astream_events_v3(model)

    @figure(EMPTY)
    async def test_abatch(self, model: BaseChatModel) -> None:
        await super().test_abatch(model)

    @figure(EMPTY)
    @pytest.mark.parametrize("model", [{}, {"output_version": "v1"}], indirect=True)
    def test_stream(self, model: BaseChatModel) -> None:
        super().test_stream(model)

    @figure(EMPTY)
    @pytest.mark.parametrize("model", [{}, {"output_version": "v1"}], indirect=True)
    async def test_astream(self, model: BaseChatModel) -> None:
        await super().test_astream(model)

    @figure("it asserts the model calls magic_function with input 3; the argument is the model's")
    @pytest.mark.parametrize("model", [{}, {"output_version": "v1"}], indirect=True)
    def test_tool_calling(self, model: BaseChatModel) -> None:
        super().test_tool_calling(model)

    @figure("it asserts the model calls magic_function with input 3; the argument is the model's")
    async def test_tool_calling_async(self, model: BaseChatModel) -> None:
        await super().test_tool_calling_async(model)

    @figure("it asserts a non-empty answer_style; the grammar asks for a string, an empty one too")
    def test_bind_runnables_as_tools(self, model: BaseChatModel) -> None:
        super().test_bind_runnables_as_tools(model)

    @figure("it asserts a call of get_weather under tool_choice auto, where an answer is as valid")
    @pytest.mark.parametrize("model", [{}, {"output_version": "v1"}], indirect=True)
    def test_agent_loop(self, model: BaseChatModel) -> None:
        super().test_agent_loop(model)

    @figure("it asserts the name argument keeps the question's Chinese and Japanese characters")
    def test_unicode_tool_call_integration(
        self,
        model: BaseChatModel,
        *,
        tool_choice: str | None = None,  # noqa: PT028 - the signature LangChain's test has
        force_tool_call: bool = True,  # noqa: PT028
    ) -> None:
        super().test_unicode_tool_call_integration(
            model, tool_choice=tool_choice, force_tool_call=force_tool_call
        )

    @figure(
        "json_object guarantees a JSON object, not the setup and punchline keys the prompt asks "
        "for (tests/serve/chat/test_serve_chat_structured.py checks the object through ChatOpenAI's "
        "json_mode)"
    )
    def test_json_mode(self, model: BaseChatModel) -> None:
        super().test_json_mode(model)
