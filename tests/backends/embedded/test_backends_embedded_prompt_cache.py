"""The embedded model's prompt cache on the real default model (SmolLM2-135M-Instruct, in-process).

The differential: a scripted agent conversation (decisions and answers alternating, a second
question over the same instructions, a stream) sent to a backend with its prompt cache, and each
of its requests sent cold to a backend that keeps no state; the replies are the same bytes, on
both decoders. Then the bound: states evicted least recently used first, a prompt whose state
alone is over the limit kept nowhere, and a model loaded again starting with nothing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from support.catalogues import tool
from support.model import TEST_THREADS, demo_cap, guaranteed_cap

from toolrouting import (
    AsyncEmbeddedLlama,
    Completion,
    Event,
    Message,
    PromptCacheInfo,
    ReplyReceived,
    RoundStarted,
    Settings,
    TextDelta,
    route_schema,
    routed_backend,
    run_batch,
)
from toolrouting._backends.embedded.backend import EmbeddedLlama
from toolrouting.demo import MemoryStore

pytestmark = pytest.mark.model

TOOLS = [
    tool("memory_search", query={"type": "string", "maxLength": 30}),
    tool("memory_read", id={"type": "string", "enum": ["M1", "M2", "M3"]}),
]

# Long enough that each prompt spans several blocks of the cache (64 tokens).
RULES = " ".join(
    f"Rule {n}: the notes about the {thing} are kept in the {place}, and a question about them is "
    "answered from the notes alone."
    for n, (thing, place) in enumerate(
        [
            ("generator", "shed"),
            ("latch", "storage room"),
            ("radio", "hut"),
            ("stove", "kitchen"),
            ("water filter", "pantry"),
            ("keys", "hall"),
            ("boat", "boathouse"),
            ("lamp", "attic"),
        ],
        1,
    )
)
DECIDE = f"You route each request to one of the tools memory_search or memory_read, or to none. {RULES}"
ANSWER = f"You answer the user's question from what was found. {RULES}"
FIRST = "What does the latch on the storage-room door do?"
SECOND = "How do I start the generator?"
ACTION = '{"tool":"memory_search","arguments":{"query":"latch"}}'
RESULT = (
    "Tool result for memory_search (call route-1):\nM2: the latch closes itself when the door swings shut."
)
FOUND = "\n".join(
    [
        "What was found:",
        RESULT.split("\n", 1)[1],
        "",
        f"Question: {FIRST}",
        "Answer the question in one sentence.",
    ]
)


def _user(text: str) -> Message:
    return {"role": "user", "content": text}


def _turn(system: str, question: str, *after: Message) -> list[Message]:
    return [{"role": "system", "content": system}, _user(question), *after]


AFTER_ACTION: list[Message] = [{"role": "assistant", "content": ACTION}, _user(RESULT)]
#: The conversation's requests, in order: (routed, streamed, messages).
SCRIPT: list[tuple[bool, bool, list[Message]]] = [
    (True, False, _turn(DECIDE, FIRST)),
    (False, False, _turn(ANSWER, FOUND)),
    (True, False, _turn(DECIDE, FIRST, *AFTER_ACTION)),
    (
        False,
        False,
        _turn(ANSWER, SECOND, {"role": "assistant", "content": "Pull the cord twice."}, _user(FOUND)),
    ),
    (True, True, _turn(DECIDE, SECOND)),
    (True, False, _turn(DECIDE, SECOND, *AFTER_ACTION)),
    (False, True, _turn(ANSWER, FOUND)),
]
GREEDY = Settings(temperature=0.0, seed=0, max_tokens=24)
COLD: list[Message] = [{"role": "user", "content": "Hi."}]
"""A request that shares less than a block with any of the script's: the next one starts cold."""


def _load(**options: Any) -> EmbeddedLlama:
    return EmbeddedLlama(settings=GREEDY, n_threads=TEST_THREADS, **options)


def _send(backend: EmbeddedLlama, routed: bool, streamed: bool, messages: list[Message]) -> Completion:
    target = (
        routed_backend(backend, route_schema(TOOLS), guaranteed_cap(route_schema(TOOLS)))
        if routed
        else backend
    )
    if not streamed:
        return target.complete(messages)
    *pieces, last = target.stream(messages)
    assert isinstance(last, Completion)
    assert "".join(piece.text for piece in pieces if isinstance(piece, TextDelta)) == last.text
    return last


@pytest.fixture(params=[True, False], ids=["forced", "grammar"], scope="module")
def decoder(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture(scope="module")
def cold_replies(decoder: bool) -> list[tuple[str, str | None, int]]:
    """Each request of the script sent cold, to a backend that keeps no state."""
    replies = []
    with _load(forced_tokens=decoder, prompt_cache_mb=0) as backend:
        for routed, streamed, messages in SCRIPT:
            backend.complete(COLD)
            before = backend.prompt_cache_info().reused_tokens
            reply = _send(backend, routed, streamed, messages)
            assert backend.prompt_cache_info().reused_tokens == before, (
                "the reference request did not start cold"
            )
            replies.append((reply.text, reply.finish_reason, reply.usage.completion_tokens))
        assert backend.prompt_cache_info().states == 0
    return replies


def test_cached_replies_are_the_bytes_of_cold_ones(
    decoder: bool, cold_replies: list[tuple[str, str | None, int]]
) -> None:
    with _load(forced_tokens=decoder) as backend:
        replies = []
        for routed, streamed, messages in SCRIPT:
            reply = _send(backend, routed, streamed, messages)
            replies.append((reply.text, reply.finish_reason, reply.usage.completion_tokens))
        info = backend.prompt_cache_info()
    assert replies == cold_replies
    # The conversation took prefixes from kept states (each answer after a decision, the second
    # question's decision) and from the context (a decision after the one it extends), or the
    # comparison would prove nothing.
    assert info.restored >= 3
    assert info.restored_tokens >= 3 * 64
    assert info.reused_tokens > info.restored_tokens


def test_a_routed_reply_says_what_its_prompt_reused() -> None:
    with _load() as backend:
        routed = routed_backend(backend, route_schema(TOOLS), guaranteed_cap(route_schema(TOOLS)))
        first = routed.complete(SCRIPT[0][2])
        backend.complete(SCRIPT[1][2])  # another prefix in the context
        again = routed.complete(SCRIPT[0][2])
    prompt = first.usage.prompt_tokens
    assert first.raw is not None
    assert again.raw is not None
    assert (first.raw["reused_prompt_tokens"], first.raw["restored_prompt_tokens"]) == (0, 0)
    # All of the prompt's whole blocks come back from the state; the rest is evaluated again.
    assert again.raw["restored_prompt_tokens"] == again.raw["reused_prompt_tokens"] == (prompt - 1) // 64 * 64
    assert again.text == first.text


def test_the_usage_counts_the_prompt_tokens_the_cache_held(decoder: bool) -> None:
    with _load(forced_tokens=decoder) as backend:
        first = _send(backend, True, False, SCRIPT[0][2])
        whole = _send(backend, True, False, SCRIPT[0][2])
        streamed = _send(backend, True, True, SCRIPT[0][2])
    held = (first.usage.prompt_tokens - 1) // 64 * 64  # the prompt's whole blocks but its last token
    assert first.usage.cached_tokens == 0
    assert whole.usage.cached_tokens == streamed.usage.cached_tokens == held > 0
    assert streamed.usage.prompt_tokens == whole.usage.prompt_tokens == first.usage.prompt_tokens


def test_states_are_evicted_least_recently_used_first_within_the_limit() -> None:
    prompts: list[list[Message]] = [
        [{"role": "user", "content": f"{n} {RULES}"}] for n in ("One.", "Two.", "Three.")
    ]
    with _load() as probe:
        probe.complete(prompts[0])
        one = probe.prompt_cache_info().bytes
    limit = -(-2 * one // (1 << 20))  # megabytes for two of these states, not three
    assert 2 * one <= limit << 20 < 3 * one, f"a state of {one} bytes does not make this test's case"
    with _load(prompt_cache_mb=limit) as backend:
        backend.complete(prompts[0])
        backend.complete(prompts[1])
        backend.complete(prompts[0])  # used again: the second is now the least recently used
        backend.complete(prompts[2])
        info = backend.prompt_cache_info()
        assert info.states == 2
        assert info.bytes <= info.limit_bytes
        assert info.peak_bytes <= info.limit_bytes
        restored = info.restored
        backend.complete(prompts[0])  # kept
        assert backend.prompt_cache_info().restored == restored + 1
        backend.complete(prompts[1])  # evicted: evaluated again
        assert backend.prompt_cache_info().restored == restored + 1


def test_a_prompt_whose_state_is_over_the_limit_is_answered_and_not_kept() -> None:
    messages: list[Message] = [{"role": "user", "content": RULES}]
    with _load(prompt_cache_mb=0) as reference:
        expected = reference.complete(messages).text
    with _load(prompt_cache_mb=1) as backend:
        assert backend.complete(messages).text == expected
        info = backend.prompt_cache_info()
    assert (info.too_large, info.states, info.bytes, info.peak_bytes) == (1, 0, 0, 0)


def test_a_model_loaded_again_starts_with_no_states() -> None:
    messages = SCRIPT[0][2]
    first = _load()
    expected = first.complete(messages).text
    assert first.prompt_cache_info().states == 1
    clone = first.clone()
    assert clone.prompt_cache_info().states == 1  # the clones share the model and its states
    clone.close()
    first.close()
    assert (first.prompt_cache_info().states, first.prompt_cache_info().bytes) == (0, 0)
    with _load() as again:
        reply = again.complete(messages)
        info = again.prompt_cache_info()
    assert reply.text == expected
    assert (info.restored, info.reused_tokens, info.states) == (0, 0, 1)


def test_the_async_backend_shares_the_prompt_cache() -> None:
    import anyio

    async def twice(backend: AsyncEmbeddedLlama) -> list[str]:
        return [(await backend.complete(SCRIPT[n][2])).text for n in (0, 1, 0)]

    backend = AsyncEmbeddedLlama(_load())
    texts = anyio.run(twice, backend)
    info = backend.backend.prompt_cache_info()
    anyio.run(backend.aclose)
    assert texts[0] == texts[2]
    assert info.restored == 1


def test_a_batch_over_one_catalogue_evaluates_the_shared_instructions_once(tmp_path: Path) -> None:
    questions = tmp_path / "questions.jsonl"
    asked = [FIRST, SECOND, "Which key opens the storage room?"]
    lines = [json.dumps({"id": f"q{n}", "question": q}) + "\n" for n, q in enumerate(asked, 1)]
    questions.write_text("".join(lines), encoding="utf-8")
    first_decisions: list[tuple[int, int, int]] = []
    with _load() as backend:
        before: list[PromptCacheInfo] = []

        def observe(question: str, event: Event) -> None:
            if isinstance(event, RoundStarted) and event.round == 1:
                before.append(backend.prompt_cache_info())
            elif isinstance(event, ReplyReceived) and event.round == 1 and event.routed:
                after = backend.prompt_cache_info()
                evaluated = after.evaluated_tokens - before[-1].evaluated_tokens
                first_decisions.append(
                    (event.usage.prompt_tokens, evaluated, after.restored - before[-1].restored)
                )

        run_batch(
            questions, tmp_path / "out", backend=backend, tools=MemoryStore.sample, concurrency=1,
            system=RULES, answer=True, cap=demo_cap(), on_event=observe,
        )  # fmt: skip
    (prompt, evaluated, _), *later = first_decisions
    assert evaluated == prompt  # the first question pays for the instructions
    assert len(later) == len(asked) - 1
    for prompt, evaluated, restored in later:
        # The answer before held the context: the shared instructions come back from a state,
        # and what is evaluated is the question, with at most a block before it.
        assert restored == 1
        assert evaluated < 64 + 40 < prompt // 3


@pytest.mark.parametrize(("options", "limit"), [([], None), (["--prompt-cache-mb", "3"], 3)])
def test_the_command_line_sets_the_prompt_cache(options: list[str], limit: int | None) -> None:
    from toolrouting._cli.parser import build_parser
    from toolrouting._cli.run import model_backend

    args = build_parser().parse_args(["run", FIRST, "--threads", str(TEST_THREADS), "--quiet", *options])
    backend = model_backend(args)
    assert isinstance(backend, EmbeddedLlama)
    with backend:
        # None: the default, four whole contexts' states within a quarter of the free memory.
        rule = min(4 * backend.n_ctx * (backend.context.kv_bytes_per_token or 0), _quarter(backend))
        expected = rule >> 20 if limit is None else limit
        assert backend.prompt_cache_info().limit_bytes == expected << 20


def _quarter(backend: EmbeddedLlama) -> int:
    free = backend.context.available_bytes
    assert free is not None
    return free // 4


@pytest.mark.parametrize("value", [-1, 1.5, True, "64"])
def test_prompt_cache_mb_is_a_whole_number_of_megabytes(value: Any) -> None:
    with pytest.raises(ValueError, match="prompt_cache_mb"):
        EmbeddedLlama(prompt_cache_mb=value)
