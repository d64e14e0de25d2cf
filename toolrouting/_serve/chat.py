"""One request served: at most one routed decision, then the answer when the decision is ``none``.

The client drives its own loop, so the server never runs a tool and never asks twice: a reply
that is not a valid action (cut at the routing cap, or from a server that ignores the route)
is the backend's failure, answered 502 with what was wrong.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator
from typing import Any

from .._backends import AsyncBackend, Completion, TextDelta, Usage
from .._errors import BackendResponseError, ChatRequestError
from .._limits import DEFAULT_ROUTING_CAP, SERVE_ANSWER_TOKENS, SERVE_ROUTE_CACHE
from .._names import NONE_TOOL
from .._parse import parse_route, quote_reply
from .._result_messages import routed_call_id
from .._routed_backend import routed_backend
from .calls import CallStream
from .conversation import Conversation, arguments_text, conversation_of
from .plan import Decision, answer_messages, answer_settings, decision_of, decision_settings
from .request import ChatRequest, ToolCall
from .responses import Piece, Reply

__all__ = ["ServedChat"]


class ServedChat:
    """A backend served as chat completions: ``reply`` for a whole reply, ``stream`` for its pieces."""

    def __init__(
        self,
        backend: AsyncBackend,
        *,
        cap: int = DEFAULT_ROUTING_CAP,
        answer_tokens: int = SERVE_ANSWER_TOKENS,
    ) -> None:
        self.backend = backend
        self.cap = cap
        self.answer_tokens = answer_tokens
        self.spaced = bool(getattr(backend.settings, "spaced", False))
        # The routed settings of each catalogue and sampling: routed_backend copies the schema.
        self._routed: dict[tuple[object, ...], Any] = {}

    async def reply(self, request: ChatRequest) -> Reply:
        """The whole reply to ``request``."""
        conversation = conversation_of(request, spaced=self.spaced)
        decision, decider = self._planned(request, conversation)
        used = Usage()
        if decision is not None:
            completion = await decider.complete(list(decision.messages))
            call = self._accepted(decision, completion, conversation)
            if call is not None:
                return Reply(content=None, call=call, finish_reason="tool_calls", usage=completion.usage)
            used = completion.usage
        answer = await self._answerer(request).complete(answer_messages(request, conversation))
        return Reply(
            content=answer.text,
            call=None,
            finish_reason="length" if answer.truncated else "stop",
            usage=_sum(used, answer.usage),
        )

    async def stream(self, request: ChatRequest) -> AsyncGenerator[Piece]:
        """The reply to ``request`` in pieces: a tool call's head, then its arguments as they are
        written; or the answer's text as it comes. Usage is the last piece."""
        conversation = conversation_of(request, spaced=self.spaced)
        decision, decider = self._planned(request, conversation)
        used = Usage()
        if decision is not None:
            call_id = routed_call_id(conversation.calls + 1)
            calls = CallStream(decision.names, call_id, spaced=self.spaced)
            completion = None
            async for item in _pieces(decider, list(decision.messages)):
                if isinstance(item, TextDelta):
                    for delta in calls.feed(item.text):
                        yield Piece(delta=delta)
                else:
                    completion = item
            if completion is None:  # pragma: no cover - a streaming backend always ends with one
                raise BackendResponseError("the backend's stream ended without its completion")
            call = self._accepted(decision, completion, conversation)
            if call is not None:
                for delta in calls.finish(call):
                    yield Piece(delta=delta)
                yield Piece(delta={}, finish_reason="tool_calls")
                yield Piece(usage=completion.usage)
                return
            used = completion.usage
        answer, started = None, False
        async for item in _pieces(self._answerer(request), answer_messages(request, conversation)):
            if isinstance(item, TextDelta):
                if item.text:
                    # The role rides on the first piece: until a piece comes, a failure can still be
                    # answered with its status.
                    yield Piece(
                        delta={"role": "assistant", "content": item.text}
                        if not started
                        else {"content": item.text}
                    )
                    started = True
            else:
                answer = item
        if not started:
            yield Piece(delta={"role": "assistant", "content": ""})
        truncated = answer is not None and answer.truncated
        yield Piece(delta={}, finish_reason="length" if truncated else "stop")
        yield Piece(usage=_sum(used, answer.usage if answer is not None else Usage()))

    def _planned(self, request: ChatRequest, conversation: Conversation) -> tuple[Decision | None, Any]:
        """The decision a request asks for and the routed backend that makes it, if any."""
        try:
            decision = decision_of(request, conversation)
            return decision, None if decision is None else self._decider(request, decision)
        except RecursionError:
            # A catalogue the checks accept can still nest past what copying its route allows.
            raise ChatRequestError("the tools' parameters nest too deeply to route", "tools") from None

    def _decider(self, request: ChatRequest, decision: Decision) -> Any:
        key = (decision.key, request.temperature, request.top_p, request.seed)
        settings = self._routed.pop(key, None)
        if settings is None:
            base = self.backend.clone(settings=decision_settings(self.backend.settings, request))
            settings = routed_backend(base, decision.schema, self.cap).settings
            if len(self._routed) >= SERVE_ROUTE_CACHE:
                self._routed.pop(next(iter(self._routed)))
        self._routed[key] = settings  # the most recent last: the first is the one to drop
        return self.backend.clone(settings=settings)

    def _answerer(self, request: ChatRequest) -> Any:
        settings = answer_settings(self.backend.settings, request, self.answer_tokens)
        return self.backend.clone(settings=settings)

    def _accepted(
        self, decision: Decision, completion: Completion, conversation: Conversation
    ) -> ToolCall | None:
        """The call a decision makes, ``None`` for ``none``; a reply that is no valid action is refused."""
        route = parse_route(completion.text, decision.names)
        if completion.truncated:
            problem = f"it was cut off at the routing cap of {self.cap} tokens"
        elif not route.ok:
            problem = str(route.error)
        elif route.tool == NONE_TOOL and not decision.handoff:
            problem = "it is none, and the request's tool_choice demands a tool call"
        else:
            problem = None
        if problem is not None:
            raise BackendResponseError(
                f"the backend's reply is not a valid action: {problem} ({quote_reply(completion.text)}); "
                "check that the backend enforces the route schema"
            )
        if route.tool == NONE_TOOL or route.tool is None or route.text is None:
            return None
        arguments = arguments_text(route.text, route.tool, route.arguments or {}, spaced=self.spaced)
        return ToolCall(id=routed_call_id(conversation.calls + 1), name=route.tool, arguments=arguments)


async def _pieces(backend: Any, messages: Any) -> AsyncIterator[TextDelta | Completion]:
    """The backend's stream when it has one, else its whole completion as the only item.

    Left early (a client gone), the stream is closed at once, which ends the backend's request.
    """
    if not callable(getattr(backend, "stream", None)):
        yield await backend.complete(messages)
        return
    async with contextlib.aclosing(backend.stream(messages)) as items:
        async for item in items:
            yield item


def _sum(first: Usage, second: Usage) -> Usage:
    return Usage(
        prompt_tokens=first.prompt_tokens + second.prompt_tokens,
        completion_tokens=first.completion_tokens + second.completion_tokens,
    )
