"""The core's engine, in no API's shape: one request served, whole or in pieces: at most one
routed decision, then the answer when the decision is ``none``. (vLLM's ``serving_*`` modules
are one per API: here each front's ``reader`` and ``writer``, over this one engine.)

A decision makes one call, or with ``max_calls`` above 1 (and the request's
``parallel_tool_calls`` not false) up to that many, each under its own call id. With a
``shortlist`` of K, a request of more than K tools is offered the K its ``ranker`` ranks best
(``plan``): by default the process's ``default_ranker``, whose index of each catalogue is kept.

The client drives its own loop, so the server never runs a tool and never asks twice: a reply
that is not a valid action (cut at the routing cap, or from a server that ignores the route)
is the backend's failure, answered 502 with what was wrong. A ``response_format``'s schema is
checked against the backend's grammar compiler before the first request (``output_format``).
Beside a decision that offers ``none``, the schema is the route's ``none``'s answer (``plan``):
that ``none`` is the reply's content, and no second request is made; cut at the cap (the
routing cap and the answer's tokens together) once the answer has begun, the reply is what
the answer had so far, finished by ``length``.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from collections.abc import AsyncGenerator, Sequence

from ..._backends import (
    AsyncBackend,
    Message,
    ReasoningTags,
    TextDelta,
    Usage,
)
from ..._errors import BackendResponseError, CatalogueError, ChatRequestError, GrammarError
from ..._grounding import AbstainPolicy, abstention, checked_policy, conversation_evidence
from ..._limits import DEFAULT_MAX_REPEATS, DEFAULT_ROUTING_CAP, SERVE_ANSWER_TOKENS, SERVE_ROUTE_CACHE
from ..._loop import RunLimits
from ..._result_messages import routed_call_id
from ..._route_schema import route_schema
from ..._routed_backend import routed_backend
from ..._settings import Settings
from ..._shortlist import Ranker
from ..request_log import RequestRecord
from .call_pieces import CallStream, ThoughtStream, backend_pieces, several_pieces
from .conversation import Conversation, conversation_of
from .decision_reply import accepted_calls, held_answer
from .exchange import FinishReason, Piece, Reply, ServeRequest, ToolCall
from .output_format import checked_format, refused_in_route, refused_schema
from .plan import (
    Decision,
    Offer,
    answer_messages,
    answer_settings,
    checked_shortlist,
    decision_of,
    decision_settings,
    offer_of,
    served_ranker,
)

__all__ = ["THOUGHT_TOKENS_PER_CHARACTER", "RoutedEngine"]

#: The most tokens one character of a ``thought`` can take: a ``\\uXXXX`` escape, six bytes, each
#: its own token at worst. The decision's cap grows by this much for each character of the slot.
THOUGHT_TOKENS_PER_CHARACTER = 6


class RoutedEngine:
    """A backend served with its decisions routed, in no API's shape: ``reply`` for a whole
    reply, ``stream`` for its pieces, ``sent`` for what the backend's first request carries."""

    def __init__(
        self,
        backend: AsyncBackend,
        *,
        cap: int = DEFAULT_ROUTING_CAP,
        answer_tokens: int = SERVE_ANSWER_TOKENS,
        max_calls: int = 1,
        shortlist: int | None = None,
        abstain: AbstainPolicy = "off",
        ranker: Ranker | None = None,
        max_repeats: int = DEFAULT_MAX_REPEATS,
    ) -> None:
        route_schema([], max_calls=max_calls)  # refuses a bad max_calls now, not at a request
        self.max_repeats = RunLimits(max_repeats=max_repeats).max_repeats  # refused now, as the loop does
        self.abstain = checked_policy(abstain)
        self.backend = backend
        self.cap = cap
        self.max_calls = max_calls
        self.shortlist = checked_shortlist(shortlist)
        self.ranker = served_ranker(ranker, self.shortlist)
        self.answer_tokens = answer_tokens
        self.spaced = bool(getattr(backend.settings, "spaced", False))
        # A model with reasoning tags of its own reasons in them (a backend's ``reasoning_budget``).
        self.tags: ReasoningTags | None = getattr(backend, "reasoning_tags", None)
        # The one cache: each catalogue and choice a client sends, built once.
        self._routes = functools.lru_cache(maxsize=SERVE_ROUTE_CACHE)(self._route)

    async def reply(
        self, request: ServeRequest, record: RequestRecord | None = None, built: Conversation | None = None
    ) -> Reply:
        """The whole reply to ``request``; ``record``, when given, is told its offer and outcome;
        ``built`` is its :meth:`conversation` where a front has built it already."""
        record = record or RequestRecord(api="")
        self._check_format(request)
        conversation, planned = self._prepared(request, record, built)
        used = Usage()
        abstained = None
        thought = None
        withheld = () if planned is None else planned[0].withheld
        if planned is not None:
            decision, decider = planned
            try:
                completion = await decider.complete(list(decision.messages))
            except GrammarError as error:
                raise self._refused_route(request, decision, error) from None
            held = held_answer(decision, completion, spaced=self.spaced)
            if held is not None:
                content, truncated, thought = held
                finish: FinishReason = "length" if truncated else "stop"
                record.answered(completion.usage)
                return Reply(
                    content=content,
                    call=None,
                    finish_reason=finish,
                    usage=completion.usage,
                    thought=thought,
                    withheld=withheld,
                )
            calls, thought = accepted_calls(
                decision, completion, conversation, cap=self.cap, spaced=self.spaced
            )
            abstained = self._abstained(decision, calls, conversation)
            if calls and abstained is None:
                record.answered(completion.usage, [call.name for call in calls])
                return Reply(
                    content=None,
                    call=calls[0],
                    more_calls=calls[1:],
                    finish_reason="tool_calls",
                    usage=completion.usage,
                    thought=thought,
                    withheld=withheld,
                )
            used = completion.usage
        try:
            asked = answer_messages(request, conversation, abstained=abstained)
            answer = await self._answerer(request).complete(asked)
        except GrammarError as error:
            raise self._refused(request, error) from None
        usage = _sum(used, answer.usage)
        record.answered(usage, abstained=abstained)
        return Reply(
            content=answer.text,
            call=None,
            finish_reason="length" if answer.truncated else "stop",
            usage=usage,
            thought=thought,
            withheld=withheld,
            abstained=abstained,
        )

    async def stream(
        self, request: ServeRequest, record: RequestRecord | None = None, built: Conversation | None = None
    ) -> AsyncGenerator[Piece]:
        """The reply to ``request`` in pieces: a tool call's head, then its arguments as they are
        written; or the answer's text as it comes. Usage is the last piece. ``record`` and
        ``built`` are :meth:`reply`'s."""
        record = record or RequestRecord(api="")
        self._check_format(request)
        conversation, planned = self._prepared(request, record, built)
        used = Usage()
        abstained = None
        if planned is not None:
            decision, decider = planned
            if decision.withheld:
                yield Piece(withheld=decision.withheld)
            call_id = routed_call_id(conversation.calls + 1)
            # A call written as its object alone streams as it is written; an array of calls
            # (which the stream never takes for an object) goes out call by call once whole.
            # A decision that may be abstained from goes out only once whole and held against
            # the conversation: a call begun cannot be taken back.
            stream = CallStream(decision.names, call_id, spaced=self.spaced)
            live = self.abstain == "off" or not decision.handoff
            thoughts = ThoughtStream(spaced=self.spaced) if decision.thought is not None else None
            completion = None
            try:
                async for item in backend_pieces(decider, list(decision.messages)):
                    if isinstance(item, TextDelta) and item.reasoning:
                        yield Piece(thought=item.text)  # the model's own reasoning, in its tags
                    elif isinstance(item, TextDelta):
                        text = item.text
                        if thoughts is not None:
                            parts, text = thoughts.feed(text)
                            for part in parts:
                                yield Piece(thought=part)
                        for piece in stream.feed(text) if live else ():
                            yield piece
                    else:
                        completion = item
            except GrammarError as error:
                raise self._refused_route(request, decision, error) from None
            if completion is None:  # pragma: no cover - a streaming backend always ends with one
                raise BackendResponseError("the backend's stream ended without its completion")
            held = held_answer(decision, completion, spaced=self.spaced)
            if held is not None:
                content, truncated, thought = held
                for part in [] if thoughts is None else thoughts.finish(thought):
                    yield Piece(thought=part)
                yield Piece(text=content, first=True)
                yield Piece(finish_reason="length" if truncated else "stop")
                record.answered(completion.usage)
                yield Piece(usage=completion.usage)
                return
            calls, thought = accepted_calls(
                decision, completion, conversation, cap=self.cap, spaced=self.spaced
            )
            for part in [] if thoughts is None else thoughts.finish(thought):
                yield Piece(thought=part)
            abstained = self._abstained(decision, calls, conversation)
            if calls and abstained is None:
                for piece in stream.finish(calls[0]) if len(calls) == 1 else several_pieces(calls):
                    yield piece
                yield Piece(finish_reason="tool_calls")
                record.answered(completion.usage, [call.name for call in calls])
                yield Piece(usage=completion.usage)
                return
            used = completion.usage
            if abstained is not None:
                yield Piece(abstained=abstained)
        answer, started = None, False
        try:
            asked = answer_messages(request, conversation, abstained=abstained)
            async for item in backend_pieces(self._answerer(request), asked):
                if isinstance(item, TextDelta):
                    if item.text:
                        # Until a piece comes, a failure can still be answered with its status.
                        yield Piece(text=item.text, first=not started)
                        started = True
                else:
                    answer = item
        except GrammarError as error:
            raise self._refused(request, error) from None
        if not started:
            yield Piece(text="", first=True)
        truncated = answer is not None and answer.truncated
        yield Piece(finish_reason="length" if truncated else "stop")
        usage = _sum(used, answer.usage if answer is not None else Usage())
        record.answered(usage, abstained=abstained)
        yield Piece(usage=usage)

    def sent(self, request: ServeRequest) -> list[Message]:
        """The messages the backend's first request for ``request`` carries: the decision's, with
        the catalogue's instructions, or the answer's when it asks for no decision."""
        conversation, planned = self._prepared(request)
        if planned is not None:
            return list(planned[0].messages)
        return answer_messages(request, conversation)

    async def prompt_tokens(self, request: ServeRequest) -> int | None:
        """The tokens of the backend's first request for ``request`` (:meth:`sent`) as the backend
        counts them where it can (its ``count_prompt_tokens``, as the embedded model's context check
        counts them), ``None`` where it cannot."""
        count = getattr(self.backend, "count_prompt_tokens", None)
        if not callable(count):
            return None
        counted = count(self.sent(request))
        if inspect.isawaitable(counted):
            counted = await counted
        return counted if isinstance(counted, int) and not isinstance(counted, bool) else None

    def conversation(self, request: ServeRequest) -> Conversation:
        """The request's messages as the conversation the backend is sent, in its layout and tags."""
        return conversation_of(request, spaced=self.spaced, max_calls=self.max_calls, tags=self.tags)

    def _prepared(
        self, request: ServeRequest, record: RequestRecord | None = None, built: Conversation | None = None
    ) -> tuple[Conversation, tuple[Decision, AsyncBackend] | None]:
        """The request's conversation (``built``, or built now), and the decision it asks for with
        the routed backend that makes it, if any; ``record`` is told how many tools it offers."""
        conversation = built or self.conversation(request)
        planned = self._planned(request, conversation)
        if record is not None and planned is not None:
            record.offered = len(planned[0].names)
        return conversation, planned

    def _planned(
        self, request: ServeRequest, conversation: Conversation
    ) -> tuple[Decision, AsyncBackend] | None:
        """The decision a request asks for and the routed backend that makes it, if any."""
        try:
            decision = decision_of(
                request,
                conversation,
                lambda key: self._routes(key).offer,
                max_calls=self.max_calls,
                shortlist=self.shortlist,
                ranker=self.ranker,
                tags=self.tags is not None,
                max_repeats=self.max_repeats,
            )
            if decision is None:
                return None
            # The route's settings with this request's sampling: a cheap copy, the schema shared.
            routed = decision_settings(self._routes(decision.key).settings, request)
            cap = self.cap
            if decision.thought is not None:  # the thought cannot push the action past the cap
                cap += decision.thought * THOUGHT_TOKENS_PER_CHARACTER
            if decision.answers:  # the route and the answer in one reply: both caps
                cap += request.max_tokens or self.answer_tokens
            if cap != self.cap:
                routed = routed.clone(max_tokens=cap)
            if decision.reasoning_budget is not None:
                return decision, self.backend.clone(
                    settings=routed, reasoning_budget=decision.reasoning_budget
                )
            return decision, self.backend.clone(settings=routed)
        except RecursionError:
            # A catalogue the checks accept can still nest past what copying its route allows.
            raise ChatRequestError("the tools' parameters nest too deeply to route", "tools") from None
        except CatalogueError as error:
            if not request.legacy_functions:
                raise
            # The catalogue came as the legacy functions: the entry is named where it was sent.
            at = "functions" if error.index is None else f"functions[{error.index}]"
            raise ChatRequestError(error.reason, at, code="invalid_tools") from None

    def _route(self, key: str) -> _Route:
        """A decision's offer and the backend's routed settings (``routed_backend`` copies the
        schema), for the last ``SERVE_ROUTE_CACHE`` keys."""
        offer = offer_of(key)
        return _Route(offer=offer, settings=routed_backend(self.backend, offer.schema, self.cap).settings)

    def _check_format(self, request: ServeRequest) -> None:
        """Refuse, before any request, a ``response_format`` the backend cannot guarantee."""
        if request.response_format is not None:
            checked_format(request.response_format, self.backend)

    def _refused(self, request: ServeRequest, error: GrammarError) -> Exception:
        """A grammar refused on the answer is the answer's schema's when it has one."""
        if request.response_format is None:
            return error
        return refused_schema(request.response_format, error)

    def _refused_route(self, request: ServeRequest, decision: Decision, error: GrammarError) -> Exception:
        """A grammar refused on a route whose ``none`` holds the answer is the answer's schema's
        when it refused a part of that schema: named under ``response_format``, as after ``none``."""
        output = request.response_format
        if not decision.answers or output is None:
            return error
        return refused_in_route(output, len(decision.names), error)

    def _abstained(
        self, decision: Decision, calls: Sequence[ToolCall], conversation: Conversation
    ) -> str | None:
        """Why the server abstains from a decision's ``calls``, ``None`` when they go out. Never
        under a ``tool_choice`` that demands a call: the client asked for one."""
        if self.abstain == "off" or not calls or not decision.handoff:
            return None
        parameters = self._routes(decision.key).offer.parameters
        made = [(call.name, json.loads(call.arguments), parameters.get(call.name, {})) for call in calls]
        found = abstention(self.abstain, made, conversation_evidence(conversation.messages))
        return None if found is None else found.reason

    def _answerer(self, request: ServeRequest) -> AsyncBackend:
        settings = answer_settings(self.backend.settings, request, self.answer_tokens)
        return self.backend.clone(settings=settings)


@dataclasses.dataclass(frozen=True, kw_only=True)
class _Route:
    offer: Offer
    settings: Settings


def _sum(first: Usage, second: Usage) -> Usage:
    return Usage(
        prompt_tokens=first.prompt_tokens + second.prompt_tokens,
        completion_tokens=first.completion_tokens + second.completion_tokens,
        cached_tokens=first.cached_tokens + second.cached_tokens,
    )
