"""What one request asks of the backend: the decision (route, messages, settings) and the answer.

``tool_choice`` picks the route: ``auto`` offers every tool and ``none``; ``required`` every
tool without ``none``; a named function that tool alone, without ``none``; ``none`` asks no
decision at all. The instructions render the whole catalogue, as a run renders its run-start
catalogue once and narrows only the grammar: the system message, and with it the prefix a
server caches, is the same whichever choice a request makes.

A server with a shortlist of ``K`` narrows a request of more than ``K`` tools: the tools its
``tool_choice`` leaves (every tool, the ``allowed_tools`` list, or the named tool) are ranked
against the conversation, its user messages and tool results (``shortlist``, by the server's
ranker: the default indexes each catalogue once, keyed on its bytes, so a client that sends
the same tools with every request pays its index once), and the best ``K`` kept, in catalogue
order; ``K`` or fewer are kept whole, unranked. The instructions and
the route then list those alone, and the offer is keyed by them, so two requests that offer
the same tools share one. A request of ``K`` tools or fewer is planned as without a shortlist.

The answer after a ``none`` (or for ``tool_choice: "none"``) is asked as the loop asks it
(``answer_conversation``): the client's system and developer messages as one system message,
the conversation's earlier turns (questions and answers in words, the newest that fit), then the
loop's answer request, the question and this turn's results in one user message. Without
tools, the request is a plain chat and its messages go to the backend as they are. Either way a
``response_format``'s schema is the answer's: the answer is decoded under it.

The client runs the loop, so the server applies the loop's repeat rule to the conversation it
is sent: since the question, a call (tool and arguments, compared as JSON values) whose result is
there and that was made more than ``max_repeats`` times is not offered again. The route cannot
leave out one arguments object, so the call's tool is withheld from the tools the choice
leaves, before a shortlist ranks them; without a shortlist the instructions still list the
whole catalogue, the prefix a server caches. The model routes another tool or ``none``.

A decision that offers ``none`` beside a ``response_format`` asks no answer after it: its
route's ``none`` holds the answer under the schema (``{"tool":"none","answer":...}``,
``route_schema(..., answer_schema=S)``), so one request decides and answers (docs/serve-reference.md).
The instructions are the same as without the schema; the offer's key holds it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from ..._backends import Message
from ..._catalogue_checks import checked_catalogue
from ..._catalogue_prompt import catalogue_prompt
from ..._errors import CatalogueError, ChatRequestError
from ..._limits import CHARS_PER_TOKEN, DEFAULT_MAX_REPEATS
from ..._loop import THOUGHT_NOTE, answer_conversation, instructed, repeated_tools
from ..._route_schema import route_schema, route_tool_names
from ..._settings import Settings
from ..._shortlist import Ranker, checked_ranker, default_ranker
from ..._shortlist import shortlist as shortlisted
from .conversation import Conversation, ends_with_user
from .exchange import ServeRequest

__all__ = [
    "Decision",
    "Offer",
    "answer_messages",
    "answer_settings",
    "checked_shortlist",
    "checked_tools",
    "decision_of",
    "decision_settings",
    "offer_of",
    "served_ranker",
    "shortlisted_tools",
]


@dataclasses.dataclass(frozen=True, kw_only=True)
class Offer:
    """What a catalogue and a choice offer a decision: the catalogue's instructions, the route
    schema, the names it offers and whether ``none`` is among them."""

    instructions: str
    schema: dict[str, Any]
    names: tuple[str, ...]
    handoff: bool
    answers: bool = False
    """Whether ``none`` holds the answer under the request's ``response_format``."""
    parameters: Mapping[str, dict[str, Any]] = dataclasses.field(default_factory=dict)
    """Each offered tool's parameters schema, by name: what abstention holds a call against."""


@dataclasses.dataclass(frozen=True, kw_only=True)
class Decision:
    """One routed decision: the conversation with the instructions, the route and what it offers."""

    messages: tuple[Message, ...]
    schema: dict[str, Any]
    names: tuple[str, ...]
    handoff: bool
    """Whether ``none`` is offered (``tool_choice: "auto"``)."""
    key: str
    """The tools offered (the catalogue, or its shortlist) and the choice, as one text: two
    requests with the same key route alike."""
    max_calls: int = 1
    """The most calls the decision may make: the server's ``max_calls``, or 1 when the request
    sets ``parallel_tool_calls`` false."""
    answers: bool = False
    """Whether the route's ``none`` holds the answer (``tool_choice`` auto and a ``response_format``)."""
    thought: int | None = None
    """The characters of the route's ``thought`` slot, when the request asks for reasoning."""
    reasoning_budget: int | None = None
    """The tokens the model reasons in its own tags before the route, when the request asks for
    reasoning and the backend's model has reasoning tags (then the route has no ``thought`` slot)."""
    withheld: tuple[str, ...] = ()
    """The tools ``tool_choice`` leaves that the route does not offer: the conversation made a call
    of each past the repeat limit (``max_repeats``), its result there. In catalogue order."""


def decision_of(
    request: ServeRequest,
    conversation: Conversation,
    offers: Callable[[str], Offer] | None = None,
    *,
    max_calls: int = 1,
    shortlist: int | None = None,
    ranker: Ranker | None = None,
    tags: bool = False,
    max_repeats: int | None = DEFAULT_MAX_REPEATS,
) -> Decision | None:
    """The decision a request asks for, ``None`` when it asks only for text.

    ``offers`` finds the offer of a key (a server keeps them: a client sends the same catalogue
    with every request, and building one is a third of a request's time); without it, the offer
    is built (:func:`offer_of`). ``max_calls`` is the server's: the instructions always say it,
    so the system message is the same whatever a request's ``parallel_tool_calls``, and the
    route takes that many calls unless the request sets ``parallel_tool_calls`` false.
    ``shortlist`` is the server's too: the most tools a decision offers, every tool when ``None``,
    ranked by ``ranker`` (``None``: :func:`default_ranker`). ``tags``: the backend's model has
    reasoning tags of its own, so a request's reasoning is spent in them, not in the route's slot.
    ``max_repeats`` is the loop's repeat limit, applied to the conversation since its question: a
    tool one of whose calls was made (its result there) more than that many times is withheld
    (``Decision.withheld``); ``None`` withholds none.
    """
    choice = request.tool_choice
    if not request.tools or choice.mode == "none":
        return None
    calls = max_calls if request.parallel_tool_calls else 1
    chosen, withheld = _unrepeated(request, conversation, max_repeats)
    asked: list[Any] = [request.tools, choice.mode, chosen]
    if shortlist is not None and len(request.tools) > shortlist:
        asked = [shortlisted_tools(request, conversation, shortlist, ranker, chosen), choice.mode, None]
    answer = request.response_format if choice.mode == "auto" else None
    reasoning_budget = None if request.reasoning is None or not tags else request.reasoning.budget
    thought = None if tags else thought_chars(request)
    # One call's key, without an answer's schema or a thought, stays the key it always was.
    if max_calls > 1 or answer is not None or thought is not None:
        asked += [max_calls, calls]
    if answer is not None or thought is not None:
        asked.append(None if answer is None else answer.schema)
    if thought is not None:
        asked.append(thought)
    key = json.dumps(asked, separators=(",", ":"))
    offer = (offers or offer_of)(key)
    if not ends_with_user(conversation.messages):
        raise ChatRequestError(
            "a tool decision answers a user or tool message, and the messages end with an assistant's",
            "messages",
        )
    return Decision(
        messages=tuple(instructed(conversation.messages, offer.instructions, request.tools)),
        schema=offer.schema,
        names=offer.names,
        handoff=offer.handoff,
        key=key,
        max_calls=calls,
        answers=offer.answers,
        thought=thought,
        reasoning_budget=reasoning_budget,
        withheld=withheld,
    )


def _unrepeated(
    request: ServeRequest, conversation: Conversation, max_repeats: int | None
) -> tuple[tuple[str, ...] | None, tuple[str, ...]]:
    """The tools the request's ``tool_choice`` leaves once the repeat limit has withheld those
    whose call the conversation made more than ``max_repeats`` times (``None``: every tool, when
    none is withheld), and the tools withheld, in catalogue order.

    The route offers one alternative per tool, and no grammar compiler we serve through leaves
    one arguments object out of another (``not`` is ignored, docs/grammar.md), so the repeat
    leaves its tool out, as a loop's repeat leaves a run only ``none``. A ``tool_choice`` that
    demands a call of the tools withheld alone cannot be answered: a 400 that says so.
    """
    choice = request.tool_choice
    spent = () if max_repeats is None else repeated_tools(conversation.made, max_repeats)
    if not spent:
        return choice.names, ()
    names = route_tool_names(list(request.tools))  # the whole catalogue checked, so an error names its index
    offered = [name for name in names if choice.names is None or name in choice.names]
    withheld = tuple(name for name in offered if name in spent)
    if not withheld:
        return choice.names, ()
    left = tuple(name for name in offered if name not in spent)
    if not left and choice.mode == "required":
        quoted = ", ".join(json.dumps(name) for name in withheld)
        one = len(withheld) == 1
        raise ChatRequestError(
            f"{quoted} {'is' if one else 'are'} withheld: since its question the conversation made a "
            f"call of {'it' if one else 'each'} more than max_repeats ({max_repeats}) times, its "
            'result there, and the choice demands a call; send "auto" (the model may answer) or a '
            "new question",
            "tool_choice",
            code="repeated_call",
        )
    return left, withheld


def thought_chars(request: ServeRequest) -> int | None:
    """The characters of the ``thought`` slot a request's reasoning budget buys, ``None`` without one."""
    reasoning = request.reasoning
    return None if reasoning is None else reasoning.budget * CHARS_PER_TOKEN


def checked_tools(tools: list[dict[str, Any]], paths: list[str]) -> None:
    """Check a catalogue a front declared from another shape (a namespace's tools flattened, a
    deferred tool to be left out), so an error names a tool where it was sent: ``paths[i]`` is
    where ``tools[i]`` is in the body."""
    try:
        route_tool_names(tools)
    except CatalogueError as error:
        at = "tools" if error.index is None else paths[error.index]
        raise ChatRequestError(error.reason, at, code="invalid_tools") from None


def shortlisted_tools(
    request: ServeRequest,
    conversation: Conversation,
    k: int,
    ranker: Ranker | None = None,
    chosen: tuple[str, ...] | None = None,
) -> list[dict[str, Any]]:
    """The tools a decision offers under a shortlist of ``k``: the ``k`` of those ``chosen`` (the
    tools the request's ``tool_choice`` leaves, once the repeat limit withheld any; every tool when
    ``None``) that ``ranker`` ranks best for the conversation, in catalogue order."""
    tools = list(request.tools)
    if chosen is not None:
        names = route_tool_names(tools)  # the whole catalogue checked, so an error names its index
        tools = [tool for tool, name in zip(tools, names, strict=True) if name in chosen]
    # Unnarrowed, the ranked catalogue is the request's, checked there with the same indices.
    return shortlisted(tools, conversation.messages, k, ranker=ranker)


def offer_of(key: str) -> Offer:
    """The rendered catalogue and the route of a decision's key (a catalogue and a choice)."""
    tools, mode, chosen, *several = json.loads(key)
    told, calls, *rest = several or (1, 1)
    answer_schema = rest[0] if rest else None
    thought = rest[1] if len(rest) > 1 else None
    names = route_tool_names(tools)  # the whole catalogue checked, so an error names its index
    offered = [tool for tool, name in zip(tools, names, strict=True) if chosen is None or name in chosen]
    note = "" if thought is None else "\n" + THOUGHT_NOTE  # as the loop's instructions say it
    return Offer(
        instructions=catalogue_prompt(tools, max_calls=told) + note,
        schema=route_schema(
            offered, handoff=mode == "auto", max_calls=calls, answer_schema=answer_schema, thought=thought
        ),
        names=tuple(route_tool_names(offered)),
        handoff=mode == "auto",
        answers=answer_schema is not None,
        parameters={tool.name: tool.parameters for tool in checked_catalogue(offered)},
    )


def decision_settings(base: Settings, request: ServeRequest) -> Settings:
    """The backend's settings with the request's sampling; no stop strings, which could cut an action."""
    return base.clone(**_sampling(request), stop=())


def answer_settings(base: Settings, request: ServeRequest, default_tokens: int) -> Settings:
    """The backend's settings with the request's sampling, stop strings and cap (``default_tokens``
    when it sets none), and the schema of its ``response_format``: none for free text."""
    output = request.response_format
    named = {} if output is None else {"json_schema_name": output.name, "json_schema_strict": output.strict}
    return base.clone(
        **_sampling(request),
        **named,
        stop=request.stop,
        max_tokens=request.max_tokens or default_tokens,
        json_schema=None if output is None else output.schema,
    )


def _sampling(request: ServeRequest) -> dict[str, Any]:
    given = {
        "temperature": request.temperature,
        "top_p": request.top_p,
        "top_k": request.top_k,
        "seed": request.seed,
    }
    return {name: value for name, value in given.items() if value is not None}


def answer_messages(
    request: ServeRequest, conversation: Conversation, *, abstained: str | None = None
) -> list[Message]:
    """What the answer is asked with: as the loop asks it over tools, the messages without;
    after an abstention, its request says what was missing (``abstained``, the reason)."""
    if not request.tools:
        return list(conversation.messages)
    # The conversation holds no instructions: they go into a decision's messages alone.
    return answer_conversation(conversation.messages, conversation.question, abstained=abstained)


def checked_shortlist(shortlist: object) -> int | None:
    """The most tools a decision offers, ``None`` for every tool; anything but an int of at least
    1 is refused when the server is made, not at a request."""
    if shortlist is None:
        return None
    if isinstance(shortlist, bool) or not isinstance(shortlist, int):
        raise TypeError(
            f"shortlist is the most tools a decision offers, an int, not {type(shortlist).__name__}"
        )
    if shortlist < 1:
        raise ValueError(f"shortlist is the most tools a decision offers, at least 1, not {shortlist}")
    return shortlist


def served_ranker(ranker: Ranker | None, shortlist: int | None) -> Ranker | None:
    """The ranker of a shortlist, chosen (and the default's table loaded) when the server is made:
    ``ranker`` when given, else the process's :func:`default_ranker`; ``None`` without a shortlist."""
    chosen = checked_ranker(ranker, shortlist)
    return default_ranker() if chosen is None and shortlist is not None else chosen
