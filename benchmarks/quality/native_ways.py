"""The ways a user can ask a model for a tool decision, each behind one interface (versus_native.py).

A way answers ``decide(tools, messages)`` with one ``Reply`` (scoring.py): the tool it chose
(``None`` for no call), its arguments, whether the reply was malformed, whether it ran to the
cap, and its tokens and seconds. ``run_demo(question)`` runs a whole question over the demo
notes the way a user of that way would, to a final answer.

- ``server-native``: llama-server's own tool calling (started with ``--jinja``): ``tools`` and
  ``tool_choice: "auto"`` in the request, the model's chat template and llama.cpp's parser. No
  ``tool_calls`` in the reply counts as no call.
- ``embedded-native``: llama-cpp-python in-process, its ``chatml-function-calling`` chat
  handler with ``tool_choice="auto"``.
- ``json-mode``: llama-server with ``response_format`` a JSON object and the catalogue
  rendered by ``catalogue_prompt`` (the text a routed run sends), no tools and no schema.
- ``server-routed`` and ``embedded-routed``: ``RoutingLoop``'s first action, over the
  ``llama.cpp`` dialect and over the embedded backend, with the loop's defaults (our grammar,
  the rendered catalogue as instructions).

The native ways run a demo question as their users would: the tools offered each round,
every call run and answered with a ``tool`` message, until a reply calls no tool; that
reply is the answer.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from benchmarks.common.corpus import result_collector
from benchmarks.common.llama import decoding_llama
from benchmarks.common.scoring import Reply, native_reply
from toolrouting import (
    DEFAULT_MAX_ROUNDS,
    ActionChosen,
    Backend,
    Message,
    RepairRequested,
    ReplyReceived,
    RoutingLoop,
    ToolOutput,
    catalogue_prompt,
    parse_route,
    route_tool_names,
)
from toolrouting.demo import MemoryStore

#: Seconds one request may take: a 52-tool catalogue's prompt on two busy cores takes minutes.
REQUEST_TIMEOUT = 900.0


@dataclass
class DemoRun:
    """A demo question run to its end: the calls made, what the tools returned, the answer."""

    ended: str  # "handoff" (a reply without a call), or why not
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    results: list[str] = field(default_factory=list)
    answer: str | None = None
    seconds: float = 0.0


class CatalogueTools:
    """A provider that offers a fixed catalogue; a first-action benchmark never calls it."""

    def __init__(self, tools: Sequence[dict[str, Any]]) -> None:
        self.tools = list(tools)

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return self.tools

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        return ToolOutput("not run: only the first action is measured", is_error=True)


class NativeWay:
    """A way whose requests carry ``tools`` and ``tool_choice: "auto"`` and come back OpenAI-shaped."""

    def __init__(
        self, chat: Callable[[list[dict[str, Any]], list[dict[str, Any]]], dict[str, Any]], cap: int
    ) -> None:
        self.chat = chat
        self.cap = cap

    def decide(self, tools: list[dict[str, Any]], messages: list[Message]) -> Reply:
        started = time.perf_counter()
        body = self.chat([dict(m) for m in messages], tools)
        return native_reply(body, route_tool_names(tools), time.perf_counter() - started, self.cap)

    def run_demo(self, messages: list[Message]) -> DemoRun:
        started = time.perf_counter()
        conversation: list[dict[str, Any]] = [dict(m) for m in messages]
        run = DemoRun(ended="max_rounds")
        with MemoryStore.sample(titles=True) as store:
            for _ in range(DEFAULT_MAX_ROUNDS):
                tools = store.tools_for_llm()
                body = self.chat(conversation, tools)
                message = body["choices"][0].get("message") or {}
                calls = message.get("tool_calls") or []
                if not calls:
                    run.ended = "handoff"
                    run.answer = message.get("content") or ""
                    break
                conversation.append({"role": "assistant", "content": None, "tool_calls": calls})
                for call in calls:
                    function = call.get("function") or {}
                    output = _demo_call(store, function)
                    if not output.is_error:
                        run.calls.append((str(function.get("name")), _arguments(function)))
                        run.results.append(output.content)
                    conversation.append(
                        {"role": "tool", "tool_call_id": call.get("id", ""), "content": output.content}
                    )
        run.seconds = time.perf_counter() - started
        return run


def _arguments(function: dict[str, Any]) -> dict[str, Any]:
    raw = function.get("arguments")
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _demo_call(store: MemoryStore, function: dict[str, Any]) -> ToolOutput:
    name = str(function.get("name"))
    if name not in route_tool_names(store.tools_for_llm()):
        return ToolOutput(f"there is no tool {name[:40]!r} here", is_error=True)
    raw = function.get("arguments")
    if isinstance(raw, str):
        try:
            json.loads(raw)
        except ValueError:
            return ToolOutput("the arguments are not JSON", is_error=True)
    return store.call(name, _arguments(function))


def server_native(url: str, cap: int, seed: int) -> NativeWay:
    """llama-server's own tool calling: the model's template (``--jinja``) and llama.cpp's parser."""
    client = httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT)

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        request: dict[str, Any] = {"messages": messages, "max_tokens": cap, "temperature": 0.0, "seed": seed}
        if tools:
            request |= {"tools": tools, "tool_choice": "auto"}
        response = client.post("/v1/chat/completions", json=request)
        response.raise_for_status()
        return dict(response.json())

    return NativeWay(chat, cap)


def embedded_native(model: Path, cap: int, seed: int, n_ctx: int, threads: int | None) -> NativeWay:
    """llama-cpp-python's ``chatml-function-calling`` handler, in-process."""

    llama: Any = decoding_llama(
        model_path=str(model),
        chat_format="chatml-function-calling",
        n_ctx=n_ctx,
        n_threads=threads,
        seed=seed,
        verbose=False,
    )

    # The handler passes max_tokens=None to its inner completions (the arguments, a message
    # after "message:"), so one reply can write on to the end of the context: tens of minutes
    # on two cores. Each inner completion is capped here at the request's cap, as a user would
    # have to, and a reply with one that stopped at the cap counts as a runaway.
    inner = llama.create_completion
    capped: list[bool] = []

    def create_completion(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("max_tokens") is None or kwargs["max_tokens"] > cap:
            kwargs["max_tokens"] = cap
        completion = inner(*args, **kwargs)
        if not kwargs.get("stream") and completion["choices"][0].get("finish_reason") == "length":
            capped.append(True)
        return completion

    llama.create_completion = create_completion

    def chat(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> dict[str, Any]:
        options: dict[str, Any] = {"tools": tools, "tool_choice": "auto"} if tools else {}
        capped.clear()
        reply = dict(
            llama.create_chat_completion(
                messages=messages, max_tokens=cap, temperature=0.0, seed=seed, **options
            )
        )
        if capped:
            reply["choices"][0]["finish_reason"] = "length"
        # The handler reports the usage of its inner completions that wrote the arguments only:
        # their uncached prompt tokens, not the prompt, and not the tokens that chose the tool.
        return reply

    return NativeWay(chat, cap)


class JsonMode:
    """llama-server's JSON mode (any JSON object), told the catalogue as a routed run tells it."""

    def __init__(self, url: str, cap: int, seed: int) -> None:
        self.client = httpx.Client(base_url=url, timeout=REQUEST_TIMEOUT)
        self.cap = cap
        self.seed = seed

    def decide(self, tools: list[dict[str, Any]], messages: list[Message]) -> Reply:
        system: list[dict[str, Any]] = [{"role": "system", "content": catalogue_prompt(tools)}]
        request = {
            "messages": system + [dict(m) for m in messages],
            "max_tokens": self.cap,
            "temperature": 0.0,
            "seed": self.seed,
            "response_format": {"type": "json_object"},
        }
        started = time.perf_counter()
        response = self.client.post("/v1/chat/completions", json=request)
        response.raise_for_status()
        seconds = time.perf_counter() - started
        body = response.json()
        choice = body["choices"][0]
        text = (choice.get("message") or {}).get("content") or ""
        usage = body.get("usage") or {}
        route = parse_route(text, route_tool_names(tools))
        return Reply(
            tool=None if not route.ok or route.tool == "none" else route.tool,
            arguments=route.arguments if route.ok else None,
            malformed=None if route.ok else route.error,
            truncated=choice.get("finish_reason") == "length",
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            seconds=seconds,
            text=text,
        )


class Routed:
    """``RoutingLoop``'s first action on ``backend``, with the loop's defaults."""

    def __init__(self, backend: Backend, cap: int) -> None:
        self.backend = backend
        self.cap = cap

    def decide(self, tools: list[dict[str, Any]], messages: list[Message]) -> Reply:
        reply = Reply(tool=None)
        loop = RoutingLoop(self.backend, CatalogueTools(tools), cap=self.cap)
        started = time.perf_counter()
        for event in loop.iter_run(messages):
            if isinstance(event, ReplyReceived) and event.routed:
                reply.prompt_tokens = event.usage.prompt_tokens
                reply.completion_tokens = event.usage.completion_tokens
                reply.truncated = event.truncated
            elif isinstance(event, ActionChosen):
                reply.tool = None if event.tool == "none" else event.tool
                reply.arguments = event.arguments
                reply.text = event.text
                break
            elif isinstance(event, RepairRequested):
                reply.malformed = event.problem
                break
        reply.seconds = time.perf_counter() - started
        return reply

    def run_demo(self, messages: list[Message]) -> DemoRun:
        started = time.perf_counter()
        results, observe = result_collector()
        with MemoryStore.sample(titles=True) as store:
            loop = RoutingLoop(self.backend, store, cap=self.cap, answer=True, on_event=observe)
            result = loop.run(messages)
        calls = [(a.tool, a.arguments or {}) for a in result.actions if a.tool != "none"]
        return DemoRun(
            ended=result.reason,
            calls=calls,
            results=results,
            answer=result.answer,
            seconds=time.perf_counter() - started,
        )
