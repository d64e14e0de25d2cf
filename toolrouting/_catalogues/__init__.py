"""Catalogues: declarations from other formats; Python functions and live MCP servers as tools."""

from .adapters import (
    tools_from,
    tools_from_anthropic,
    tools_from_declarations,
    tools_from_mcp,
    tools_from_openai,
    tools_from_responses,
)
from .functions import FunctionTools, function_tool
from .mcp import MCP_NAME_SEPARATOR, MCPTools
from .mcp_servers import MCPHTTPServer, MCPServerSpec, MCPStdioServer, mcp_server, mcp_servers_from_config
from .mcp_session import MCPSession

__all__ = [
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
]
