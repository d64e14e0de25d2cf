"""A reply the model reasons before, in its own syntax: its chat template's ``<think>`` tags.

A backend cloned with ``reasoning_budget=N`` on a model whose template has reasoning tags
(:attr:`ChatPrompt.tags`) decodes one reply in two runs over one context. First the thought: the
prompt opened with the open tag (where the template's generation prompt does not open it already),
then free text sampled for at most ``N`` tokens, stopped at the close tag or the end of the turn.
Then the reply: the thought closed as reasoning templates write it (``\\n</think>\\n\\n``), and the
reply decoded after it as any request is, under the request's grammar where it has one. So a
reply keeps every guarantee of its grammar and cap, and the thought is bounded by its own budget.

The thought comes back apart (:attr:`Completion.reasoning`, as written; its pieces as
``TextDelta(reasoning=True)``); the usage counts the thought's tokens, the tags'
and the reply's as completion tokens, and ``raw["reasoning_tokens"]`` the thought's alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from ..base import Completion, TextDelta, Usage
from .chat_prompt import ChatPrompt, FormattedPrompt
from .decoding import Conversation, Decoding, Pieces, Sampling, checked_fit

__all__ = ["thought_then_reply"]


def thought_then_reply(
    decoding: Decoding,
    chat: ChatPrompt,
    llama: Any,
    conversation: Conversation,
    compiled: Any,
    sampling: Sampling,
    budget: int,
    stream: bool,
) -> Pieces:
    """The thought's pieces, the reply's, then the whole :class:`Completion` (module docstring)."""
    tags = chat.tags
    assert tags is not None, "a reasoning budget is refused on a model without reasoning tags"
    formatted = chat.format(conversation)
    # The conversation's own length is what is refused, as a request without a thought counts it.
    checked_fit(len(formatted.tokens), llama.n_ctx())
    opening = chat.opening(formatted.tokens)
    opened = formatted.tokens + opening
    # The thought ends at the close tag or the turn's end, and the request's stop strings are
    # the reply's: a stop string in the thought would cut the reasoning, not the answer.
    thought_sampling = dataclasses.replace(sampling, max_tokens=budget, stop=())
    thought = None
    asked = FormattedPrompt(tokens=opened, stops=[tags.close, *formatted.stops])
    for item in decoding.run_tokens(llama, asked, None, thought_sampling, stream):
        if isinstance(item, Completion):
            thought = item
        elif item.text:
            yield TextDelta(item.text, reasoning=True)
    assert thought is not None, "a decoding ends with its completion"
    written = thought.text.rstrip()
    # The close tag's tokens apart from the thought's, so that the usage counts them as the tags'.
    closing = chat.tokens(tags.closing(""))
    prompt = opened + (chat.tokens(written) if written else []) + closing
    reply = None
    replying = FormattedPrompt(tokens=prompt, stops=formatted.stops)
    for item in decoding.run_tokens(llama, replying, compiled, sampling, stream):
        if isinstance(item, Completion):
            reply = item
        else:
            yield item
    assert reply is not None, "a decoding ends with its completion"
    tokens = thought.usage.completion_tokens
    yield dataclasses.replace(
        reply,
        usage=Usage(
            prompt_tokens=len(formatted.tokens),
            completion_tokens=len(opening) + tokens + len(closing) + reply.usage.completion_tokens,
            cached_tokens=min(thought.usage.cached_tokens, len(formatted.tokens)),
        ),
        raw={**(reply.raw or {}), "reasoning_tokens": tokens},
        reasoning=thought.text,
    )
