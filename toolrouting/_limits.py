"""Named limits, each with the reason it exists."""

from __future__ import annotations

__all__ = [
    "DEFAULT_MAX_REPAIRS",
    "DEFAULT_MAX_REPEATS",
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_PROMPT_CHARS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_RETRIES",
    "DEFAULT_ROUTING_CAP",
    "EMBEDDED_N_CTX",
    "GRAMMAR_CACHE_SIZE",
    "MAX_BODY_QUOTE",
    "MAX_REPLY_CHARS",
    "MAX_REPLY_QUOTE",
    "MAX_RESPONSE_BYTES",
    "MAX_RETRY_AFTER",
    "MAX_TOOL_ERROR_CHARS",
    "MEMORY_QUERY_CHARS",
    "MEMORY_QUERY_TERMS",
    "MEMORY_SEARCH_RESULTS",
    "PROMPT_DESCRIPTION_CHARS",
    "PROMPT_ENUM_VALUES",
    "PROMPT_NESTING",
    "PROMPT_PARAMETER_NOTE_CHARS",
    "PROMPT_SHORT_DESCRIPTION_CHARS",
    "PROMPT_VALUE_CHARS",
    "RETRY_BACKOFF_BASE",
    "RETRY_BACKOFF_MAX",
    "ROUTE_SCHEMA_NAME",
    "SHOWN_VALUE_CHARS",
    "VALID_SCHEMA_MEMORY",
]

#: Characters of a model's reply quoted in an error: enough to recognise it, never a flood.
MAX_REPLY_QUOTE = 64

#: Characters of a caller's value (a catalogue key, a type name's repr) quoted in an error.
SHOWN_VALUE_CHARS = 40

#: Characters of an HTTP error body quoted in an error.
MAX_BODY_QUOTE = 200

#: A routing reply longer than this is refused before it is decoded. An action is one
#: small JSON object under a completion cap of a few hundred tokens; a megabyte is far
#: beyond any real one and keeps decoding time and memory bounded.
MAX_REPLY_CHARS = 1_000_000

#: The completion cap a routing request gets unless the caller names another.
DEFAULT_ROUTING_CAP = 512

#: The name a routed backend gives its JSON schema on the wire.
ROUTE_SCHEMA_NAME = "tool_route"


#: Seconds an HTTP backend waits to connect, to send, and for each read of the answer, and
#: the most the whole answer may take to arrive (a server dribbling bytes never trips a read
#: timeout). A request without streaming sends nothing until generation ends, so this bounds
#: a whole completion: generous enough for a few hundred tokens on a CPU, short of hanging forever.
DEFAULT_REQUEST_TIMEOUT = 300.0

#: Bytes of an HTTP answer an HTTP backend reads before it gives up on it. A completion holds
#: one reply (a routing reply is refused past MAX_REPLY_CHARS, at most 6 bytes a character
#: once JSON-escaped) and a little metadata; a server sending more is broken or hostile, and
#: reading on would only fill memory.
MAX_RESPONSE_BYTES = 16_000_000

#: Rounds a routing run may take before it is told to hand off. A retrieval phase that
#: has not found what it needs in eight actions is looping, not searching.
DEFAULT_MAX_ROUNDS = 8

#: Times a refused reply is fed back for repair before the run fails. Under a grammar a
#: refusal means the server did not constrain; one repair tells a model that strays from
#: one that cannot follow the schema at all.
DEFAULT_MAX_REPAIRS = 1

#: Times the same call (tool and canonical arguments) may run again in one run. The first
#: repeat may be a model that lost a result; the second is a loop.
DEFAULT_MAX_REPEATS = 1

#: Retries of one request after a retryable backend error (refused, reset, timeout, 429, 5xx).
DEFAULT_RETRIES = 2

#: Seconds before the first retry; each further retry waits twice as long, up to the cap.
RETRY_BACKOFF_BASE = 0.5

#: The longest wait between retries of our own choosing.
RETRY_BACKOFF_MAX = 8.0

#: The longest server ``Retry-After`` a run waits for; a longer one fails the run now
#: rather than leaving it silent for minutes.
MAX_RETRY_AFTER = 60.0

#: Records one memory search returns: a few titles keep the result short for a small model.
MEMORY_SEARCH_RESULTS = 5

#: Characters a search query may have in the grammar: without a bound a small model can
#: write one string until the completion cap cuts the action off.
MEMORY_QUERY_CHARS = 80

#: Terms of a model's search query that are used; the rest are dropped, bounding the query.
MEMORY_QUERY_TERMS = 16

#: Context window of the embedded model unless the caller names another: room for a
#: routing conversation of several rounds, at a KV cache under 100 MB on the default model.
EMBEDDED_N_CTX = 4096

#: Distinct schemas whose llama.cpp grammar the embedded backend keeps. A run reuses one
#: route schema per catalogue; a few dozen covers narrowing catalogues without growing forever.
GRAMMAR_CACHE_SIZE = 32

#: Characters of a tool function's exception message put in its error result: the gist
#: for the model to act on, never a traceback flooding its context.
MAX_TOOL_ERROR_CHARS = 500

#: Distinct parameter schemas whose metaschema check route_schema remembers. The loop
#: rebuilds the route schema every round from a catalogue that mostly repeats; the memory
#: is cleared when full, so it never grows past this.
VALID_SCHEMA_MEMORY = 4096

#: Characters of the catalogue the model reads (catalogue_prompt) unless the caller names
#: another: about 2,000 to 2,500 tokens, half the embedded model's default context, so a
#: conversation of several rounds still fits beside it. Past it the rendering degrades, in
#: steps the text itself states (shorter descriptions, then parameters by name, then names).
DEFAULT_PROMPT_CHARS = 8_000

#: Characters of a tool's description in the rendered catalogue. A description is a cue for
#: choosing, not a manual: a few sentences say what a tool is for, and a page of text in one
#: entry would crowd out every other tool in a small model's attention and in the budget.
PROMPT_DESCRIPTION_CHARS = 300

#: Characters of a tool's description once the catalogue is over its budget: one sentence.
PROMPT_SHORT_DESCRIPTION_CHARS = 80

#: Characters of a parameter's description in the rendered catalogue.
PROMPT_PARAMETER_NOTE_CHARS = 120

#: Enum values the rendered catalogue shows for one parameter; the grammar holds them all.
PROMPT_ENUM_VALUES = 12

#: Characters of one shown value (an enum member, a default, a const), as JSON text.
PROMPT_VALUE_CHARS = 40

#: Levels of nested objects and arrays the rendered catalogue spells out; deeper ones are
#: named by their type alone ("object"), which the grammar still constrains in full.
PROMPT_NESTING = 2
