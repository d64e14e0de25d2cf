"""toolrouting: every turn of a tool-using model is one choice out of a closed set of actions.

The next action is asked for as one JSON object under a route schema (an ``anyOf``
alternative per tool, then ``{"tool": "none"}``), sent through a clone of the backend that
carries the schema and a low completion cap, and parsed strictly.

The public API lives here, grouped by the part that owns it, in the same order among the
imports and in ``__all__``: the routing core (flat modules), then the route grammar, the
backends, the loop, the catalogues, the preflight, batch runs, traces, the server,
the shortlist and grounding (a package each).
The demo's notes store is ``toolrouting.demo``.
"""

# --- the routing core: its flat modules, the catalogue checks and the catalogue prompt, the one
# error tree, the named limits, the parsers of one call and of several, the tool seam, the result
# messages, the route schema, the routed backend and the request settings ---
from ._catalogue_checks import FunctionSpec, ToolSpec
from ._catalogue_prompt import PROMPT_STYLES, PromptStyle, catalogue_prompt
from ._errors import (
    BackendConnectError,
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    BackendTimeout,
    CatalogueError,
    ChatRequestError,
    ContextLengthError,
    GrammarError,
    MemoryStoreError,
    ModelLoadError,
    QuestionsFileError,
    RepairsExhaustedError,
    RetriesExhaustedError,
    RunError,
    SchemaIgnoredError,
    ToolRoutingError,
    ToolServerError,
    TranscriptError,
)
from ._limits import (
    DEFAULT_MAX_REPAIRS,
    DEFAULT_MAX_REPEATS,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_PROMPT_CHARS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_RETRIES,
    DEFAULT_ROUTING_CAP,
    MAX_REPLY_CHARS,
    MAX_REPLY_QUOTE,
    MAX_RESPONSE_BYTES,
    ROUTE_SCHEMA_NAME,
)
from ._parse import Route, parse_route
from ._parse_calls import Routes, parse_routes
from ._provider import AsyncToolProvider, RestorableToolProvider, ToolOutput, ToolProvider
from ._result_messages import routed_call_id, routed_result_header, routed_result_text, split_routed_result
from ._route_schema import route_choices, route_schema, route_tool_names
from ._routed_backend import can_route, routed_backend, routing_cap
from ._settings import GrammarChoice, Settings

# isort: split
# --- the route grammar: our own compact GBNF for the servers and the model that take one ---
from ._grammar import GrammarNote, RouteGrammar, route_grammar

# isort: split
# --- backends: the seam, the HTTP dialects, the embedded model, the scripted fake, each sync and async ---
from ._backends import (
    DIALECTS,
    AsyncBackend,
    AsyncBaseBackend,
    AsyncEmbeddedLlama,
    AsyncOpenAICompatible,
    AsyncScriptedBackend,
    AsyncStreamingBackend,
    Backend,
    BaseBackend,
    Completion,
    DialectName,
    EmbeddedLlama,
    Message,
    OpenAICompatible,
    PromptCacheInfo,
    ReasoningTags,
    ScriptedBackend,
    ScriptedRequest,
    StreamingBackend,
    TextDelta,
    Usage,
    default_model_path,
    fetch_default_model,
    served_reasoning_tags,
)

# isort: split
# --- the loop: both drivers and their options, runs' limits, events, results and transcripts ---
from ._loop import (
    Abstained,
    Action,
    ActionChosen,
    AnswerDelta,
    AsyncRoutingLoop,
    DecisionDelta,
    EndReason,
    Event,
    LimitName,
    LimitReached,
    LoopOptions,
    RecordedOffer,
    RepairRequested,
    ReplyReceived,
    Resumed,
    RetryScheduled,
    RoundStarted,
    RoundUsage,
    RoutingLoop,
    RunFinished,
    RunLimits,
    RunResult,
    ToolReturned,
    TranscriptRead,
    read_transcript,
)

# isort: split
# --- catalogues: other formats' declarations, Python functions and MCP servers as tools ---
from ._catalogues import (
    MCP_NAME_SEPARATOR,
    FunctionTools,
    MCPHTTPServer,
    MCPServerSpec,
    MCPSession,
    MCPStdioServer,
    MCPTools,
    function_tool,
    mcp_server,
    mcp_servers_from_config,
    tools_from,
    tools_from_anthropic,
    tools_from_declarations,
    tools_from_mcp,
    tools_from_openai,
    tools_from_responses,
)

# isort: split
# --- the preflight: what each grammar compiler does with a schema ---
from ._preflight import TARGETS, Finding, Severity, Target, format_findings, preflight

# isort: split
# --- batch runs: a file of questions, each its own run, many in flight against one server ---
from ._batch import BatchProgress, BatchQuestion, arun_batch, read_questions, run_batch

# isort: split
# --- traces: a run as OpenTelemetry spans ---
from ._traces import RunTracer

# isort: split
# --- the server: chat completions, Responses and Messages over any backend; the serve extra is
# imported when called ---
from ._serve import RequestRecord, serve_app, server_config

# isort: split
# --- the shortlist: a large catalogue narrowed to the tools ranked best for the conversation ---
from ._shortlist import IndexedRanker, Ranker, bm25_scores, default_ranker, shortlist, shortlist_query

# isort: split
# --- grounding: whether a call's required arguments come from the conversation, and abstention ---
from ._grounding import (
    ABSTAIN_POLICIES,
    ABSTAIN_SHARE,
    AbstainPolicy,
    ArgumentClass,
    ArgumentKind,
    Evidence,
    Grounding,
    Ungrounded,
    argument_kind,
    conversation_evidence,
    grounding,
)

__version__ = "0.1.0"

# Grouped by part, as the imports above; within a group, constants, then classes, then functions.
__all__ = [  # noqa: RUF022 (grouped by part; tests/project/test_exports.py checks the order)
    # the routing core
    "DEFAULT_MAX_REPAIRS",
    "DEFAULT_MAX_REPEATS",
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_PROMPT_CHARS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_RETRIES",
    "DEFAULT_ROUTING_CAP",
    "MAX_REPLY_CHARS",
    "MAX_REPLY_QUOTE",
    "MAX_RESPONSE_BYTES",
    "PROMPT_STYLES",
    "ROUTE_SCHEMA_NAME",
    "AsyncToolProvider",
    "BackendConnectError",
    "BackendError",
    "BackendHTTPError",
    "BackendResponseError",
    "BackendTimeout",
    "CatalogueError",
    "ChatRequestError",
    "ContextLengthError",
    "FunctionSpec",
    "GrammarChoice",
    "GrammarError",
    "MemoryStoreError",
    "ModelLoadError",
    "PromptStyle",
    "QuestionsFileError",
    "RepairsExhaustedError",
    "RestorableToolProvider",
    "RetriesExhaustedError",
    "Route",
    "Routes",
    "RunError",
    "SchemaIgnoredError",
    "Settings",
    "ToolOutput",
    "ToolProvider",
    "ToolRoutingError",
    "ToolServerError",
    "ToolSpec",
    "TranscriptError",
    "can_route",
    "catalogue_prompt",
    "parse_route",
    "parse_routes",
    "route_choices",
    "route_schema",
    "route_tool_names",
    "routed_backend",
    "routed_call_id",
    "routed_result_header",
    "routed_result_text",
    "routing_cap",
    "split_routed_result",
    # the route grammar
    "GrammarNote",
    "RouteGrammar",
    "route_grammar",
    # backends
    "DIALECTS",
    "AsyncBackend",
    "AsyncBaseBackend",
    "AsyncEmbeddedLlama",
    "AsyncOpenAICompatible",
    "AsyncScriptedBackend",
    "AsyncStreamingBackend",
    "Backend",
    "BaseBackend",
    "Completion",
    "DialectName",
    "EmbeddedLlama",
    "Message",
    "OpenAICompatible",
    "PromptCacheInfo",
    "ReasoningTags",
    "ScriptedBackend",
    "ScriptedRequest",
    "StreamingBackend",
    "TextDelta",
    "Usage",
    "default_model_path",
    "fetch_default_model",
    "served_reasoning_tags",
    # the loop
    "Abstained",
    "Action",
    "ActionChosen",
    "AnswerDelta",
    "AsyncRoutingLoop",
    "DecisionDelta",
    "EndReason",
    "Event",
    "LimitName",
    "LimitReached",
    "LoopOptions",
    "RecordedOffer",
    "RepairRequested",
    "ReplyReceived",
    "Resumed",
    "RetryScheduled",
    "RoundStarted",
    "RoundUsage",
    "RoutingLoop",
    "RunFinished",
    "RunLimits",
    "RunResult",
    "ToolReturned",
    "TranscriptRead",
    "read_transcript",
    # catalogues
    "MCP_NAME_SEPARATOR",
    "FunctionTools",
    "MCPHTTPServer",
    "MCPServerSpec",
    "MCPSession",
    "MCPStdioServer",
    "MCPTools",
    "function_tool",
    "mcp_server",
    "mcp_servers_from_config",
    "tools_from",
    "tools_from_anthropic",
    "tools_from_declarations",
    "tools_from_mcp",
    "tools_from_openai",
    "tools_from_responses",
    # the preflight
    "TARGETS",
    "Finding",
    "Severity",
    "Target",
    "format_findings",
    "preflight",
    # batch runs
    "BatchProgress",
    "BatchQuestion",
    "arun_batch",
    "read_questions",
    "run_batch",
    # traces
    "RunTracer",
    # the server
    "RequestRecord",
    "serve_app",
    "server_config",
    # the shortlist
    "IndexedRanker",
    "Ranker",
    "bm25_scores",
    "default_ranker",
    "shortlist",
    "shortlist_query",
    # grounding
    "ABSTAIN_POLICIES",
    "ABSTAIN_SHARE",
    "AbstainPolicy",
    "ArgumentClass",
    "ArgumentKind",
    "Evidence",
    "Grounding",
    "Ungrounded",
    "argument_kind",
    "conversation_evidence",
    "grounding",
]
