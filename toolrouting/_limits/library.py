"""Named limits of the library, each with the reason it exists (the server's are in ``serve``)."""

from __future__ import annotations

__all__ = [
    "ANSWER_CONTEXT_CHARS",
    "ANSWER_HISTORY_CHARS",
    "ANSWER_RESULT_CHARS",
    "BATCH_PROGRESS_INTERVAL",
    "BOUNDED_ARRAY_ITEMS",
    "BOUNDED_STRING_CHARS",
    "BOUNDED_VALUE_DEPTH",
    "DEFAULT_ANSWER_TOKENS",
    "DEFAULT_BATCH_CONCURRENCY",
    "DEFAULT_MAX_REPAIRS",
    "DEFAULT_MAX_REPEATS",
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_MCP_CALL_TIMEOUT",
    "DEFAULT_PROMPT_CHARS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_RETRIES",
    "DEFAULT_ROUTING_CAP",
    "EMBEDDED_MEMORY_SHARE",
    "EMBEDDED_MIN_N_CTX",
    "EMBEDDED_PROMPT_BLOCK",
    "EMBEDDED_PROMPT_CACHE_CONTEXTS",
    "EMBEDDED_PROMPT_CACHE_DIR_MB",
    "EMBEDDED_PROMPT_CACHE_MB",
    "FINITE_NUMBER_DIGITS",
    "FORCED_PARSER_LIMITS",
    "GBNF_MAX_REPETITION",
    "GRAMMAR_CACHE_SIZE",
    "GRAMMAR_EXPONENT_DIGITS",
    "GRAMMAR_MAX_DEPTH",
    "GRAMMAR_NUMBER_DIGITS",
    "LLAMA_CPP_MAX_GROUP_DEPTH",
    "LLAMA_CPP_MAX_OPTIONAL_REPEATS",
    "MAX_BODY_QUOTE",
    "MAX_CAUSE_QUOTE",
    "MAX_KEYS_SHOWN",
    "MAX_MODEL_LIST_BYTES",
    "MAX_QUESTION_ID_CHARS",
    "MAX_REPLY_CHARS",
    "MAX_REPLY_QUOTE",
    "MAX_RESPONSE_BYTES",
    "MAX_RETRY_AFTER",
    "MAX_SCHEMA_NESTING",
    "MAX_SCHEMA_VALUES",
    "MAX_TOOL_ERROR_CHARS",
    "MAX_TOOL_RESULT_CHARS",
    "MCP_CLOSE_TIMEOUT",
    "MCP_CONNECT_TIMEOUT",
    "MCP_MAX_TOOL_PAGES",
    "MEMORY_MISSING_IDS_SHOWN",
    "MEMORY_QUERY_CHARS",
    "MEMORY_QUERY_TERMS",
    "MEMORY_SEARCH_RESULTS",
    "MEMORY_TITLES_LISTED",
    "OUTLINES_MAX_STRING_BOUND",
    "PROGRESS_PREVIEW_CHARS",
    "PROMPT_DESCRIPTION_CHARS",
    "PROMPT_ENUM_VALUES",
    "PROMPT_NESTING",
    "PROMPT_PARAMETER_NOTE_CHARS",
    "PROMPT_SHORT_DESCRIPTION_CHARS",
    "PROMPT_VALUE_CHARS",
    "REPAIR_SHAPE_ARGUMENTS",
    "RETRY_BACKOFF_BASE",
    "RETRY_BACKOFF_MAX",
    "ROUTE_SCHEMA_NAME",
    "SHORTLIST_KEPT_TOOLS",
    "SHORTLIST_QUERY_TERMS",
    "SHOWN_LIST_CHARS",
    "SHOWN_NAME_CHARS",
    "SHOWN_REF_CHARS",
    "SHOWN_VALUE_CHARS",
    "SPAN_STATUS_CHARS",
    "VALID_SCHEMA_MEMORY",
]

#: Characters of a model's reply quoted in an error: enough to recognise it, never a flood.
MAX_REPLY_QUOTE = 64

#: Characters of a caller's value (a catalogue key, a type name's repr) quoted in an error,
#: and of a server's short text (a body's key, an HTTP reason phrase).
SHOWN_VALUE_CHARS = 40

#: Characters of an HTTP error body quoted in an error.
MAX_BODY_QUOTE = 200

#: Characters of a name (a tool's, a type's) or a short list of them quoted in an error:
#: any real name whole, a hostile one cut.
SHOWN_NAME_CHARS = 80

#: Characters of a schema's ``$ref`` quoted in a preflight finding: enough to tell documents apart.
SHOWN_REF_CHARS = 60

#: Characters of the list of tools a provider offers, quoted when a model names another.
SHOWN_LIST_CHARS = 200

#: Characters of another library's error message (llama.cpp's, a JSON encoder's), or of a
#: file path, quoted in one of ours: the gist to act on, never a dump of a whole schema.
MAX_CAUSE_QUOTE = 200

#: Keys of a server's unexpected body listed in an error: enough to recognise what answered.
MAX_KEYS_SHOWN = 8

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

#: Bytes of a server's model list read before giving up on it: a list of a few hundred
#: models with their metadata is tens of kilobytes, so a larger answer is not a model list.
MAX_MODEL_LIST_BYTES = 4_000_000

#: Rounds a routing run may take before it is told to hand off. A retrieval phase that
#: has not found what it needs in eight actions is looping, not searching.
DEFAULT_MAX_ROUNDS = 8

#: The final answer's cap on the command line unless --answer-tokens names another: a few
#: paragraphs, so a model that rambles (free text has no grammar to end it) stops in seconds.
DEFAULT_ANSWER_TOKENS = 256

#: Characters of a tool's result shown on one progress line of ``toolrouting run``.
PROGRESS_PREVIEW_CHARS = 100

#: Times a refused reply is fed back for repair before the run fails. Under a grammar a
#: refusal means the server did not constrain; one repair tells a model that strays from
#: one that cannot follow the schema at all.
DEFAULT_MAX_REPAIRS = 1

#: Times the same call (tool and canonical arguments) may run again in one run. The first
#: repeat may be a model that lost a result; the second is a loop.
DEFAULT_MAX_REPEATS = 1

#: Argument names of one tool a repair message shows in the tool's action shape: enough to
#: write a valid action, without a wide tool's shape flooding a small model's context.
REPAIR_SHAPE_ARGUMENTS = 8

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

#: Notes a store may hold and still offer them by title (``MemoryStore(titles=True)``): as many
#: as a catalogue prompt shows values of an enum (``PROMPT_ENUM_VALUES``), so the model reads
#: every title it may choose.
MEMORY_TITLES_LISTED = 12

#: Characters a search query may have in the grammar: without a bound a small model can
#: write one string until the completion cap cuts the action off.
MEMORY_QUERY_CHARS = 80

#: Unknown ids a failed memory read names: enough for the model to see its mistake.
MEMORY_MISSING_IDS_SHOWN = 5

#: Terms of a model's search query that are used; the rest are dropped, bounding the query.
MEMORY_QUERY_TERMS = 16

#: The least context the embedded model's default chooses, however little memory is free (a model
#: trained for less gets its own).
EMBEDDED_MIN_N_CTX = 4096

#: The default context's KV cache takes at most 1/EMBEDDED_MEMORY_SHARE of the free memory, the
#: default prompt cache as much again.
EMBEDDED_MEMORY_SHARE = 4

#: Whole contexts the default prompt cache holds in its share: two agent conversations at full length.
EMBEDDED_PROMPT_CACHE_CONTEXTS = 4

#: Megabytes of prompt states kept by default where neither the model's bytes a token nor the free
#: memory can be read: a 12,000-token agent prompt's state is about 150 MB on the 0.5B model.
EMBEDDED_PROMPT_CACHE_MB = 1024

#: Megabytes of prompt states kept in a ``prompt_cache_dir``: some eighty 4,300-token openings (0.5B).
EMBEDDED_PROMPT_CACHE_DIR_MB = 4096

#: Tokens a block of the embedded model's prompt evaluation, at fixed positions, kept or reused only
#: up to a block's end: llama.cpp rounds a token's keys and values by its batch, so a reused prefix
#: holds the very bits a cold evaluation would. Larger blocks reuse less; smaller ones evaluate
#: slower (32 was about a quarter slower than 64 and 512 on two cores).
EMBEDDED_PROMPT_BLOCK = 64

#: llguidance's parser limits on the forced path, raised 25, 10 and 20 times from its defaults
#: (2,000 Earley items a row, 50,000 a step, 200,000 lexer fuel a step), under which a tool of 600
#: optional string properties stopped mid-reply. Each step of that route takes milliseconds, the
#: worst a few hundred; a grammar past them is a GrammarError that names the grammar sampler.
FORCED_PARSER_LIMITS = {"max_items_in_row": 50_000, "step_max_items": 500_000, "step_lexer_fuel": 4_000_000}

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

#: The largest count our GBNF writes in ``{m,n}``: llama.cpp refuses a repetition once the count
#: times the repeated item's rules reaches 2000 (``MAX_REPETITION_THRESHOLD``), and ours are one rule
#: each. A larger ``maxItems``/``maxLength`` becomes unbounded, a larger minimum 1999 (a note says so).
GBNF_MAX_REPETITION = 1999

#: The most optional repeats (``maxItems - minItems``, ``maxLength - minLength``) llama-cpp-python's
#: converter can write. It nests one optional group per optional item, and llama.cpp refuses a group
#: holding 2000 rules or more ("number of rules that are going to be repeated multiplied by the new
#: repetition exceeds sane defaults", src/llama-grammar.cpp, ``MAX_REPETITION_THRESHOLD``): on
#: llama-cpp-python 0.3.36, 1001 optional items were refused and 1000 passed, for strings and for
#: arrays of strings, of objects and of bounded strings alike (each level adds two rules).
LLAMA_CPP_MAX_OPTIONAL_REPEATS = 1000

#: The deepest nesting of ``( ... )`` groups in a GBNF grammar handed to llama.cpp in-process. Its
#: parser recurses once per group: at 18,699 levels it overflowed an 8 MB stack (SIGSEGV, measured
#: on llama-cpp-python 0.3.36), about 450 bytes a level, before its own limit could refuse the
#: grammar. A grammar nested 1001 deep already trips that limit (two rules a level); 4000 lets
#: llama.cpp say so in its own words, on under 2 MB of stack.
LLAMA_CPP_MAX_GROUP_DEPTH = 4000

#: The largest ``minLength``/``maxLength`` outlines-core compiles in reasonable memory. Its index of
#: a JSON string bounded to N characters grows about 3.5x in memory and 4x in time with every two
#: characters (measured on outlines-core 0.2.14, 95 one-character tokens): 12 took 1 s and 28 MB,
#: 16 took 13 s and 263 MB, 20 did not build within 1 GiB and 60 s; excel-mcp-server's 8192
#: exhausted 8 GB.
OUTLINES_MAX_STRING_BOUND = 16

#: Digits our grammar lets a model write in a number's integer part and in its fraction, unless
#: the schema's own ``minimum``/``maximum`` need more: enough for any integer a double holds
#: exactly (2^53 has 16 digits), and a model writing digits forever ends here, not at the cap.
GRAMMAR_NUMBER_DIGITS = 16

#: Digits of a number's exponent: with 16-digit mantissas, e99 keeps every number finite, so no
#: reply the grammar allows is one parse_route refuses as too large.
GRAMMAR_EXPONENT_DIGITS = 2

#: Digits of the largest integer part a double holds (its largest finite value is 1.8e308). A
#: number the grammar widens past it is written whole, with no fraction or exponent, and a
#: wider one keeps only negative exponents: each reply it allows parses as a finite number.
FINITE_NUMBER_DIGITS = 308

#: Nesting of schemas (object in array in anyOf ...) the grammar compiler follows before it
#: refuses: far beyond any real tool's parameters, and short of Python's recursion limit.
GRAMMAR_MAX_DEPTH = 100

#: Levels of JSON nesting (objects and arrays, data in ``enum`` and ``const`` included) a tool's
#: parameters may have. A real schema nests a few levels per object it describes; past this,
#: json's encoders, the grammar compilers and the preflight meet Python's recursion limit, so
#: the catalogue check refuses it with its place (the grammar follows GRAMMAR_MAX_DEPTH schemas).
MAX_SCHEMA_NESTING = 256

#: JSON values (every object, array, key's value and item) a tool's parameters may hold, counted
#: as the tree JSON text writes. The largest published catalogue's tool holds a few thousand; a
#: Python structure that shares one sub-dict many times is tiny in memory and can still be
#: millions of values as text, so the catalogue check stops counting here and refuses it.
MAX_SCHEMA_VALUES = 200_000

#: Bounded decisions: the ``maxLength`` a string without one gets. A routed decision is one
#: small action under a cap of a few hundred tokens (DEFAULT_ROUTING_CAP); a query, a path or a
#: title fits in 256 characters, and a string that keeps going stops here, not at the cap.
BOUNDED_STRING_CHARS = 256

#: Bounded decisions: the ``maxItems`` an array without one gets, and the most keys an object
#: with free keys may carry: ids to read, labels, edits to make.
BOUNDED_ARRAY_ITEMS = 16

#: Bounded decisions: how deep a value the schema leaves free (``{}``, an untyped property)
#: may nest arrays and objects; deeper, only strings, numbers, booleans and null.
BOUNDED_VALUE_DEPTH = 2

#: Seconds an MCP tool call may take before its result is an error and the call is cancelled.
#: A tool answers a routed action; one that has not answered in a minute is stuck or doing
#: far more than one step of a retrieval phase, and a run must not wait on it forever.
DEFAULT_MCP_CALL_TIMEOUT = 60.0

#: Seconds an MCP server gets to start (or answer over HTTP), agree a protocol and list its
#: tools. A Python server started with ``uvx`` or ``python -m`` takes 1 to 3 s on two cores;
#: one that needs more than this is stuck or waiting for input it will never get.
MCP_CONNECT_TIMEOUT = 30.0

#: Seconds closing all MCP sessions may take. The SDK closes a stdio server's stdin, waits 2 s,
#: then terminates and kills it (2 s each): 6 s at most, and this leaves room for HTTP's DELETE.
MCP_CLOSE_TIMEOUT = 10.0

#: Pages of ``tools/list`` read from one server before it is refused: a paginator that never
#: ends must not hang the start, and no real server splits its tools over a hundred pages.
MCP_MAX_TOOL_PAGES = 100

#: Characters of a tool's result put in front of the model; a longer one keeps its head and its
#: tail around a marker that says how much was cut. A result that fills the context is the next
#: failure after a loop: the embedded model's least window (EMBEDDED_MIN_N_CTX, 4,096 tokens)
#: holds about 16,000 characters, and one result may take a quarter of it.
MAX_TOOL_RESULT_CHARS = 4000
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

#: Characters of tool results the answer request carries after the handoff, all results
#: together: about 1,000 tokens, so the question, the results and a DEFAULT_ANSWER_TOKENS
#: answer fit the embedded model's least window (EMBEDDED_MIN_N_CTX) with room to spare. The
#: newest results are kept first: a read comes after the search that found it.
ANSWER_CONTEXT_CHARS = 4000

#: Characters of one tool result in the answer request; a longer one keeps its head and tail.
#: Half the whole: two results always fit, so a search and the read it led to stay together.
ANSWER_RESULT_CHARS = 2000

#: Characters of the conversation's earlier turns the answer is asked with, the newest kept:
#: about 500 tokens, so they, the results, the question and the answer fit EMBEDDED_MIN_N_CTX.
#: The turns the question follows on from are the last few; older ones are left out.
ANSWER_HISTORY_CHARS = 2000

#: Runs a batch keeps in flight unless the caller names another. A serving engine batches only
#: what is in flight at once; four fills a llama-server started with ``--parallel 4`` and is
#: gentle on a shared one. A vLLM or SGLang cluster wants its own ``--max-num-seqs`` or
#: ``--max-running-requests`` here (docs/batch.md).
DEFAULT_BATCH_CONCURRENCY = 4

#: Characters of a question's id in a batch. The id names the question's files in the output
#: folder, so it stays well inside any file system's 255-byte name.
MAX_QUESTION_ID_CHARS = 128

#: Seconds between two redraws of the batch progress bar: often enough to look alive, rarely
#: enough that a thousand runs finishing at once do not flood a terminal or a log.
BATCH_PROGRESS_INTERVAL = 0.5

#: Characters of a failed tool's result in its span's status: the gist a trace viewer shows in
#: a list of spans; the whole result is in the transcript.
SPAN_STATUS_CHARS = 200

#: Distinct words of a conversation a shortlist ranks by: the first ones, the question's before
#: any result's. A question is a few dozen words; a tool result may be thousands, and each word
#: is one more term of the index's query.
SHORTLIST_QUERY_TERMS = 256

#: Tools a run has called that a routing loop's shortlist keeps offering beside its K best, the
#: latest called first: a round offers at most ``shortlist + SHORTLIST_KEPT_TOOLS`` tools. Eight
#: is the default ``max_rounds``, so a run within it never loses a tool it used.
SHORTLIST_KEPT_TOOLS = 8
