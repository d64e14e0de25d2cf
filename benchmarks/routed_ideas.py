"""The ideas measured against the default routed decision, each a way of versus_native.py.

Three change what the model is told and nothing else (``Routed`` with other instructions):

- ``server-routed-none-first``: the sentence on ``none`` moved to the top of the instructions
  (the schema keeps ``none`` last);
- ``server-routed-no-example``: the instructions without their worked example (a made-up tool
  that no case's catalogue has): the default before the example was measured as an idea and
  adopted;
- ``server-routed-format``: the reply format told as the function call a chat template's tools
  section already describes.

``server-routed-two-step`` decides in two constrained requests. First a capped yes/no: told
the catalogue, the model answers whether a listed tool does what the user asks
(``{"answer": "yes"}`` or ``{"answer": "no"}``, nothing else possible). "no" is the decision
``none``, and the second step is skipped. "yes" asks for the tool: the default instructions,
the route's grammar without ``none`` (``route_schema(tools, handoff=False)``), so the model
chooses which tool and its arguments. This is KoboldCpp's tool poll, constrained on both
steps. Its cost is both requests: their prompt and completion tokens added, their seconds end
to end.

``embedded-routed-scored`` (:class:`Scored`) chooses the action by likelihood in-process, every
name scored whole on one evaluated prompt, then decodes the chosen tool's arguments under the
grammar; :func:`calibrated` fits a bias on ``none`` on half of its cases and tests it on the
other half.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from native_ways import Reply, Routed

from toolrouting import (
    Backend,
    Completion,
    Message,
    catalogue_prompt,
    parse_route,
    route_choices,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting._catalogue_prompt import _EXAMPLE as WORKED_EXAMPLE
from toolrouting._loop import instructed

#: The sentence of the rendered catalogue that says when to answer ``none``.
NONE_SENTENCE = 'Reply {"tool": "none"} when no tool above does what the user asks'


def none_first(tools: Sequence[dict[str, Any]]) -> str:
    """The loop's default instructions with the sentence on ``none`` moved up, before the tools
    (one of the ideas measured against the default; the schema keeps ``none`` last)."""
    text = catalogue_prompt(tools)
    start = text.index(NONE_SENTENCE)
    end = text.index(". ", start) + 2
    sentence = text[start:end].strip().replace(" above", "")
    return sentence + "\n" + text[:start] + text[end:]


def no_example(tools: Sequence[dict[str, Any]]) -> str:
    """The loop's default instructions without their worked example: the default before the
    example was measured and adopted (one of the ideas, kept to measure against the default)."""
    text = catalogue_prompt(tools)
    return text[: text.index("\n" + WORKED_EXAMPLE)]


#: Where the rendered catalogue's reply format starts: everything after it is the frame.
REPLY_FORMAT = "Reply with one JSON object and nothing else"

#: The reply format told as the function call a chat template's tools section already
#: describes (its ``{"name": <function-name>, "arguments": <args-json-object>}``), with
#: ``"tool"`` for the name and ``{"tool": "none"}`` as the reply that calls no function; the
#: sentence on when to answer ``none`` is the default's.
KNOWN_FORMAT = (
    "Your reply is your function call, the JSON object of a tool call and nothing else: "
    '{"tool": <function-name>, "arguments": <args-json-object>}, "tool" first. {"tool": "none"} '
    'calls no function: you answer the user yourself. Reply {"tool": "none"} when no tool above '
    "does what the user asks, or when no tool is needed (a greeting, thanks, general knowledge, "
    "or the tool results above already answer it). Otherwise call the tool that does what the "
    "user asks."
)


def known_format(tools: Sequence[dict[str, Any]]) -> str:
    """The loop's default instructions with their reply format told as :data:`KNOWN_FORMAT`
    (one of the ideas measured against the default)."""
    text = catalogue_prompt(tools)
    return text[: text.index(REPLY_FORMAT)] + KNOWN_FORMAT


#: The ideas that change only the instructions: each way's renderer of them.
VARIANTS: dict[str, Callable[[Sequence[dict[str, Any]]], str]] = {
    "server-routed-none-first": none_first,
    "server-routed-no-example": no_example,
    "server-routed-format": known_format,
}
TWO_STEP = "server-routed-two-step"
SCORED = "embedded-routed-scored"
IDEAS = (*VARIANTS, TWO_STEP, SCORED)


def idea_way(name: str, backend: Backend, cap: int) -> Routed | TwoStep | Scored:
    """The way ``name`` (one of :data:`IDEAS`) on ``backend`` (an embedded one for :data:`SCORED`)."""
    if name == SCORED:
        return Scored(backend, cap)
    return TwoStep(backend, cap) if name == TWO_STEP else Routed(backend, cap, VARIANTS[name])


#: The first step's completion cap: ``{"answer":"yes"}`` is under ten tokens.
YES_NO_CAP = 16

YES_NO_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no"]}},
    "required": ["answer"],
    "additionalProperties": False,
}

#: The first step's question, in place of the rendered catalogue's reply format; the cases for
#: "no" are those the default instructions give for ``none``.
QUESTION = (
    "Does a tool above do what the user asks? Reply with one JSON object and nothing else: "
    '{"answer": "yes"} when a tool above does what the user asks; {"answer": "no"} when no '
    "tool above does it, or when no tool is needed (a greeting, thanks, general knowledge, or the "
    "tool results above already answer it)."
)


def question(tools: Sequence[dict[str, Any]]) -> str:
    """The catalogue as the default instructions list it, then :data:`QUESTION`."""
    text = catalogue_prompt(tools)
    return text[: text.index(REPLY_FORMAT)] + QUESTION


class TwoStep:
    """A yes/no on whether a listed tool fits, then, on yes, the tool (``none`` not offered)."""

    def __init__(self, backend: Backend, cap: int) -> None:
        self.backend = backend
        self.cap = cap

    def decide(self, tools: list[dict[str, Any]], messages: list[Message]) -> Reply:
        reply = Reply(tool=None)
        started = time.perf_counter()
        asking = routed_backend(self.backend, YES_NO_SCHEMA, YES_NO_CAP)
        first = asking.complete(instructed(messages, question(tools), tools))
        self._count(reply, first)
        reply.text = first.text
        try:
            answer = json.loads(first.text)["answer"]
        except (ValueError, TypeError, KeyError) as error:
            reply.malformed = f"the yes/no reply does not parse: {error}"[:200]
            answer = None
        if answer == "yes":
            choosing = routed_backend(self.backend, route_schema(tools, handoff=False), self.cap)
            second = choosing.complete(instructed(messages, True, tools))
            self._count(reply, second)
            route = parse_route(second.text, route_tool_names(tools))
            reply.text = first.text + " " + second.text
            reply.tool = route.tool if route.ok else None
            reply.arguments = route.arguments if route.ok else None
            reply.malformed = None if route.ok else route.error
        reply.seconds = time.perf_counter() - started
        return reply

    @staticmethod
    def _count(reply: Reply, completion: Completion) -> None:
        reply.prompt_tokens += completion.usage.prompt_tokens
        reply.completion_tokens += completion.usage.completion_tokens
        reply.truncated = reply.truncated or completion.truncated


#: What every route's reply starts with, in our compact grammar: the name comes next.
REPLY_HEAD = '{"tool":"'


class Scored:
    """The action chosen by likelihood in-process, then its arguments decoded under the grammar.

    The conversation is told the catalogue as the default instructions tell it and formatted
    with the model's chat template; after it, the reply's forced head ``{"tool":"``. Every
    action's name and its closing quote is a path of tokens from there; the paths share a
    trie, and each of its inner nodes is evaluated once, one token after its parent, on the
    prompt evaluated once. An action's score is the sum of its tokens' log-probabilities. The
    decision is the best tool when its score beats ``none``'s plus ``bias`` (0 here: the plain
    likelihood; :func:`calibrated` finds a bias on one half of the cases and applies it to the
    other). A chosen tool's arguments are then decoded by the backend, forced tokens, under the
    route of that tool alone (``route_schema([tool], handoff=False)``), on the same prompt (its
    evaluated prefix reused). Tokens: the prompt's, and the name's plus the arguments' reply.
    """

    def __init__(self, backend: Any, cap: int, bias: float = 0.0) -> None:
        from toolrouting._backends.forced_decoding import _chat_formatter

        self.backend = backend
        self.cap = cap
        self.bias = bias
        self.model = backend._model  # the loaded llama_cpp.Llama and its lock, shared with the backend
        self.format = _chat_formatter(self.model.llama)

    def paths(self, told: Sequence[Message], choices: Sequence[str]) -> tuple[int, dict[str, list[int]]]:
        """Each action's tokens: the formatted conversation ``told``, the reply's head, the name
        and its closing quote; and how many tokens every path shares (a merge of the head's
        last token with a name can reach back into it)."""
        llama = self.model.llama
        formatted = self.format(messages=[{"role": m["role"], "content": m["content"]} for m in told])
        head = formatted.prompt + REPLY_HEAD

        def tokens(text: str) -> list[int]:
            return list(
                llama.tokenize(text.encode("utf-8"), add_bos=not formatted.added_special, special=True)
            )

        paths = {name: tokens(head + name + '"') for name in choices}
        base = tokens(head)
        shared = len(base)
        for path in paths.values():
            common = 0
            for mine, theirs in zip(base, path, strict=False):
                if mine != theirs:
                    break
                common += 1
            shared = min(shared, common)
        return shared, paths

    def decide(self, tools: list[dict[str, Any]], messages: list[Message]) -> Reply:
        import llama_cpp
        import numpy

        from toolrouting._backends.forced_decoding import _reuse_prefix

        started = time.perf_counter()
        told = instructed(messages, True, tools)
        llama = self.model.llama
        shared, paths = self.paths(told, route_choices(tools))
        base = next(iter(paths.values()))
        choices = list(paths)
        scores = dict.fromkeys(choices, 0.0)
        evaluated = 0
        with self.model.lock:
            reused = _reuse_prefix(llama, base[:shared])
            llama.eval(base[reused:shared])

            def logits() -> Any:
                pointer = llama_cpp.llama_get_logits_ith(llama.ctx, -1)
                values = numpy.ctypeslib.as_array(pointer, shape=(llama.n_vocab(),)).astype(numpy.float64)
                top = values.max()
                return values - (top + numpy.log(numpy.exp(values - top).sum()))

            # Depth first over the trie of the tails: each inner node evaluated once, and its
            # subtree scored before a sibling overwrites its place in the context.
            def walk(position: int, logprobs: Any, tails: dict[str, list[int]]) -> None:
                nonlocal evaluated
                groups: dict[int, dict[str, list[int]]] = {}
                for name, tail in tails.items():
                    if tail:
                        scores[name] += float(logprobs[tail[0]])
                        groups.setdefault(tail[0], {})[name] = tail[1:]
                for token, rest in groups.items():
                    if any(rest.values()):
                        llama.n_tokens = position
                        llama.eval([token])
                        evaluated += 1
                        walk(position + 1, logits(), rest)

            walk(shared, logits(), {name: path[shared:] for name, path in paths.items()})
        best = max(choices[:-1], key=scores.__getitem__, default=None)
        chosen = best if best is not None and scores[best] > scores["none"] + self.bias else None
        reply = Reply(
            tool=None, prompt_tokens=shared, completion_tokens=len(paths[chosen or "none"]) - shared
        )
        reply.detail = {
            "none": round(scores["none"], 4),
            "best": best,
            "best_score": None if best is None else round(scores[best], 4),
            "evaluated": evaluated,
            "scores": {name: round(score, 4) for name, score in scores.items()},
        }
        reply.text = REPLY_HEAD + (chosen or "none") + ('"' if chosen else '"}')
        if chosen is not None:
            only = [tool for tool in tools if tool["function"]["name"] == chosen]
            choosing = routed_backend(self.backend, route_schema(only, handoff=False), self.cap)
            completion = choosing.complete(told)
            route = parse_route(completion.text, [chosen])
            reply.completion_tokens = completion.usage.completion_tokens
            reply.truncated = completion.truncated
            reply.text = completion.text
            reply.tool = chosen
            reply.arguments = route.arguments if route.ok else None
            reply.malformed = None if route.ok else route.error
        reply.seconds = time.perf_counter() - started
        return reply


def calibrated(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """:data:`SCORED`'s decisions with a ``none`` bias found on the even-numbered cases (the
    bias with the best balanced accuracy there, the smallest on a tie) and applied to the
    odd-numbered ones, and the same split at bias 0, so the two can be set side by side."""

    def decide(record: dict[str, Any], bias: float) -> str | None:
        detail = record["detail"]
        best = detail["best"]
        return best if best is not None and detail["best_score"] > detail["none"] + bias else None

    def balanced(rows: Sequence[dict[str, Any]], bias: float) -> float:
        tool_rows = [r for r in rows if r["expect"] != ["none"]]
        none_rows = [r for r in rows if r["expect"] == ["none"]]
        rates = []
        if tool_rows:
            rates.append(sum(decide(r, bias) in r["expect"] for r in tool_rows) / len(tool_rows))
        if none_rows:
            rates.append(sum(decide(r, bias) is None for r in none_rows) / len(none_rows))
        return 100.0 * sum(rates) / len(rates) if rates else 0.0

    scored = [r for r in records if r.get("detail")]
    fit, held = scored[0::2], scored[1::2]
    margins = sorted(
        {round(r["detail"]["best_score"] - r["detail"]["none"], 4) for r in fit if r["detail"]["best"]}
    )
    candidates = [0.0] + [m - 1e-3 for m in margins] + [m + 1e-3 for m in margins]
    bias = max(sorted(candidates, key=abs), key=lambda b: balanced(fit, b))
    return {
        "bias": round(bias, 4),
        "fit_cases": len(fit),
        "held_cases": len(held),
        "fit_balanced_accuracy_pct": round(balanced(fit, bias), 1),
        "held_balanced_accuracy_pct": round(balanced(held, bias), 1),
        "held_balanced_accuracy_at_0_pct": round(balanced(held, 0.0), 1),
        "all_balanced_accuracy_at_0_pct": round(balanced(scored, 0.0), 1),
    }
