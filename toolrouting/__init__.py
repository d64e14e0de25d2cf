"""toolrouting: every turn of a tool-using model is one choice out of a closed set of actions.

The next action is asked for as one JSON object under a route schema (an ``anyOf``
alternative per tool, then ``{"tool": "none"}``), sent through a clone of the backend that
carries the schema and a low completion cap, and parsed strictly.
"""

from __future__ import annotations

from ._backend import Backend, Completion, Message, Usage
from ._errors import (
    BackendConnectError,
    BackendError,
    BackendHTTPError,
    BackendResponseError,
    BackendTimeout,
    CatalogueError,
    RunError,
    SchemaIgnoredError,
    ToolRoutingError,
)
from ._limits import DEFAULT_ROUTING_CAP, MAX_REPLY_CHARS, MAX_REPLY_QUOTE, ROUTE_SCHEMA_NAME
from ._parse import Route, parse_route
from ._results import routed_call_id, routed_result_header, routed_result_text, split_routed_result
from ._routing import can_route, routed_backend, routing_cap
from ._schema import FunctionSpec, ToolSpec, route_choices, route_schema, route_tool_names
from ._scripted import ScriptedBackend, ScriptedRequest
from ._settings import Settings

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_ROUTING_CAP",
    "MAX_REPLY_CHARS",
    "MAX_REPLY_QUOTE",
    "ROUTE_SCHEMA_NAME",
    "Backend",
    "BackendConnectError",
    "BackendError",
    "BackendHTTPError",
    "BackendResponseError",
    "BackendTimeout",
    "CatalogueError",
    "Completion",
    "FunctionSpec",
    "Message",
    "Route",
    "RunError",
    "SchemaIgnoredError",
    "ScriptedBackend",
    "ScriptedRequest",
    "Settings",
    "ToolRoutingError",
    "ToolSpec",
    "Usage",
    "can_route",
    "parse_route",
    "route_choices",
    "route_schema",
    "route_tool_names",
    "routed_backend",
    "routed_call_id",
    "routed_result_header",
    "routed_result_text",
    "routing_cap",
    "split_routed_result",
]
