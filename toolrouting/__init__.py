"""toolrouting: every turn of a tool-using model is one choice out of a closed set of actions.

The next action is asked for as one JSON object under a route schema (an ``anyOf``
alternative per tool, then ``{"tool": "none"}``), sent through a clone of the backend that
carries the schema and a low completion cap, and parsed strictly.
"""

from ._adapters import (
    tools_from,
    tools_from_anthropic,
    tools_from_declarations,
    tools_from_mcp,
    tools_from_openai,
    tools_from_responses,
)
from ._backend import Backend, Completion, Message, Usage
from ._dialects import DIALECTS
from ._errors import (
    BackendConnectError,
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    BackendTimeout,
    CatalogueError,
    GrammarError,
    MemoryStoreError,
    ModelLoadError,
    RepairsExhaustedError,
    RetriesExhaustedError,
    RunError,
    SchemaIgnoredError,
    ToolRoutingError,
    TranscriptError,
)
from ._events import (
    ActionChosen,
    Event,
    LimitReached,
    RepairRequested,
    Resumed,
    RetryScheduled,
    RoundStarted,
    RunFinished,
    ToolResult,
)
from ._functions import FunctionTools, function_tool
from ._limits import (
    DEFAULT_MAX_REPAIRS,
    DEFAULT_MAX_REPEATS,
    DEFAULT_MAX_ROUNDS,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_RETRIES,
    DEFAULT_ROUTING_CAP,
    MAX_REPLY_CHARS,
    MAX_REPLY_QUOTE,
    MAX_RESPONSE_BYTES,
    ROUTE_SCHEMA_NAME,
)
from ._llamacpp import LlamaCpp, default_model_path
from ._loop import RoutingLoop
from ._memory import MemoryStore
from ._openai import OpenAICompatible
from ._outcome import Action, EndReason, LimitName, RoundUsage, RunResult
from ._parse import Route, parse_route
from ._preflight import TARGETS, Finding, format_findings, preflight
from ._provider import ToolOutput, ToolProvider
from ._results import routed_call_id, routed_result_header, routed_result_text, split_routed_result
from ._routing import can_route, routed_backend, routing_cap
from ._schema import FunctionSpec, ToolSpec, route_choices, route_schema, route_tool_names
from ._scripted import ScriptedBackend, ScriptedRequest
from ._settings import Settings
from ._transcript import TranscriptRead, read_transcript

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_MAX_REPAIRS",
    "DEFAULT_MAX_REPEATS",
    "DEFAULT_MAX_ROUNDS",
    "DEFAULT_REQUEST_TIMEOUT",
    "DEFAULT_RETRIES",
    "DEFAULT_ROUTING_CAP",
    "DIALECTS",
    "MAX_REPLY_CHARS",
    "MAX_REPLY_QUOTE",
    "MAX_RESPONSE_BYTES",
    "ROUTE_SCHEMA_NAME",
    "TARGETS",
    "Action",
    "ActionChosen",
    "Backend",
    "BackendConnectError",
    "BackendError",
    "BackendHTTPError",
    "BackendResponseError",
    "BackendTimeout",
    "CatalogueError",
    "Completion",
    "EndReason",
    "Event",
    "Finding",
    "FunctionSpec",
    "FunctionTools",
    "GrammarError",
    "LimitName",
    "LimitReached",
    "LlamaCpp",
    "MemoryStore",
    "MemoryStoreError",
    "Message",
    "ModelLoadError",
    "OpenAICompatible",
    "RepairRequested",
    "RepairsExhaustedError",
    "Resumed",
    "RetriesExhaustedError",
    "RetryScheduled",
    "RoundStarted",
    "RoundUsage",
    "Route",
    "RoutingLoop",
    "RunError",
    "RunFinished",
    "RunResult",
    "SchemaIgnoredError",
    "ScriptedBackend",
    "ScriptedRequest",
    "Settings",
    "ToolOutput",
    "ToolProvider",
    "ToolResult",
    "ToolRoutingError",
    "ToolSpec",
    "TranscriptError",
    "TranscriptRead",
    "Usage",
    "can_route",
    "default_model_path",
    "format_findings",
    "function_tool",
    "parse_route",
    "preflight",
    "read_transcript",
    "route_choices",
    "route_schema",
    "route_tool_names",
    "routed_backend",
    "routed_call_id",
    "routed_result_header",
    "routed_result_text",
    "routing_cap",
    "split_routed_result",
    "tools_from",
    "tools_from_anthropic",
    "tools_from_declarations",
    "tools_from_mcp",
    "tools_from_openai",
    "tools_from_responses",
]
