"""What the grammar path guarantees, held on the forced path, on the real default model.

The backend is ``EmbeddedLlama()``: forced tokens by default. Each test drives the real
model in-process and asserts a guarantee of the grammar, the cap or our code (a reply valid
under the route and no longer than the grammar's longest, a named error, a cache, turns,
pieces that make up the reply, a prefix reused), never which action the model picks.
"""

from __future__ import annotations

import concurrent.futures
import copy
import itertools
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from support.catalogues import QUESTION, tool
from support.forced_cases import READ, SEARCH, conversation, routed
from support.gbnf_bound import max_bytes
from support.model import TEST_SEED, TEST_TEMPERATURE, TEST_THREADS

from toolrouting import (
    BackendError,
    Completion,
    EmbeddedLlama,
    GrammarError,
    Message,
    RoutingLoop,
    Settings,
    TextDelta,
    parse_route,
    preflight,
    route_grammar,
    route_schema,
    route_tool_names,
    routed_backend,
)
from toolrouting._errors import RepairsExhaustedError
from toolrouting._limits import EMBEDDED_PROMPT_BLOCK, GRAMMAR_CACHE_SIZE
from toolrouting._provider import ToolOutput

SAMPLING = Settings(max_tokens=64, temperature=TEST_TEMPERATURE, seed=TEST_SEED)
#: A catalogue the tool leaves unbounded: any number of labels, each of any length. Bounded
#: decisions (the default) give both a bound, so the grammar has a longest reply.
ISSUES = [
    tool(
        "issue_create",
        title={"type": "string"},
        labels={"type": "array", "items": {"type": "string"}},
    ),
    tool("issue_close", number={"type": "integer"}),
]


@pytest.fixture(scope="module")
def backend() -> Iterator[EmbeddedLlama]:
    with EmbeddedLlama(settings=SAMPLING, n_threads=TEST_THREADS, seed=TEST_SEED) as loaded:
        yield loaded


@pytest.mark.model
def test_forced_false_keeps_the_grammar_sampler() -> None:
    with EmbeddedLlama(settings=SAMPLING, n_threads=TEST_THREADS, forced_tokens=False) as sampler:
        assert not sampler.forced_tokens
        completion = routed(sampler, [SEARCH, READ]).complete(conversation([SEARCH, READ], "hi"))
    assert completion.raw is not None
    assert "choices" in completion.raw  # llama-cpp-python's own response: sampled under its grammar
    assert parse_route(completion.text, route_tool_names([SEARCH, READ])).ok


@pytest.mark.model
@pytest.mark.parametrize("temperature", [TEST_TEMPERATURE, 1.5])
def test_bounded_decisions_never_reach_a_cap_past_the_longest_reply(
    backend: EmbeddedLlama, temperature: float
) -> None:
    schema = route_schema(ISSUES)
    grammar = route_grammar(schema, bounded=True)
    assert grammar.max_bytes is not None
    assert grammar.max_bytes == max_bytes(grammar.gbnf)  # the bound, computed from the text itself
    cap = grammar.max_bytes + 1  # every token writes a byte: a reply of the longest text ends before it
    clone = routed_backend(backend.clone(settings=SAMPLING.clone(temperature=temperature)), schema, cap)
    prompt = "File an issue titled 'door latch' with these labels: " + ", ".join(f"l{n}" for n in range(40))
    for seed in range(3):
        completion = clone.clone(settings=clone.settings.clone(seed=TEST_SEED + seed)).complete(
            conversation(ISSUES, prompt)
        )
        assert parse_route(completion.text, route_tool_names(ISSUES)).ok, completion.text
        assert (completion.finish_reason, completion.truncated) == ("stop", False)
        assert len(completion.text.encode()) <= grammar.max_bytes


@pytest.mark.model
def test_a_schema_llguidance_refuses_is_a_grammar_error_before_any_token(backend: EmbeddedLlama) -> None:
    llama = backend._model.llama
    messages = conversation([SEARCH], "hello")
    routed(backend, [SEARCH]).complete(messages)
    held = (llama.n_tokens, llama.input_ids[: llama.n_tokens].tolist())
    # llguidance's own compiler (grammar="server") refuses 'not'; its preflight says so first.
    schema = {"type": "object", "properties": {"a": {"not": {"type": "string"}}}}
    predicted = [f for f in preflight(schema, "llguidance") if f.severity == "error"]
    assert [(f.pointer, f.keyword) for f in predicted] == [("/properties/a", "not")]
    refused = backend.clone(settings=SAMPLING.clone(json_schema=schema, grammar="server"))
    with pytest.raises(GrammarError, match=r"llguidance refused the JSON schema .*not.*preflight"):
        refused.complete(messages)
    with pytest.raises(GrammarError, match="llguidance refused"):
        list(refused.stream(messages))
    # Our grammar (the default) refuses what our compiler cannot express, with its pointer.
    ours = {"type": "object", "properties": {"t": {"prefixItems": [{"type": "string"}]}}}
    assert any(f.severity == "error" for f in preflight(ours, "toolrouting"))
    with pytest.raises(GrammarError) as caught:
        backend.clone(settings=SAMPLING.clone(json_schema=ours)).complete(messages)
    assert caught.value.pointer == "/properties/t"
    assert (llama.n_tokens, llama.input_ids[: llama.n_tokens].tolist()) == held  # the model was not touched


@pytest.mark.model
def test_a_compiled_route_is_reused_and_the_cache_is_bounded(backend: EmbeddedLlama) -> None:
    schema = route_schema([tool("cache_probe", q={"type": "string", "maxLength": 8})])
    messages = conversation([SEARCH], "Search for the latch.")
    before = backend.grammar_cache_info()
    assert before.maxsize == GRAMMAR_CACHE_SIZE
    routed_backend(backend, schema, 4).complete(messages)
    routed_backend(backend.clone(), copy.deepcopy(schema), 4).complete(messages)  # equal bytes: a hit
    after = backend.grammar_cache_info()
    assert (after.misses - before.misses, after.hits - before.hits) == (1, 1)
    reordered = {"anyOf": schema["anyOf"], "type": "object"}  # key order orders properties: another entry
    routed_backend(backend, reordered, 4).complete(messages)
    assert backend.grammar_cache_info().misses - after.misses == 1
    refused = backend.clone(settings=SAMPLING.clone(json_schema={"type": "strin"}, grammar="server"))
    for _ in range(2):  # a refusal is never cached: each request is refused anew
        size = backend.grammar_cache_info().currsize
        with pytest.raises(GrammarError):
            refused.complete(messages)
        assert backend.grammar_cache_info().currsize == size


class CountingDesk:
    """One tool that records every call it gets."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def tools_for_llm(self) -> list[dict[str, Any]]:
        return [tool("lookup", word={"type": "string", "maxLength": 20})]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolOutput:
        self.calls.append((name, arguments))
        return ToolOutput("a fastening that holds a door shut")


@pytest.mark.model
def test_a_reply_cut_at_the_cap_is_reported_and_never_dispatched(backend: EmbeddedLlama) -> None:
    # No token of this vocabulary that opens a reply holds a whole action (see the grammar
    # sampler's twin), so a cap of one token cuts every reply.
    desk = CountingDesk()
    loop = RoutingLoop(backend, desk, cap=1, max_repairs=1)
    with pytest.raises(RepairsExhaustedError, match="cut off at the completion cap of 1 token"):
        loop.run(QUESTION)
    assert desk.calls == []


@pytest.mark.model
def test_clones_on_two_threads_take_turns(backend: EmbeddedLlama, monkeypatch: pytest.MonkeyPatch) -> None:
    assert backend.forced_tokens
    forced = backend._model.decoding
    decode = forced.run
    turns: list[tuple[float, float]] = []
    guard = threading.Lock()

    def logged(*arguments: Any) -> Iterator[TextDelta | Completion]:
        start = time.monotonic()
        time.sleep(0.05)  # widen the window in which an unserialised second request would overlap
        try:
            yield from decode(*arguments)
        finally:
            with guard:
                turns.append((start, time.monotonic()))

    monkeypatch.setattr(forced, "run", logged)
    clone = routed(backend, [SEARCH, READ])
    prompts = ["Search for the latch.", "Read memory M2.", "Thanks, that is all."]
    with concurrent.futures.ThreadPoolExecutor(max_workers=len(prompts)) as pool:
        replies = list(pool.map(lambda p: clone.clone().complete(conversation([SEARCH, READ], p)), prompts))
    assert len(turns) == len(prompts)
    for (_, end), (next_start, _) in itertools.pairwise(sorted(turns)):
        assert end <= next_start, turns  # one request at a time, never two
    for reply in replies:
        assert parse_route(reply.text, route_tool_names([SEARCH, READ])).ok, reply.text


@pytest.mark.model
def test_temperature_top_p_and_seed_mean_what_they_mean(backend: EmbeddedLlama) -> None:
    messages = conversation([SEARCH, READ], "What did I write about the latch?")

    def reply(**changes: Any) -> str:
        return routed(backend, [SEARCH, READ], **changes).complete(messages).text

    greedy = reply(temperature=0.0, seed=1)
    assert reply(temperature=0.0, seed=2) == greedy  # greedy: the seed does not matter
    # A nucleus this small keeps only the likeliest token, whatever the temperature and seed.
    for seed in range(3):
        assert reply(temperature=1.5, top_p=1e-9, seed=seed) == greedy
        assert reply(temperature=1.5, top_k=1, seed=seed) == greedy


@pytest.mark.model
def test_a_stream_hands_out_the_forced_runs_as_they_are_evaluated(backend: EmbeddedLlama) -> None:
    clone = routed(backend, [SEARCH, READ], temperature=0.0)
    messages = conversation([SEARCH, READ], "Search for the latch.")
    items = list(clone.stream(messages))
    *pieces, last = items
    assert isinstance(last, Completion)
    assert all(isinstance(piece, TextDelta) and piece.text for piece in pieces)
    assert "".join(piece.text for piece in pieces) == last.text
    assert pieces[0].text.startswith('{"')  # forced: handed out before the model chose anything
    assert last.raw is not None
    assert 1 < len(pieces) <= last.usage.completion_tokens  # a forced run is one piece of many tokens
    whole = clone.complete(messages)
    assert (whole.text, whole.usage, whole.finish_reason) == (last.text, last.usage, last.finish_reason)


@pytest.mark.model
def test_a_stream_cut_at_the_cap_is_truncated_and_a_stop_string_ends_it(backend: EmbeddedLlama) -> None:
    *_, cut = routed_backend(backend, route_schema([SEARCH]), 2).stream(conversation([SEARCH], "hi"))
    assert isinstance(cut, Completion)
    assert (cut.finish_reason, cut.truncated, cut.usage.completion_tokens) == ("length", True, 2)
    *pieces, stopped = routed(backend, [SEARCH], stop=('"',)).stream(conversation([SEARCH], "hi"))
    assert [piece.text for piece in pieces if isinstance(piece, TextDelta)] == ["{"]
    assert isinstance(stopped, Completion)
    assert (stopped.text, stopped.finish_reason) == ("{", "stop")


@pytest.mark.model
def test_a_later_round_reuses_the_prefix_the_model_holds(backend: EmbeddedLlama) -> None:
    clone = routed(backend, [SEARCH, READ])
    first_round = conversation([SEARCH, READ], "What did I write about the latch?")
    first = clone.complete(first_round)
    assert first.raw is not None
    second_round: list[Message] = [
        *first_round,
        {"role": "assistant", "content": first.text},
        {"role": "user", "content": "Tool result for memory_search (call route-1):\n[]"},
    ]
    second = clone.complete(second_round)
    assert second.raw is not None
    # The first request's prompt is in the model's context: from the end of its last whole block
    # of the prompt cache on, the rest is evaluated.
    assert second.raw["reused_prompt_tokens"] >= first.usage.prompt_tokens - EMBEDDED_PROMPT_BLOCK
    assert second.raw["seconds_to_first_choice"] is None or second.raw["seconds_to_first_choice"] > 0


@pytest.mark.model
def test_a_closed_backend_refuses_a_stream(backend: EmbeddedLlama) -> None:
    clone = routed(backend, [SEARCH])
    clone.close()
    with pytest.raises(BackendError, match="closed"):
        list(clone.stream(conversation([SEARCH], "hi")))


CHOICES = {"ours": ("ours", False), "spaced": ("ours", True), "server": ("server", False)}


@pytest.mark.model
@pytest.mark.parametrize("choice", CHOICES)
def test_each_grammar_choice_decodes_to_its_own_spelling(backend: EmbeddedLlama, choice: str) -> None:
    grammar, spaced = CHOICES[choice]
    clone = routed(backend, [SEARCH, READ], grammar=grammar, spaced=spaced)
    completion = clone.complete(conversation([SEARCH, READ], "What did I write about the latch?"))
    route = parse_route(completion.text, route_tool_names([SEARCH, READ]))
    assert route.ok, completion.text
    assert (completion.finish_reason, completion.truncated) == ("stop", False)
    # Ours spaced writes one space after each ':' and ','; ours compact and llguidance's compiler none.
    between = outside_strings(completion.text)
    compact = between.replace(": ", ":").replace(", ", ",") if spaced else between
    assert " " not in compact
    if spaced:
        assert len(between) - len(compact) == compact.count(":") + compact.count(",")


def outside_strings(text: str) -> str:
    """``text`` with every JSON string literal taken out: the structure and its whitespace."""
    kept, inside, escaped = [], False, False
    for char in text:
        if inside:
            inside, escaped = (escaped or char != '"'), (not escaped and char == "\\")
        elif char == '"':
            inside = True
        else:
            kept.append(char)
    return "".join(kept)


def test_a_route_past_the_parser_limits_is_a_grammar_error_that_names_the_sampler(
    backend: EmbeddedLlama, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Fault injection: limits far below the shipped ones make llguidance stop on an ordinary
    # route mid-reply, as a grammar past FORCED_PARSER_LIMITS would. The shipped limits decode
    # the hostile 600-property route (tests/grammar/test_grammar_parser_differential.py).
    import toolrouting._backends.embedded.forced_grammar as forced_grammar

    tight = {"max_items_in_row": 1, "step_max_items": 1, "step_lexer_fuel": 1}
    monkeypatch.setattr(forced_grammar, "FORCED_PARSER_LIMITS", tight)
    catalogue = [tool(f"t{i}", **{f"p{j}": {"type": "string"} for j in range(8)}) for i in range(4)]
    with pytest.raises(GrammarError) as caught:
        routed(backend, catalogue).complete(conversation(catalogue, "Call a tool."))
    assert "forced_tokens=False" in str(caught.value), caught.value
    assert "llguidance could not compute" in str(caught.value) or "llguidance refused" in str(caught.value)
