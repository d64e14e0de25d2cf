"""The agent frameworks' typed output through toolrouting serve, one function a framework.

Each takes the server's base URL and a :class:`Wire`, which records every request body and its
reply as they crossed loopback, so that the scripted tests can read what a framework sent and the
model tests what the server answered (a cut answer, the one outcome besides a valid one). Clients
make no retries and time out, so a failure is one request and nothing hangs.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import httpx2
import jsonschema
import openai
from pydantic import BaseModel, Field

if TYPE_CHECKING:
    from agents import RunResult, RunResultStreaming

__all__ = [
    "ASK",
    "SEARCHED",
    "TIMEOUT",
    "Note",
    "Wire",
    "agents_run",
    "instructor_note",
    "langchain_agent_run",
    "langchain_structured",
    "langgraph_run",
    "pydantic_ai_run",
    "typed_or_cut",
]

T = TypeVar("T")

#: Seconds a request may take: the embedded model's answers on two shared cores take a few.
TIMEOUT = 120.0
#: The question every framework asks.
ASK = "Write a note about the storage-room latch: a short title and a rating from 1 to 5 stars."
#: What the frameworks' search tool returns.
SEARCHED = "M1: the latch keeps the storage-room door shut in a draught."


class Note(BaseModel):
    """The typed output every framework asks for (a short title keeps the model's answer short)."""

    title: str = Field(max_length=40)
    stars: int


class Wire:
    """Each request body a client sent and the reply's body, in order, as they crossed loopback."""

    def __init__(self) -> None:
        self.exchanges: list[tuple[Any, Any]] = []

    def _record(self, response: httpx2.Response) -> None:
        sent = json.loads(response.request.content or b"null")
        kind = response.headers.get("content-type", "")
        self.exchanges.append(
            (sent, response.json() if kind.startswith("application/json") else response.text)
        )

    def client(self) -> httpx2.Client:
        def record(response: httpx2.Response) -> None:
            response.read()
            self._record(response)

        return httpx2.Client(timeout=TIMEOUT, event_hooks={"response": [record]})

    def async_client(self) -> httpx2.AsyncClient:
        async def record(response: httpx2.Response) -> None:
            await response.aread()
            self._record(response)

        return httpx2.AsyncClient(timeout=TIMEOUT, event_hooks={"response": [record]})

    @property
    def sent(self) -> list[Any]:
        return [sent for sent, _ in self.exchanges]

    @property
    def replies(self) -> list[Any]:
        return [reply for _, reply in self.exchanges]

    def cut(self) -> bool:
        """Whether the last reply is an answer its cap cut (chat completions or Responses)."""
        reply = self.replies[-1] if self.exchanges else None
        if not isinstance(reply, dict):
            return False
        choices = reply.get("choices") or [{}]
        return bool(choices[0].get("finish_reason") == "length" or reply.get("status") == "incomplete")

    def checked_answers(self) -> int:
        """Check every whole answer asked under a format: valid under the schema a request sent,
        or an object for ``json_object``. Returns how many there were."""
        checked = 0
        for sent, reply in self.exchanges:
            form = sent.get("response_format") or (sent.get("text") or {}).get("format")
            text = _answer_text(reply)
            if not isinstance(form, dict) or text is None or form.get("type") == "text":
                continue
            value = json.loads(text)
            if form["type"] == "json_object":
                assert isinstance(value, dict), text
            else:
                jsonschema.validate(value, (form.get("json_schema") or form)["schema"])
            checked += 1
        return checked


def _answer_text(reply: Any) -> str | None:
    """A reply's answer when it is one and whole, ``None`` for a call, a cut answer or an error."""
    if not isinstance(reply, dict):
        return None
    if "choices" in reply:
        [choice] = reply["choices"]
        return choice["message"]["content"] if choice["finish_reason"] == "stop" else None
    if reply.get("status") != "completed":
        return None
    texts = [
        part["text"]
        for item in reply.get("output", [])
        if item.get("type") == "message"
        for part in item["content"]
        if part.get("type") == "output_text"
    ]
    return "".join(texts) if texts else None


def typed_or_cut(wire: Wire, run: Callable[[], T]) -> T | None:
    """What ``run`` returns, or ``None`` where it failed on an answer its cap cut, the one other
    outcome the server leaves a framework (whatever the framework raises for it); any other
    failure is raised."""
    try:
        return run()
    except Exception:
        if wire.cut():
            return None
        raise


def langchain_structured(
    url: str,
    wire: Wire,
    method: Literal["function_calling", "json_mode", "json_schema"],
    **options: Any,
) -> dict[str, Any]:
    """``ChatOpenAI(...).with_structured_output(Note, method=method, include_raw=True)`` asked
    :data:`ASK`: the raw message, the parsed value and the parsing error."""
    from langchain_openai import ChatOpenAI

    with wire.client() as http:
        model = ChatOpenAI(
            base_url=url,
            api_key="unused",
            model="local",
            max_retries=0,
            timeout=TIMEOUT,
            http_client=http,
            **options,
        )
        structured = model.with_structured_output(Note, method=method, include_raw=True)
        result: dict[str, Any] = structured.invoke(ASK)
        return result


def langgraph_run(
    url: str, wire: Wire, tools: Sequence[Callable[..., Any]], choices: Sequence[str] = ()
) -> dict[str, Any]:
    """LangGraph's ``create_react_agent(model, tools, response_format=Note)`` run on :data:`ASK`:
    its final state, ``structured_response`` among it. With ``choices``, the n-th step's model is
    bound under the n-th ``tool_choice`` (the last for the steps after): a run of known length."""
    from langchain_core.messages import AIMessage
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from langgraph.warnings import LangGraphDeprecatedSinceV10

    with wire.client() as http:
        model = ChatOpenAI(
            base_url=url, api_key="unused", model="local", max_retries=0, timeout=TIMEOUT, http_client=http
        )

        def per_step(state: Any, runtime: Any) -> Any:
            steps = sum(isinstance(message, AIMessage) for message in state["messages"])
            return model.bind_tools(tools, tool_choice=choices[min(steps, len(choices) - 1)])

        with warnings.catch_warnings():
            # LangGraph 1 moved the prebuilt agent to langchain.agents; it is what is tested here.
            warnings.simplefilter("ignore", LangGraphDeprecatedSinceV10)
            agent = create_react_agent(per_step if choices else model, tools, response_format=Note)
        state: dict[str, Any] = agent.invoke({"messages": [{"role": "user", "content": ASK}]})
        return state


def langchain_agent_run(
    url: str, wire: Wire, tools: Sequence[Callable[..., Any]], strategy: Literal["auto", "provider"]
) -> dict[str, Any]:
    """LangChain 1's ``create_agent(model, tools, response_format=...)`` run on :data:`ASK`: its
    final state. ``auto`` is ``Note`` itself, which for a model name LangChain does not know
    is ``ToolStrategy`` (a tool the model must call); ``provider`` is ``ProviderStrategy(Note)``."""
    from langchain.agents import create_agent
    from langchain.agents.structured_output import ProviderStrategy
    from langchain_openai import ChatOpenAI

    with wire.client() as http:
        model = ChatOpenAI(
            base_url=url, api_key="unused", model="local", max_retries=0, timeout=TIMEOUT, http_client=http
        )
        typed: Any = Note if strategy == "auto" else ProviderStrategy(Note)
        agent = create_agent(model, list(tools), response_format=typed)
        state: dict[str, Any] = agent.invoke({"messages": [{"role": "user", "content": ASK}]})
        return state


async def agents_run(
    url: str,
    wire: Wire,
    api: Literal["chat", "responses"],
    tools: Sequence[Any] = (),
    tool_choice: str | None = None,
    *,
    stream: bool = False,
) -> RunResult | RunResultStreaming:
    """The OpenAI Agents SDK's ``Agent(output_type=Note)`` run by ``Runner.run`` on :data:`ASK`
    (``Runner.run_streamed`` with ``stream``, its events read to the end), through
    ``OpenAIChatCompletionsModel`` or ``OpenAIResponsesModel``."""
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        Runner,
        set_tracing_disabled,
    )

    set_tracing_disabled(True)  # its traces would go to OpenAI
    async with (
        wire.async_client() as http,
        openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, http_client=http) as client,
    ):
        kind = OpenAIChatCompletionsModel if api == "chat" else OpenAIResponsesModel
        agent = Agent(
            name="notes",
            instructions="Answer from the notes.",
            model=kind(model="local", openai_client=client),
            model_settings=ModelSettings(tool_choice=tool_choice, max_tokens=128),
            output_type=Note,
            tools=list(tools),
        )
        if not stream:
            return await Runner.run(agent, ASK, max_turns=4)
        streamed = Runner.run_streamed(agent, ASK, max_turns=4)
        async for _ in streamed.stream_events():
            pass
        return streamed


async def pydantic_ai_run(
    url: str,
    wire: Wire,
    output: Literal["native", "prompted", "tool"],
    tools: Sequence[Callable[..., Any]] = (),
    *,
    stream: bool = False,
) -> Note:
    """pydantic-ai's ``Agent(output_type=NativeOutput(Note))`` (``PromptedOutput``, or ``Note``
    itself: its default, a tool the model is made to call) over ``OpenAIChatModel`` with an
    ``OpenAIProvider`` on the server, run on :data:`ASK` (by ``run_stream`` with ``stream``): its
    output."""
    from pydantic_ai import Agent, NativeOutput, PromptedOutput
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.settings import ModelSettings

    async with (
        wire.async_client() as http,
        openai.AsyncOpenAI(base_url=url, api_key="unused", max_retries=0, http_client=http) as client,
    ):
        typed: Any = {"native": NativeOutput(Note), "prompted": PromptedOutput(Note), "tool": Note}[output]
        agent = Agent(
            OpenAIChatModel("local", provider=OpenAIProvider(openai_client=client)),
            output_type=typed,
            tools=list(tools),
            model_settings=ModelSettings(max_tokens=128),
            retries=1,
        )
        if not stream:
            note: Note = (await agent.run(ASK)).output
            return note
        async with agent.run_stream(ASK) as run:
            streamed: Note = await run.get_output()
            return streamed


def instructor_note(url: str, wire: Wire, mode: Literal["JSON_SCHEMA", "TOOLS"] = "JSON_SCHEMA") -> Note:
    """instructor's ``from_openai(client, mode=Mode.JSON_SCHEMA)`` (or ``Mode.TOOLS``, its default:
    a forced call) asked for a :class:`Note`."""
    import instructor

    with (
        wire.client() as http,
        openai.OpenAI(base_url=url, api_key="unused", max_retries=0, http_client=http) as sdk,
    ):
        client = instructor.from_openai(sdk, mode=instructor.Mode[mode])
        note: Note = client.chat.completions.create(
            model="local",
            response_model=Note,
            messages=[{"role": "user", "content": ASK}],
            max_tokens=128,
            max_retries=0,
        )
        return note
