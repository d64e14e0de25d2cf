"""Named limits, each with the reason it exists."""

from __future__ import annotations

__all__ = [
    "DEFAULT_ROUTING_CAP",
    "MAX_BODY_QUOTE",
    "MAX_REPLY_CHARS",
    "MAX_REPLY_QUOTE",
    "MAX_SCHEMA_DEPTH",
    "ROUTE_SCHEMA_NAME",
]

#: Characters of a model's reply quoted in an error: enough to recognise it, never a flood.
MAX_REPLY_QUOTE = 64

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

#: Nesting depth a tool's parameters schema may reach. Real schemas stay in single
#: digits; the bound turns a self-referencing or hostile catalogue into a clear error.
MAX_SCHEMA_DEPTH = 64
