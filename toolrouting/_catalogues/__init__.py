"""Catalogues: tool declarations from other formats, and Python functions offered as tools."""

from .adapters import (
    tools_from,
    tools_from_anthropic,
    tools_from_declarations,
    tools_from_mcp,
    tools_from_openai,
    tools_from_responses,
)
from .functions import FunctionTools, function_tool

__all__ = [
    "FunctionTools",
    "function_tool",
    "tools_from",
    "tools_from_anthropic",
    "tools_from_declarations",
    "tools_from_mcp",
    "tools_from_openai",
    "tools_from_responses",
]
