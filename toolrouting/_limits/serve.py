"""The named limits of ``toolrouting serve``, each with the reason it exists, and the one rule
of characters a token it estimates by (the package's other limits are in ``library``)."""

from __future__ import annotations

from .library import GBNF_MAX_REPETITION

__all__ = [
    "CHARS_PER_TOKEN",
    "SERVE_ANSWER_TOKENS",
    "SERVE_EMBEDDED_QUEUE",
    "SERVE_MAX_BODY_BYTES",
    "SERVE_MAX_IN_FLIGHT",
    "SERVE_REASONING_CAP",
    "SERVE_REASONING_EFFORTS",
    "SERVE_RETRY_AFTER",
    "SERVE_ROUTE_CACHE",
    "SERVE_STOP_GRACE",
    "SERVE_STORED_RESPONSES",
    "SERVE_UPSTREAM_RETRY_AFTER",
]

#: Bytes of a request body ``toolrouting serve`` reads; a longer one is answered 413. A chat
#: request is a conversation and a catalogue: 4 MB holds a million-character conversation
#: (far past any local model's window) and keeps one client from filling the server's memory.
SERVE_MAX_BODY_BYTES = 4_000_000

#: Tokens of an answer when a request sets no ``max_tokens`` (several clients send none). A
#: model that repeats itself must not hold the server for minutes: one irrelevant question to
#: a 0.5B model behind a native tool-calling server ran past 7,600 tokens in ten minutes.
#: 1024 tokens is a long answer, and at most about a minute on two cores for the default model.
SERVE_ANSWER_TOKENS = 1024

#: Requests the embedded model holds, the one it is running included; the next is answered
#: 429 with Retry-After. It runs one at a time: a deeper queue only makes each client wait
#: longer than its own timeout for an answer it then throws away.
SERVE_EMBEDDED_QUEUE = 8

#: Requests in flight to a server backend at once; past it, 429 with Retry-After. Many more
#: than any local serving engine batches, so it only bounds the proxy's own memory.
SERVE_MAX_IN_FLIGHT = 256

#: Seconds a busy ``toolrouting serve`` asks a client to wait (``Retry-After``): about one
#: embedded decision on two cores, so a retrying client finds a free place soon.
SERVE_RETRY_AFTER = 2

#: Seconds ``toolrouting serve`` asks a client to wait (``Retry-After``) after a backend failure
#: that may pass (unreachable, busy with a 429 or 503, or past its timeout) when the backend
#: named no wait of its own. A busy local server drains its queue in seconds, and the openai
#: SDK's two retries then span about ten seconds of it rather than one.
SERVE_UPSTREAM_RETRY_AFTER = 5

#: Seconds a request in flight is given to finish once ``toolrouting serve`` begins to stop
#: (Ctrl-C, SIGTERM); one still running then is answered 503 ``server_stopping`` in its API's
#: shape. uvicorn waits two seconds more before it cancels what is left, time for those answers
#: to go out. A routed decision on the embedded model takes about a second; a long answer or a
#: model's cold prompt is what a stop cuts short.
SERVE_STOP_GRACE = 3

#: Catalogues (with their tool_choice) whose rendered instructions and route ``toolrouting serve``
#: keeps. A client sends its whole catalogue with every request; building the route and the
#: instructions again took a third of the server's own time a request. An agent has a few.
#: Under ``--shortlist`` each set of tools offered is one, a few tools each.
SERVE_ROUTE_CACHE = 64

#: Responses ``toolrouting serve`` keeps for ``previous_response_id`` (and ``GET``), the oldest
#: evicted first. A client continuing a conversation names the response it just got: the last
#: one of each conversation in flight is all that is read, and each holds its whole conversation
#: (up to a body's SERVE_MAX_BODY_BYTES a turn), so a few hundred bound the memory they take.
SERVE_STORED_RESPONSES = 256

#: Characters of text for each token, where tokens are estimated without a tokenizer: the rule
#: of thumb for English text under the usual BPE vocabularies. The route's ``thought`` slot holds
#: this many characters for each token of a reasoning budget (the grammar bounds characters, not
#: tokens, so a thought of ordinary text takes about the budget); a reasoning item's tokens are
#: counted back so; and Messages' ``count_tokens`` counts so where the backend has no tokenizer.
CHARS_PER_TOKEN = 4

#: The largest reasoning budget, in tokens: the longest ``thought`` our grammar still bounds is
#: ``GBNF_MAX_REPETITION`` characters (past it the slot would be an unbounded string), at
#: ``CHARS_PER_TOKEN`` a token. A larger budget is served as this one: a budget
#: is the most a thought may take (the response's ``x-toolrouting-reasoning-budget`` says so).
SERVE_REASONING_CAP = GBNF_MAX_REPETITION // CHARS_PER_TOKEN

#: The budget, in tokens, of each effort level a client may name instead of a budget (Responses'
#: ``reasoning.effort``, chat's ``reasoning_effort``, Messages' ``output_config.effort`` with
#: ``thinking: {"type": "adaptive"}``); ``none`` asks for no reasoning. A budget is the client's
#: choice: a request that names none gets no reasoning phase.
SERVE_REASONING_EFFORTS = {
    "minimal": 32,
    "low": 64,
    "medium": 128,
    "high": 256,
    "xhigh": 384,
    "max": SERVE_REASONING_CAP,
}
